"""The steps the XLA frameworks (JAX, TensorFlow) share, each written once over a small adapter
(`XlaFramework`: jax_steps.JAX, tf_steps.TENSORFLOW): the device-resident dataset, the batch ramp,
the telemetry overhead A/B and the host-fed input pipeline. plan.py's xla_plan runs them in order."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..record import StepSkipped, log
from ..session import Session
from ..workloads.config import RunConfig
from .estimates import ESTIMATE
from .overhead import OVERHEAD_BATCH, ab_prerequisites, ab_windows
from .pipeline import WORKER_SECONDS, loader_rate, throughputs
from .ramp import RAMP_CAP, record_ramp
from .training import TrainRun

if TYPE_CHECKING:  # numpy_data imports numpy: a torch image need not have it
    from ..workloads.numpy_data import Dataset, Split

PIPELINE_AUGMENTATION = "random crop (reflect pad 1/8) + horizontal flip"


class Loop(Protocol):
    """A trainer as the shared steps drive it: one SGD step on a random batch of `split` (on the
    device), `i` the step's number (its random draw); returns the loss without waiting for it."""

    def step(self, split: Split, i: int, lr: float) -> Any: ...


class Loader(Protocol):
    """The input pipeline's host side: augmented uint8 batches from host memory."""

    @property
    def workers(self) -> int:
        """How many workers the bottleneck's naming counts (tf.data's AUTOTUNE pool: one)."""

    @property
    def description(self) -> Mapping[str, Any]:
        """codec, workers, worker_kind, prefetch, ...: the step's metrics."""

    def start(self) -> None:
        """Start producing batches (threads, first shuffle buffer): not timed."""

    def host_batch(self) -> Any:
        """The next batch, in host memory."""

    @property
    def batch_seconds(self) -> list[float]:
        """The seconds a worker took for each batch it made (steps/pipeline.py loader_rate); empty
        where the pipeline does not say (tf.data): the step then times host_batch() instead."""

    def device_batch(self) -> Split:
        """The next batch, copied to the device."""

    def close(self) -> None: ...


class XlaFramework(Protocol):
    """What a framework brings to the XLA plan: its own smoke steps, training loop, dataset,
    trainer and input pipeline; the plan's order, names, estimates and gates are not its own."""

    @property
    def name(self) -> str:
        """The module (find_spec) and the name in reasons and logs."""

    @property
    def env(self) -> Mapping[str, str]:
        """Set (setdefault) before the framework is imported."""

    @property
    def tuned_tag(self) -> str:
        """The tuned runs' suffix: tuned_rn18_<tag>, tuned_rn50_<tag>."""

    @property
    def compile(self) -> bool:
        """RunConfig.compile of the tuned, ramp and overhead runs (what selects XLA)."""

    def cpu_check(self, s: Session) -> None:
        """The cpu_check step."""

    def gpu_smoke(self, s: Session) -> bool:
        """The cuda_smoke step; True when it passed."""

    def device(self, platform: str) -> Any:
        """The first device of "gpu" or "cpu"."""

    def train_run(self, dev: Any) -> TrainRun:
        """The training loop on dev, as train_step runs it."""

    def make_dataset(self, s: Session, size: int, n_train: int, n_eval: int, dev: Any) -> Dataset:
        """The seeded synthetic set, resident on dev (computed: nothing is waiting for it)."""

    def gpu_facts(self) -> dict[str, Any]:
        """Facts of the GPU path besides the precision (its allocator settings)."""

    def free_mib(self, s: Session, dev: Any) -> float:
        """The device memory still free, in MiB (0 when unknown)."""

    def trainer(self, cfg: RunConfig, dev: Any, size: int, stream: int | None = None) -> Loop:
        """A fresh model and optimizer for cfg; `stream` seeds its random draws."""

    def wait(self, loss: Any) -> None:
        """Block until a step's loss is computed."""

    def memory(self, dev: Any) -> dict[str, float]:
        """The allocator's figures in MiB (peak_allocated_mib, ...; empty where none)."""

    def reset_peak(self, dev: Any) -> None:
        """Start a new peak (where the allocator can; otherwise the peak is the process's)."""

    def loader(self, s: Session, data: Dataset, cfg: RunConfig, dev: Any) -> Loader:
        """The input pipeline for cfg's batch."""


def dataset_step(s: Session, fw: XlaFramework, size: int, n_train: int, n_eval: int, dev: Any) -> Any:
    """The synthetic set, resident on dev; None when the step failed."""
    data = None
    with s.rec.step("dataset") as st:
        data = fw.make_dataset(s, size, n_train, n_eval, dev)
        st.metrics.update(data.describe(str(dev)))
    return data if s.rec.last().status == "pass" else None


