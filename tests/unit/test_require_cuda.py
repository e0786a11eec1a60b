"""NVIDIA_REQUIRE_CUDA: the one parser and evaluator (resolve and run both call it), driven by the
case table tests/data/require_cuda_cases.yaml; and what the toolkit reads from an image's env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from envbuilder.require_cuda import (
    Factor,
    Properties,
    image_requirements,
    parse_require_cuda,
    require_cuda_text,
)

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "data" / "require_cuda_cases.yaml").read_text(encoding="utf-8")
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_case(case: dict[str, Any]) -> None:
    req = parse_require_cuda(case["require"])
    props = Properties(
        cuda=case.get("cuda"), driver=case.get("driver"), arch=case.get("arch"), brand=case.get("brand")
    )
    assert (req.invalid is not None) == case.get("invalid", False), req.invalid
    assert req.admits(props) is case["admits"]


def test_parse_builds_the_constraint_tree() -> None:
    req = parse_require_cuda("cuda>=12.8 brand=tesla,driver>=470,driver<471")
    assert req.terms == (
        (Factor("cuda", ">=", "12.8"),),
        (Factor("brand", "=", "tesla"), Factor("driver", ">=", "470"), Factor("driver", "<", "471")),
    )
    tesla = Properties(cuda="12.2", driver="470.256.02", brand="tesla")
    assert req.matching_term(tesla) == req.terms[1]


def test_the_matrix_form_is_the_images_own_text() -> None:
    text = require_cuda_text("12.8", (("tesla", 470), ("nvidia", 535)))
    assert text == "cuda>=12.8 brand=tesla,driver>=470,driver<471 brand=nvidia,driver>=535,driver<536"


def test_image_requirements_follow_the_toolkits_environment_rules() -> None:
    both = image_requirements({"NVIDIA_REQUIRE_CUDA": "cuda>=12.8", "NVIDIA_REQUIRE_ARCH": "arch>=9.0"})
    assert [r.name for r in both] == ["NVIDIA_REQUIRE_ARCH", "NVIDIA_REQUIRE_CUDA"]
    assert image_requirements({"NVIDIA_REQUIRE_JETPACK": "csv-mounts=all"}) == ()
    legacy = image_requirements({"CUDA_VERSION": "11.8.0"})
    assert [(r.name, r.text) for r in legacy] == [("CUDA_VERSION", "cuda>=11.8")]
    assert image_requirements({"NVIDIA_REQUIRE_CUDA": "cuda>=99.0", "NVIDIA_DISABLE_REQUIRE": "true"}) == ()
    kept = image_requirements({"NVIDIA_REQUIRE_CUDA": "cuda>=99.0", "NVIDIA_DISABLE_REQUIRE": "no"})
    assert len(kept) == 1  # strconv.ParseBool("no") is an error, so the check stays on


# --------------------------------------------------------------------------- third operator set (--ops third)


@pytest.mark.parametrize("value", ["cuda12.0", "cuda>=twelve"])
def test_an_invalid_requirement_keeps_the_name_of_its_variable(value: str) -> None:
    """The refusal names the variable that broke (NVIDIA_REQUIRE_ARCH, not the default's CUDA),
    and shows its value as written (the run's refusal prints it: `{name}={text} is malformed`)."""
    req = parse_require_cuda(value, "NVIDIA_REQUIRE_ARCH")
    assert req.invalid is not None and req.name == "NVIDIA_REQUIRE_ARCH" and req.text == value


@pytest.mark.parametrize(
    ("brand", "holds"), [("nvidia", True), ("tesla", False), ("titan", False), (None, True)]
)
def test_a_string_property_orders_as_the_toolkits_strings_do(brand: str | None, holds: bool) -> None:
    """brand<tesla: below it in byte order ('nvidia', '' for an unknown brand), not at or above it."""
    assert (
        Factor("brand", "<", "tesla").holds(Properties(cuda=None, driver=None, arch=None, brand=brand))
        is holds
    )


def test_every_nvidia_require_jetpack_variable_is_left_to_jetpack() -> None:
    """The toolkit skips each variable that starts with NVIDIA_REQUIRE_JETPACK (its
    NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS among them), not only the one of that exact name."""
    env = {"NVIDIA_REQUIRE_JETPACK_HOST_MOUNTS": "cuda>=99.0", "NVIDIA_REQUIRE_JETPACK": "cuda>=99.0"}
    assert image_requirements(env) == ()


def test_a_requirement_parsed_alone_is_nvidia_require_cuda() -> None:
    assert parse_require_cuda("cuda>=12.8").name == "NVIDIA_REQUIRE_CUDA"
    assert parse_require_cuda("cuda>=").name == "NVIDIA_REQUIRE_CUDA"


@pytest.mark.parametrize("cuda", ["12.8 ", " 12.8", "12.8\n"])
def test_a_version_read_with_surrounding_space_compares_as_the_version(cuda: str) -> None:
    # Host facts read from a tool's output may keep a newline; the version is what counts.
    req = parse_require_cuda("cuda>=12.8")
    assert req.admits(Properties(cuda=cuda)) is True
    assert parse_require_cuda("cuda>=12.9").admits(Properties(cuda=cuda)) is False


# --------------------------------------------------------------------------- the seventh operator set
# benchmarks/mutants.py --auto run-check --ops seventh (2026-12-05): what a probe and an image feed in.


@pytest.mark.parametrize("driver", ["580.²", "5½0.95.05", "五八〇", "580.65.\u0660\u0665"])
def test_a_host_version_with_digits_that_are_not_ascii_is_unknown_not_a_crash(driver: str) -> None:
    """nvidia-smi's driver cell reaches the check as printed. A superscript digit passed
    str.isdigit and then failed int() (a ValueError out of the requirement check); an Arabic-Indic
    one was read as its digit. Any digit but 0-9 makes the version unknown, which sorts below
    every version, as semver has it."""
    assert parse_require_cuda("driver>=500").admits(Properties(driver=driver)) is False
    assert parse_require_cuda("driver<500").admits(Properties(driver=driver)) is True


def test_a_string_value_holding_another_operator_keeps_its_own() -> None:
    """The operator is the one the value starts with (the toolkit's order), not the first of the
    list found anywhere in it."""
    (term,) = parse_require_cuda("brand=a<=b").terms
    assert term == (Factor("brand", "=", "a<=b"),)
    assert parse_require_cuda("brand!<=x").invalid is not None  # `!<` is no operator


def test_only_variables_that_start_with_nvidia_require_are_requirements() -> None:
    env = {
        "X_NVIDIA_REQUIRE_CUDA": "cuda>=99.0",  # the prefix inside a name: not read
        "NVIDIA_REQUIRE_X_NVIDIA_REQUIRE_JETPACK": "cuda>=99.0",  # read: only a JETPACK start is skipped
    }
    (req,) = image_requirements(env)
    assert req.name == "NVIDIA_REQUIRE_X_NVIDIA_REQUIRE_JETPACK"


@pytest.mark.parametrize("value", ["arch>=9.0a", "arch=sm_90", "cuda>=12.0 arch>=9.0.0.1"])
def test_an_arch_that_is_no_version_makes_the_requirement_invalid(value: str) -> None:
    """`arch` is a version property as `cuda` and `driver` are: a value that is not X, X.Y or X.Y.Z
    makes the whole requirement invalid, as the toolkit refuses it (set P: P05)."""
    assert parse_require_cuda(value, "NVIDIA_REQUIRE_ARCH").invalid is not None
    assert parse_require_cuda("arch>=9.0", "NVIDIA_REQUIRE_ARCH").invalid is None


# --------------------------------------------------------------------------- set Q's survivors


def test_a_legacy_cuda_version_of_two_parts_requires_that_x_y() -> None:
    """The toolkit reads CUDA_VERSION's major and minor (cuda>=X.Y) whether it has two parts or
    three: 12.4 is cuda>=12.4, never cuda>=12."""
    for value, text in (("12.4", "cuda>=12.4"), ("12.4.1", "cuda>=12.4"), ("11.8.0", "cuda>=11.8")):
        (req,) = image_requirements({"CUDA_VERSION": value})
        assert (req.name, req.text) == ("CUDA_VERSION", text)


@pytest.mark.parametrize("value", ["cuda>=12.08", "cuda>=012.8", "driver>=535.0104"])
def test_a_version_with_a_leading_zero_makes_the_requirement_invalid(value: str) -> None:
    """Semantic versions have no leading zeros (the toolkit's semver refuses 12.08), so the whole
    requirement is invalid: the toolkit would refuse every container of the image."""
    req = parse_require_cuda(value)
    assert req.invalid is not None and not req.admits(Properties(cuda="13.0", driver="580.65.06"))
