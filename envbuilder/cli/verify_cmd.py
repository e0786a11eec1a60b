"""`envbuilder verify REF`: the image's signed attestations in its registry, verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envbuilder.cli import cli
from envbuilder.cli.options import trust_options


@cli.command()
@click.argument("reference", metavar="REF")
@trust_options
@click.option("--json", "as_json", is_flag=True, help="Print the verified and refused attestations as JSON.")
def verify(reference: str, key_files: tuple[Path, ...], trust_file: Path | None, max_age: str | None,
           as_json: bool) -> None:  # fmt: skip
    """Find the attestations of REF (REGISTRY/NAME:TAG or @sha256:...) in its registry, verify
    each signature against the trust policy (--key/--trust; default DATA/trust.yaml, else your
    own keys), check that each names this image, and print what the valid certificates cover:
    hosts, GPUs, drivers. Needs no Docker.

    Exit codes: 0 at least one valid passing certificate; 12 none (each refusal with its
    reason); 13/14/15 the registry failed, refused the credentials, or has no such image; 16 a
    key or policy file is unusable.
    """
    from envbuilder.attest import choose_policy, fetch_verified
    from envbuilder.errors import CertificateRefusedError
    from envbuilder.run.coverage import describe_coverage

    policy = choose_policy(keys=key_files, trust=trust_file, max_age=max_age)
    report = fetch_verified(reference, policy=policy)
    certs = report.certificates
    rows: list[dict[str, Any]] = []
    for cert in certs:
        signer = report.signer_of(cert)
        rows.append(
            {
                "id": cert.id,
                "issued_at": cert.issued_at,
                "signed_by": {"name": signer.key_name, "keyid": signer.keyid},
                "covers": describe_coverage(cert),
            }
        )
    passing = [r for r in rows if r["covers"]["cpu_runs"]]
    if as_json:
        click.echo(json.dumps({**report.to_dict(), "certificates": rows, "ok": bool(passing)}, indent=2))
    else:
        click.echo(f"{report.repository}@{report.digest} (attestations via {report.via})")
        for r in rows:
            _print_certificate(r)
        for refused in report.refused:
            click.echo(f"refused  {refused.envelope_digest[:19]} [{refused.reason}] {refused.message}")
        if not report.verified and not report.refused:
            click.echo("no attestations attached")
    if not passing:
        reasons = sorted({r.reason for r in report.refused})
        why = (
            f"refused: {', '.join(reasons)}"
            if reasons
            else "none attached"
            if not rows
            else "only failed ones"
        )
        raise CertificateRefusedError(
            f"{reference}: no valid passing certificate ({why}; policy {policy.describe()})",
            hint="trust the signer's key (--key, --trust or `envbuilder keys import`), or certify the "
            "image and push it with --attest",
        )


def _print_certificate(row: dict[str, Any]) -> None:
    c = row["covers"]
    signer = row["signed_by"]
    click.echo(
        f"valid    {row['id'][:12]}  {c['verdict']:<18} issued {row['issued_at']}  signed by "
        f"{signer['name']} ({signer['keyid'][:12]})"
    )
    gpus = ", ".join(f"{g['name']} (sm {g['cc']})" for g in c["gpus"])
    driver = c["certified_driver"] or "none"
    if gpus:
        click.echo(f"         certified on {gpus}, driver {driver}, GPU access {c['gpu_access']}")
    else:
        click.echo(f"         certified without a GPU (GPU access {c['gpu_access']}), host driver {driver}")
    if c["gpu_runs"]:
        models = ", ".join(sorted({str(g["name"]) for g in c["gpus"]}))
        floor = f" with driver >= {c['min_driver']}" if c["min_driver"] else ""
        click.echo(f"         covers {models}{floor} (stack {c['stack']})")
    elif c["cpu_runs"]:
        click.echo("         covers CPU runs only (--gpu-access none): no GPU took part")
    else:
        click.echo("         covers nothing: the image FAILED certification")
