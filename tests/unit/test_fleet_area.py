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
from test_forward_compat import CUDA13
from test_forward_compat import MATRIX as FC_MATRIX

from envbuilder.certify.certificate import Certificate, build_certificate, seal
from envbuilder.errors import UsageError
from envbuilder.fleet.check_init import check_expectations, check_pod, k8s_check_init_container
from envbuilder.fleet.classes import (
    NodeClass,
    brand_decides,
    class_coverage,
    class_host,
    facts_from_features,
    select_classes,
    with_gpu_model,
)
from envbuilder.fleet.status import certificate_class, class_status, key_throughput
from envbuilder.harness.gate import judge_expected_gpus, read_expect
from envbuilder.host.model import Host, HostGpu
from envbuilder.image.metadata import read_metadata
from envbuilder.matrix.model import RequireRule
from envbuilder.pipeline.resolution import target_host
from envbuilder.resolve import forward_compat
from envbuilder.resolve.gpus import (
    enrich_host,
    find_gpu,
    gpu_from_cc,
    gpu_from_match,
    lookup_gpu,
    suggest_gpus,
)
from envbuilder.run.coverage import check_require_cuda


def gpus_of(n: int, gpu: Any = H200) -> tuple[Any, ...]:
    return tuple(replace(gpu, index=i, uuid=f"GPU-{i}") for i in range(n))


# --------------------------------------------------------------------------- the init container's count


@pytest.mark.parametrize(
    ("certs", "want"),
    [
        pytest.param([(1, H200)], 1, id="one-gpu"),
        pytest.param([(8, H200)], 8, id="eight-gpus"),
        pytest.param([(2, H200), (8, RTX)], 2, id="the-fewest-is-the-first"),
        pytest.param([(8, RTX), (2, H200)], 2, id="the-fewest-is-the-second"),
        pytest.param([(4, RTX), (1, H200), (2, H200)], 1, id="the-fewest-is-in-the-middle"),
    ],
)
def test_the_expectation_carries_the_gpu_count_the_init_container_asks_for(
    certs: list[tuple[int, Any]], want: int
) -> None:
    """Defect (a): the init container asked for N GPUs but its --expect never said N, so an image
    that saw fewer (or none: the CPU path) passed. The count is the expectation's, and the limit
    is that same number (one place). It is the fewest any certification ran on: asking for the
    most (8 of an 8-GPU class), a pod of a mixed fleet could never be placed on a 2-GPU class
    its affinity admits."""
    made = [gpu_certificate(gpus_of(n, g)) for n, g in certs]
    expect = check_expectations(made)
    assert expect is not None and expect["gpus"] == want
    init = k8s_check_init_container(made, image=REF, harness_dir="/h")
    assert init is not None
    sent = json.loads(init["command"][init["command"].index("--expect") + 1])
    assert sent["gpus"] == want == init["resources"]["limits"]["nvidia.com/gpu"]


@pytest.mark.parametrize("cpu_gpus", [8, 1])  # more or fewer than the GPU certification's 2
def test_a_cpu_certificate_beside_gpu_ones_adds_no_count(cpu_gpus: int) -> None:
    cpu = Certificate(cert_doc("certified-cpu-only", gpus_of(cpu_gpus)))
    made = [cpu, gpu_certificate(gpus_of(2))]
    expect, init = check_expectations(made), k8s_check_init_container(made, image=REF, harness_dir="/h")
    assert expect is not None and init is not None
    assert expect["gpus"] == 2 == init["resources"]["limits"]["nvidia.com/gpu"]  # FL201 (blind): 8


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


# --------------------------------------------------------------------------- class status


def with_steps(steps: list[dict[str, Any]], gpus: tuple[Any, ...] = (H200,)) -> Certificate:
    doc = cert_doc("certified", gpus)
    return build_certificate(
        image=doc["image"], host=doc["host"], run={}, harness={"steps": steps, "verdict": "certified"},
        thresholds={}, verdict="certified", verdict_reason="ok",
    )  # fmt: skip


def ips(name: str, value: Any, status: str = "pass") -> dict[str, Any]:
    return {"name": name, "status": status, "metrics": {} if value is None else {"images_per_s": value}}


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        pytest.param([ips("a", 100.0), ips("b", 300.0), ips("c", 200.0)], "300 img/s (b)", id="2nd"),
        pytest.param([ips("a", 100.0), ips("b", 200.0), ips("c", 300.0)], "300 img/s (c)", id="3rd"),
        pytest.param([ips("a", 300.0), ips("b", 100.0)], "300 img/s (a)", id="fastest-first"),
        pytest.param([ips("a", 300.0), ips("b", 300.0)], "300 img/s (a)", id="a-tie-names-the-first"),
        pytest.param([ips("a", None)], "-", id="no-rate"),
        pytest.param([ips("a", None), ips("b", 50.0)], "50 img/s (b)", id="no-rate-then-one"),
        pytest.param([ips("a", 50.0), ips("b", None)], "50 img/s (a)", id="one-then-no-rate"),
        pytest.param([ips("a", "900")], "-", id="rate-as-text"),
        pytest.param([ips("a", 900.0, "fail"), ips("b", 50.0)], "50 img/s (b)", id="failed-faster"),
        pytest.param([ips("a", 900.0, "skip")], "-", id="skipped"),
        pytest.param([], "-", id="no-steps"),
    ],
)  # fmt: skip
def test_the_key_throughput_rule(steps: list[dict[str, Any]], want: str) -> None:
    """FL004 (a step without a rate compared), FL005 (the last passing rate, not the fastest),
    FL009 (the first), FL013 (`>=`: the last of a tie)."""
    assert key_throughput(with_steps(steps)) == want


