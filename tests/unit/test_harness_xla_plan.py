"""The XLA plan (plan.py xla_plan) over each real adapter's rules (name, tuned tag, compile flag)
with the framework calls faked: the GPU path's order, step names, run configurations, ramp start
and facts, which only an H200 runs for real, and the CPU path that CI runs for real."""

from __future__ import annotations

import importlib.util
import io
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from fake_host import FakeGpu, FakeNvml

from envbuilder.harness import plan
from envbuilder.harness.record import Recorder, Step
from envbuilder.harness.result import decide_verdict
from envbuilder.harness.session import Budget, Options, Session
from envbuilder.harness.steps.jax_steps import JAX
from envbuilder.harness.steps.pipeline import WORKER_SECONDS
from envbuilder.harness.steps.tf_steps import TENSORFLOW
from envbuilder.harness.steps.training import TrainRun
from envbuilder.harness.steps.xla import Loader, Loop, XlaFramework
from envbuilder.harness.telemetry import Sampler
from envbuilder.harness.thresholds import select_thresholds
from envbuilder.harness.workloads.config import RunConfig
from envbuilder.harness.workloads.numpy_data import Dataset, Split, make_dataset

HARNESS = Path(plan.__file__).resolve().parent
OOM_ABOVE = 3000  # the fake device runs out of memory above this batch


class FakeLoop:
    def __init__(self, batch: int) -> None:
        self.batch = batch

    def step(self, split: Split, i: int, lr: float) -> Any:
        if self.batch > OOM_ABOVE:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate")
        return float(i)


class FakeLoader:
    workers = 2
    description: Mapping[str, Any] = {"codec": "fake", "workers": 2, "worker_kind": "threads", "prefetch": 4}

    def __init__(self, data: Dataset) -> None:
        self.data, self.started, self.closed = data, False, False
        self.batch_seconds = [0.25, 1.0, 0.5]  # what its batches took its two threads

    def start(self) -> None:
        self.started = True

    def host_batch(self) -> Any:
        return self.data.train.images

    def device_batch(self) -> Split:
        return self.data.train

    def close(self) -> None:
        self.closed = True


class FakeFramework:
    """`real`'s rules, the framework's calls faked and recorded."""

    def __init__(self, real: XlaFramework, *, smoke_ok: bool = True) -> None:
        self.real, self.smoke_ok = real, smoke_ok
        self.runs: list[RunConfig] = []
        self.trainers: list[tuple[RunConfig, int | None]] = []
        self.datasets: list[tuple[int, int, int, Any]] = []
        self.loaders: list[FakeLoader] = []

    @property
    def name(self) -> str:
        return self.real.name

    @property
    def env(self) -> Mapping[str, str]:
        return self.real.env

    @property
    def tuned_tag(self) -> str:
        return self.real.tuned_tag

    @property
    def compile(self) -> bool:
        return self.real.compile

    def cpu_check(self, s: Session) -> None:
        with s.rec.step("cpu_check"):
            pass

    def gpu_smoke(self, s: Session) -> bool:
        with s.rec.step("cuda_smoke"):
            if not self.smoke_ok:
                raise RuntimeError("no GPU")
        return self.smoke_ok

    def device(self, platform: str) -> str:
        return f"fake:{platform}"

    def train_run(self, dev: Any) -> TrainRun:
        assert dev == "fake:gpu" or dev == "fake:cpu"

        def run(
            cfg: RunConfig, data: Dataset, *, loss_drop_min: float, accuracy_margin: float
        ) -> tuple[dict[str, Any], list[str]]:
            self.runs.append(cfg)
            return {"memory": {"peak_allocated_mib": 500.0}, "images_per_s": 1.0}, []

        return run

    def make_dataset(self, s: Session, size: int, n_train: int, n_eval: int, dev: Any) -> Dataset:
        self.datasets.append((size, n_train, n_eval, dev))
        return make_dataset(8, 10, 5, seed=s.opts.seed)

    def gpu_facts(self) -> dict[str, Any]:
        return {"allocator": "fake"}

    def free_mib(self, s: Session, dev: Any) -> float:
        return 80_000.0

    def trainer(self, cfg: RunConfig, dev: Any, size: int, stream: int | None = None) -> Loop:
        self.trainers.append((cfg, stream))
        return FakeLoop(cfg.batch)

    def wait(self, loss: Any) -> None:
        assert loss is not None

    def memory(self, dev: Any) -> dict[str, float]:
        return {"peak_allocated_mib": 100.0}

    def reset_peak(self, dev: Any) -> None:
        pass

    def loader(self, s: Session, data: Dataset, cfg: RunConfig, dev: Any) -> Loader:
        self.loaders.append(FakeLoader(data))
        return self.loaders[-1]


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """find_spec finds both frameworks; the environment variables the plan sets are undone;
    Session.free (a gc.collect for these frameworks: 0.4 s each in a test process) is a no-op."""
    real = importlib.util.find_spec
    names = {JAX.name, TENSORFLOW.name}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name in names else real(name, *a)
    )
    for key in (*JAX.env, *TENSORFLOW.env):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(Session, "free", lambda self: None)
    yield


