"""The container runtimes: one module per runtime behind one small interface (base.py `Runtime`),
and one registry. Each runtime owns its GPU access modes (what each hands a container).

Add a runtime: write runtime/NAME.py with a class that satisfies `Runtime`, add one line to
RUNTIMES below (docs/architecture.md, "How to add a runtime"). The command line's `--runtime`
choices are NAMES; `--gpu-access` choices are ACCESS_CHOICES.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envbuilder.errors import UsageError
from envbuilder.runtime.apptainer import ApptainerRuntime
from envbuilder.runtime.base import (
    AUTO,
    NONE,
    AccessChoice,
    Availability,
    GpuGrant,
    Runtime,
    access_choices,
    choose_access,
)
from envbuilder.runtime.docker import DockerRuntime
from envbuilder.runtime.enroot import EnrootRuntime
from envbuilder.runtime.podman import PodmanRuntime

# name -> the runtime's class (its keyword options: docker engine=, apptainer/enroot binary=, ...).
# One line per runtime; the first is the default.
RUNTIMES: dict[str, Callable[..., Runtime]] = {
    "docker": DockerRuntime,
    "apptainer": ApptainerRuntime,
    "enroot": EnrootRuntime,
    "podman": PodmanRuntime,
}
DEFAULT = "docker"


def names() -> tuple[str, ...]:
    """The registered runtimes, the default first (`--runtime` choices)."""
    return tuple(RUNTIMES)


def get(name: str = DEFAULT, **options: Any) -> Runtime:
    """The runtime `name`, made with its `options`. Raises UsageError for an unknown name."""
    factory = RUNTIMES.get(name)
    if factory is None:
        raise UsageError(f"unknown container runtime {name!r}", hint=f"use one of {', '.join(RUNTIMES)}")
    return factory(**options)


def gpu_access_choices() -> tuple[str, ...]:
    """`--gpu-access` choices: auto, every registered runtime's modes, none."""
    return access_choices([get(n) for n in RUNTIMES])


def modes_of() -> dict[str, tuple[str, ...]]:
    """Each registered runtime's GPU access modes, in `auto` order."""
    return {n: get(n).modes for n in RUNTIMES}


__all__ = [
    "AUTO",
    "DEFAULT",
    "NONE",
    "RUNTIMES",
    "AccessChoice",
    "Availability",
    "GpuGrant",
    "Runtime",
    "choose_access",
    "get",
    "gpu_access_choices",
    "modes_of",
    "names",
]