H200_NAME, RTX_NAME = "NVIDIA H200", "NVIDIA GeForce RTX 3090"


@pytest.mark.parametrize(
    ("names", "want"),
    [
        pytest.param([H200_NAME], "1x NVIDIA H200", id="one"),
        pytest.param([H200_NAME, H200_NAME], "2x NVIDIA H200", id="two-of-one-model"),
        pytest.param([None], "1x ?", id="unnamed"),
        pytest.param([""], "1x ?", id="named-empty"),
        pytest.param([H200_NAME, RTX_NAME], "2x NVIDIA GeForce RTX 3090, NVIDIA H200", id="two-models"),
        pytest.param(list("EDCBA"), "5x A, B, C, D, E", id="five-models-sorted"),
        pytest.param([None, RTX_NAME], "2x ?, NVIDIA GeForce RTX 3090", id="named-and-unnamed"),
        pytest.param([], "none (CPU path)", id="cpu-path"),
    ],
)
def test_a_class_status_names_its_gpus(names: list[str | None], want: str) -> None:
    """FL015 (every name '?'), FL016 (an unnamed GPU: sorted() of None), FL017 (`and`: named ones
    '?'), FLN006 (sorted dropped: a set's order)."""
    doc = cert_doc("certified", ())
    doc["host"]["gpus"] = [{"name": n, "uuid": f"GPU-{i}", "cc": "9.0"} for i, n in enumerate(names)]
    (row,) = class_status([Certificate(seal(doc))])
    assert row.gpus == want


# --------------------------------------------------------------------------- node features


@pytest.mark.parametrize(
    ("features", "driver", "cc"),
    [
        pytest.param(("driver_58", "sm_90"), None, "9.0", id="bad-driver-then-cc"),
        pytest.param(("driver_58", "driver_580"), "580", None, id="bad-driver-then-driver"),
        pytest.param(("drv_58000", "sm_80", "driver_570.1"), "570.1", "8.0", id="bad-1st-of-3"),
        pytest.param(("sm_90", "driver_580.1234", "driver_550"), "550", "9.0", id="bad-2nd-of-3"),
    ],
)  # fmt: skip
def test_a_driver_feature_that_is_no_driver_is_passed_over(
    features: tuple[str, ...], driver: str | None, cc: str | None
) -> None:
    """FL033 (`break`: the features after it unread), FL034 (`return None`)."""
    got_driver, got_cc, facts = facts_from_features(features)
    assert (got_driver, got_cc) == (driver, cc)
    assert len(facts) == (driver is not None) + (cc is not None)


# --------------------------------------------------------------------------- a class's GPU model

BARE = NodeClass(name="gpu", scheduler="slurm", nodes=("n1",), gpus_per_node=8, facts=("earlier fact",))


@pytest.mark.parametrize(
    ("cc", "name", "model", "want_cc", "facts"),
    [
        pytest.param(None, "h200", "NVIDIA H200", "9.0",
                     ["GPU model NVIDIA H200: GRES type 'h200' in the matrix",
                      "compute capability 9.0: the matrix's NVIDIA H200"], id="cc-from-the-model"),
        pytest.param("9.0", "h200", "NVIDIA H200", "9.0",
                     ["GPU model NVIDIA H200: GRES type 'h200' in the matrix"], id="cc-stated-agrees"),
        pytest.param("8.0", "h200", "NVIDIA H200", "8.0",
                     ["GPU model NVIDIA H200: GRES type 'h200' in the matrix",
                      "warning: the class states compute capability 8.0, the matrix's NVIDIA H200 has 9.0"],
                     id="cc-stated-disagrees"),
        pytest.param(None, "4090", None, "8.9", ["fits 3 models of compute capability 8.9"],
                     id="several-models-give-their-cc"),
        pytest.param("8.0", "4090", None, "8.0", ["fits 3 models of compute capability 8.9"],
                     id="several-models-keep-a-stated-cc"),
        pytest.param("8.0", "zz-no-such-gpu", None, "8.0", ["is no model the matrix knows"], id="unknown"),
    ],
)  # fmt: skip
def test_a_classs_gpu_model_and_compute_capability(
    cc: str | None, name: str, model: str | None, want_cc: str, facts: list[str]
) -> None:
    """FL044 (a stated compute capability replaced by the candidates'), FL045 (`is not`: a stated
    one replaced by the model's, the model's dropped where none was stated)."""
    got = with_gpu_model(replace(BARE, cc=cc), MATRIX, name, "GRES type")
    assert (got.gpu_model, got.cc) == (model, want_cc)
    assert got.facts[0] == "earlier fact" and len(got.facts) == 1 + len(facts), got.facts
    for said, want in zip(got.facts[1:], facts, strict=True):
        assert want in said, got.facts
    assert got.brand == ("nvidia" if model else None)


