"""The command line: parse the options, load the thresholds file, run the certification under a
watchdog, print the result document as the last stdout line (and write it with --out), and turn
the verdict into the exit code. What runs is plan.py's; what the document says is result.py's."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .multigpu.step import kill_workers
from .plan import Certification
from .record import FAIL, Recorder, Step, log
from .result import assemble_result
from .session import FRAMEWORK_CHOICES, Options
from .thresholds import ThresholdsError, load_thresholds_file

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WATCHDOG = 0, 1, 2, 3


def parse_args(argv: list[str] | None) -> Options:
    p = argparse.ArgumentParser(
        prog="envbuilder_harness",
        description="Certify this environment: smoke tests, training benchmark, telemetry. "
        "One JSON line per step on stdout; the last line is the result document.",
    )
    p.add_argument("--quick", action="store_true", help="host record + smoke tests only")
    p.add_argument(
        "--level",
        choices=("default", "full"),
        default="default",
        help="full: the long version (every step in this process, one after the other)",
    )
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
        choices=FRAMEWORK_CHOICES,
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
    p.add_argument("--nonce", help="a token echoed in the result (certify checks it came from this run)")
    args = p.parse_args(argv)
    if args.multi_gpu_cpu_test and args.multi_gpu_cpu_test < 2:
        p.error("--multi-gpu-cpu-test needs at least 2 processes")
    if args.steps is not None and args.steps < 8:
        p.error("--steps must be at least 8")
    names = {f.name for f in dataclasses.fields(Options)}
    return Options(**{k: v for k, v in vars(args).items() if k in names})


class Watchdog:
    """Calls `on_fire` (which prints a failed result and exits) if the run hangs past its limit."""

    def __init__(self, seconds: float, on_fire: Callable[[], None]) -> None:
        self._timer = threading.Timer(seconds, on_fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def write_result(doc: dict[str, Any], out: str | None, rec: Recorder) -> None:
    """The result document: indented to --out (when given), one line as the last stdout line."""
    if out:
        try:
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        except OSError as e:
            log(f"cannot write --out {out}: {e}")
    with rec.lock:
        print(json.dumps(doc, allow_nan=False), flush=True)
    log(f"verdict: {doc['verdict']} ({doc['verdict_reason']}) in {doc['wall_seconds']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    opts = parse_args(argv)
    doc: dict[str, Any] | None = None
    if opts.thresholds:
        try:
            doc = load_thresholds_file(opts.thresholds)
            doc.setdefault("source_path", opts.thresholds)
        except ThresholdsError as e:
            print(f"envbuilder_harness: error: {e}", file=sys.stderr)
            return EXIT_USAGE
    rec = Recorder()
    cert = Certification(opts, doc, rec, started=t0)

    def finish() -> int:
        result = assemble_result(cert.outcome())
        write_result(result, opts.out, rec)
        return EXIT_FAILED if result["verdict"] == "failed" else EXIT_OK

    def on_watchdog() -> None:
        rec.lock.acquire()  # held until os._exit: no step line may follow the result
        kill_workers()  # multi_gpu ranks run in their own sessions: never leave one on a GPU
        hung = rec.current or "between steps"
        cert.notes.append(f"watchdog: stopped after {opts.watchdog_seconds:.0f} s in step {hung}")
        why = f"step {hung} still running when the run passed {opts.watchdog_seconds:.0f} s"
        rec.emit(Step(name="watchdog", status=FAIL, reason=why))
        finish()
        os._exit(EXIT_WATCHDOG)

    with Watchdog(opts.watchdog_seconds, on_watchdog):
        cert.run()
        return finish()
