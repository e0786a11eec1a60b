"""How long a served compile-lane child takes to exit after its last line, with Python's shutdown
and without it (precompile.exit_now), on this machine's CPU torch.

The harness waits for a served child's exit before its next step (steps/lane.py CompileLane.run:
the child's GPU memory must be free), so that exit is on the certification's path: the served
ResNet-18 compiled step took 5.0-5.5 s on an H100 for 1.3 s of the child's own work
(benchmarks/results/issue27-h100-2026-12-07-h). Each round starts the same child twice,
interleaved: as `python -m ...precompile` (exit_now: os._exit after the last line) and through
`sys.exit(main())` (Python's shutdown: torch's, Inductor's compile workers'); both compile the
same narrow ResNet-18 on the CPU from one kept Inductor cache (the first round fills it), get the
harness's order, run the timed loop and say its metrics.

    .venv/bin/python benchmarks/lane_exit_bench.py [--rounds 3]

Writes benchmarks/results/lane-exit-DATE.json and .md. The GPU's figure (the CUDA context's
teardown as well) comes from the served step's seconds in a GPU certification.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results_io import machine, today, write  # noqa: E402

from envbuilder.harness.steps.lane import _Child  # noqa: E402

MODULE = "envbuilder.harness.workloads.pytorch.precompile"
ARGS = ["--arch", "resnet18", "--batch", "4", "--steps", "12", "--warmup", "2", "--amp", "fp32"]
ARGS += ["--seed", "3", "--data", "32,48,8", "--device", "cpu", "--width", "8", "--serve"]
SHUTDOWN = f"import sys; from {MODULE} import main; sys.exit(main(sys.argv[1:]))"
ORDER = json.dumps({"max_seconds": 60, "loss_drop_min": 0.0, "accuracy_margin": 0.0})


def one(how: str, cache: str) -> dict[str, float]:
    cmd = [sys.executable, "-m", MODULE] if how == "exit_now" else [sys.executable, "-c", SHUTDOWN]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
    child = _Child(cmd + ARGS, env, hold=False)
    ready = child.next_line(600)
    if not ready or not ready.get("ready"):
        raise SystemExit(f"the child did not compile: {ready or child.gone()}")
    t0 = time.perf_counter()
    child.say(ORDER)
    done = child.next_line(120)
    t1 = time.perf_counter()
    child.proc.wait()
    t2 = time.perf_counter()
    if not done or "metrics" not in done:
        raise SystemExit(f"the child's run failed: {done or child.gone()}")
    return {"compile_s": ready["compile_s"], "run_s": t1 - t0, "exit_s": t2 - t1}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lane-exit-bench-") as cache:
        one("exit_now", cache)  # fills the Inductor cache: every timed child loads it
        for i in range(a.rounds):
            for how in ("shutdown", "exit_now"):
                rows.append({"round": i + 1, "how": how, **one(how, cache)})
                print(json.dumps(rows[-1]), flush=True)
    med = {
        h: statistics.median(float(r["exit_s"]) for r in rows if r["how"] == h)
        for h in ("shutdown", "exit_now")
    }
    m = machine()
    doc = {"date": today(), "machine": m, "rows": rows, "median_exit_s": med}
    lines = [
        f"# A served compile-lane child's exit after its last line, {doc['date']}",
        "",
        f"{m['platform']}, {m['cpus']} CPUs, CPU torch; benchmarks/lane_exit_bench.py "
        "(a narrow ResNet-18 from a kept Inductor cache, served: the order, the timed loop, the metrics).",
        "",
        "| round | exit | compile s | order to metrics s | metrics to exit s |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['round']} | {r['how']} | {r['compile_s']:.2f} | {r['run_s']:.2f} | {r['exit_s']:.3f} |"
        )
    lines += [
        "",
        f"Median metrics to exit: Python's shutdown **{med['shutdown']:.3f} s**, "
        f"exit_now **{med['exit_now']:.3f} s**.",
    ]
    write("lane-exit", doc, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