@pytest.mark.parametrize(
    ("over", "name"),
    [
        pytest.param({}, "NVIDIA H200", id="its-nvml-name"),
        pytest.param({"nvml_names": ("NVIDIA H200 NVL", "NVIDIA H200")}, "NVIDIA H200 NVL",
                     id="the-first-nvml-name"),
        pytest.param({**NO_BRAND, "gpu_type": "h200"}, "h200", id="its-gres-type"),
        pytest.param({**NO_BRAND, "gpu_type": ""}, "GPU", id="an-empty-type"),
        pytest.param(NO_BRAND, "GPU", id="nothing-named"),
    ],
)  # fmt: skip
def test_the_gpu_a_class_is_judged_as(over: dict[str, Any], name: str) -> None:
    """FL052 (a GRES type never the name), FL053 (no name: None), FL054 (`and`: 'GPU' for a type)."""
    host = class_host(replace(H200_CLASS, **over), MATRIX)
    (gpu,) = host.gpus
    assert (gpu.name, gpu.cc, gpu.brand) == (name, H200_CLASS.cc, over.get("brand", "nvidia"))
    assert (host.driver, host.access) == (H200_CLASS.driver, "devices")


@pytest.mark.parametrize(
    ("env", "starts"),
    [
        pytest.param(TWO_BRANDS, "the image requires cuda>=99.0", id="refused-unless-a-brand"),
        # the toolkit compares a brand with any operator: `brand!=tesla` holds for the unknown ""
        pytest.param(("NVIDIA_REQUIRE_CUDA=cuda>=12.0", "NVIDIA_REQUIRE_ZZ=brand!=tesla"),
                     "GPU brand unknown", id="allowed-unless-a-brand"),
    ],
)  # fmt: skip
def test_an_unknown_brand_says_what_the_brandless_host_got(env: tuple[str, ...], starts: str) -> None:
    """FL077 (`is None`: the refusal of the brandless host left out of the reason, and a crash
    where there is none)."""
    got = class_coverage(UNKNOWN_BRAND, stack_image(env), MATRIX)
    (reason,) = got.reasons
    assert (
        got.status == "unknown" and reason.startswith(starts) and "tesla" in reason.split("for brand")[-1]
    ), reason
    assert ("[require-cuda]; GPU brand unknown" in reason) == (env == TWO_BRANDS), reason


@pytest.mark.parametrize(
    ("name", "nvml"),
    [
        pytest.param("Tesla K40", ("Tesla K40m", "Tesla K40c", "Tesla K40s"), id="its-nvml-names"),
        pytest.param("Jetson TX2", ("Jetson TX2",), id="none-listed-its-own-name"),
    ],
)
def test_a_classs_gpu_is_named_as_nvml_names_it(name: str, nvml: tuple[str, ...]) -> None:
    """FL048 (a model the matrix lists no NVML name for: the class's GPU named nothing, so
    class_host falls back to the GRES type, not the model)."""
    got = with_gpu_model(replace(BARE, gpu_type="x"), MATRIX, name, "GRES type")
    assert got.nvml_names == nvml
    assert class_host(got, MATRIX).gpus[0].name == nvml[0]


# --------------------------------------------------------------------------- GPU names


@pytest.mark.parametrize(
    ("typed", "model"),
    [
        pytest.param("Quadro K6000", "Quadro K6000", id="as-listed"),
        pytest.param("quadro k6000", "Quadro K6000", id="lower-case"),
        pytest.param("QUADRO K6000", "Quadro K6000", id="upper-case"),
        pytest.param("K6000 Quadro", "Quadro K6000", id="words-in-another-order"),
        pytest.param("Z TITAN GTX", "GeForce GTX TITAN Z", id="three-words-reversed"),
        pytest.param("K5000 Quadro", "Quadro K5000", id="another-model-of-the-family"),
    ],
)
def test_a_gpu_is_found_by_its_words_in_any_order(typed: str, model: str) -> None:
    """FL116 (`<`: a name whose words are all of a model's, in another order, found only where some
    other name has more words)."""
    match = find_gpu(MATRIX, typed)
    assert match is not None and (match.model.name, match.candidates) == (model, ())


