"""`run`'s coverage check, NVIDIA_REQUIRE_* and the arch rule: the conditions the automatic
mutants of benchmarks/mutants.py (`--auto run-check`) found no test for on main (2026-12-05):
an image ID that is a strict prefix of the certified one, a failed certificate without a
reason, a GPU certificate of several or of no GPUs, a GPU whose compute capability is unknown,
several refused GPUs of several brands, a requirement shown at exactly 80 characters, PTX
listed after another PTX. Pure (certificate, image, host) triples."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cert_factory import H200, IMAGE_ID, K80, REQUIRE_130, RTX, cert, cert_doc, host, image, reasons

from envbuilder.archs import Target, matrix_targets
from envbuilder.certify.certificate import Certificate, seal
from envbuilder.host import GpuInfo
from envbuilder.run.coverage import check_run

T4 = GpuInfo(index=1, name="Tesla T4", uuid="GPU-5", cc="7.5", brand="tesla")


@pytest.mark.parametrize("cut", [19, 40, 70])
def test_an_image_whose_id_is_a_prefix_of_the_certified_id_is_another_image(cut: int) -> None:
    """The certified ID starting with the image's (a truncated ID) is no match either way round."""
    shorter = IMAGE_ID[:cut]
    assert reasons(cert(), image(image_id=shorter), host()) == ["image-mismatch"]
    assert reasons(cert(image_id=shorter), image(), host()) == ["image-mismatch"]


def test_a_failed_certificate_without_a_reason_says_where_to_look() -> None:
    failed = Certificate(seal({**cert_doc("failed"), "verdict_reason": ""}))
    (r,) = check_run(failed, image(), host())
    assert r.reason == "failed"
    assert "FAILED certification (see the report)" in r.message


def test_a_missing_gpu_refusal_names_every_certified_gpu_or_says_a_gpu() -> None:
    no_access = host(gpus=(), access="none", driver=None, cuda_driver=None)
    (r,) = check_run(cert(gpus=(H200, K80)), image(), no_access)
    assert r.reason == "no-gpu"
    assert "certified on NVIDIA H200, Tesla K80, but" in r.message
    (r,) = check_run(cert(gpus=()), image(), no_access)
    assert r.reason == "no-gpu"
    assert "certified on a GPU, but this host offers no NVIDIA GPU" in r.message


def test_a_gpu_whose_compute_capability_is_unknown_is_left_to_the_other_checks() -> None:
    """The arch check judges the GPUs whose compute capability the probe read; one it could not
    read is not refused for its arch (nor does the check fail on it): the model check, which it
    passes here, still applies."""
    unknown = replace(H200, cc=None)
    assert reasons(cert(), image(), host(gpus=(unknown,))) == []
    assert reasons(cert(), image(), host(gpus=(unknown, K80))) == ["gpu-arch", "gpu-model"]


def test_a_require_cuda_refusal_names_the_brand_of_every_refused_gpu() -> None:
    env = (f"NVIDIA_REQUIRE_CUDA={REQUIRE_130}",)
    c = cert(gpus=(RTX, T4), min_driver="525.60.13", archs={"sass": ["7.5", "8.6"], "ptx": []})
    old = host(gpus=(RTX, T4), driver="545.23.08", cuda_driver="12.3")
    (r,) = check_run(c, image(env=env), old)
    assert r.reason == "require-cuda"
    assert "(brand=geforce, brand=tesla)" in r.message
    (r,) = check_run(c, image(env=env), replace(old, gpus=(T4, RTX)))
    assert "(brand=geforce, brand=tesla)" in r.message


@pytest.mark.parametrize("length", [79, 80, 81])
def test_a_requirement_is_shown_whole_up_to_80_characters(length: int) -> None:
    text = "cuda>=99.0." + "1" * (length - len("cuda>=99.0."))  # one valid factor, never met
    assert len(text) == length
    env = (f"NVIDIA_REQUIRE_CUDA={text}",)
    (r,) = check_run(cert(), image(env=env), host())
    assert r.reason == "require-cuda"
    if length <= 80:
        assert f"requires {text} (NVIDIA_REQUIRE_CUDA)" in r.message
    else:
        assert f"requires {text[:77]}... (NVIDIA_REQUIRE_CUDA)" in r.message


def test_every_ptx_target_of_a_stack_counts_not_only_the_first() -> None:
    assert matrix_targets((), ("12.0", "8.0")) == (Target("ptx", (12, 0)), Target("ptx", (8, 0)))
    jit_from_80 = cert(gpus=(RTX,), archs={"sass": ["9.0"], "ptx": ["12.0", "8.0"]})
    assert reasons(jit_from_80, image(), host(gpus=(RTX,))) == []


# ------------------------------------------------------------------ the second operator set (2026-12-05)
# benchmarks/mutants.py --auto run-check --ops new on main: dropped calls, removed items.


def test_a_gpu_model_refusal_names_the_new_models_in_order() -> None:
    """The new models are listed sorted, whatever order the host's GPUs (and a set) come in: six
    names, so that an unsorted set comes out sorted by chance once in 720 runs at most."""
    names = (
        "NVIDIA H20",
        "NVIDIA GH200 480GB",
        "NVIDIA H100 PCIe",
        "NVIDIA H800",
        "NVIDIA H100 NVL",
        "NVIDIA A",
    )
    gpus = tuple(replace(H200, index=i, name=n, uuid=f"GPU-{i}") for i, n in enumerate(names))
    (r,) = check_run(cert(), image(), host(gpus=gpus))
    assert r.reason == "gpu-model"
    assert f"this host's {', '.join(sorted(names))} was not part" in r.message


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_every_word_gos_parsebool_reads_as_true_disables_the_require_check(value: str) -> None:
    env = ("NVIDIA_REQUIRE_CUDA=cuda>=13.0", f"NVIDIA_DISABLE_REQUIRE={value}")
    assert reasons(cert(min_driver=None), image(env=env), host(cuda_driver="12.2", driver="535.104.05")) == []
