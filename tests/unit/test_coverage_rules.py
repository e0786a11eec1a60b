"""Every condition of the decisions of what a certificate covers, one table row each that flips
that condition alone: run/coverage.py's checks (image ID, verdict and GPU access, arch per GPU,
model per GPU, driver floor, every NVIDIA_REQUIRE_* variable), choose_certificate's order,
describe_coverage, and fleet/classes.py's class coverage and node features. The rows name the
planted slip each one kills (a check narrowed to the first GPU or variable, a wrong record, a
comparison of a part, a bound off by one). Pure (certificate, image, host) triples from
cert_factory."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cert_factory import IMAGE_ID, OTHER_ID, cert, cert_doc, host, image, reasons
from fake_engine import cpu_stack
from test_attest_envelope import MANIFEST, REPO, _signed
from test_fleet_slurm import GPU_STACK, MATRIX
from test_fleet_slurm import image as labelled_image

from envbuilder.attest.envelope import Refused, Verified, sign_statement, verify_envelope
from envbuilder.attest.imported import import_certificate
from envbuilder.attest.keys import KeyInfo, generate_key, load_signer
from envbuilder.attest.policy import TrustedKey, TrustPolicy, choose_policy, parse_duration
from envbuilder.attest.statement import ImageSubject, certificate_statements
from envbuilder.certify.certificate import Certificate, seal
from envbuilder.certify.store import CertStore
from envbuilder.errors import CertificateRefusedError, SigningKeyError
from envbuilder.fleet.classes import NodeClass, class_coverage, facts_from_features
from envbuilder.fleet.status import class_status
from envbuilder.host import GpuInfo
from envbuilder.image.metadata import LABEL_STACK
from envbuilder.run.coverage import check_run, choose_certificate, describe_coverage


def gpu(i: int, name: str, cc: str | None, brand: str | None = "nvidia") -> GpuInfo:
    return GpuInfo(index=i, name=name, uuid=f"GPU-{i}-{name}", cc=cc, brand=brand)


H200 = gpu(0, "NVIDIA H200", "9.0")
H200_1, H200_2 = replace(H200, index=1, uuid="GPU-b"), replace(H200, index=2, uuid="GPU-c")
A100 = gpu(1, "NVIDIA A100-SXM4-80GB", "8.0")
RTX = gpu(1, "NVIDIA GeForce RTX 3090", "8.6", "geforce")
T4 = gpu(2, "Tesla T4", "7.5", "tesla")
B200 = gpu(2, "NVIDIA B200", "10.0")
NVL = gpu(1, "NVIDIA H200 NVL", "9.0")  # a name that extends H200's
UNKNOWN_CC = replace(H200_1, cc=None)

ALL_GPUS = (H200, A100, RTX, T4, B200)  # the models a certificate of the rows below names


# --------------------------------------------------------------------------- the image ID

HEX = IMAGE_ID.removeprefix("sha256:")


@pytest.mark.parametrize(
    ("cert_id", "image_id", "covered"),
    [
        pytest.param(IMAGE_ID, IMAGE_ID, True, id="same"),
        pytest.param(IMAGE_ID, HEX, True, id="image-without-algorithm"),
        pytest.param(HEX, IMAGE_ID, True, id="cert-without-algorithm"),
        pytest.param(IMAGE_ID, IMAGE_ID[:-1] + "c", False, id="last-hex-differs"),  # [:-1] / short id
        pytest.param(IMAGE_ID, "sha256:cb" + HEX[2:], False, id="first-hex-differs"),
        pytest.param(IMAGE_ID, "sha256:" + HEX[:12], False, id="image-is-the-short-id"),  # startswith
        pytest.param("sha256:" + HEX[:12], IMAGE_ID, False, id="cert-is-the-short-id"),
        pytest.param(IMAGE_ID, IMAGE_ID + "ab", False, id="image-extends-cert"),
        pytest.param(IMAGE_ID, "sha512:" + HEX, False, id="other-algorithm"),  # removeprefix of any alg
        pytest.param(IMAGE_ID, OTHER_ID, False, id="other-image"),
        pytest.param("", IMAGE_ID, False, id="cert-without-id"),  # `if have and ...`
    ],
)
def test_the_image_id_rule(cert_id: str, image_id: str, covered: bool) -> None:
    got = reasons(cert(image_id=cert_id), image(image_id=image_id), host())
    assert got == ([] if covered else ["image-mismatch"])


# --------------------------------------------------------------------------- the seal


@pytest.mark.parametrize(
    ("path", "value", "want"),
    [
        pytest.param(("verdict_reason",), "all good", ["tampered"], id="reason"),
        pytest.param(("host", "driver"), "999.0", ["tampered"], id="host-driver"),
        pytest.param(("host", "gpus"), [], ["tampered", "gpu-model"], id="host-gpus"),
        pytest.param(("image", "stack", "min_driver"), "1.0", ["tampered"], id="stack-floor"),
        pytest.param(("image", "stack", "archs", "sass"), ["9.0", "7.5"], ["tampered"], id="stack-archs"),
        pytest.param(("image", "id"), OTHER_ID, ["tampered", "image-mismatch"], id="image-id"),
        pytest.param(("verdict",), "failed", ["tampered", "failed"], id="verdict"),
    ],
)
def test_an_edited_certificate_is_refused_whatever_field(
    path: tuple[str, ...], value: Any, want: list[str]
) -> None:
    doc = cert_doc()
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert reasons(Certificate(doc), image(), host()) == want


# --------------------------------------------------------------------------- verdict and GPU access


@pytest.mark.parametrize(
    ("verdict", "access", "requested", "gpus", "want"),
    [
        pytest.param("certified", "devices", "auto", (H200,), [], id="certified-gpu-run"),
        pytest.param("certified", "none", "auto", (), ["no-gpu"], id="certified-no-gpu-auto"),
        pytest.param("certified", "none", "devices", (), ["no-gpu"], id="certified-no-gpu-asked"),
        pytest.param("certified", "none", "auto", (H200,), ["no-gpu"], id="certified-gpus-no-mode"),
        pytest.param("certified", "none", "none", (H200,), [], id="certified-cpu-asked"),
        pytest.param("certified-cpu-only", "none", "none", (), [], id="cpu-only-cpu-run"),
        pytest.param("certified-cpu-only", "none", "auto", (), [], id="cpu-only-no-gpu-here"),
        pytest.param("certified-cpu-only", "devices", "auto", (H200,), ["cpu-only"], id="cpu-only-devices"),
        pytest.param("certified-cpu-only", "toolkit", "auto", (H200,), ["cpu-only"], id="cpu-only-toolkit"),
        pytest.param("certified-cpu-only", "cdi", "cdi", (H200,), ["cpu-only"], id="cpu-only-cdi"),
        pytest.param("failed", "devices", "auto", (H200,), ["failed"], id="failed-gpu-run"),
        pytest.param("failed", "none", "none", (), ["failed"], id="failed-cpu-run"),
    ],
)
def test_the_verdict_and_access_rules(
    verdict: str, access: str, requested: str, gpus: tuple[GpuInfo, ...], want: list[str]
) -> None:
    h = host(gpus=gpus, access=access, requested=requested)
    assert reasons(cert(verdict, gpus=(H200,)), image(), h) == want


def test_a_cpu_only_certificate_is_not_judged_on_the_gpu_models_it_never_saw() -> None:
    """check_gpu_model applies to a GPU certificate only: a CPU-only one on a GPU run is refused
    as cpu-only, never also as gpu-model (`_gpu_cert` dropped)."""
    assert reasons(cert("certified-cpu-only", gpus=()), image(), host(gpus=(H200, RTX))) == ["cpu-only"]


@pytest.mark.parametrize(
    "host_over",
    [
        pytest.param({"gpus": (RTX,)}, id="uncertified-model"),
        pytest.param({"gpus": (T4,)}, id="uncovered-arch"),
        pytest.param({"driver": None, "cuda_driver": None}, id="no-driver"),
        pytest.param({"driver": "470.1", "cuda_driver": "11.4"}, id="old-driver"),
        pytest.param({"gpus": (H200, RTX, T4), "driver": None}, id="all-at-once"),
    ],
)
def test_a_run_on_the_cpu_is_held_to_no_gpu_rule(host_over: dict[str, Any]) -> None:
    """--gpu-access none: no GPU is handed in, so neither the models, the archs, the driver floor
    nor NVIDIA_REQUIRE_* apply to the GPUs or driver the host happens to have."""
    c = cert(gpus=(H200,), archs={"sass": ["9.0"], "ptx": []})
    cpu = host(access="none", requested="none", **host_over)
    assert reasons(c, image(env=("NVIDIA_REQUIRE_CUDA=cuda>=99.0",)), cpu) == []


# --------------------------------------------------------------------------- the arch of every GPU


@pytest.mark.parametrize(
    ("sass", "ptx", "gpus", "refused"),
    [
        pytest.param(["9.0"], [], (H200,), False, id="sass-exact"),
        pytest.param(["8.0"], [], (RTX,), False, id="sass-same-major-older-minor"),
        pytest.param(["8.6"], [], (A100,), True, id="sass-same-major-newer-minor"),
        pytest.param(["8.0"], [], (H200,), True, id="sass-older-major"),
        pytest.param(["10.0"], [], (H200,), True, id="sass-newer-major"),
        pytest.param([], ["8.0"], (H200,), False, id="ptx-older-jits"),
        pytest.param([], ["9.0"], (H200,), False, id="ptx-exact"),
        pytest.param([], ["9.0"], (RTX,), True, id="ptx-newer"),
        pytest.param([], ["9.0a"], (B200,), True, id="ptx-arch-specific-elsewhere"),
        pytest.param(["9.0a"], [], (H200,), False, id="sass-arch-specific-exact"),
        pytest.param(["8.0"], ["12.0", "9.0"], (H200,), False, id="second-ptx-covers"),
        pytest.param(["9.0"], [], (H200, H200_1, A100), True, id="third-gpu-uncovered"),
        pytest.param(["9.0"], [], (H200, A100, H200_2), True, id="second-gpu-uncovered"),
        pytest.param(["9.0"], [], (A100, H200_1, H200_2), True, id="first-gpu-uncovered"),
        pytest.param(["9.0"], [], (H200, UNKNOWN_CC), False, id="unknown-cc-left-out"),
        pytest.param(["9.0"], [], (UNKNOWN_CC, A100), True, id="unknown-cc-then-uncovered"),
        pytest.param(["7.5", "8.0", "9.0", "10.0"], [], (T4, A100, H200, B200), False, id="each-own-sass"),
    ],
)
def test_the_arch_rule_on_every_gpu(
    sass: list[str], ptx: list[str], gpus: tuple[GpuInfo, ...], refused: bool
) -> None:
    c = cert(gpus=ALL_GPUS, archs={"sass": sass, "ptx": ptx})
    assert reasons(c, image(), host(gpus=gpus)) == (["gpu-arch"] if refused else [])


def test_an_arch_refusal_names_only_the_uncovered_gpus() -> None:
    c = cert(gpus=ALL_GPUS, archs={"sass": ["9.0"], "ptx": []})
    (r,) = check_run(c, image(), host(gpus=(H200, A100, H200_2, T4)))
    assert "nothing runs on NVIDIA A100-SXM4-80GB (compute capability 8.0), Tesla T4" in r.message
    assert "NVIDIA H200 (" not in r.message


@pytest.mark.parametrize(
    ("stack_over", "access", "requested"),
    [
        pytest.param({"cuda": None, "min_driver": None}, "devices", "auto", id="cpu-build"),
        pytest.param({"cuda": ""}, "devices", "auto", id="empty-cuda"),
        pytest.param({}, "none", "none", id="no-gpu-handed-in"),
    ],
)
def test_the_arch_rule_applies_to_a_cuda_build_given_gpus_only(
    stack_over: dict[str, Any], access: str, requested: str
) -> None:
    c = cert(gpus=ALL_GPUS, archs={"sass": ["9.0"], "ptx": []}, **stack_over)
    assert "gpu-arch" not in reasons(c, image(), host(gpus=(A100,), access=access, requested=requested))


# --------------------------------------------------------------------------- the model of every GPU


@pytest.mark.parametrize(
    ("certified", "gpus", "refused"),
    [
        pytest.param((H200,), (H200, H200_1, H200_2), False, id="same-model-thrice"),
        pytest.param((H200,), (H200, H200_1, NVL), True, id="third-is-another-model"),
        pytest.param((H200,), (H200, NVL, H200_2), True, id="second-is-another-model"),
        pytest.param((H200,), (NVL,), True, id="name-extends-certified"),
        pytest.param((NVL,), (H200,), True, id="name-is-prefix-of-certified"),
        pytest.param((H200, NVL), (NVL, H200), False, id="both-certified-other-order"),
        pytest.param((NVL, H200), (H200,), False, id="second-certified-model"),
        pytest.param((H200, NVL), (), False, id="no-gpu-listed"),
    ],
)
def test_the_model_rule_on_every_gpu(
    certified: tuple[GpuInfo, ...], gpus: tuple[GpuInfo, ...], refused: bool
) -> None:
    assert reasons(cert(gpus=certified), image(), host(gpus=gpus)) == (["gpu-model"] if refused else [])


# --------------------------------------------------------------------------- the driver floor


@pytest.mark.parametrize(
    ("floor", "driver", "refused"),
    [
        pytest.param("580.65.06", "580.65.06", False, id="at-floor"),
        pytest.param("580.65.06", "580.65.05", True, id="patch-below"),
        pytest.param("580.65.06", "580.64.99", True, id="minor-below-patch-above"),
        pytest.param("580.65.06", "580.66", False, id="minor-above-no-patch"),
        pytest.param("580.65.06", "580.65", True, id="patch-missing-is-zero"),
        pytest.param("580.65.06", "580", True, id="branch-alone"),  # major-only compare
        pytest.param("580.65.06", "580.9.99", True, id="minor-9-below-65"),  # compared as text
        pytest.param("580.65.06", "581.0.0", False, id="next-major"),
        pytest.param("580.65.06", "579.99.99", True, id="previous-major"),
        pytest.param("580.65.06", "1000.0", False, id="four-digit-major"),
        pytest.param("580", "580.0.0", False, id="branch-floor-at"),
        pytest.param("580", "579.9", True, id="branch-floor-below"),
        pytest.param("580.65.06", None, True, id="no-driver"),
        pytest.param("580.65.06", "n/a", True, id="unreadable-driver"),
        pytest.param(None, None, False, id="no-floor-no-driver"),
        pytest.param("", "1.0", False, id="empty-floor"),
    ],
)
def test_the_driver_floor_rule(floor: str | None, driver: str | None, refused: bool) -> None:
    got = reasons(cert(min_driver=floor), image(), host(driver=driver))
    assert got == (["driver-too-old"] if refused else [])


def test_the_driver_floor_is_the_certificates_own_stack_not_another_certificates() -> None:
    """Two certificates of one image: the one with the lower floor covers an older driver, and
    is chosen whichever comes first; the other's refusal is never taken for it."""
    strict, lax = cert(min_driver="590.0"), cert(min_driver="580.0")
    for certs in ([strict, lax], [lax, strict]):
        chosen, refusals = choose_certificate(certs, image(), host(driver="585.1"))
        assert chosen is lax and refusals == []


