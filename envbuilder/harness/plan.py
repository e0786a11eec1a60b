"""Orchestration: pick the path (GPU, CPU, quick), run the host step, fix the session (thresholds
for this GPU, the NVML sampler), then the steps of the path in order. What happened goes to the
Recorder; `outcome()` snapshots it for result.py at the end, or when the watchdog fires.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import time
from typing import Any

from .frameworks import FRAMEWORKS
from .hostinfo import gpu_devices_present, host_record, torch_record
from .record import Recorder, log, utc_now
from .result import Outcome
from .session import Budget, Options, Session
from .steps.estimates import ESTIMATE
from .steps.gate import gate_baseline_step
from .steps.inventory import InventoryScan, kernel_inventory_step
from .steps.smoke import cpu_check_step, cuda_smoke_step, framework_smokes
from .steps.xla import XlaFramework
from .telemetry import Sampler, load_nvml
from .thresholds import select_thresholds
from .workloads.config import RunConfig

TUNED_BATCH = 256
# The tuned runs' (steps, warm-up steps); the compile lane's children, the longer compile first.
TUNED_RUNS = {"resnet50": (48, 8), "resnet18": (70, 10)}
# The compiled runs whose child runs the timed loop itself. ResNet-50's compile is the plan's longest
# wait: its child only fills the cache (no cuDNN autotuning there), and the harness's own compiled
# run loads it and reuses the autotuning its eager run did (measured on the H200, 2026-12-01: serving
# it too made the wait 6-10 s longer and the run 1.6 s longer).
SERVED = ("resnet18",)
GPU_DATA = (224, 4096, 512)  # the GPU path's synthetic set: image size, train and eval images
# xla_plan's adapters, one per framework that has one (frameworks.py: steps/MODULE.py's OBJECT)
XLA_FRAMEWORKS: dict[str, XlaFramework] = {
    name: getattr(importlib.import_module(f".steps.{module}", __package__), obj)
    for name, fw in FRAMEWORKS.items()
    if fw.adapter is not None
    for module, obj in [fw.adapter.split(":")]
}
NO_GPU = "CPU path: no GPU on this host, or none given to this run"  # cuda_smoke's skip reason
# The step every path of every framework runs first: where the framework is missing it fails, and
# never skips (a failed step fails the verdict, with the reason). A skip is no safe default either:
# certify/verdict.py refuses a passing result in which no step of the framework ran (each skipped, or
# only the framework-free steps and other frameworks' smoke steps ran), not one whose cpu_check
# alone did not run.
FRAMEWORK_STEP = "cpu_check"


def missing_framework(rec: Recorder, name: str) -> None:
    """The framework this certification is for (--framework: the image's stack, or what certify
    was asked for) is not importable: a failed step, so the verdict fails and says why; a skip
    would let an image with its framework deleted pass on the steps that need none (D2)."""
    rec.fail(
        FRAMEWORK_STEP,
        f"{name} is not installed, but this certification is for {name} (the image's stack or "
        "--framework names it): the image cannot run its framework",
    )
    rec.skip("cuda_smoke", f"{name} is not installed")


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
        if not self.gpu_path:
            # Before torch loads libgomp, which reads it once: OpenMP threads that spin at every
            # barrier slow a CPU step 7-17x on a shared, oversubscribed machine (a 2-core CI box
            # at load 11: 4.2 s vs 0.61 s a step). The CPU path gates no throughput.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        self.budget = Budget(opts.budget_seconds or (180.0 if self.gpu_path else 100.0), started)
        self.thresholds = select_thresholds(thresholds_doc, None)
        self.host: dict[str, Any] = {}
        self.notes: list[str] = []
        self.sampler: Sampler | None = None

    # ---- the run ---------------------------------------------------------------------------
    def run(self) -> None:
        lane = self._early_lane()
        # the libraries (and the framework's bytecode) read beside the host step (steps/inventory.py)
        fw = FRAMEWORKS.get(self.opts.framework)
        scan = InventoryScan(fw.python_packages if fw else ())
        try:
            self._host_step(lane)
            self._run(lane, scan)
        finally:
            if lane is not None:
                lane.close()

    def _early_lane(self) -> Any:
        """The compile lane of the default torch GPU order, started before the host step: its
        children import torch (seconds) beside the harness's own import there, and wait until NVML
        has listed the GPU's processes before they touch it. None where that order does not run."""
        o = self.opts
        torch_gpu = self.gpu_path and self.mode == "full" and self.have_torch
        if not torch_gpu or o.level == "full" or o.framework != "torch" or o.multi_gpu_cpu_test:
            return None
        from .steps.lane import CompileLane

        return CompileLane(
            TUNED_RUNS, batch=TUNED_BATCH, amp="auto", seed=o.seed, data=GPU_DATA, hold=True, served=SERVED
        )

    def _run(self, lane: Any, scan: InventoryScan) -> None:
        kernel_inventory_step(self.rec, self.host, scan)  # what the libraries carry, before any GPU use
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
            run_path(session, mode=self.mode, have_torch=self.have_torch, lane=lane)
        finally:
            if self.sampler is not None:
                self.sampler.stop()

    def _host_step(self, lane: Any) -> None:
        with self.rec.step("host") as st:
            self.host = host_record(self.nvml, self.nvml_why)
            if lane is not None:
                # NVML has listed the GPU's processes: the children may go, while torch's own
                # facts are read (its import, cuDNN and NCCL loaded: 10 s on a cold machine).
                lane.release()
            if self.opts.framework == "torch":  # another framework's image may carry torch too:
                self.host.update(torch_record())  # its facts are not this certification's
            st.metrics.update(self.host)
            gpus = self.host.get("gpus") or []
            gpu_name = gpus[0].get("name") if gpus else None
            self.thresholds = select_thresholds(self._doc, gpu_name)
            for g in gpus:
                if g.get("processes") is None:
                    st.warnings.append(
                        f"GPU {g['index']}: NVML did not list its processes: another process may "
                        "share it, and numbers may be lower"
                    )
                elif g["processes"]:
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
                + (
                    "no GPU was given to this run (certify --gpu-access none, or a host without one)"
                    if opts.cpu_only
                    else "no GPU on this host"
                )
                + ". This is NOT a GPU certification."
            )
        if not self.have_torch and opts.framework == "torch":
            self.notes.append("torch is not installed: the image cannot run the framework it is for")

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
            framework=self.opts.framework,
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
def run_path(s: Session, *, mode: str, have_torch: bool, lane: Any = None) -> None:
    """The steps of the chosen path, in order; a failed prerequisite skips what depends on it.
    `lane`: the compile lane Certification started early (the default torch GPU order)."""
    from .multigpu.step import multi_gpu_step

    rec = s.rec
    xla = XLA_FRAMEWORKS.get(s.opts.framework)
    if xla is not None and not s.opts.multi_gpu_cpu_test:
        xla_plan(s, xla, mode=mode)
        return
    if not have_torch:
        missing_framework(rec, "torch")
        framework_smokes(s, want_gpu=s.cuda)
        return
    import torch

    if not s.cuda:
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0))))
    if s.cuda:
        plan = TorchGpuPlan(s, lane) if mode == "full" else None
        if plan is not None:
            plan.start()
        # The default order runs cpu_check (CPU only) while the GPU waits on the compile lane.
        overlapped = plan is not None and plan.lane is not None
        try:
            if not overlapped:
                cpu_check_step(s)
            smoke_ok = cuda_smoke_step(s)
            if smoke_ok:  # what `envbuilder check` compares a node with (steps/gate.py), ~1 s
                gate_baseline_step(s)
            framework_smokes(s, want_gpu=True)
            if plan is None:
                return
            if not smoke_ok:
                if overlapped:
                    cpu_check_step(s)
                rec.skip("benchmarks", "the CUDA smoke test failed: no GPU benchmark was run")
                return
            plan.run()
        finally:
            if plan is not None:
                plan.close()
        multi_gpu_step(s)  # after the single-GPU steps, outside their time budget
        return
    if not s.opts.multi_gpu_cpu_test:  # that mode runs the multi_gpu step's code path only
        cpu_check_step(s)
    rec.skip("cuda_smoke", NO_GPU)
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

    s.rec.fact(omp_wait_policy=os.environ.get("OMP_WAIT_POLICY", "default"))
    data = dataset_step(s, 64, 1024, 256)
    narrow = RunConfig(name="", arch="resnet18", width=16, batch=32, device="cpu", seed=s.opts.seed)
    steps = s.opts.steps or 60
    # This run is the CPU certificate's proof of learning: the time cap must not cut it short of
    # its steps on a slow machine (the watchdog still stops a hang).
    train_step(
        s,
        data,
        "train_cpu_rn18w16_fp32_bs32",
        dataclasses.replace(narrow, steps=steps, warmup=5, min_steps=steps),
        estimate=10,
    )
    input_pipeline_step(s, data, narrow, src_size=96, n_images=256, batches=6)
    s.rec.skip("telemetry_overhead", "no GPU: nothing for NVML to sample")
    real_data_step(s, "resnet18", 32, 64, s.opts.steps or 40, None)


