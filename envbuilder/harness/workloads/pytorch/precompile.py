"""The compile lane's child: `python -m <package>.workloads.pytorch.precompile --arch resnet50 ...`
prepares one tuned compiled run (train.PreparedRun: the same model, layout, precision, batch,
optimizer and synthetic data as the harness's own run) while the harness uses the GPU for other
steps, so torch.compile's CPU work (tracing, Inductor, Triton) overlaps the GPU's. Runs at the
lowest CPU priority.

Without --serve the child only fills the Inductor cache the harness shares (TORCHINDUCTOR_CACHE_DIR),
says ready and exits; the harness's own compile then loads the cache, and its cuDNN autotuning
(the eager runs', same shapes) is already in the harness's process. With --serve, the protocol,
one JSON line each way:
  child -> {"arch", "ready": true, "compile_s", "setup_s", "compiled", ...}   after the first step
           (with "clock": when it imported, got the go, had CUDA, the data, began and ended the
           compile, on time.monotonic(); "compile_phases_s": torch.compile's phases)
  harness -> {"max_seconds", "loss_drop_min", "accuracy_margin"}     when nothing else uses the GPU
  child -> {"arch", "metrics", "problems"}                           the timed run, then it exits
or {"arch", "error"} at any point (the harness then compiles and runs the step itself). With
--hold the child imports torch first and waits for a "go" line before it touches the GPU. The
timed loop runs in the process that compiled the model: nothing is traced or loaded twice.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any, NoReturn

from ...children import exit_with_parent


def _say(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def prepare(a: argparse.Namespace, clock: dict[str, float]) -> Any:
    """The run up to the end of its first step (the compile); a train.PreparedRun. `clock` gets the
    time.monotonic() (system-wide: the harness reads it on its own clock) when each part was done."""
    import torch

    from ..config import RunConfig
    from .data import make_dataset
    from .train import PreparedRun, default_amp

    amp = default_amp() if a.amp == "auto" else (None if a.amp == "fp32" else a.amp)
    # A served run autotunes cuDNN as the harness's tuned runs do (TorchGpuPlan); a cache-only
    # child leaves that to the harness process, where the tuned eager runs have done it already.
    torch.backends.cudnn.benchmark = a.serve
    size, n_train, n_eval = a.data
    if a.device.startswith("cuda"):
        torch.cuda.init()  # what the first CUDA call does anyway, timed on its own
        clock["cuda"] = time.monotonic()
    data = make_dataset(size, n_train, n_eval, seed=a.seed, device=a.device)
    if a.device.startswith("cuda"):
        torch.cuda.synchronize()  # the first step would wait for the rendering anyway
    clock["data"] = time.monotonic()
    extra = {} if a.backend == "inductor" else {"compile_backend": a.backend}
    cfg = RunConfig(
        name="precompile",
        arch=a.arch,
        width=a.width,
        batch=a.batch,
        steps=a.steps,
        warmup=a.warmup,
        amp=amp,
        channels_last=True,
        compile=True,
        device=a.device,
        seed=a.seed,
        extra=extra,
    )
    run = PreparedRun(cfg, data)
    clock["compile_end"] = time.monotonic()
    clock["compile_start"] = clock["compile_end"] - float(run.metrics["first_step_s"])
    return run


def compile_phases(least: float = 0.5, most: int = 12) -> dict[str, Any]:
    """Where torch.compile's time went in this process (torch._dynamo.utils.compile_times: the
    tracing, AOT autograd, Inductor's lowering, the wait for the Triton workers, ...): the phases
    of at least `least` seconds, the longest `most`; with Inductor's compile worker count."""
    out: dict[str, Any] = {}
    try:
        import torch
        from torch._dynamo.utils import compile_times

        names, values = compile_times(repr="csv")
        pairs = zip(names, values)  # noqa: B905 (zip(strict=) needs 3.10)
        phases = {n: round(sum(float(x) for x in str(v).split(",") if x.strip()), 3) for n, v in pairs}
        top = sorted(((v, n) for n, v in phases.items() if v >= least), reverse=True)[:most]
        out["compile_phases_s"] = {n: v for v, n in top}
        out["compile_threads"] = torch._inductor.config.compile_threads
    except Exception as e:  # a torch without them: the timeline still says when
        out["compile_phases_error"] = f"{type(e).__name__}: {e}"[:200]
    return out


