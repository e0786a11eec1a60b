"""Orchestration: pick the path (GPU, CPU, quick), run the host step, fix the session (thresholds
for this GPU, the NVML sampler), then the steps of the path in order. What happened goes to the
Recorder; `outcome()` snapshots it for result.py at the end, or when the watchdog fires.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import time
from typing import Any

from .hostinfo import gpu_devices_present, host_record
from .record import Recorder, log, utc_now
from .result import Outcome
from .session import Budget, Options, Session
from .steps.estimates import ESTIMATE
from .steps.smoke import cpu_check_step, cuda_smoke_step, framework_smokes
from .telemetry import Sampler, load_nvml
from .thresholds import select_thresholds
from .workloads.config import RunConfig

TUNED_BATCH = 256


class Certification:
    """One run of the harness: the path chosen up front from the options and the host, then
    `run()`; `outcome()` may be called from another thread at any time (the watchdog)."""

    def __init__(
        self, opts: Options, thresholds_doc: dict[str, Any] | None, rec: Recorder, started: float
    ) -> None:
        """`started`: time.monotonic() when the harness started (the budget counts from it)."""
        self.opts, self.rec, self._doc = opts, rec, thresholds_doc
        self.started_utc = utc_now()
        self.nvml, self.nvml_why = load_nvml()
        self.have_torch = importlib.util.find_spec("torch") is not None
        cpu_only = opts.cpu_only or bool(opts.multi_gpu_cpu_test)
        self.gpu_path = not cpu_only and (gpu_devices_present() or _nvml_count(self.nvml) > 0)
        self.mode = "quick" if opts.quick else ("full" if self.gpu_path else "cpu")
        self.budget = Budget(opts.budget_seconds or (180.0 if self.gpu_path else 100.0), started)
        self.thresholds = select_thresholds(thresholds_doc, None)
        self.host: dict[str, Any] = {}
        self.notes: list[str] = []
        self.sampler: Sampler | None = None

    # ---- the run ---------------------------------------------------------------------------
    def run(self) -> None:
        self._host_step()
        self._path_notes()
        # The sampler keeps its own time under half the overhead limit the certification gates.
        max_duty = float(self.thresholds["telemetry_overhead_max"]) / 2
        if self.gpu_path:
            self.sampler = _start_sampler(self.nvml, self.opts.telemetry_interval, max_duty)
            if self.sampler is None:
                why = self.nvml_why or "NVML lists no GPU"
                self.notes.append(f"GPU telemetry unavailable ({why}): not sampled")
        session = Session(
            opts=self.opts,
            rec=self.rec,
            budget=self.budget,
            thresholds=self.thresholds,
            device="cuda" if self.gpu_path else "cpu",
            sampler=self.sampler,
        )
        try:
            run_path(session, mode=self.mode, have_torch=self.have_torch)
        finally:
            if self.sampler is not None:
                self.sampler.stop()

    def _host_step(self) -> None:
        with self.rec.step("host") as st:
            self.host = host_record(self.nvml, self.nvml_why)
            st.metrics.update(self.host)
            gpus = self.host.get("gpus") or []
            gpu_name = gpus[0].get("name") if gpus else None
            self.thresholds = select_thresholds(self._doc, gpu_name)
            for g in gpus:
                if g.get("processes"):
                    st.warnings.append(
                        f"GPU {g['index']} already runs {len(g['processes'])} "
                        "process(es): numbers may be lower"
                    )

    def _path_notes(self) -> None:
        opts = self.opts
        if opts.multi_gpu_cpu_test:
            self.notes.append(
                f"--multi-gpu-cpu-test {opts.multi_gpu_cpu_test}: only the multi_gpu step's code path, "
                "with gloo on the CPU. This is NOT a GPU certification."
            )
        elif self.mode == "cpu" or (self.mode == "quick" and not self.gpu_path):
            self.notes.append(
                "CPU path: "
                + ("--cpu-only was given" if opts.cpu_only else "no GPU on this host")
                + ". This is NOT a GPU certification."
            )
        if not self.have_torch:
            self.notes.append("torch is not installed: the torch steps are skipped")

    # ---- what happened ---------------------------------------------------------------------
    def outcome(self) -> Outcome:
        steps, facts = self.rec.snapshot()
        if self.sampler is not None:
            telemetry = self.sampler.to_json()
        else:
            why = (self.host.get("nvml") or {}).get("reason", "CPU path")
            telemetry = {"available": False, "reason": why}
        return Outcome(
            mode=self.mode,
            gpu_path=self.gpu_path,
            budget_s=self.budget.seconds,
            started=self.started_utc,
            finished=utc_now(),
            wall_s=time.monotonic() - self.budget.started,
            options=self.opts.given(),
            host=self.host,
            facts=facts,
            steps=steps,
            thresholds=self.thresholds,
            notes=tuple(self.notes),
            telemetry=telemetry,
        )


def _nvml_count(nvml: Any) -> int:
    if nvml is None:
        return 0
    try:
        return int(nvml.nvmlDeviceGetCount())
    except Exception:
        return 0


def _start_sampler(nvml: Any, interval: float, max_duty: float) -> Sampler | None:
    if nvml is None or _nvml_count(nvml) == 0:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(0)
        return Sampler(nvml, handle, interval=interval, max_duty=max_duty).start()
    except Exception as e:
        log(f"telemetry sampler not started: {e}")
        return None


# ---- the paths ---------------------------------------------------------------------------------
def run_path(s: Session, *, mode: str, have_torch: bool) -> None:
    """The steps of the chosen path, in order; a failed prerequisite skips what depends on it."""
    from .multigpu.step import multi_gpu_step

    rec = s.rec
    if not have_torch:
        for name in ("cpu_check", "cuda_smoke"):
            rec.skip(name, "torch is not installed")
        framework_smokes(s, want_gpu=s.cuda)
        return
    import torch

    if not s.cuda:
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    if not s.opts.multi_gpu_cpu_test:  # that mode runs the multi_gpu step's code path only
        cpu_check_step(s)
    if s.cuda:
        smoke_ok = cuda_smoke_step(s)
        framework_smokes(s, want_gpu=True)
        if mode == "quick":
            return
        if not smoke_ok:
            rec.skip("benchmarks", "the CUDA smoke test failed: no GPU benchmark was run")
            return
        gpu_plan(s)
        multi_gpu_step(s)  # after the single-GPU steps, outside their time budget
        return
    rec.skip("cuda_smoke", "CPU path: no GPU on this host (or --cpu-only)")
    framework_smokes(s, want_gpu=False)
    if mode == "quick":
        return
    if not s.opts.multi_gpu_cpu_test:
        cpu_plan(s)
    multi_gpu_step(s)


def cpu_plan(s: Session) -> None:
    """The CPU path: small images, a narrow ResNet-18, few steps; same checks as on the GPU."""
    from .steps.pipeline import input_pipeline_step
    from .steps.real_data import real_data_step
    from .steps.training import dataset_step, train_step

    data = dataset_step(s, 64, 1024, 256)
    narrow = RunConfig(name="", arch="resnet18", width=16, batch=32, device="cpu", seed=s.opts.seed)
    train_step(
        s,
        data,
        "train_cpu_rn18w16_fp32_bs32",
        dataclasses.replace(narrow, steps=s.opts.steps or 60, warmup=5),
        estimate=10,
    )
    input_pipeline_step(s, data, narrow, src_size=96, n_images=256, batches=6)
    s.rec.skip("telemetry_overhead", "no GPU: nothing for NVML to sample")
    real_data_step(s, "resnet18", 32, 64, s.opts.steps or 40, None)


def gpu_plan(s: Session) -> None:
    """The GPU path's benchmark steps, in budget order (docs/harness.md says why this order)."""
    import torch

    from .steps.overhead import telemetry_overhead_step
    from .steps.pipeline import input_pipeline_step
    from .steps.ramp import batch_ramp_step
    from .steps.real_data import real_data_step
    from .steps.training import dataset_step, train_step
    from .workloads.pytorch.train import tf32_flags

    torch.backends.cudnn.benchmark = True
    amp = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    s.rec.fact(amp=amp, tf32=tf32_flags(), cudnn_benchmark=True)
    data = dataset_step(s, 224, 4096, 512)
    steps = s.opts.steps or 200

    def rn18(**kw: Any) -> RunConfig:
        return RunConfig(name="", arch="resnet18", device="cuda", seed=s.opts.seed, **kw)

    fp32 = train_step(
        s,
        data,
        "train_rn18_fp32_bs32",
        rn18(batch=32, steps=steps, extra={"tf32": tf32_flags()}),
        estimate=ESTIMATE["fp32"],
    )
    train_step(
        s, data, f"train_rn18_{amp}_bs32", rn18(batch=32, steps=steps, amp=amp), estimate=ESTIMATE["amp"]
    )
    # Batch 64 only when the first run left room for it (2x its peak + 20%).
    peak = (fp32.metrics.get("memory") or {}).get("peak_reserved_mib")
    free_mib = (torch.cuda.mem_get_info()[0] / 2**20) if torch.cuda.is_available() else 0
    if peak is None:
        s.rec.skip(f"train_rn18_{amp}_bs64", "no memory figure from the batch-32 run")
    elif 2.4 * peak > free_mib:
        s.rec.skip(
            f"train_rn18_{amp}_bs64",
            f"not enough VRAM headroom: batch 32 peaked at {peak:.0f} MiB, {free_mib:.0f} free",
        )
    else:
        train_step(
            s,
            data,
            f"train_rn18_{amp}_bs64",
            rn18(batch=64, steps=steps, amp=amp, extra={"headroom_free_mib": free_mib}),
            estimate=ESTIMATE["bs64"],
        )

    # The tuned runs come before the batch ramp (the issue lists the ramp first): they carry the
    # throughput gates, so they must not be the ones the time budget squeezes out, and they
    # should not run on an allocator the ramp has just filled to the brim.
    def tuned(arch: str, steps: int, warmup: int, compiled: bool = False) -> RunConfig:
        return RunConfig(
            name="",
            arch=arch,
            batch=TUNED_BATCH,
            steps=steps,
            warmup=warmup,
            compile=compiled,
            amp=amp,
            channels_last=True,
            device="cuda",
            seed=s.opts.seed,
        )

    train_step(s, data, "tuned_rn18_eager", tuned("resnet18", 70, 10), estimate=ESTIMATE["rn18_eager"])
    for compiled in (False, True):
        tag = "compiled" if compiled else "eager"
        train_step(
            s, data, f"tuned_rn50_{tag}", tuned("resnet50", 48, 8, compiled), estimate=ESTIMATE[f"rn50_{tag}"]
        )
    batch_ramp_step(s, data, amp, reserve=ESTIMATE["overhead"] + ESTIMATE["pipeline"])
    telemetry_overhead_step(s, data, amp)
    input_pipeline_step(s, data, tuned("resnet50", 200, 10), src_size=320, n_images=512, batches=8)
    # Compiling ResNet-18 too is the first thing to go when time is short (it is not gated).
    train_step(
        s,
        data,
        "tuned_rn18_compiled",
        tuned("resnet18", 70, 10, compiled=True),
        estimate=ESTIMATE["rn18_compiled"],
    )
    real_data_step(s, "resnet18", 64, 224, s.opts.steps or 100, amp)