def zz_matrix(n: int, ccs: tuple[str, ...] = ("9.0",)) -> Any:
    """MATRIX with `n` more models named 'ZZ Board 1'..n (compute capabilities taken in turn from
    `ccs`), which the name 'ZZ Board' fits all of."""
    base = next(m for m in MATRIX.gpus.models if m.name == "NVIDIA H200")
    extra = tuple(
        replace(base, name=f"ZZ Board {i}", nvml_names=(), aliases=(), cc=ccs[i % len(ccs)])
        for i in range(1, n + 1)
    )
    return replace(MATRIX, gpus=replace(MATRIX.gpus, models=(*MATRIX.gpus.models, *extra)))


@pytest.mark.parametrize(("n", "more"), [(7, ""), (8, ""), (9, " and 1 more"), (10, " and 2 more")])
def test_the_models_a_name_fits_are_listed_up_to_eight(n: int, more: str) -> None:
    """FL141 (`>=`: ' and 0 more' after exactly eight), FL135 (the same in the ambiguity error)."""
    matrix = zz_matrix(n)
    match = find_gpu(matrix, "ZZ Board")
    assert match is not None and len(match.candidates) == n
    named = gpu_from_match(matrix, match).name
    listed = ", ".join(sorted(f"ZZ Board {i}" for i in range(1, n + 1))[:8])
    assert named.endswith(f"compute capability 9.0: {listed}{more})"), named
    assert gpu_from_match(matrix, match).segment == "datacenter"  # FLN128: {'datacenter'}
    two = zz_matrix(n, ("9.0", "8.0", "12.0", "10.0"))
    with pytest.raises(UsageError) as err:
        find_gpu(two, "ZZ Board")
    assert err.value.message.endswith(f"fits {n} models: {', '.join(map(repr, listed.split(', ')))}{more}")
    # FLN124: the capabilities in numeric order (a set's order, or text order: 10.0 before 8.0)
    assert err.value.hint is not None and "differ (8.0, 9.0, 10.0, 12.0)" in err.value.hint


def test_a_match_naming_a_model_this_matrix_lacks_names_no_model() -> None:
    """FL151 (the model named where one of the candidates is not in the matrix at hand: a match
    made against another matrix)."""
    match = find_gpu(zz_matrix(3), "ZZ Board")
    assert match is not None
    assert gpu_from_match(zz_matrix(3), match).model == "ZZ Board 1"
    assert gpu_from_match(zz_matrix(2), match).model is None


@pytest.mark.parametrize(
    ("cc", "refused"),
    [
        pytest.param("9.0", None, id="hopper"),
        pytest.param("12.0", None, id="two-digit-major"),
        pytest.param("3.7", None, id="an-old-one"),
        pytest.param("9.9", "unknown compute capability '9.9'", id="no-such-minor"),
        pytest.param("4.0", "unknown compute capability '4.0'", id="between-known-ones"),
        pytest.param("99.0", "unknown compute capability '99.0'", id="far-above"),
        pytest.param("9", "malformed compute capability", id="no-minor"),
        pytest.param("9.0.1", "malformed compute capability", id="three-parts"),
        pytest.param("sm_90", "malformed compute capability", id="a-feature-name"),
    ],
)
def test_a_gpu_known_by_its_compute_capability_only_if_the_matrix_knows_it(
    cc: str, refused: str | None
) -> None:
    """FL160 (an unknown compute capability taken as a GPU), FLN129 (a malformed one called
    unknown, not malformed: parse_cc dropped)."""
    if refused is None:
        assert gpu_from_cc(MATRIX, cc).cc == cc
        return
    with pytest.raises(UsageError) as err:
        gpu_from_cc(MATRIX, cc)
    assert err.value.message.startswith(refused), err.value.message


MYSTERY = HostGpu(name="Mystery Board", cc="9.0")
PROBED_H200 = HostGpu(name="NVIDIA H200", cc="")


@pytest.mark.parametrize(
    "gpus",
    [
        pytest.param((MYSTERY, PROBED_H200), id="unknown-first"),
        pytest.param((PROBED_H200, MYSTERY), id="unknown-second"),
        pytest.param((PROBED_H200, PROBED_H200, MYSTERY, PROBED_H200), id="unknown-third-of-four"),
        pytest.param((MYSTERY, MYSTERY, PROBED_H200), id="two-unknown"),
    ],
)
def test_every_probed_gpu_is_kept_and_each_known_one_filled_in(gpus: tuple[HostGpu, ...]) -> None:
    """FL164 (`break`: the GPUs after one of no known name dropped), FL165 (`return None`)."""
    got = enrich_host(MATRIX, Host(driver="580.65.06", gpus=gpus, source="nvml")).gpus
    assert [g.name for g in got] == [g.name for g in gpus]
    assert [(g.cc, g.model) for g in got] == [
        ("9.0", None) if g is MYSTERY else ("9.0", "NVIDIA H200") for g in gpus
    ]


