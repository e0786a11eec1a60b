"""The multi_gpu step's environment sanity: what explains the usual multi-GPU hangs and slow
collectives before they happen (/dev/shm, P2P, the interconnect, NCCL settings). `envbuilder doctor`
applies the same rules on the host (envbuilder/host/collectives.py imports them).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any

from .. import telemetry
from ..hostinfo import nccl_version

SHM_MIN_MIB = 1024  # Docker's 64 MB default /dev/shm breaks NCCL's shared-memory transport
ENV_PREFIXES = (
    "NCCL_",
    "TORCH_NCCL_",
    "TORCH_DISTRIBUTED_",
    "TORCH_SYMM_MEM_",
    "NVSHMEM_",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
)
ENV_NAMES = ("MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS")
# Test hook, read by each rank (worker.py): FAULT[@RANK][,FAULT[@RANK]...], the rank defaulting to
# the last one. allreduce: the rank adds 1 to every non-zero contribution it makes to a value check;
# params: it perturbs one parameter after training; hang: it sleeps forever before the DDP run.
# Recorded and warned about when set.
FAULT_ENV = "ENVBUILDER_HARNESS_MG_FAULT"
FAULTS = ("allreduce", "params", "hang")


def fault_plan(value: str, world: int) -> tuple[dict[int, set[str]], list[str]]:
    """FAULT_ENV's value -> ({rank: {faults}}, what in it was not understood)."""
    plan: dict[int, set[str]] = {}
    bad: list[str] = []
    for item in (x.strip() for x in value.split(",")):
        if not item:
            continue
        name, _, at = item.partition("@")
        rank = int(at) if at.isdigit() else world - 1 if not at else -1
        if name not in FAULTS or not 0 <= rank < world:
            bad.append(item)
            continue
        plan.setdefault(rank, set()).add(name)
    return plan, bad


