"""Issue 23 item 14: every condition of `run`'s "does this certificate cover this run" decision
(run/coverage.py, and the local lookup of run/certificates.py) pinned by a test, so that a
plausible one-line bug (a prefix compare, the first GPU only, an unknown driver taken as new
enough, the first passing NVIDIA_REQUIRE_* only, > for >=) fails the unit suite.
benchmarks/mutants.py plants such bugs and counts what these tests catch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from cert_factory import H200, IMAGE_ID, K80, REQUIRE_130, RTX, cert, cert_doc, host, image, reasons

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.host import GpuInfo
from envbuilder.run.certificates import certificate_finder
from envbuilder.run.coverage import check_run, choose_certificate

H100 = GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-4", cc="9.0", brand="nvidia")
T4 = GpuInfo(index=1, name="Tesla T4", uuid="GPU-5", cc="7.5", brand="tesla")
HOPPER_ONLY = {"sass": ["8.0", "9.0"], "ptx": []}  # nothing for the T4's 7.5
# Same first 12, 19 and 63 hex digits as IMAGE_ID ("abab..."): only the last character differs.
TWIN_ID = "sha256:" + "ab" * 31 + "ac"


# --------------------------------------------------------------------------- the image ID


@pytest.mark.parametrize(
    "other", [TWIN_ID, "sha256:" + "ab" * 6 + "cd" * 26, TWIN_ID.removeprefix("sha256:")]
)
def test_an_image_sharing_a_prefix_of_the_certified_id_is_another_image(other: str) -> None:
    got = check_run(cert(), image(image_id=other), host())
    assert [r.reason for r in got] == ["image-mismatch"]
    assert IMAGE_ID in got[0].message and other in got[0].message


def test_the_same_id_with_or_without_its_algorithm_is_the_same_image() -> None:
    assert reasons(cert(), image(image_id=IMAGE_ID.removeprefix("sha256:")), host()) == []


def test_a_certificate_without_an_image_id_covers_no_image() -> None:
    doc = cert_doc()
    c = build_certificate(
        image={**doc["image"], "id": ""},
        host=doc["host"],
        run={},
        harness={"steps": [], "verdict": "certified"},
        thresholds={},
        verdict="certified",
        verdict_reason="3 checks passed",
    )
    assert "image-mismatch" in reasons(c, image(), host())


def test_the_local_store_lookup_never_takes_an_id_that_only_shares_a_prefix(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    store.add(cert())
    find = certificate_finder("team/train:1", store=store, policy=lambda: pytest.fail("no registry"))
    assert [c.image.id for c in find(image())] == [IMAGE_ID]
    twin = ImageInfo(id=TWIN_ID, tags=("team/train:1",), repo_digests=())
    assert find(twin) == []
    # The store also matches by the reference a certificate was issued under: a certificate of
    # IMAGE_ID issued under the twin's ID as its reference is still IMAGE_ID's, not the twin's.
    doc = cert_doc()
    store.add(
        build_certificate(
            image={**doc["image"], "ref": TWIN_ID},
            host=doc["host"],
            run={},
            harness={"steps": [], "verdict": "certified"},
            thresholds={},
            verdict="certified",
            verdict_reason="3 checks passed",
        )
    )
    assert len(store.list(image=TWIN_ID)) == 1
    assert find(twin) == []


# --------------------------------------------------------------------------- every GPU


@pytest.mark.parametrize("gpus", [(H100, T4), (T4, H100)], ids=["t4-second", "t4-first"])
def test_the_arch_is_checked_on_every_gpu_of_a_mixed_host(gpus: tuple[GpuInfo, ...]) -> None:
    c = cert(gpus=(H100, T4), archs=HOPPER_ONLY)
    got = check_run(c, image(), host(gpus=gpus))
    assert [r.reason for r in got] == ["gpu-arch"]
    assert "Tesla T4 (compute capability 7.5)" in got[0].message
    assert "H100" not in got[0].message.partition("nothing runs on")[2]
    assert reasons(c, image(), host(gpus=(H100, H100))) == []


def test_an_arch_refusal_names_every_uncovered_gpu() -> None:
    c = cert(gpus=(H100, T4, K80), archs=HOPPER_ONLY)
    (r,) = check_run(c, image(), host(gpus=(T4, H100, K80)))
    assert "Tesla T4" in r.message and "Tesla K80" in r.message


@pytest.mark.parametrize("gpus", [(H200, RTX), (RTX, H200)], ids=["new-second", "new-first"])
def test_the_model_is_checked_on_every_gpu(gpus: tuple[GpuInfo, ...]) -> None:
    got = check_run(cert(gpus=(H200,)), image(), host(gpus=gpus))
    assert [r.reason for r in got] == ["gpu-model"]
    assert "NVIDIA GeForce RTX 3090 was not part" in got[0].message
    assert reasons(cert(gpus=(H200, RTX)), image(), host(gpus=gpus)) == []


def test_a_gpu_certificate_covers_a_subset_of_its_models() -> None:
    assert reasons(cert(gpus=(H200, RTX)), image(), host(gpus=(RTX,))) == []


# --------------------------------------------------------------------------- the driver floor


@pytest.mark.parametrize(
    ("driver", "ok"),
    [
        ("580.65.06", True),  # the floor itself
        ("580.65.6", True),  # the same version, unpadded
        ("580.65.07", True),
        ("580.159.04", True),
        ("1000.1.1", True),  # compared as versions, not strings
        ("580.65.05", False),  # the floor's own branch, below it
        ("580.10.01", False),
        ("575.99.99", False),
        (None, False),  # unknown: not taken as new enough
        ("unknown", False),  # unreadable
        ("", False),
    ],
)
def test_the_driver_floor_is_a_version_compare_and_unknown_is_too_old(driver: str | None, ok: bool) -> None:
    got = reasons(cert(), image(), host(driver=driver))
    assert (got == []) is ok, got
    if not ok:
        assert got == ["driver-too-old"]


def test_the_floor_is_checked_in_every_gpu_mode_but_not_on_the_cpu() -> None:
    for access in ("toolkit", "cdi", "devices"):
        assert reasons(cert(), image(), host(access=access, driver=None)) == ["driver-too-old"]
    cpu = host(gpus=(), access="none", requested="none", driver=None, cuda_driver=None)
    assert reasons(cert(), image(), cpu) == []


def test_an_unknown_driver_says_so() -> None:
    (r,) = check_run(cert(), image(), host(driver=None))
    assert r.message.endswith("this host has no driver") and "580.65.06" in r.message


# --------------------------------------------------------------------------- NVIDIA_REQUIRE_*


def req_env(**variables: str) -> tuple[str, ...]:
    return tuple(f"{k}={v}" for k, v in variables.items())


@pytest.mark.parametrize("name", ["NVIDIA_REQUIRE_AAA", "NVIDIA_REQUIRE_DRIVER", "NVIDIA_REQUIRE_ZZZ"])
def test_every_require_variable_is_honoured_not_only_the_first_that_passes(name: str) -> None:
    env = req_env(NVIDIA_REQUIRE_CUDA="cuda>=12.0", **{name: "driver>=999"})
    got = check_run(cert(), image(env=env), host())
    assert [r.reason for r in got] == ["require-cuda"]
    assert f"({name})" in got[0].message
    passing = req_env(NVIDIA_REQUIRE_CUDA="cuda>=12.0", **{name: "driver>=580"})
    assert reasons(cert(), image(env=passing), host()) == []


def test_a_failing_requirement_after_two_passing_ones_refuses() -> None:
    env = req_env(
        NVIDIA_REQUIRE_A="cuda>=12.0", NVIDIA_REQUIRE_B="arch>=8.0", NVIDIA_REQUIRE_C="brand=geforce"
    )
    got = check_run(cert(), image(env=env), host())
    assert [r.reason for r in got] == ["require-cuda"] and "(NVIDIA_REQUIRE_C)" in got[0].message


def test_the_jetpack_requirement_is_not_the_hosts_business() -> None:
    env = req_env(NVIDIA_REQUIRE_CUDA="cuda>=12.0", NVIDIA_REQUIRE_JETPACK="csv-mounts=all")
    assert reasons(cert(), image(env=env), host()) == []


@pytest.mark.parametrize("gpus", [(H200, RTX), (RTX, H200)], ids=["geforce-second", "geforce-first"])
def test_require_cuda_holds_for_every_gpu_handed_in(gpus: tuple[GpuInfo, ...]) -> None:
    """On R535 (CUDA 12.2) REQUIRE_130 admits the data-center brand by its exemption, not GeForce."""
    c = cert(gpus=(H200, RTX), min_driver="525.60.13")
    h = host(gpus=gpus, driver="535.104.05", cuda_driver="12.2")
    got = check_run(c, image(env=(f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)), h)
    assert [r.reason for r in got] == ["require-cuda"]
    assert got[0].message.endswith("no brand/driver exemption matches (brand=geforce)")
    only_h200 = host(gpus=(H200, H200), driver="535.104.05", cuda_driver="12.2")
    assert (
        reasons(
            cert(gpus=(H200,), min_driver="525.60.13"),
            image(env=(f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)),
            only_h200,
        )
        == []
    )


@pytest.mark.parametrize(("cuda", "ok"), [("13.0", True), ("13.1", True), ("12.9", False), (None, False)])
def test_require_cuda_against_the_drivers_cuda_and_unknown_is_not_enough(cuda: str | None, ok: bool) -> None:
    c = cert(min_driver=None)  # only the image's requirement decides
    got = check_run(c, image(env=("NVIDIA_REQUIRE_CUDA=cuda>=13.0",)), host(cuda_driver=cuda))
    assert ([r.reason for r in got] == []) is ok, got
    if not ok:
        assert [r.reason for r in got] == ["require-cuda"]
    if cuda is None:
        assert "CUDA version is unknown" in got[0].message


def test_an_unknown_brand_matches_no_brand_exemption() -> None:
    nameless = replace(H200, brand=None)
    c = cert(gpus=(nameless,), min_driver="525.60.13")
    h = host(gpus=(nameless,), driver="535.104.05", cuda_driver="12.2")
    assert reasons(c, image(env=(f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)), h) == ["require-cuda"]


def test_a_brand_exemption_needs_all_of_its_factors() -> None:
    """brand=tesla,driver>=535,driver<536: R550 is past the exempted branch."""
    tesla = replace(H200, brand="tesla")
    c = cert(gpus=(tesla,), min_driver="525.60.13")
    env = (f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)
    assert reasons(c, image(env=env), host(gpus=(tesla,), driver="535.104.05", cuda_driver="12.2")) == []
    assert reasons(c, image(env=env), host(gpus=(tesla,), driver="550.54.14", cuda_driver="12.4")) == [
        "require-cuda"
    ]


@pytest.mark.parametrize(
    ("value", "disabled"), [("1", True), ("true", True), ("false", False), ("0", False), ("", False)]
)
def test_only_a_true_disable_require_turns_the_check_off(value: str, disabled: bool) -> None:
    env = ("NVIDIA_REQUIRE_CUDA=cuda>=13.0", f"NVIDIA_DISABLE_REQUIRE={value}")
    got = reasons(cert(min_driver=None), image(env=env), host(cuda_driver="12.2", driver="535.104.05"))
    assert got == ([] if disabled else ["require-cuda"])


def test_a_legacy_image_is_held_to_its_cuda_version() -> None:
    legacy = image(env=("CUDA_VERSION=13.0.1",))
    assert reasons(cert(min_driver=None), legacy, host(cuda_driver="12.8", driver="570.86.15")) == [
        "require-cuda"
    ]
    assert reasons(cert(min_driver=None), legacy, host()) == []


def test_require_cuda_does_not_apply_on_the_cpu() -> None:
    cpu = host(gpus=(), access="none", requested="none", cuda_driver=None, driver=None)
    c = cert("certified-cpu-only", gpus=(), min_driver=None)
    assert reasons(c, image(env=("NVIDIA_REQUIRE_CUDA=cuda>=99.0",)), cpu) == []


# --------------------------------------------------------------------------- verdicts


@pytest.mark.parametrize("access", ["toolkit", "cdi", "devices"])
def test_a_cpu_only_certificate_covers_no_gpu_mode(access: str) -> None:
    c = cert("certified-cpu-only", gpus=())
    assert reasons(c, image(), host(access=access, requested=access)) == ["cpu-only"]


def test_a_cpu_only_certificate_on_a_host_without_gpus_is_not_a_missing_gpu() -> None:
    c = cert("certified-cpu-only", gpus=())
    assert reasons(c, image(), host(gpus=(), access="none", driver=None, cuda_driver=None)) == []


def _sealed(verdict: str, reason: str) -> Certificate:
    doc = cert_doc(verdict)
    return build_certificate(
        image=doc["image"],
        host=doc["host"],
        run={},
        harness={"steps": [], "verdict": verdict},
        thresholds={},
        verdict=verdict,
        verdict_reason=reason,
    )


def test_a_failed_certificate_is_refused_whatever_its_reason_says() -> None:
    for why in ("", "all good"):
        assert "failed" in reasons(_sealed("failed", why), image(), host())
    assert reasons(_sealed("certified", ""), image(), host()) == []


def test_a_gpu_certificate_needs_gpu_access_unless_the_cpu_is_asked_for() -> None:
    no_access = host(gpus=(H200,), access="none", requested="auto")
    assert reasons(cert(), image(), no_access) == ["no-gpu"]
    assert reasons(cert(), image(), replace(no_access, requested="none")) == []


# --------------------------------------------------------------------------- several certificates


def test_when_none_covers_the_refusals_shown_are_the_newest_certificates() -> None:
    newest = cert(gpus=(RTX,), issued_at="2026-06-01T00:00:00Z")
    oldest = cert(gpus=(K80,), issued_at="2026-01-01T00:00:00Z")
    chosen, refusals = choose_certificate([newest, oldest], image(), host((H200,)))
    assert chosen is newest
    assert [r.reason for r in refusals] == [
        "gpu-model"
    ] and "certified on NVIDIA GeForce RTX 3090" in refusals[0].message


def test_the_first_covering_certificate_is_taken_even_when_it_is_not_the_first() -> None:
    a = cert(gpus=(RTX,), issued_at="2026-06-01T00:00:00Z")
    b = cert(gpus=(K80,), issued_at="2026-03-01T00:00:00Z")
    c = cert(gpus=(H200,), issued_at="2026-01-01T00:00:00Z")
    assert choose_certificate([a, b, c], image(), host((H200,))) == (c, [])


# --------------------------------------------------------------------------- what a check reads


def test_ptx_is_jit_compiled_for_a_newer_major_but_sass_is_not() -> None:
    ptx_only = cert(gpus=(H200,), archs={"sass": [], "ptx": ["8.0"]})
    assert reasons(ptx_only, image(), host()) == []  # compute_80 JIT-compiles for 9.0
    sass_only = cert(gpus=(H200,), archs={"sass": ["8.0"], "ptx": []})
    assert reasons(sass_only, image(), host()) == ["gpu-arch"]  # sm_80 cubins do not run on 9.0


def test_a_cpu_build_is_not_held_to_the_gpu_arch_check() -> None:
    """A certified image whose stack has no CUDA (a CPU framework build) runs on a GPU host: there
    are no kernels to cover (the GPU checks that remain are the certificate's models)."""
    c = cert(gpus=(H200,), cuda=None, min_driver=None, archs={"sass": [], "ptx": []})
    assert reasons(c, image(), host()) == []


def test_every_refusal_of_the_newest_certificate_is_shown() -> None:
    c = cert(gpus=(RTX,))
    chosen, refusals = choose_certificate([c], image(image_id=TWIN_ID), host((H200,), driver="570.86.15"))
    assert chosen is c
    assert [r.reason for r in refusals] == ["image-mismatch", "gpu-model", "driver-too-old"]


def test_every_local_certificate_of_the_image_is_a_candidate(tmp_path: Path) -> None:
    """An image certified here on two node classes: the finder hands run both, newest first, and
    run takes the one that covers this host."""
    store = CertStore(tmp_path / "s.sqlite")
    on_h200 = cert(gpus=(H200,), issued_at="2026-01-01T00:00:00Z")
    on_rtx = cert(gpus=(RTX,), issued_at="2026-06-01T00:00:00Z")
    store.add(on_h200)
    store.add(on_rtx)
    find = certificate_finder("team/train:1", store=store, policy=lambda: pytest.fail("no registry"))
    found = find(image())
    assert [c.content_hash for c in found] == [on_rtx.content_hash, on_h200.content_hash]
    chosen, refusals = choose_certificate(found, image(), host((H200,)))
    assert chosen is not None and chosen.content_hash == on_h200.content_hash and refusals == []


def test_a_host_that_hands_in_no_gpu_is_refused_for_that_alone() -> None:
    """GPU models, arch and driver are about the GPUs a run gets: with no GPU access there is one
    reason (no-gpu), whatever GPUs the host has."""
    no_access = host(gpus=(RTX, K80), access="none", requested="auto", driver="470.1.1", cuda_driver="11.4")
    assert reasons(cert(gpus=(H200,)), image(), no_access) == ["no-gpu"]


@pytest.mark.parametrize(
    ("verdict", "gpu_runs", "cpu_runs"),
    [("certified", True, True), ("certified-cpu-only", False, True), ("failed", False, False)],
)
def test_what_a_certificate_lets_run_start_follows_its_verdict(
    verdict: str, gpu_runs: bool, cpu_runs: bool
) -> None:
    from envbuilder.run.coverage import describe_coverage

    got = describe_coverage(cert(verdict, gpus=(H200,)))
    assert (got["gpu_runs"], got["cpu_runs"]) == (gpu_runs, cpu_runs)
    assert got["gpus"] == ([{"name": "NVIDIA H200", "cc": "9.0"}] if gpu_runs else [])
    assert got["min_driver"] == ("580.65.06" if gpu_runs else None)


def test_an_untagged_image_without_a_certificate_is_refused_by_its_id() -> None:
    bare = ImageInfo(id=IMAGE_ID, tags=(), repo_digests=())
    (r,) = check_run(None, bare, host())
    assert r.reason == "no-certificate" and r.message == f"no certificate for image {IMAGE_ID} ({IMAGE_ID})"


@pytest.mark.parametrize("requested", ["auto", "toolkit", "cdi", "devices"])
def test_a_gpu_certificate_on_a_host_that_hands_in_no_gpu_is_refused_whatever_was_asked(
    requested: str,
) -> None:
    assert reasons(cert(), image(), host(access="none", requested=requested)) == ["no-gpu"]


def test_require_cuda_holds_when_gpu_access_is_given_but_no_gpu_was_listed() -> None:
    """A GPU access mode whose GPUs the probe could not list: the requirement is still checked
    (for a GPU of unknown brand and arch), not skipped."""
    h = host(gpus=(), access="toolkit", requested="toolkit", driver="535.104.05", cuda_driver="12.2")
    got = check_run(cert(gpus=(), min_driver=None), image(env=(f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)), h)
    assert "require-cuda" in [r.reason for r in got]


def test_a_failed_certificate_covers_no_cpu_run_either() -> None:
    cpu = host(gpus=(), access="none", requested="none", driver=None, cuda_driver=None)
    assert "failed" in reasons(cert("failed"), image(), cpu)


def test_the_newest_covering_certificate_is_the_one_chosen() -> None:
    newer = cert(gpus=(H200,), issued_at="2026-06-01T00:00:00Z")
    older = cert(gpus=(H200,), issued_at="2026-01-01T00:00:00Z")
    chosen, refusals = choose_certificate([newer, older], image(), host())
    assert chosen is newer and refusals == []


def test_a_sealed_certificate_of_the_wrong_shape_is_refused() -> None:
    """The hash can be recomputed by anyone: a certificate whose hash matches but whose content
    is not a certificate (an unknown verdict) is refused all the same."""
    from envbuilder.certify.certificate import verify_certificate
    from envbuilder.hashing import sha256_of

    doc = cert_doc()
    doc["verdict"] = "certified-by-me"
    body = {k: v for k, v in doc.items() if k != "content_hash"}
    doc["content_hash"] = sha256_of(body)
    problems = verify_certificate(doc)
    assert problems and not any("content hash" in p for p in problems)
    assert "tampered" in reasons(Certificate(doc), image(), host())


# --------------------------------------------------------------------------- set G's survivors (h13)


def test_a_model_whose_name_extends_a_certified_models_name_is_another_model() -> None:
    h100_pcie = GpuInfo(index=0, name="NVIDIA H100", uuid="GPU-6", cc="9.0", brand="nvidia")
    got = check_run(cert(gpus=(h100_pcie,)), image(), host(gpus=(H100,)))
    assert [r.reason for r in got] == ["gpu-model"] and "NVIDIA H100 80GB HBM3 was not part" in got[0].message
    assert reasons(cert(gpus=(H100,)), image(), host(gpus=(H100,))) == []


@pytest.mark.parametrize(
    ("value", "disabled"), [("TRUE", True), ("T", True), ("tRuE", False), ("yes", False), ("on", False)]
)
def test_disable_require_is_read_as_gos_parsebool_reads_it(value: str, disabled: bool) -> None:
    env = ("NVIDIA_REQUIRE_CUDA=cuda>=13.0", f"NVIDIA_DISABLE_REQUIRE={value}")
    got = reasons(cert(min_driver=None), image(env=env), host(cuda_driver="12.2", driver="535.104.05"))
    assert got == ([] if disabled else ["require-cuda"])


def test_an_empty_require_cuda_leaves_the_legacy_cuda_version_in_force() -> None:
    """The toolkit's IsLegacy: CUDA_VERSION set and NVIDIA_REQUIRE_CUDA empty (not only unset)."""
    legacy = image(env=("CUDA_VERSION=13.0.1", "NVIDIA_REQUIRE_CUDA="))
    old = host(cuda_driver="12.8", driver="570.86.15")
    assert reasons(cert(min_driver=None), legacy, old) == ["require-cuda"]
    assert reasons(cert(min_driver=None), legacy, host()) == []
    stated = image(env=("CUDA_VERSION=13.0.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.8"))
    assert reasons(cert(min_driver=None), stated, old) == []
