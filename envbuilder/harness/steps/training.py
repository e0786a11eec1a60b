"""The dataset step and the training-run steps (a run as a step: metrics, telemetry window,
learning checks), shared by the CPU and GPU paths."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..record import Step, StepFailed, StepSkipped, log
from ..session import Session
from ..workloads.config import RunConfig
from .estimates import ESTIMATE

if TYPE_CHECKING:
    from typing import TypeAlias  # novermin (type checkers only)

    from ..workloads.pytorch.data import Dataset


def dataset_step(s: Session, size: int, n_train: int, n_eval: int) -> Dataset | None:
    """The synthetic 5-class set rendered on the session's device; None when the step failed."""
    from ..workloads.pytorch.data import make_dataset

    data = None
    with s.rec.step("dataset") as st:
        data = make_dataset(size, n_train, n_eval, seed=s.opts.seed, device=s.device)
        st.metrics.update(data.describe())
    return data if s.rec.last().status == "pass" else None


TrainRun: TypeAlias = (
    "Callable[..., tuple[dict[str, Any], list[str]]]"  # (cfg, data, loss_drop_min=, accuracy_margin=)
)


def train_step(
    s: Session, data: Any, name: str, cfg: RunConfig, *, estimate: float, run: TrainRun | None = None
) -> Step:
    """One training run as the step `name`: metrics, telemetry window, learning checks. `run` is
    the framework's training loop (default: torch's, workloads/pytorch/train.py)."""
    if run is None:
        from ..workloads.pytorch.train import train_run

        run = train_run

    with s.rec.step(name) as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(estimate)
        cfg = dataclasses.replace(
            cfg, name=name, max_seconds=max(5.0, min(cfg.max_seconds, s.remaining() - 5))
        )
        try:
            with s.window(st):
                metrics, problems = run(
                    cfg,
                    data,
                    loss_drop_min=s.threshold("loss_drop_min"),
                    accuracy_margin=s.threshold("accuracy_margin_over_chance"),
                )
        finally:
            s.free()
        st.metrics.update(metrics)
        if metrics.get("truncated"):
            st.warnings.append(f"stopped at {metrics['steps_done']} steps (time cap)")
        if metrics.get("compile_fallback"):  # torch.compile only
            st.warnings.append(f"torch.compile failed, ran eager: {metrics['compile_fallback']}")
        log(
            f"{name}: {metrics.get('images_per_s', 0):.0f} img/s, "
            f"val acc {metrics.get('val_accuracy', float('nan')):.3f}"
        )
        if problems:
            raise StepFailed("; ".join(problems))
    return s.rec.last()


def bs64_step(
    s: Session,
    data: Any,
    name: str,
    cfg64: RunConfig,
    *,
    peak_mib: float | None,
    free_mib: float,
    run: TrainRun | None = None,
) -> None:
    """Batch 64 only when batch 32 left room for it (2x its peak + 20%)."""
    if peak_mib is None:
        s.rec.skip(name, "no memory figure from the batch-32 run")
    elif 2.4 * peak_mib > free_mib:
        s.rec.skip(
            name, f"not enough VRAM headroom: batch 32 peaked at {peak_mib:.0f} MiB, {free_mib:.0f} free"
        )
    else:
        cfg = dataclasses.replace(cfg64, extra={**cfg64.extra, "headroom_free_mib": free_mib})
        train_step(s, data, name, cfg, estimate=ESTIMATE["bs64"], run=run)