# --------------------------------------------------------------------------- NVIDIA_REQUIRE_*


def env(*pairs: str) -> tuple[str, ...]:
    return pairs


R, D, A = "NVIDIA_REQUIRE_CUDA=", "NVIDIA_DISABLE_REQUIRE=", "NVIDIA_REQUIRE_ARCH="


@pytest.mark.parametrize(
    ("variables", "host_over", "refused"),
    [
        pytest.param(env(R + "cuda>=13.0"), {}, False, id="cuda-at"),
        pytest.param(env(R + "cuda>=13.0"), {"cuda_driver": "12.9"}, True, id="cuda-below"),
        pytest.param(env(R + "cuda>=13.0.1"), {}, True, id="cuda-patch-above"),
        pytest.param(env(R + "cuda>=12.9"), {"cuda_driver": "12.10"}, False, id="cuda-numeric"),
        pytest.param(env(R + "cuda>12.9"), {"cuda_driver": "12.9"}, True, id="cuda-strict-gt"),
        pytest.param(env(R + "cuda!=13.0"), {}, True, id="cuda-not-equal"),
        pytest.param(env(R + "cuda>=1.0"), {"cuda_driver": None}, True, id="cuda-unknown"),
        pytest.param(env(R + "driver>=1"), {"driver": None}, True, id="driver-unknown"),
        pytest.param(env(R + "driver>=580.65"), {}, False, id="driver-numeric-minor"),
        pytest.param(env(R + "driver>=580.160"), {}, True, id="driver-minor-above"),
        # several variables: each holds, not only the first (in name order) or the last
        pytest.param(
            env(R + "cuda>=13.0", "NVIDIA_REQUIRE_DRIVER=driver>=600"),
            {}, True, id="later-variable-fails",
        ),
        pytest.param(
            env("NVIDIA_REQUIRE_ZZZ=cuda>=99.0", R + "cuda>=13.0", "NVIDIA_REQUIRE_ARCH=arch>=7.0"),
            {}, True, id="last-by-name-fails",
        ),
        pytest.param(
            env("NVIDIA_REQUIRE_AAA=cuda>=99.0", R + "cuda>=13.0"),
            {}, True, id="first-by-name-fails",
        ),
        pytest.param(
            env("NVIDIA_REQUIRE_A=cuda>=12.0", "NVIDIA_REQUIRE_B=cuda>=13.0", "NVIDIA_REQUIRE_C=driver>=580"),
            {}, False, id="three-hold",
        ),
        # every GPU: the arch or brand of a later GPU decides
        pytest.param(env(A + "arch>=9.0"), {"gpus": (H200, H200_1, A100)}, True, id="arch-third"),
        pytest.param(env(A + "arch>=9.0"), {"gpus": (H200, A100, H200_2)}, True, id="arch-second"),
        pytest.param(env(A + "arch>=8.0"), {"gpus": (H200, A100, H200_2)}, False, id="arch-all"),
        pytest.param(
            env(R + "cuda>=99.0 brand=nvidia,driver>=580,driver<581"),
            {"gpus": (H200, H200_1, T4)}, True, id="exemption-not-third-brand",
        ),
        pytest.param(
            env(R + "cuda>=99.0 brand=nvidia,driver>=580,driver<581"),
            {"gpus": (H200, H200_1)}, False, id="exemption-every-gpu",
        ),
        # terms OR-ed, factors AND-ed: each factor of the exemption holds
        pytest.param(
            env(R + "cuda>=99.0 brand=nvidia,driver>=580,driver<581"),
            {"driver": "581.0.1"}, True, id="exemption-upper-bound",
        ),
        pytest.param(
            env(R + "cuda>=99.0 brand=nvidia,driver>=580,driver<581"),
            {"driver": "579.9"}, True, id="exemption-lower-bound",
        ),
        pytest.param(
            env(R + "cuda>=99.0 brand=tesla,driver>=580,driver<581"),
            {}, True, id="exemption-other-brand",
        ),
        pytest.param(
            env(R + "cuda>=99.0 brand=tesla,driver>=580 brand=nvidia,driver>=580"),
            {}, False, id="third-term-holds",
        ),
        pytest.param(
            env(R + "brand=nvidia"), {"gpus": ()}, True, id="brand-of-no-gpu",
        ),
        pytest.param(env(R + "cuda>=13.0"), {"gpus": ()}, False, id="cuda-of-no-gpu"),
        # malformed anywhere: the toolkit refuses the container, a holding term notwithstanding
        pytest.param(env(R + "cuda>=13.0 driver"), {}, True, id="later-term-no-operator"),
        pytest.param(env(R + "cuda>=13.0.0.0"), {}, True, id="four-part-version"),
        pytest.param(env(R + "cuda=>13.0"), {}, True, id="swapped-operator"),
        pytest.param(env(R + "cuda>=13.0,foo>=1"), {}, False, id="unknown-property"),
        pytest.param(env(R + ""), {}, False, id="empty-requirement"),
        # which variables count
        pytest.param(env("NVIDIA_REQUIRE_JETPACK=cuda>=99.0"), {}, False, id="jetpack"),
        pytest.param(env("NVIDIA_REQUIRED_X=cuda>=99.0"), {}, False, id="not-a-require-variable"),
        pytest.param(env("CUDA_VERSION=13.1.0"), {}, True, id="legacy-minor-above"),
        pytest.param(env("CUDA_VERSION=13.0.2"), {}, False, id="legacy-patch-ignored"),
        pytest.param(
            env("CUDA_VERSION=99.0", R + "cuda>=13.0"), {}, False, id="legacy-overridden",
        ),
        pytest.param(
            env(R + "cuda>=99.0", R + "cuda>=13.0"), {}, False, id="later-env-wins",
        ),
        pytest.param(
            env(R + "cuda>=13.0", R + "cuda>=99.0"), {}, True, id="later-env-fails",
        ),
        pytest.param(env(R + "cuda>=99.0", D + "1"), {}, False, id="disabled"),
        pytest.param(env(R + "cuda>=99.0", D + "0"), {}, True, id="disable-0"),
        pytest.param(
            env(R + "cuda>=99.0", D + "false"), {}, True, id="disable-false",
        ),
        pytest.param(env(R + "cuda>=99.0", D + "yes"), {}, True, id="disable-yes"),
        pytest.param(env(R + "cuda>=99.0", D + ""), {}, True, id="disable-empty"),
        pytest.param(
            env(R + "cuda>=99.0"),
            {"gpus": (), "access": "none", "requested": "none"}, False, id="cpu-run",
        ),
    ],
)  # fmt: skip
def test_the_require_rules(variables: tuple[str, ...], host_over: dict[str, Any], refused: bool) -> None:
    c = cert(gpus=ALL_GPUS, min_driver=None)  # the floor out of the way: only the variables decide
    got = reasons(c, image(env=variables), host(**host_over))
    assert got == (["require-cuda"] if refused else [])


