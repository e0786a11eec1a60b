"""What a scheduler is to the fleet: the small Protocol every scheduler module implements (read
its node classes, certify an image on them, take one look at a recorded run, say what a certified
image asks of it), and the plain values that cross it. The registry is schedulers/__init__.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.harness_plan import HarnessPlan
from envbuilder.certify.store import CertStore
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.image import FleetImage
from envbuilder.fleet.jobs import FleetRun
from envbuilder.fleet.status import ClassStatus
from envbuilder.matrix.model import Matrix

Say = Callable[[str], None]
PASSING = ("certified", "certified-cpu-only")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassQuery:
    """Where a scheduler reads its node classes from, as the command line said. Each scheduler
    reads what it knows and ignores the rest (Slurm: partition, probe; Kubernetes: nodes_file)."""

    nodes_file: Path | None = None  # a saved node list instead of the live cluster
    partition: str | None = None  # only the nodes of this partition
    probe: bool = False  # ask one node of each class what it has


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifyRequest:
    """What `fleet certify` asks of a scheduler: the image and its harness plan, the chosen
    classes, and the command line's settings (each scheduler reads those it has)."""

    image: FleetImage
    plan: HarnessPlan
    classes: tuple[NodeClass, ...]
    query: ClassQuery
    gpu_access: str = "auto"
    quick: bool = False
    budget_s: float | None = None
    wait: bool = True
    timeout_s: float | None = None
    # batch schedulers (Slurm)
    runtime: str = "docker"
    image_file: str | None = None
    time_minutes: int = 60
    exclusive: bool = True
    work_dir: Path | None = None
    envbuilder: tuple[str, ...] | None = None  # how a node runs envbuilder (None: this interpreter)
    # schedulers that take manifests (Kubernetes)
    out_dir: Path | None = None
    dra: bool = False
    apply: bool = False
    namespace: str = "default"


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachable:
    """An OCI artifact `fleet constraints --attach` attaches to the image (subject: the image)."""

    title: str  # what it is, as the command says it: NFD image-compatibility spec
    artifact_type: str
    media_type: str
    blob: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class ConstraintSection:
    """One section of `fleet constraints`: its --format name, its JSON key and value, its text
    lines, and what --attach would attach (or why there is nothing)."""

    format: str
    key: str
    value: Any
    lines: tuple[str, ...]
    attachable: Attachable | None = None
    no_attachable: str | None = None  # why there is nothing to attach, where a section could have one


class Scheduler(Protocol):
    """A cluster's own scheduler, driven through its own commands or API (never one of ours)."""

    @property
    def name(self) -> str:
        """The scheduler's name in run records and certificates (run.scheduler.kind): slurm."""
        ...

    @property
    def option(self) -> str:
        """Its `--scheduler` choice (and hidden alias flag `--OPTION`): slurm, k8s."""
        ...

    @property
    def source(self) -> str:
        """Where its node classes come from, as `fleet plan` says it: Slurm scontrol."""
        ...

    @property
    def constraint_formats(self) -> tuple[str, ...]:
        """The `fleet constraints --format` names of the sections constraints() gives."""
        ...

    def node_classes(self, matrix: Matrix, query: ClassQuery) -> tuple[NodeClass, ...]:
        """The cluster's node classes. Raises UsageError, SchedulerError."""
        ...

    def certify(
        self, request: CertifyRequest, *, say: Say, echo: Say
    ) -> tuple[FleetRun | None, list[Certificate]]:
        """Plan, submit and (with request.wait) follow one certification job per class; the run
        and the certificates collected (run None: nothing was submitted). `say` goes to stderr,
        `echo` to stdout. Raises UsageError, SchedulerError, StoreError."""
        ...

    def advance(self, run: FleetRun, *, store: CertStore, say: Say) -> tuple[FleetRun, list[Certificate]]:
        """One look at a recorded run's open jobs: ended ones collected, judged and stored.
        Raises SchedulerError, StoreError."""
        ...

    def constraints(self, rows: Sequence[ClassStatus], *, image: str) -> tuple[ConstraintSection, ...]:
        """What the passing certificates of `image` (one row per class) ask of this scheduler."""
        ...
