"""Batch ramp: double the batch until the GPU runs out of memory, back off, bisect, and record
the largest batch that fits. Pure logic over an injected `try_batch`, so tests can fake OOM."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def is_oom(exc: BaseException) -> bool:
    """An out-of-memory error from torch, cuDNN or cuBLAS (they do not all raise the same type)."""
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:
        pass
    text = str(exc)
    return "out of memory" in text.lower() or "ALLOC_FAILED" in text


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
) -> dict[str, Any]:
    """Ramp from `start` doubling up to `cap`; on OOM call `after_oom` (free memory), then bisect
    between the last fitting and the first failing batch `refine` times.

    A non-OOM exception propagates. `deadline` (clock() value) stops the ramp early.
    """
    tried: list[dict[str, Any]] = []
    largest: int | None = None
    first_oom: int | None = None
    stopped = ""
    smallest_oom: int | None = None

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

    b = start
    while True:
        if deadline is not None and clock() > deadline:
            stopped = "time budget for the ramp spent"
            break
        if attempt(b):
            largest = b
            if b >= cap:
                stopped = f"reached the cap {cap} without running out of memory"
                break
            b = min(cap, b * 2)
        else:
            first_oom = b
            break
    if largest is not None and first_oom is not None:
        lo, hi = largest, first_oom
        for _ in range(refine):
            if deadline is not None and clock() > deadline:
                stopped = "time budget for the ramp spent (during back-off)"
                break
            mid = (lo + hi) // 2 // multiple * multiple
            if mid <= lo or mid >= hi:
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
        "tried": tried,
    }
