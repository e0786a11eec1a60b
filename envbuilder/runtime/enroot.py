"""The enroot runtime: runs the squashfs file `envbuilder export IMAGE --sqsh FILE` wrote
(`enroot start`), and under Slurm through the pyxis plugin (`srun --container-image=...`, fleet
jobs). Its one GPU access mode:

- hook: enroot's NVIDIA hook hands in the GPUs when NVIDIA_VISIBLE_DEVICES is set, as the
  Container Toolkit reads it (under Slurm, the job's GPU allocation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envbuilder.engine.container import ContainerSpec
from envbuilder.engine.hpc import (
    EXPORT_TIMEOUT_S,
    Exported,
    Run,
    Tool,
    check_tool,
    export_image,
    find_tool,
    run_tool,
)
from envbuilder.engine.interface import Engine
from envbuilder.engine.model import BuildResult, ImageInfo, RunResult
from envbuilder.errors import ContainerRuntimeError, UsageError
from envbuilder.host.access import AccessMode
from envbuilder.runtime.base import Availability, GpuGrant
from envbuilder.runtime.files import (
    Bind,
    HostProbe,
    binds_of,
    host_gpus,
    inspect_file,
    no_engine,
    refuse_volumes,
    remove_file,
    run_argv,
    volume_binds,
)
from envbuilder.runtime.gpu_selection import GpuSelection

GPU_ENV = {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
HINT = "install enroot (https://github.com/NVIDIA/enroot/releases; there is no Debian package)"


def enroot_import_argv(out: str, image: str, enroot: str = "enroot") -> list[str]:
    return [enroot, "import", "--output", out, f"dockerd://{image}"]


def enroot_start_argv(
    image_file: str,
    command: Sequence[str],
    *,
    binds: Sequence[Bind] = (),
    env: Mapping[str, str] | None = None,
    enroot: str = "enroot",
) -> list[str]:
    """`enroot start` on a squashfs image, with binds and variables (the hook mode's among them)."""
    argv = [enroot, "start"]
    for src, dst, ro in binds:
        argv += ["--mount", f"{src}:{dst}:" + ("none,bind,ro" if ro else "none,bind")]
    for k, v in sorted((env or {}).items()):
        argv += ["--env", f"{k}={v}"]
    return [*argv, image_file, *command]


def pyxis_srun_argv(
    image: str, command: Sequence[str], *, mounts: Sequence[Bind] = (), gpu: bool = True
) -> list[str]:
    """`srun --container-image=...` (Slurm's pyxis plugin, which runs enroot). `image` is pyxis's
    syntax ([REGISTRY#]NAME[:TAG]) or a squashfs path. Slurm's GPU allocation reaches the container
    through enroot's NVIDIA hook; with gpu=False it is hidden (NVIDIA_VISIBLE_DEVICES=void)."""
    argv = ["srun", f"--container-image={image}", "--no-container-mount-home", "--container-workdir=/"]
    if mounts:
        argv.append(
            "--container-mounts=" + ",".join(f"{s}:{d}" + (":ro" if ro else "") for s, d, ro in mounts)
        )
    if not gpu:
        argv.append("--container-env=NVIDIA_VISIBLE_DEVICES")
        return ["env", "NVIDIA_VISIBLE_DEVICES=void", *argv, *command]
    return [*argv, *command]


class EnrootRuntime:
    """enroot: exported squashfs files; GPUs through its NVIDIA hook."""

    name = "enroot"
    modes: tuple[str, ...] = ("hook",)
    runs = "sqsh"
    volumes = True  # a folder of the user's each (files.volume_binds), bound in

    def __init__(self, binary: str | None = None, probe: HostProbe | None = None) -> None:
        """`binary`: the enroot program (default: on PATH); `probe`: the host probe."""
        self._binary, self._probe = binary, probe

    def tool(self) -> Tool:
        """Raises ContainerRuntimeError when there is no enroot."""
        return find_tool("enroot", path=self._binary, hint=HINT)

    def available(self) -> Availability:
        try:
            return Availability(ok=True, reason=self.tool().describe())
        except ContainerRuntimeError as exc:
            return Availability(ok=False, reason=exc.message, hint=exc.hint)

    def probe_modes(self) -> tuple[AccessMode, ...]:
        gpus = host_gpus(self._probe)
        seen = f"{gpus} NVIDIA GPU(s); enroot's NVIDIA hook" if gpus else "no NVIDIA GPU on this host"
        return (AccessMode(name="hook", available=bool(gpus), detail=seen),)

    def grant(self, mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
        if selection is not None:
            raise UsageError("--gpus applies to --runtime docker", hint="enroot's hook hands in every GPU")
        return GpuGrant(env=GPU_ENV)

    def mode_flags(self, mode: AccessMode) -> tuple[str, ...]:
        if not mode.available:
            return ()
        return tuple(a for k, v in sorted(GPU_ENV.items()) for a in ("--env", f"{k}={v}"))

    def engine(self) -> Engine:
        raise no_engine(self.name, self.runs)

    def build(self, context: Path, dockerfile: Path, **options: Any) -> BuildResult:
        raise no_engine(self.name, self.runs)

    def inspect(self, ref: str) -> ImageInfo | None:
        return inspect_file(ref)

    def run(
        self,
        spec: ContainerSpec,
        *,
        on_stderr: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        return run_argv(self.argv(spec), on_stderr=on_stderr, timeout_s=timeout_s)

    def argv(self, spec: ContainerSpec) -> list[str]:
        if spec.workdir:
            raise UsageError(
                "-w/--workdir does not apply to --runtime enroot "
                "(enroot start has no working-directory option)",
                hint="cd in the command: -- sh -c 'cd DIR && exec python train.py'",
            )
        return enroot_start_argv(
            spec.image,
            spec.command,
            binds=[*binds_of(spec.mounts), *volume_binds(spec)],
            env=spec.env,
            enroot=self._binary or "enroot",
        )

    def slurm_argv(self, spec: ContainerSpec) -> list[str]:
        """Under Slurm (fleet jobs): pyxis's `srun --container-image=...` on `spec.image` (pyxis's
        syntax or a squashfs), the GPUs through the hook when the spec's grant set
        NVIDIA_VISIBLE_DEVICES, else hidden. The job's own variables come from its script."""
        refuse_volumes(self.name, spec, "under Slurm")
        gpu = spec.env.get("NVIDIA_VISIBLE_DEVICES") not in (None, "void")
        return pyxis_srun_argv(spec.image, spec.command, mounts=binds_of(spec.mounts), gpu=gpu)

    def remove(self, ref: str) -> bool:
        return remove_file(ref)

    def export(
        self,
        image: str,
        out: Path,
        *,
        source: Engine,
        say: Callable[[str], None] = lambda _l: None,
        run: Run = run_tool,
    ) -> Exported:
        """`enroot import dockerd://IMAGE` (enroot reads the image from the Docker daemon)."""
        tool = self.tool()

        def convert(_info: ImageInfo, built: Path, _work: Path) -> None:
            say(f"export: enroot import dockerd://{image}")
            check_tool(
                run(enroot_import_argv(str(built), image, tool.path or "enroot"), EXPORT_TIMEOUT_S), tool
            )

        return export_image(source, image, out, self.runs, tool, convert)
