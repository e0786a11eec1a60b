"""`envbuilder fleet ...`: an image certified across a cluster's node classes through the cluster's
own scheduler (Slurm, Kubernetes), and what it then asks of it. The group and what its commands
share (the image, the node classes, the tables); each subcommand lives in its own fleet_*_cmd
module, imported when it is looked up (as the top-level commands are)."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envbuilder.cli import cli
from envbuilder.cli.options import passphrase_prompt
from envbuilder.fleet.status import key_throughput
from envbuilder.tables import table

if TYPE_CHECKING:
    from envbuilder.certify.certificate import Certificate
    from envbuilder.engine import Engine
    from envbuilder.fleet.classes import NodeClass
    from envbuilder.fleet.image import FleetImage
    from envbuilder.fleet.jobs import FleetRun
    from envbuilder.matrix.model import Matrix

# subcommand -> module, imported on first use (a test checks the table)
SUBCOMMANDS = {
    "plan": "fleet_plan_cmd",
    "certify": "fleet_certify_cmd",
    "status": "fleet_status_cmd",
    "constraints": "fleet_constraints_cmd",
    "build": "fleet_build_cmd",
}


def say(line: str) -> None:
    click.echo(line, err=True)


def local_engine() -> Engine | None:
    """The local Docker engine when its daemon answers; a submit host may have none."""
    from envbuilder.errors import DockerUnavailableError
    from envbuilder.runtime import get as get_runtime

    try:
        eng = get_runtime().engine()
        eng.ping()
    except DockerUnavailableError:
        return None
    return eng


def find_image(ref: str) -> FleetImage:
    """The image as the fleet's nodes will get it (the daemon's, else its registry's)."""
    from envbuilder.fleet.image import locate_image

    return locate_image(ref, engine=local_engine())


def class_names(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in (text or "").split(",") if c.strip())


def slurm_classes(matrix: Matrix, *, probe: bool, partition: str | None) -> tuple[NodeClass, ...]:
    """The cluster's node classes from scontrol (and, with probe, srun nvidia-smi on one node of
    each). Raises SchedulerError."""
    from envbuilder.fleet.slurm import node_classes, probe_class, read_nodes

    classes = node_classes(read_nodes(), matrix)
    if partition:
        classes = tuple(c for c in classes if partition in c.partitions)
    if probe:
        classes = tuple(probe_class(c, partition=partition) if c.gpus_per_node else c for c in classes)
    return classes


def k8s_classes(matrix: Matrix, nodes_file: Path | None) -> tuple[NodeClass, ...]:
    """Node classes from GPU Feature Discovery labels: a `kubectl get nodes -o json` file, or the
    cluster itself (the kubernetes client, else kubectl). Raises UsageError, SchedulerError."""
    from envbuilder.fleet.k8s_api import live_nodes
    from envbuilder.fleet.kubernetes import node_classes, read_nodes_file

    nodes = read_nodes_file(nodes_file) if nodes_file else live_nodes()
    return node_classes(nodes, matrix)


def cluster_classes(
    matrix: Matrix, *, use_k8s: bool, nodes_file: Path | None, partition: str | None, probe: bool = False
) -> tuple[NodeClass, ...]:
    """The node classes of the scheduler the command was given (--k8s, else Slurm). Raises
    UsageError, SchedulerError."""
    if use_k8s:
        return k8s_classes(matrix, nodes_file)
    return slurm_classes(matrix, probe=probe, partition=partition)


def print_classes(classes: Sequence[NodeClass]) -> None:
    rows = []
    for c in classes:
        gpus = f"{c.gpus_per_node}x {c.gpu_model or c.gpu_type or '?'}" if c.gpus_per_node else "-"
        rows.append(
            [
                c.name,
                ",".join(c.nodes),
                ",".join(c.partitions) or "-",
                gpus,
                c.cc or "?",
                c.driver or "?",
                ",".join(c.features) or "-",
            ]
        )
    for line in table(["class", "nodes", "partition", "GPUs", "cc", "driver", "features"], rows, indent=""):
        click.echo(line)


