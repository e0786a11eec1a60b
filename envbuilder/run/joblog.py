"""What a job's own output says about how it died or stalled (`run --monitor` reads it beside
NVML): CUDA out of memory in each framework's words (envbuilder/frameworks/), the batch size that last
fit where the output shows one, non-finite losses where the job prints them, NCCL timeouts.
Pure: text in, facts out; the patterns quote the frameworks' messages."""

from __future__ import annotations

import re
from dataclasses import dataclass

from envbuilder import frameworks

# Each framework's own words (envbuilder/frameworks/NAME.py HINTS.oom, in the registry's order),
# then cuDNN/cuBLAS: CUDNN_STATUS_ALLOC_FAILED / CUBLAS_STATUS_ALLOC_FAILED
_OOM = (
    *((fw.NAME, fw.HINTS.oom) for fw in frameworks.ALL_FRAMEWORK_MODULES),
    ("cudnn/cublas", re.compile(r"(CUDNN|CUBLAS)_STATUS_ALLOC_FAILED")),
)
_BATCH = re.compile(r"\b(?:batch(?:[ _-]?size)?|bs)\s*[=:]?\s*(\d{1,7})\b", re.I)
_FITS = re.compile(r"\b(ok|fits?|fit|done|passed|step|loss)\b", re.I)
_NONFINITE = re.compile(r"\bloss\b[^\n]*?\b(nan|inf|-inf)\b", re.I)
_NCCL_TIMEOUT = re.compile(
    r"(Watchdog caught collective operation timeout|NCCL[^\n]*(timed? ?out|Timeout))", re.I
)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOutput:
    oom_line: str | None = None  # the line that says the job ran out of device memory
    oom_framework: str | None = None
    oom_batch: int | None = None  # the batch size on or just before the OOM line, if shown
    last_fit_batch: int | None = None  # the largest batch size a line before it shows running
    nonfinite_line: str | None = None
    nccl_timeout_line: str | None = None


def read_job_output(text: str) -> JobOutput:
    """The facts above from a job's stdout + stderr (the tail is enough: the end is where it died)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    oom_at, oom_fw = None, None
    for i, ln in enumerate(lines):
        for fw, pat in _OOM:
            if pat.search(ln):
                oom_at, oom_fw = i, fw
                break
        if oom_at is not None:
            break
    oom_batch = last_fit = None
    if oom_at is not None:
        for ln in reversed(lines[max(0, oom_at - 3) : oom_at + 1]):
            m = _BATCH.search(ln)
            if m:
                oom_batch = int(m.group(1))
                break
        fits = [int(m.group(1)) for ln in lines[:oom_at] if (m := _BATCH.search(ln)) and _FITS.search(ln)]
        fits = [b for b in fits if oom_batch is None or b < oom_batch]
        last_fit = max(fits) if fits else None
    nonfinite = next((ln for ln in lines if _NONFINITE.search(ln)), None)
    nccl = next((ln for ln in lines if _NCCL_TIMEOUT.search(ln)), None)
    return JobOutput(
        oom_line=lines[oom_at][:300] if oom_at is not None else None,
        oom_framework=oom_fw,
        oom_batch=oom_batch,
        last_fit_batch=last_fit,
        nonfinite_line=nonfinite[:300] if nonfinite else None,
        nccl_timeout_line=nccl[:300] if nccl else None,
    )