# --------------------------------------------------------------------------- forward compatibility


@pytest.mark.parametrize(
    ("branches", "listed"),
    [
        pytest.param(None, "R535, R550, R565, R570, R575", id="the-image's-branches"),
        pytest.param((), "none", id="no-branch"),
        pytest.param((535, 550), "R535, R550", id="two-branches"),
    ],
)
def test_a_driver_branch_the_package_does_not_support_names_those_it_does(
    branches: tuple[int, ...] | None, listed: str
) -> None:
    """FL178 (no branch: an empty list), FL179 (`and`: 'none' for every list), FL180 ('none' always)."""
    image = CUDA13
    if branches is not None:
        rules = tuple(RequireRule(brand=b, branch=n) for n in branches for b in ("tesla", "nvidia"))
        image = replace(CUDA13, require_rules=rules)
    h100 = target_host(FC_MATRIX, "545.23.06", ("H100",), ()).gpus
    got = forward_compat.through_image(FC_MATRIX, image, "545.23.06", "580", h100)
    assert got == (
        f"the cuda-compat-13-0 of {CUDA13.ref} supports driver branches {listed} (its "
        "NVIDIA_REQUIRE_CUDA), not R545"
    )


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        pytest.param("13.0.3", "580.95.05", id="a-release-of-the-matrix"),
        pytest.param("13.0.0", "580.65.06", id="the-first-release"),
        pytest.param("13.0.1", "580.82.07", id="a-middle-release"),
        pytest.param("13.0.9", "580.65.06", id="a-release-the-matrix-lacks-its-minor's-first"),
    ],
)
def test_the_package_brings_the_driver_of_its_cuda_release(cuda: str, driver: str) -> None:
    """FL185 (a CUDA release the matrix does not list: `None.min_driver`, not its minor's first)."""
    h100 = target_host(FC_MATRIX, "535.104.05", ("H100",), ()).gpus
    got = forward_compat.through_image(FC_MATRIX, replace(CUDA13, cuda=cuda), "535.104.05", "580", h100)
    assert isinstance(got, forward_compat.ForwardCompat), got
    assert (got.package, got.driver) == ("cuda-compat-13-0", driver)


# --------------------------------------------------------------------------- probed GPUs: the probe read wins


@pytest.mark.parametrize(
    ("probed", "brand"),
    [
        pytest.param(HostGpu(name="NVIDIA H200", cc=""), "nvidia", id="unread-the-models"),
        pytest.param(HostGpu(name="NVIDIA H200", cc="9.0", brand="tesla"), "tesla", id="read-kept"),
        pytest.param(HostGpu(name="NVIDIA H200", cc="9.0", brand=""), "nvidia", id="read-empty"),
    ],
)
def test_a_probed_gpus_brand_is_the_probes_else_the_models(probed: HostGpu, brand: str) -> None:
    """FL169 (the model's brand never filled in), FL170 (`and`), FL171 (the probe's brand overridden)."""
    (got,) = enrich_host(MATRIX, Host(driver="580.65.06", gpus=(probed,), source="nvml")).gpus
    assert (got.brand, got.model, got.segment) == (brand, "NVIDIA H200", "datacenter")


@pytest.mark.parametrize("name", ["Mystery Board", "NVIDIA H200 Mystery Edition"])
def test_a_probed_gpu_of_no_known_name_and_no_compute_capability_is_refused(name: str) -> None:
    """FL163 (refused no longer: a GPU no rule can be checked for, taken as it is)."""
    host = Host(driver="580.65.06", gpus=(PROBED_H200, HostGpu(name=name, cc="")), source="nvml")
    with pytest.raises(UsageError, match="was not read by the probe, and no known model has that name"):
        enrich_host(MATRIX, host)


def test_the_init_containers_expectation_is_written_with_sorted_keys() -> None:
    """FL205 (sort_keys dropped: the --expect text follows the certificates' order)."""
    init = k8s_check_init_container([gpu_certificate(), gpu_certificate((RTX,))], image=REF, harness_dir="/h")
    assert init is not None
    text = init["command"][init["command"].index("--expect") + 1]
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    assert list(json.loads(text)) == ["bands", "certificate", "certified", "gpus", "models"]


# --------------------------------------------------------------------------- a certificate's class


def run_cert(run: dict[str, Any], fingerprint: str | None = "sha256:" + "ab" * 32, **kw: Any) -> Certificate:
    doc = cert_doc("certified", **kw)
    doc["host"]["fingerprint"] = fingerprint
    return Certificate(seal({**doc, "run": run}))


