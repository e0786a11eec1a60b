"""The harness with real (CPU) torch: dataset, models, training checks, the loader, and the
payload end to end in a child process, laid out as it is inside an image."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from envbuilder.harness.schema import validate_result
from envbuilder.harness.steps.pipeline import WORKER_SECONDS, loader_rate
from envbuilder.harness.steps.smoke import cpu_check
from envbuilder.harness.workloads.config import RunConfig
from envbuilder.harness.workloads.pytorch.data import NUM_CLASSES, make_dataset, normalize, render
from envbuilder.harness.workloads.pytorch.loader import (
    HAVE_PIL,
    PREFETCH_FACTOR,
    DecodeAugment,
    encode_split,
    make_loader,
    make_timed_loader,
    without_seconds,
)
from envbuilder.harness.workloads.pytorch.models import build_model, builtin_resnet, load_weights
from envbuilder.harness.workloads.pytorch.train import train_run

# Real torch/jax training steps on the CPU: minutes on 2 cores. `make test` runs them, `make check`
# does not (pytest -m harness tests/unit runs them alone).
pytestmark = pytest.mark.harness

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "envbuilder" / "harness"


# ---------------------------------------------------------------- synthetic dataset
def test_dataset_is_deterministic_and_balanced() -> None:
    a, b = render(40, 32, seed=5), render(40, 32, seed=5)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    c = render(40, 32, seed=6)
    assert not torch.equal(a.images, c.images)
    assert a.images.dtype == torch.uint8 and a.images.shape == (40, 3, 32, 32)
    assert torch.bincount(a.labels, minlength=NUM_CLASSES).tolist() == [8] * NUM_CLASSES
    x = normalize(a.images)
    assert x.dtype == torch.float32 and float(x.min()) >= -2.01 and float(x.max()) <= 2.01


def test_splits_differ() -> None:
    d = make_dataset(16, 50, 20, seed=3)
    assert not torch.equal(d.train.images[:20], d.val.images)
    assert not torch.equal(d.val.images, d.test.images)
    assert d.describe()["classes"][0] == "disk"


def test_dataset_is_learnable_and_run_metrics() -> None:
    """The CPU path's own configuration: loss falls, validation accuracy far above chance."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # oversubscribed cores (parallel jobs) make OpenMP spin for ages
    try:
        data = make_dataset(64, 1024, 256, seed=1234)
        cfg = RunConfig(name="t", width=16, batch=32, steps=60, warmup=5, device="cpu")
        metrics, problems = train_run(cfg, data, loss_drop_min=0.2, accuracy_margin=0.25)
    finally:
        torch.set_num_threads(threads)
    assert problems == []
    assert metrics["val_accuracy"] >= 0.45 and metrics["test_accuracy"] >= 0.45
    assert metrics["loss_last"] < metrics["loss_first"]
    assert metrics["steps_timed"] == 55 and metrics["images_per_s"] > 0
    st = metrics["step_time"]
    assert 0 < st["min_ms"] <= st["p50_ms"] <= st["p95_ms"] <= st["max_ms"]
    assert metrics["config"]["precision"] == "fp32" and metrics["model"]["source"] == "built-in"
    # where the run's time went besides the timed loop; an eager run counts no graphs
    assert metrics["setup_s"] > 0 and metrics["warmup_s"] > 0 and metrics["evaluate_s"] > 0
    assert "graphs_compiled_after_first_step" not in metrics


def test_the_compiler_import_is_timed() -> None:
    from envbuilder.harness.workloads.pytorch.train import import_compiler

    res = import_compiler()
    assert res.get("compiler_import_s", -1) >= 0, res
    assert "torch._dynamo" in sys.modules and "torch._inductor.compile_fx" in sys.modules


def test_divergence_is_caught() -> None:
    data = make_dataset(32, 256, 64, seed=1)
    cfg = RunConfig(name="t", width=8, batch=16, steps=10, warmup=2, lr=1e30, device="cpu")
    metrics, problems = train_run(cfg, data, loss_drop_min=0.2, accuracy_margin=0.25)
    assert any("non-finite loss" in p for p in problems)
    assert "val_accuracy" not in metrics  # no accuracy claimed for a diverged run


def test_no_learning_is_caught() -> None:
    data = make_dataset(32, 256, 64, seed=1)
    cfg = RunConfig(name="t", width=8, batch=16, steps=12, warmup=2, lr=1e-9, device="cpu")
    _, problems = train_run(cfg, data, loss_drop_min=0.2, accuracy_margin=0.25)
    assert any("did not fall" in p for p in problems)


