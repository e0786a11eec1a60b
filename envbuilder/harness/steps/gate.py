"""The figures `envbuilder check` compares before a job starts, measured the same way in both
places: a short bf16 GEMM (TFLOP/s) and a device-memory copy (GB/s, read + write) on one GPU
(`gpu_figures`), and an all-reduce loopback over every GPU of the node (`allreduce_loopback`,
busbw as nccl-tests defines it). The certification records the first as its `gate_baseline`
step (plan.py, GPU path), so a check compares a node with what the certificate saw on that GPU
model; gate.py runs both on each GPU of the node being checked."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from ..kernels import arch_covered
from ..multigpu.sweep import bandwidths
from ..record import StepFailed, StepSkipped

GEMM_N = 8192  # bf16 8192^3: 1.1 TFLOP a call, ~1.5 ms on an H200: large enough to reach peak
GEMM_ITERS = 30
COPY_BYTES = 1 << 30  # 1 GiB, copied device to device
COPY_ITERS = 10
ALLREDUCE_BYTES = 256 << 20  # 256 MiB float32: a size every multi_gpu sweep also measures
ALLREDUCE_ITERS = 10


def gpu_figures(index: int = 0, *, n: int = GEMM_N, copy_bytes: int = COPY_BYTES) -> dict[str, Any]:
    """On cuda:`index`: the device, whether this torch build has a kernel for it, a GEMM checked
    against the CPU, then bf16 GEMM TFLOP/s and copy GB/s (each the median of its timed calls,
    after a warm-up). Raises StepFailed when the GPU cannot be used or a result is wrong."""
    import torch

    if not torch.cuda.is_available():
        raise StepFailed(
            f"torch.cuda.is_available() is False (torch {torch.__version__}, CUDA {torch.version.cuda})"
        )
    if index >= torch.cuda.device_count():
        raise StepFailed(f"cuda:{index} does not exist ({torch.cuda.device_count()} visible)")
    dev = torch.device("cuda", index)
    props = torch.cuda.get_device_properties(dev)
    cc = (props.major, props.minor)
    arch_list = torch.cuda.get_arch_list()
    ok, how = arch_covered(arch_list, cc)
    out: dict[str, Any] = {
        "index": index,
        "device_name": props.name,
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "arch_covered_by": how,
        "arch_list": arch_list,
        "torch": torch.__version__,
    }
    if not ok:
        raise StepFailed(f"this torch build has no kernel for {props.name}: {how} (built for {arch_list})")
    with torch.cuda.device(dev):
        a = torch.randn(256, 256, generator=torch.Generator().manual_seed(1))
        b = torch.randn(256, 256, generator=torch.Generator().manual_seed(2))
        diff = float(((a.to(dev) @ b.to(dev)).cpu() - a @ b).abs().max())
        out["matmul_max_abs_diff_vs_cpu"] = diff
        if diff > 0.5:  # TF32 may be on: tolerance for a 256-long dot product of N(0,1) values
            raise StepFailed(f"a GEMM on {props.name} differs from the CPU by {diff:.3g}")
        x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        y = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        secs = _timed(lambda: torch.mm(x, y), GEMM_ITERS, dev)
        out["bf16_gemm_tflops"] = 2 * n**3 / secs / 1e12
        out["gemm_n"] = n
        src = torch.empty(copy_bytes // 4, device=dev, dtype=torch.float32).fill_(1.0)
        dst = torch.empty_like(src)
        secs = _timed(lambda: dst.copy_(src), COPY_ITERS, dev)
        out["copy_gbs"] = 2 * copy_bytes / secs / 1e9  # bytes read + bytes written, as nvbandwidth
        out["copy_bytes"] = copy_bytes
        if not bool((dst[:1024] == 1.0).all()):
            raise StepFailed(f"a device-memory copy on {props.name} returned wrong values")
        torch.cuda.empty_cache()
    return out


def _timed(fn: Any, iters: int, dev: Any) -> float:
    """Median seconds of one call of fn on dev, measured with CUDA events after 3 warm-up calls."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize(dev)
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    times.sort()
    return max(float(times[len(times) // 2]), 1e-9)


# ---------------------------------------------------------------- all-reduce loopback
def _rank(rank: int, world: int, store: str, backend: str, nbytes: int, iters: int, out: str) -> None:
    """One rank: a value check (each rank gives rank+1, the sum must be n(n+1)/2), then `iters`
    timed all-reduces of `nbytes`; rank 0 writes its result to `out`."""
    import torch
    import torch.distributed as dist

    dev = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if dev.type == "cuda":
        torch.cuda.set_device(dev)  # before the group: NCCL's communicator is on this rank's GPU
    dist.init_process_group(backend, init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        check = torch.full((1024,), float(rank + 1), device=dev)
        dist.all_reduce(check)
        want = world * (world + 1) / 2
        values_ok = bool((check == want).all())
        buf = torch.ones(nbytes // 4, device=dev)
        for _ in range(2):
            dist.all_reduce(buf)
        _sync(dev)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        _sync(dev)
        seconds = (time.perf_counter() - t0) / iters
        if rank == 0:
            Path(out).write_text(json.dumps({"seconds": seconds, "values_ok": values_ok}))
    finally:
        dist.destroy_process_group()


def _sync(dev: Any) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def allreduce_loopback(
    world: int,
    *,
    backend: str = "nccl",
    nbytes: int = ALLREDUCE_BYTES,
    iters: int = ALLREDUCE_ITERS,
    timeout_s: float = 60.0,
) -> dict[str, Any]:
    """An all-reduce of `nbytes` over `world` local ranks (one process per GPU; gloo on the CPU
    for the tests), its busbw (nccl-tests' definition) and whether the values were right. A rank
    still running after `timeout_s` is killed. Raises StepFailed (a rank died or hung, wrong
    values)."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="envbuilder-gate-") as tmp:
        out = str(Path(tmp) / "rank0.json")
        ctx = mp.start_processes(  # type: ignore[attr-defined,no-untyped-call]
            _rank,
            args=(world, str(Path(tmp) / "store"), backend, nbytes, iters, out),
            nprocs=world,
            join=False,
            start_method="spawn",
        )
        deadline = time.monotonic() + timeout_s
        try:
            while not ctx.join(timeout=0.5):
                if time.monotonic() > deadline:
                    raise StepFailed(f"the {world}-rank all-reduce did not finish in {timeout_s:.0f} s")
        except mp.ProcessRaisedException as e:  # type: ignore[attr-defined]
            raise StepFailed(f"an all-reduce rank failed: {str(e).strip().splitlines()[-1][:300]}") from e
        except mp.ProcessExitedException as e:  # type: ignore[attr-defined]
            raise StepFailed(f"an all-reduce rank died: {e}") from e
        finally:
            for p in ctx.processes:
                if p.is_alive():
                    p.kill()
        doc = json.loads(Path(out).read_text())
    algbw, busbw = bandwidths(nbytes, float(doc["seconds"]), world)
    if not doc["values_ok"]:
        raise StepFailed(f"the {world}-rank all-reduce returned wrong values")
    return {
        "world_size": world,
        "backend": backend,
        "bytes": nbytes,
        "iters": iters,
        "time_us": float(doc["seconds"]) * 1e6,
        "algbw_gbs": algbw,
        "busbw_gbs": busbw,
        "values_ok": True,
    }


def gate_baseline_step(s: Any) -> None:
    """The certification's record of what a check compares with (GPU path, after the smoke):
    gpu_figures on the first GPU, as step `gate_baseline`. Not gated: a figure for later, so what
    keeps it from being measured (a GPU too small for the copy, say) is a skip with the reason,
    never a failed certification."""
    with s.rec.step("gate_baseline") as st:
        try:
            st.metrics.update(gpu_figures(0))
        except Exception as e:  # StepFailed, an out-of-memory error: the smoke judged the GPU already
            raise StepSkipped(f"not recorded: {type(e).__name__}: {e}"[:300]) from e
