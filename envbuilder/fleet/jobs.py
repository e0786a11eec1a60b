"""A fleet certification on Slurm: one batch job per node class, each running the harness in the
image on that class through the node's runtime, and what comes back.

- docker: the job runs `envbuilder certify IMAGE --nonce N --no-store --out JOB_DIR/certificate.json`
  on the node (the one certification code path; envbuilder must be reachable there, as on a shared
  home); the certificate that comes back is judged again here (certify.foreign);
- apptainer: `apptainer exec [--nv] ... python3 HARNESS/run.py` (from a SIF, or docker://REF);
- enroot: pyxis's `srun --container-image=...` running the same harness command line;
  for these two the harness is this host's payload, staged in the run folder and bound read-only,
  and its result is sealed into a certificate here (certify.foreign).
Every job's result is judged by certify's own rule (certify/verdict.py host_verdict).

The run is kept as DATA/fleet/runs/RUN_ID.json (written atomically; updated as jobs finish), so
`fleet status` can collect jobs that ended after `fleet certify` stopped waiting.
"""

from __future__ import annotations

import json
import secrets
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.certify.certificate import Certificate, verify_certificate
from envbuilder.certify.foreign import certificate_refusal, node_observation, seal_foreign_run
from envbuilder.certify.harness_plan import HARNESS_ENV, IO_DIR, HarnessPlan, parse_harness_output
from envbuilder.certify.scheduler import FLEET_RUN_ENV, NODE_CLASS_ENV, SLURM_CONSTRAINT_ENV, SLURM_GRES_ENV
from envbuilder.certify.verdict import RunFacts
from envbuilder.engine import ContainerSpec, ImageInfo, Mount
from envbuilder.errors import CertificateRefusedError, StoreError, UsageError
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.image import FleetImage, pyxis_image
from envbuilder.fleet.slurm import JobRequest, JobState, class_request
from envbuilder.harness.digest import tree_digest
from envbuilder.host.access import AccessMode
from envbuilder.image.metadata import read_metadata
from envbuilder.resources import user_data_dir
from envbuilder.runtime import AUTO, NONE, names
from envbuilder.runtime import get as get_runtime
from envbuilder.runtime.apptainer import apptainer_source
from envbuilder.runtime.base import access_label
from envbuilder.typed import ascii_int

RUNTIMES = names()  # `fleet certify --runtime`: the registry's
CERT_FILE = "certificate.json"
RESULT_FILE = "result.json"
HARNESS_FOLDER = "harness"  # the run folder's copy of this host's payload (apptainer, enroot)
RUN_FILE_VERSION = 1


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def runs_dir(data: Path | None = None) -> Path:
    return (data or user_data_dir()) / "fleet" / "runs"


# --------------------------------------------------------------------------- the job script


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOptions:
    """What every job of a run shares."""

    runtime: str = "docker"  # a registered runtime (envbuilder/runtime)
    gpu_access: str = "auto"  # an image runtime: certify's --gpu-access; others: one of its modes
    quick: bool = False
    exclusive: bool = True  # the certification measures the node as users get it
    time_minutes: int = 60
    partition: str | None = None
    envbuilder: tuple[str, ...] = ("envbuilder",)  # how a node runs envbuilder (docker runtime)
    image_file: str | None = None  # apptainer: a SIF; enroot: a squashfs (else the registry)
    budget_s: float | None = None  # the harness's time budget


def job_access(runtime: str, gpu_access: str, cls: NodeClass) -> str:
    """How a class's job gets its GPUs: "none" (the CPU path) for a class without GPUs or
    --gpu-access none; an image runtime (docker): certify's mode (the node chooses for auto); a file
    runtime: its mode (auto: its first), named as run logs name it (`apptainer --nv`).
    Raises UsageError (a mode the runtime does not have)."""
    if gpu_access == NONE or not cls.gpus_per_node:
        return NONE
    rt = get_runtime(runtime)
    if rt.runs == "image":
        return gpu_access
    if gpu_access != AUTO and gpu_access not in rt.modes:
        raise UsageError(
            f"--gpu-access {gpu_access} is not one of the {rt.name} runtime's modes",
            hint=f"with --runtime {rt.name} use auto, {', '.join(rt.modes)} or none",
        )
    return access_label(rt, rt.modes[0] if gpu_access == AUTO else gpu_access)


