"""The compile lane's child: `python -m <package>.workloads.pytorch.precompile --arch resnet50 ...`
compiles one tuned run's model with torch.compile into the Inductor cache the harness shares with
it (TORCHINDUCTOR_CACHE_DIR), by running that run's first steps exactly as train.py does: the same
model, layout, precision, batch and optimizer, so the harness's own compile of it hits the cache.
Runs at the lowest CPU priority; prints one JSON line (the cold compile's seconds, or the error).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any

from ...children import exit_with_parent


def precompile(arch: str, batch: int, amp: str, image_size: int, seed: int) -> dict[str, Any]:
    import torch
    from torch import nn

    from ..config import RunConfig
    from .data import NUM_CLASSES, normalize
    from .models import build_model, memory_format, place
    from .train import amp_dtype, default_amp

    if amp == "auto":
        amp = default_amp()

    cfg = RunConfig(
        name="precompile", arch=arch, batch=batch, amp=amp, channels_last=True, compile=True, seed=seed
    )
    torch.manual_seed(cfg.seed)
    model = place(build_model(cfg.arch, NUM_CLASSES, width=cfg.width)[0], "cuda", cfg.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.learning_rate(), momentum=0.9, weight_decay=5e-5)
    runner = torch.compile(model)
    fmt, dt = memory_format(cfg.channels_last), amp_dtype(cfg.amp)
    images = torch.randint(0, 256, (batch, 3, image_size, image_size), dtype=torch.uint8, device="cuda")
    labels = torch.randint(0, NUM_CLASSES, (batch,), device="cuda")
    times = []
    for _ in range(2):  # the second step proves no recompilation is left for the harness
        t0 = time.perf_counter()
        x = normalize(images).contiguous(memory_format=fmt)
        with torch.autocast("cuda", dtype=dt or torch.float32, enabled=dt is not None):
            loss = nn.functional.cross_entropy(runner(x), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return {"arch": arch, "batch": batch, "precision": amp, "compile_s": times[0], "second_step_s": times[1]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="precompile")
    p.add_argument("--arch", required=True)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--amp", default="bf16")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--hold", action="store_true", help="import, then wait for a line on stdin")
    a = p.parse_args(argv)
    exit_with_parent()
    with contextlib.suppress(OSError):
        os.nice(19)  # the harness's own steps keep the CPU they need
    held: dict[str, float] = {}
    if a.hold:
        # The imports (seconds) overlap the harness's host step; the GPU only after its go.
        t_import = time.perf_counter()
        import torch  # noqa: F401

        from . import models, train  # noqa: F401

        held["held_import_s"] = time.perf_counter() - t_import
        if sys.stdin.readline().strip() != "go":
            return 0  # the harness closed the lane without using it
        held["held_s"] = time.perf_counter() - t_import
    t0 = time.perf_counter()
    try:
        res = precompile(a.arch, a.batch, a.amp, a.image_size, a.seed)
    except Exception as e:  # reported to the harness, which then compiles cold itself
        res = {"arch": a.arch, "error": f"{type(e).__name__}: {e}"[:1000]}
    res["child_wall_s"] = time.perf_counter() - t0  # after the go, when held
    res.update(held)
    print(json.dumps(res), flush=True)
    return 0 if "error" not in res else 1


if __name__ == "__main__":
    sys.exit(main())
