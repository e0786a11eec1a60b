"""`envbuilder check` for real (issue 27 item 1, the CPU path): the bundled torch CPU image,
certified here (--quick), passes: the certificate covers this node, the node has no NVIDIA GPU (said,
skipped), and the short mode runs in the image (torch imports; the GPU steps skipped with the
reason). An image with no certificate (another image ID: a LABEL on top of the certified one)
fails with exit 2 and the refusal's remedy, without running anything in it."""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import envbuilder_cli

from envbuilder.check.findings import validate_report
from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def certified(cpu_image: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    data = tmp_path_factory.mktemp("check-data")
    env = {"ENVBUILDER_DATA_DIR": str(data)}
    res = envbuilder_cli("certify", cpu_image, "--gpu-access", "none", "--quick", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return cpu_image, env


@pytest.fixture(scope="module")
def uncertified(cpu_image: str, run_id: str, cleanup_refs: list[str]) -> str:
    """The certified image with one label more: another image ID, certified nowhere."""
    tag = f"envbuilder-it/check-uncertified:{run_id}"
    res = subprocess.run(
        ["docker", "build", "-q", "-t", tag, "-"],
        input=f"FROM {cpu_image}\nLABEL io.envbuilder.test=uncertified\n",
        capture_output=True, text=True, timeout=300, check=False,
        env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    cleanup_refs.append(tag)
    return tag


def test_a_certified_cpu_image_passes_on_the_cpu_path(certified: tuple[str, dict[str, str]]) -> None:
    tag, env = certified
    res = envbuilder_cli("check", tag, "--json", env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    assert validate_report(doc) == [] and doc["verdict"] == "PASS"
    status = {f["check"]: f for f in doc["findings"]}
    assert status["certificate.coverage"]["status"] == "pass"
    assert status["node.nvml"]["status"] == "skip" and "no NVIDIA GPU" in status["node.nvml"]["message"]
    assert (
        status["image.framework"]["status"] == "pass"
        and "torch 2.13.0" in status["image.framework"]["message"]
    )
    assert status["image.cuda_smoke"]["status"] == "skip"
    assert status["image.cuda_smoke"]["message"].startswith("CPU path: no GPU was given")
    assert [s["name"] for s in doc["image_run"]["steps"]] == ["framework", "cuda_smoke", "allreduce_loopback"]
    assert doc["timings"]["total_s"] < 60
    assert "check: running the short mode in the image" in res.stderr  # progress on stderr
    text = envbuilder_cli("check", tag, env=env)
    assert text.returncode == 0 and text.stdout.strip().splitlines()[-1].startswith("PASS: ")


def test_an_uncertified_image_fails_with_exit_2(
    uncertified: str, certified: tuple[str, dict[str, str]]
) -> None:
    _, env = certified
    res = envbuilder_cli("check", uncertified, "--json", env=env)
    assert res.returncode == 2, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    assert validate_report(doc) == [] and doc["verdict"] == "FAIL"
    first = doc["findings"][0]
    assert (
        first["check"] == "certificate.no-certificate"
        and f"envbuilder certify {uncertified}" in first["remedy"]
    )
    assert doc["image_run"] is None  # nothing ran in an uncertified image
    assert "running the short mode" not in res.stderr


def test_an_image_that_is_not_here_cannot_be_checked(
    certified: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    _, env = certified
    res = envbuilder_cli("check", "envbuilder-it/no-such-image:0", env=env)
    assert res.returncode == 2 and "not found locally" in res.stderr  # UsageError: could not run


def test_the_allreduce_loopback_runs_in_the_checks_container(cpu_image: str, engine: DockerEngine) -> None:
    """The container `check` starts (check/image.py gate_container: the host's harness mounted
    read-only, no network) runs the all-reduce loopback's multi-process path: spawned ranks import
    the read-only payload by its folder name and meet through a file store (gloo, 2 CPU ranks)."""
    from envbuilder.certify.gpu_access import drop_refused_memlock
    from envbuilder.check.image import gate_container
    from envbuilder.runtime import AccessChoice

    info = engine.inspect_image(cpu_image)
    assert info is not None
    with tempfile.TemporaryDirectory(prefix="check-it-") as io_dir:
        Path(io_dir).chmod(0o777)
        spec = gate_container(info, AccessChoice(name="none", reason="test"), io_dir=io_dir, nonce="n1",
                              watchdog_s=170)  # fmt: skip
        spec = replace(
            spec, command=(*spec.command, "--allreduce-cpu-test", "2", "--allreduce-timeout", "150")
        )
        assert spec.network == "none" and any(
            m.read_only and m.target.endswith("/harness") for m in spec.mounts
        )
        spec, _ = drop_refused_memlock(engine, spec)  # as run_gate does (nested Docker refuses memlock)
        res = engine.run(spec, timeout_s=200)
        doc = json.loads((Path(io_dir) / "gate.json").read_text())
    assert res.exit_code == 0, res.stderr[-3000:]
    steps = {s["name"]: s for s in doc["steps"]}
    loop = steps["allreduce_loopback"]
    assert loop["status"] == "pass", loop
    assert loop["metrics"]["values_ok"] is True and loop["metrics"]["world_size"] == 2
    assert doc["nonce"] == "n1"


def test_an_image_with_two_tags_is_named_as_typed(engine: DockerEngine, base_image: str) -> None:
    """Two tags of one image ID (on a shared daemon: another suite's image built alike): inspecting
    by either tag lists that tag first, so check's and run's remedies name what the user typed
    (the uncertified test above once named another test's tag)."""
    suffix = tempfile.mktemp(prefix="", dir="").replace("_", "x").lower()[-8:]
    names = [f"envbuilder-it/named-a:{suffix}", f"envbuilder-it/named-b:{suffix}"]
    for name in names:
        subprocess.run(["docker", "tag", base_image, name], check=True, capture_output=True)
    try:
        for name in names:
            info = engine.inspect_image(name)
            assert info is not None and info.tags[0] == name, (name, info and info.tags)
    finally:
        subprocess.run(["docker", "rmi", *names], capture_output=True)
