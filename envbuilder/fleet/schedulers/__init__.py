"""The schedulers a fleet can run on: one module per scheduler behind the Protocol of base.py,
listed once in ALL_SCHEDULERS; the command line's `--scheduler` choices, a recorded run's
scheduler and `fleet constraints --format` are all read from it (cibuildwheel's platforms/ and its
ALL_PLATFORM_MODULES are the model). docs/architecture.md says how to add one."""

from __future__ import annotations

from envbuilder.errors import UsageError
from envbuilder.fleet.jobs import FleetRun
from envbuilder.fleet.schedulers.base import Scheduler
from envbuilder.fleet.schedulers.kubernetes import Kubernetes
from envbuilder.fleet.schedulers.slurm import Slurm

# One line per scheduler; the order is the order of --scheduler's choices and of fleet constraints.
ALL_SCHEDULERS: tuple[Scheduler, ...] = (
    Slurm(),
    Kubernetes(),
)


def choices() -> tuple[str, ...]:
    """The `--scheduler` choices, in registry order."""
    return tuple(s.option for s in ALL_SCHEDULERS)


def scheduler_named(option: str) -> Scheduler:
    """The scheduler of a `--scheduler` choice (or its name). Raises UsageError."""
    for s in ALL_SCHEDULERS:
        if option in (s.option, s.name):
            return s
    raise UsageError(f"no scheduler {option!r}", hint=f"the schedulers are: {', '.join(choices())}")


def scheduler_of_run(run: FleetRun) -> Scheduler | None:
    """The scheduler that runs a recorded run's jobs (its record names it); None for a name no
    scheduler here has."""
    return next((s for s in ALL_SCHEDULERS if s.name == run.scheduler), None)


def constraint_formats() -> tuple[str, ...]:
    """Every scheduler's `fleet constraints --format` names, in registry order."""
    return tuple(f for s in ALL_SCHEDULERS for f in s.constraint_formats)