class TorchGpuPlan:
    """The torch GPU path's benchmark steps, and the two orders they run in.

    `full` (--level full) is the long version: every step in the harness process, one after the
    other, cuDNN autotuning in every run. The default order keeps the same steps, gates and window
    sizes, and takes the GPU's idle time out: torch.compile of the tuned models runs in child
    processes on the CPU cores (steps/lane.py) while the accuracy runs and the telemetry A/B use
    the GPU; the ResNet-18 child runs its timed loop itself (nothing traced twice), the ResNet-50
    child fills the Inductor cache the harness's own compiled run loads; cpu_check and the input
    pipeline's image encoding (CPU work) fill the wait too. The accuracy runs use cuDNN's
    heuristics instead of autotuning (they are not gated; the tuned runs still autotune). The
    eager runs the throughput gates judge, the ResNet-50 compiled run, the batch ramp and the
    input pipeline run only once the ResNet-50 child is done, so no compile shares the GPU or the
    CPU with them.
    """

    def __init__(self, s: Session, lane: Any = None) -> None:
        """`lane`: a compile lane already started (Certification starts it before the host step,
        with amp "auto": its children pick the precision with the same default_amp)."""
        from .workloads.pytorch.train import default_amp, tf32_flags

        self.s = s
        self.amp = default_amp()
        self.steps = s.opts.steps or 200
        self.tf32 = tf32_flags()
        self.data: Any = None
        self.lane: Any = lane
        self.pipeline_images: Any = None  # prepare_pipeline()

    def start(self) -> None:
        """Start the compile lane (default level) unless it runs already: before cpu_check and the
        smoke, so its children import torch and compile while those run."""
        if self.s.opts.level != "full" and self.lane is None:
            from .steps.lane import CompileLane

            seed = self.s.opts.seed
            self.lane = CompileLane(
                TUNED_RUNS, batch=TUNED_BATCH, amp=self.amp, seed=seed, data=GPU_DATA, served=SERVED
            )

    def close(self) -> None:
        if self.lane is not None:
            self.lane.close()

    def run(self) -> None:
        from .steps.real_data import real_data_step
        from .steps.training import dataset_step

        s = self.s
        full = self.lane is None
        benchmark: Any = True if full else "tuned runs only"
        s.rec.fact(amp=self.amp, tf32=self.tf32, cudnn_benchmark=benchmark, level=s.opts.level)
        self.data = dataset_step(s, *GPU_DATA)
        if full:
            self.accuracy_runs(autotune=True)
            self.tuned_eager()
            self.tuned_compiled("resnet50")
            self.ramp_overhead_pipeline(overhead=True)
            self.tuned_compiled("resnet18")
        else:
            # While the children compile: the ungated GPU work, and the CPU-only work the GPU
            # would otherwise wait for (cpu_check, the input pipeline's images).
            self.accuracy_runs(autotune=False)
            self.warm_autotuner("resnet50")
            cpu_check_step(s)
            self.overhead()
            self.tuned_compiled("resnet18")  # its child is done first; a warn-only gate
            self.prepare_pipeline()
            self.lane.wait("resnet50", max(5.0, s.remaining()))  # nothing shares the GPU from here
            self.tuned_eager()
            self.tuned_compiled("resnet50")
            self.ramp_overhead_pipeline(overhead=False)
        real_data_step(s, "resnet18", 64, 224, s.opts.steps or 100, self.amp)

    def rn18(self, **kw: Any) -> RunConfig:
        return RunConfig(name="", arch="resnet18", device="cuda", seed=self.s.opts.seed, **kw)

    def tuned(self, arch: str, compiled: bool = False) -> RunConfig:
        steps, warmup = TUNED_RUNS[arch]
        return RunConfig(
            name="",
            arch=arch,
            batch=TUNED_BATCH,
            steps=steps,
            warmup=warmup,
            compile=compiled,
            amp=self.amp,
            channels_last=True,
            device="cuda",
            seed=self.s.opts.seed,
        )

    def accuracy_runs(self, *, autotune: bool) -> None:
        import torch

        from .steps.training import bs64_step, train_step

        s, amp, steps, data = self.s, self.amp, self.steps, self.data
        torch.backends.cudnn.benchmark = autotune
        extra = {"cudnn_benchmark": autotune}
        try:
            fp32 = train_step(
                s,
                data,
                "train_rn18_fp32_bs32",
                self.rn18(batch=32, steps=steps, extra={"tf32": self.tf32, **extra}),
                estimate=ESTIMATE["fp32"],
            )
            cfg = self.rn18(batch=32, steps=steps, amp=amp, extra=extra)
            train_step(s, data, f"train_rn18_{amp}_bs32", cfg, estimate=ESTIMATE["amp"])
            peak = (fp32.metrics.get("memory") or {}).get("peak_reserved_mib")
            free_mib = (torch.cuda.mem_get_info()[0] / 2**20) if torch.cuda.is_available() else 0
            cfg64 = self.rn18(batch=64, steps=steps, amp=amp, extra=extra)
            bs64_step(s, data, f"train_rn18_{amp}_bs64", cfg64, peak_mib=peak, free_mib=free_mib)
        finally:
            torch.backends.cudnn.benchmark = True

    def warm_autotuner(self, arch: str) -> None:
        """One step of the tuned eager run's model and batch with cuDNN autotuning on, so its
        algorithm search (3.0 s for ResNet-50 on the H200) is done while the compile child is
        still at work: the gated run then starts on the algorithms it would have picked itself
        (the cache is the process's, keyed by shape). Recorded as the fact cudnn_warmup; the
        tuned run's first_step_s then holds no autotuning."""
        import torch

        from .workloads.pytorch.train import SyntheticTrainer, free_device_memory

        if self.data is None or self.s.remaining() < ESTIMATE["rn50_eager"] + ESTIMATE["pipeline"]:
            return
        if self.lane is not None and self.lane.ready(arch):
            return  # nothing to overlap: the tuned run's own first step autotunes
        t0 = time.monotonic()
        torch.backends.cudnn.benchmark = True
        trainer = SyntheticTrainer(self.data, self.amp, arch=arch)
        trainer.step(TUNED_BATCH)
        torch.cuda.synchronize()
        del trainer
        free_device_memory()
        warm = {"arch": arch, "batch": TUNED_BATCH, "seconds": round(time.monotonic() - t0, 3)}
        self.s.rec.fact(cudnn_warmup=warm)

    def tuned_eager(self) -> None:
        # The tuned runs come before the batch ramp (the issue lists the ramp first): they carry the
        # throughput gates, so they must not be the ones the time budget squeezes out, and they
        # should not run on an allocator the ramp has just filled to the brim.
        from .steps.training import train_step

        s = self.s
        train_step(s, self.data, "tuned_rn18_eager", self.tuned("resnet18"), estimate=ESTIMATE["rn18_eager"])
        train_step(s, self.data, "tuned_rn50_eager", self.tuned("resnet50"), estimate=ESTIMATE["rn50_eager"])

    def tuned_compiled(self, arch: str) -> None:
        from .steps.training import train_step

        short = "rn50" if arch == "resnet50" else "rn18"
        estimate = ESTIMATE[f"{short}_compiled"]
        extra: dict[str, Any] = {}
        run = None  # the harness compiles and runs it itself (the full level; a failed child)
        if self.lane is not None:
            report = self.lane.wait(arch, max(5.0, self.s.remaining() - ESTIMATE[f"{short}_served"]))
            extra["precompile"] = report
            if "error" not in report and arch in self.lane.served:
                estimate, run = ESTIMATE[f"{short}_served"], self.lane.runner(arch, self.import_compiler)
            elif "error" not in report:
                estimate = ESTIMATE[f"{short}_warm_compile"]
        cfg = dataclasses.replace(self.tuned(arch, compiled=True), extra=extra)
        train_step(self.s, self.data, f"tuned_{short}_compiled", cfg, estimate=estimate, run=run)

    def import_compiler(self) -> None:
        """While a served child runs its timed loop (the harness only waits): torch.compile's
        modules imported for the harness's own compiled run (ResNet-50, after the wait for its
        child: every second there is a second of the certification). Recorded as a fact."""
        from .workloads.pytorch.train import import_compiler

        self.s.rec.fact(**import_compiler())

    def overhead(self) -> None:
        from .steps.overhead import telemetry_overhead_step

        telemetry_overhead_step(self.s, self.data, self.amp)

    def prepare_pipeline(self) -> None:
        """The input pipeline step's JPEG images, encoded now (CPU work) rather than in the step."""
        from .steps.pipeline import PIPELINE_IMAGES, prepare_images

        t0 = time.monotonic()
        try:
            self.pipeline_images = prepare_images(self.s, *PIPELINE_IMAGES)
        except Exception as e:  # the step prepares them itself, and fails there if it must
            log(f"input pipeline images not prepared early: {type(e).__name__}: {e}")
            return
        self.s.rec.fact(pipeline_images_prepared_s=round(time.monotonic() - t0, 3))

    def ramp_overhead_pipeline(self, *, overhead: bool) -> None:
        from .steps.pipeline import input_pipeline_step
        from .steps.ramp import batch_ramp_step

        reserve = ESTIMATE["pipeline"] + (ESTIMATE["overhead"] if overhead else 0)
        batch_ramp_step(self.s, self.data, self.amp, reserve=reserve)
        if overhead:
            self.overhead()
        cfg = dataclasses.replace(self.tuned("resnet50"), steps=200, warmup=10)
        input_pipeline_step(self.s, self.data, cfg, batches=8, prepared=self.pipeline_images)


