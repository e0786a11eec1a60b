"""The fleet area's rules, one row per condition (benchmarks/mutants.py area "fleet", issue 23 item
14): the Kubernetes init container's expectation (fleet/check_init.py) and the short mode's own
judgement of it (harness/gate.py), class coverage (fleet/classes.py), class status
(fleet/status.py), GPU names (resolve/gpus.py) and forward compatibility (resolve/forward_compat.py).
Each test names the planted bug or the defect it catches."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from cert_factory import H200, RTX, cert_doc
from test_check_k8s import REF, gpu_certificate
from test_coverage_rules import H200_CLASS, NO_BRAND, stack_image
from test_fleet_slurm import MATRIX

from envbuilder.certify.certificate import Certificate
from envbuilder.fleet.check_init import check_expectations, k8s_check_init_container
from envbuilder.fleet.classes import class_coverage
from envbuilder.harness.gate import judge_expected_gpus, read_expect
from envbuilder.run.coverage import check_require_cuda


def gpus_of(n: int, gpu: Any = H200) -> tuple[Any, ...]:
    return tuple(replace(gpu, index=i, uuid=f"GPU-{i}") for i in range(n))


# --------------------------------------------------------------------------- the init container's count


@pytest.mark.parametrize(
    ("certs", "want"),
    [
        pytest.param([(1, H200)], 1, id="one-gpu"),
        pytest.param([(8, H200)], 8, id="eight-gpus"),
        pytest.param([(2, H200), (8, RTX)], 8, id="the-most-is-the-second"),
        pytest.param([(8, RTX), (2, H200)], 8, id="the-most-is-the-first"),
        pytest.param([(1, RTX), (4, H200), (2, H200)], 4, id="the-most-is-in-the-middle"),
    ],
)
def test_the_expectation_carries_the_gpu_count_the_init_container_asks_for(
    certs: list[tuple[int, Any]], want: int
) -> None:
    """Defect (a): the init container asked for N GPUs but its --expect never said N, so an image
    that saw fewer (or none: the CPU path) passed. The count is the expectation's, and the limit
    is that same number (one place)."""
    made = [gpu_certificate(gpus_of(n, g)) for n, g in certs]
    expect = check_expectations(made)
    assert expect is not None and expect["gpus"] == want
    init = k8s_check_init_container(made, image=REF, harness_dir="/h")
    assert init is not None
    sent = json.loads(init["command"][init["command"].index("--expect") + 1])
    assert sent["gpus"] == want == init["resources"]["limits"]["nvidia.com/gpu"]


def test_a_cpu_certificate_beside_gpu_ones_adds_no_count() -> None:
    cpu = Certificate(cert_doc("certified-cpu-only", gpus_of(8)))
    expect = check_expectations([cpu, gpu_certificate(gpus_of(2))])
    assert expect is not None and expect["gpus"] == 2


TORCH = {"framework": "torch", "gpu_path": True}


def stepped(*indexes: int) -> list[dict[str, Any]]:
    return [{"name": f"gpu{i}", "status": "pass", "metrics": {}} for i in indexes]


@pytest.mark.parametrize(
    ("facts", "steps", "want", "status", "words"),
    [
        pytest.param({**TORCH, "device_count": 1}, stepped(0), 1, "pass", "all 1 GPU(s)", id="one-of-one"),
        pytest.param({**TORCH, "device_count": 8}, stepped(*range(8)), 8, "pass", "all 8", id="all-eight"),
        pytest.param({**TORCH, "device_count": 2}, stepped(0, 1), 1, "pass", "(it saw 2)", id="saw-more"),
        pytest.param({**TORCH, "device_count": 1, "cuda_visible_devices": "0"}, stepped(0), 2, "fail",
                     "saw 1 of 2 GPUs handed in (CUDA_VISIBLE_DEVICES=0", id="image-hides-the-second"),
        pytest.param({**TORCH, "device_count": 7}, stepped(*range(7)), 8, "fail", "saw 7 of 8", id="7-of-8"),
        pytest.param({**TORCH, "gpu_path": False}, [], 1, "fail", "saw 0 of 1", id="cpu-path"),
        pytest.param({**TORCH, "gpu_path": False, "device_count": 1}, stepped(0), 1, "fail", "saw 0 of 1",
                     id="cpu-path-whatever-the-count"),
        pytest.param(TORCH, stepped(0), 1, "fail", "did not say", id="count-missing"),
        pytest.param({**TORCH, "device_count": True}, stepped(0), 1, "fail", "did not say", id="count-bool"),
        pytest.param({**TORCH, "device_count": -1}, stepped(0), 1, "fail", "did not say", id="count-below"),
        pytest.param({**TORCH, "device_count": 3}, stepped(0, 2), 3, "fail", "no step for GPU 1 of the 3",
                     id="the-middle-step-missing"),
        pytest.param({**TORCH, "device_count": 3}, stepped(0, 1), 3, "fail", "no step for GPU 2",
                     id="the-last-step-missing"),
        pytest.param({**TORCH, "device_count": 2}, stepped(1), 2, "fail", "no step for GPU 0", id="first"),
        pytest.param({"framework": "jax", "gpu_path": True, "measured": False}, [], 2, "warn",
                     "looked at none of the 2", id="not-torch"),
        pytest.param(None, stepped(0), 1, "fail", "did not say", id="no-facts"),
    ],
)  # fmt: skip
def test_the_short_mode_judges_the_gpus_it_saw_against_the_expected_count(
    facts: Any, steps: list[dict[str, Any]], want: int, status: str, words: str
) -> None:
    """Defect (a), in the image: judge_gpus, check's image.gpus rule, with the expectation's count."""
    (found,) = judge_expected_gpus({"facts": facts, "steps": steps}, {"gpus": want})
    assert (found["check"], found["status"]) == ("gpus", status), found
    assert words in found["message"], found["message"]


def test_an_expectation_without_a_count_judges_no_count() -> None:
    assert judge_expected_gpus({"facts": {**TORCH, "gpu_path": False}, "steps": []}, {"models": []}) == []


@pytest.mark.parametrize("gpus", [0, -1, True, False, "2", 1.0, None, [1]])
def test_an_expectation_whose_count_is_no_count_is_refused(gpus: Any) -> None:
    with pytest.raises(ValueError, match="gpus must be a count of 1 or more"):
        read_expect(json.dumps({"gpus": gpus}))


@pytest.mark.parametrize("gpus", [1, 2, 8])
def test_an_expectation_with_a_count_is_read(gpus: int) -> None:
    assert read_expect(json.dumps({"gpus": gpus})) == {"gpus": gpus}


# --------------------------------------------------------------------------- class coverage


UNKNOWN_BRAND = replace(H200_CLASS, **NO_BRAND)
TWO_BRANDS = ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=tesla,driver>=580 brand=nvidia,driver>=580",)


def test_the_class_hosts_require_cuda_is_judged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect (b): brand_decides asked check_require_cuda again for the class's own host, right
    after class_coverage had: once for the host, then once per brand the image names."""
    real = check_require_cuda
    asked: list[tuple[str | None, ...]] = []

    def counting(view: Any, image: Any, host: Any) -> Any:
        asked.append(tuple(g.brand for g in host.gpus))
        return real(view, image, host)

    monkeypatch.setattr("envbuilder.fleet.classes.check_require_cuda", counting)
    got = class_coverage(UNKNOWN_BRAND, stack_image(TWO_BRANDS), MATRIX)
    assert got.status == "unknown" and "brand nvidia, tesla" in got.reasons[0]
    assert asked == [(None,), ("nvidia",), ("tesla",)]