# --------------------------------------------------------------------------- which certificate


@pytest.mark.parametrize(
    ("order", "chosen", "want"),
    [
        pytest.param(("good",), "good", [], id="one-covering"),
        pytest.param(("old-driver", "good"), "good", [], id="second-covers"),
        pytest.param(("old-driver", "moved", "good"), "good", [], id="third-covers"),
        pytest.param(("good", "old-driver"), "good", [], id="first-covers"),
        pytest.param(("old-driver", "moved"), "old-driver", ["driver-too-old"], id="none-newest-shown"),
        pytest.param(("moved", "old-driver"), "moved", ["image-mismatch"], id="none-newest-shown-other"),
        pytest.param((), None, ["no-certificate"], id="none-at-all"),
    ],
)
def test_the_covering_certificate_is_the_first_that_covers(
    order: tuple[str, ...], chosen: str | None, want: list[str]
) -> None:
    made = {
        "good": cert(issued_at="2026-12-01T00:00:00Z"),
        "old-driver": cert(min_driver="999.0"),
        "moved": cert(image_id=OTHER_ID),
    }
    got, refusals = choose_certificate([made[k] for k in order], image(), host())
    assert got is (made[chosen] if chosen else None)
    assert [r.reason for r in refusals] == want


@pytest.mark.parametrize(
    ("verdict", "gpu_runs", "cpu_runs", "gpus", "min_driver"),
    [
        pytest.param("certified", True, True, ["NVIDIA H200"], "580.65.06", id="certified"),
        pytest.param("certified-cpu-only", False, True, [], None, id="cpu-only"),
        pytest.param("failed", False, False, [], None, id="failed"),
    ],
)
def test_what_a_certificate_lets_run_start(
    verdict: str, gpu_runs: bool, cpu_runs: bool, gpus: list[str], min_driver: str | None
) -> None:
    got = describe_coverage(cert(verdict))
    assert (got["gpu_runs"], got["cpu_runs"], got["min_driver"]) == (gpu_runs, cpu_runs, min_driver)
    assert [g["name"] for g in got["gpus"]] == gpus


