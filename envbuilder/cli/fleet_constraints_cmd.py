"""`envbuilder fleet constraints IMAGE`: what a certified image asks of a scheduler (Slurm,
Kubernetes node affinity, NFD's image-compatibility artifact), from its passing certificates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envbuilder.cli.fleet_cmd import find_image, fleet, image_certificates, say
from envbuilder.cli.options import trust_options
from envbuilder.fleet.schedulers import ALL_SCHEDULERS, constraint_formats

FORMATS = ("all", *constraint_formats())


@fleet.command("constraints")
@click.argument("image")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="all",
    show_default=True,
    help="Which scheduler's constraints to print.",
)
@click.option(
    "--attach",
    is_flag=True,
    help="Attach what the constraints can carry as an artifact to the image in its registry (the "
    "NFD spec, artifact type application/vnd.nfd.image-compatibility.v1alpha1).",
)
@trust_options
@click.option("--json", "as_json", is_flag=True, help="Print every section as JSON.")
def constraints_cmd(
    image: str,
    fmt: str,
    attach: bool,
    key_files: tuple[Path, ...],
    trust_file: Path | None,
    max_age: str | None,
    as_json: bool,
) -> None:
    """Print the scheduler constraints IMAGE needs, derived from its passing certificates (local
    store, and its registry's signed attestations) by the rules `run` applies: a GPU model it was
    certified on and a driver at least its stack's floor.

    Slurm: per certified class, the --gres and --constraint its certification job was selected by.
    Kubernetes: a required node affinity on GPU Feature Discovery labels (nvidia.com/gpu.product,
    compute capability, driver major/minor/rev as integers with Gt), and an init container that
    runs `envbuilder check`'s in-image steps against the certified figures (docs/check.md).
    NFD: an image-compatibility spec (v1alpha1) that `nfd compat validate-node --image` checks;
    --attach pushes it as an OCI artifact whose subject is the image.

    Exit codes: 0; 12 no passing certificate; 13/14/15 the registry.
    """
    from envbuilder.errors import CertificateRefusedError, UsageError
    from envbuilder.fleet.schedulers.base import PASSING
    from envbuilder.fleet.status import class_status

    found = find_image(image)
    local, attested, _refused = image_certificates(found, key_files, trust_file, max_age)
    rows = [r for r in class_status(local, attested) if r.verdict in PASSING]
    if not rows:
        raise CertificateRefusedError(
            f"no passing certificate for {image}: no constraint can be derived",
            hint=f"certify it first: envbuilder fleet certify {image} --scheduler NAME (or certify {image})",
        )
    sections = [sec for s in ALL_SCHEDULERS for sec in s.constraints(rows, image=image)]
    if as_json:
        doc: dict[str, Any] = {"image": found.to_dict(), **{sec.key: sec.value for sec in sections}}
        click.echo(json.dumps(doc, indent=2))
    else:
        for sec in sections:
            if fmt in ("all", sec.format):
                for line in sec.lines:
                    click.echo(line)
    if attach:
        attachables = [sec.attachable for sec in sections if sec.attachable is not None]
        if not attachables:
            why = next((sec.no_attachable for sec in sections if sec.no_attachable), "nothing to attach")
            raise UsageError(f"--attach: {why}")
        if found.registry is None or found.digest is None:
            raise UsageError(
                f"--attach: {image} is in no registry", hint="push it first: envbuilder push IMAGE"
            )
        from envbuilder.registry import RegistryClient

        reg = RegistryClient(found.registry.registry)
        subject = reg.get_manifest(found.registry.repository, found.digest).descriptor
        for art in attachables:
            desc = reg.attach(
                found.registry.repository,
                subject,
                artifact_type=art.artifact_type,
                blob=art.blob,
                layer_media_type=art.media_type,
            )
            say(f"fleet: {art.title} attached to {found.pull_ref} as {desc.digest[:19]}")