def serve(a: argparse.Namespace, held: dict[str, Any]) -> dict[str, Any]:
    """Prepare, say ready; served: wait for the order and finish. {} when nothing more is said."""
    run = prepare(a, held["clock"])
    if a.device.startswith("cuda"):
        import torch

        # The first step's cached blocks go back to the driver while the child waits: the
        # harness's own runs (the tuned eager ones) may need them on a smaller GPU.
        torch.cuda.empty_cache()
    m = run.metrics
    ready = {"arch": a.arch, "ready": True, "compile_s": m["first_step_s"], "compiled": m["compiled"]}
    ready["setup_s"] = m.get("setup_s")  # the model built and placed, torch.compile's modules imported
    ready["config"] = m["config"]  # the harness checks it is the run it planned
    if m.get("compile_fallback"):
        ready["compile_fallback"] = m["compile_fallback"]
    ready.update(compile_phases())
    held["clock"]["ready"] = time.monotonic()
    _say({**ready, **held})
    if not a.serve:
        return {}
    line = sys.stdin.readline()
    if not line.strip():
        return {}  # the harness closed the lane without running this step
    order = json.loads(line)
    metrics, problems = run.finish(
        loss_drop_min=float(order["loss_drop_min"]),
        accuracy_margin=float(order["accuracy_margin"]),
        max_seconds=float(order["max_seconds"]),
    )
    return {"arch": a.arch, "metrics": metrics, "problems": problems}


def _dims(text: str) -> tuple[int, int, int]:
    size, n_train, n_eval = (int(v) for v in text.split(","))
    return size, n_train, n_eval


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="precompile")
    p.add_argument("--arch", required=True)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=48)
    p.add_argument("--warmup", type=int, default=8)
    p.add_argument("--amp", default="bf16", help="bf16, fp16, fp32 or auto (as the harness picks)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--data", type=_dims, default=(224, 4096, 512), help="SIZE,N_TRAIN,N_EVAL")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--device", default="cuda")
    p.add_argument("--backend", default="inductor", help="torch.compile backend (tests: eager)")
    p.add_argument("--hold", action="store_true", help="import, then wait for a line on stdin")
    p.add_argument("--serve", action="store_true", help="after the compile, run the harness's order")
    a = p.parse_args(argv)
    exit_with_parent()
    with contextlib.suppress(OSError):
        os.nice(19)  # the harness's own steps keep the CPU they need
    # When each part was done, on time.monotonic() (the harness turns it into its lane's time).
    clock = {"main": time.monotonic()}
    held: dict[str, Any] = {"clock": clock}
    if a.hold:
        # The imports (seconds) overlap the harness's host step; the GPU only after its go.
        t_import = time.perf_counter()
        import torch  # noqa: F401

        from . import models, train  # noqa: F401

        held["held_import_s"] = time.perf_counter() - t_import
        clock["imported"] = time.monotonic()
        if sys.stdin.readline().strip() != "go":
            return 0  # the harness closed the lane without using it
        held["held_s"] = time.perf_counter() - t_import
    clock["go"] = time.monotonic()
    t0 = time.perf_counter()
    try:
        res = serve(a, held)
    except Exception as e:  # reported to the harness, which then runs the step itself
        res = {"arch": a.arch, "error": f"{type(e).__name__}: {e}"[:1000], **held}
    if not res:
        return 0
    res["child_wall_s"] = time.perf_counter() - t0  # after the go, when held
    _say(res)
    return 0 if "error" not in res else 1


def exit_now(code: int) -> NoReturn:
    """Leave without Python's shutdown once the last line is said. The harness waits for a served
    child's exit before its next step (the child's GPU memory must be free), and that shutdown
    (torch's, Inductor's compile workers', the CUDA context's) is work for nobody: 1.04-1.21 s
    after the last line on the development VM's CPU, 0.05-0.06 s with this (CPU torch, 2 cores,
    benchmarks/results/lane-exit-2026-12-07.md). Nothing is left to write: the Inductor cache was
    written during the compile and the harness has read every line; the compile workers end when
    their pipe does."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