@pytest.mark.parametrize(
    ("run", "fingerprint", "want"),
    [
        pytest.param({"scheduler": {"class": "h200"}}, None, "h200", id="its-class"),
        pytest.param({"scheduler": {"class": 5}}, None, "5", id="a-number-as-text"),
        pytest.param({"scheduler": {"class": ""}}, "sha256:" + "ab" * 32, "host:" + "ab" * 6, id="empty"),
        pytest.param({"scheduler": {"class": None}}, "sha256:" + "ab" * 32, "host:" + "ab" * 6, id="null"),
        pytest.param({"scheduler": "h200"}, "sha256:" + "ab" * 32, "host:" + "ab" * 6, id="scheduler-text"),
        pytest.param({}, "cd" * 32, "host:" + "cd" * 6, id="fingerprint-unprefixed"),
        pytest.param({}, None, "host:unknown", id="no-fingerprint"),
    ],
)  # fmt: skip
def test_the_class_a_certificate_covers(run: dict[str, Any], fingerprint: str | None, want: str) -> None:
    """FLN002 (a class given as a number kept a number: no text to sort or print)."""
    assert certificate_class(run_cert(run, fingerprint)) == want


def test_classes_of_any_json_type_sort_as_text() -> None:
    """FLN002: a class stated as a number sorts beside the named ones (it raised TypeError)."""
    rows = class_status([run_cert({"scheduler": {"class": 5}}), run_cert({"scheduler": {"class": "h200"}})])
    assert [r.node_class for r in rows] == ["5", "h200"]


@pytest.mark.parametrize(
    ("scheduler", "said"),
    [
        pytest.param({"class": "h200", "name": "slurm"}, {"class": "h200", "name": "slurm"}, id="an-object"),
        pytest.param("slurm", {}, id="text"),
        pytest.param(["slurm"], {}, id="a-list"),
        pytest.param(None, {}, id="null"),
    ],
)
def test_a_class_status_as_json(scheduler: Any, said: dict[str, Any]) -> None:
    """FLN007 (a scheduler record that is no object: dict('slurm') raised), FLN008 (the whole
    certificate as the throughput)."""
    steps = [ips("train_amp", 3900.0)]
    doc = with_steps(steps, (H200, replace(RTX, index=1))).to_dict()
    cert = Certificate(seal({**{k: v for k, v in doc.items() if k not in ("content_hash", "section_hashes")},
                             "run": {"scheduler": scheduler}}))  # fmt: skip
    (row,) = class_status([cert])
    got = row.to_dict()
    assert got["throughput"] == "3,900 img/s (train_amp)" and got["scheduler"] == said
    assert (got["verdict"], got["certificate"], got["source"]) == ("certified", cert.id, "local store")
    # the first set's FL019 (run after these tests): the second GPU left out
    assert got["gpus"] == [
        {"name": "NVIDIA H200", "cc": "9.0"},
        {"name": "NVIDIA GeForce RTX 3090", "cc": "8.6"},
    ]


@pytest.mark.parametrize(
    ("matrix", "name", "said"),
    [
        pytest.param(zz_matrix(3, ("9.0", "8.0")), "ZZ Board", "fits 3 models", id="models-of-two-ccs"),
        pytest.param(
            MATRIX, "MIG 1g.10gb", "names a MIG instance's profile but not its GPU", id="a-bare-mig"
        ),
    ],
)
def test_a_class_named_by_a_name_refused_says_why_and_stays_unknown(
    matrix: Any, name: str, said: str
) -> None:
    """FLN020 (the class returned without the fact: nobody told why its model is unknown)."""
    got = with_gpu_model(BARE, matrix, name, "product label")
    assert (got.gpu_model, got.cc, got.brand, got.nvml_names) == (None, None, None, ())
    assert got.facts[:1] == ("earlier fact",) and len(got.facts) == 2
    assert got.facts[1].startswith(f"GPU model: product label {name!r}: ") and said in got.facts[1]


def test_the_brands_that_decide_are_named_in_order() -> None:
    """FLN036 (sorted dropped: the brands in a set's order, which changes from run to run)."""
    brands = ("titan", "tesla", "quadro", "nvidia", "geforce")
    env = ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 " + " ".join(f"brand={b},driver>=580" for b in brands),)
    (reason,) = class_coverage(UNKNOWN_BRAND, stack_image(env), MATRIX).reasons
    assert reason.endswith("decides otherwise for brand geforce, nvidia, quadro, tesla, titan"), reason


@pytest.mark.parametrize(
    "typed",
    ["NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3", "NVIDIA  H100 80GB   HBM3", "NVIDIA H100 80GB hbm3"],
)
def test_an_nvml_name_in_any_case_or_spacing_is_that_nvml_name(typed: str) -> None:
    """FLN076 (casefold dropped from step 1: another case falls to step 2, which answers the model's
    name, not the NVML name the GPU is known by)."""
    match = find_gpu(MATRIX, typed)
    assert match is not None and (match.model.name, match.name) == ("NVIDIA H100", "NVIDIA H100 80GB HBM3")


