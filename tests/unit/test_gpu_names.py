"""GPU names as people and nvidia-smi write them: one model fits -> that model; several of one
compute capability -> accepted, said so; several of different ones -> all listed (exit 2); none ->
"did you mean" with the nearest names, never a pick. MIG instances and vGPU profiles read as their
board. And every name in gpus.yaml reaches its own model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envbuilder.errors import UsageError
from envbuilder.fleet.classes import NodeClass, with_gpu_model
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix import load_matrix
from envbuilder.resolve.gpus import enrich_host, gpu_from_match, lookup_gpu

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
        ("RTX 4090 \uff2c\uff41\uff50\uff54\uff4f\uff50", "GeForce RTX 4090 Laptop GPU", "8.9"),  # Laptop
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
        (
            "RTX 5000",
            [
                "NVIDIA RTX 5000 Ada",
                "NVIDIA RTX 5000 Ada Generation Laptop GPU",
                "NVIDIA RTX PRO 5000 Blackwell",
                "Quadro RTX 5000",
            ],
        ),
        # two models of two compute capabilities (7.5, 8.9): as refused as three or more
        ("RTX 3000", ["NVIDIA RTX 3000 Ada Generation Laptop GPU", "Quadro RTX 3000"]),
    ],
)
def test_several_models_are_listed_never_one_picked(typed: str, expected: list[str]) -> None:
    with pytest.raises(UsageError) as err:
        lookup_gpu(MATRIX, typed)
    assert err.value.exit_code == 2
    listed = ", ".join(repr(name) for name in expected)
    assert err.value.message == f"GPU {typed!r} fits {len(expected)} models: {listed}"
    assert err.value.hint is not None and err.value.hint.startswith("their compute capabilities differ (")


def test_a_long_candidate_list_is_cut_and_counted() -> None:
    with pytest.raises(UsageError) as err:
        lookup_gpu(MATRIX, "Quadro")
    quadros = sum(m.name.startswith("Quadro") for m in MATRIX.gpus.models)
    assert err.value.message.startswith(f"GPU 'Quadro' fits {quadros} models: 'Quadro GP100', ")
    assert err.value.message.endswith(f" and {quadros - 8} more")


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("RTX 4909", "'GeForce RTX 4090'"),
        ("NVIDIA GeForce RTX 5900", "'GeForce RTX 5090'"),
        ("H1000", "'NVIDIA H100'"),
        ("RTX A5000 Laptp", "'NVIDIA RTX A5000 Laptop GPU'"),
    ],
)
def test_a_typo_is_refused_with_did_you_mean(typed: str, suggested: str) -> None:
    with pytest.raises(UsageError, match="unknown GPU") as err:
        lookup_gpu(MATRIX, typed)
    assert err.value.hint is not None and err.value.hint.startswith("did you mean ")
    assert suggested in err.value.hint.split("?")[0]
    assert "--cc" in err.value.hint


@pytest.mark.parametrize("typed", ["NVIDIA", "", "Radeon RX 7900"])
def test_no_near_name_no_suggestion(typed: str) -> None:
    with pytest.raises(UsageError, match="unknown GPU") as err:
        lookup_gpu(MATRIX, typed)
    assert err.value.hint is not None and "did you mean" not in err.value.hint and "--cc" in err.value.hint


@pytest.mark.parametrize(
    ("typed", "cc", "count"),
    [
        ("4090", "8.9", 3),  # the 4090, the 4090 D and the laptop part
        ("A2000", "8.6", 2),  # the desktop card and the laptop part
        ("3050", "8.6", 3),  # the desktop card and two laptop parts
    ],
)
def test_several_models_of_one_compute_capability_are_accepted_and_said(
    typed: str, cc: str, count: int
) -> None:
    match = lookup_gpu(MATRIX, typed)
    assert len(match.candidates) == count and match.model.cc == cc
    gpu = gpu_from_match(MATRIX, match)
    assert gpu.cc == cc
    assert f"any of {count} models of compute capability {cc}: " in gpu.name


def test_several_models_give_their_driver_branches_only_where_they_agree() -> None:
    # `4090` fits three models of one capability and one branch range: the model stands for their
    # branch checks. Were one of them (the 4090 D) sold from another branch, none may.
    match = lookup_gpu(MATRIX, "4090")
    assert gpu_from_match(MATRIX, match).model == "GeForce RTX 4090"
    models = tuple(
        replace(m, first_branch=525) if m.name == "GeForce RTX 4090 D" else m for m in MATRIX.gpus.models
    )
    other = replace(MATRIX, gpus=replace(MATRIX.gpus, models=models))
    gpu = gpu_from_match(other, lookup_gpu(other, "4090"))
    assert (gpu.cc, gpu.brand, gpu.model) == ("8.9", "geforce", None)


def test_several_models_of_different_brands_give_no_brand() -> None:
    # `24GB` fits the Quadro M6000 24GB and the Tesla M40 (both 5.2): the brand decides
    # NVIDIA_REQUIRE_CUDA's brand terms, and neither brand is the one this GPU has for sure.
    match = lookup_gpu(MATRIX, "24GB")
    assert match.candidates == ("Quadro M6000 24GB", "Tesla M40")
    gpu = gpu_from_match(MATRIX, match)
    assert (gpu.cc, gpu.brand, gpu.segment) == ("5.2", None, None)


def test_a_probed_gpu_keeps_the_compute_capability_the_probe_read() -> None:
    # The matrix fills what the probe could not read (nvidia-smi's [N/A]); it never overrides a
    # reading (a board the matrix takes for another model's name is what it says it is).
    host = Host(
        driver="580.65.06",
        gpus=(HostGpu(name="NVIDIA H100 80GB HBM3", cc="9.1"), HostGpu(name="NVIDIA H100 80GB HBM3", cc="")),
        source="nvml",
    )
    read, unread = enrich_host(MATRIX, host).gpus
    assert (read.cc, read.model) == ("9.1", "NVIDIA H100")
    assert (unread.cc, unread.model) == ("9.0", "NVIDIA H100")


@pytest.mark.parametrize(
    ("typed", "model", "cc", "setting"),
    [
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100", "9.0", "MIG instance 1g.10gb"),
        ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "NVIDIA A100", "8.0", "MIG instance 3g.20gb"),
        ("NVIDIA H200 MIG 1g.18gb+me", "NVIDIA H200", "9.0", "MIG instance 1g.18gb+me"),
        ("GRID A100-40C", "NVIDIA A100", "8.0", "vGPU profile A100-40C"),
        ("NVIDIA A100-40C", "NVIDIA A100", "8.0", "vGPU profile A100-40C"),
        ("NVIDIA A100D-80C", "NVIDIA A100", "8.0", "vGPU profile A100D-80C"),
        ("NVIDIA A10-24Q", "NVIDIA A10", "8.6", "vGPU profile A10-24Q"),
        ("GRID T4-16C", "NVIDIA T4", "7.5", "vGPU profile T4-16C"),
        ("NVIDIA H100XM-80C", "NVIDIA H100", "9.0", "vGPU profile H100XM-80C"),
        ("NVIDIA L40S-48C", "NVIDIA L40S", "8.9", "vGPU profile L40S-48C"),
    ],
)
def test_mig_instances_and_vgpu_profiles_read_as_their_board(
    typed: str, model: str, cc: str, setting: str
) -> None:
    match = lookup_gpu(MATRIX, typed)
    assert (match.model.name, match.model.cc, match.name) == (model, cc, typed)
    assert match.setting == f"{setting} of {model}"
    assert gpu_from_match(MATRIX, match).name == f"{typed} ({setting} of {model})"


@pytest.mark.parametrize(
    ("typed", "model", "cc"),
    [  # the names issue 24's report sets had and the matrix did not
        ("NVIDIA RTX 5000 Ada Generation Laptop GPU", "NVIDIA RTX 5000 Ada Generation Laptop GPU", "8.9"),
        ("NVIDIA RTX A500 Laptop GPU", "NVIDIA RTX A500 Laptop GPU", "8.6"),
        ("NVIDIA RTX A1000 Laptop GPU", "NVIDIA RTX A1000 Laptop GPU", "8.6"),
        ("NVIDIA RTX A2000 Laptop GPU", "NVIDIA RTX A2000 Laptop GPU", "8.6"),
        ("NVIDIA RTX A4000 Laptop GPU", "NVIDIA RTX A4000 Laptop GPU", "8.6"),
        ("NVIDIA RTX A5000 Laptop GPU", "NVIDIA RTX A5000 Laptop GPU", "8.6"),
        ("NVIDIA T500", "NVIDIA T500", "7.5"),
        ("NVIDIA T550 Laptop GPU", "NVIDIA T550 Laptop GPU", "7.5"),
        ("NVIDIA T600 Laptop GPU", "NVIDIA T600 Laptop GPU", "7.5"),
        ("NVIDIA T1200 Laptop GPU", "NVIDIA T1200 Laptop GPU", "7.5"),
        ("NVIDIA GeForce MX150", "GeForce MX150", "6.1"),
        ("NVIDIA GeForce MX250", "GeForce MX250", "6.1"),
        ("NVIDIA GeForce MX350", "GeForce MX350", "6.1"),
        ("NVIDIA GeForce MX450", "GeForce MX450", "7.5"),
        ("NVIDIA GeForce MX550", "GeForce MX550", "7.5"),
        ("NVIDIA GeForce RTX 2050", "GeForce RTX 2050", "8.6"),  # GA107: Ampere despite its name
        ("NVIDIA T4G", "NVIDIA T4G", "7.5"),
        ("Tesla V100-DGXS-32GB", "NVIDIA V100", "7.0"),
        ("NVIDIA L2", "NVIDIA L2", "8.9"),
        ("NVIDIA H800 80GB HBM3", "NVIDIA H800", "9.0"),
    ],
)
def test_names_of_the_report_sets(typed: str, model: str, cc: str) -> None:
    match = lookup_gpu(MATRIX, typed)
    assert (match.model.name, match.model.cc, match.candidates) == (model, cc, ())


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


def test_a_fleet_class_named_by_an_ambiguous_short_name_gets_the_capability_not_a_model() -> None:
    cls = NodeClass(name="gpu", scheduler="slurm", nodes=("n1",), gpu_type="4090")
    got = with_gpu_model(cls, MATRIX, "4090", "GRES type")
    assert (got.gpu_model, got.cc) == (None, "8.9")
    assert got.facts[-1].startswith("GPU model: GRES type '4090' fits 3 models of compute capability 8.9 (")


def test_a_fleet_class_named_by_a_name_two_models_fit_gets_no_model_nor_its_nvml_names_or_brand() -> None:
    # Two candidates are as many as three: neither the first (by name) nor any is the class's model.
    cls = NodeClass(name="gpu", scheduler="slurm", nodes=("n1",), gpu_type="a2000")
    got = with_gpu_model(cls, MATRIX, "A2000", "GRES type")
    assert (got.gpu_model, got.nvml_names, got.brand, got.cc) == (None, (), None, "8.6")
    assert got.facts[-1].startswith("GPU model: GRES type 'A2000' fits 2 models of compute capability 8.6 (")


@pytest.mark.parametrize("typed", ["RTX " * 5000, "A" * 100_000])
def test_a_huge_name_is_answered_quickly_and_quoted_short(typed: str) -> None:
    with pytest.raises(UsageError) as err:
        lookup_gpu(MATRIX, typed)
    assert len(err.value.message) < 300 and f"({len(typed)} characters)" in err.value.message


@pytest.mark.parametrize("typed", ["MIG 1g.10gb", "MIG 3g.40gb", "mig 1c.3g.40gb"])
def test_a_mig_profile_without_its_gpu_is_refused_with_the_reason(typed: str) -> None:
    with pytest.raises(UsageError, match="names a MIG instance's profile but not its GPU") as err:
        lookup_gpu(MATRIX, typed)
    assert err.value.hint is not None and "--cc X.Y" in err.value.hint
