"""How a training container is started: the preamble (the runtime, the image, the GPU access mode,
this host), the training container around the runtime's GPU grant (shared memory, ulimits,
network) and what to drop where the runtime refuses it. What each GPU access mode hands a
container is the runtime's (runtime/docker.py, ...).

Shared by `certify` and `run`, so a certified image runs exactly the way it was certified.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envbuilder.certify.jit_cache import jit_cache_volume
from envbuilder.engine import ContainerSpec, DaemonInfo, Engine, ImageInfo, Mount, Ulimit
from envbuilder.errors import UsageError
from envbuilder.host import AccessMode, HostReport, probe_host
from envbuilder.host.collectives import collective_env
from envbuilder.image.metadata import image_env
from envbuilder.resources import user_data_dir
from envbuilder.runtime import NONE, AccessChoice, GpuGrant, Runtime
from envbuilder.runtime import get as get_runtime
from envbuilder.runtime.base import choose_access
from envbuilder.runtime.gpu_selection import GpuSelection

SHM_MAX = 8 * 1024**3
STACK_ULIMIT = 67108864  # 64 MiB, as NVIDIA's framework containers advise (with memlock=-1)
TRAINING_ULIMITS = (
    Ulimit(name="memlock", soft=-1, hard=-1),
    Ulimit(name="stack", soft=STACK_ULIMIT, hard=STACK_ULIMIT),
)
_RLIMIT_REASON = re.compile(r"error setting rlimit type \d+: [^:\")]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What a training container is started for: the runtime, the local image, the GPU access
    chosen, this host."""

    runtime: Runtime
    image: ImageInfo
    choice: AccessChoice
    host: HostReport


def prepare_target(
    rt: Runtime,
    image_ref: str,
    gpu_access: str,
    *,
    probe: Callable[[], HostReport] | None = None,
    access_modes: Callable[[DaemonInfo], Sequence[AccessMode]] | None = None,
) -> Target:
    """The preamble of certify and run: inspect the local image, choose the GPU access mode among
    the runtime's (none probes no modes; `access_modes`: the modes a daemon offers, instead of the
    runtime's own probe), probe this host (`probe`, default host.probe_host).

    Raises UsageError (image not found locally, a mode the runtime lacks), NoGpuError (an explicit
    mode this host lacks), DockerUnavailableError.
    """
    eng = rt.engine()
    info = eng.inspect_image(image_ref)
    if info is None:
        raise UsageError(f"image {image_ref!r} not found locally", hint="build it, or `docker pull` it first")
    daemon = eng.daemon_info()
    modes: Sequence[AccessMode] = ()
    if gpu_access != NONE:
        modes = access_modes(daemon) if access_modes is not None else rt.probe_modes()
    choice = choose_access(rt, gpu_access, modes)
    return Target(runtime=rt, image=info, choice=choice, host=(probe or probe_host)())


def shm_bytes(mem_total: int | None = None) -> int:
    """Shared memory for DataLoader workers: half the RAM, at most 8 GiB."""
    if mem_total is None:
        try:
            mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            mem_total = 2 * SHM_MAX
    return max(64 * 1024**2, min(SHM_MAX, mem_total // 2))


def training_container(
    image: ImageInfo,
    choice: AccessChoice,
    command: Sequence[str],
    *,
    runtime: Runtime | None = None,
    env: Mapping[str, str] | None = None,
    mounts: Sequence[Mount] = (),
    network: str | None = "none",
    mem_total: int | None = None,
    host_env: Mapping[str, str] | None = None,
    gpus: GpuSelection | None = None,
    jit_cache: str | None = None,
    user: str | None = None,
) -> ContainerSpec:
    """A container for training work on `image`: GPU access per `choice` (the runtime's grant,
    default docker's), shared memory for DataLoader workers, memlock=-1 and stack=64 MiB ulimits,
    no network unless asked, and the host's collective settings (`collective_env(host_env)`,
    default os.environ). `env` wins over those; the access mode's variables win over both (nothing
    may hide the GPUs by accident), except that a grant's LD_LIBRARY_PATH keeps the image's own
    after it. `gpus`: only those GPUs (`--gpus`; None: all). `jit_cache`: "certify" or "run": that
    one's JIT cache volume of the image, where it applies (jit_cache.py); None: none. `user`:
    run as this user, not the image's.
    Raises NoGpuError (a selected GPU the mode cannot hand in)."""
    rt = runtime or get_runtime()
    grant = rt.grant(choice.mode, gpus) if choice.mode is not None else GpuGrant()
    grant_env = dict(grant.env)
    own = image_env(image).get("LD_LIBRARY_PATH")
    if own and "LD_LIBRARY_PATH" in grant_env:
        grant_env["LD_LIBRARY_PATH"] += f":{own}"
    forwarded = collective_env(os.environ if host_env is None else host_env)
    cache = None
    if jit_cache is not None:
        cache = jit_cache_volume(image, rt, choice, env or {}, owner=jit_cache, user=user)
    return ContainerSpec(
        image=image.id,
        command=tuple(command),
        env={**forwarded, **(cache.env if cache else {}), **(env or {}), **grant_env},
        gpus=grant.gpus,
        devices=grant.devices,
        cdi_devices=grant.cdi_devices,
        gpu_flags=grant.flags,
        mounts=(*grant.mounts, *mounts),
        volumes=(cache.volume,) if cache is not None else (),
        shm_size=shm_bytes(mem_total),
        ulimits=TRAINING_ULIMITS,
        network=network,
        user=user,
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