def test_a_run_the_time_cap_stopped_says_so_and_min_steps_holds_it_off() -> None:
    """A cap of 0 s stops the timed loop after its first step: the run is reported truncated with
    its step count, not as one that did not learn; with min_steps the cap waits for them all."""
    data = make_dataset(32, 256, 64, seed=1)
    cfg = RunConfig(name="t", width=8, batch=16, steps=12, warmup=2, lr=1e-9, device="cpu", max_seconds=0)
    metrics, problems = train_run(cfg, data, loss_drop_min=0.2, accuracy_margin=0.25)
    assert metrics["truncated"] is True and metrics["steps_done"] == 3
    assert len(problems) == 1, problems
    assert problems[0].startswith("truncated: the time cap stopped the run after 3 of 12 steps")
    held = dataclasses.replace(cfg, min_steps=12)
    metrics, problems = train_run(held, data, loss_drop_min=0.2, accuracy_margin=0.25)
    assert metrics["truncated"] is False and metrics["steps_done"] == 12
    assert any("did not fall" in p for p in problems)  # a whole run is judged on its learning


# ---------------------------------------------------------------- models
@pytest.mark.parametrize(("arch", "params"), [("resnet18", 11_689_512), ("resnet50", 25_557_032)])
def test_builtin_resnets_match_torchvision_sizes(arch: str, params: int) -> None:
    model = builtin_resnet(arch, 1000)
    assert sum(p.numel() for p in model.parameters()) == params


def test_build_model_reports_source_and_weights_drop_mismatched_head(tmp_path: Path) -> None:
    model, info = build_model("resnet18", NUM_CLASSES, width=16)
    assert info["source"] == "built-in" and info["parameters"] > 0
    donor = builtin_resnet("resnet18", 1000, width=16)
    path = tmp_path / "w.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in donor.state_dict().items()}}, path)
    res = load_weights(model, str(path))
    assert sorted(res["dropped_shape_mismatch"]) == ["fc.bias", "fc.weight"]
    assert torch.equal(model.state_dict()["conv1.weight"], donor.state_dict()["conv1.weight"])
    bad = tmp_path / "bad.pt"
    torch.save({"nothing": torch.zeros(1)}, bad)
    with pytest.raises(ValueError, match="no tensor matched"):
        load_weights(model, str(bad))


def test_cpu_check() -> None:
    import torch

    before = torch.get_num_threads()
    m = cpu_check(size=32, batch=4)
    assert m["logits_shape"] == [4, NUM_CLASSES] and m["loss"] > 0
    # One intra-op thread during the check (it must not starve the compile lane), restored after.
    assert m["threads"] == 1 and torch.get_num_threads() == before


# ---------------------------------------------------------------- the loader
def test_loader_decodes_and_augments_with_workers() -> None:
    split = render(24, 48, seed=2)
    blobs, labels, codec = encode_split(split)
    assert codec == ("jpeg" if HAVE_PIL else "raw")
    raw_hw = None if codec == "jpeg" else (48, 48)
    ds = DecodeAugment(blobs, labels, 32, train=True, raw_hw=raw_hw)
    it = iter(make_loader(ds, 8, 2, pin=False))
    for _ in range(3):
        x, y = next(it)
        assert x.shape == (8, 3, 32, 32) and x.dtype == torch.uint8 and y.shape == (8,)
    val = DecodeAugment(blobs, labels, 32, train=False, raw_hw=raw_hw)
    assert sum(len(b[1]) for b in make_loader(val, 8, 0, pin=False, infinite=False)) == 24


ITEM_S = 0.01  # _SlowItems: the least time one item takes a worker


class _SlowItems(DecodeAugment):
    """A worker takes at least ITEM_S per item, whatever the machine: two workers can make at
    most 2 / ITEM_S items per second."""

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        time.sleep(ITEM_S)
        return super().__getitem__(i)