# --------------------------------------------------------------------------- fleet: the classes covered

H200_CLASS = NodeClass(
    name="h200",
    scheduler="slurm",
    nodes=("n1",),
    gpus_per_node=8,
    gpu_model="NVIDIA H200",
    nvml_names=("NVIDIA H200",),
    cc="9.0",
    brand="nvidia",
    driver="580.95.05",
)


# a class of GPUs no known model names (fleet/classes.py: its compute capability from a node
# feature such as sm_90): no model, no NVML name, no brand
NO_BRAND: dict[str, Any] = {"gpu_model": None, "nvml_names": (), "brand": None, "gpu_type": None}


def stack_image(env: tuple[str, ...] = (), **stack_over: Any) -> Any:
    return replace(labelled_image(replace(GPU_STACK, **stack_over)), env=env)


@pytest.mark.parametrize(
    ("class_over", "stack_over", "env_over", "status", "tags"),
    [
        pytest.param({}, {}, (), "covered", [], id="covered"),
        pytest.param({"driver": "580.65.06"}, {}, (), "covered", [], id="driver-at-floor"),
        pytest.param({"driver": "580.65.05"}, {}, (), "not-covered", ["[driver-too-old]"], id="driver-below"),
        pytest.param({"driver": "580"}, {}, (), "not-covered", ["[driver-too-old]"], id="branch-below-floor"),
        pytest.param({"driver": "580.9.1"}, {}, (), "not-covered", ["[driver-too-old]"], id="driver-as-text"),
        pytest.param({"cc": "8.0"}, {}, (), "covered", [], id="sm80-in-sass"),
        pytest.param({"cc": "8.9"}, {"sass": ("9.0",), "ptx": ()}, (), "not-covered", ["[gpu-arch]"],
                     id="arch"),
        pytest.param({"cc": "12.1"}, {"sass": ("9.0",), "ptx": ("12.0",)}, (), "covered", [], id="ptx-jit"),
        pytest.param({}, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0",), "not-covered", ["[require-cuda]"],
                     id="require"),
        pytest.param(
            {}, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=12.0", "NVIDIA_REQUIRE_ZZ=driver>=999"),
            "not-covered", ["[require-cuda]"], id="require-later-variable",
        ),
        pytest.param(
            {}, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=nvidia,driver>=580,driver<581",),
            "covered", [], id="require-brand-exemption",
        ),
        pytest.param(
            {"brand": "geforce"}, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=nvidia,driver>=580,driver<581",),
            "not-covered", ["[require-cuda]"], id="require-other-brand",
        ),
        pytest.param(
            {"driver": "570.1"}, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0",),
            "not-covered", ["[driver-too-old]", "[require-cuda]"], id="floor-and-require",
        ),
        # a class whose GPU model is unknown (compute capability from a node feature) has no brand:
        # unknown where a brand exemption would decide, refused where none would
        pytest.param(
            NO_BRAND, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=nvidia,driver>=580,driver<581",),
            "unknown", ["brand unknown"], id="require-brand-unknown",
        ),
        pytest.param(
            NO_BRAND, {},
            ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=tesla,driver>=580 brand=nvidia,driver>=580",),
            "unknown", ["brand nvidia, tesla"], id="require-brand-unknown-two-brands",
        ),
        pytest.param(NO_BRAND, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0",), "not-covered", ["[require-cuda]"],
                     id="require-no-brand-named-brand-unknown"),
        pytest.param(
            NO_BRAND, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=nvidia,driver>=570,driver<571",),
            "not-covered", ["[require-cuda]"], id="require-exemption-of-another-driver-brand-unknown",
        ),
        pytest.param(
            NO_BRAND, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=12.0 brand=nvidia,driver>=580,driver<581",),
            "covered", [], id="require-holds-whatever-the-brand",
        ),
        pytest.param(NO_BRAND, {}, (), "covered", [], id="no-requirement-brand-unknown"),
        pytest.param(
            {**NO_BRAND, "driver": "570.1"}, {},
            ("NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=nvidia,driver>=570,driver<571",),
            "not-covered", ["[driver-too-old]", "brand unknown"], id="floor-fails-brand-unknown",
        ),
        pytest.param(
            NO_BRAND, {}, ("NVIDIA_REQUIRE_CUDA=cuda>=12.0", "NVIDIA_REQUIRE_ZZ=driver>=999 brand=nvidia"),
            "unknown", ["brand unknown"], id="require-later-variable-brand-unknown",
        ),
        pytest.param({"cc": None}, {}, (), "unknown", ["compute capability unknown"], id="cc-unknown"),
        pytest.param({"driver": None}, {}, (), "unknown", ["driver unknown"], id="driver-unknown"),
        pytest.param(
            {"cc": None, "driver": None}, {}, (), "unknown",
            ["compute capability unknown", "driver unknown"], id="both-unknown",
        ),
        pytest.param(
            {"cc": "8.0", "driver": None}, {"sass": ("9.0",), "ptx": ()}, (), "not-covered",
            ["[gpu-arch]", "driver unknown"], id="arch-fails-driver-unknown",
        ),
        pytest.param(
            {"cc": None, "driver": "570.1"}, {}, (), "not-covered",
            ["[driver-too-old]", "compute capability unknown"], id="driver-fails-cc-unknown",
        ),
        pytest.param({"gpus_per_node": 0}, {}, (), "no-gpu", ["no GPUs"], id="no-gpus"),
        pytest.param({"gpus_per_node": 1}, {}, (), "covered", [], id="one-gpu"),
        pytest.param({}, {"cuda": None}, (), "not-covered", ["CPU-only"], id="cpu-stack"),
        pytest.param({}, {"cuda": ""}, (), "not-covered", ["CPU-only"], id="cpu-stack-empty-cuda"),
        pytest.param({}, {"min_driver": None}, (), "covered", [], id="no-floor"),
    ],
)  # fmt: skip
def test_the_class_coverage_rules(
    class_over: dict[str, Any],
    stack_over: dict[str, Any],
    env_over: tuple[str, ...],
    status: str,
    tags: list[str],
) -> None:
    got = class_coverage(replace(H200_CLASS, **class_over), stack_image(env_over, **stack_over), MATRIX)
    assert got.status == status, got.reasons
    assert len(got.reasons) == max(len(tags), 1)
    for reason, tag in zip(got.reasons, tags, strict=False):
        assert tag in reason, got.reasons


