"""What every step of one certification shares, fixed before the first benchmark step runs: the
options asked for, the time budget, the applied thresholds, the device and the NVML sampler. The
steps' results go to the Recorder (record.py), never back into the session.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

from .frameworks import FRAMEWORKS
from .record import Recorder, Step, StepSkipped
from .telemetry import Sampler, slowdown_warnings

FRAMEWORK_CHOICES = tuple(FRAMEWORKS)  # frameworks.py


@dataclass(frozen=True)
class Options:
    """The command line as given (cli.py says what each means). The field names are the options'
    own, so the result's `options` record reads as the command line did."""

    quick: bool = False
    level: str = "default"  # "full": the long version (plan.py TorchGpuPlan says what differs)
    cpu_only: bool = False
    steps: int | None = None
    out: str | None = None
    thresholds: str | None = None
    budget_seconds: float | None = None
    watchdog_seconds: float = 900.0
    data: str | None = None
    weights: str | None = None
    workers: int | None = None
    seed: int = 1234
    framework: str = "torch"  # the framework the image is certified for (its smoke gates)
    telemetry_interval: float = 1.0
    multi_gpu_timeout: float = 120.0  # process-group timeout of the multi_gpu step (s)
    multi_gpu_cpu_test: int = 0  # N > 0: the multi_gpu step's path with gloo, N CPU processes
    nonce: str | None = None  # certify's token for this run, echoed in the result's options

    def given(self) -> dict[str, Any]:
        """The options that were set (the result's `options`): unset and false ones left out."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in values.items() if v not in (None, False)}


@dataclass(frozen=True)
class Budget:
    """The time budget of the benchmark steps, counted from the harness's start."""

    seconds: float
    started: float = field(default_factory=time.monotonic)  # time.monotonic() at the start

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def need(self, seconds: float) -> None:
        """Skip the current step (StepSkipped) when what is left cannot cover its estimate."""
        if self.remaining() < seconds:
            raise StepSkipped(
                f"time budget: {self.remaining():.0f} s left of {self.seconds:.0f} s, "
                f"this step needs about {seconds:.0f} s (raise --budget-seconds to run it)"
            )


@dataclass(frozen=True)
class Session:
    """The shared, read-only context of the steps (see the module docstring)."""

    opts: Options
    rec: Recorder
    budget: Budget
    thresholds: Mapping[str, Any]  # the applied thresholds (thresholds.select_thresholds)
    device: str = "cpu"  # "cuda" on the GPU path
    sampler: Sampler | None = None

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    def threshold(self, key: str) -> float:
        return float(self.thresholds[key])

    def need(self, seconds: float) -> None:
        self.budget.need(seconds)

    def remaining(self) -> float:
        return self.budget.remaining()

    def free(self) -> None:
        """Release device memory between runs (torch's caching allocator; for the others, the
        arrays nobody holds any more)."""
        if self.cuda and self.opts.framework == "torch":
            from .workloads.pytorch.train import free_device_memory

            free_device_memory()
        elif self.opts.framework != "torch":
            import gc

            gc.collect()

    @contextmanager
    def window(self, st: Step) -> Iterator[None]:
        """The block is step st's telemetry window: its summary and clock warnings go on st."""
        if self.sampler is None:
            yield
            return
        start = self.sampler.now()
        try:
            yield
        finally:
            self.sampler.sample()  # at least one sample inside every window, even a short one
            self.sampler.mark(st.name, start, self.sampler.now())
            summary = self.sampler.window_summary(st.name)
            st.metrics["telemetry"] = summary
            st.warnings.extend(slowdown_warnings(summary))
