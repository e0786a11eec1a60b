"""The multi_gpu step: one worker process per GPU (multigpu_worker.py), NCCL all-reduce sweep,
a DDP run against a single-GPU baseline, and the environment facts that explain hangs.

The parent never joins the process group: it checks the environment, launches the ranks with
MASTER_ADDR=127.0.0.1 and a free port (the rest of the environment passed through unchanged:
NCCL_NVLS_ENABLE and friends are recorded, never set), watches them with a deadline (a hung rank
is killed and the step fails naming the hang), then merges the ranks' JSON files and judges.
`--multi-gpu-cpu-test N` runs the same path with gloo on the CPU (small sizes) for the tests.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .multigpu_merge import merge, tail
from .result import StepFailed, StepSkipped, log
from .thresholds import judge_multi_gpu, pick_multi_gpu

SHM_MIN_MIB = 1024  # Docker's 64 MB default /dev/shm breaks NCCL's shared-memory transport
GPU_WORK_S = 240.0  # the parent's deadline = process-group timeout + this (GPU path)
CPU_WORK_S = 60.0
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
_LIVE: list[subprocess.Popen[bytes]] = []  # running ranks: the harness watchdog kills them too


def kill_workers() -> None:
    """Kill every rank still running (each runs in its own process group)."""
    for p in list(_LIVE):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    _LIVE.clear()


# ---------------------------------------------------------------- environment sanity
def parse_topo(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m` -> {"gpus": ["GPU0", ...], "links": {"GPU0": {"GPU1": "NV18"}}}."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).rstrip() for ln in text.splitlines()]
    header = next((ln.split() for ln in lines if re.match(r"^\s+GPU\d+", ln)), [])
    cols = [c for c in header if re.fullmatch(r"GPU\d+", c)]
    links: dict[str, dict[str, str]] = {}
    for ln in lines:
        parts = ln.split()
        if parts and re.fullmatch(r"GPU\d+", parts[0]) and len(parts) > len(cols):
            links[parts[0]] = dict(zip(cols, parts[1 : 1 + len(cols)]))  # noqa: B905 (Python 3.8)
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
    from .multigpu_worker import FAULT_ENV

    facts["fault_injection"] = os.environ.get(FAULT_ENV)
    if facts["fault_injection"]:
        warnings.append(f"{FAULT_ENV}={facts['fault_injection']}: fault injection (tests only)")
    total = facts["shm"].get("total_mib")
    if isinstance(total, int):
        warnings += shm_warnings(total)
    warnings += nccl_env_warnings(env)
    from .hostinfo import _nccl_version

    facts["nccl_version"] = _nccl_version()
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
    from .telemetry import load_nvml

    nvml, why = load_nvml()
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


# ---------------------------------------------------------------- launching the ranks
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def package_root() -> Path:
    """The folder that must be on sys.path for `python -m <this package>.multigpu_worker`."""
    depth = len((__package__ or "x").split("."))
    return Path(__file__).resolve().parents[depth]


def launch(
    world: int,
    backend: str,
    mode: str,
    workdir: Path,
    *,
    timeout_s: float,
    deadline_s: float,
    seed: int,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the ranks; kill them all at the deadline, or a grace period after one of them failed.
    extra_env: added to the ranks' environment (the tests' fault injection)."""
    env = {**os.environ, **(extra_env or {})}  # passed through unchanged, plus the rendezvous
    root = str(package_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(world))
    # After one rank fails, the others get this long to fail on their own (and say why); a rank
    # blocked in an NCCL collective with a dead peer would otherwise wait out the whole timeout.
    grace = min(10.0, max(2.0, timeout_s / 4))
    procs: list[subprocess.Popen[bytes]] = []
    t0 = time.monotonic()
    for r in range(world):
        cmd = [sys.executable, "-m", f"{__package__}.multigpu_worker", "--rank", str(r)]
        cmd += ["--world", str(world)]
        cmd += ["--backend", backend, "--mode", mode, "--out-dir", str(workdir)]
        cmd += ["--timeout", f"{timeout_s:g}", "--seed", str(seed)]
        with (workdir / f"rank{r}.log").open("wb") as logf:
            p = subprocess.Popen(
                cmd,
                env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        procs.append(p)
        _LIVE.append(p)
    failed_at, why = None, ""
    while any(p.poll() is None for p in procs):
        now = time.monotonic()
        if failed_at is None and any(p.poll() not in (None, 0) for p in procs):
            failed_at = now
        if now - t0 > deadline_s:
            why = f"still running after {now - t0:.0f} s (deadline {deadline_s:.0f} s)"
            break
        if failed_at is not None and now - failed_at > grace:
            why = f"still running {grace:.0f} s after another rank failed"
            break
        time.sleep(0.1)
    hung = [r for r, p in enumerate(procs) if p.poll() is None]
    for r in hung:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(procs[r].pid, signal.SIGKILL)
        procs[r].wait()
    for p in procs:
        if p in _LIVE:
            _LIVE.remove(p)
    return {
        "wall_s": time.monotonic() - t0,
        "hung": hung,
        "hung_why": why,
        "codes": [p.returncode for p in procs],
    }


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------- the step
def multi_gpu_step(s: Any) -> None:
    """Record the multi_gpu step (and the result's multi_gpu section, and its gates) on suite s."""
    cpu_test = int(s.opts.multi_gpu_cpu_test or 0)
    with s.rec.step("multi_gpu") as st:
        _run_step(s, st, cpu_test)
    step = s.rec.steps[-1]
    section = {k: v for k, v in step.metrics.items() if k not in ("traceback",)}
    s.multi_gpu = {"status": step.status, "reason": step.reason, **section}
    s.multi_gpu_gates = list(step.metrics.get("gates") or [])


def _run_step(s: Any, st: Any, cpu_test: int) -> None:
    if cpu_test:
        world, backend, mode = cpu_test, "gloo", "cpu-test"
        if world < 2:
            raise StepFailed("--multi-gpu-cpu-test needs at least 2 processes")
    elif s.device != "cuda":
        raise StepSkipped("fewer than 2 GPUs visible (CPU path: no GPU is used)")
    else:
        import torch

        world, backend, mode = torch.cuda.device_count(), "nccl", "gpu"
        if world < 2:
            raise StepSkipped(f"fewer than 2 GPUs visible ({world})")
    timeout = float(s.opts.multi_gpu_timeout)
    deadline = timeout + (CPU_WORK_S if cpu_test else GPU_WORK_S)
    env, warnings = env_sanity(world, backend == "nccl", timeout, deadline)
    st.warnings.extend(warnings)
    st.metrics.update(world_size=world, backend=backend, cpu_test=bool(cpu_test))
    st.metrics.update(nccl_version=env["nccl_version"], interconnect=env["interconnect"], env=env)
    s.free()
    log(f"multi_gpu: {world} ranks ({backend}), timeout {timeout:.0f} s, deadline {deadline:.0f} s")
    t_start = s.window_start()
    workdir = Path(tempfile.mkdtemp(prefix="envbuilder-multigpu-"))
    try:
        run = launch(world, backend, mode, workdir, timeout_s=timeout, deadline_s=deadline, seed=s.opts.seed)
        metrics, problems = merge(world, workdir, run)
        if problems:
            metrics["rank_logs"] = {f"rank{r}": tail(workdir / f"rank{r}.log", 2000) for r in range(world)}
    finally:
        s.window_end(st, t_start)
        shutil.rmtree(workdir, ignore_errors=True)
    st.metrics.update(metrics)
    gpu_name = (env.get("gpu_names") or [None])[0]
    spec = pick_multi_gpu(s.applied, env["interconnect"], world)
    spec["gpu_name"] = gpu_name
    why_not = "CPU test mode (gloo): performance not judged" if cpu_test else ""
    gates = judge_multi_gpu(spec, st.metrics, perf_why_not=why_not)
    st.metrics.update(thresholds=spec, gates=gates)
    bw, eff = st.metrics.get("busbw_at_max_gbs"), st.metrics.get("scaling_efficiency")
    if bw is not None:
        log(f"multi_gpu: busbw {bw:.1f} GB/s at {human_bytes(st.metrics['max_bytes'])}, scaling {eff}")
    perf_gates = ("multi_gpu:busbw", "multi_gpu:scaling_efficiency")
    perf = [g["reason"] for g in gates if g["status"] == "fail" and g["name"] in perf_gates]
    if perf:
        problems.append("below threshold: " + "; ".join(perf))
    if problems:
        raise StepFailed("; ".join(problems))