@pytest.mark.parametrize(
    ("labels", "status"),
    [
        pytest.param(None, "unknown", id="no-label"),
        pytest.param("not json", "unknown", id="unparsed-label"),
        pytest.param("[]", "unknown", id="label-not-a-mapping"),
    ],
)
def test_a_class_is_unknown_for_an_image_without_a_readable_stack(labels: str | None, status: str) -> None:
    img = labelled_image(None)
    if labels is not None:
        img = replace(img, labels={**img.labels, LABEL_STACK: labels})
    assert class_coverage(H200_CLASS, img, MATRIX).status == status


def test_a_cpu_stack_label_covers_no_gpu_class() -> None:
    assert class_coverage(H200_CLASS, labelled_image(cpu_stack()), MATRIX).status == "not-covered"


@pytest.mark.parametrize(
    ("features", "driver", "cc"),
    [
        pytest.param(("nvidia_driver_580.95.05",), "580.95.05", None, id="nvidia-driver"),
        pytest.param(("nvidia-driver-580",), "580", None, id="dashes-branch"),
        pytest.param(("drv580.95",), "580.95", None, id="drv"),
        pytest.param(("DRIVER_580.95.05",), "580.95.05", None, id="upper-case"),
        pytest.param(("driver_580.95.05.1",), None, None, id="four-parts"),
        pytest.param(("mydriver_580",), None, None, id="prefixed"),
        pytest.param(("driver_580", "driver_550"), "580", None, id="first-driver-wins"),
        pytest.param(("ib", "nvme", "driver_550"), "550", None, id="third-feature"),
        pytest.param(("sm_90",), None, "9.0", id="sm-underscore"),
        pytest.param(("sm120",), None, "12.0", id="sm-two-digit-major"),
        pytest.param(("SM_86",), None, "8.6", id="sm-upper"),
        pytest.param(("sm_9",), None, None, id="sm-one-digit"),
        pytest.param(("sm_90", "sm_80"), None, "9.0", id="first-cc-wins"),
        pytest.param(("sm_90x",), None, None, id="sm-suffix"),
        pytest.param(("a", "sm_100", "driver_580"), "580", "10.0", id="both-later"),
    ],
)
def test_the_node_features_rules(features: tuple[str, ...], driver: str | None, cc: str | None) -> None:
    got_driver, got_cc, facts = facts_from_features(features)
    assert (got_driver, got_cc) == (driver, cc)
    assert len(facts) == (driver is not None) + (cc is not None)


