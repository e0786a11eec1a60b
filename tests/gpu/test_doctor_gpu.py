"""doctor on a real NVIDIA GPU: the probe finds the GPUs through NVML and the CLI reports them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.host import probe_host

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def test_probe_finds_a_gpu_with_cc_and_driver() -> None:
    report = probe_host()
    assert report.gpus, f"no GPU found: {report.attempts}"
    assert report.source == "nvml", f"NVML did not answer: {report.attempts}"
    assert report.driver and re.fullmatch(r"\d{3,4}\.\d+(\.\d+)?", report.driver)
    assert report.cuda_driver and re.fullmatch(r"\d+\.\d", report.cuda_driver)
    for gpu in report.gpus:
        assert gpu.cc and re.fullmatch(r"\d+\.\d", gpu.cc)
        assert gpu.uuid and gpu.uuid.startswith(("GPU-", "MIG-"))
        assert gpu.memory_total_mib and gpu.memory_total_mib > 1024


def test_real_doctor_json_reports_the_gpus() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "envbuilder", "doctor", "--json"],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 6), done.stderr  # 6: a check failed, which is a finding, not a crash
    doc = json.loads(done.stdout)
    assert doc["schema_version"] == 1
    assert doc["verdict"] in ("ok", "warn", "fail")
    assert len(doc["host"]["gpus"]) >= 1
    assert doc["host"]["driver"]
    assert all(re.fullmatch(r"\d+\.\d", g["cc"]) for g in doc["host"]["gpus"])
    assert "Traceback" not in done.stderr
