"""How a training container is started: the GPU access mode (toolkit, cdi, devices, none) and the
run arguments around it (devices, driver libraries, shared memory, ulimits, network).

Shared by `certify` and `run`, so a certified image runs exactly the way it was certified.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envbuilder.engine import ContainerRun, ImageInfo
from envbuilder.errors import NoGpuError, UsageError
from envbuilder.host import AccessMode
from envbuilder.host.collectives import collective_env

GPU_ACCESS_CHOICES: tuple[str, ...] = ("auto", "toolkit", "cdi", "devices", "none")
SHM_MAX = 8 * 1024**3
STACK_ULIMIT = 67108864  # 64 MiB, as NVIDIA's framework containers advise (with memlock=-1)


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


def shm_bytes(mem_total: int | None = None) -> int:
    """Shared memory for DataLoader workers: half the RAM, at most 8 GiB."""
    if mem_total is None:
        try:
            mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            mem_total = 2 * SHM_MAX
    return max(64 * 1024**2, min(SHM_MAX, mem_total // 2))


def _image_env(info: ImageInfo, key: str) -> str | None:
    for item in info.env:
        k, sep, v = item.partition("=")
        if sep and k == key:
            return v
    return None


def gpu_run_parts(choice: AccessChoice, image: ImageInfo) -> dict[str, Any]:
    """ContainerRun fields for an access mode, read off AccessMode.docker_args() (the flags
    `doctor` shows) so both agree. devices mode keeps the image's own LD_LIBRARY_PATH after the
    driver's folder and sets NVIDIA_VISIBLE_DEVICES/NVIDIA_DRIVER_CAPABILITIES."""
    parts: dict[str, Any] = {"env": {}, "devices": [], "binds": [], "gpus_all": False, "cdi_devices": []}
    if choice.mode is None:
        return parts
    args = list(choice.mode.docker_args())
    for flag, value in zip(args[::2], args[1::2], strict=True):
        if flag == "--gpus":
            parts["gpus_all"] = True
        elif flag == "--device" and value.startswith("/"):
            parts["devices"].append(value)
        elif flag == "--device":
            parts["cdi_devices"].append(value)
        elif flag == "-v":
            src, dst, opt = [*value.split(":"), "rw"][:3]
            parts["binds"].append((src, dst, opt == "ro"))
        elif flag == "-e":
            key, _, val = value.partition("=")
            parts["env"][key] = val
    if choice.name == "devices":
        own = _image_env(image, "LD_LIBRARY_PATH")
        if own and "LD_LIBRARY_PATH" in parts["env"]:
            parts["env"]["LD_LIBRARY_PATH"] += f":{own}"
        parts["env"].setdefault("NVIDIA_VISIBLE_DEVICES", "all")
        parts["env"].setdefault("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
    return parts


def training_container(
    image: ImageInfo,
    choice: AccessChoice,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    binds: Sequence[tuple[str, str, bool]] = (),
    network: str | None = "none",
    mem_total: int | None = None,
    timeout_s: float | None = None,
    host_env: Mapping[str, str] | None = None,
) -> ContainerRun:
    """A container for training work on `image`: GPU access per `choice`, shared memory for
    DataLoader workers, memlock=-1 and stack=64 MiB ulimits, no network unless asked, and the
    host's collective settings (`collective_env(host_env)`, default os.environ). `env` wins over
    those; the access mode's variables win over both (nothing may hide the GPUs by accident)."""
    parts = gpu_run_parts(choice, image)
    forwarded = collective_env(os.environ if host_env is None else host_env)
    return ContainerRun(
        image=image.id,
        command=tuple(command),
        env={**forwarded, **(env or {}), **parts["env"]},
        devices=tuple(parts["devices"]),
        gpus_all=parts["gpus_all"],
        cdi_devices=tuple(parts["cdi_devices"]),
        binds=(*parts["binds"], *binds),
        shm_size=shm_bytes(mem_total),
        ulimits=(("memlock", -1, -1), ("stack", STACK_ULIMIT, STACK_ULIMIT)),
        network=network,
        timeout_s=timeout_s,
    )


def docker_cli_args(run: ContainerRun) -> list[str]:
    """The equivalent `docker run` command line (recorded in the certificate, shown with --debug)."""
    argv = ["docker", "run", "--rm"]
    if run.network:
        argv += ["--network", run.network]
    if run.shm_size:
        argv += ["--shm-size", str(run.shm_size)]
    for name, soft, hard in run.ulimits:
        argv += ["--ulimit", f"{name}={soft}:{hard}"]
    if run.gpus_all:
        argv += ["--gpus", "all"]
    for d in (*run.devices, *run.cdi_devices):
        argv += ["--device", d]
    for src, dst, ro in run.binds:
        argv += ["-v", f"{src}:{dst}" + (":ro" if ro else "")]
    for k, v in sorted(run.env.items()):
        argv += ["-e", f"{k}={v}"]
    return [*argv, run.image, *run.command]
