"""The Apptainer runtime: runs the SIF file `envbuilder export IMAGE --sif FILE` wrote (or, for
fleet jobs, docker://REF), `apptainer exec --containall` (no host home, /tmp or environment leaks
in, as in a Docker container). Its GPU access modes, in `auto` order:

- nv: `--nv`, Apptainer binds the host driver's libraries and the /dev/nvidia* nodes itself;
- nvccli: `--nv --nvccli`, the NVIDIA Container Toolkit's nvidia-container-cli does the setup
  (needs it on the host; never chosen by auto, which takes nv first).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envbuilder.engine.container import ContainerSpec, Mount
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
from envbuilder.errors import ContainerRuntimeError, UsageError, log_tail
from envbuilder.host.access import AccessMode
from envbuilder.runtime.base import Availability, GpuGrant
from envbuilder.runtime.files import (
    Bind,
    HostProbe,
    binds_of,
    host_gpus,
    inspect_file,
    no_engine,
    remove_file,
    run_argv,
    volume_binds,
)
from envbuilder.runtime.gpu_selection import GpuSelection

FLAGS = {"nv": ("--nv",), "nvccli": ("--nv", "--nvccli")}
# Apptainer inside a Docker container (where no apptainer is installed): building a SIF needs the
# user namespaces and mounts that Docker's default seccomp and AppArmor profiles forbid.
APPTAINER_CONTAINER_SECURITY = ("seccomp=unconfined", "apparmor=unconfined")
HINT = (
    "install Apptainer (https://apptainer.org; Debian sid's apptainer package), or give "
    "--apptainer-image IMAGE (a Docker image with apptainer in it)"
)


def apptainer_build_argv(out: str, archive: str, apptainer: str = "apptainer") -> list[str]:
    return [apptainer, "build", out, f"docker-archive://{archive}"]


def export_sif(
    engine: Engine,
    image: str,
    info: ImageInfo,
    built: Path,
    work: Path,
    tool: Tool,
    *,
    run: Run = run_tool,
    say: Callable[[str], None] = lambda _l: None,
) -> None:
    """`docker save` the image, then `apptainer build` the SIF from the archive: with the apptainer
    binary, or inside `tool.image` (unconfined, no network). Raises ContainerRuntimeError."""
    archive = work / "image.tar"
    say(f"export: docker save {image} ({info.size / 1e6:,.0f} MB)")
    engine.save(info.id, archive)
    if tool.image is None:
        say(f"export: {tool.path} build {built.name} docker-archive://{archive.name}")
        argv = apptainer_build_argv(str(built), str(archive), tool.path or "apptainer")
        check_tool(run(argv, EXPORT_TIMEOUT_S), tool)
        return
    work.chmod(0o777)
    spec = ContainerSpec(
        image=tool.image,
        command=tuple(apptainer_build_argv(f"/work/{built.name}", f"/work/{archive.name}")),
        mounts=(Mount(source=str(work), target="/work"),),
        security_opt=APPTAINER_CONTAINER_SECURITY,
        network="none",
    )
    say(f"export: apptainer build in {tool.image} (--security-opt {' '.join(APPTAINER_CONTAINER_SECURITY)})")
    res = engine.run(spec, timeout_s=EXPORT_TIMEOUT_S)
    if res.exit_code != 0:
        raise ContainerRuntimeError(
            f"apptainer build in {tool.image} failed (exit {res.exit_code})",
            log=log_tail([res.stderr or res.stdout]),
        )


def apptainer_source(pull_ref: str, image_file: str | None = None) -> str:
    """What apptainer runs: a SIF file, else the registry image (docker://REF)."""
    return image_file or f"docker://{pull_ref}"


def apptainer_exec_argv(
    source: str,
    command: Sequence[str],
    *,
    gpu_flags: Sequence[str] = (),
    binds: Sequence[Bind] = (),
    env: Mapping[str, str] | None = None,
    workdir: str | None = None,
    apptainer: str = "apptainer",
) -> list[str]:
    """`apptainer exec`: --containall, the access mode's flags (--nv: the host driver's libraries
    and devices), binds, variables."""
    argv = [apptainer, "exec", "--containall", *gpu_flags]
    for src, dst, ro in binds:
        argv += ["--bind", f"{src}:{dst}" + (":ro" if ro else "")]
    for k, v in sorted((env or {}).items()):
        argv += ["--env", f"{k}={v}"]
    argv += ["--pwd", workdir] if workdir else []
    return [*argv, source, *command]


class ApptainerRuntime:
    """Apptainer: exported SIF files; GPUs through --nv (or --nv --nvccli)."""

    name = "apptainer"
    modes: tuple[str, ...] = ("nv", "nvccli")
    runs = "sif"
    volumes = True  # a folder of the user's each (files.volume_binds), bound in

    def __init__(
        self, binary: str | None = None, image: str | None = None, probe: HostProbe | None = None
    ) -> None:
        """`binary`: the apptainer program (default: on PATH); `image`: a Docker image with
        apptainer in it (export only); `probe`: the host probe (default host.probe_host)."""
        self._binary, self._image, self._probe = binary, image, probe

    def tool(self) -> Tool:
        """Raises ContainerRuntimeError when there is no apptainer."""
        return find_tool("apptainer", path=self._binary, image=self._image, hint=HINT)

    def available(self) -> Availability:
        try:
            return Availability(ok=True, reason=self.tool().describe())
        except ContainerRuntimeError as exc:
            return Availability(ok=False, reason=exc.message, hint=exc.hint)

    def probe_modes(self) -> tuple[AccessMode, ...]:
        gpus = host_gpus(self._probe)
        seen = f"{gpus} NVIDIA GPU(s)" if gpus else "no NVIDIA GPU on this host"
        cli = shutil.which("nvidia-container-cli")
        return (
            AccessMode(name="nv", available=bool(gpus), detail=f"{seen}; apptainer --nv binds the driver"),
            AccessMode(
                name="nvccli",
                available=bool(gpus and cli),
                detail=f"{seen}; nvidia-container-cli " + (f"at {cli}" if cli else "not found"),
            ),
        )

    def grant(self, mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
        if selection is not None:
            raise UsageError("--gpus applies to --runtime docker", hint="apptainer --nv hands in every GPU")
        return GpuGrant(flags=FLAGS[mode.name])

    def mode_flags(self, mode: AccessMode) -> tuple[str, ...]:
        return FLAGS[mode.name] if mode.available else ()

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
        return apptainer_exec_argv(
            spec.image,
            spec.command,
            gpu_flags=spec.gpu_flags,
            binds=[*binds_of(spec.mounts), *volume_binds(spec)],
            env=spec.env,
            workdir=spec.workdir,
            apptainer=self._binary or "apptainer",
        )

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
        tool = self.tool()

        def convert(info: ImageInfo, built: Path, work: Path) -> None:
            export_sif(source, image, info, built, work, tool, run=run, say=say)

        return export_image(source, image, out, self.runs, tool, convert)
