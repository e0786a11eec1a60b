"""Slurm as a fleet scheduler (the Scheduler of schedulers/base.py): node classes from scontrol
(fleet/slurm.py), one sbatch job per class (fleet/jobs.py writes their scripts), followed with
scontrol/sacct and collected as each ends, cancelled on Ctrl-C; and the sbatch options a certified
image asks for. Interrupted while waiting (Ctrl-C), the jobs still queued or running are cancelled
(scancel) and the run record says so; nothing half-written is left.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.record import section, text
from envbuilder.certify.store import CertStore
from envbuilder.errors import SchedulerError, UsageError
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.jobs import (
    RUNTIMES,
    FleetRun,
    JobOptions,
    collect_job,
    follow,
    open_jobs,
    plan_run,
    save_run,
)
from envbuilder.fleet.schedulers.base import (
    PASSING,
    CertifyRequest,
    ClassQuery,
    ConstraintSection,
    Say,
)
from envbuilder.fleet.slurm import cancel, job_state, node_classes, probe_class, read_nodes, submit
from envbuilder.fleet.status import ClassStatus
from envbuilder.host import Runner
from envbuilder.host.probe import run_command
from envbuilder.matrix.model import Matrix
from envbuilder.resources import user_data_dir

POLL_S = 3.0


def submit_run(run: FleetRun, *, runner: Runner = run_command, say: Say = lambda _l: None) -> FleetRun:
    """sbatch every job of the run; the record is saved after each, so it always says what was
    submitted. A job Slurm refuses keeps its refusal as its problem (state REFUSED); the others go
    on. Raises StoreError."""
    run = save_run(run)
    for job in run.jobs:
        try:
            job_id = submit(job.script, runner)
        except SchedulerError as exc:
            say(f"fleet: {job.node_class}: sbatch refused: {exc.message}")
            run = save_run(run.with_job(replace(job, state="REFUSED", problem=exc.message)))
            continue
        say(f"fleet: {job.node_class}: submitted job {job_id} ({' '.join(job.request.get('sbatch', ()))})")
        run = save_run(run.with_job(replace(job, job_id=job_id, state="SUBMITTED")))
    return run


def advance(
    run: FleetRun,
    *,
    store: CertStore,
    runner: Runner = run_command,
    say: Say = lambda _l: None,
) -> tuple[FleetRun, list[Certificate]]:
    """One look at the run's open jobs: new states are said and recorded; an ended job's
    certificate is collected, checked and stored. Returns the run and the certificates collected
    now. Raises StoreError."""
    collected: list[Certificate] = []
    for job in open_jobs(run):
        state = job_state(str(job.job_id), runner)
        if not state.done:
            if state.state != job.state:
                where = f" on {state.node}" if state.node else ""
                why = f" ({state.reason})" if state.reason else ""
                say(f"fleet: {job.node_class}: job {job.job_id} {state.state}{where}{why}")
                run = save_run(run.with_job(replace(job, state=state.state, node=state.node)))
            continue
        got = collect_job(run, job, state)
        if got.certificate is not None:
            store.add(got.certificate)
            collected.append(got.certificate)
            say(
                f"fleet: {job.node_class}: job {job.job_id} {state.state} on {state.node}: "
                f"{got.certificate.verdict} (certificate {got.certificate.id[:12]})"
            )
        else:
            say(f"fleet: {job.node_class}: {got.job.problem}")
        run = save_run(run.with_job(got.job))
    return run, collected


def wait_run(
    run: FleetRun,
    *,
    store: CertStore,
    runner: Runner = run_command,
    say: Say = lambda _l: None,
    timeout_s: float | None = None,
    poll_s: float = POLL_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[FleetRun, list[Certificate]]:
    """Follow the run until every job has ended and been collected, or `timeout_s` passed (the
    jobs go on; `fleet status` collects them later). Ctrl-C cancels the open jobs, records them
    CANCELLED and re-raises. Raises StoreError."""

    def look(r: FleetRun) -> tuple[FleetRun, list[Certificate]]:
        nonlocal run
        run, now = advance(r, store=store, runner=runner, say=say)
        return run, now

    try:
        return follow(run, look, say=say, timeout_s=timeout_s, poll_s=poll_s, sleep=sleep, clock=clock)
    except KeyboardInterrupt:
        pending = open_jobs(run)
        cancel([str(j.job_id) for j in pending], runner)
        for job in pending:
            run = save_run(run.with_job(replace(job, state="CANCELLED", problem="cancelled: interrupted")))
        raise


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmConstraint:
    node_class: str
    gres: str | None
    constraint: str | None
    partition: str | None
    verdict: str

    def options(self) -> list[str]:
        opts = [f"--partition={self.partition}"] if self.partition else []
        opts += [f"--gres={self.gres}"] if self.gres else []
        opts += [f"--constraint={self.constraint}"] if self.constraint else []
        return opts

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.node_class,
            "gres": self.gres,
            "constraint": self.constraint,
            "partition": self.partition,
            "verdict": self.verdict,
            "sbatch": shlex.join(self.options()),
        }


def slurm_constraints(rows: Sequence[ClassStatus]) -> list[SlurmConstraint]:
    """One entry per passing class certified through Slurm: the options its job was selected by."""
    out = []
    for r in rows:
        sched = section(r.certificate.run.get("scheduler"))
        if r.verdict not in PASSING or sched.get("kind") != "slurm":
            continue
        out.append(
            SlurmConstraint(
                node_class=r.node_class,
                gres=text(sched.get("gres")),
                constraint=text(sched.get("constraint")),
                partition=text(sched.get("partition")),
                verdict=r.verdict,
            )
        )
    return out


class Slurm:
    """Slurm through its own commands (scontrol, sbatch, squeue/scontrol/sacct, scancel)."""

    name = "slurm"
    option = "slurm"
    source = "Slurm scontrol"
    constraint_formats = ("slurm",)

    def __init__(self, runner: Runner = run_command) -> None:
        self.runner = runner

    def node_classes(self, matrix: Matrix, query: ClassQuery) -> tuple[NodeClass, ...]:
        """The cluster's node classes from scontrol (of --partition), and with probe, srun
        nvidia-smi on one node of each. Raises SchedulerError."""
        classes = node_classes(read_nodes(self.runner), matrix)
        if query.partition:
            classes = tuple(c for c in classes if query.partition in c.partitions)
        if query.probe:
            classes = tuple(
                probe_class(c, self.runner, partition=query.partition) if c.gpus_per_node else c
                for c in classes
            )
        return classes

    def certify(
        self, request: CertifyRequest, *, say: Say, echo: Say
    ) -> tuple[FleetRun | None, list[Certificate]]:
        """Plan, submit and (with wait) follow one sbatch job per class."""
        if not request.classes:
            partition = request.query.partition
            where = f"partition {partition}" if partition else "this cluster"
            raise UsageError(
                f"no node class with GPUs in {where}",
                hint="envbuilder fleet plan --scheduler slurm lists them",
            )
        runtime = next((r for r in RUNTIMES if r == request.runtime), None)
        if runtime is None:
            raise UsageError(f"--runtime {request.runtime}: Slurm jobs run one of {', '.join(RUNTIMES)}")
        opts = JobOptions(
            runtime=runtime,
            gpu_access=request.gpu_access,
            quick=request.quick,
            exclusive=request.exclusive,
            time_minutes=request.time_minutes,
            partition=request.query.partition,
            envbuilder=request.envbuilder or (sys.executable, "-m", "envbuilder"),
            image_file=request.image_file,
            budget_s=request.budget_s,
        )
        image = request.image
        if image.registry is None:
            say(
                f"fleet: warning: {image.ref} is in no registry: each node must already have it "
                "(push it for a real cluster)"
            )
        work_dir = request.work_dir or user_data_dir() / "fleet" / "jobs"
        run = plan_run(image, request.classes, request.plan, opts, work_dir=work_dir)
        run = submit_run(run, runner=self.runner, say=say)
        if not request.wait:
            return run, []
        return wait_run(run, store=CertStore(), runner=self.runner, say=say, timeout_s=request.timeout_s)

    def advance(self, run: FleetRun, *, store: CertStore, say: Say) -> tuple[FleetRun, list[Certificate]]:
        return advance(run, store=store, runner=self.runner, say=say)

    def constraints(self, rows: Sequence[ClassStatus], *, image: str) -> tuple[ConstraintSection, ...]:
        found = slurm_constraints(rows)
        lines = ["# Slurm: the options each certified node class was selected by"]
        lines += [f"{s.node_class}: sbatch {shlex.join(s.options())}  # {s.verdict}" for s in found]
        if not found:
            lines.append("# (no certificate came from a Slurm job)")
        return (
            ConstraintSection(
                format="slurm", key="slurm", value=[s.to_dict() for s in found], lines=tuple(lines)
            ),
        )