def one_scheduler(use_slurm: bool, use_k8s: bool) -> None:
    from envbuilder.errors import UsageError

    if use_slurm == use_k8s:
        raise UsageError("say which scheduler: --slurm or --k8s", hint="e.g. envbuilder fleet plan --slurm")


def image_certificates(
    found: FleetImage, key_files: tuple[Path, ...], trust_file: Path | None, max_age: str | None
) -> tuple[list[Certificate], list[tuple[Certificate, str]], list[str]]:
    """The image's certificates: those certified here (not imported, not cached from a registry:
    `run` trusts those only after checks of their own), and its registry's signed attestations
    that hold under the trust policy (with their signer's name), and each refusal as a line."""
    from envbuilder.certify.store import CertStore

    store = CertStore()
    rows = store.list(image=found.info.id, origin="local")
    local = [store.get(r.id) for r in rows if r.image_id == found.info.id]
    if found.registry is None or found.digest is None:
        return local, [], []
    from envbuilder.attest import choose_policy, fetch_verified

    policy = choose_policy(keys=key_files, trust=trust_file, max_age=max_age)
    report = fetch_verified(found.registry, policy=policy, digest=found.digest)
    attested = [(c, report.signer_of(c).key_name) for c in report.certificates]
    refused = [f"{r.envelope_digest[:19]} [{r.reason}] {r.message}" for r in report.refused]
    return local, attested, refused


def load_signer_for(key_name: str | None) -> Any:
    from envbuilder.attest.keys import find_key, load_signer

    return load_signer(find_key(key_name), passphrase_prompt)


def report_run(
    run: FleetRun, certs: Sequence[Certificate], *, as_json: bool, attestation: Mapping[str, Any]
) -> None:
    """The run's table (or JSON); exit 11 when a class has no passing certificate."""
    from envbuilder.errors import CertificationFailedError

    by_id = {c.id: c for c in certs}
    rows, doc_jobs = [], []
    for job in run.jobs:
        cert = by_id.get(job.certificate or "")
        rows.append(
            [
                job.node_class,
                job.job_id or "-",
                job.node or "-",
                job.state,
                job.verdict or "-",
                key_throughput(cert) if cert else "-",
                (job.certificate or "-")[:12],
            ]
        )
        doc_jobs.append({**job.to_dict(), "throughput": key_throughput(cert) if cert else None})
    if as_json:
        click.echo(
            json.dumps(
                {
                    "run_id": run.run_id,
                    "record": str(run.path),
                    "image": dict(run.image),
                    "jobs": doc_jobs,
                    "attestation": dict(attestation),
                },
                indent=2,
                default=str,
            )
        )
    else:
        click.echo(f"fleet run {run.run_id}: {run.image.get('ref')} ({str(run.image.get('id'))[:19]})")
        for line in table(
            ["class", "job", "node", "state", "verdict", "key throughput", "certificate"], rows, indent=""
        ):
            click.echo(line)
        for job in run.jobs:
            if job.problem:
                click.echo(f"{job.node_class}: {job.problem}")
    bad = [
        j.node_class for j in run.jobs if j.finished and j.verdict not in ("certified", "certified-cpu-only")
    ]
    if bad:
        raise CertificationFailedError(
            f"no passing certificate for node class(es) {', '.join(bad)}",
            hint=f"see each job's log in its folder; `envbuilder fleet status {run.image.get('ref')}` "
            "shows them all",
        )


class FleetGroup(click.Group):
    """The fleet group: its subcommands load when looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *SUBCOMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in SUBCOMMANDS and cmd_name not in self.commands:
            importlib.import_module(f"envbuilder.cli.{SUBCOMMANDS[cmd_name]}")  # registers on `fleet`
        return super().get_command(ctx, cmd_name)


@cli.group(cls=FleetGroup)
def fleet() -> None:
    """Certify an image across a cluster's node classes (Slurm, Kubernetes) and run it there.

    plan: the node classes and whether the image's stack covers each; certify: one certification
    job per class through the scheduler, the signed certificates collected; status: what came back
    (local store, signed attestations); constraints: what a certified image asks of the scheduler;
    build: one image per spec and class with `docker buildx bake`.
    """
