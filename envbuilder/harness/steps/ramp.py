"""The batch_ramp step: ResNet-18, mixed precision, channels_last on the GPU: double the batch until
out of memory, back off, bisect; once peak memory predicts the limit, jump near it (workloads/ramp.py
searches; this step measures and records)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..record import Step, StepFailed, StepSkipped, log
from ..session import Session
from .estimates import ESTIMATE

if TYPE_CHECKING:
    from ..workloads.pytorch.data import Dataset

RAMP_CAP = 65536


def batch_ramp_step(s: Session, data: Dataset | None, amp: str, reserve: float) -> None:
    """`reserve`: seconds the steps after the ramp need; the ramp gets the rest, up to its estimate."""
    with s.rec.step("batch_ramp") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["ramp"] / 2)
        import torch

        from ..workloads.pytorch.train import SyntheticTrainer, free_device_memory
        from ..workloads.ramp import find_max_batch

        free_device_memory()
        trainer = SyntheticTrainer(data, amp)
        # cuDNN autotuning each new batch would cost seconds per size; off for the ramp only.
        torch.backends.cudnn.benchmark = False

        def try_batch(b: int) -> dict[str, Any]:
            torch.cuda.reset_peak_memory_stats()
            for _ in range(2):
                trainer.step(b)
            torch.cuda.synchronize()
            return {"peak_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20)}

        def after_oom() -> None:
            trainer.drop_grads()
            free_device_memory()

        budget = min(ESTIMATE["ramp"], max(5.0, s.remaining() - reserve))
        # What the allocator can reach: free device memory plus what it already holds.
        free, _total = torch.cuda.mem_get_info()
        capacity = (free + torch.cuda.memory_reserved()) / 2**20
        with s.window(st):
            try:
                res = find_max_batch(
                    try_batch,
                    start=64,
                    cap=RAMP_CAP,
                    after_oom=after_oom,
                    deadline=time.monotonic() + budget,
                    capacity_mib=capacity,
                )
            finally:
                torch.backends.cudnn.benchmark = True
        record_ramp(s, st, res, budget, model="resnet18", precision=amp, channels_last=True)


def record_ramp(s: Session, st: Step, res: dict[str, Any], budget: float, **what: Any) -> None:
    """The ramp's search result on st (and the largest batch as a fact); StepFailed when even the
    first batch ran out of memory."""
    st.metrics.update(res, **what)
    st.metrics["ramp_budget_s"] = round(budget, 1)
    if res["stopped"]:
        st.warnings.append(res["stopped"])
    if res["largest_batch"] is None:
        raise StepFailed("even the smallest batch of the ramp ran out of memory")
    s.rec.fact(largest_batch=res["largest_batch"])
    log(f"batch ramp: largest batch {res['largest_batch']}, first OOM {res['first_oom_batch']}")
