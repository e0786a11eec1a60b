"""How a training container is started: the preamble (the image, the GPU access mode, this host),
what each mode hands a container (devices, driver libraries, device requests), the training
container around it (shared memory, ulimits, network) and what to drop where the runtime refuses it.

Shared by `certify` and `run`, so a certified image runs exactly the way it was certified.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from envbuilder.runtime.gpu_selection import GpuSelection
from envbuilder.engine import ContainerSpec, DaemonInfo, Engine, GpuRequest, ImageInfo, Mount, Ulimit
from envbuilder.engine.container import docker_flags
from envbuilder.errors import NoGpuError, UsageError
from envbuilder.host import AccessMode, HostReport, gpu_access_modes, probe_host
from envbuilder.host.collectives import collective_env
from envbuilder.host.driver_files import CONTAINER_BIN_DIR
from envbuilder.image.metadata import image_env
from envbuilder.resources import user_data_dir

GPU_ACCESS_CHOICES: tuple[str, ...] = ("auto", "toolkit", "cdi", "devices", "none")
SHM_MAX = 8 * 1024**3
STACK_ULIMIT = 67108864  # 64 MiB, as NVIDIA's framework containers advise (with memlock=-1)
TRAINING_ULIMITS = (
    Ulimit(name="memlock", soft=-1, hard=-1),
    Ulimit(name="stack", soft=STACK_ULIMIT, hard=STACK_ULIMIT),
)
CDI_KIND = "nvidia.com/gpu"
CDI_ALL_GPUS = f"{CDI_KIND}=all"
_GPU_NODE = re.compile(r"^/dev/nvidia[0-9]+$")
# devices mode: the driver's libraries go here, mounted over nothing in the container, so they never
# shadow the image's own libraries (unless their host folder can be mounted whole at its own path).
CONTAINER_LIB_DIR = "/usr/local/nvidia/lib64"
_RLIMIT_REASON = re.compile(r"error setting rlimit type \d+: [^:\")]+")
_SYSTEM_LIB_RE = re.compile(r"^/(usr/)?lib(32|64)?(/[a-z0-9_]+-linux-gnu[a-z]*)?/?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessChoice:
    name: Literal["toolkit", "cdi", "devices", "none"]
    reason: str
    mode: AccessMode | None = None


def choose_gpu_access(requested: str, modes: Sequence[AccessMode]) -> AccessChoice:
    """auto: the first available of toolkit, cdi, devices, else none (the CPU path). An explicit
    mode must be available. Raises UsageError (unknown mode), NoGpuError (mode not offered)."""
    if requested not in GPU_ACCESS_CHOICES:
        raise UsageError(
            f"unknown GPU access mode {requested!r}", hint=f"use {', '.join(GPU_ACCESS_CHOICES)}"
        )
    if requested == "none":
        return AccessChoice(name="none", reason="asked for --gpu-access none (CPU path)")
    by_name = {m.name: m for m in modes}
    if requested == "auto":
        for m in modes:
            if m.available:
                return AccessChoice(name=m.name, reason=f"auto: {m.detail}", mode=m)
        why = "; ".join(f"{m.name}: {m.detail}" for m in modes) or "no mode probed"
        return AccessChoice(name="none", reason=f"auto: no GPU access mode on this host ({why})")
    mode = by_name.get(requested)  # type: ignore[call-overload]
    if mode is None or not mode.available:
        detail = mode.detail if mode is not None else "not probed"
        raise NoGpuError(
            f"GPU access mode {requested!r} is not available on this host: {detail}",
            hint="run `envbuilder doctor` to see which modes this host offers, or use --gpu-access auto",
        )
    return AccessChoice(name=mode.name, reason=f"asked for {requested}: {mode.detail}", mode=mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What a training container is started for: the local image, the GPU access chosen, this host."""

    image: ImageInfo
    choice: AccessChoice
    host: HostReport


def daemon_access_modes(daemon: DaemonInfo) -> tuple[AccessMode, ...]:
    """The access modes this host offers with this daemon (host.gpu_access_modes)."""
    return gpu_access_modes(
        docker_reachable=True, runtimes=daemon.runtimes, cdi_spec_dirs=daemon.cdi_spec_dirs
    )


def prepare_target(
    eng: Engine,
    image_ref: str,
    gpu_access: str,
    *,
    probe: Callable[[], HostReport] | None = None,
    access_modes: Callable[[DaemonInfo], Sequence[AccessMode]] | None = None,
) -> Target:
    """The preamble of certify and run: inspect the local image, choose the GPU access mode (none
    probes no modes), probe this host (`probe`, default host.probe_host).

    Raises UsageError (image not found locally, unknown mode), NoGpuError (an explicit mode this
    host lacks), DockerUnavailableError.
    """
    info = eng.inspect_image(image_ref)
    if info is None:
        raise UsageError(f"image {image_ref!r} not found locally", hint="build it, or `docker pull` it first")
    daemon = eng.daemon_info()
    modes: Sequence[AccessMode] = ()
    if gpu_access != "none":
        modes = (access_modes or daemon_access_modes)(daemon)
    choice = choose_gpu_access(gpu_access, modes)
    return Target(image=info, choice=choice, host=(probe or probe_host)())


