"""How noisy is the telemetry A/B's window? (issue 27 item 3: the torch telemetry_overhead step
takes ~25 s of a ~95 s certification, and its 95% lower bound was -15% to -23% on 2026-12-05:
it could not have shown a 1% slowdown.) Measures, with no sampler at all, the window the A/B times
(the harness's SyntheticTrainer: ResNet-18, bf16, channels_last, SGD; mean step time of one window
from two CUDA events) in consecutive pairs, so each pair's ratio is what the A/B would see if the
sampler cost nothing:

  quiet-bs128   the A/B's own window (batch 128, 150 steps), nothing else running
  busy-bs128    the same while CPU burners spin on all but two cores (as the compile children do
                while the default-level A/B runs)
  quiet-bs512   batch 512, 40 steps (about the same seconds per window; more GPU work per launch)
  busy-bs512    the same with the CPU burners

  PYTHONPATH=<folder with envbuilder_harness/> python3 benchmarks/gpu/ab_noise.py OUT.json [CONDITION ...]

Writes OUT.json: per condition the window means (ms per step), the pair ratios, their standard
deviation, and the half-width a 6-pair A/B's one-sided 95% bound would have at that noise
(t(5) * sd / sqrt(6)): the A/B fails only when mean - half-width >= 1%.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from envbuilder_harness.workloads.pytorch.data import make_dataset
from envbuilder_harness.workloads.pytorch.train import SyntheticTrainer, mean_step_seconds

WINDOWS = 24  # 12 pairs
T95_5 = 2.015  # one-sided 95% Student t, 5 degrees of freedom (the A/B's 6 pairs)


def window(trainer: SyntheticTrainer, batch: int, steps: int) -> float:
    return mean_step_seconds(lambda: trainer.step(batch), steps)


def burn(stop: float) -> None:
    x = 0
    while time.monotonic() < stop:
        x += 1


def condition(trainer: SyntheticTrainer, batch: int, steps: int, burners: int) -> dict[str, object]:
    for _ in range(8):
        trainer.step(batch)
    window(trainer, batch, 20)
    procs = []
    if burners:
        stop = time.monotonic() + 600
        procs = [multiprocessing.Process(target=burn, args=(stop,), daemon=True) for _ in range(burners)]
        for p in procs:
            p.start()
    t0 = time.monotonic()
    try:
        means = [window(trainer, batch, steps) for _ in range(WINDOWS)]
    finally:
        for p in procs:
            p.terminate()
    ratios = [means[i + 1] / means[i] for i in range(0, WINDOWS, 2)]
    sd = statistics.stdev(ratios)
    return {
        "batch": batch,
        "window_steps": steps,
        "cpu_burners": burners,
        "seconds": round(time.monotonic() - t0, 2),
        "window_ms_per_step": [round(m * 1000, 3) for m in means],
        "pair_ratios": [round(r, 5) for r in ratios],
        "ratio_sd": round(sd, 5),
        "ratio_mean": round(statistics.fmean(ratios), 5),
        "ab6_half_width": round(T95_5 * sd / 6**0.5, 5),
        "img_per_s": round(batch / statistics.median(means), 1),
    }


def main() -> None:
    out = sys.argv[1]
    torch.backends.cudnn.benchmark = True
    data = make_dataset(224, 4096, 512, device="cuda")
    dtype = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    trainer = SyntheticTrainer(data, dtype)
    burners = max(0, (os.cpu_count() or 2) - 2)
    doc: dict[str, object] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "amp": dtype}
    conditions = (
        ("quiet-bs128", 128, 150, 0),
        ("busy-bs128", 128, 150, burners),
        ("quiet-bs512", 512, 40, 0),
        ("busy-bs512", 512, 40, burners),
    )
    only = sys.argv[2:]  # condition names (default: all)
    for name, batch, steps, burn_n in (c for c in conditions if not only or c[0] in only):
        got = condition(trainer, batch, steps, burn_n)
        doc[name] = got
        print(name, json.dumps({k: v for k, v in got.items() if k != "window_ms_per_step"}), flush=True)
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