def xla_plan(s: Session, fw: XlaFramework, *, mode: str) -> None:
    """The JAX and TensorFlow certification: the torch plan's steps with the framework's own
    workloads (fw: jax_steps.JAX, tf_steps.TENSORFLOW; NHWC, bf16 mixed precision). No
    torch.compile or cuDNN flags; the tuned runs are bs256 bf16 ones (jax.jit with donated buffers;
    Keras jit_compile=True), gated as tuned_rn18_<tag>, tuned_rn50_<tag> (TensorFlow's H200 anchors
    are UNCONFIRMED: warn only). The CPU path trains a narrow ResNet-18 in FP32 (and XLA-compiled
    where that is a different run: Keras) and runs the host-fed input pipeline."""
    for key, value in fw.env.items():
        os.environ.setdefault(key, value)
    if importlib.util.find_spec(fw.name) is None:
        missing_framework(s.rec, fw.name)
        return
    fw.cpu_check(s)
    if s.cuda:
        if not fw.gpu_smoke(s) or mode == "quick":
            if s.rec.last().status != "pass":
                s.rec.skip("benchmarks", "the CUDA smoke test failed: no GPU benchmark was run")
            return
    else:
        s.rec.skip("cuda_smoke", NO_GPU)
        if mode == "quick":
            return
    dev = fw.device("gpu" if s.cuda else "cpu")
    if s.cuda:
        _xla_gpu_runs(s, fw, dev)
    else:
        _xla_cpu_runs(s, fw, dev)
    s.rec.skip("multi_gpu", "the multi_gpu step runs for torch certifications only")


