"""`envbuilder fleet certify IMAGE --slurm|--k8s`: one certification job per node class."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envbuilder.cli.fleet_cmd import (
    class_names,
    find_image,
    fleet,
    k8s_classes,
    load_signer_for,
    one_scheduler,
    report_run,
    say,
    slurm_classes,
)
from envbuilder.cli.options import check_seconds, gpu_access_option, runtime_option
from envbuilder.errors import UsageError
from envbuilder.fleet.certify import attest_certificates
from envbuilder.fleet.jobs import JobOptions

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envbuilder.certify.certificate import Certificate
    from envbuilder.certify.harness_plan import HarnessPlan
    from envbuilder.fleet.classes import NodeClass
    from envbuilder.fleet.image import FleetImage
    from envbuilder.fleet.jobs import FleetRun
    from envbuilder.matrix.model import Matrix


@fleet.command("certify")
@click.argument("image")
@click.option("--slurm", "use_slurm", is_flag=True, help="Submit one sbatch job per node class.")
@click.option("--k8s", "use_k8s", is_flag=True, help="Render (and with --apply submit) one Job per class.")
@click.option("--partition", metavar="P", help="Slurm partition (default: each class's own).")
@click.option(
    "--classes", "classes_text", metavar="A,B", help="Only these node classes (default: all with GPUs)."
)
@runtime_option("How a Slurm job runs the image on its node.")
@click.option(
    "--image-file", metavar="FILE", help="apptainer: a SIF; enroot: a squashfs (default: the registry)."
)
@gpu_access_option
@click.option("--quick", is_flag=True, help="Host record and smoke tests only.")
@click.option("--budget-seconds", type=float, callback=check_seconds, help="The harness's time budget.")
@click.option(
    "--time",
    "time_minutes",
    type=click.IntRange(min=1),
    default=60,
    show_default=True,
    help="Slurm time limit of each job, minutes.",
)
@click.option(
    "--exclusive/--shared", default=True, show_default=True, help="Ask for whole nodes (sbatch --exclusive)."
)
@click.option(
    "--wait/--no-wait", default=True, show_default=True, help="Follow the jobs and collect the certificates."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    callback=check_seconds,
    help="Stop waiting after this many seconds (jobs go on).",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Job folders, on a filesystem the nodes share (default: DATA/fleet/jobs).",
)
@click.option(
    "--envbuilder",
    "envbuilder_cmd",
    metavar="CMD",
    help="How a node runs envbuilder (docker runtime; default: this interpreter's).",
)
@click.option("--sign-key", "key_name", metavar="NAME", help="Signing key for the attestations.")
@click.option("--no-attest", is_flag=True, help="Keep the certificates here; do not sign and attach them.")
@click.option(
    "--nodes",
    "nodes_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="--k8s: a `kubectl get nodes -o json` file instead of the cluster.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="--k8s: write the manifests here (default: ./envbuilder-k8s-RUN).",
)
@click.option(
    "--dra", is_flag=True, help="--k8s: claim GPUs with a DRA ResourceClaim instead of nvidia.com/gpu."
)
@click.option("--apply", is_flag=True, help="--k8s: submit the Jobs (kubernetes client, else kubectl).")
@click.option("--namespace", default="default", show_default=True, help="--k8s: namespace of the Jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
def certify_cmd(
    image: str,
    use_slurm: bool,
    use_k8s: bool,
    partition: str | None,
    classes_text: str | None,
    runtime: str,
    image_file: str | None,
    gpu_access: str,
    quick: bool,
    budget_seconds: float | None,
    time_minutes: int,
    exclusive: bool,
    wait: bool,
    timeout_s: float | None,
    work_dir: Path | None,
    envbuilder_cmd: str | None,
    key_name: str | None,
    no_attest: bool,
    nodes_file: Path | None,
    out_dir: Path | None,
    dra: bool,
    apply: bool,
    namespace: str,
    as_json: bool,
) -> None:
    """Certify IMAGE on every node class of the cluster: one job per class through the scheduler,
    each running the harness in the image on that class's node; the certificates come back, are
    checked (intact, this image, this job and class), stored, and signed and attached to the image
    in its registry (as `push --attest`). Prints class x verdict x key throughput.

    Slurm: sbatch with the class's GRES (all its GPUs) and features as --constraint, --exclusive;
    runtime docker (envbuilder certify on the node), apptainer (--nv) or enroot (pyxis). Kubernetes:
    a Job per class (nvidia.com/gpu limits, or --dra; node affinity from GFD labels), validated,
    written to --out, submitted with --apply.

    Exit codes: 0 every class certified; 11 a class failed or left no certificate; 23 the
    scheduler refused or cannot be reached; 16 no signing key (--no-attest to skip); 2 bad input.
    """
    one_scheduler(use_slurm, use_k8s)
    found = find_image(image)
    signer = None if no_attest or found.registry is None else load_signer_for(key_name)
    from envbuilder.certify.harness_plan import plan_harness
    from envbuilder.image.metadata import read_metadata

    hplan = plan_harness(
        read_metadata(found.info), quick=quick, cpu=gpu_access == "none", budget_s=budget_seconds
    )
    if use_k8s:
        run, certs = certify_k8s(
            found,
            hplan,
            classes=class_names(classes_text),
            gpu=gpu_access != "none",
            quick=quick,
            nodes_file=nodes_file,
            out_dir=out_dir,
            dra=dra,
            apply=apply,
            namespace=namespace,
            wait=wait,
            timeout_s=timeout_s,
        )
    else:
        opts = JobOptions(
            runtime=runtime,
            gpu_access=gpu_access,
            quick=quick,
            exclusive=exclusive,
            time_minutes=time_minutes,
            partition=partition,
            envbuilder=tuple(envbuilder_cmd.split())
            if envbuilder_cmd
            else (sys.executable, "-m", "envbuilder"),
            image_file=image_file,
            budget_s=budget_seconds,
        )
        run, certs = certify_slurm(
            found,
            hplan,
            opts,
            classes=class_names(classes_text),
            wait=wait,
            timeout_s=timeout_s,
            work_dir=work_dir,
        )
    if run is None:
        return
    att = attest_certificates(found, certs, signer, say=say)
    if att.skipped and certs:
        say(f"fleet: {att.skipped}")
    elif att.attached:
        new = sum(1 for a in att.attached if a.new)
        say(f"fleet: {new} new attestation(s) attached to {found.pull_ref}")
    report_run(run, certs, as_json=as_json, attestation=att.to_dict())


def warn_uncovered(found: FleetImage, classes: Sequence[NodeClass], matrix: Matrix) -> None:
    """Say which classes the stack cannot cover (they are certified anyway: the failure is evidence)."""
    from envbuilder.fleet.classes import class_coverage

    for c in classes:
        cov = class_coverage(c, found.info, matrix)
        if cov.status == "not-covered":
            say(f"fleet: warning: {c.name}: the stack does not cover it ({'; '.join(cov.reasons)})")


def certify_slurm(
    found: FleetImage,
    hplan: HarnessPlan,
    opts: JobOptions,
    *,
    classes: tuple[str, ...],
    wait: bool,
    timeout_s: float | None,
    work_dir: Path | None,
) -> tuple[FleetRun, list[Certificate]]:
    """Plan, submit and (with wait) follow one sbatch job per class."""
    from envbuilder.certify.store import CertStore
    from envbuilder.fleet.certify import submit_run, wait_run
    from envbuilder.fleet.jobs import plan_run
    from envbuilder.fleet.slurm import select_classes
    from envbuilder.matrix import load_matrix
    from envbuilder.resources import user_data_dir

    matrix = load_matrix()
    chosen = select_classes(slurm_classes(matrix, probe=False, partition=opts.partition), classes)
    if not chosen:
        where = f"partition {opts.partition}" if opts.partition else "this cluster"
        raise UsageError(
            f"no node class with GPUs in {where}", hint="envbuilder fleet plan --slurm lists them"
        )
    warn_uncovered(found, chosen, matrix)
    if found.registry is None:
        say(
            f"fleet: warning: {found.ref} is in no registry: each node must already have it "
            "(push it for a real cluster)"
        )
    run = plan_run(found, chosen, hplan, opts, work_dir=work_dir or user_data_dir() / "fleet" / "jobs")
    run = submit_run(run, say=say)
    if not wait:
        return run, []
    return wait_run(run, store=CertStore(), say=say, timeout_s=timeout_s)


def certify_k8s(
    found: FleetImage,
    hplan: HarnessPlan,
    *,
    classes: tuple[str, ...],
    gpu: bool,
    quick: bool,
    nodes_file: Path | None,
    out_dir: Path | None,
    dra: bool,
    apply: bool,
    namespace: str,
    wait: bool,
    timeout_s: float | None,
) -> tuple[FleetRun | None, list[Certificate]]:
    """Render and validate one Job per class into --out; with --apply, submit and (with wait)
    collect them. Without --apply the manifests are the result (run None: nothing ran)."""
    from envbuilder.certify.store import CertStore
    from envbuilder.fleet.jobs import new_run_id, save_run
    from envbuilder.fleet.k8s_api import cluster
    from envbuilder.fleet.k8s_jobs import apply_run, plan_k8s_run, wait_k8s
    from envbuilder.fleet.slurm import select_classes
    from envbuilder.matrix import load_matrix

    matrix = load_matrix()
    chosen = select_classes(k8s_classes(matrix, nodes_file), classes)
    if not chosen:
        raise UsageError(
            "no node with GPU Feature Discovery labels", hint="is GFD (the GPU Operator) deployed?"
        )
    warn_uncovered(found, chosen, matrix)
    run_id = new_run_id()
    folder = out_dir or Path(f"envbuilder-k8s-{run_id}")
    run = plan_k8s_run(
        found,
        chosen,
        hplan,
        out_dir=folder,
        namespace=namespace,
        dra=dra,
        gpu=gpu,
        quick=quick,
        run_id=run_id,
    )
    for job in run.jobs:
        click.echo(f"{job.node_class}: {job.script} (Job {job.job_id}; validated against Kubernetes 1.34)")
    if not apply:
        say(
            f"fleet: {len(run.jobs)} class(es) rendered in {folder}; submit with --apply or kubectl create -f"
        )
        return None, []
    kube = cluster()
    run = apply_run(save_run(run), kube, say=say)
    if not wait:
        return run, []
    return wait_k8s(run, kube, store=CertStore(), say=say, timeout_s=timeout_s)
