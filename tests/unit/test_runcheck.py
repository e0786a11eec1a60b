"""`envbuilder run`'s host check: one test per refusal reason (and its hint), each on a pure
(certificate, image, host) triple, plus the cases that must NOT refuse."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from cert_factory import H200, IMAGE_ID, K80, OTHER_ID, REQUIRE_130, RTX, cert, cert_doc, host, image, reasons

from envbuilder.certify.certificate import Certificate
from envbuilder.run.coverage import (
    CHECKS,
    check_run,
    refusal_error,
)


def test_a_matching_certificate_is_accepted() -> None:
    assert check_run(cert(), image(env=(f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)), host()) == []


def test_no_certificate_names_the_image_id_and_says_certify() -> None:
    (r,) = check_run(None, image(), host())
    assert r.reason == "no-certificate"
    assert r.message == f"no certificate for image {IMAGE_ID} (team/train:1)"
    assert r.hint == "re-certify the image on this host: envbuilder certify team/train:1"


def test_an_edited_certificate_is_tampered_and_names_the_section() -> None:
    c = cert_doc()
    c["verdict_reason"] = "all good, trust me"
    (r,) = check_run(Certificate(c), image(), host())
    assert r.reason == "tampered"
    assert "content hash mismatch" in r.message and "verdict_reason" in r.message


def test_a_certificate_moved_to_another_image_is_refused() -> None:
    got = check_run(cert(), image(image_id=OTHER_ID), host())
    assert [r.reason for r in got] == ["image-mismatch"]
    assert IMAGE_ID in got[0].message and OTHER_ID in got[0].message


def test_a_failed_certification_is_refused_with_its_reason() -> None:
    (r,) = check_run(cert("failed"), image(), host())
    assert r.reason == "failed"
    assert "FAILED certification (failed steps: cuda_smoke)" in r.message
    assert "envbuilder report sha256:" in r.hint


def test_a_cpu_only_certificate_does_not_cover_a_gpu_run() -> None:
    c = cert("certified-cpu-only", gpus=())
    assert reasons(c, image(), host()) == ["cpu-only"]
    assert reasons(c, image(), host(access="none", requested="none")) == []


def test_a_gpu_certificate_on_a_host_without_gpu_access_is_refused() -> None:
    r = check_run(cert(), image(), host(gpus=(), access="none", driver=None, cuda_driver=None))
    assert [x.reason for x in r] == ["no-gpu"]
    assert "certified on NVIDIA H200" in r[0].message and "--gpu-access none" in r[0].hint
    # Asking for the CPU explicitly is the user's call: the CPU path was certified too.
    assert reasons(cert(), image(), host(gpus=(), access="none", requested="none")) == []


def test_a_gpu_the_stack_has_no_kernels_for_is_refused_with_a_rebuild_hint() -> None:
    got = check_run(cert(gpus=(K80,)), image(), host(gpus=(K80,)))
    assert [r.reason for r in got] == ["gpu-arch"]
    assert "Tesla K80 (compute capability 3.7)" in got[0].message
    assert "torch 2.11.0+cu130" in got[0].message
    assert got[0].hint == 'rebuild for this host: envbuilder build SPEC --driver 580.159.04 --gpu "Tesla K80"'


def test_ptx_covers_newer_gpus_and_sass_covers_same_major_newer_minor() -> None:
    ptx_only = cert(gpus=(RTX,), archs={"sass": [], "ptx": ["8.0"]})
    assert reasons(ptx_only, image(), host(gpus=(RTX,))) == []
    sass_80 = cert(gpus=(RTX,), archs={"sass": ["8.0"], "ptx": []})
    assert reasons(sass_80, image(), host(gpus=(RTX,))) == []  # sm_80 cubins run on 8.6
    sass_90 = cert(gpus=(RTX,), archs={"sass": ["9.0"], "ptx": []})
    assert reasons(sass_90, image(), host(gpus=(RTX,))) == ["gpu-arch"]


def test_a_gpu_model_that_was_not_certified_is_refused() -> None:
    got = check_run(cert(gpus=(H200,)), image(), host(gpus=(RTX,)))
    assert [r.reason for r in got] == ["gpu-model"]
    assert "NVIDIA GeForce RTX 3090 was not part of that certification" in got[0].message
    assert "envbuilder certify team/train:1" in got[0].hint


def test_a_driver_below_the_stack_minimum_is_refused() -> None:
    got = check_run(cert(), image(), host(driver="570.86.15", cuda_driver="12.8"))
    assert [r.reason for r in got] == ["driver-too-old"]
    assert "needs NVIDIA driver >= 580.65.06; this host has 570.86.15" in got[0].message
    assert "--driver 570.86.15" in got[0].hint


def test_require_cuda_refuses_a_driver_that_is_too_old_without_exemption() -> None:
    env = (f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)
    c = cert(min_driver="525.60.13")  # the stack's own floor is met: only the image env refuses
    h = host(gpus=(RTX,), driver="535.104.05", cuda_driver="12.2")
    got = check_run(cert(gpus=(RTX,), min_driver="525.60.13"), image(env=env), h)
    assert [r.reason for r in got] == ["require-cuda"]
    assert "driver 535.104.05 supports CUDA 12.2" in got[0].message and "brand=geforce" in got[0].message
    # A data-center card on the exempted branch is allowed by the forward-compat alternative.
    tesla = replace(H200, brand="tesla")
    assert reasons(c, image(env=env), host(gpus=(tesla,), driver="535.104.05", cuda_driver="12.2")) == []


@pytest.mark.parametrize("access", ["cdi", "devices", "toolkit"])
def test_driver_and_require_cuda_checks_apply_in_every_gpu_mode(access: str) -> None:
    """In CDI and devices modes nothing else guards the driver (the Toolkit ignores
    NVIDIA_REQUIRE_CUDA in CDI mode, nvidia-container-toolkit#1470): run's own checks must refuse."""
    env = (f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)
    old = host(access=access, requested=access, driver="570.86.15", cuda_driver="12.8")
    assert reasons(cert(), image(env=env), old) == ["driver-too-old", "require-cuda"]
    assert reasons(cert(), image(env=env), host(access=access, requested=access)) == []


def test_require_cuda_is_skipped_when_the_image_disables_it() -> None:
    env = (f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}", "NVIDIA_DISABLE_REQUIRE=1")
    h = host(gpus=(RTX,), driver="535.104.05", cuda_driver="12.2")
    assert reasons(cert(gpus=(RTX,), min_driver="525.60.13"), image(env=env), h) == []


def test_a_malformed_requirement_is_refused_as_the_toolkit_would() -> None:
    h = host(gpus=(H200,), driver="580.159.04", cuda_driver="13.0")
    got = check_run(cert(), image(env=("NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand",)), h)
    assert [r.reason for r in got] == ["require-cuda"] and "is malformed" in got[0].message


def test_cpu_runs_skip_the_gpu_checks() -> None:
    cpu_cert = cert("certified-cpu-only", gpus=(), cuda=None, min_driver=None, archs={"sass": [], "ptx": []})
    assert reasons(cpu_cert, image(), host(gpus=(), access="none", driver=None, cuda_driver=None)) == []


def test_every_reason_has_its_own_check() -> None:
    assert len(CHECKS) == 10


def test_refusal_error_lists_every_reason_and_hint_and_force() -> None:
    err = refusal_error(check_run(cert(gpus=(K80,)), image(image_id=OTHER_ID), host(gpus=(RTX,))))
    assert err.exit_code == 12
    assert "[image-mismatch]" in err.message and "[gpu-model]" in err.message
    assert err.hint is not None and err.hint.endswith("pass --force to run anyway (recorded in the run log)")
    assert "envbuilder certify team/train:1" in err.hint


@pytest.mark.parametrize("field", ["image", "host", "verdict"])
def test_any_edit_is_caught_before_the_other_checks_believe_it(field: str) -> None:
    c = cert_doc()
    c[field] = json.loads(json.dumps(c[field])) if field != "verdict" else "certified-cpu-only"
    if field == "image":
        c["image"]["id"] = OTHER_ID
    elif field == "host":
        c["host"]["gpus"].append({"name": "NVIDIA GeForce RTX 3090", "uuid": "x", "cc": "8.6"})
    assert "tampered" in reasons(Certificate(c), image(), host())


def test_choose_certificate_takes_the_first_that_covers_this_host() -> None:
    """An image certified on two node classes runs on either; the refusals shown are the newest's."""
    from envbuilder.run.coverage import choose_certificate

    on_rtx = cert(gpus=(RTX,), issued_at="2026-06-01T00:00:00Z")
    on_h200 = cert(gpus=(H200,), issued_at="2026-01-01T00:00:00Z")
    chosen, refusals = choose_certificate([on_rtx, on_h200], image(), host((H200,)))
    assert chosen is on_h200 and refusals == []
    chosen, refusals = choose_certificate([on_rtx], image(), host((H200,)))
    assert chosen is on_rtx and [r.reason for r in refusals] == ["gpu-model"]
    chosen, refusals = choose_certificate([], image(), host())
    assert chosen is None and [r.reason for r in refusals] == ["no-certificate"]


def test_a_host_with_gpus_but_no_access_mode_is_told_so() -> None:
    got = check_run(cert(), image(), host(gpus=(RTX, RTX), access="none"))
    assert [r.reason for r in got] == ["no-gpu"]
    assert "this host offers 2 GPU(s) but no GPU access mode" in got[0].message


def test_a_host_whose_driver_is_unknown_is_refused_not_crashed() -> None:
    got = check_run(cert(), image(), host(driver=None))
    assert [r.reason for r in got] == ["driver-too-old"]
    assert "this host has no driver" in got[0].message
    # A stack with no driver floor recorded asks for none.
    assert "driver-too-old" not in reasons(cert(min_driver=None), image(), host(driver="470.57.02"))


def test_an_unreadable_arch_entry_in_a_certificate_is_left_out_not_crashed() -> None:
    # Certificates come from registries too: an arch list entry no reader knows is no target.
    odd = cert(gpus=(RTX,), archs={"sass": ["8.0", "sm_eighty"], "ptx": ["x.y"]})
    assert reasons(odd, image(), host(gpus=(RTX,))) == []
    none_left = cert(gpus=(RTX,), archs={"sass": ["sm_eighty"], "ptx": []})
    assert reasons(none_left, image(), host(gpus=(RTX,))) == ["gpu-arch"]
