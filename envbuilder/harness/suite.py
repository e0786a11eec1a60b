"""The steps themselves, shared by the CPU and GPU paths: budget, telemetry windows, training
steps, the input pipeline check and the real-data fine-tune. The GPU-only steps are in gpu.py."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .frameworks import FRAMEWORKS, installed, run_smoke
from .result import Recorder, Step, StepFailed, StepSkipped, log
from .telemetry import Sampler, slowdown_warnings


@dataclass
class Options:
    """What the command line asked for (see cli.py for each option's meaning)."""

    mode: str = "full"  # full | quick | cpu
    steps: int | None = None
    budget_s: float = 180.0
    data: str | None = None
    weights: str | None = None
    workers: int | None = None
    seed: int = 1234
    framework: str = "torch"  # the framework the image is certified for (its smoke gates)
    multi_gpu_cpu_test: int = 0  # N > 0: the multi_gpu step's path with gloo, N CPU processes
    multi_gpu_timeout: float = 120.0  # process-group timeout of the multi_gpu step (s)


@dataclass
class Suite:
    """State shared by the steps of one certification."""

    opts: Options
    rec: Recorder
    applied: dict[str, Any]
    started: float
    sampler: Sampler | None = None
    device: str = "cpu"
    data: Any = None
    measured: dict[str, float | None] = field(default_factory=dict)
    not_measured: dict[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    multi_gpu: dict[str, Any] | None = None  # the result's multi_gpu section (multigpu.py)
    multi_gpu_gates: list[dict[str, Any]] = field(default_factory=list)

    # ---- budget -------------------------------------------------------------------------
    def remaining(self) -> float:
        return self.opts.budget_s - (time.monotonic() - self.started)

    def need(self, seconds: float) -> None:
        """Skip the current step when the time budget cannot cover its estimate."""
        if self.remaining() < seconds:
            raise StepSkipped(
                f"time budget: {self.remaining():.0f} s left of {self.opts.budget_s:.0f} s, "
                f"this step needs about {seconds:.0f} s (raise --budget-seconds to run it)"
            )

    def free(self) -> None:
        """Release device memory between runs (no-op on the CPU path)."""
        if self.device == "cuda":
            from .train import free_device_memory

            free_device_memory()

    # ---- telemetry ----------------------------------------------------------------------
    def window_start(self) -> float:
        return self.sampler.now() if self.sampler else 0.0

    def window_end(self, st: Step, start: float) -> None:
        if self.sampler is None:
            return
        self.sampler.sample()  # at least one sample inside every window, even a short one
        self.sampler.mark(st.name, start, self.sampler.now())
        summary = self.sampler.window_summary(st.name)
        st.metrics["telemetry"] = summary
        st.warnings.extend(slowdown_warnings(summary))

    # ---- training -----------------------------------------------------------------------
    def train_step(self, name: str, cfg: Any, *, estimate: float, gate_key: str = "") -> Step:
        """One training run as a step: metrics, telemetry window, learning checks."""
        from .train import train_run

        with self.rec.step(name) as st:
            if self.data is None:
                raise StepSkipped("no dataset (the dataset step did not pass)")
            self.need(estimate)
            cfg.name = name
            cfg.max_seconds = max(5.0, min(cfg.max_seconds, self.remaining() - 5))
            t_start = self.window_start()
            try:
                metrics, problems = train_run(
                    cfg,
                    self.data,
                    loss_drop_min=float(self.applied["loss_drop_min"]),
                    accuracy_margin=float(self.applied["accuracy_margin_over_chance"]),
                )
            finally:
                self.window_end(st, t_start)
                self.free()
            st.metrics.update(metrics)
            if metrics.get("truncated"):
                st.warnings.append(f"stopped at {metrics['steps_done']} steps (time cap)")
            if metrics.get("compile_fallback"):
                st.warnings.append(f"torch.compile failed, ran eager: {metrics['compile_fallback']}")
            if gate_key:
                if cfg.compile and not metrics.get("compiled"):
                    self.not_measured[gate_key] = "torch.compile failed (see the step's warnings)"
                elif not problems:
                    self.measured[gate_key] = float(metrics["images_per_s"])
            log(
                f"{name}: {metrics.get('images_per_s', 0):.0f} img/s, "
                f"val acc {metrics.get('val_accuracy', float('nan')):.3f}"
            )
            if problems:
                raise StepFailed("; ".join(problems))
        step = self.rec.steps[-1]
        if gate_key and step.status != "pass" and gate_key not in self.not_measured:
            self.not_measured[gate_key] = f"{name}: {step.status}: {step.reason}"[:300]
        return step

    # ---- common steps -------------------------------------------------------------------
    def framework_smokes(self, want_gpu: bool) -> None:
        """TensorFlow / JAX smoke, each in a child process, only where installed."""
        for fw in FRAMEWORKS:
            name = f"{fw}_smoke"
            if not installed(fw):
                self.rec.skip(name, f"{fw} is not installed in this environment")
                continue
            if fw != self.opts.framework:
                # Another framework that happens to be importable (a fat base image) is not what
                # this image is certified for; its smoke would gate on someone else's stack.
                self.rec.skip(name, f"{fw} is installed, but this certification is for {self.opts.framework}")
                continue
            with self.rec.step(name) as st:
                self.need(20)
                res = run_smoke(fw, want_gpu, timeout=max(30.0, min(150.0, self.remaining())))
                st.metrics.update(res)
                if res.get("error"):
                    raise StepFailed(str(res["error"]))

    def make_data(self, size: int, n_train: int, n_eval: int) -> None:
        from .synthetic import make_dataset

        with self.rec.step("dataset") as st:
            self.data = make_dataset(size, n_train, n_eval, seed=self.opts.seed, device=self.device)
            st.metrics.update(self.data.describe())

    def input_pipeline(self, cfg: Any, *, src_size: int, n_images: int, batches: int) -> None:
        """Same model fed by a real DataLoader vs from GPU-resident (in-memory) data."""
        with self.rec.step("input_pipeline") as st:
            if self.data is None:
                raise StepSkipped("no dataset (the dataset step did not pass)")
            self.need(12 if self.device == "cuda" else 8)
            t_start = self.window_start()
            try:
                self._input_pipeline(st, cfg, src_size=src_size, n=n_images, batches=batches)
            finally:
                self.window_end(st, t_start)

    def _input_pipeline(self, st: Step, cfg: Any, *, src_size: int, n: int, batches: int) -> None:

        from .feed import FeedBench
        from .pipeline import (
            DecodeAugment,
            default_workers,
            encode_split,
            loader_throughput,
            make_loader,
            name_bottleneck,
        )
        from .synthetic import render

        workers = self.opts.workers or default_workers()
        blobs, labels, codec = encode_split(render(n, src_size, self.opts.seed + 5))
        raw_hw = None if codec == "jpeg" else (src_size, src_size)
        ds = DecodeAugment(blobs, labels, self.data.size, train=True, raw_hw=raw_hw)
        cuda = self.device == "cuda"
        st.metrics.update(
            codec=codec,
            source_image=f"{src_size}x{src_size}",
            mean_encoded_kib=round(sum(map(len, blobs)) / len(blobs) / 1024, 1),
            workers=workers,
            pin_memory=cuda,
            prefetch_factor=4,
            batch=cfg.batch,
            model=cfg.arch,
            precision=cfg.amp or "fp32",
            augmentation="RandomResizedCrop(0.08-1, 3/4-4/3) + horizontal flip",
        )
        if codec != "jpeg":
            st.warnings.append("PIL is not installed: raw bytes were loaded, JPEG decode not measured")
        bench = FeedBench(cfg)
        resident = bench.resident(self.data, batches)  # before any worker competes for the CPU
        loader = make_loader(ds, cfg.batch, workers, pin=cuda)
        it = iter(loader)
        t0 = time.perf_counter()
        next(it)  # worker start-up, excluded
        st.metrics["first_batch_s"] = time.perf_counter() - t0
        loader_only = loader_throughput(it, batches, cfg.batch)
        fed = bench.fed(it, batches)
        del it, loader, bench
        self.free()
        verdict, facts = name_bottleneck(loader_only, fed, resident, workers, self.device)
        st.metrics.update(
            loader_only_img_s=loader_only,
            loader_fed_img_s=fed,
            resident_img_s=resident,
            bottleneck=verdict,
            **facts,
        )
        log(f"input pipeline: loader {loader_only:.0f}, fed {fed:.0f}, resident {resident:.0f}")

    def real_data(self, arch: str, batch: int, size: int, steps: int, amp: str | None) -> None:
        """--data DIR (ImageFolder train/ val/) and --weights FILE: the user's own fine-tune."""
        if not self.opts.data:
            if self.opts.weights:
                self.rec.skip("real_data", "--weights was given without --data")
            return
        from .feed import real_data_run

        with self.rec.step("real_data") as st:
            root = Path(self.opts.data)
            for sub in ("train", "val"):
                if not (root / sub).is_dir():
                    raise StepFailed(f"--data {root}: no {sub}/ folder (ImageFolder layout)")
            t_start = self.window_start()
            try:
                metrics, problems = real_data_run(
                    root,
                    arch=arch,
                    batch=batch,
                    size=size,
                    steps=steps,
                    amp=amp,
                    device=self.device,
                    workers=self.opts.workers,
                    weights=self.opts.weights,
                    loss_drop_min=float(self.applied["loss_drop_min"]),
                )
            finally:
                self.window_end(st, t_start)
                self.free()
            st.metrics.update(metrics)
            if problems:
                raise StepFailed("; ".join(problems))
