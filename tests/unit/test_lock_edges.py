"""The lock's decisions that the automatic mutants of `benchmarks/mutants.py --auto lock` found
unguarded (issue 23 items 1, 5 and 14, blind run of 2026-12-05): where a lock's index names and
URLs go, how a secret is recorded and redacted, what the lock hash and the lock's checks hold."""

from __future__ import annotations

from envbuilder.image.packages import install_indexes
from envbuilder.image.sources import PackageIndex

CORP = PackageIndex(name="corp", url="https://pkgs.example/simple")
TEAM = PackageIndex(name="team", url="https://team.example/simple")
TORCH = "https://download.pytorch.org/whl/cpu"
PYPI = "https://pypi.org/simple"


# --------------------------------------------------------------------------- install_indexes


def test_every_spec_index_goes_to_the_project_group_in_order() -> None:
    got = install_indexes("project", indexes=(CORP, TEAM), framework_index=TORCH, default_index=PYPI)
    assert got == (("corp", CORP.url), ("team", TEAM.url), ("framework", TORCH), ("pypi", PYPI))


def test_no_default_index_means_no_pypi_entry_in_either_group() -> None:
    """--no-index: the lock records default_index null; nothing may put ("pypi", None) on the line."""
    for group in ("framework", "project"):
        got = install_indexes(group, indexes=(CORP,), framework_index=None, default_index=None)  # type: ignore[arg-type]
        assert got == ((("corp", CORP.url),) if group == "project" else ()), group
    assert install_indexes("project", indexes=(), framework_index=TORCH, default_index=None) == (
        ("framework", TORCH),
    )
