"""The JAX certification's CPU path with real jax: the workloads alone (harness_jax_cases.py, in a
child pytest), then the staged payload end to end with --framework jax, as an image runs it."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.harness.schema import validate_result
from envbuilder.harness.steps.pipeline import WORKER_SECONDS

if importlib.util.find_spec("jax") is None:  # the dev extra installs jax[cpu]; an image has its own
    pytest.skip("jax is not installed", allow_module_level=True)

# Real torch/jax training steps on the CPU: minutes on 2 cores. `make test` runs them, `make check`
# does not (pytest -m harness tests/unit runs them alone).
pytestmark = pytest.mark.harness

HARNESS = Path(__file__).resolve().parents[2] / "envbuilder" / "harness"
CASES = Path(__file__).with_name("harness_jax_cases.py")


def test_the_jax_workload_cases_pass_in_a_child_process(tmp_path: Path) -> None:
    # jax is imported only in the child: its threads never run in this process, which later forks.
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "harness", "-p", "no:cacheprovider"]
    cmd += ["--basetemp", str(tmp_path / "cases"), str(CASES)]
    proc = subprocess.run(cmd, cwd=CASES.parents[2], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"^7 passed", proc.stdout, re.M), proc.stdout[-2000:]


def test_payload_jax_cpu_certification_end_to_end(tmp_path: Path) -> None:
    stage = tmp_path / "opt"
    shutil.copytree(HARNESS, stage / "envbuilder_harness", ignore=shutil.ignore_patterns("__py*"))
    out = tmp_path / "result.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONPATH": str(stage),
    }
    cmd = [sys.executable, "-m", "envbuilder_harness", "--framework", "jax", "--cpu-only", "--out", str(out)]
    cmd += ["--budget-seconds", "900"]  # XLA compiles on a shared 2-core machine: no step may be skipped
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    result = lines[-1]
    assert validate_result(result) == [] and json.loads(out.read_text()) == result
    assert result["verdict"] == "certified-cpu-only" and result["options"]["framework"] == "jax"
    status = {s["name"]: s["status"] for s in result["steps"]}
    for name in ("host", "cpu_check", "dataset", "train_cpu_rn18w16_fp32_bs32", "input_pipeline"):
        assert status[name] == "pass", (name, result["steps"])
    assert status["cuda_smoke"] == "skip" and "torch" not in {s["name"] for s in result["steps"]}
    train = next(s for s in result["steps"] if s["name"] == "train_cpu_rn18w16_fp32_bs32")
    assert train["metrics"]["val_accuracy"] >= train["metrics"]["accuracy_required"]
    assert train["metrics"]["model"]["source"] == "built-in (jax)"
    pipe = next(s for s in result["steps"] if s["name"] == "input_pipeline")
    assert pipe["metrics"]["loader_only_img_s"] > 0 and pipe["metrics"]["bottleneck"]
    m = pipe["metrics"]  # the thread loader's rate from what each batch took its thread
    assert m["loader_rate_from"] == WORKER_SECONDS and m["worker_kind"] == "threads"