@pytest.mark.parametrize("typed", ["NVIDIA", "GeForce", "Tesla", "nvidia tesla", "--"])
def test_a_name_of_filler_words_only_is_offered_nothing(typed: str) -> None:
    """FLT132 (the no-words guard of suggest_gpus forced off: a name of NVIDIA/GeForce/Tesla alone
    is 'near' any name of no other word, here an alias 'NVIDIA GeForce', since difflib rates two
    empty strings 1.0)."""
    base = next(m for m in MATRIX.gpus.models if m.name == "NVIDIA H200")
    odd = replace(base, name="ZZ Board 1", nvml_names=(), aliases=("NVIDIA GeForce",))
    matrix = replace(MATRIX, gpus=replace(MATRIX.gpus, models=(*MATRIX.gpus.models, odd)))
    assert suggest_gpus(matrix, typed) == []
    with pytest.raises(UsageError) as err:
        lookup_gpu(matrix, typed)
    assert err.value.hint is not None and "did you mean" not in err.value.hint


def test_a_cpu_image_brings_no_cuda_compat() -> None:
    """FLT161 (the CPU image's guard forced off: major_minor(None) raised). No caller passes one
    (system-cuda images have a CUDA); the function says so rather than raise."""
    h100 = target_host(FC_MATRIX, "535.104.05", ("H100",), ()).gpus
    got = forward_compat.through_image(FC_MATRIX, replace(CUDA13, cuda=None), "535.104.05", "580", h100)
    assert got == "a CPU image has no cuda-compat"


@pytest.mark.parametrize(
    "affinity",
    [
        pytest.param(None, id="none"),
        pytest.param({}, id="empty"),
        pytest.param({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}, id="given"),
    ],
)
def test_the_check_pod_carries_the_affinity_only_when_there_is_one(affinity: dict[str, Any] | None) -> None:
    """FLT183 (the affinity never set), FLT184 (always set: `affinity: null` or `{}` in the Pod)."""
    init = k8s_check_init_container([gpu_certificate(gpus_of(2))], image=REF, harness_dir="/h")
    assert init is not None
    spec = check_pod(init, affinity)["spec"]
    assert spec.get("affinity", "absent") == (affinity or "absent")
    assert spec["initContainers"] == [init] and spec["restartPolicy"] == "Never"
    (job,) = spec["containers"]
    assert (job["image"], job["resources"]) == (REF, {"limits": {"nvidia.com/gpu": 2}})


def test_each_signed_certificate_says_its_own_signer() -> None:
    """FL020 (only the first attested certificate's signer kept: the second class said to come from
    the local store) and FL021 (the second one dropped), of the old set's first-item-only part, run
    after these tests."""
    h200, a100 = run_cert({"scheduler": {"class": "h200"}}), run_cert({"scheduler": {"class": "a100"}})
    rows = class_status([], [(h200, "ci"), (a100, "lab")])
    assert [(r.node_class, r.source) for r in rows] == [("a100", "signed by lab"), ("h200", "signed by ci")]


def test_a_brand_named_after_another_property_of_its_term_decides_too() -> None:
    """FL057 (only a term's first property read for brands: `driver>=580,brand=tesla`'s brand
    missed, the brandless class refused), of the old set's first-item-only part, run after these
    tests."""
    env = ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 driver>=580,brand=tesla",)
    got = class_coverage(UNKNOWN_BRAND, stack_image(env), MATRIX)
    assert got.status == "unknown" and got.reasons[0].endswith("decides otherwise for brand tesla")


def test_brand_decides_gives_every_gpu_of_the_host_the_brand() -> None:
    """FL061 (only the host's first GPU given the brand: a second, brandless, still refused)."""
    image = stack_image(TWO_BRANDS)
    view = Certificate({"image": {"stack": dict(read_metadata(image).stack_record or {})}})
    one = class_host(UNKNOWN_BRAND, MATRIX)
    two = replace(one, gpus=(one.gpus[0], replace(one.gpus[0], index=1)))
    for host in (one, two):
        refusal = check_require_cuda(view, image, host)
        assert refusal is not None and brand_decides(view, image, host, refusal) == ("nvidia", "tesla")
    # a second GPU the brand's exemption does not admit (its arch): the brand decides nothing
    image = stack_image(("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=tesla,arch>=9.0",))
    mixed = replace(one, gpus=(one.gpus[0], replace(one.gpus[0], index=1, cc="8.0")))
    refusal = check_require_cuda(view, image, mixed)
    assert refusal is not None and brand_decides(view, image, mixed, refusal) == ()
    assert brand_decides(view, image, one, check_require_cuda(view, image, one)) == ("tesla",)