def test_the_loader_rate_is_the_workers_not_the_rate_its_queue_empties_at() -> None:
    split = render(16, 48, seed=2)
    blobs, labels, codec = encode_split(split)
    raw_hw = None if codec == "jpeg" else (48, 48)
    ds = _SlowItems(blobs, labels, 32, train=True, raw_hw=raw_hw)
    seconds: list[float] = []
    it = without_seconds(iter(make_timed_loader(ds, 8, 2, pin=False)), seconds)
    x, y = next(it)
    assert x.shape == (8, 3, 32, 32) and x.dtype == torch.uint8 and y.dtype == torch.long
    time.sleep(1.5)  # meanwhile the workers fill the queue: 2 x PREFETCH_FACTOR batches
    t0 = time.perf_counter()
    for _ in range(2 * PREFETCH_FACTOR - 1):
        next(it)
    drained = 8 * (2 * PREFETCH_FACTOR - 1) / (time.perf_counter() - t0)
    ceiling = 2 / ITEM_S
    assert len(seconds) == 2 * PREFETCH_FACTOR and min(seconds) >= 8 * ITEM_S
    # what the step measured before: the queue, many times faster than two workers can be
    assert drained > 2 * ceiling
    assert 0 < loader_rate(seconds, 8, 2) <= ceiling


def test_real_data_run(tmp_path: Path) -> None:
    from envbuilder.harness.workloads.pytorch.feed import real_data_run

    if HAVE_PIL:
        image = importlib.import_module("PIL.Image")  # optional: CI may not have pillow

        for sub, n in (("train", 24), ("val", 10)):
            split = render(n, 48, seed=len(sub))
            for i, (img, lab) in enumerate(zip(split.images, split.labels, strict=True)):
                d = tmp_path / sub / f"class{int(lab)}"
                d.mkdir(parents=True, exist_ok=True)
                hwc = img.permute(1, 2, 0).contiguous()
                image.frombytes("RGB", (48, 48), bytes(hwc.flatten().tolist())).save(d / f"{i}.png")
    else:
        for sub in ("train", "val"):
            (tmp_path / sub / "a").mkdir(parents=True)
            (tmp_path / sub / "a" / "x.jpg").write_bytes(b"")
    metrics, problems = real_data_run(
        tmp_path,
        arch="resnet18",
        batch=8,
        size=32,
        steps=12,
        amp=None,
        device="cpu",
        workers=0,
        weights=None,
        loss_drop_min=0.0,
    )
    if HAVE_PIL:
        assert metrics["classes"] == [f"class{i}" for i in range(NUM_CLASSES)]
        assert metrics["val_images"] == 10 and metrics["images_per_s"] > 0
    else:
        assert problems and "PIL" in problems[0]


# ---------------------------------------------------------------- the payload end to end
def _stage(tmp_path: Path) -> Path:
    """The payload as an image holds it: a top-level package envbuilder_harness, no envbuilder."""
    stage = tmp_path / "opt"
    shutil.copytree(HARNESS, stage / "envbuilder_harness", ignore=shutil.ignore_patterns("__py*"))
    return stage


def _run(args: list[str], cwd: Path, env_path: str | None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "CUDA_VISIBLE_DEVICES": ""}
    if env_path:
        env["PYTHONPATH"] = env_path
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_payload_cpu_certification_end_to_end(tmp_path: Path) -> None:
    stage = _stage(tmp_path)
    out = tmp_path / "res" / "result.json"
    # A budget no loaded machine exhausts: this test is about the path, not the budget's skips.
    argv = ["-m", "envbuilder_harness", "--cpu-only", "--budget-seconds", "600", "--out", str(out)]
    proc = _run(argv, tmp_path, str(stage))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = _lines(proc.stdout)  # every stdout line is JSON: no prose leaks into stdout
    result = lines[-1]
    assert result["kind"] == "result" and all(ln["kind"] == "step" for ln in lines[:-1])
    assert validate_result(result) == []
    assert json.loads(out.read_text()) == result
    assert result["verdict"] == "certified-cpu-only"
    assert "NOT a GPU certification" in result["verdict_reason"]
    assert result["mode"] == "cpu" and result["gpu_path"] is False
    status = {s["name"]: s["status"] for s in result["steps"]}
    for name in ("host", "cpu_check", "dataset", "train_cpu_rn18w16_fp32_bs32", "input_pipeline"):
        assert status[name] == "pass", (name, result["steps"])
    assert status["cuda_smoke"] == "skip"
    train = next(s for s in result["steps"] if s["name"] == "train_cpu_rn18w16_fp32_bs32")
    assert train["metrics"]["val_accuracy"] >= train["metrics"]["accuracy_required"]
    assert train["metrics"]["steps_done"] == 60 and train["metrics"]["truncated"] is False
    assert result["facts"]["omp_wait_policy"] == "PASSIVE"  # the harness set it: not in _run's env
    pipe = next(s for s in result["steps"] if s["name"] == "input_pipeline")
    m = pipe["metrics"]
    assert m["bottleneck"] and m["loader_rate_from"] == WORKER_SECONDS and m["loader_only_img_s"] > 0
    assert len(m["worker_batch_s"]) == 9 and min(m["worker_batch_s"]) > 0  # the first, 2 + 6 fed (CPU)
    assert result["thresholds"]["source"] == "built-in defaults"
    assert result["budget_seconds"] == 600 and result["wall_seconds"] > 0
    # the framework's packages and their bytecode (this environment's torch carries it: no warning)
    inv = next(s for s in result["steps"] if s["name"] == "kernel_inventory")
    torch_bc = inv["metrics"]["bytecode"]["packages"]["torch"]
    assert torch_bc["modules"] > 1000 and torch_bc["compiled"] > 0.5 * torch_bc["modules"]
    assert not any("bytecode" in w for w in inv["warnings"])