def test_the_classes_certificate_view_reads_the_images_own_stack() -> None:
    """class_coverage reads the stack the image's label names (what a certificate of the image
    would carry): the image of another stack gives another answer on one class."""
    strict = stack_image(min_driver="590.0")
    assert class_coverage(H200_CLASS, strict, MATRIX).status == "not-covered"
    assert class_coverage(H200_CLASS, stack_image(), MATRIX).status == "covered"


# --------------------------------------------------------------------------- attest: whose signature
# covers what. The trust policy's scope per repository, the signer matched by keyid (never by its key name),
# max_age at its edge, and --max-age (attest/policy.py, attest/envelope.py).

NOW = datetime(2026, 12, 6, 12, 0, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("patterns", "repository", "covered"),
    [
        pytest.param((), "any.example/x", True, id="no-patterns-all"),
        pytest.param(("reg.example/team/*",), REPO, True, id="wildcard"),
        pytest.param(("reg.example/team/train",), REPO, True, id="exact"),
        pytest.param(("reg.example/team/train",), REPO + "2", False, id="prefix-sharing-repo"),
        pytest.param(("reg.example/team/train2",), REPO, False, id="pattern-extends-repo"),
        pytest.param(("reg.example/team/train",), "reg.example/team", False, id="parent-repo"),
        pytest.param(("reg.example/team/*",), "Reg.example/team/train", False, id="case-differs"),
        pytest.param(("reg.example/team/*",), "reg.example/teams/train", False, id="sibling-namespace"),
        pytest.param(("other/*", "reg.example/team/*"), REPO, True, id="second-pattern"),
        pytest.param(("other/*", "more/*", "reg.example/*"), REPO, True, id="third-pattern"),
        pytest.param(("other/*", "more/*"), REPO, False, id="none-of-two"),
    ],
)
def test_the_key_scope_rule(patterns: tuple[str, ...], repository: str, covered: bool, signer: Any) -> None:
    key = TrustedKey(name="ci", key=signer.public_key, repositories=patterns)
    assert key.covers(repository) is covered
    policy = TrustPolicy(keys=(TrustedKey(name="x", key=signer.public_key, repositories=("nowhere/*",)), key))
    assert policy.keys_for(repository) == ([key] if covered else [])