@pytest.mark.parametrize(
    ("wanted", "got", "unknown"),
    [
        pytest.param([], ["h200", "a100"], None, id="all-gpu-classes"),
        pytest.param(["a100"], ["a100"], None, id="one"),
        pytest.param(["a100", "h200", "a100"], ["a100", "h200"], None, id="each-once-in-order"),
        pytest.param(["nope"], None, "'nope'", id="unknown"),
        pytest.param(["h200", "nope"], None, "'nope'", id="the-second-unknown"),
        pytest.param(["h200", "a100", "x", "y"], None, "'x', 'y'", id="two-unknown"),
        pytest.param(["H200"], None, "'H200'", id="another-case"),
        pytest.param(["h20"], None, "'h20'", id="a-prefix"),
    ],
)
def test_the_classes_selected(wanted: list[str], got: list[str] | None, unknown: str | None) -> None:
    """FL082 (only the first name checked: a later unknown one passed over, then KeyError), of the
    old set's first-item-only part, run after these tests."""
    classes = (H200_CLASS, replace(H200_CLASS, name="a100"), replace(H200_CLASS, name="cpu", gpus_per_node=0))
    if got is not None:
        assert [c.name for c in select_classes(classes, wanted)] == got
        return
    with pytest.raises(UsageError) as err:
        select_classes(classes, wanted)
    assert err.value.message == f"no node class {unknown} in this cluster"


def test_a_typo_is_offered_the_nearest_names_by_any_name_of_a_model() -> None:
    """FL130 (only a model's own name compared: a typo of its NVML name offered nothing) and FL133
    (only the nearest offered, not three), of the old set's first-item-only part, run after these
    tests."""
    base = next(m for m in MATRIX.gpus.models if m.name == "NVIDIA H200")
    odd = replace(base, name="ZZ Board 9", nvml_names=("ZZ Quantum Accelerator",), aliases=())
    matrix = replace(MATRIX, gpus=replace(MATRIX.gpus, models=(*MATRIX.gpus.models, odd)))
    assert suggest_gpus(matrix, "ZZ Quantum Acelerator") == ["ZZ Board 9"]
    near = suggest_gpus(zz_matrix(5), "ZZ Bord 1")
    assert len(near) == 3 and near[0] == "ZZ Board 1" and set(near) <= {f"ZZ Board {i}" for i in range(1, 6)}


def test_forward_compat_names_every_gpu_it_does_not_apply_to() -> None:
    """FL174 (only the first named), of the old set's first-item-only part, run after these tests."""
    gpus = (
        HostGpu(name="NVIDIA H100", cc="9.0", segment="datacenter"),
        HostGpu(name="GeForce RTX 4090", cc="8.9", segment="consumer"),
        HostGpu(name="Mystery Board", cc="9.0"),
    )
    said = forward_compat.not_applicable(FC_MATRIX, gpus)
    assert said.startswith(
        "--forward-compat does not apply to GeForce RTX 4090 (consumer), Mystery Board (unknown class): "
    ), said


def test_the_expectation_carries_every_certified_models_figures() -> None:
    """FL193 (the first certificate's figures only), FL194 (a certificate's first model only),
    FL198 (the models of each certificate's first GPU only), of the old set's first-item-only part,
    run after these tests."""
    two = gpu_certificate((H200,), tflops=700.0, gbs=4000.0)
    rtx = gpu_certificate((RTX,), tflops=140.0, gbs=850.0)
    doc = cert_doc("certified", (H200, replace(RTX, index=1)))
    both = build_certificate(
        image=doc["image"], host=doc["host"], run={}, thresholds={}, verdict="certified", verdict_reason="ok",
        harness={"verdict": "certified", "steps": [
            {"name": "gate_baseline", "status": "pass",
             "metrics": {"device_name": g.name, "bf16_gemm_tflops": t, "copy_gbs": c}}
            for g, t, c in ((H200, 700.0, 4000.0), (RTX, 140.0, 850.0))]},
    )  # fmt: skip
    want = {
        "NVIDIA H200": {"bf16_gemm_tflops": 700.0, "copy_gbs": 4000.0},
        "NVIDIA GeForce RTX 3090": {"bf16_gemm_tflops": 140.0, "copy_gbs": 850.0},
    }
    for certs in ([two, rtx], [both]):
        expect = check_expectations(certs)
        assert expect is not None and expect["certified"] == want
        assert expect["models"] == ["NVIDIA GeForce RTX 3090", "NVIDIA H200"]  # FL198: the second GPU's


def test_forward_compat_names_every_gpu_it_runs_on() -> None:
    """FL188 (only the first GPU named in the note), of the old set's first-item-only part."""
    gpus = target_host(FC_MATRIX, "535.104.05", ("H100", "H200"), ()).gpus
    got = forward_compat.through_image(FC_MATRIX, CUDA13, "535.104.05", "580", gpus)
    assert isinstance(got, forward_compat.ForwardCompat)
    assert f"on the R535 driver of {gpus[0].name}, {gpus[1].name};" in got.note, got.note
