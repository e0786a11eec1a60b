"""The host record: OS, Python, frameworks, and each GPU as NVML sees it (idle state included)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .frameworks import FRAMEWORKS


def _s(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


def _try(fn: Any, *args: Any) -> Any:
    try:
        return _s(fn(*args))
    except Exception:
        return None


def gpu_devices_present() -> bool:
    """Device nodes of the NVIDIA driver: a GPU was given to this host or container."""
    return Path("/dev/nvidia0").exists() or any(Path("/dev").glob("nvidia[0-9]*"))


def nvml_gpus(nvml: Any) -> list[dict[str, Any]]:
    """Every GPU NVML lists, with its idle state and the processes already on it."""
    out: list[dict[str, Any]] = []
    for i in range(nvml.nvmlDeviceGetCount()):
        h = nvml.nvmlDeviceGetHandleByIndex(i)
        mem = _try(nvml.nvmlDeviceGetMemoryInfo, h)
        cc = _try(nvml.nvmlDeviceGetCudaComputeCapability, h)
        procs = _try(nvml.nvmlDeviceGetComputeRunningProcesses, h)  # None: NVML refused the list
        power = _try(nvml.nvmlDeviceGetPowerUsage, h)
        limit = _try(nvml.nvmlDeviceGetEnforcedPowerLimit, h)
        out.append(
            {
                "index": i,
                "name": _try(nvml.nvmlDeviceGetName, h),
                "uuid": _try(nvml.nvmlDeviceGetUUID, h),
                "pci_bus_id": _s(getattr(_try(nvml.nvmlDeviceGetPciInfo, h), "busId", None)),
                "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
                "memory_total_mib": round(mem.total / 2**20) if mem else None,
                "memory_used_mib": round(mem.used / 2**20) if mem else None,
                "temperature_c": _try(nvml.nvmlDeviceGetTemperature, h, 0),
                "power_w": power / 1000 if power is not None else None,
                "power_limit_w": limit / 1000 if limit is not None else None,
                "sm_clock_max_mhz": _try(nvml.nvmlDeviceGetMaxClockInfo, h, 1),
                # None when NVML refused the list (unknown, not "none"); used_mib None when the
                # driver hides a process's memory (as host/probe.py reads them)
                "processes": None if procs is None else [_process(p) for p in procs],
            }
        )
    return out


def _process(p: Any) -> dict[str, Any]:
    used = getattr(p, "usedGpuMemory", None)
    return {"pid": p.pid, "used_mib": None if used is None else round(used / 2**20)}


def framework_versions() -> dict[str, Any]:
    """Versions of the frameworks that are installed, read without importing them."""
    from importlib import metadata

    out: dict[str, Any] = {}
    names = ("torch", "torchvision", "tensorflow", "jax", "jaxlib", "numpy", "pillow")
    for name in (*names, "nvidia-ml-py"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def torch_build_info() -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        info["arch_list"] = torch.cuda.get_arch_list()
        info["device_count"] = torch.cuda.device_count()
        info["nccl"] = nccl_version()
    return info


def nccl_version() -> str | None:
    """NCCL's version as "2.28.9" (torch returns a tuple, older releases an int), or None."""
    try:
        import torch.cuda.nccl as nccl

        v = nccl.version()
    except Exception:
        return None
    return ".".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)


def host_record(nvml: Any, nvml_why: str) -> dict[str, Any]:
    """What the certificate binds to: machine, driver, GPUs (with the processes already on them),
    package versions; torch's build facts are torch_record()'s."""
    rec: dict[str, Any] = {
        "hostname": platform.node(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "in_container": Path("/.dockerenv").exists() or Path("/run/.containerenv").exists(),
        "dev_nvidia_present": gpu_devices_present(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "packages": framework_versions(),
        "shm_mib": _shm_mib(),
        "cuda_jit_cache": cuda_jit_cache(),
        "compile_caches": compile_caches(),
    }
    if nvml is None:
        rec["nvml"] = {"available": False, "reason": nvml_why}
        rec["gpus"] = []
    else:
        rec["nvml"] = {"available": True}
        rec["driver_version"] = _try(nvml.nvmlSystemGetDriverVersion)
        v = _try(nvml.nvmlSystemGetCudaDriverVersion)
        rec["cuda_driver_version"] = f"{v // 1000}.{(v % 1000) // 10}" if v else None
        rec["gpus"] = nvml_gpus(nvml)
    return rec


def _compile_cache_vars() -> tuple[str, ...]:
    return tuple(v for fw in FRAMEWORKS.values() for v in fw.compile_caches)


def _files_and_bytes(path: str, skip: tuple[Path, ...] = ()) -> tuple[int, int]:
    """The files under `path` and their bytes, not counting the folders in `skip`."""
    files = size = 0
    for dirpath, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if Path(dirpath) / d not in skip]
        for name in names:
            files += 1
            with contextlib.suppress(OSError):
                size += (Path(dirpath) / name).stat().st_size
    return files, size


def cuda_jit_cache(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The CUDA driver's JIT cache as this run finds it: its folder (CUDA_CACHE_PATH, else the
    driver's default ~/.nv/ComputeCache), whether it is disabled, and the files and bytes in it
    (not counting the frameworks' compile caches, which the JIT cache volume keeps below it).
    Empty, the first cuDNN autotuning compiles its kernels first (10-12 s more on an H100,
    benchmarks/results/issue27-h100-2026-12-07-f/): a certificate says which it was."""
    env = os.environ if env is None else env
    path = env.get("CUDA_CACHE_PATH") or str(
        Path(env.get("HOME") or "~").expanduser() / ".nv" / "ComputeCache"
    )
    nested = tuple(Path(env[v]) for v in _compile_cache_vars() if env.get(v))
    files, size = _files_and_bytes(path, nested)
    return {
        "path": path,
        "set_by": "CUDA_CACHE_PATH" if env.get("CUDA_CACHE_PATH") else "default",
        "disabled": env.get("CUDA_CACHE_DISABLE") == "1",
        "files": files,
        "bytes": size,
    }


def compile_caches(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The frameworks' compile caches this run was pointed at (frameworks.py compile_caches: the
    variable set), as it finds them: {VARIABLE: {"path", "files", "bytes"}}. Filled, a compile
    loads what an earlier run of the image compiled here instead of compiling it: a certificate
    says which it was."""
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for var in _compile_cache_vars():
        path = env.get(var)
        if path:
            files, size = _files_and_bytes(path)
            out[var] = {"path": path, "files": files, "bytes": size}
    return out


def torch_record() -> dict[str, Any]:
    """{"torch": torch_build_info()} when torch is installed, else {}: the host record's framework
    part, read apart from it because importing torch and loading cuDNN and NCCL take seconds on a
    cold machine (the compile lane's children may use the GPU meanwhile: plan.py)."""
    if importlib.util.find_spec("torch") is None:
        return {}
    try:
        return {"torch": torch_build_info()}
    except Exception as e:
        return {"torch": {"error": f"{type(e).__name__}: {e}"}}


def _shm_mib() -> int | None:
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return round(st.f_blocks * st.f_frsize / 2**20)