def job_mode(runtime: str, gpu_access: str) -> str:
    """The file runtime's access mode a GPU job asks for (auto: its first)."""
    return get_runtime(runtime).modes[0] if gpu_access == AUTO else gpu_access


def docker_body(image: FleetImage, opts: JobOptions, job_dir: Path, *, access: str, nonce: str) -> list[str]:
    """An image runtime's lines (docker): pull when the node lacks the image, then certify it there
    with this job's nonce (the submitting host checks the result echoes it)."""
    ref = shlex.quote(image.pull_ref)
    runtime = ["--runtime", opts.runtime] if opts.runtime != "docker" else []
    argv = [
        *opts.envbuilder,
        "certify",
        *runtime,
        image.pull_ref,
        "--gpu-access",
        access,
        "--nonce",
        nonce,
        "--no-store",
        "--out",
        str(job_dir / CERT_FILE),
    ]
    if opts.quick:
        argv.append("--quick")
    if opts.budget_s is not None:
        argv += ["--budget-seconds", f"{opts.budget_s:g}"]
    # the image runtime's own program pulls (docker's `image inspect` and `pull`, as podman's CLI takes them)
    tool = shlex.quote(opts.runtime)
    return [f"{tool} image inspect {ref} >/dev/null 2>&1 || {tool} pull {ref}", shlex.join(argv)]