def parse_topo(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m` -> {"gpus": ["GPU0", ...], "links": {"GPU0": {"GPU1": "NV18"}}}."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).rstrip() for ln in text.splitlines()]
    header = next((ln.split() for ln in lines if re.match(r"^\s+GPU\d+", ln)), [])
    cols = [c for c in header if re.fullmatch(r"GPU\d+", c)]
    links: dict[str, dict[str, str]] = {}
    for ln in lines:
        parts = ln.split()
        if parts and re.fullmatch(r"GPU\d+", parts[0]) and len(parts) > len(cols):
            links[parts[0]] = dict(zip(cols, parts[1 : 1 + len(cols)]))  # noqa: B905 (zip(strict=) needs 3.10)
    return {"gpus": cols, "links": links}


def classify_interconnect(topo: dict[str, Any], gpus: list[int]) -> str:
    """nvlink (every pair NV# or NVML's NVLINK), pcie (no pair), mixed, or unknown."""
    kinds = set()
    for i in gpus:
        for j in gpus:
            if i != j:
                link = topo.get("links", {}).get(f"GPU{i}", {}).get(f"GPU{j}")
                if link is None:
                    return "unknown"
                kinds.add("nvlink" if re.fullmatch(r"NV\d+|NVLINK", link) else "pcie")
    return kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "unknown")


def visible_indices(world: int) -> list[int]:
    """Physical GPU indices the ranks use (CUDA_VISIBLE_DEVICES as integers, else 0..n-1)."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    parts = [p.strip() for p in cvd.split(",") if p.strip()]
    if parts and all(p.isdigit() for p in parts):
        return [int(p) for p in parts][:world]
    return list(range(world))


def shm_facts(path: str = "/dev/shm") -> dict[str, Any]:
    """Size and free space of the shared-memory mount (also read by `envbuilder doctor`)."""
    try:
        st = os.statvfs(path)
    except OSError as e:
        return {"error": str(e)}
    return {"total_mib": st.f_blocks * st.f_frsize // 2**20, "free_mib": st.f_bavail * st.f_frsize // 2**20}


def shm_warnings(total_mib: int) -> list[str]:
    """A /dev/shm too small for NCCL's shared-memory transport (also used by `envbuilder doctor`)."""
    if total_mib >= SHM_MIN_MIB:
        return []
    return [
        f"/dev/shm is {total_mib} MiB (< {SHM_MIN_MIB}): NCCL's shared-memory transport can fail or "
        "hang (Docker's default is 64 MB: run with --shm-size=1g or --ipc=host)"
    ]


def nccl_env_warnings(env: dict[str, str]) -> list[str]:
    """Settings that slow collectives down or hide hangs (also used by `envbuilder doctor`)."""
    out = []
    for var in ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"):
        if env.get(var, "0") not in ("0", ""):
            out.append(f"{var}={env[var]}: NCCL avoids that transport (slower collectives)")
    if env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING") == "0":
        out.append("TORCH_NCCL_ASYNC_ERROR_HANDLING=0: a hung collective never errors out")
    return out


def env_sanity(
    world: int, cuda: bool, timeout_s: float, deadline_s: float
) -> tuple[dict[str, Any], list[str]]:
    """What explains the usual multi-GPU hangs before they happen; (facts, warnings)."""
    warnings: list[str] = []
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}
    facts: dict[str, Any] = {
        "shm": shm_facts(),
        "env_vars": env,
        "nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),  # recorded, never set by the harness
        "timeout_s": timeout_s,
        "watchdog_s": deadline_s,
        "torch_nccl_async_error_handling": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    }
    facts["fault_injection"] = os.environ.get(FAULT_ENV)
    if facts["fault_injection"]:
        plan, bad = fault_plan(facts["fault_injection"], world)
        facts["fault_ranks"] = {str(r): sorted(f) for r, f in sorted(plan.items())}
        warnings.append(f"{FAULT_ENV}={facts['fault_injection']}: fault injection (tests only)")
        if bad:
            warnings.append(f"{FAULT_ENV}: not understood, ignored: {', '.join(bad)}")
    total = facts["shm"].get("total_mib")
    if isinstance(total, int):
        warnings += shm_warnings(total)
    warnings += nccl_env_warnings(env)
    facts["nccl_version"] = nccl_version()
    if not cuda:
        facts["p2p"] = facts["topology"] = {"skipped": "CPU test mode (gloo): no GPU"}
        facts["interconnect"] = "cpu"
        return facts, warnings
    import torch

    names = [torch.cuda.get_device_name(i) for i in range(world)]
    facts["gpu_names"] = names
    if len(set(names)) > 1:
        warnings.append(f"mixed GPU models {sorted(set(names))}: DDP runs at the slowest one's pace")
    matrix = [
        [i == j or bool(torch.cuda.can_device_access_peer(i, j)) for j in range(world)] for i in range(world)
    ]
    no_p2p = [f"{i}->{j}" for i in range(world) for j in range(world) if not matrix[i][j]]
    facts["p2p"] = {"matrix": matrix, "all_pairs": not no_p2p, "missing": no_p2p}
    if no_p2p:
        warnings.append(f"no P2P access between GPUs {', '.join(no_p2p)}: NCCL stages through host memory")
    gpus = visible_indices(world)
    facts["topology"] = smi_topology()
    if not facts["topology"].get("links"):
        # No topology from nvidia-smi (not in the image, or it printed nothing, as in a devices-mode
        # container on the 2-GPU H200): ask NVML, which the driver libraries always bring.
        facts["topology"] = {"nvidia_smi": facts["topology"], **nvml_topology(gpus)}
    facts["interconnect"] = classify_interconnect(facts["topology"], gpus)
    return facts, warnings


def smi_topology() -> dict[str, Any]:
    """`nvidia-smi topo -m`: its text and parse_topo's links, or why there are none."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"skipped": "nvidia-smi not found"}
    try:
        done = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": f"{type(e).__name__}: {e}"}
    said = {"text": done.stdout[-4000:], **parse_topo(done.stdout)}
    if done.returncode != 0:
        said["error"] = f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}"
    return said


def nvml_topology(gpus: list[int]) -> dict[str, Any]:
    """Links from NVML's pairwise P2P status over NVLink: "NVLINK" or "PCIe" (no NVLink P2P)."""
    nvml, why = telemetry.load_nvml()
    if nvml is None:
        return {"source": "nvml", "error": why}
    nvlink = getattr(nvml, "NVML_P2P_CAPS_INDEX_NVLINK", 2)
    ok = getattr(nvml, "NVML_P2P_STATUS_OK", 0)
    try:
        h = {i: nvml.nvmlDeviceGetHandleByIndex(i) for i in gpus}
        links = {
            f"GPU{i}": {
                f"GPU{j}": "NVLINK" if nvml.nvmlDeviceGetP2PStatus(h[i], h[j], nvlink) == ok else "PCIe"
                for j in gpus
                if j != i
            }
            for i in gpus
        }
    except Exception as e:  # NVMLError: a driver without the call, or a GPU that vanished
        return {"source": "nvml", "error": f"{type(e).__name__}: {e}"}
    return {"source": "nvml", "gpus": [f"GPU{i}" for i in gpus], "links": links}
