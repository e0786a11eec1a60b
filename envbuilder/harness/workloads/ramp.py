"""Batch ramp: double the batch until the GPU runs out of memory, back off, bisect, and record
the largest batch that fits. Pure logic over an injected `try_batch`, so tests can fake OOM."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def is_oom(exc: BaseException) -> bool:
    """An out-of-memory error from torch, cuDNN or cuBLAS, TensorFlow or XLA (they do not all raise
    the same type: TensorFlow's is ResourceExhaustedError, "OOM when allocating tensor")."""
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:
        pass
    if type(exc).__name__ == "ResourceExhaustedError":
        return True
    text = str(exc)
    return "out of memory" in text.lower() or "ALLOC_FAILED" in text or "OOM when allocating" in text


PREDICT_MARGIN = 0.03  # the jump lands this far below the predicted limit (the fit is not exact)


def predict_max_batch(tried: list[dict[str, Any]], capacity_mib: float | None) -> int | None:
    """The batch at which peak memory, a line through the two largest batches that fit, reaches
    `capacity_mib`; None without a capacity, two such points or a positive slope."""
    if not capacity_mib:
        return None
    pts = sorted(
        (t["batch"], float(t["peak_allocated_mib"]))
        for t in tried
        if t.get("fits") and isinstance(t.get("peak_allocated_mib"), (int, float))
    )
    if len(pts) < 2:
        return None
    (b0, m0), (b1, m1) = pts[-2], pts[-1]
    if b1 <= b0 or m1 <= m0:
        return None  # no growth to read (a cumulative peak, or too small to see)
    slope = (m1 - m0) / (b1 - b0)
    return int(b1 + (capacity_mib - m1) / slope)


def _down(x: float, multiple: int) -> int:
    return int(x) // multiple * multiple


def find_max_batch(
    try_batch: Callable[[int], dict[str, Any] | None],
    *,
    start: int,
    cap: int,
    after_oom: Callable[[], None] = lambda: None,
    deadline: float | None = None,
    refine: int = 3,
    multiple: int = 8,
    clock: Callable[[], float] = time.monotonic,
    capacity_mib: float | None = None,
) -> dict[str, Any]:
    """Ramp from `start` doubling up to `cap`; on OOM call `after_oom` (free memory), then bisect
    between the last fitting and the first failing batch `refine` times.

    With `capacity_mib` (the memory the run can reach) and `peak_allocated_mib` in what
    `try_batch` returns, the ramp jumps as soon as peak memory (linear in the batch) predicts the
    limit more than one doubling away: to just below the prediction, then up in steps of the width
    the plain ramp's bisection ends at, or bisecting down when the jump ran out of memory, until a
    fitting and an out-of-memory batch are no further apart than the plain ramp leaves them. The
    same precision, without the large batches in between, each of which costs seconds.

    A non-OOM exception propagates. `deadline` (clock() value) stops the ramp early, and so does a
    batch predicted to end past it (`too_slow`): JAX compiles each new batch anew, and its batch
    1024 took 28.9 s of a 30 s budget that it overran (H100, 2026-12-05).
    """
    tried: list[dict[str, Any]] = []
    largest: int | None = None
    first_oom: int | None = None
    stopped = ""
    smallest_oom: int | None = None
    predicted: int | None = None
    step: int | None = None  # set by the jump: the precision the search stops at

    def attempt(b: int) -> bool:
        t0 = clock()
        err = ""
        try:
            extra = try_batch(b) or {}
        except Exception as e:
            if not is_oom(e):
                raise
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        # Outside the except block: the exception (and the tensors its frames hold) is gone.
        if err:
            tried.append({"batch": b, "fits": False, "seconds": clock() - t0, "error": err})
            after_oom()
            return False
        tried.append({"batch": b, "fits": True, "seconds": clock() - t0, **extra})
        return True

    def width(lo: int) -> int:
        """How far apart the plain ramp leaves fit and OOM around lo: its bracket [x, 2x] (x the
        largest doubling of start up to lo) bisected `refine` times."""
        x = start
        while x * 2 <= lo:
            x *= 2
        return max(multiple, _down(x / 2**refine, multiple))

    def late() -> bool:
        return deadline is not None and clock() > deadline

    def too_slow(b: int) -> str:
        """Why batch b is not tried: the last fitting try's seconds, scaled by the batch (the
        compile and the steps grow with it), end past the deadline; "" when it may be tried."""
        done = [t for t in tried if t["fits"]]
        if deadline is None or not done:
            return ""
        eta = done[-1]["seconds"] * b / done[-1]["batch"]
        left = deadline - clock()
        if eta <= left:
            return ""
        return f"time budget for the ramp spent: batch {b} would take about {eta:.0f} s, {left:.0f} s left"

    b = start
    while True:
        if late():
            stopped = "time budget for the ramp spent"
            break
        stopped = too_slow(b)
        if stopped:
            break
        if not attempt(b):
            first_oom = b
            break
        largest = b
        if b >= cap:
            stopped = f"reached the cap {cap} without running out of memory"
            break
        if step is not None:  # past the jump: up one bracket width at a time
            b = min(cap, b + step)
            continue
        guess = predict_max_batch(tried, capacity_mib)
        if guess is not None and guess > 2 * b:
            predicted = guess
            jump = max(2 * b, _down(guess * (1 - PREDICT_MARGIN), multiple))
            step = width(jump)
            b = min(cap, jump)
        else:
            b = min(cap, b * 2)
    if largest is not None and first_oom is not None:
        lo, hi = largest, first_oom
        rounds = 0
        # Plain doubling: `refine` bisections of [x, 2x]; after a jump: until as close as they get.
        while rounds < refine if step is None else hi - lo > width(lo):
            rounds += 1
            if late():
                stopped = "time budget for the ramp spent (during back-off)"
                break
            mid = (lo + hi) // 2 // multiple * multiple
            if mid <= lo or mid >= hi:
                break
            stopped = too_slow(mid)
            if stopped:
                stopped += " (during back-off)"
                break
            if attempt(mid):
                lo = mid
            else:
                hi = mid
        largest, smallest_oom = lo, hi
    return {
        "largest_batch": largest,
        "first_oom_batch": first_oom,
        "smallest_oom_batch": smallest_oom or first_oom,
        "hit_oom": first_oom is not None,
        "stopped": stopped,
        "predicted_max_batch": predicted,
        "capacity_mib": round(capacity_mib) if capacity_mib else None,
        "tried": tried,
    }