def stage_harness(plan: HarnessPlan, folder: Path) -> Path:
    """This host's payload copied into `folder` (on the filesystem the nodes share), byte caches
    left out, its digest checked against the plan's. Raises OSError, StoreError (the copy differs)."""
    shutil.copytree(plan.host_harness, folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if tree_digest(folder) != plan.harness_sha256:
        raise StoreError(f"the harness copied to {folder} differs from {plan.host_harness}")
    return folder


def harness_argv(
    image: FleetImage, plan: HarnessPlan, opts: JobOptions, job_dir: Path, harness: Path, *, gpu: bool
) -> list[str]:
    """A file runtime's command (apptainer, enroot): this host's harness (`harness`, its staged
    copy) bound read-only where the plan runs it, the job folder as its io folder (thresholds.json
    in, result.json out), the GPUs by the runtime's mode. A runtime that starts differently under
    Slurm (enroot: pyxis's srun) says so with a `slurm_argv`."""
    rt = get_runtime(opts.runtime)
    mode = job_mode(opts.runtime, opts.gpu_access)
    grant = rt.grant(AccessMode(name=mode, available=True, detail="the node's")) if gpu else None
    if opts.runtime == "apptainer":
        source = apptainer_source(image.pull_ref, opts.image_file)
    else:
        source = opts.image_file or pyxis_image(image.ref)
    spec = ContainerSpec(
        image=source,
        command=plan.command,
        env={**HARNESS_ENV, **(grant.env if grant else {})},
        gpu_flags=grant.flags if grant else (),
        mounts=(
            Mount(source=str(job_dir), target=IO_DIR),
            Mount(source=str(harness), target=plan.harness_dir, read_only=True),
        ),
    )
    start: Callable[[ContainerSpec], list[str]] = getattr(rt, "slurm_argv", rt.argv)
    return start(spec)


def job_script(request: JobRequest, *, title: str, env: Mapping[str, str], body: Sequence[str]) -> str:
    """A self-describing batch script: every sbatch option as a #SBATCH line (resubmit it with
    plain `sbatch FILE`), the job's variables, then the body. Values are shell-quoted."""
    lines = ["#!/bin/bash", f"# {title}", "# Generated by envbuilder; resubmit with: sbatch THIS_FILE"]
    lines += [f"#SBATCH {shlex.quote(o)}" for o in request.sbatch_options()]
    lines += ["set -euo pipefail"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    return "\n".join([*lines, *body]) + "\n"


# --------------------------------------------------------------------------- the run record


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRecord:
    node_class: str
    job_dir: str
    script: str  # path of the batch script
    request: Mapping[str, Any]
    command: tuple[str, ...] = ()  # apptainer/enroot: the harness command the job runs
    nonce: str | None = None  # the one its result must echo
    access: str = "none"  # how it gets the GPUs (job_access); "none": the CPU path
    job_id: str | None = None
    state: str = "NEW"  # NEW SUBMITTED, then Slurm's states; COLLECTED once its certificate is in
    node: str | None = None
    exit_code: str | None = None
    certificate: str | None = None  # certificate id once collected
    verdict: str | None = None
    problem: str | None = None  # why no certificate came back

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.node_class,
            "job_dir": self.job_dir,
            "script": self.script,
            "request": dict(self.request),
            "command": list(self.command),
            "nonce": self.nonce,
            "access": self.access,
            "job_id": self.job_id,
            "state": self.state,
            "node": self.node,
            "exit_code": self.exit_code,
            "certificate": self.certificate,
            "verdict": self.verdict,
            "problem": self.problem,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> JobRecord:
        return cls(
            node_class=str(d["class"]),
            job_dir=str(d["job_dir"]),
            script=str(d["script"]),
            request=dict(d.get("request") or {}),
            command=tuple(str(c) for c in d.get("command") or ()),
            nonce=d.get("nonce"),
            access=str(d.get("access") or "none"),
            job_id=d.get("job_id"),
            state=str(d.get("state") or "NEW"),
            node=d.get("node"),
            exit_code=d.get("exit_code"),
            certificate=d.get("certificate"),
            verdict=d.get("verdict"),
            problem=d.get("problem"),
        )

    @property
    def finished(self) -> bool:
        return self.state in ("COLLECTED", "NO-RESULT", "CANCELLED")


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetRun:
    run_id: str
    created: str
    scheduler: str
    image: Mapping[str, Any]  # FleetImage.to_dict() plus the labels/env a seal needs
    options: Mapping[str, Any]
    thresholds: Mapping[str, Any]
    jobs: tuple[JobRecord, ...] = field(default=())
    path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RUN_FILE_VERSION,
            "run_id": self.run_id,
            "created": self.created,
            "scheduler": self.scheduler,
            "image": dict(self.image),
            "options": dict(self.options),
            "thresholds": dict(self.thresholds),
            "jobs": [j.to_dict() for j in self.jobs],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: Path | None = None) -> FleetRun:
        return cls(
            run_id=str(d["run_id"]),
            created=str(d["created"]),
            scheduler=str(d.get("scheduler") or "slurm"),
            image=dict(d["image"]),
            options=dict(d.get("options") or {}),
            thresholds=dict(d.get("thresholds") or {}),
            jobs=tuple(JobRecord.from_dict(j) for j in d.get("jobs") or ()),
            path=path,
        )

    @property
    def image_info(self) -> ImageInfo:
        i = self.image
        return ImageInfo(
            id=str(i["id"]),
            tags=(str(i["ref"]),),
            repo_digests=tuple(i.get("repo_digests") or ()),
            labels=dict(i.get("labels") or {}),
            env=tuple(i.get("env") or ()),
        )

    @classmethod
    def begin(
        cls,
        *,
        run_id: str,
        scheduler: str,
        image: FleetImage,
        plan: HarnessPlan,
        options: Mapping[str, Any],
        jobs: Sequence[JobRecord],
    ) -> FleetRun:
        """A new run of `jobs` (not yet saved): created now, the image as a seal reads it, the
        plan's thresholds and the payload digest its results must name."""
        return cls(
            run_id=run_id,
            created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            scheduler=scheduler,
            image=image_record(image),
            options={**options, "harness_sha256": plan.harness_sha256},
            thresholds=plan.thresholds,
            jobs=tuple(jobs),
        )

    def with_job(self, job: JobRecord) -> FleetRun:
        return replace(self, jobs=tuple(job if j.node_class == job.node_class else j for j in self.jobs))


def save_run(run: FleetRun) -> FleetRun:
    """Write the run record atomically (DATA/fleet/runs/RUN_ID.json). Raises StoreError."""
    path = run.path or runs_dir() / f"{run.run_id}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(run.to_dict(), indent=2, sort_keys=True) + "\n")
    except OSError as exc:
        raise StoreError(f"cannot write the fleet run record {path}: {exc}") from exc
    return replace(run, path=path)


def load_runs(image_id: str | None = None, data: Path | None = None) -> list[FleetRun]:
    """The fleet runs recorded here (of one image when given), newest first; an unreadable record
    is skipped."""
    out = []
    folder = runs_dir(data)
    for path in sorted(folder.glob("*.json"), reverse=True) if folder.is_dir() else ():
        try:
            run = FleetRun.from_dict(json.loads(path.read_text(encoding="utf-8")), path)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if image_id is None or run.image.get("id") == image_id:
            out.append(run)
    return out


def image_record(image: FleetImage) -> dict[str, Any]:
    """What the run keeps of the image: where it is, and what a seal reads (labels, env)."""
    return {
        **image.to_dict(),
        "pull_ref": image.pull_ref,
        "repo_digests": list(image.info.repo_digests),
        "labels": dict(image.info.labels),
        "env": list(image.info.env),
    }


# --------------------------------------------------------------------------- planning and submitting


def plan_run(
    image: FleetImage,
    classes: Sequence[NodeClass],
    plan: HarnessPlan,
    opts: JobOptions,
    *,
    work_dir: Path,
    run_id: str | None = None,
) -> FleetRun:
    """The run's jobs, their folders and scripts written (nothing submitted yet): one per class,
    each with its own nonce (plan.for_job). Raises StoreError (the work folder cannot be written)."""
    run_id = run_id or new_run_id()
    base = work_dir / run_id
    jobs = []
    try:
        runs_images = get_runtime(opts.runtime).runs == "image"
        harness = None if runs_images else stage_harness(plan, base / HARNESS_FOLDER)
        for cls in classes:
            access = job_access(opts.runtime, opts.gpu_access, cls)
            jplan = plan.for_job(cpu=access == "none")
            job_dir = base / cls.name
            job_dir.mkdir(parents=True, exist_ok=True)
            job_dir.chmod(0o777)  # the image may run as a user other than the submitter
            gres, constraint = class_request(cls)
            request = JobRequest(
                name=f"envbuilder-certify-{cls.name}",
                partition=opts.partition or (cls.partitions[0] if cls.partitions else None),
                gres=gres,
                constraint=constraint,
                exclusive=opts.exclusive,
                time_minutes=opts.time_minutes,
                output=str(job_dir / "slurm-%j.out"),
                workdir=str(job_dir),
            )
            command: tuple[str, ...] = ()
            if harness is None:
                body = docker_body(image, opts, job_dir, access=access, nonce=jplan.nonce)
            else:
                write_text_atomic(job_dir / "thresholds.json", json.dumps(plan.thresholds, sort_keys=True))
                command = tuple(harness_argv(image, jplan, opts, job_dir, harness, gpu=access != "none"))
                body = [shlex.join(command)]
            script = job_dir / "certify.sbatch"
            nodes = ", ".join(cls.nodes)
            title = f"envbuilder fleet certify {run_id}: {image.ref} on node class {cls.name} ({nodes})"
            env = {NODE_CLASS_ENV: cls.name, FLEET_RUN_ENV: run_id}
            env |= {SLURM_GRES_ENV: gres} if gres else {}
            env |= {SLURM_CONSTRAINT_ENV: constraint} if constraint else {}
            write_text_atomic(script, job_script(request, title=title, env=env, body=body))
            jobs.append(
                JobRecord(
                    node_class=cls.name,
                    job_dir=str(job_dir),
                    script=str(script),
                    request={
                        "partition": request.partition,
                        "gres": gres,
                        "constraint": constraint,
                        "exclusive": opts.exclusive,
                        "sbatch": request.sbatch_options(),
                    },
                    command=command,
                    nonce=jplan.nonce,
                    access=access,
                )
            )
    except OSError as exc:
        raise StoreError(f"cannot write the job folders under {base}: {exc}") from exc
    return FleetRun.begin(
        run_id=run_id,
        scheduler="slurm",
        image=image,
        plan=plan,
        options={
            "runtime": opts.runtime,
            "gpu_access": opts.gpu_access,
            "quick": opts.quick,
            "exclusive": opts.exclusive,
            "image_file": opts.image_file,
        },
        jobs=jobs,
    )


# --------------------------------------------------------------------------- collecting


@dataclass(frozen=True, slots=True, kw_only=True)
class Collected:
    job: JobRecord
    certificate: Certificate | None = None


def _exit_status(exit_code: str | None) -> int:
    """Slurm's CODE:SIGNAL -> the job's exit status (128+signal when killed)."""
    code, _, sig = (exit_code or "0:0").partition(":")
    signal, status = ascii_int(sig), ascii_int(code)
    if signal:
        return 128 + signal
    return 1 if status is None else status


def run_facts(run: FleetRun, job: JobRecord, *, exit_code: int, access: str | None = None) -> RunFacts:
    """What this host knows of a job's run, for certify's own judgement (host_verdict): the nonce
    and payload digest it handed out, the access it asked for (`access` overrides: the mode a
    node's certify chose), the job's exit status. The GPUs of the node are not observed here."""
    return RunFacts(
        nonce=str(job.nonce),
        harness_sha256=str(run.options.get("harness_sha256")),
        exit_code=exit_code,
        access=access or job.access,
        stack=read_metadata(run.image_info).stack,
        observation=None,
    )


def accept_certificate(run: FleetRun, job: JobRecord, cert: Certificate, refusal: str | None) -> Collected:
    """A job's certificate, kept only if it is intact, for this image, from this job and class,
    and not refused by this host's judgement (`refusal`)."""
    problems = verify_certificate(cert, image_id=run.image_info.id)
    found = cert.run.get("scheduler")
    sched: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    if sched.get("job_id") != job.job_id or sched.get("class") != job.node_class:
        problems.append(
            f"it says it ran as job {sched.get('job_id')} for class {sched.get('class')}, "
            f"not job {job.job_id} for class {job.node_class}"
        )
    if refusal is not None:
        problems.append(refusal)
    if problems:
        return Collected(
            job=replace(job, state="NO-RESULT", problem="certificate refused: " + "; ".join(problems))
        )
    return Collected(
        job=replace(job, state="COLLECTED", certificate=cert.id, verdict=cert.verdict), certificate=cert
    )


def seal_job(
    run: FleetRun, job: JobRecord, result: Mapping[str, Any], *, exit_code: int, scheduler: Mapping[str, Any]
) -> Collected:
    """A harness result a scheduler's runtime left (apptainer, enroot, a Kubernetes pod), judged
    and sealed here (certify.foreign), then accepted as any job's certificate."""
    where = f"{scheduler.get('kind')} job {job.job_id} on {scheduler.get('node') or 'an unknown node'}"
    cert = seal_foreign_run(
        image=run.image_info,
        image_ref=str(run.image.get("ref")),
        result=result,
        facts=run_facts(run, job, exit_code=exit_code),
        where=where,
        thresholds=run.thresholds,
        run={
            "runtime": str(run.options.get("runtime")),
            "command": list(job.command),
            "quick": bool(run.options.get("quick")),
            "scheduler": dict(scheduler),
        },
    )
    return accept_certificate(run, job, cert, None)


def collect_job(run: FleetRun, job: JobRecord, state: JobState) -> Collected:
    """What a finished Slurm job left: its certificate, judged here as certify judges (docker: the
    node's certificate, whose verdict must follow from its result; else the harness's result,
    sealed here) and checked (intact, for this image, from this job, for this class), or the
    reason there is none. Pure but for reading the job folder."""
    job = replace(job, state=state.state, node=state.node, exit_code=state.exit_code)
    folder = Path(job.job_dir)
    if run.options.get("runtime", "docker") == "docker":
        path = folder / CERT_FILE
        if not path.is_file():
            return Collected(job=replace(job, state="NO-RESULT", problem=_no_result(job, folder)))
        try:
            cert = Certificate.from_json(path.read_text(encoding="utf-8"), str(path))
        except (OSError, CertificateRefusedError) as exc:
            return Collected(job=replace(job, state="NO-RESULT", problem=f"{path}: {exc}"))
        exit_code = cert.run.get("exit_code")
        facts = run_facts(
            run,
            job,
            exit_code=exit_code if isinstance(exit_code, int) else 1,
            access=None if job.access == "none" else cert.host.gpu_access or job.access,
        )
        facts = replace(facts, observation=node_observation(cert))
        return accept_certificate(run, job, cert, certificate_refusal(cert, facts))
    result = parse_harness_output(folder, "")
    if result is None:
        return Collected(job=replace(job, state="NO-RESULT", problem=_no_result(job, folder)))
    scheduler = {
        "kind": "slurm",
        "job_id": job.job_id,
        "node": state.node,
        "class": job.node_class,
        "fleet_run": run.run_id,
    }
    return seal_job(run, job, result, exit_code=_exit_status(state.exit_code), scheduler=scheduler)


def _no_result(job: JobRecord, folder: Path) -> str:
    logs = sorted(folder.glob("slurm-*.out"))
    tail = ""
    if logs:
        try:
            lines = logs[-1].read_text(encoding="utf-8", errors="replace").splitlines()
            tail = " | ".join(line.strip() for line in lines[-3:] if line.strip())
        except OSError:
            tail = ""
    where = f"; log {logs[-1]}" + (f": {tail}" if tail else "") if logs else "; no job log"
    return f"job {job.job_id} ended {job.state} (exit {job.exit_code}) without a certificate{where}"


def open_jobs(run: FleetRun) -> list[JobRecord]:
    """The run's jobs submitted and not yet ended and collected."""
    return [j for j in run.jobs if j.job_id and not j.finished and j.state not in ("NEW", "REFUSED")]


Look = Callable[[FleetRun], tuple[FleetRun, list[Certificate]]]


def follow(
    run: FleetRun,
    look: Look,
    *,
    say: Callable[[str], None],
    timeout_s: float | None,
    poll_s: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
) -> tuple[FleetRun, list[Certificate]]:
    """Look at the run's open jobs (`look`: one pass of the scheduler's states, collecting what
    ended) until none is open, or `timeout_s` passed (the jobs go on; `fleet status` collects
    them later). Returns the run and the certificates collected."""
    started = clock()
    collected: list[Certificate] = []
    while True:
        run, now = look(run)
        collected += now
        if not open_jobs(run):
            return run, collected
        if timeout_s is not None and clock() - started > timeout_s:
            say(f"fleet: stopped waiting after {timeout_s:g} s; `envbuilder fleet status` collects the rest")
            return run, collected
        sleep(poll_s)
