"""`envbuilder check` in Kubernetes (issue 27 item 2): `fleet constraints` emits an init container
that runs the image's own harness in the short mode with what the certificates recorded
(--expect), validated offline against the Kubernetes schemas (kubernetes-validate, strict); the
short mode judges itself with a copy of check's band rule, and one case table drives both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cert_factory import H200, RTX, cert_doc

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.check.findings import Band
from envbuilder.fleet.check_init import check_expectations, check_pod, k8s_check_init_container
from envbuilder.fleet.kubernetes import validate_manifests
from envbuilder.fleet.schedulers.kubernetes import k8s_affinity
from envbuilder.harness.gate import judge_expect, judge_share, main

REF = "registry.example.com/team/train@sha256:" + "ef" * 32


def gpu_certificate(
    gpus: tuple[Any, ...] = (H200,), tflops: float = 700.0, gbs: float = 4000.0
) -> Certificate:
    doc = cert_doc("certified", gpus)
    step = {
        "name": "gate_baseline", "status": "pass", "reason": "", "seconds": 1.0, "warnings": [],
        "metrics": {"device_name": gpus[0].name, "bf16_gemm_tflops": tflops, "copy_gbs": gbs},
    }  # fmt: skip
    return build_certificate(
        image=doc["image"], host=doc["host"], run={}, harness={"steps": [step], "verdict": "certified"},
        thresholds={}, verdict="certified", verdict_reason="ok",
    )  # fmt: skip


# One case table for check/findings.py Band.judge and its copy in the image (harness/gate.py).
SHARE_CASES = [
    (100.0, 100.0, 0.9, 0.7, "pass"),
    (90.0, 100.0, 0.9, 0.7, "pass"),
    (89.99, 100.0, 0.9, 0.7, "warn"),
    (70.0, 100.0, 0.9, 0.7, "warn"),
    (69.99, 100.0, 0.9, 0.7, "fail"),
    (0.0, 100.0, 0.9, 0.7, "fail"),
    (120.0, 100.0, 0.9, 0.7, "pass"),
    (5.0, 0.0, 0.9, 0.7, "skip"),
    (50.0, 100.0, 0.5, 0.5, "pass"),
    (49.0, 100.0, 0.5, 0.5, "fail"),
]


@pytest.mark.parametrize(("measured", "ref", "warn", "fail", "want"), SHARE_CASES)
def test_the_band_rule_and_its_copy_in_the_image_agree(
    measured: float, ref: float, warn: float, fail: float, want: str
) -> None:
    assert Band(warn_below=warn, fail_below=fail).judge(measured, ref) == want
    assert judge_share(measured, ref, warn, fail) == want


def test_the_init_container_carries_the_certified_models_figures_and_bands() -> None:
    certs = [gpu_certificate(), gpu_certificate((RTX,), tflops=140.0, gbs=850.0)]
    init = k8s_check_init_container(certs, image=REF, harness_dir="/opt/envbuilder/harness")
    assert init is not None and init["image"] == REF and init["name"] == "envbuilder-check"
    assert init["command"][:2] == ["python3", "/opt/envbuilder/harness/gate_run.py"]
    expect = json.loads(init["command"][init["command"].index("--expect") + 1])
    assert expect["models"] == ["NVIDIA GeForce RTX 3090", "NVIDIA H200"]
    assert expect["certified"]["NVIDIA H200"] == {"bf16_gemm_tflops": 700.0, "copy_gbs": 4000.0}
    assert expect["bands"]["gemm"] == {"warn_below": 0.9, "fail_below": 0.7}
    assert init["resources"] == {"limits": {"nvidia.com/gpu": 1}} and expect["gpus"] == 1
    assert k8s_check_init_container([Certificate(cert_doc("certified-cpu-only", ()))], image=REF,
                                    harness_dir="/h") is None  # fmt: skip


def test_the_pod_with_the_init_container_is_valid_kubernetes() -> None:
    certs = [gpu_certificate()]
    init = k8s_check_init_container(certs, image=REF, harness_dir="/opt/envbuilder/harness")
    assert init is not None
    pod = check_pod(init, k8s_affinity(certs))
    validate_manifests([pod])  # offline, strict (unknown fields refused)
    broken = json.loads(json.dumps(pod))
    broken["spec"]["initContainers"][0]["resources"]["limitz"] = {}
    with pytest.raises(Exception, match="not valid Kubernetes"):
        validate_manifests([broken])


def gpu_step(model: str, tflops: float, gbs: float) -> dict[str, Any]:
    return {"name": "gpu0", "status": "pass", "reason": "",
            "metrics": {"device_name": model, "bf16_gemm_tflops": tflops, "copy_gbs": gbs}}  # fmt: skip


def test_the_short_mode_judges_itself_against_the_expectations() -> None:
    expect = check_expectations([gpu_certificate()])
    assert expect is not None
    ok = judge_expect([gpu_step("NVIDIA H200", 690.0, 3990.0)], expect)
    assert [f["status"] for f in ok] == ["pass", "pass"]
    slow = judge_expect([gpu_step("NVIDIA H200", 400.0, 3990.0)], expect)
    assert [f["status"] for f in slow] == ["fail", "pass"] and "57% of the certified 700.0" in slow[0][
        "message"
    ]
    other = judge_expect([gpu_step("NVIDIA H100 80GB HBM3", 690.0, 3990.0)], expect)
    assert [f["status"] for f in other] == ["fail"] and "not a GPU model the image is certified on" in other[
        0
    ]["message"]
    broken = judge_expect(
        [{"name": "gpu0", "status": "fail", "reason": "no kernel image", "metrics": {}}], expect
    )
    assert broken == [{"check": "gpu0", "status": "fail", "message": "no kernel image"}]


def test_the_short_mode_judges_each_figure_with_its_own_band() -> None:
    # The copy figure against the copy band, the GEMM's against the GEMM band (set R's R42 judged
    # the copy with the GEMM band; the shipped bands are equal, so these are not).
    expect = check_expectations([gpu_certificate()])
    assert expect is not None
    expect["bands"]["gemm"] = {"warn_below": 0.9, "fail_below": 0.7}
    expect["bands"]["copy"] = {"warn_below": 0.5, "fail_below": 0.3}
    found = judge_expect([gpu_step("NVIDIA H200", 560.0, 2400.0)], expect)  # 80% and 60%
    assert [(f["check"], f["status"]) for f in found] == [("gpu0.gemm", "warn"), ("gpu0.copy", "pass")]
    found = judge_expect([gpu_step("NVIDIA H200", 700.0, 1000.0)], expect)  # 100% and 25%
    assert [(f["check"], f["status"]) for f in found] == [("gpu0.gemm", "pass"), ("gpu0.copy", "fail")]


@pytest.mark.parametrize(
    ("ref", "got", "message"),
    [
        (0.0, 690.0, "no certified figure"),  # was a ZeroDivisionError in the message
        (-700.0, 690.0, "no certified figure"),
        (float("nan"), 690.0, "no certified figure"),
        (True, 690.0, "no certified figure"),  # JSON's true is no figure
        (10**400, 690.0, "no certified figure"),  # past a float's range: was an OverflowError
        (700.0, float("nan"), "bf16_gemm_tflops not measured"),  # NaN passed every band
        (700.0, float("inf"), "bf16_gemm_tflops not measured"),
        (700.0, True, "bf16_gemm_tflops not measured"),
    ],
)
def test_the_short_mode_judges_only_finite_figures(ref: Any, got: Any, message: str) -> None:
    # An --expect can be written by hand, and the figures come from the image under test.
    expect = check_expectations([gpu_certificate()])
    assert expect is not None
    expect["certified"]["NVIDIA H200"]["bf16_gemm_tflops"] = ref
    step = gpu_step("NVIDIA H200", 0.0, 3990.0)
    step["metrics"]["bf16_gemm_tflops"] = got
    gemm, copy = judge_expect([step], expect)
    assert (gemm["check"], gemm["status"], gemm["message"]) == ("gpu0.gemm", "skip", message)
    assert copy["status"] == "pass"


def test_the_short_mode_with_expectations_fails_on_the_cpu_path_and_exits_2_on_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The certification ran on 1 GPU: a pod whose image finds no GPU (the CPU path) is no PASS
    # (it was, before the expectation carried the count: no GPU step, nothing judged).
    expect = check_expectations([gpu_certificate()])
    path = tmp_path / "expect.json"
    path.write_text(json.dumps(expect))
    assert main(["--cpu-only", "--expect", f"@{path}", "--out", str(tmp_path / "g.json")]) == 2
    doc = json.loads((tmp_path / "g.json").read_text())
    assert doc["verdict"] == "FAIL" and doc["certificate"] == expect["certificate"]  # type: ignore[index]
    assert [(f["check"], f["status"]) for f in doc["findings"]] == [("gpus", "fail")]
    assert "saw 0 of 1 GPUs handed in" in doc["findings"][0]["message"]
    assert main(["--cpu-only", "--expect", "[1, 2]"]) == 2
    assert "--expect must be a JSON object" in capsys.readouterr().err


def test_fleet_constraints_prints_the_init_container_beside_the_affinity() -> None:
    """The Kubernetes scheduler's constraints section (what `fleet constraints` prints and puts in
    --json under kubernetes.init_container) carries the validated init container."""
    from envbuilder.fleet.schedulers.kubernetes import Kubernetes
    from envbuilder.fleet.status import class_status

    rows = class_status([gpu_certificate()])
    (k8s, _nfd) = Kubernetes().constraints(rows, image=REF)
    assert k8s.key == "kubernetes" and k8s.value["init_container"]["image"] == REF
    text = "\n".join(k8s.lines)
    assert "initContainers:" in text and "gate_run.py" in text and "--expect" in text
    cpu_rows = class_status([Certificate(cert_doc("certified-cpu-only", ()))])
    (cpu, _) = Kubernetes().constraints(cpu_rows, image=REF)
    assert cpu.value["init_container"] is None and "no init container" in "\n".join(cpu.lines)


# --------------------------------------------------------------------------- set Q's survivors


@pytest.mark.parametrize("models", [[], None])
def test_the_short_mode_with_no_certified_model_takes_no_gpu(models: Any) -> None:
    """An --expect that lists no certified GPU model (a hand-written one, or a certificate of the
    CPU path) certifies no GPU: every GPU the pod got fails its model check, none passes unjudged."""
    expect = check_expectations([gpu_certificate()])
    assert expect is not None
    expect["models"] = models
    found = judge_expect([gpu_step("NVIDIA H200", 690.0, 3990.0)], expect)
    assert [(f["check"], f["status"]) for f in found] == [("gpu0.model", "fail")]
