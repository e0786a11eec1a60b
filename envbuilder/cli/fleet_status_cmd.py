"""`envbuilder fleet status IMAGE`: the newest certificate of each node class, and open jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envbuilder.cli.fleet_cmd import (
    find_image,
    fleet,
    image_certificates,
    say,
)
from envbuilder.cli.options import trust_options
from envbuilder.fleet.schedulers import choices
from envbuilder.fleet.status import key_throughput
from envbuilder.tables import table


@fleet.command("status")
@click.argument("image")
@trust_options
@click.option("--json", "as_json", is_flag=True, help="Print each class's newest certificate as JSON.")
def status_cmd(
    image: str, key_files: tuple[Path, ...], trust_file: Path | None, max_age: str | None, as_json: bool
) -> None:
    """What the fleet knows of IMAGE, per node class: the newest certificate of each class (local
    store, and the signed attestations of its registry, verified against the trust policy), and
    the jobs of recorded runs still queued or running (collected here as they end).

    Exit codes: 0 every class seen has a passing certificate; 11 a class failed; 12 nothing
    certifies the image; 13/14/15 the registry.
    """
    from envbuilder.certify.store import CertStore
    from envbuilder.errors import CertificateRefusedError, CertificationFailedError
    from envbuilder.fleet.jobs import load_runs, open_jobs
    from envbuilder.fleet.schedulers import scheduler_of_run
    from envbuilder.fleet.status import class_status

    found = find_image(image)
    store = CertStore()
    pending: list[dict[str, Any]] = []
    for run in load_runs(found.info.id):
        scheduler = scheduler_of_run(run)
        if scheduler is None:
            say(f"fleet: run {run.run_id}: no scheduler {run.scheduler!r} here; its jobs are as recorded")
        elif open_jobs(run):
            run, _ = scheduler.advance(run, store=store, say=say)
        pending += [
            {"class": j.node_class, "job_id": j.job_id, "state": j.state, "run": run.run_id}
            for j in open_jobs(run)
        ]
    local, attested, refused = image_certificates(found, key_files, trust_file, max_age)
    rows = class_status(local, attested)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "image": found.to_dict(),
                    "classes": [r.to_dict() for r in rows],
                    "pending": pending,
                    "refused": refused,
                },
                indent=2,
            )
        )
    else:
        click.echo(f"{found.ref} ({found.info.id[:19]})")
        lines = [
            [
                r.node_class,
                r.verdict,
                key_throughput(r.certificate),
                r.gpus,
                r.driver or "-",
                r.issued_at or "-",
                r.source,
            ]
            for r in rows
        ]
        for line in table(
            ["class", "verdict", "key throughput", "GPUs", "driver", "issued", "from"], lines, indent=""
        ):
            click.echo(line)
        for p in pending:
            click.echo(f"{p['class']}: job {p['job_id']} {p['state']} (run {p['run']})")
        for r in refused:
            click.echo(f"refused  {r}")
    if not rows:
        raise CertificateRefusedError(
            f"nothing certifies {image} on any node class yet",
            hint=f"envbuilder fleet certify {image} --scheduler {'|'.join(choices())}",
        )
    failed = [r.node_class for r in rows if r.verdict == "failed"]
    if failed:
        raise CertificationFailedError(f"node class(es) {', '.join(failed)} failed certification")
