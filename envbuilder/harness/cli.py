"""Command line and orchestration: pick the path (GPU, CPU, quick), run the steps, judge them,
print the result document as the last stdout line (and write it with --out)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import HARNESS_VERSION, RESULT_SCHEMA_VERSION
from .hostinfo import gpu_devices_present, host_record
from .multigpu import kill_workers
from .result import FAIL, Recorder, Step, clean_json, decide_verdict, log, utc_now
from .suite import Options, Suite
from .telemetry import Sampler, load_nvml
from .thresholds import (
    ThresholdsError,
    judge_overhead,
    judge_throughput,
    load_thresholds_file,
    select_thresholds,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WATCHDOG = 0, 1, 2, 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="envbuilder_harness",
        description="Certify this environment: smoke tests, training benchmark, telemetry. "
        "One JSON line per step on stdout; the last line is the result document.",
    )
    p.add_argument("--quick", action="store_true", help="host record + smoke tests only")
    p.add_argument("--cpu-only", action="store_true", help="run the CPU path (not a GPU certification)")
    p.add_argument("--steps", type=int, help="training steps of the accuracy runs (default 200)")
    p.add_argument("--out", help="also write the result document to this file")
    p.add_argument("--thresholds", help="thresholds document (JSON; YAML if PyYAML is here)")
    p.add_argument("--budget-seconds", type=float, help="time budget (default: 180 GPU, 100 CPU)")
    p.add_argument("--watchdog-seconds", type=float, default=900.0, help="hard stop for hangs")
    p.add_argument("--data", help="ImageFolder root with train/ and val/: fine-tune on it")
    p.add_argument("--weights", help="state dict to start the --data fine-tune from")
    p.add_argument("--workers", type=int, help="DataLoader workers (default: CPUs available)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the synthetic dataset")
    p.add_argument(
        "--framework",
        choices=("torch", "tensorflow", "jax"),
        default="torch",
        help="the framework the image is certified for; other frameworks' smokes do not gate",
    )
    # 1 s, as nvidia-smi dmon and DCGM sample: on the H200 test VM one sample (6 NVML queries)
    # costs 6-10 ms, which at 4 Hz slowed training steps by 3.4% (benchmarks/results/).
    p.add_argument("--telemetry-interval", type=float, default=1.0, help="NVML sample period (s)")
    p.add_argument(
        "--multi-gpu-timeout",
        type=float,
        default=120.0,
        help="multi_gpu step: process-group timeout in seconds (a hung rank is killed after it)",
    )
    # Tests only (docs/harness.md): the multi_gpu step with gloo and N CPU processes, nothing else.
    p.add_argument("--multi-gpu-cpu-test", type=int, default=0, metavar="N", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.multi_gpu_cpu_test and args.multi_gpu_cpu_test < 2:
        p.error("--multi-gpu-cpu-test needs at least 2 processes")
    if args.steps is not None and args.steps < 8:
        p.error("--steps must be at least 8")
    return args


class Watchdog:
    """Prints a failed result and exits if the whole run hangs past its hard limit."""

    def __init__(self, seconds: float, on_fire: Any) -> None:
        self._timer = threading.Timer(seconds, on_fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    started = utc_now()
    args = parse_args(argv)
    rec = Recorder()
    applied_doc: dict[str, Any] | None = None
    if args.thresholds:
        try:
            applied_doc = load_thresholds_file(args.thresholds)
            applied_doc.setdefault("source_path", args.thresholds)
        except ThresholdsError as e:
            print(f"envbuilder_harness: error: {e}", file=sys.stderr)
            return EXIT_USAGE
    nvml, nvml_why = load_nvml()
    have_torch = importlib.util.find_spec("torch") is not None
    cpu_only = args.cpu_only or bool(args.multi_gpu_cpu_test)
    gpu_path = not cpu_only and (gpu_devices_present() or _nvml_count(nvml) > 0)
    mode = "quick" if args.quick else ("full" if gpu_path else "cpu")
    budget = args.budget_seconds or (180.0 if gpu_path else 100.0)
    opts = Options(
        mode=mode,
        steps=args.steps,
        budget_s=budget,
        data=args.data,
        weights=args.weights,
        workers=args.workers,
        seed=args.seed,
        framework=args.framework,
        multi_gpu_cpu_test=args.multi_gpu_cpu_test,
        multi_gpu_timeout=args.multi_gpu_timeout,
    )
    suite = Suite(opts=opts, rec=rec, applied=select_thresholds(applied_doc, None), started=t0)
    suite.device = "cuda" if gpu_path else "cpu"
    notes: list[str] = []
    host: dict[str, Any] = {}

    def finish(code_if_ok: int = EXIT_OK) -> int:
        doc = build_result(suite, host, started, mode, gpu_path, notes, args)
        line = json.dumps(doc, allow_nan=False)
        if args.out:
            try:
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                Path(args.out).write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
            except OSError as e:
                log(f"cannot write --out {args.out}: {e}")
        with rec.lock:
            print(line, flush=True)
        log(f"verdict: {doc['verdict']} ({doc['verdict_reason']}) in {doc['wall_seconds']:.0f} s")
        return code_if_ok if doc["verdict"] != "failed" else EXIT_FAILED

    def on_watchdog() -> None:
        rec.lock.acquire()  # held until os._exit: no step line may follow the result
        kill_workers()  # multi_gpu ranks run in their own sessions: never leave one on a GPU
        hung = rec.current or "between steps"
        notes.append(f"watchdog: stopped after {args.watchdog_seconds:.0f} s in step {hung}")
        why = f"step {hung} still running when the run passed {args.watchdog_seconds:.0f} s"
        rec.emit(Step(name="watchdog", status=FAIL, reason=why))
        finish()
        os._exit(EXIT_WATCHDOG)

    with Watchdog(args.watchdog_seconds, on_watchdog):
        with rec.step("host") as st:
            host = host_record(nvml, nvml_why)
            st.metrics.update(host)
            gpus = host.get("gpus") or []
            gpu_name = gpus[0].get("name") if gpus else None
            suite.applied = select_thresholds(applied_doc, gpu_name)
            for g in gpus:
                if g.get("processes"):
                    st.warnings.append(
                        f"GPU {g['index']} already runs {len(g['processes'])} "
                        "process(es): numbers may be lower"
                    )
        if args.multi_gpu_cpu_test:
            notes.append(
                f"--multi-gpu-cpu-test {args.multi_gpu_cpu_test}: only the multi_gpu step's code path, "
                "with gloo on the CPU. This is NOT a GPU certification."
            )
        elif mode == "cpu" or (mode == "quick" and not gpu_path):
            notes.append(
                "CPU path: "
                + ("--cpu-only was given" if args.cpu_only else "no GPU on this host")
                + ". This is NOT a GPU certification."
            )
        if not have_torch:
            notes.append("torch is not installed: the torch steps are skipped")
        # The sampler keeps its own time under half the overhead limit the certification gates.
        max_duty = float(suite.applied["telemetry_overhead_max"]) / 2
        sampler = _start_sampler(nvml, args.telemetry_interval, max_duty) if gpu_path else None
        suite.sampler = sampler
        if gpu_path and sampler is None:
            notes.append(f"GPU telemetry unavailable ({nvml_why or 'NVML lists no GPU'}): not sampled")
        try:
            run_steps(suite, gpu_path=gpu_path, have_torch=have_torch)
        finally:
            if sampler is not None:
                sampler.stop()
        return finish()


def _nvml_count(nvml: Any) -> int:
    if nvml is None:
        return 0
    try:
        return int(nvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def _start_sampler(nvml: Any, interval: float, max_duty: float) -> Sampler | None:
    if nvml is None or _nvml_count(nvml) == 0:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(0)
        return Sampler(nvml, handle, interval=interval, max_duty=max_duty).start()
    except Exception as e:
        log(f"telemetry sampler not started: {e}")
        return None


def run_steps(s: Suite, *, gpu_path: bool, have_torch: bool) -> None:
    """The steps of the chosen path, in order; a failed prerequisite skips what depends on it."""
    from .multigpu import multi_gpu_step

    rec = s.rec
    if not have_torch:
        for name in ("cpu_check", "cuda_smoke"):
            rec.skip(name, "torch is not installed")
        s.framework_smokes(want_gpu=gpu_path)
        return
    import torch

    if not gpu_path:
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    from .smoke import cpu_check

    if not s.opts.multi_gpu_cpu_test:  # that mode runs the multi_gpu step's code path only
        with rec.step("cpu_check") as st:
            st.metrics.update(cpu_check())
    if gpu_path:
        from .gpu import cuda_smoke_step, run_gpu_benchmarks

        smoke_ok = cuda_smoke_step(s)
        s.framework_smokes(want_gpu=True)
        if s.opts.mode == "quick":
            return
        if not smoke_ok:
            rec.skip("benchmarks", "the CUDA smoke test failed: no GPU benchmark was run")
            return
        run_gpu_benchmarks(s)
        multi_gpu_step(s)  # after the single-GPU steps, outside their time budget
        return
    rec.skip("cuda_smoke", "CPU path: no GPU on this host (or --cpu-only)")
    s.framework_smokes(want_gpu=False)
    if s.opts.mode == "quick":
        return
    if not s.opts.multi_gpu_cpu_test:
        run_cpu_benchmarks(s)
    multi_gpu_step(s)


def run_cpu_benchmarks(s: Suite) -> None:
    """The CPU path: small images, a narrow ResNet-18, few steps; same checks as on the GPU."""
    from .train import RunConfig

    s.make_data(64, 1024, 256)

    def narrow(**kw: Any) -> RunConfig:
        return RunConfig(name="", arch="resnet18", width=16, device="cpu", seed=s.opts.seed, **kw)

    s.train_step(
        "train_cpu_rn18w16_fp32_bs32",
        narrow(batch=32, steps=s.opts.steps or 60, warmup=5),
        estimate=10,
    )
    s.input_pipeline(
        narrow(batch=32),
        src_size=96,
        n_images=256,
        batches=6,
    )
    s.rec.skip("telemetry_overhead", "no GPU: nothing for NVML to sample")
    s.real_data("resnet18", 32, 64, s.opts.steps or 40, None)


def _not_run(mode: str) -> str:
    return (
        "not run: quick mode"
        if mode == "quick"
        else "not run: the CUDA smoke test failed or torch is missing"
    )


def build_result(
    s: Suite,
    host: dict[str, Any],
    started: str,
    mode: str,
    gpu_path: bool,
    notes: list[str],
    args: argparse.Namespace,
) -> dict[str, Any]:
    gates: list[dict[str, Any]] = []
    if gpu_path and mode == "full":
        gates = judge_throughput(s.applied, s.measured, s.not_measured)
        over = s.facts.get("telemetry_overhead")
        why = next((x.reason for x in s.rec.steps if x.name == "telemetry_overhead"), "")
        gates.append(judge_overhead(s.applied, over, why, s.facts.get("telemetry_overhead_detail", "")))
    gates.extend(s.multi_gpu_gates)
    verdict, reason = decide_verdict(s.rec.steps, gates, mode=mode, gpu_path=gpu_path)
    if s.sampler is not None:
        telemetry = s.sampler.to_json()
    else:
        telemetry = {"available": False, "reason": (host.get("nvml") or {}).get("reason", "CPU path")}
    return clean_json(
        {
            "kind": "result",
            "schema_version": RESULT_SCHEMA_VERSION,
            "harness_version": HARNESS_VERSION,
            "mode": mode,
            "gpu_path": gpu_path,
            "started": started,
            "finished": utc_now(),
            "wall_seconds": time.monotonic() - s.started,
            "budget_seconds": s.opts.budget_s,
            "options": {k: v for k, v in vars(args).items() if v not in (None, False)},
            "host": host,
            "facts": s.facts,
            "steps": [st.to_json() for st in s.rec.steps],
            "thresholds": s.applied,
            "gates": gates,
            "verdict": verdict,
            "verdict_reason": reason,
            "notes": notes,
            "telemetry": telemetry,
            "multi_gpu": s.multi_gpu or {"status": "skip", "reason": _not_run(mode)},
        }
    )