def batch_ramp_step(
    s: Session, fw: XlaFramework, data: Any, dev: Any, amp: str, *, reserve: float, start: int
) -> None:
    """ResNet-18, mixed precision: double the batch until XLA runs out of memory, back off,
    bisect. Each batch size compiles anew, so the ramp starts near what the bs64 run predicts.
    `reserve`: seconds the steps after the ramp need; the ramp gets the rest, up to its estimate."""
    with s.rec.step("batch_ramp") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["ramp"] / 2)
        from ..workloads.ramp import find_max_batch

        def try_batch(b: int) -> dict[str, Any]:
            fw.reset_peak(dev)
            cfg = RunConfig(name="ramp", batch=b, amp=amp, compile=fw.compile, device="gpu", seed=s.opts.seed)
            tr = fw.trainer(cfg, dev, data.size)
            for i in range(2):
                fw.wait(tr.step(data.train, i, 0.01))
            peak = fw.memory(dev).get("peak_allocated_mib")
            del tr
            return {"peak_allocated_mib": round(peak) if peak is not None else None}

        budget = min(ESTIMATE["ramp"], max(5.0, s.remaining() - reserve))
        with s.window(st):
            res = find_max_batch(
                try_batch, start=start, cap=RAMP_CAP, after_oom=s.free, deadline=time.monotonic() + budget
            )
        record_ramp(s, st, res, budget, model="resnet18", precision=amp, start_batch=start)


def telemetry_overhead_step(s: Session, fw: XlaFramework, data: Any, dev: Any, amp: str) -> None:
    """The torch step's A/B (steps/overhead.py) with the framework's ResNet-18 (jitted; XLA for
    Keras) at the tuned runs' batch (OVERHEAD_BATCH)."""
    with s.rec.step("telemetry_overhead") as st:
        sampler, data = ab_prerequisites(s, data)
        b = OVERHEAD_BATCH
        cfg = RunConfig(name="overhead", batch=b, amp=amp, compile=fw.compile, device="gpu", seed=s.opts.seed)
        tr = fw.trainer(cfg, dev, data.size, stream=3)

        def window(steps: int) -> float:
            t0 = time.perf_counter()
            loss = None
            for i in range(steps):
                loss = tr.step(data.train, i, 0.01)
            fw.wait(loss)
            return (time.perf_counter() - t0) / steps

        window(10)  # compile and warm up
        step_s = window(20)
        ab_windows(s, st, sampler, window, step_s, batch=b)


def input_pipeline_step(
    s: Session, fw: XlaFramework, data: Any, dev: Any, cfg: RunConfig, *, batches: int
) -> None:
    """The framework's host-fed pipeline (fw.loader: random crop with reflect padding and a flip per
    image in host memory, prefetched, copied to the device each step) against the same model on
    device-resident data; the bottleneck named from the three throughputs."""
    with s.rec.step("input_pipeline") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(12 if s.cuda else 8)
        loader = fw.loader(s, data, cfg, dev)
        tr = fw.trainer(cfg, dev, data.size, stream=5)
        with s.window(st):

            def run(get: Any, n: int, warm: int) -> float:
                last = None
                for i in range(warm):
                    last = tr.step(get(), i, 0.01)
                fw.wait(last)
                t0 = time.perf_counter()
                loss = None
                for i in range(n):
                    loss = tr.step(get(), i, 0.01)
                fw.wait(loss)
                return cfg.batch * n / (time.perf_counter() - t0)

            resident = run(lambda: data.train, batches, 3)  # before any worker competes for the CPU
            loader.start()
            try:
                t0 = time.perf_counter()
                for _ in range(batches):
                    loader.host_batch()
                loader_only = cfg.batch * batches / (time.perf_counter() - t0)
                fed = run(loader.device_batch, batches, 2)
            finally:
                loader.close()
            rate_from = f"{batches} host batches timed after the pipeline started"
            if loader.batch_seconds:
                loader_only = loader_rate(list(loader.batch_seconds), cfg.batch, loader.workers)
                rate_from = WORKER_SECONDS
        st.metrics.update(
            loader.description,
            batch=cfg.batch,
            model=cfg.arch,
            precision=cfg.amp or "fp32",
            augmentation=PIPELINE_AUGMENTATION,
            loader_rate_from=rate_from,
        )
        st.metrics.update(throughputs(loader_only, fed, resident, loader.workers, s.device))
        log(f"input pipeline ({fw.name}): host {loader_only:.0f}, fed {fed:.0f}, resident {resident:.0f}")
