"""The multi_gpu step: one worker process per GPU (worker.py), NCCL all-reduce sweep, a DDP run
against a single-GPU baseline, and the environment facts that explain hangs (env.py).

The parent never joins the process group: it checks the environment, hosts the rendezvous store
(as torchrun's agent does) and launches the ranks with MASTER_ADDR=127.0.0.1 and the store's port
(the rest of the environment passed through unchanged:
NCCL_NVLS_ENABLE and friends are recorded, never set), watches them with a deadline (a hung rank
is killed and the step fails naming the hang), then merges the ranks' JSON files and judges.
`--multi-gpu-cpu-test N` runs the same path with gloo on the CPU (small sizes) for the tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..record import Step, StepFailed, StepSkipped, log
from ..session import Session
from ..thresholds import judge_multi_gpu, pick_multi_gpu
from .env import env_sanity
from .merge import merge, tail
from .sweep import human_bytes

GPU_WORK_S = 240.0  # the parent's deadline = process-group timeout + this (GPU path)
# CPU test mode: + this per rank. N processes share the CPUs: 8 ranks on a loaded 2-core machine
# took 46 s to get through imports, baseline and sweep (2026-12-01), which a flat 60 s cut short.
CPU_WORK_S_PER_RANK = 30.0
_LIVE: list[subprocess.Popen[bytes]] = []  # running ranks: the harness watchdog kills them too


def kill_workers() -> None:
    """Kill every rank still running (each runs in its own process group)."""
    for p in list(_LIVE):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    _LIVE.clear()


# ---------------------------------------------------------------- launching the ranks
def host_store(world: int, timeout_s: float) -> Any:
    """The rendezvous store, served by this process on a port the kernel picks while it listens:
    every rank is a client. A port picked free, closed and handed to rank 0 stayed free only until
    rank 0 bound it, after its imports and baseline run (seconds on a loaded host), and anything
    else on the machine could take it meanwhile."""
    import torch.distributed as dist

    return dist.TCPStore(  # type: ignore[attr-defined]  # re-exported under is_available()
        "127.0.0.1", 0, world, True, timeout=timedelta(seconds=timeout_s), wait_for_workers=False
    )


def package_root() -> Path:
    """The folder that must be on sys.path for `python -m <this package>.worker`: the one above
    the payload's top package, whatever its name (envbuilder.harness here, envbuilder_harness in
    images)."""
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
    """Run the ranks; kill them all at the deadline, or once one has failed and no other rank has
    ended for a grace period. A rank killed without its result file is hung (it never finished its
    work); one killed after writing it was only slow to exit. extra_env: added to the ranks'
    environment (the tests' fault injection)."""
    env = {**os.environ, **(extra_env or {})}  # passed through unchanged, plus the rendezvous
    root = str(package_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    store = host_store(world, deadline_s)  # alive until the ranks are done: it is their rendezvous
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port), WORLD_SIZE=str(world))
    # After one rank fails, the others get this long after the latest exit to fail on their own (and
    # say why): with 8 ranks timing out together, each exit restarts the clock, so a slow exit is
    # never taken for a hang; a rank blocked in an NCCL collective with a dead peer would otherwise
    # wait out the whole timeout.
    grace = min(10.0, max(2.0, timeout_s / 4))
    procs: list[subprocess.Popen[bytes]] = []
    t0 = time.monotonic()
    for r in range(world):
        cmd = [sys.executable, "-m", f"{__package__}.worker", "--rank", str(r)]
        cmd += ["--world", str(world)]
        cmd += ["--backend", backend, "--mode", mode, "--out-dir", str(workdir)]
        cmd += ["--timeout", f"{timeout_s:g}", "--rendezvous-timeout", f"{deadline_s:g}", "--seed", str(seed)]
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
    failed, last_exit, ended, why = False, t0, 0, ""
    while any(p.poll() is None for p in procs):
        now = time.monotonic()
        done = sum(p.poll() is not None for p in procs)
        if done != ended:
            ended, last_exit = done, now
        failed = failed or any(p.poll() not in (None, 0) for p in procs)
        if now - t0 > deadline_s:
            why = f"still running after {now - t0:.0f} s (deadline {deadline_s:.0f} s)"
            break
        if failed and now - last_exit > grace:
            why = f"still running {grace:.0f} s after another rank failed"
            break
        time.sleep(0.1)
    running = [r for r, p in enumerate(procs) if p.poll() is None]
    for r in running:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(procs[r].pid, signal.SIGKILL)
        procs[r].wait()
    slow = [r for r in running if (workdir / f"rank{r}.json").exists()]
    for p in procs:
        if p in _LIVE:
            _LIVE.remove(p)
    return {
        "wall_s": time.monotonic() - t0,
        "hung": [r for r in running if r not in slow],
        "hung_why": why,
        "slow_exit": slow,
        "codes": [p.returncode for p in procs],
    }


