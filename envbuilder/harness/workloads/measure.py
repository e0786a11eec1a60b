"""What every training loop reports and is judged by, whatever the framework: step-time
statistics and the learning checks on the loss curve; the JAX and TensorFlow loops themselves
(train_loop: first step, warm-up, timed steps, record_run)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .config import RunConfig
    from .numpy_data import Dataset, Split


class Evaluated(Protocol):
    """A trained model as train_loop judges it."""

    def evaluate(self, split: Split) -> tuple[float, float]:
        """(accuracy, mean loss) on split, in eval mode."""

    def params_finite(self) -> bool: ...


def step_stats(times_s: Sequence[float]) -> dict[str, float]:
    """mean/p50/p95/min/max of step times in milliseconds (nearest-rank percentiles)."""
    if not times_s:
        return {}
    xs = sorted(times_s)

    def pct(p: float) -> float:
        return xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))] * 1000

    return {
        "mean_ms": sum(xs) / len(xs) * 1000,
        "p50_ms": pct(50),
        "p95_ms": pct(95),
        "min_ms": xs[0] * 1000,
        "max_ms": xs[-1] * 1000,
    }


SERIES_POINTS = 120  # the step-time series kept per run: at most this many points


def step_series(times_s: Sequence[float], points: int = SERIES_POINTS) -> dict[str, Any]:
    """The step times over the run, bounded for the result document: consecutive steps in
    buckets of `per_point` (1 when the run has at most `points` steps), each point the bucket's
    mean and max in ms at `t_s`, the seconds into the timed steps at the bucket's end. The
    report draws it (step time over time); the statistics stay in step_time."""
    if not times_s:
        return {}
    per = max(1, math.ceil(len(times_s) / points))
    t_s: list[float] = []
    mean_ms: list[float] = []
    max_ms: list[float] = []
    clock = 0.0
    for i in range(0, len(times_s), per):
        bucket = times_s[i : i + per]
        clock += sum(bucket)
        t_s.append(round(clock, 4))
        mean_ms.append(round(sum(bucket) / len(bucket) * 1000, 3))
        max_ms.append(round(max(bucket) * 1000, 3))
    return {"per_point": per, "steps": len(times_s), "t_s": t_s, "mean_ms": mean_ms, "max_ms": max_ms}


def check_losses(losses: Sequence[float], loss_drop_min: float, *, planned: int | None = None) -> list[str]:
    """Problems with a loss curve: non-finite values, or no fall (last tenth vs first tenth).

    `planned`: the steps the run was meant to take. A curve the time cap cut short of them is
    not judged as one that did not learn: non-finite values still fail it, a fall still passes
    it, and anything else is reported as the truncation it is (`truncated_problem`).
    """
    for i, v in enumerate(losses):
        if not math.isfinite(v):
            return [f"non-finite loss ({v}) at step {i}"]
    if len(losses) < 4:
        problem = f"too few steps ({len(losses)}) to judge the loss"
    else:
        k = max(2, len(losses) // 10)
        first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
        if last <= (1 - loss_drop_min) * first:
            return []
        problem = (
            f"loss did not fall: mean of last {k} steps {last:.4f} > "
            f"{1 - loss_drop_min:.2f} x first {k} steps {first:.4f}"
        )
    if planned is not None and len(losses) < planned:
        return [truncated_problem(len(losses), planned, "whether the loss falls")]
    return [problem]


def truncated_problem(done: int, planned: int, what: str) -> str:
    """Why a learning check was not judged: the time cap stopped the run after `done` steps."""
    return (
        f"truncated: the time cap stopped the run after {done} of {planned} steps, too few to "
        f"judge {what} (raise --budget-seconds, or run on a less loaded machine)"
    )


def downsample(values: Sequence[float], points: int = 20) -> list[float]:
    """Every n-th value, about `points` of them: the result's loss curves."""
    return list(values[:: max(1, len(values) // points)])


def accuracy_problems(
    val_accuracy: float, classes: int, margin: float, *, done: int | None = None, planned: int | None = None
) -> list[str]:
    """A run must beat chance (1/classes) by `margin` on validation data; a run the time cap
    stopped after `done` of its `planned` steps is reported as truncated instead."""
    chance = 1.0 / classes
    if val_accuracy >= chance + margin:
        return []
    if done is not None and planned is not None and done < planned:
        return [truncated_problem(done, planned, f"the accuracy (val {val_accuracy:.3f})")]
    return [f"val accuracy {val_accuracy:.3f} does not beat chance {chance:.2f} by the margin {margin:.2f}"]


def timed_steps(
    n: int,
    dispatch: Callable[[int], Any],
    wait: Callable[[Any], Any],
    *,
    max_seconds: float = 1e9,
    min_steps: int = 0,
) -> tuple[list[Any], list[float], float, int]:
    """Run n steps of an asynchronous framework; (each step's loss as returned, per-step seconds,
    wall, steps done). After dispatching step i the host waits (`wait`) for step i-1's loss, so one
    step is always queued and the times are completion to completion (no pipeline stall).
    `max_seconds` never stops it before `min_steps`."""
    losses: list[Any] = []
    done: list[float] = []
    t0 = time.perf_counter()
    for i in range(n):
        losses.append(dispatch(i))
        if i > 0:
            wait(losses[i - 1])
            done.append(time.perf_counter())
        if i + 1 >= min_steps and time.perf_counter() - t0 > max_seconds:
            break
    wait(losses[-1])
    done.append(time.perf_counter())
    wall = done[-1] - t0
    times = [done[i + 1] - done[i] for i in range(len(done) - 1)]
    return losses, times, wall, len(losses)


def record_run(
    metrics: dict[str, Any],
    cfg: RunConfig,
    *,
    done: int,
    timed: int,
    wall: float,
    times: Sequence[float],
    memory: dict[str, float],
    losses: Sequence[float],
    loss_drop_min: float,
    accuracy_margin: float,
    classes: int,
    params_finite: Callable[[], bool],
    evaluate: Callable[[], tuple[float, float, float]],
) -> list[str]:
    """The end of a training run (torch's PreparedRun, JAX's and TensorFlow's train_loop): its throughput,
    step times, memory and loss curve into `metrics`, and the learning checks. `evaluate()` gives
    (val accuracy, val loss, test accuracy); it runs only when the curve passed. The problems."""
    metrics.update(
        steps_done=done,
        steps_timed=timed,
        truncated=done < cfg.steps,
        timed_wall_s=wall,
        images_per_s=cfg.batch * timed / wall if wall > 0 else 0.0,
        step_time=step_stats(times),
        step_series=step_series(times),
        memory=memory,
    )
    metrics["loss_first"] = losses[0]
    metrics["loss_last"] = losses[-1]
    metrics["loss_curve"] = downsample(losses)
    problems = check_losses(losses, loss_drop_min, planned=cfg.steps)
    if not params_finite():
        problems.append("non-finite parameters after training")
    if cfg.evaluate and not problems:
        t0 = time.perf_counter()
        val_acc, val_loss, test_acc = evaluate()
        metrics.update(val_accuracy=val_acc, val_loss=val_loss, test_accuracy=test_acc)
        metrics["evaluate_s"] = round(time.perf_counter() - t0, 3)
        metrics["accuracy_required"] = 1.0 / classes + accuracy_margin
        problems += accuracy_problems(val_acc, classes, accuracy_margin, done=done, planned=cfg.steps)
    if not all(math.isfinite(v) for v in losses):
        metrics["non_finite"] = True
    return problems


def train_loop(
    metrics: dict[str, Any],
    cfg: RunConfig,
    data: Dataset,
    model: Evaluated,
    dispatch: Callable[[int], Any],
    wait: Callable[[Any], Any],
    *,
    memory: Callable[[], dict[str, float]],
    stack: Callable[[list[Any]], Any],
    compiled: bool,
    loss_drop_min: float,
    accuracy_margin: float,
    classes: int,
) -> list[str]:
    """A JAX or TensorFlow run of cfg.steps steps (`dispatch(i)`: step i, its loss not waited for):
    the first step timed alone (tracing and compilation: metrics compiled, first_step_s), the
    warm-up, the timed steps (timed_steps, the time cap), then record_run with the allocator's
    figures (`memory()`) and the losses as floats (`stack`: the framework's, into one array). The
    problems."""
    t0 = time.perf_counter()
    first = dispatch(0)
    wait(first)
    metrics["compiled"] = compiled
    metrics["first_step_s"] = time.perf_counter() - t0
    warm = max(1, min(cfg.warmup, cfg.steps - 2))
    losses = [first] + [dispatch(i) for i in range(1, warm)]
    wait(losses[-1])
    timed, times, wall, n = timed_steps(
        cfg.steps - warm,
        lambda j: dispatch(warm + j),
        wait,
        max_seconds=cfg.max_seconds,
        min_steps=cfg.min_steps - warm,
    )
    losses += timed

    def evaluate() -> tuple[float, float, float]:
        val_acc, val_loss = model.evaluate(data.val)
        return val_acc, val_loss, model.evaluate(data.test)[0]

    return record_run(
        metrics,
        cfg,
        done=warm + n,
        timed=n,
        wall=wall,
        times=times,
        memory=memory(),
        losses=[float(v) for v in stack(losses)],
        loss_drop_min=loss_drop_min,
        accuracy_margin=accuracy_margin,
        classes=classes,
        params_finite=model.params_finite,
        evaluate=evaluate,
    )
