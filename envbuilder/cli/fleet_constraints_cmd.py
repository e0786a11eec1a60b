"""`envbuilder fleet constraints IMAGE`: what a certified image asks of a scheduler (Slurm,
Kubernetes node affinity, NFD's image-compatibility artifact), from its passing certificates."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click

from envbuilder.cli.fleet_cmd import find_image, fleet, image_certificates, say
from envbuilder.cli.options import trust_options
from envbuilder.fleet.kubernetes import yaml_text

FORMATS = ("all", "slurm", "k8s", "nfd")


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
    help="Attach the NFD spec to the image in its registry (artifact type "
    "application/vnd.nfd.image-compatibility.v1alpha1).",
)
@trust_options
@click.option("--json", "as_json", is_flag=True, help="Print all three as JSON.")
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
    compute capability, driver major/minor/rev as integers with Gt). NFD: an image-compatibility
    spec (v1alpha1) that `nfd compat validate-node --image` checks; --attach pushes it as an OCI
    artifact whose subject is the image.

    Exit codes: 0; 12 no passing certificate; 13/14/15 the registry.
    """
    from envbuilder.errors import CertificateRefusedError, UsageError
    from envbuilder.fleet.constraints import (
        NFD_ARTIFACT_TYPE,
        NFD_SPEC_MEDIA_TYPE,
        k8s_affinity,
        nfd_spec,
        nfd_yaml,
        slurm_constraints,
    )
    from envbuilder.fleet.status import class_status

    found = find_image(image)
    local, attested, _refused = image_certificates(found, key_files, trust_file, max_age)
    rows = [r for r in class_status(local, attested) if r.verdict in ("certified", "certified-cpu-only")]
    if not rows:
        raise CertificateRefusedError(
            f"no passing certificate for {image}: no constraint can be derived",
            hint=f"certify it first: envbuilder fleet certify {image} --slurm (or certify {image})",
        )
    certs = [r.certificate for r in rows]
    stack = certs[0].image.stack
    description = f"envbuilder: {image} ({stack.id if stack else 'no stack label'}) certified"
    slurm = slurm_constraints(rows)
    affinity = k8s_affinity(certs)
    spec = nfd_spec(certs, description=description)
    if as_json:
        doc: dict[str, Any] = {
            "image": found.to_dict(),
            "slurm": [s.to_dict() for s in slurm],
            "kubernetes": {"affinity": affinity},
            "nfd": spec,
        }
        click.echo(json.dumps(doc, indent=2))
    else:
        if fmt in ("all", "slurm"):
            click.echo("# Slurm: the options each certified node class was selected by")
            for s in slurm:
                click.echo(f"{s.node_class}: sbatch {shlex.join(s.options())}  # {s.verdict}")
            if not slurm:
                click.echo("# (no certificate came from a Slurm job)")
        if fmt in ("all", "k8s"):
            click.echo("# Kubernetes: pod spec affinity (GPU Feature Discovery labels)")
            click.echo(
                yaml_text({"affinity": affinity}).rstrip()
                if affinity
                else "# (no GPU certification: the CPU path constrains no GPU node)"
            )
        if fmt in ("all", "nfd"):
            click.echo(f"# NFD image compatibility ({NFD_ARTIFACT_TYPE})")
            click.echo(nfd_yaml(spec).rstrip() if spec else "# (no GPU certification: no NFD rule)")
    if attach:
        if spec is None:
            raise UsageError("--attach: no GPU certification, so there is no NFD spec to attach")
        if found.registry is None or found.digest is None:
            raise UsageError(
                f"--attach: {image} is in no registry", hint="push it first: envbuilder push IMAGE"
            )
        from envbuilder.registry import RegistryClient

        reg = RegistryClient(found.registry.registry)
        subject = reg.get_manifest(found.registry.repository, found.digest).descriptor
        desc = reg.attach(
            found.registry.repository,
            subject,
            artifact_type=NFD_ARTIFACT_TYPE,
            blob=nfd_yaml(spec).encode(),
            layer_media_type=NFD_SPEC_MEDIA_TYPE,
        )
        say(f"fleet: NFD image-compatibility spec attached to {found.pull_ref} as {desc.digest[:19]}")
