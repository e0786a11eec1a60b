"""GPU names as people type them: one model fits -> that model; several -> all of them listed (exit
2); none -> no suggestion. And every name in gpus.yaml reaches its own model."""

from __future__ import annotations

import pytest

from envbuilder.errors import UsageError
from envbuilder.matrix import load_matrix
from envbuilder.resolve.gpus import lookup_gpu

MATRIX = load_matrix()


@pytest.mark.parametrize(
    ("typed", "model", "cc"),
    [
        ("A100", "NVIDIA A100", "8.0"),
        ("a100", "NVIDIA A100", "8.0"),
        ("A100 80GB", "NVIDIA A100", "8.0"),  # two SKU names fit, both of one model
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100", "8.0"),
        ("RTX 4090", "GeForce RTX 4090", "8.9"),  # not the 4090 D, not the laptop part
        ("RTX4090", "GeForce RTX 4090", "8.9"),
        ("GeForce RTX 4090 D", "GeForce RTX 4090 D", "8.9"),
        ("RTX 4090 Laptop", "GeForce RTX 4090 Laptop GPU", "8.9"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "GeForce RTX 3060 Laptop GPU", "8.6"),
        ("T4", "NVIDIA T4", "7.5"),
        ("Tesla T4", "NVIDIA T4", "7.5"),
        ("H100", "NVIDIA H100", "9.0"),
        ("H100 SXM", "NVIDIA H100", "9.0"),
        ("h100-sxm5", "NVIDIA H100", "9.0"),
        ("H100 PCIe", "NVIDIA H100", "9.0"),
        ("V100", "NVIDIA V100", "7.0"),
        ("V100 SXM2", "NVIDIA V100", "7.0"),
        ("V100S", "Tesla V100S PCIe", "7.0"),
        ("A10G", "NVIDIA A10G", "8.6"),
        ("A10", "NVIDIA A10", "8.6"),  # not the A10G
        ("RTX 5070 Ti", "GeForce RTX 5070 Ti", "12.0"),
        ("RTX PRO 6000 Blackwell Max-Q", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "12.0"),
        ("H20", "NVIDIA H20", "9.0"),
        ("H800", "NVIDIA H800", "9.0"),
        ("A800", "NVIDIA A800", "8.0"),
        ("L20", "NVIDIA L20", "8.9"),
        ("RTX A4500", "NVIDIA RTX A4500", "8.6"),
        ("Jetson AGX Orin", "Jetson Orin", "8.7"),
        ("Jetson T5000", "Jetson Thor", "11.0"),
        ("DGX Spark", "NVIDIA GB10", "12.1"),
        ("GTX 1080", "GeForce GTX 1080", "6.1"),
        ("GeForce GTX 1080", "GeForce GTX 1080", "6.1"),  # the pre-R495 NVML form, without "NVIDIA "
        ("NVIDIA GeForce GTX 1060 with Max-Q Design", "GeForce GTX 1060", "6.1"),
        ("\uff32\uff34\uff38 4090", "GeForce RTX 4090", "8.9"),  # full-width letters, NFKC-folded
        ("  nvidia   h200 ", "NVIDIA H200", "9.0"),
    ],
)
def test_a_name_that_fits_one_model(typed: str, model: str, cc: str) -> None:
    match = lookup_gpu(MATRIX, typed)
    assert (match.model.name, match.model.cc) == (model, cc)


def test_the_name_shown_is_the_nvml_name_that_matched_else_the_model() -> None:
    assert lookup_gpu(MATRIX, "Tesla V100-SXM2-16GB").name == "Tesla V100-SXM2-16GB"
    assert lookup_gpu(MATRIX, "H100 SXM").name == "NVIDIA H100"  # an alias
    assert lookup_gpu(MATRIX, "rtx 4090").name == "GeForce RTX 4090"


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (
            "RTX 6000",
            [
                "NVIDIA RTX 6000 Ada",
                "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                "Quadro RTX 6000",
            ],
        ),
        ("4090", ["GeForce RTX 4090", "GeForce RTX 4090 D", "GeForce RTX 4090 Laptop GPU"]),
        ("RTX 5000", ["NVIDIA RTX 5000 Ada", "NVIDIA RTX PRO 5000 Blackwell", "Quadro RTX 5000"]),
    ],
)
def test_several_models_are_listed_never_one_picked(typed: str, expected: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        lookup_gpu(MATRIX, typed)
    assert err.value.exit_code == 2
    listed = ", ".join(repr(name) for name in expected)
    assert err.value.message == f"GPU {typed!r} fits {len(expected)} models: {listed}"


def test_a_long_candidate_list_is_cut_and_counted() -> None:
    with pytest.raises(UsageError) as err:
        lookup_gpu(MATRIX, "Quadro")
    quadros = sum(m.name.startswith("Quadro") for m in MATRIX.gpus.models)
    assert err.value.message.startswith(f"GPU 'Quadro' fits {quadros} models: 'Quadro GP100', ")
    assert err.value.message.endswith(f" and {quadros - 8} more")


@pytest.mark.parametrize(
    "typed", ["NVIDIA GeForce RTX 5900", "RTX 40", "NVIDIA", "", "GTX 480", "Radeon RX 7900"]
)
def test_no_model_no_suggestion(typed: str) -> None:
    with pytest.raises(UsageError, match="unknown GPU") as err:
        lookup_gpu(MATRIX, typed)
    assert "closest" not in err.value.message and "did you mean" not in err.value.message
    assert err.value.hint is not None and "--cc" in err.value.hint


def test_every_name_in_the_matrix_reaches_its_own_model() -> None:
    """No name, NVML name or alias is shadowed by another model's (rule 2 or 3 never takes a
    model's own name away from it)."""
    for model in MATRIX.gpus.models:
        for name in (model.name, *model.nvml_names, *model.aliases):
            assert lookup_gpu(MATRIX, name).model is model, name


def test_the_published_list_is_covered() -> None:
    """Every family of NVIDIA's CUDA GPUs page has models, and laptops are there."""
    by_cc: dict[str, int] = {}
    for m in MATRIX.gpus.models:
        by_cc[m.cc] = by_cc.get(m.cc, 0) + 1
    for cc in ("3.5", "3.7", "5.0", "5.2", "6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0"):
        assert by_cc.get(cc), cc
    for cc in ("10.0", "10.3", "11.0", "12.0", "12.1"):
        assert by_cc.get(cc), cc
    assert sum("Laptop" in m.name for m in MATRIX.gpus.models) >= 15
    assert len(MATRIX.gpus.models) >= 200
