"""The real_data step: with --data DIR (ImageFolder train/ val/) and --weights FILE, the user's own
fine-tune: the loss must fall and validation accuracy must beat chance."""

from __future__ import annotations

from pathlib import Path

from ..record import StepFailed
from ..session import Session


def real_data_step(s: Session, arch: str, batch: int, size: int, steps: int, amp: str | None) -> None:
    if not s.opts.data:
        if s.opts.weights:
            s.rec.skip("real_data", "--weights was given without --data")
        return
    from ..workloads.pytorch.feed import real_data_run

    with s.rec.step("real_data") as st:
        root = Path(s.opts.data)
        for sub in ("train", "val"):
            if not (root / sub).is_dir():
                raise StepFailed(f"--data {root}: no {sub}/ folder (ImageFolder layout)")
        try:
            with s.window(st):
                metrics, problems = real_data_run(
                    root,
                    arch=arch,
                    batch=batch,
                    size=size,
                    steps=steps,
                    amp=amp,
                    device=s.device,
                    workers=s.opts.workers,
                    weights=s.opts.weights,
                    loss_drop_min=s.threshold("loss_drop_min"),
                )
        finally:
            s.free()
        st.metrics.update(metrics)
        if problems:
            raise StepFailed("; ".join(problems))