def test_payload_quick_by_file_path_with_thresholds(tmp_path: Path) -> None:
    """run.py works without PYTHONPATH; a thresholds file is read; --quick stops after smoke."""
    stage = _stage(tmp_path)
    thr = tmp_path / "t.json"
    thr.write_text(json.dumps({"source_path": "t.json", "defaults": {"loss_drop_min": 0.3}}))
    proc = _run(
        [str(stage / "envbuilder_harness" / "run.py"), "--quick", "--cpu-only", "--thresholds", str(thr)],
        tmp_path,
        None,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = _lines(proc.stdout)[-1]
    assert validate_result(result) == []
    assert result["mode"] == "quick" and result["verdict"] == "certified-cpu-only"
    assert [s["name"] for s in result["steps"]][:3] == ["host", "kernel_inventory", "cpu_check"]
    assert "dataset" not in {s["name"] for s in result["steps"]}
    assert result["thresholds"]["loss_drop_min"] == 0.3 and result["thresholds"]["source"] == "t.json"


def test_payload_refuses_a_bad_thresholds_file(tmp_path: Path) -> None:
    stage = _stage(tmp_path)
    bad = tmp_path / "t.json"
    bad.write_text("[1, 2")
    proc = _run(["-m", "envbuilder_harness", "--quick", "--thresholds", str(bad)], tmp_path, str(stage))
    assert proc.returncode == 2 and "error" in proc.stderr


def test_payload_watchdog_leaves_a_failed_result(tmp_path: Path) -> None:
    stage = _stage(tmp_path)
    proc = _run(["-m", "envbuilder_harness", "--cpu-only", "--watchdog-seconds", "1"], tmp_path, str(stage))
    assert proc.returncode == 3, proc.stderr[-2000:]
    result = _lines(proc.stdout)[-1]
    assert validate_result(result) == []
    assert result["verdict"] == "failed"
    assert result["steps"][-1]["name"] == "watchdog" and result["steps"][-1]["status"] == "fail"


# ---------------------------------------------------------------- the compile lane's hold
def test_held_lane_children_wait_for_the_go_and_leave_nothing_behind() -> None:
    # Held children import torch, then wait: nothing touches a GPU before release(). On this
    # CPU-only machine the released child's compile fails on "cuda" and reports it as JSON.
    import time

    from envbuilder.harness.steps.lane import CompileLane

    runs = {"resnet18": (6, 2)}
    lane = CompileLane(runs, batch=8, amp="auto", seed=1, data=(32, 64, 16), hold=True)
    unused = CompileLane(runs, batch=8, amp="auto", seed=1, data=(32, 64, 16), hold=True)
    try:
        time.sleep(1.0)
        assert lane.procs["resnet18"].poll() is None  # held (or still importing), not finished
        lane.release()
        report = lane.wait("resnet18", 240)
        assert "error" in report and report["arch"] == "resnet18"
        assert report["held_import_s"] > 0 and report["held_s"] >= report["held_import_s"]
        # when it imported and got the go, on the lane's clock (seconds after the lane started)
        line = report["timeline_s"]
        assert 0 <= line["main"] <= line["imported"] <= line["go"] <= report["done_after_s"]
    finally:
        lane.close()
        unused.close()  # never released: killed
    assert all(p.poll() is not None for p in (*lane.procs.values(), *unused.procs.values()))


def test_the_lane_compiles_into_the_inductor_cache_the_container_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # certify points TORCHINDUCTOR_CACHE_DIR into the image's JIT cache volume (certify/jit_cache.py):
    # the children and the harness's own compile use it; without one, a new folder for this run
    from envbuilder.harness.steps.lane import CompileLane

    runs = {"resnet18": (6, 2)}
    given = tmp_path / "volume" / "torchinductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(given))
    lane = CompileLane(runs, batch=8, amp="auto", seed=1, data=(32, 64, 16), hold=True)
    lane.close()
    assert lane.cache == given
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    fresh = CompileLane(runs, batch=8, amp="auto", seed=1, data=(32, 64, 16), hold=True)
    fresh.close()
    assert fresh.cache != given and fresh.cache.name.startswith("envbuilder-inductor-")
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(fresh.cache)  # the harness's own compile's


def test_the_lane_child_runs_the_timed_loop_it_compiled_and_refuses_another_run() -> None:
    # The protocol end to end on the CPU: a served child prepares (model, data, torch.compile's
    # first step; the eager backend keeps it to seconds here), says ready, refuses a run it did not
    # prepare, runs the harness's order in the same process and exits; a cache-only child says
    # ready and exits by itself, and runs nothing.
    from envbuilder.harness.steps.lane import CompileLane

    runs = {"resnet18": (6, 2), "resnet50": (4, 1)}
    lane = CompileLane(
        runs,
        batch=4,
        amp="fp32",
        seed=3,
        data=(32, 48, 8),
        device="cpu",
        backend="eager",
        width=8,
        served=("resnet18",),
    )
    data = make_dataset(32, 48, 8, seed=3)

    def cfg(arch: str, steps: int, warmup: int) -> RunConfig:
        return RunConfig(
            name=f"tuned_{arch}_compiled",
            arch=arch,
            width=8,
            batch=4,
            steps=steps,
            warmup=warmup,
            channels_last=True,
            compile=True,
            device="cpu",
            seed=3,
        )

    try:
        report = lane.wait("resnet18", 240)
        assert report.get("ready") is True and report["compiled"] is True, report
        assert report["compile_s"] > 0 and lane.ready("resnet18")
        # when each part of the child's work was done, on the lane's clock; torch.compile's phases
        line = report["timeline_s"]
        assert 0 <= line["main"] <= line["go"] <= line["data"] <= line["compile_start"] < line["compile_end"]
        assert line["compile_end"] <= line["ready"] <= report["done_after_s"] and "cuda" not in line
        assert line["compile_end"] - line["compile_start"] == pytest.approx(report["compile_s"], abs=0.01)
        assert 0 < report["setup_s"] <= line["compile_start"] - line["data"] + 0.01  # model, torch.compile
        assert isinstance(report["compile_phases_s"], dict) and report["compile_threads"] >= 1
        assert report["asked_after_s"] >= 0
        with pytest.raises(RuntimeError, match="prepared another configuration"):
            lane.run(cfg("resnet18", 7, 2), data, loss_drop_min=-1e9, accuracy_margin=-1.0)
        # the harness's own work while the child runs (it has its order and is still there)
        meanwhile: list[int | None] = []
        metrics, problems = lane.runner("resnet18", lambda: meanwhile.append(lane.procs["resnet18"].poll()))(
            cfg("resnet18", 6, 2), data, loss_drop_min=-1e9, accuracy_margin=-1.0
        )
        assert meanwhile == [None]
        assert metrics["steps_done"] == 6 and metrics["steps_timed"] == 4 and metrics["compiled"]
        # the steps after the first reuse the graph the child compiled: no recompile
        assert metrics["graphs_compiled_after_first_step"] == 0
        assert "compile lane child" in metrics["ran_in"] and metrics["config"]["image_size"] == 32
        assert isinstance(problems, list)
        assert lane.procs["resnet18"].poll() == 0  # it exited after its run (exit_now): memory free
        assert lane.wait("resnet50", 240).get("ready") is True
        assert lane.procs["resnet50"].wait(timeout=60) == 0  # cache only: gone once ready
        with pytest.raises(RuntimeError, match="only fills the Inductor cache"):
            lane.run(cfg("resnet50", 4, 1), data, loss_drop_min=-1e9, accuracy_margin=-1.0)
    finally:
        lane.close()
    assert all(p.poll() is not None for p in lane.procs.values())