def session(framework: str, *, gpu: bool) -> Session:
    sampler = Sampler(FakeNvml([FakeGpu()]), FakeGpu(), interval=0.001) if gpu else None
    return Session(
        opts=Options(framework=framework),
        rec=Recorder(io.StringIO()),
        budget=Budget(10_000.0, time.monotonic()),
        thresholds=select_thresholds(None, "NVIDIA H200"),
        device="cuda" if gpu else "cpu",
        sampler=sampler,
    )


def statuses(s: Session) -> list[tuple[str, str]]:
    return [(st.name, st.status) for st in s.rec.steps]


@pytest.mark.parametrize("real", [JAX, TENSORFLOW], ids=["jax", "tensorflow"])
def test_the_gpu_sequence(real: XlaFramework, installed: None) -> None:
    fw = FakeFramework(real)
    s = session(real.name, gpu=True)
    plan.xla_plan(s, fw, mode="full")
    tag = real.tuned_tag
    assert [n for n, _ in statuses(s)] == [
        "cpu_check",
        "cuda_smoke",
        "dataset",
        "train_rn18_fp32_bs32",
        "train_rn18_bf16_bs32",
        "train_rn18_bf16_bs64",
        f"tuned_rn18_{tag}",
        f"tuned_rn50_{tag}",
        "batch_ramp",
        "telemetry_overhead",  # judged on fake timings: ran, whichever way it went
        "input_pipeline",
        "multi_gpu",
    ]
    status = dict(statuses(s))
    assert {k for k, v in status.items() if v != "pass"} <= {"telemetry_overhead", "multi_gpu"}
    assert status["multi_gpu"] == "skip"
    assert fw.datasets == [(*plan.GPU_DATA, "fake:gpu")]
    runs = [(c.name, c.arch, c.batch, c.amp, c.steps, c.warmup, c.compile) for c in fw.runs]
    xla = real.compile
    assert runs == [
        ("train_rn18_fp32_bs32", "resnet18", 32, None, 200, RunConfig.warmup, False),
        ("train_rn18_bf16_bs32", "resnet18", 32, "bf16", 200, RunConfig.warmup, False),
        ("train_rn18_bf16_bs64", "resnet18", 64, "bf16", 200, RunConfig.warmup, False),
        (f"tuned_rn18_{tag}", "resnet18", 256, "bf16", 70, 10, xla),
        (f"tuned_rn50_{tag}", "resnet50", 256, "bf16", 48, 8, xla),
    ]
    assert all(c.device == "gpu" for c in fw.runs)
    # the ramp starts at a quarter of what batch 32's peak predicts (80,000 MiB free, 500 at bs32)
    ramp = next(st for st in s.rec.steps if st.name == "batch_ramp")
    assert ramp.metrics["start_batch"] == 1024 and ramp.metrics["precision"] == "bf16"
    assert 2048 <= s.rec.facts["largest_batch"] <= OOM_ABOVE
    ramp_cfgs = [c for c, _ in fw.trainers if c.name == "ramp"]
    assert ramp_cfgs and all(c.compile is xla and c.amp == "bf16" for c in ramp_cfgs)
    overhead = [(c, k) for c, k in fw.trainers if c.name == "overhead"]
    assert [(c.batch, c.compile, k) for c, k in overhead] == [(256, xla, 3)]  # the tuned runs' batch
    assert next(st for st in s.rec.steps if st.name == "telemetry_overhead").metrics["window_steps"] >= 150
    # the input pipeline feeds the tuned ResNet-50's configuration, from a started and closed loader
    piped = [(c, k) for c, k in fw.trainers if c.arch == "resnet50"]
    assert len(piped) == 1 and piped[0][0].batch == 256 and piped[0][1] == 5
    assert fw.loaders[0].started and fw.loaders[0].closed
    pipe = next(st for st in s.rec.steps if st.name == "input_pipeline").metrics
    assert pipe["codec"] == "fake" and pipe["model"] == "resnet50" and pipe["bottleneck"]
    # the loader's rate: two workers, a batch of 256 in the median 0.5 s each
    assert pipe["loader_rate_from"] == WORKER_SECONDS and pipe["loader_only_img_s"] == pytest.approx(1024)
    assert s.rec.facts["amp"] == "bf16" and s.rec.facts["allocator"] == "fake"


