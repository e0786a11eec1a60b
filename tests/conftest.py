"""Shared pytest options: `--update-golden` rewrites expected renders instead of comparing."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* and images/*.Dockerfile from the current templates.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with --update-golden."""
    return bool(request.config.getoption("--update-golden"))