@pytest.fixture(scope="module")
def ci_key(tmp_path_factory: pytest.TempPathFactory) -> KeyInfo:
    return generate_key("ci", directory=tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def signer(ci_key: KeyInfo) -> Any:
    return load_signer(ci_key)


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_signer(generate_key("other", directory=tmp_path_factory.mktemp("keys")))


# (name, which key, repositories) per trusted key: "signer" signed, "other" did not
KEYS_FOR = {
    "all": (("ci", "signer", ()),),
    "repo": (("ci", "signer", ("reg.example/team/*",)),),
    "elsewhere": (("ci", "signer", ("other/*",)),),
    "prefix-sharing": (("ci", "signer", ("reg.example/team/train2",)),),
    "shared-name-elsewhere": (("ci", "signer", ("other/*",)), ("ci", "other", ("reg.example/team/*",))),
    "shared-name-here": (("ci", "other", ("other/*",)), ("ci", "signer", ("reg.example/team/*",))),
    "other-key-only": (("ci", "other", ()),),
    "second-key": (("a", "other", ()), ("b", "signer", ("reg.example/*",))),
    "third-key": (("a", "other", ()), ("b", "other", ("x/*",)), ("c", "signer", ())),
    "none": (),
}


@pytest.mark.parametrize("repository", [REPO, None], ids=["pull", "file-import"])
@pytest.mark.parametrize(
    ("keys", "want"),
    [
        pytest.param("all", "ci", id="all"),
        pytest.param("repo", "ci", id="repo"),
        pytest.param("elsewhere", "untrusted-key", id="elsewhere"),
        pytest.param("prefix-sharing", "untrusted-key", id="prefix-sharing"),
        pytest.param("shared-name-elsewhere", "untrusted-key", id="shared-name-elsewhere"),
        pytest.param("shared-name-here", "ci", id="shared-name-here"),
        pytest.param("other-key-only", "untrusted-key", id="other-key-only"),
        pytest.param("second-key", "b", id="second-key"),
        pytest.param("third-key", "c", id="third-key"),
        pytest.param("none", "untrusted-key", id="no-keys"),
    ],
)
def test_the_signer_rule(keys: str, want: str, repository: str | None, signer: Any, other: Any) -> None:
    """The signer is the trusted key whose keyid signed, for the repository asked (a pull) or a
    repository the statement names (a file): its name is only what the policy calls it."""
    by = {"signer": signer, "other": other}
    policy = TrustPolicy(
        keys=tuple(TrustedKey(name=n, key=by[k].public_key, repositories=r) for n, k, r in KEYS_FOR[keys])
    )
    raw = _signed(signer)
    out = verify_envelope(raw, repository=repository, digest=MANIFEST if repository else None, policy=policy)
    if want == "untrusted-key":
        assert isinstance(out, Refused) and out.reason == want, out
    else:
        assert isinstance(out, Verified), out
        assert (out.key_name, out.keyid) == (want, signer.public_key.keyid)


@pytest.mark.parametrize(
    ("issued", "max_age_s", "refused"),
    [
        pytest.param(NOW - timedelta(days=30), 30 * 86400, False, id="at-max-age"),
        pytest.param(NOW - timedelta(days=30, seconds=1), 30 * 86400, True, id="a-second-past"),
        pytest.param(NOW - timedelta(days=29, hours=23), 30 * 86400, False, id="inside"),
        pytest.param(NOW - timedelta(days=400), None, False, id="no-max-age"),
    ],
)
def test_the_max_age_rule(
    issued: datetime | None, max_age_s: float | None, refused: bool, signer: Any
) -> None:
    stamp = issued.strftime("%Y-%m-%dT%H:%M:%SZ") if issued else None
    policy = TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key),)).with_max_age(max_age_s)
    out = verify_envelope(
        _signed(signer, cert_doc(issued_at=stamp)), repository=REPO, digest=MANIFEST, policy=policy, now=NOW
    )
    assert (isinstance(out, Refused) and out.reason == "expired") is refused, out


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30d", 30 * 86400.0, id="days"),
        pytest.param("2w", 14 * 86400.0, id="weeks"),
        pytest.param("90m", 5400.0, id="minutes"),
        pytest.param("12h", 43200.0, id="hours"),
        pytest.param("45", 45.0, id="bare-seconds"),
        pytest.param(" 1.5h ", 5400.0, id="fraction-spaces"),
        pytest.param(60, 60.0, id="a-number"),
        pytest.param("36500d", 36500 * 86400.0, id="100-years"),
        pytest.param("36501d", None, id="past-100-years"),
        pytest.param("0", None, id="zero"),
        pytest.param("0d", None, id="zero-days"),
        pytest.param(0, None, id="zero-number"),
        pytest.param(-5, None, id="negative-number"),
        pytest.param("-5d", None, id="negative"),
        pytest.param("", None, id="empty"),
        pytest.param(" ", None, id="space"),
        pytest.param("1y", None, id="years"),
        pytest.param("1e3", None, id="exponent"),
        pytest.param("30 d x", None, id="trailing"),
        pytest.param("\u0663d", None, id="arabic-digit"),
        pytest.param(True, None, id="bool"),
        pytest.param(float("nan"), None, id="nan"),
        pytest.param(float("inf"), None, id="inf"),
    ],
)
def test_the_duration_rule(text: Any, seconds: float | None) -> None:
    if seconds is None:
        with pytest.raises(SigningKeyError):
            parse_duration(text)
    else:
        assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("max_age", "want"),
    [
        pytest.param(None, 7 * 86400.0, id="the-policys-own"),
        pytest.param("1d", 86400.0, id="overridden"),
        pytest.param("", SigningKeyError, id="empty-refused"),
        pytest.param("0", SigningKeyError, id="zero-refused"),
        pytest.param(" ", SigningKeyError, id="space-refused"),
    ],
)
def test_the_max_age_option_rule(max_age: str | None, want: Any, ci_key: KeyInfo, tmp_path: Path) -> None:
    pub = tmp_path / "ci.pub"
    pub.write_bytes(ci_key.public_path.read_bytes())
    trust = tmp_path / "trust.yaml"
    trust.write_text("schema_version: 1\nmax_age: 7d\nkeys:\n  - name: ci\n    public_key: ci.pub\n")
    if want is SigningKeyError:
        with pytest.raises(SigningKeyError):
            choose_policy(trust=trust, max_age=max_age)
    else:
        assert choose_policy(trust=trust, max_age=max_age).max_age_s == want
    with pytest.raises(SigningKeyError):
        choose_policy(keys=(pub,), trust=trust, max_age=max_age)


