"""The fleet certification end to end on Slurm: submit the run's jobs (sbatch), follow them
(scontrol/squeue, sacct), collect each certificate as its job ends, keep it in the store, and sign
and attach it to the image in its registry (attest.attach_certificates, as `push --attest` does).

Interrupted while waiting (Ctrl-C), the jobs still queued or running are cancelled (scancel) and
the run record says so; nothing half-written is left.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from securesystemslib.signer import Signer

from envbuilder.attest import Attached, attach_certificates
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore
from envbuilder.errors import SchedulerError
from envbuilder.fleet.image import FleetImage
from envbuilder.fleet.jobs import FleetRun, collect_job, follow, open_jobs, save_run
from envbuilder.fleet.k8s_api import cluster
from envbuilder.fleet.k8s_jobs import advance_k8s
from envbuilder.fleet.slurm import cancel, job_state, submit
from envbuilder.host import Runner
from envbuilder.host.probe import run_command
from envbuilder.registry import RegistryClient

Say = Callable[[str], None]
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


def advance_recorded(
    run: FleetRun, *, store: CertStore, say: Say = lambda _l: None
) -> tuple[FleetRun, list[Certificate]]:
    """One look at a recorded run's open jobs through the scheduler that runs them (Slurm, or the
    current kubeconfig's cluster for a Kubernetes run). Raises SchedulerError, StoreError."""
    if run.scheduler == "kubernetes":
        return advance_k8s(run, cluster(), store=store, say=say)
    return advance(run, store=store, say=say)


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
class Attestation:
    attached: tuple[Attached, ...] = ()
    skipped: str | None = None  # why nothing was attached

    def to_dict(self) -> dict[str, Any]:
        return {"attached": [a.to_dict() for a in self.attached], "skipped": self.skipped}


def attest_certificates(
    image: FleetImage,
    certs: Sequence[Certificate],
    signer: Signer | None,
    *,
    client: Callable[[str], RegistryClient] = RegistryClient,
    say: Say = lambda _l: None,
) -> Attestation:
    """Sign the certificates and attach them to the image's manifest in its registry (what was
    attached before is not attached again). Nothing to attach to for a local-only image. Raises
    CertificateRefusedError (the manifest holds another image), RegistryError and subclasses."""
    if not certs:
        return Attestation(skipped="no certificate came back")
    if image.registry is None or image.digest is None:
        return Attestation(
            skipped=f"{image.ref} is in no registry: certificates kept here only "
            "(push it with `envbuilder push IMAGE --attest` to publish them)"
        )
    if signer is None:
        return Attestation(skipped="not signed (--no-attest): certificates kept here only")
    attached = attach_certificates(
        client(image.registry.registry),
        image.registry,
        digest=image.digest,
        image_id=image.info.id,
        certificates=list(certs),
        signer=signer,
        say=say,
    )
    return Attestation(attached=tuple(attached))
