"""benchmarks/gpu/check_faults.sh (issue 27's H200 proof of `envbuilder check`) on this machine's
CPU path: the script runs (LOCAL=1: this checkout, the system's Docker; GPU_ACCESS=none) against the
bundled CPU image certified here, and its summary says what each case gave: the certified image
passes twice, the uncertified one fails with exit 2, the GPU-only case is skipped with its reason,
and the driver-floor plant is made (its image with the raised floor, certified) and, with no GPU
given, passes as the floor rule says it must. The GPU verdicts themselves need the H200."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import envbuilder_cli

pytestmark = pytest.mark.docker

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "check_faults.sh"


def test_the_fault_script_on_the_cpu_path(cpu_image: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"ENVBUILDER_DATA_DIR": str(data)}
    res = envbuilder_cli("certify", cpu_image, "--gpu-access", "none", "--quick", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "out"
    run = subprocess.run(
        ["bash", str(SCRIPT), cpu_image],
        capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, **env, "OUT": str(out), "LOCAL": "1", "GPU_ACCESS": "none", "PLANT_ON_CPU": "1",
             "PYTHON": sys.executable},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == [
        "check-faults-raw.tar.gz",
        "check-faults.json",
        "check-faults.log",
        "check-faults.md",
    ]  # four files beside a caller's own (issue27_proof.sh shares $OUT)
    summary = json.loads((out / "check-faults.json").read_text())
    rows = {r["case"]: r for r in summary["cases"]}
    assert summary["all_ok"] is True and summary["gpu_access"] == "none"
    assert (rows["pass"]["verdict"], rows["pass"]["exit_code"]) == ("PASS", 0)
    assert rows["pass"]["wall_s"] > 0 and rows["pass"]["timings"]["total_s"] > 0
    assert rows["pass-again"]["ok"] is True
    assert (rows["uncertified"]["verdict"], rows["uncertified"]["exit_code"]) == ("FAIL", 2)
    assert rows["uncertified"]["failed_checks"] == ["certificate.no-certificate"]
    assert rows["gpu-held"]["ok"] is None and rows["gpu-held"]["skipped"] == "CPU path: no GPU to hold"
    assert rows["driver-floor"]["ok"] is True and rows["driver-floor"]["verdict"] == "PASS"
    log = (out / "check-faults.log").read_text()
    assert "recorded floor 1.0" in log and "driver-floor image labels: 1.0" in log, log
    raw = tmp_path / "raw"
    raw.mkdir()
    subprocess.run(["tar", "-xzf", str(out / "check-faults-raw.tar.gz"), "-C", str(raw)], check=True)
    floor = json.loads((raw / "check-driver-floor.json").read_text())
    passed = json.loads((raw / "check-pass.json").read_text())
    assert floor["certificate"]["id"] != passed["certificate"]["id"]  # the plant was certified itself
    md = (out / "check-faults.md").read_text()
    assert "| uncertified | FAIL | FAIL | 2 (2) |" in md and "| gpu-held | FAIL | skipped |" in md


def test_a_case_that_does_not_fit_the_budget_is_skipped_and_said(cpu_image: str, tmp_path: Path) -> None:
    """issue27_proof.sh hands check_faults.sh what is left of its device call (CHECK_BUDGET_S):
    cases that would not fit are skipped with the reason, never cut off by the caller's timeout."""
    out = tmp_path / "out"
    run = subprocess.run(
        ["bash", str(SCRIPT), cpu_image],
        capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "ENVBUILDER_DATA_DIR": str(tmp_path / "data"), "OUT": str(out), "LOCAL": "1",
             "GPU_ACCESS": "none", "CHECK_BUDGET_S": "5", "PYTHON": sys.executable},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {r["case"]: r for r in json.loads((out / "check-faults.json").read_text())["cases"]}
    assert rows["pass"]["ok"] is None and rows["pass"]["skipped"].startswith("time budget: ")
    assert rows["uncertified"]["skipped"].startswith("time budget: ")
