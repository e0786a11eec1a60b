"""The runtime interface: what certify, run, fleet and export need from a container runtime, and
the GPU access modes, which are the runtime's own (what each mode hands a container differs per
runtime: Docker's `--gpus`/CDI/device flags, Podman's CDI, Apptainer's `--nv`, enroot's hook).

A runtime is one module in this package (docker.py, apptainer.py, enroot.py, ...) with one class
that satisfies `Runtime`, registered by one line in runtime/__init__.py's RUNTIMES. The command
line's `--runtime` choices are the registry's names; `--gpu-access` choices are `auto`, every
registered runtime's modes, and `none` (the CPU path, every runtime's, never listed in `modes`).

Two kinds of runtime: those that run images from a store of their own (`runs == "image"`:
docker, podman; `engine()` is their full container engine) and those that run a file exported
from such an image (`runs == "sif"`: apptainer, `"sqsh"`: enroot; `export` writes it, `argv`
starts it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from envbuilder.engine.container import ContainerSpec, GpuRequest, Mount
from envbuilder.engine.hpc import Exported
from envbuilder.engine.interface import Engine
from envbuilder.engine.model import BuildResult, ImageInfo, RunResult
from envbuilder.errors import ContainerRuntimeError, NoGpuError, UsageError
from envbuilder.host.access import AccessMode
from envbuilder.runtime.gpu_selection import GpuSelection

NONE = "none"  # the CPU path: every runtime's, never in `modes`
AUTO = "auto"  # the first available of the runtime's `modes`, else none


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Whether this host can use a runtime, and what was found or why not."""

    ok: bool
    reason: str
    hint: str | None = None  # how to get it, when it is not there


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuGrant:
    """What an access mode hands a container: a device request, device nodes, CDI devices, mounts,
    variables, and a command-line runtime's own flags (Apptainer's `--nv`)."""

    gpus: GpuRequest | None = None
    devices: tuple[str, ...] = ()
    cdi_devices: tuple[str, ...] = ()
    mounts: tuple[Mount, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    flags: tuple[str, ...] = ()


class Runtime(Protocol):
    """One container runtime. `name`: its registry key and `--runtime` choice. `modes`: its GPU
    access modes in `auto` order (without `none`). `runs`: what it starts, "image" (an image in
    its own store, by name or ID) or the format of the file `export` writes ("sif", "sqsh").
    `volumes`: whether its containers take named volumes (ContainerSpec.volumes), kept across
    containers: the engine's volumes (docker, podman), a folder of the user's each (the file
    runtimes: files.volume_binds); a runtime without them refuses a spec that has some."""

    name: str
    modes: tuple[str, ...]
    runs: str
    volumes: bool

    def available(self) -> Availability:
        """Whether this host has the runtime (its program, its daemon), and why not. Never raises."""
        ...

    def probe_modes(self) -> tuple[AccessMode, ...]:
        """Each of `modes`, in order, with whether this host offers it and what was found (or why
        not). Never raises: an unreachable daemon makes its modes unavailable, with the reason."""
        ...

    def grant(self, mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
        """What `mode` hands a container: every GPU, or those of `selection` (`--gpus`).
        Raises NoGpuError (a selected GPU the mode cannot hand in)."""
        ...

    def mode_flags(self, mode: AccessMode) -> tuple[str, ...]:
        """The command-line flags an available mode gives a container (what `doctor` shows for
        each mode); () for an unavailable one."""
        ...

    def engine(self) -> Engine:
        """The container engine behind an image runtime (inspect, run, attached runs, the memlock
        probe, builds). Raises ContainerRuntimeError for a runtime that runs exported files."""
        ...

    def build(self, context: Path, dockerfile: Path, **options: Any) -> BuildResult:
        """Build the Dockerfile (Engine.build's options). Raises ContainerRuntimeError where the
        runtime cannot build, BuildFailedError."""
        ...

    def inspect(self, ref: str) -> ImageInfo | None:
        """The image `ref` (name, name@digest, ID; a runtime that runs files: the exported file's
        sidecar image), or None when there is none."""
        ...

    def run(
        self,
        spec: ContainerSpec,
        *,
        on_stderr: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Run `spec` to its end and collect its output (Engine.run's contract): removed in every
        case, killed after `timeout_s` (exit 124); a non-zero exit is returned, not raised."""
        ...

    def argv(self, spec: ContainerSpec) -> list[str]:
        """The command line that starts `spec` with this runtime (recorded in certificates and run
        logs, shown to users; the file runtimes run it). Raises UsageError for what the runtime
        cannot express (e.g. a working directory with enroot)."""
        ...

    def remove(self, ref: str) -> bool:
        """Remove the image `ref` (a file runtime: the exported file and its sidecar); False when
        it was not there."""
        ...

    def export(
        self, image: str, out: Path, *, source: Engine, say: Callable[[str], None] = lambda _l: None
    ) -> Exported:
        """Write the image `image` of `source` (an image runtime's engine) as this runtime's file
        `out`, with its sidecar. Raises ContainerRuntimeError (an image runtime exports nothing;
        the tool failed), UsageError (no such image)."""
        ...


# --------------------------------------------------------------------------- choosing a mode


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessChoice:
    """The access mode a container gets: its name (one of the runtime's modes, or none), why, and
    the probed mode (None for none)."""

    name: str
    reason: str
    mode: AccessMode | None = None


def access_choices(runtimes: Sequence[Runtime]) -> tuple[str, ...]:
    """`--gpu-access` choices: auto, every mode of `runtimes` (first seen first), none."""
    return (AUTO, *dict.fromkeys(m for rt in runtimes for m in rt.modes), NONE)


def choose_access(runtime: Runtime, requested: str, modes: Sequence[AccessMode]) -> AccessChoice:
    """auto: the first available of `modes` (the runtime's, probed, in its order), else none (the
    CPU path). An explicit mode must be the runtime's and available. Raises UsageError (a mode the
    runtime does not have), NoGpuError (a mode this host does not offer)."""
    if requested == NONE:
        return AccessChoice(name=NONE, reason="asked for --gpu-access none (CPU path)")
    if requested != AUTO and requested not in runtime.modes:
        raise UsageError(
            f"GPU access mode {requested!r} is not one of the {runtime.name} runtime's",
            hint=f"with --runtime {runtime.name} use {', '.join((AUTO, *runtime.modes, NONE))}",
        )
    if requested == AUTO:
        for m in modes:
            if m.available:
                return AccessChoice(name=m.name, reason=f"auto: {m.detail}", mode=m)
        why = "; ".join(f"{m.name}: {m.detail}" for m in modes) or "no mode probed"
        return AccessChoice(name=NONE, reason=f"auto: no GPU access mode on this host ({why})")
    mode = next((m for m in modes if m.name == requested), None)
    if mode is None or not mode.available:
        detail = mode.detail if mode is not None else "not probed"
        raise NoGpuError(
            f"GPU access mode {requested!r} is not available on this host: {detail}",
            hint="run `envbuilder doctor` to see which modes this host offers, or use --gpu-access auto",
        )
    return AccessChoice(name=mode.name, reason=f"asked for {requested}: {mode.detail}", mode=mode)


def access_label(runtime: Runtime, mode: str) -> str:
    """How run logs and certificates name the GPU access a container got: an image runtime's mode
    (toolkit, cdi, ...); a file runtime's program with the mode's flags (`apptainer --nv`), else
    with its mode (`enroot (hook)`); none for the CPU path."""
    if mode == NONE or runtime.runs == "image":
        return mode
    flags = runtime.mode_flags(AccessMode(name=mode, available=True, detail=""))
    if flags and all(f.startswith("--") and "=" not in f for f in flags):
        return " ".join((runtime.name, *flags))
    return f"{runtime.name} ({mode})"


class ImageStoreRuntime:
    """What every runtime with an image store (docker, podman) does the same way: build, inspect,
    run and remove through its Engine, and no export (the file runtimes export). A subclass says
    `name`, `store` (for the refusal) and `engine()`."""

    name: str
    store = "its image store"
    volumes = True  # the engine's named volumes (docker/podman `--mount type=volume`)

    def engine(self) -> Engine:
        raise NotImplementedError

    def build(self, context: Path, dockerfile: Path, **options: Any) -> BuildResult:
        return self.engine().build(context, dockerfile, **options)

    def inspect(self, ref: str) -> ImageInfo | None:
        return self.engine().inspect_image(ref)

    def run(
        self,
        spec: ContainerSpec,
        *,
        on_stderr: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        return self.engine().run(spec, on_stderr=on_stderr, timeout_s=timeout_s)

    def remove(self, ref: str) -> bool:
        return self.engine().remove_image(ref)

    def export(
        self, image: str, out: Path, *, source: Engine, say: Callable[[str], None] = lambda _l: None
    ) -> Exported:
        raise ContainerRuntimeError(
            f"the {self.name} runtime runs images from {self.store}; there is no file to export to",
            hint="export for apptainer (--sif FILE) or enroot (--sqsh FILE)",
        )