@pytest.mark.parametrize("tuned_ok", [True, False], ids=["tuned-passed", "tuned-failed"])
def test_the_ramp_starts_at_the_tuned_batch_that_ran_below_it(tuned_ok: bool, installed: None) -> None:
    # 4,000 MiB free at 500 MiB for batch 32 predicts 64: below the tuned runs' batch (256), which
    # fits and is compiled when the tuned ResNet-18 passed; a failed one proves nothing of the kind
    class SmallGpu(FakeFramework):
        def free_mib(self, s: Session, dev: Any) -> float:
            return 4_000.0

        def train_run(self, dev: Any) -> TrainRun:
            run = super().train_run(dev)

            def maybe_failing(cfg: RunConfig, data: Dataset, **kw: float) -> tuple[dict[str, Any], list[str]]:
                metrics, problems = run(cfg, data, **kw)
                if cfg.name == f"tuned_rn18_{JAX.tuned_tag}" and not tuned_ok:
                    problems = ["loss did not drop"]
                return metrics, problems

            return maybe_failing

    fw = SmallGpu(JAX)
    s = session("jax", gpu=True)
    plan.xla_plan(s, fw, mode="full")
    assert dict(statuses(s))[f"tuned_rn18_{JAX.tuned_tag}"] == ("pass" if tuned_ok else "fail")
    ramp = next(st for st in s.rec.steps if st.name == "batch_ramp")
    assert ramp.metrics["start_batch"] == (plan.TUNED_BATCH if tuned_ok else 64)
    assert next(c.batch for c, _ in fw.trainers if c.name == "ramp") == ramp.metrics["start_batch"]


def test_the_overhead_batch_is_the_tuned_runs_batch() -> None:
    # what spares JAX the A/B's own compile: the size the tuned ResNet-18 compiled
    from envbuilder.harness.steps.overhead import OVERHEAD_BATCH

    assert OVERHEAD_BATCH == plan.TUNED_BATCH