# ---------------------------------------------------------------- the step
def multi_gpu_step(s: Session) -> None:
    """The multi_gpu step; its record carries the result's multi_gpu section and gates (result.py)."""
    with s.rec.step("multi_gpu") as st:
        _run_step(s, st, int(s.opts.multi_gpu_cpu_test or 0))


def _run_step(s: Session, st: Step, cpu_test: int) -> None:
    if cpu_test:
        world, backend, mode = cpu_test, "gloo", "cpu-test"
        if world < 2:
            raise StepFailed("--multi-gpu-cpu-test needs at least 2 processes")
    elif not s.cuda:
        raise StepSkipped("fewer than 2 GPUs visible (CPU path: no GPU is used)")
    else:
        import torch

        world, backend, mode = torch.cuda.device_count(), "nccl", "gpu"
        if world < 2:
            raise StepSkipped(f"fewer than 2 GPUs visible ({world})")
    timeout = float(s.opts.multi_gpu_timeout)
    deadline = timeout + (CPU_WORK_S_PER_RANK * world if cpu_test else GPU_WORK_S)
    env, warnings = env_sanity(world, backend == "nccl", timeout, deadline)
    st.warnings.extend(warnings)
    st.metrics.update(world_size=world, backend=backend, cpu_test=bool(cpu_test))
    st.metrics.update(nccl_version=env["nccl_version"], interconnect=env["interconnect"], env=env)
    s.free()
    log(f"multi_gpu: {world} ranks ({backend}), timeout {timeout:.0f} s, deadline {deadline:.0f} s")
    workdir = Path(tempfile.mkdtemp(prefix="envbuilder-multigpu-"))
    try:
        with s.window(st):
            run = launch(
                world, backend, mode, workdir, timeout_s=timeout, deadline_s=deadline, seed=s.opts.seed
            )
            metrics, problems = merge(world, workdir, run)
            if problems:
                metrics["rank_logs"] = {
                    f"rank{r}": tail(workdir / f"rank{r}.log", 2000) for r in range(world)
                }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    st.metrics.update(metrics)
    gpu_name = (env.get("gpu_names") or [None])[0]
    spec = pick_multi_gpu(dict(s.thresholds), env["interconnect"], world)
    spec["gpu_name"] = gpu_name
    why_not = "CPU test mode (gloo): performance not judged" if cpu_test else ""
    gates = judge_multi_gpu(spec, st.metrics, perf_why_not=why_not)
    st.metrics.update(thresholds=spec, gates=gates)
    bw, eff = st.metrics.get("busbw_at_max_gbs"), st.metrics.get("scaling_efficiency")
    if bw is not None:
        log(f"multi_gpu: busbw {bw:.1f} GB/s at {human_bytes(st.metrics['max_bytes'])}, scaling {eff}")
    cap = st.metrics.get("sweep_cap") or {}
    if cap.get("limited_by") == "memory":
        st.warnings.append(
            f"all-reduce sweep stopped at {human_bytes(cap['max_bytes'])} instead of "
            f"{human_bytes(cap['requested_bytes'])}: {cap['free_bytes_min'] / 2**30:.1f} GiB free on the "
            "fullest GPU (another process holds GPU memory?)"
        )
    perf_gates = ("multi_gpu:busbw", "multi_gpu:scaling_efficiency")
    perf = [g["reason"] for g in gates if g["status"] == "fail" and g["name"] in perf_gates]
    if perf:
        problems.append("below threshold: " + "; ".join(perf))
    if problems:
        raise StepFailed("; ".join(problems))