def shm_bytes(mem_total: int | None = None) -> int:
    """Shared memory for DataLoader workers: half the RAM, at most 8 GiB."""
    if mem_total is None:
        try:
            mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            mem_total = 2 * SHM_MAX
    return max(64 * 1024**2, min(SHM_MAX, mem_total // 2))


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuGrant:
    """What an access mode hands a container: a device request, device nodes, mounts, variables."""

    gpus: GpuRequest | None = None
    devices: tuple[str, ...] = ()
    cdi_devices: tuple[str, ...] = ()
    mounts: tuple[Mount, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def docker_flags(self) -> tuple[str, ...]:
        """The `docker run` flags of this grant alone (what `doctor` shows for each mode)."""
        bare = ContainerSpec(
            image="-",
            network=None,
            gpus=self.gpus,
            devices=self.devices,
            cdi_devices=self.cdi_devices,
            mounts=self.mounts,
            env=self.env,
        )
        return tuple(docker_flags(bare))


def gpu_grant(mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
    """What `mode` hands a container: every GPU, or only those of `selection` (`--gpus`).
    toolkit: `--gpus all` (or the selected UUIDs/indexes, which the Toolkit turns into
    NVIDIA_VISIBLE_DEVICES); cdi: the nvidia.com/gpu=all device (or nvidia.com/gpu=INDEX each,
    the names nvidia-ctk and `envbuilder gpu cdi-spec` both write); devices: every /dev/nvidia*
    node (or the control nodes and the selected GPUs' /dev/nvidiaN only), the driver's library
    folder, read-only, on LD_LIBRARY_PATH, and the driver's programs (nvidia-smi, ...) read-only
    at /usr/bin, as the Container Toolkit mounts them. A library folder that is a system folder (e.g.
    /usr/lib/x86_64-linux-gnu) is not mounted whole, which would shadow the image's libc: each
    driver library is mounted into CONTAINER_LIB_DIR instead. Raises NoGpuError (devices mode: a
    selected GPU without a device node)."""
    if mode.name == "toolkit":
        return GpuGrant(gpus=GpuRequest(device_ids=selection.ids) if selection else GpuRequest())
    if mode.name == "cdi":
        names = tuple(f"{CDI_KIND}={i}" for i in selection.indexes) if selection else (CDI_ALL_GPUS,)
        return GpuGrant(cdi_devices=names)
    devices = mode.devices
    if selection is not None:  # the control nodes, and the selected GPUs' nodes only
        devices = (*(d for d in devices if not _GPU_NODE.match(d)), *selection.node_paths())
    programs = tuple(
        Mount(source=host, target=f"{CONTAINER_BIN_DIR}/{name}", read_only=True)
        for name, host in mode.programs
    )
    if not mode.lib_dir:
        return GpuGrant(devices=devices, mounts=programs)
    if not _SYSTEM_LIB_RE.match(mode.lib_dir):
        mounts: tuple[Mount, ...] = (Mount(source=mode.lib_dir, target=mode.lib_dir, read_only=True),)
        lib_path = mode.lib_dir
    else:
        mounts = tuple(
            Mount(source=f"{mode.lib_dir}/{lib}", target=f"{CONTAINER_LIB_DIR}/{lib}", read_only=True)
            for lib in mode.driver_libs
        )
        lib_path = CONTAINER_LIB_DIR
    return GpuGrant(devices=devices, mounts=(*mounts, *programs), env={"LD_LIBRARY_PATH": lib_path})


def mode_docker_args(mode: AccessMode) -> list[str]:
    """The flags an available mode gives a container (doctor --json's `docker_args`); [] otherwise."""
    return list(gpu_grant(mode).docker_flags()) if mode.available else []


def training_container(
    image: ImageInfo,
    choice: AccessChoice,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    mounts: Sequence[Mount] = (),
    network: str | None = "none",
    mem_total: int | None = None,
    host_env: Mapping[str, str] | None = None,
    gpus: GpuSelection | None = None,
) -> ContainerSpec:
    """A container for training work on `image`: GPU access per `choice` (gpu_grant), shared
    memory for DataLoader workers, memlock=-1 and stack=64 MiB ulimits, no network unless asked,
    and the host's collective settings (`collective_env(host_env)`, default os.environ). `env`
    wins over those; the access mode's variables win over both (nothing may hide the GPUs by
    accident). In devices mode the image's own LD_LIBRARY_PATH is kept after the driver's folder,
    and NVIDIA_VISIBLE_DEVICES / NVIDIA_DRIVER_CAPABILITIES are set as the Container Toolkit would.
    `gpus`: only those GPUs (`--gpus`; None: all). Raises NoGpuError (devices mode: a selected GPU
    without a device node)."""
    grant = gpu_grant(choice.mode, gpus) if choice.mode is not None else GpuGrant()
    grant_env = dict(grant.env)
    if choice.name == "devices":
        own = image_env(image).get("LD_LIBRARY_PATH")
        if own and "LD_LIBRARY_PATH" in grant_env:
            grant_env["LD_LIBRARY_PATH"] += f":{own}"
        grant_env.setdefault("NVIDIA_VISIBLE_DEVICES", ",".join(gpus.ids) if gpus else "all")
        grant_env.setdefault("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
    forwarded = collective_env(os.environ if host_env is None else host_env)
    return ContainerSpec(
        image=image.id,
        command=tuple(command),
        env={**forwarded, **(env or {}), **grant_env},
        gpus=grant.gpus,
        devices=grant.devices,
        cdi_devices=grant.cdi_devices,
        mounts=(*grant.mounts, *mounts),
        shm_size=shm_bytes(mem_total),
        ulimits=TRAINING_ULIMITS,
        network=network,
    )


MEMLOCK_MEMO_S = 24 * 3600  # how long a daemon's answer to the memlock probe is remembered
_MEMO_KEY = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemlockDrop:
    """The memlock ulimit was dropped: this daemon's runtime refuses it (runc's `reason`).
    `said_before`: the refusal was found (and said) within MEMLOCK_MEMO_S for this daemon, so it
    is a note (--verbose, the certificate's warnings), not a warning on every run."""

    reason: str
    said_before: bool = False

    @property
    def warning(self) -> str:
        return f"the container runtime refuses the memlock ulimit ({self.reason}); running without it"

    @property
    def note(self) -> str:
        return f"memlock ulimit dropped: this Docker daemon refuses it ({self.reason}), as said before"


def memlock_memo_path(daemon_id: str, data_dir: Path | None = None) -> Path | None:
    """Where this daemon's answer to the memlock probe is remembered (the data folder's
    daemons/ID.json); None for a daemon without an ID (nothing is remembered for it)."""
    if not daemon_id.strip():
        return None
    return (data_dir or user_data_dir()) / "daemons" / f"{_MEMO_KEY.sub('_', daemon_id)}.json"


def _read_memo(path: Path | None, now: float) -> tuple[bool, str | None]:
    """(remembered, the refusal or None) from a memo younger than MEMLOCK_MEMO_S; a memo that is
    missing, old, unreadable or malformed is not remembered (the probe runs again)."""
    if path is None:
        return False, None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False, None
    memo = doc.get("memlock") if isinstance(doc, dict) else None
    if not isinstance(memo, dict):
        return False, None
    checked, refused = memo.get("checked"), memo.get("refused")
    if not isinstance(checked, int | float) or not 0 <= now - checked < MEMLOCK_MEMO_S:
        return False, None
    if refused is not None and not isinstance(refused, str):
        return False, None
    return True, refused


def _write_memo(path: Path | None, refused: str | None, now: float) -> None:
    """Remember the daemon's answer; a data folder that cannot be written only means the probe
    runs again next time."""
    if path is None:
        return
    from envbuilder.atomic import write_text_atomic
    from envbuilder.errors import EnvbuilderError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({"memlock": {"checked": now, "refused": refused}}) + "\n")
    except (OSError, EnvbuilderError):
        pass


def drop_refused_memlock(
    eng: Engine,
    spec: ContainerSpec,
    *,
    data_dir: Path | None = None,
    now: Callable[[], float] = time.time,
) -> tuple[ContainerSpec, MemlockDrop | None]:
    """The spec as the runtime will take it, and what had to go. Where the daemon may not raise
    RLIMIT_MEMLOCK (no CAP_SYS_RESOURCE: rootless or nested Docker; runc fails with `error
    setting rlimit type 8`), a probe container finds out before anything runs
    (engine.ulimit_refusal) and the memlock ulimit is dropped. The daemon's answer is
    remembered for MEMLOCK_MEMO_S in the data folder, keyed by the daemon's ID: the probe is
    not repeated meanwhile, and a refusal found earlier comes back `said_before`.
    Raises DockerUnavailableError."""
    memlock = [u for u in spec.ulimits if u.name == "memlock"]
    if not memlock:
        return spec, None
    memo = memlock_memo_path(eng.daemon_info().id, data_dir)
    remembered, refused = _read_memo(memo, now())
    if not remembered:
        refused = eng.ulimit_refusal(spec.image, memlock)
        _write_memo(memo, _innermost(refused) if refused else None, now())
    if refused is None:
        return spec, None
    return spec.without_ulimit("memlock"), MemlockDrop(reason=_innermost(refused), said_before=remembered)


def _innermost(refused: str) -> str:
    """runc says e.g. `... error setting rlimits for ready process: error setting rlimit type 8:
    operation not permitted: unknown`: its innermost reason."""
    reasons = _RLIMIT_REASON.findall(refused)
    return reasons[-1] if reasons else refused[-100:]