@pytest.mark.parametrize("real", [JAX, TENSORFLOW], ids=["jax", "tensorflow"])
def test_the_cpu_sequence(real: XlaFramework, installed: None) -> None:
    fw = FakeFramework(real)
    s = session(real.name, gpu=False)
    plan.xla_plan(s, fw, mode="cpu")
    tuned = [(f"tuned_cpu_rn18w16_{real.tuned_tag}", "pass")] if real.compile else []
    assert statuses(s) == [
        ("cpu_check", "pass"),
        ("cuda_smoke", "skip"),
        ("dataset", "pass"),
        ("train_cpu_rn18w16_fp32_bs32", "pass"),
        *tuned,
        ("input_pipeline", "pass"),
        ("telemetry_overhead", "skip"),
        ("multi_gpu", "skip"),
    ]
    assert s.rec.steps[1].reason == plan.NO_GPU
    learn = fw.runs[0]
    # the CPU certificate's proof of learning is never cut short of its steps
    assert (learn.width, learn.batch, learn.steps, learn.min_steps, learn.compile) == (16, 32, 60, 60, False)
    if real.compile:
        assert fw.runs[1].compile and fw.runs[1].min_steps == 0
    assert fw.datasets == [(64, 1024, 256, "fake:cpu")]
    assert [(c.width, c.batch, c.steps, k) for c, k in fw.trainers] == [(16, 32, 200, 5)]


def test_a_failed_smoke_stops_before_the_benchmarks(installed: None) -> None:
    fw = FakeFramework(JAX, smoke_ok=False)
    s = session("jax", gpu=True)
    plan.xla_plan(s, fw, mode="full")
    assert statuses(s) == [("cpu_check", "pass"), ("cuda_smoke", "fail"), ("benchmarks", "skip")]
    assert fw.runs == [] and fw.datasets == []


def test_the_framework_certified_for_but_not_installed_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # D2: a skip here let an image with its framework deleted pass on the steps that need none.
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    s = session("tensorflow", gpu=True)
    plan.xla_plan(s, FakeFramework(TENSORFLOW), mode="full")
    got = [(st.name, st.status, st.reason) for st in s.rec.steps]
    assert got[0][:2] == ("cpu_check", "fail") and "tensorflow is not installed, but this" in got[0][2]
    assert got[1:] == [("cuda_smoke", "skip", "tensorflow is not installed")]
    verdict, reason = decide_verdict(s.rec.steps, [], mode="cpu", gpu_path=False)
    assert (verdict, reason) == ("failed", "failed steps: cpu_check")


@pytest.mark.parametrize("gpu", [False, True], ids=["cpu", "gpu"])
def test_torch_certified_for_but_not_installed_fails(gpu: bool) -> None:
    s = session("torch", gpu=gpu)
    s.rec.emit(Step(name="host"))
    s.rec.emit(Step(name="kernel_inventory"))  # passes without any framework: it cannot carry a verdict
    plan.run_path(s, mode="quick", have_torch=False)
    assert statuses(s)[2:4] == [("cpu_check", "fail"), ("cuda_smoke", "skip")]
    assert "torch is not installed, but this certification is for torch" in s.rec.steps[2].reason
    assert decide_verdict(s.rec.steps, [], mode="quick", gpu_path=gpu)[0] == "failed"


def test_each_framework_name_selects_its_adapter() -> None:
    assert plan.XLA_FRAMEWORKS == {"jax": JAX, "tensorflow": TENSORFLOW}
    assert (JAX.tuned_tag, JAX.compile, TENSORFLOW.tuned_tag, TENSORFLOW.compile) == (
        "jit",
        False,
        "xla",
        True,
    )


def test_the_payload_loads_without_numpy_or_a_framework(tmp_path: Path) -> None:
    # The plan imports both adapters at start-up: what they need at import time must be stdlib, or a
    # torch image without numpy (torch does not require it) could not even start the harness.
    stage = tmp_path / "opt"
    shutil.copytree(HARNESS, stage / "envbuilder_harness", ignore=shutil.ignore_patterns("__py*"))
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('numpy', 'torch', 'jax', 'jaxlib', 'tensorflow', 'keras'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import envbuilder_harness.cli, envbuilder_harness.plan\n"
        "print(sorted(envbuilder_harness.plan.XLA_FRAMEWORKS))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(stage)}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "['jax', 'tensorflow']"
