"""How the input_pipeline step reads its loader's rate, against the rate the loader sustains.

The step (envbuilder/harness/steps/pipeline.py) compares three throughputs and names the
bottleneck from them; the loader's own rate is one. Until 2026-12-07 it was timed as the next 8
batches after the first: by then the workers had filled the queue (workers x PREFETCH_FACTOR
batches), so the figure was the queue emptying (the GPU certifications of 2026-12-06/07 read
2,903 to 379,966 img/s from one host's 16 workers, and named the host-to-device copy the
bottleneck). Now each batch carries the seconds its worker took (loader.TimedBatches) and the
rate is workers x batch / their median (steps/pipeline.py loader_rate).

Each round, one loader of the step's pipeline (the step's 320x320 JPEGs at q90, decoded and
augmented to 224x224 on this machine's CPU), consumed as the step consumes it (the first batch,
then 10 more), then drained far past its queue to read the rate it sustains (the truth here):
    old    the 8 batches after the first, timed as before
    new    loader_rate over the seconds of the 11 batches the step takes
    truth  after 3 x workers x PREFETCH_FACTOR more batches, 4 x workers batches timed

    .venv/bin/python benchmarks/loader_rate_bench.py [--rounds 3] [--workers 2 16] [--batch 64]

The step's hosts had 16 CPUs, so 16 workers: then the 8 batches after the first all come from the
workers' first round, which ends at once. With as many workers as batches timed or fewer, a round
ends inside the 8 and the old reading was near the truth. Writes
benchmarks/results/loader-rate-DATE.json and .md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results_io import machine, today, write  # noqa: E402

from envbuilder.harness.steps.pipeline import PIPELINE_IMAGES, loader_rate  # noqa: E402
from envbuilder.harness.workloads.pytorch.data import render  # noqa: E402
from envbuilder.harness.workloads.pytorch.loader import (  # noqa: E402
    PREFETCH_FACTOR,
    DecodeAugment,
    encode_split,
    make_timed_loader,
    without_seconds,
)

STEP_BATCHES = 11  # the step: the first batch, then the loader-fed run's 2 warm-up and 8 timed


def timed(it: object, n: int, batch: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        next(it)  # type: ignore[call-overload]
    return n * batch / (time.perf_counter() - t0)


def one_round(ds: DecodeAugment, workers: int, batch: int) -> dict[str, float]:
    seconds: list[float] = []
    it = without_seconds(iter(make_timed_loader(ds, batch, workers, pin=False)), seconds)
    next(it)
    old = timed(it, 8, batch)
    for _ in range(STEP_BATCHES - 1 - 8):
        next(it)
    new = loader_rate(seconds, batch, workers)
    for _ in range(3 * workers * PREFETCH_FACTOR):
        next(it)
    truth = timed(it, 4 * workers, batch)
    return {"old": old, "new": new, "truth": truth}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, nargs="+", default=[2, 16])
    p.add_argument("--batch", type=int, default=64)
    a = p.parse_args()
    size, n = PIPELINE_IMAGES
    blobs, labels, codec = encode_split(render(n, size, seed=5, device="cpu"))
    if codec != "jpeg":
        print("PIL is not installed: the step's JPEG pipeline cannot be measured", file=sys.stderr)
        return 1
    ds = DecodeAugment(blobs, labels, 224, train=True)
    rows = []
    for w in a.workers:
        for i in range(a.rounds):
            r = one_round(ds, w, a.batch)
            rows.append({"workers": w, "round": i + 1, **r})
            print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for w in a.workers:
        mine = [r for r in rows if r["workers"] == w]
        summary[str(w)] = {k: statistics.median(r[k] / r["truth"] for r in mine) for k in ("old", "new")}
    m = machine()
    images = f"{n} JPEGs (q90) of {size}x{size}, decoded and augmented to 224x224"
    doc = {
        "date": today(),
        "machine": m,
        "batch": a.batch,
        "images": images,
        "rows": rows,
        "median_over_truth": summary,
    }
    lines = [
        f"# The input_pipeline step's loader rate, two readings against the sustained rate, {doc['date']}",
        "",
        f"{m['platform']}, {m['cpus']} CPUs, batch {a.batch}, {images};"
        " benchmarks/loader_rate_bench.py. img/s; the ratio is the reading over the truth.",
        "",
        "| workers | round | old (8 batches after the first) | new (workers' median) | truth (drained) "
        "| old / truth | new / truth |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workers']} | {r['round']} | {r['old']:.0f} | {r['new']:.0f} | {r['truth']:.0f} "
            f"| {r['old'] / r['truth']:.2f} | {r['new'] / r['truth']:.2f} |"
        )
    lines.append("")
    for w, s in summary.items():
        lines.append(f"- {w} workers: median old / truth **{s['old']:.2f}**, new / truth **{s['new']:.2f}**")
    write("loader-rate", doc, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
