"""What the runtimes that run exported files (Apptainer's SIF, enroot's squashfs) share: the image
is the exported file's sidecar image, a run is the runtime's command line in a subprocess, removing
is deleting the file and its sidecar, and an image runtime's builds are not theirs."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from envbuilder.engine.container import ContainerSpec, Mount
from envbuilder.engine.hpc import read_exported, sidecar_path
from envbuilder.engine.model import ImageInfo, RunResult
from envbuilder.errors import ContainerRuntimeError
from envbuilder.host.probe import HostReport, probe_host
from envbuilder.resources import cache_dir

Bind = tuple[str, str, bool]  # host path, container path, read-only
HostProbe = Callable[[], HostReport]


def no_engine(name: str, fmt: str) -> ContainerRuntimeError:
    return ContainerRuntimeError(
        f"the {name} runtime runs exported {fmt} files; it has no image store and builds no Dockerfile",
        hint=f"build with docker, then `envbuilder export IMAGE --{fmt} FILE`",
    )


def inspect_file(ref: str) -> ImageInfo | None:
    """The image an exported file came from (its sidecar's), None when there is no such file.
    Raises UsageError (no readable sidecar)."""
    if not Path(ref).is_file():
        return None
    return read_exported(Path(ref), check_hash=False).image


def remove_file(ref: str) -> bool:
    path = Path(ref)
    if not path.is_file():
        return False
    path.unlink()
    sidecar_path(path).unlink(missing_ok=True)
    return True


def run_argv(
    argv: Sequence[str], *, on_stderr: Callable[[str], None] | None = None, timeout_s: float | None = None
) -> RunResult:
    """Run a runtime's command line to its end: exit code (124: killed at `timeout_s`), output.
    Raises ContainerRuntimeError when it cannot start."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return RunResult(exit_code=124, stdout=out, stderr=err)
    except OSError as exc:
        raise ContainerRuntimeError(f"cannot run {argv[0]}: {exc}") from exc
    if on_stderr is not None:
        for line in done.stderr.splitlines():
            on_stderr(line)
    return RunResult(exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr)


def host_gpus(probe: HostProbe | None) -> int:
    """How many NVIDIA GPUs this host has (the host probe's)."""
    return len((probe or probe_host)().gpus)


def volumes_dir() -> Path:
    """Where a file runtime keeps its named volumes: one folder each, CACHE/volumes/NAME
    (ENVBUILDER_CACHE_DIR, else the XDG cache folder: what they hold can be rebuilt)."""
    return cache_dir() / "volumes"


def volume_binds(spec: ContainerSpec) -> list[Bind]:
    """A file runtime's named volumes (ContainerSpec.volumes): each a folder of the calling user's
    under volumes_dir(), made (mode 0700: the runtime runs the job as that user, and nobody else
    may plant files in it) when the command line is, and bound read-write at its target.
    Raises ContainerRuntimeError (the folder cannot be made)."""
    binds: list[Bind] = []
    for vol in spec.volumes:
        folder = volumes_dir() / vol.name
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise ContainerRuntimeError(
                f"cannot make the folder of volume {vol.name} ({folder}): {exc.strerror or exc}",
                hint="point ENVBUILDER_CACHE_DIR at a writable folder, or run with --no-jit-cache",
            ) from exc
        binds.append((str(folder), vol.target, False))
    return binds


def refuse_volumes(name: str, spec: ContainerSpec, where: str) -> None:
    """Named volumes cannot go `where` (pyxis's srun, started on the submitting host: a folder made
    here is not the node's): a spec with some is a caller's mistake, refused rather than run
    without them. Raises ContainerRuntimeError."""
    if spec.volumes:
        names = ", ".join(v.name for v in spec.volumes)
        raise ContainerRuntimeError(f"the {name} runtime takes no named volumes {where} ({names})")


def binds_of(mounts: Sequence[Mount]) -> list[Bind]:
    return [(m.source, m.target, m.read_only) for m in mounts]