def _xla_cpu_runs(s: Session, fw: XlaFramework, dev: Any) -> None:
    from .steps.training import train_step
    from .steps.xla import dataset_step, input_pipeline_step

    run = fw.train_run(dev)
    steps = s.opts.steps or 60
    data = dataset_step(s, fw, 64, 1024, 256, dev)
    narrow = RunConfig(name="", width=16, batch=32, steps=steps, warmup=5, device="cpu", seed=s.opts.seed)
    # the FP32 run is the CPU certificate's proof of learning: never cut short of its steps
    learn = dataclasses.replace(narrow, min_steps=steps)
    train_step(s, data, "train_cpu_rn18w16_fp32_bs32", learn, estimate=10, run=run)
    if fw.compile:  # XLA is a run of its own only where the framework does not always compile
        xla = dataclasses.replace(narrow, compile=True)
        train_step(s, data, f"tuned_cpu_rn18w16_{fw.tuned_tag}", xla, estimate=15, run=run)
    input_pipeline_step(s, fw, data, dev, dataclasses.replace(narrow, steps=200), batches=6)
    s.rec.skip("telemetry_overhead", "no GPU: nothing for NVML to sample")


def _xla_gpu_runs(s: Session, fw: XlaFramework, dev: Any) -> None:
    from .steps.training import bs64_step, train_step
    from .steps.xla import batch_ramp_step, dataset_step, input_pipeline_step, telemetry_overhead_step

    run = fw.train_run(dev)
    steps = s.opts.steps or 200
    amp = "bf16"
    s.rec.fact(amp=amp, **fw.gpu_facts())
    data = dataset_step(s, fw, *GPU_DATA, dev)

    def rn(arch: str = "resnet18", **kw: Any) -> RunConfig:
        return RunConfig(name="", arch=arch, device="gpu", seed=s.opts.seed, **kw)

    fp32 = train_step(
        s, data, "train_rn18_fp32_bs32", rn(batch=32, steps=steps), estimate=ESTIMATE["fp32"], run=run
    )
    amp32 = rn(batch=32, steps=steps, amp=amp)
    train_step(s, data, f"train_rn18_{amp}_bs32", amp32, estimate=ESTIMATE["amp"], run=run)
    peak = (fp32.metrics.get("memory") or {}).get("peak_allocated_mib")
    free_mib = fw.free_mib(s, dev)
    cfg64 = rn(batch=64, steps=steps, amp=amp)
    bs64_step(s, data, f"train_rn18_{amp}_bs64", cfg64, peak_mib=peak, free_mib=free_mib, run=run)
    tuned: dict[str, RunConfig] = {}
    passed: dict[str, bool] = {}
    for arch, short in (("resnet18", "rn18"), ("resnet50", "rn50")):
        n, warmup = TUNED_RUNS[arch]
        tuned[arch] = rn(arch, batch=TUNED_BATCH, amp=amp, steps=n, warmup=warmup, compile=fw.compile)
        name = f"{short}_{fw.tuned_tag}"
        step = train_step(s, data, f"tuned_{name}", tuned[arch], estimate=ESTIMATE[name], run=run)
        passed[arch] = step.status == "pass"
    # Each ramp size compiles anew (seconds): start at a quarter of what batch 32's peak predicts,
    # and not below the tuned ResNet-18's batch when that run passed: the ramp's model and
    # precision at that size fit and are compiled already (jax.jit's cache; on an H100, 2026-12-05,
    # the ramp's batch 128 took 6.7 s, mostly its compile, and 256 then 0.2 s).
    start = 64
    if peak and free_mib > 0:
        start = max(64, 1 << max(6, int(math.log2(max(1.0, free_mib / peak * 32 / 4)))))
    if passed["resnet18"]:
        start = max(start, TUNED_BATCH)
    batch_ramp_step(s, fw, data, dev, amp, reserve=ESTIMATE["overhead"] + ESTIMATE["pipeline"], start=start)
    telemetry_overhead_step(s, fw, data, dev, amp)
    input_pipeline_step(s, fw, data, dev, tuned["resnet50"], batches=8)
