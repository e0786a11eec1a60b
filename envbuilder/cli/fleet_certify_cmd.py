"""`envbuilder fleet certify IMAGE --scheduler NAME`: one certification job per node class."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from envbuilder.cli.fleet_cmd import (
    chosen_scheduler,
    class_names,
    cluster_classes,
    find_image,
    fleet,
    load_signer_for,
    plan_hint,
    report_run,
    say,
    scheduler_options,
)
from envbuilder.cli.options import check_seconds, gpu_access_option, runtime_option
from envbuilder.fleet.certify import attest_certificates

if TYPE_CHECKING:
    from collections.abc import Sequence

    from envbuilder.fleet.classes import NodeClass
    from envbuilder.fleet.image import FleetImage
    from envbuilder.matrix.model import Matrix


@fleet.command("certify")
@click.argument("image")
@scheduler_options
@click.option("--partition", metavar="P", help="slurm: the partition (default: each class's own).")
@click.option(
    "--classes", "classes_text", metavar="A,B", help="Only these node classes (default: all with GPUs)."
)
@runtime_option("slurm: how a job runs the image on its node.")
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
    help="slurm: the time limit of each job, minutes.",
)
@click.option(
    "--exclusive/--shared", default=True, show_default=True, help="slurm: ask for whole nodes (--exclusive)."
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
    help="slurm: job folders, on a filesystem the nodes share (default: DATA/fleet/jobs).",
)
@click.option(
    "--envbuilder",
    "envbuilder_cmd",
    metavar="CMD",
    help="slurm: how a node runs envbuilder (docker runtime; default: this interpreter's).",
)
@click.option("--sign-key", "key_name", metavar="NAME", help="Signing key for the attestations.")
@click.option("--no-attest", is_flag=True, help="Keep the certificates here; do not sign and attach them.")
@click.option(
    "--nodes",
    "nodes_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="k8s: a `kubectl get nodes -o json` file instead of the cluster.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="k8s: write the manifests here (default: ./envbuilder-k8s-RUN).",
)
@click.option(
    "--dra", is_flag=True, help="k8s: claim GPUs with a DRA ResourceClaim instead of nvidia.com/gpu."
)
@click.option("--apply", is_flag=True, help="k8s: submit the Jobs (kubernetes client, else kubectl).")
@click.option("--namespace", default="default", show_default=True, help="k8s: namespace of the Jobs.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
def certify_cmd(
    image: str,
    scheduler_name: str | None,
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
    from envbuilder.certify.harness_plan import plan_harness
    from envbuilder.fleet.classes import select_classes
    from envbuilder.fleet.schedulers.base import CertifyRequest, ClassQuery
    from envbuilder.image.metadata import read_metadata
    from envbuilder.matrix import load_matrix

    scheduler = chosen_scheduler(scheduler_name)
    found = find_image(image)
    signer = None if no_attest or found.registry is None else load_signer_for(key_name)
    hplan = plan_harness(
        read_metadata(found.info), quick=quick, cpu=gpu_access == "none", budget_s=budget_seconds
    )
    matrix = load_matrix()
    query = ClassQuery(nodes_file=nodes_file, partition=partition)
    chosen = select_classes(
        cluster_classes(scheduler, matrix, query), class_names(classes_text), plan_hint=plan_hint(scheduler)
    )
    warn_uncovered(found, chosen, matrix)
    request = CertifyRequest(
        image=found,
        plan=hplan,
        classes=chosen,
        query=query,
        gpu_access=gpu_access,
        quick=quick,
        budget_s=budget_seconds,
        wait=wait,
        timeout_s=timeout_s,
        runtime=runtime,
        image_file=image_file,
        time_minutes=time_minutes,
        exclusive=exclusive,
        work_dir=work_dir,
        envbuilder=tuple(envbuilder_cmd.split()) if envbuilder_cmd else None,
        out_dir=out_dir,
        dra=dra,
        apply=apply,
        namespace=namespace,
    )
    run, certs = scheduler.certify(request, say=say, echo=click.echo)
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
