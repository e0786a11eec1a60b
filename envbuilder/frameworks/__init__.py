"""The frameworks envbuilder builds and certifies images for: one module each (base.py says
what a module holds), listed once here. The command line's `--framework` choices, the matrix
files read, the harness's `--framework`, the host probe and `run --monitor`'s out-of-memory
patterns all come from this registry; docs/architecture.md "How to add a framework" walks
through adding one (tests/unit/test_frameworks.py keeps the two in step)."""

from __future__ import annotations

from envbuilder.errors import UsageError
from envbuilder.frameworks import jax, tensorflow, torch
from envbuilder.frameworks.base import Framework

# Order is the order of every listing (matrix files, `matrix list`, choices, doctor).
ALL_FRAMEWORK_MODULES: tuple[Framework, ...] = (torch, tensorflow, jax)
REGISTRY: dict[str, Framework] = {m.NAME: m for m in ALL_FRAMEWORK_MODULES}
NAMES: tuple[str, ...] = tuple(REGISTRY)
DEFAULT = "torch"  # what a spec or `--framework` that names none gets


def get(name: str) -> Framework:
    """The framework module `name`. Raises UsageError for a name the registry does not hold."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(NAMES)
        raise UsageError(f"unknown framework {name!r}", hint=f"envbuilder knows: {known}") from None


def framework_of(package: str) -> str | None:
    """The framework a (canonical) package name means: one of its own packages, or one that runs
    on it only (Lightning, Flax, tf-keras); None for any other package."""
    for fw in ALL_FRAMEWORK_MODULES:
        if package in fw.FACTS.packages or package in fw.FACTS.implied_by:
            return fw.NAME
    return None
