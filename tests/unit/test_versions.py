"""Version helpers: the one place that says "12.4 matches 12.4.1" and parses drivers and CCs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from envbuilder.errors import UsageError
from envbuilder.versions import (
    at_least,
    driver_branch,
    is_driver_branch,
    major_minor,
    parse_cc,
    parse_driver,
    parse_host_driver,
    parse_python_xy,
    parse_specifier,
    parse_version,
    version_matches,
)


@pytest.mark.parametrize(
    ("prefix", "full", "expected"),
    [
        ("12.4", "12.4.1", True),
        ("12.4", "12.4", True),
        ("12.4", "12.40", False),
        ("12.4", "12.5.0", False),
        ("12", "12.9.1", True),
    ],
)
def test_version_matches(prefix: str, full: str, expected: bool) -> None:
    assert version_matches(prefix, full) is expected


def test_driver_parsing_and_branch() -> None:
    assert driver_branch("535.104.05") == 535
    assert str(parse_driver("580")) == "580"
    assert at_least("580.159.04", "580.65.06")
    assert not at_least("535.104.05", "580")


@pytest.mark.parametrize("bad", ["", "535.x", "v535", "1.2.3.4.5", "535.104.05-1"])
def test_malformed_driver_is_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="malformed driver version"):
        parse_driver(bad)


def test_cc_and_major_minor() -> None:
    assert parse_cc("12.0") == (12, 0)
    assert major_minor("12.8.1") == "12.8"
    assert major_minor("13") == "13.0"
    with pytest.raises(UsageError, match="compute capability"):
        parse_cc("9")


def test_specifier_errors_are_usage_errors() -> None:
    assert "2.11.0" in parse_specifier("==2.11.*")
    with pytest.raises(UsageError, match="malformed"):
        parse_specifier("=>2")


@pytest.mark.parametrize(
    "given",
    # two parts are full versions: Linux 470.86, 550.135, 575.64; Jetson Thor 580.00; WSL2's 577.00
    ["550.54.14", "580.159.04", "580", " 535.104.05 ", "470.86", "550.135", "575.64", "580.00", "577.00"],
)
def test_host_driver_as_nvidia_prints_it(given: str) -> None:
    assert parse_host_driver(given) == given.strip()
    assert not is_driver_branch(given) or "." not in given


@pytest.mark.parametrize("given", ["550.", "55", "550.54.14.1", "550.1234", "r580", "580.x"])
def test_malformed_host_driver_is_refused(given: str) -> None:
    with pytest.raises(UsageError, match="malformed driver version"):
        parse_host_driver(given)


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("580.00", "580.65.06"),  # Jetson Thor's 580.00 is below the CUDA 13.0 toolkit driver
        ("580.65.06", "580.95.05"),
        ("550.54", "550.54.14"),  # 550.54 reads as 550.54.0
        ("550.135", "555.42.02"),
        ("550.54.15", "550.135"),  # minor parts compare as numbers, not text
        ("470.86", "470.141.03"),
        ("580", "580.00.01"),
    ],
)
def test_driver_versions_compare_part_by_part(lower: str, higher: str) -> None:
    assert parse_driver(lower) < parse_driver(higher)
    assert driver_branch(lower) == int(lower.split(".")[0])


def test_two_part_equals_its_zero_padded_form() -> None:
    assert parse_driver("580.00") == parse_driver("580.0.0") == parse_driver("580")


def test_branch_is_recognised() -> None:
    assert is_driver_branch("580")
    assert not is_driver_branch("580.65.06")


@pytest.mark.parametrize("bad", ["3", "3.11.7", "py3.11", "3.x", "", "python3.12", "3.12.", "\uff13.12"])
def test_python_must_be_x_y(bad: str) -> None:
    with pytest.raises(UsageError, match="malformed Python version") as err:
        parse_python_xy(bad)
    assert err.value.hint is not None and "X.Y" in err.value.hint


@pytest.mark.parametrize(
    ("parse", "text"),
    [
        (parse_host_driver, "\uff15\uff15\uff10.54.14"),  # full-width digits
        (parse_driver, "\u0665\u0665\u0660.54.14"),  # Arabic-Indic digits
        (parse_python_xy, "3.\uff11\uff12"),
        (parse_cc, "\uff18.0"),
        (parse_version, "2.\uff111"),
    ],
)
def test_only_ascii_digits_and_the_message_names_the_character(
    parse: Callable[[str], object], text: str
) -> None:
    with pytest.raises(UsageError, match=r"non-ASCII character '.' U\+[0-9A-F]{4}"):
        parse(text)


# --------------------------------------------------------------------------- the seventh operator set


@pytest.mark.parametrize("text", ["550.54.14\r\n", "\t550.54.14", "550.54.14\t\n"])
def test_a_driver_read_with_a_crlf_or_a_tab_around_it_is_the_driver(text: str) -> None:
    """nvidia-smi.exe under WSL2 ends its lines with CRLF; a tab may come with a table's cell."""
    from envbuilder.versions import parse_driver

    assert parse_driver(text) == parse_driver("550.54.14")


@pytest.mark.parametrize("text", ["10000", "10000.1", "99", "550.1234", "550.1.2.3"])
def test_a_driver_of_more_or_fewer_digits_than_a_branch_has_is_malformed(text: str) -> None:
    from envbuilder.errors import UsageError
    from envbuilder.versions import parse_driver

    with pytest.raises(UsageError, match="malformed driver version"):
        parse_driver(text)