def with_signatures_before(raw: bytes, *keyids: str) -> bytes:
    """The envelope with a signature of each of `keyids` (of nothing: it never verifies) before
    its own."""
    doc = json.loads(raw)
    junk = base64.b64encode(b"\x30\x06\x02\x01\x01\x02\x01\x01").decode()
    doc["signatures"] = [{"keyid": k, "sig": junk} for k in keyids] + doc["signatures"]
    return json.dumps(doc).encode()


@pytest.mark.parametrize("first", ["untrusted", "trusted-bad"])
def test_the_signer_is_any_signature_of_a_trusted_key_not_only_the_first(
    first: str, signer: Any, other: Any
) -> None:
    """An envelope signed twice: the first signature by a key the policy does not trust, or by
    a trusted key whose signature does not verify; the second by the trusted signer. The
    signer's signature is found (each keyid, each candidate), and named by its own key."""
    keys = (TrustedKey(name="other", key=other.public_key), TrustedKey(name="ci", key=signer.public_key))
    policy = TrustPolicy(keys=keys if first == "trusted-bad" else keys[1:])
    raw = with_signatures_before(_signed(signer), other.public_key.keyid)
    out = verify_envelope(raw, repository=REPO, digest=MANIFEST, policy=policy)
    assert isinstance(out, Verified), out
    assert (out.key_name, out.keyid) == ("ci", signer.public_key.keyid)


# --------------------------------------------------------------------------- fleet: the newest per class


def class_cert(node_class: str | None, day: int, verdict: str = "certified") -> Certificate:
    """A certificate of `node_class` (None: made outside a fleet) issued on December `day`."""
    doc = cert_doc(verdict, issued_at=f"2026-12-{day:02d}T00:00:00Z")
    run = {"scheduler": {"class": node_class, "name": "slurm"}} if node_class else {}
    return Certificate(seal({**doc, "run": run}))


@pytest.mark.parametrize(
    ("made", "want"),
    [
        pytest.param([("h200", 1), ("h200", 3)], {"h200": 3}, id="newer-second"),
        pytest.param([("h200", 3), ("h200", 1)], {"h200": 3}, id="newer-first"),
        pytest.param([("h200", 1), ("h200", 2), ("h200", 5)], {"h200": 5}, id="newest-third"),
        pytest.param(
            [("a100", 4), ("h200", 1), ("a100", 2), ("h200", 3)], {"a100": 4, "h200": 3}, id="two-classes"
        ),
        pytest.param([("h200", 2), ("h200x", 3)], {"h200": 2, "h200x": 3}, id="class-names-sharing-a-prefix"),
        pytest.param([(None, 1), ("h200", 2)], {"host:00": 1, "h200": 2}, id="outside-a-fleet"),
        pytest.param([("", 1)], {"host:00": 1}, id="empty-class"),
    ],
)
def test_the_newest_certificate_of_each_class_rule(
    made: list[tuple[str | None, int]], want: dict[str, int]
) -> None:
    got = class_status([class_cert(c, d) for c, d in made])
    assert [s.node_class for s in got] == sorted(want)
    assert {s.node_class: s.issued_at for s in got} == {
        k: f"2026-12-{d:02d}T00:00:00Z" for k, d in want.items()
    }


@pytest.mark.parametrize(
    ("local", "signed", "source"),
    [
        pytest.param([1], [], "local store", id="local"),
        pytest.param([], [1], "signed by ci", id="signed"),
        pytest.param([1], [1], "signed by ci", id="both"),
        pytest.param([1], [3], "signed by ci", id="signed-newer"),
        pytest.param([3], [1], "local store", id="local-newer"),
    ],
)
def test_the_source_of_a_class_status_rule(local: list[int], signed: list[int], source: str) -> None:
    got = class_status(
        [class_cert("h200", d) for d in local], [(class_cert("h200", d), "ci") for d in signed]
    )
    assert [(s.node_class, s.source) for s in got] == [("h200", source)]


# --------------------------------------------------------------------------- an imported envelope's name

NAMES = ("reg.example/team/train", "reg.example/team/train2", "reg.example/lab/train")


@pytest.mark.parametrize(
    ("keys", "stored"),
    [
        pytest.param((("ci", "signer", ()),), NAMES[0], id="all-first-name"),
        pytest.param((("ci", "signer", (NAMES[1],)),), NAMES[1], id="second-name"),
        pytest.param((("ci", "signer", ("reg.example/lab/*",)),), NAMES[2], id="third-name"),
        pytest.param((("ci", "signer", (NAMES[1], NAMES[2])),), NAMES[1], id="first-covered"),
        pytest.param((("ci", "other", (NAMES[0],)), ("ci", "signer", (NAMES[2],))), NAMES[2], id="by-keyid"),
        pytest.param((("ci", "signer", ("reg.example/team/train2*",)),), NAMES[1], id="prefix-sharing"),
        pytest.param((("ci", "signer", ("elsewhere/*",)),), None, id="none-covered"),
    ],
)
def test_an_imported_envelope_is_stored_under_a_name_its_signer_is_trusted_for(
    keys: tuple[tuple[str, str, tuple[str, ...]], ...],
    stored: str | None,
    signer: Any,
    other: Any,
    tmp_path: Path,
) -> None:
    """A signed statement naming three repositories: the envelope is kept under the first name
    the signer's key (by keyid) is trusted for, never merely the first name."""
    by = {"signer": signer, "other": other}
    policy = TrustPolicy(
        keys=tuple(TrustedKey(name=n, key=by[k].public_key, repositories=r) for n, k, r in keys)
    )
    certificate = Certificate(cert_doc())
    subjects = [ImageSubject(repository=n, manifest_digest=MANIFEST, image_id=IMAGE_ID) for n in NAMES]
    doc = certificate_statements(certificate, subjects[0])[0]
    doc["subject"] = [d for s in subjects for d in s.descriptors()]
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(doc, signer))
    store = CertStore(tmp_path / "store.sqlite")
    if stored is None:
        with pytest.raises(CertificateRefusedError, match=r"\[untrusted-key\]"):
            import_certificate(path, store=store, policy=lambda: policy)
        return
    done = import_certificate(path, store=store, policy=lambda: policy)
    assert [e.repository for e in store.envelopes(done.id)] == [stored]
