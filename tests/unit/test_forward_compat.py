"""CUDA forward compatibility (resolve/forward_compat.py): which GPUs, strategies, branches and
floors it helps, and the hint that offers it when nothing fits."""

from __future__ import annotations

import pytest

from envbuilder.cli.options import request_from_options
from envbuilder.matrix import load_matrix
from envbuilder.pipeline.resolution import target_host
from envbuilder.resolve import forward_compat
from envbuilder.resolve.hint import no_stack_hint
from envbuilder.resolve.resolver import resolve

MATRIX = load_matrix()
CUDA13 = next(b for b in MATRIX.base_images if b.cuda == "13.0.3" and b.kind == "cuda")


def _hint(gpu: str, *, strategy: str | None = None) -> str:
    request = request_from_options("torch==2.15.*", None, strategy, None, "runtime", False, False)
    res = resolve(MATRIX, request, target_host(MATRIX, "535.104.05", (gpu,), ()))
    assert res.stack is None
    return no_stack_hint(MATRIX, res)


def test_the_hint_offers_forward_compat_on_a_data_center_gpu() -> None:
    assert _hint("H100").endswith(
        "; or keep this driver: --forward-compat --strategy system-cuda runs "
        "torch2.15.0-cu132-py3.12-cuda13.2.1-runtime-ubuntu24.04 through cuda-compat-13-2"
    )


@pytest.mark.parametrize(("gpu", "strategy"), [("RTX 4090", None), ("H100", "bundled")])
def test_the_hint_does_not_offer_it_where_it_cannot_apply(gpu: str, strategy: str | None) -> None:
    assert "--forward-compat" not in _hint(gpu, strategy=strategy)


def test_the_package_brings_its_own_driver_and_no_more() -> None:
    h100 = target_host(MATRIX, "535.104.05", ("H100",), ()).gpus
    ok = forward_compat.through_image(MATRIX, CUDA13, "535.104.05", "580", h100)
    assert isinstance(ok, forward_compat.ForwardCompat)
    assert (ok.package, ok.driver, ok.min_driver) == ("cuda-compat-13-0", "580.95.05", "535")
    # PTX of a newer ISA needs a driver above the package's: not helped
    too_new = forward_compat.through_image(MATRIX, CUDA13, "535.104.05", "590.44.01", h100)
    assert too_new == "cuda-compat-13-0 brings driver 580.95.05, below the 590.44.01 this build needs"
    exact = forward_compat.through_image(MATRIX, CUDA13, "535.104.05", "580.95.05", h100)
    assert isinstance(exact, forward_compat.ForwardCompat)  # a floor of exactly the package's driver
    other = forward_compat.through_image(MATRIX, CUDA13, "545.23.06", "580", h100)
    assert isinstance(other, str) and other.endswith("(its NVIDIA_REQUIRE_CUDA), not R545")


def test_which_gpus_it_applies_to() -> None:
    gpus = target_host(MATRIX, None, ("H100", "RTX 4090", "L40S", "RTX A6000"), ()).gpus
    assert [g.model for g in forward_compat.ineligible_gpus(MATRIX, gpus)] == [
        "GeForce RTX 4090",
        "NVIDIA RTX A6000",
    ]


def test_a_gpu_known_only_by_its_compute_capability_is_not_taken_as_eligible() -> None:
    # Its class (data center, workstation, consumer) is unknown: forward compatibility is offered
    # only to the classes matrices/cuda.yaml names, never to a GPU whose class was not read.
    gpus = target_host(MATRIX, None, (), ("9.0",)).gpus
    assert gpus[0].segment is None
    assert forward_compat.ineligible_gpus(MATRIX, gpus) == gpus


@pytest.mark.parametrize("gpu", ["RTX 4090", "RTX 3090"])
def test_forward_compat_asked_for_on_a_geforce_gives_no_stack_through_cuda_compat(gpu: str) -> None:
    """Set H's survivor H30 (h13): the GPU class decides before any image's cuda-compat is tried."""
    request = request_from_options("torch==2.15.*", None, "system-cuda", None, "runtime", False, True)
    res = resolve(MATRIX, request, target_host(MATRIX, "535.104.05", (gpu,), ()))
    assert res.stack is None or res.stack.forward_compat is None
    assert any("--forward-compat does not apply to" in r.reason for r in res.rejected)
    h100 = resolve(MATRIX, request, target_host(MATRIX, "535.104.05", ("H100",), ()))
    assert h100.stack is not None and h100.stack.forward_compat is not None


def test_forward_compat_on_a_host_with_a_geforce_beside_a_data_center_gpu_gives_no_stack_through_it() -> None:
    """Set O's survivor O11: every GPU the container gets must be of a class cuda-compat supports,
    not only the first one listed."""
    request = request_from_options("torch==2.15.*", None, "system-cuda", None, "runtime", False, True)
    for gpus in (("H100", "RTX 4090"), ("RTX 4090", "H100")):
        res = resolve(MATRIX, request, target_host(MATRIX, "535.104.05", gpus, ()))
        assert res.stack is None or res.stack.forward_compat is None, gpus
        assert any("--forward-compat does not apply to" in r.reason for r in res.rejected), gpus


def test_a_stack_through_cuda_compat_claims_no_minor_version_compatibility() -> None:
    # Below the floor, cuda-compat is what runs the build: the driver's own minor-version
    # compatibility is not what it runs on, so that note would mislead.
    request = request_from_options("torch==2.15.*", None, "system-cuda", None, "runtime", False, True)
    res = resolve(MATRIX, request, target_host(MATRIX, "535.104.05", ("H100",), ()))
    assert res.stack is not None and res.stack.forward_compat is not None
    assert any("cuda-compat" in n for n in res.stack.notes), res.stack.notes
    assert not any("minor-version compatibility" in n for n in res.stack.notes), res.stack.notes


def test_a_system_cuda_stack_requires_what_its_base_image_requires() -> None:
    # The toolkit checks the image's own NVIDIA_REQUIRE_CUDA (12.6 for a 12.6.3 base), not the
    # 12.0 a bundled cu126 build with SASS for every GPU would need.
    request = request_from_options("torch==2.14.*", None, "system-cuda", None, "runtime", False, False)
    res = resolve(MATRIX, request, target_host(MATRIX, "560.35.03", ("H100",), ()))
    assert res.stack is not None and res.stack.strategy == "system-cuda"
    base = next(b for b in MATRIX.base_images if b.ref == res.stack.base_image)
    assert (base.cuda, base.require_cuda) == ("12.6.3", "12.6")
    assert res.stack.require_cuda == "cuda>=12.6"
