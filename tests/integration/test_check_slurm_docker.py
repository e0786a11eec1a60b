"""The Slurm recipe of `envbuilder check` (issue 27 item 2) on the real Slurm of scripts/slurm.sh:
scripts/slurm/envbuilder-check-prolog.sh runs on node cpu-0 inside a job (srun: the job's real
SLURM_JOB_ID and SLURMD_NODENAME; the image from the job's --comment through `scontrol show job`),
the check runs the CPU path (certificate and node checks; the in-image GPU steps skipped with the
reason). A certified image lets the job go and leaves the node as it was; an uncertified one
drains the node with the check's reason (a real `scontrol update ... state=drain`), and the test
resumes it at once.

What this does not prove: the script installed as slurm.conf's Prolog= (that setting is the whole
test cluster's, shared by every test at once); it runs as a job step with the same environment a
Prolog sees of the job (SLURM_JOB_ID, SLURMD_NODENAME) and the same scontrol."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import envbuilder_cli, unavailable

pytestmark = pytest.mark.docker

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm" / "envbuilder-check-prolog.sh"
NODE = "cpu-0"


@pytest.fixture(scope="module")
def slurm() -> None:
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20, check=False)
        state = node_state()
    except (OSError, subprocess.TimeoutExpired) as exc:
        unavailable(f"no Slurm client here ({exc})")
    if "is UP" not in ping.stdout:
        unavailable(f"slurmctld is not up: {ping.stdout.strip() or ping.stderr.strip()}")
    if "DOWN" in state or "DRAIN" in state:
        unavailable(f"node {NODE} is not usable: {state}")


def node_state() -> str:
    out = subprocess.run(
        ["scontrol", "show", "node", NODE, "--oneliner"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    ).stdout
    state = re.search(r"\bState=\S+", out)
    reason = re.search(r"\bReason=(.*?)(?: \[[^]]*\])?(?: \w+=|$)", out)  # "Reason=TEXT [root@TIME]"
    return (state.group(0) if state else "State=?") + (f" Reason={reason.group(1)}" if reason else "")


@pytest.fixture(scope="module")
def images(
    cpu_image: str, run_id: str, cleanup_refs: list[str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    data = tmp_path_factory.mktemp("check-slurm-data")
    env = {"ENVBUILDER_DATA_DIR": str(data)}
    res = envbuilder_cli("certify", cpu_image, "--gpu-access", "none", "--quick", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    uncertified = f"envbuilder-it/check-slurm-uncertified:{run_id}"
    build = subprocess.run(
        ["docker", "build", "-q", "-t", uncertified, "-"],
        input=f"FROM {cpu_image}\nLABEL io.envbuilder.test=uncertified\n",
        capture_output=True, text=True, timeout=300, check=False,
        env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-2000:]
    cleanup_refs.append(uncertified)
    return {"certified": cpu_image, "uncertified": uncertified, "data": str(data)}


def srun_prolog(image: str, data: str, log: Path) -> subprocess.CompletedProcess[str]:
    """The recipe as a job step on NODE, the image named in the job's --comment."""
    env = {
        **os.environ,
        "ENVBUILDER_DATA_DIR": data,
        "ENVBUILDER_CHECK_CMD": f"{sys.executable} -m envbuilder",
        "ENVBUILDER_CHECK_LOG": str(log),
        "PYTHONPATH": str(SCRIPT.parents[2]),
    }
    env.pop("ENVBUILDER_CHECK_IMAGE", None)
    return subprocess.run(
        ["srun", "-p", "cpu", "-w", NODE, "-N1", "-n1", "--time=5", f"--comment=envbuilder-image={image}",
         "bash", str(SCRIPT)],
        capture_output=True, text=True, timeout=600, check=False, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def reports(log: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(log.glob("check-*.json"))]


def test_a_certified_image_lets_the_job_start(slurm: None, images: dict[str, str], tmp_path: Path) -> None:
    res = srun_prolog(images["certified"], images["data"], tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    (doc,) = reports(tmp_path)
    assert doc["verdict"] == "PASS" and doc["image"] == images["certified"]
    status = {f["check"]: f["status"] for f in doc["findings"]}
    assert status["certificate.coverage"] == "pass" and status["node.nvml"] == "skip"
    assert status["image.cuda_smoke"] == "skip"
    assert "PASS" in res.stderr
    assert "DRAIN" not in node_state()


def test_an_uncertified_image_drains_the_node_with_the_reason(
    slurm: None, images: dict[str, str], tmp_path: Path
) -> None:
    try:
        res = srun_prolog(images["uncertified"], images["data"], tmp_path)
        assert res.returncode == 1, res.stdout + res.stderr
        assert f"drained {NODE}: envbuilder check: {images['uncertified']}: " in res.stderr, res.stderr
        state = node_state()
        assert "DRAIN" in state, state
        assert "Reason=envbuilder check:" in state and "no certificate" in state, state
        (doc,) = reports(tmp_path)
        assert doc["verdict"] == "FAIL" and doc["exit_code"] == 2
    finally:
        subprocess.run(
            ["scontrol", "update", f"nodename={NODE}", "state=resume"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    assert "DRAIN" not in node_state()
