"""Version helpers: the one place that says "12.4 matches 12.4.1" and parses drivers and CCs."""

from __future__ import annotations

import pytest

from envbuilder.errors import UsageError
from envbuilder.versions import (
    at_least,
    driver_branch,
    major_minor,
    parse_cc,
    parse_driver,
    parse_specifier,
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
