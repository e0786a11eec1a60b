"""`envbuilder certs list|show|verify|export|import`: the local certificate store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envbuilder.cli import cli
from envbuilder.cli.options import trust_options
from envbuilder.errors import CertificateRefusedError
from envbuilder.tables import printable

if TYPE_CHECKING:
    from envbuilder.certify.store import CertStore


@cli.group()
def certs() -> None:
    """Certificates kept in the local store (ENVBUILDER_DATA_DIR, else the XDG data folder)."""


@certs.command("list")
@click.option(
    "--image", help="Only certificates for this image (ID, ID prefix, manifest digest or reference)."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def list_cmd(image: str | None, as_json: bool) -> None:
    """List stored certificates, newest first."""
    from envbuilder.certify.store import CertStore

    store = CertStore()
    rows = store.list(image)
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "image_id": r.image_id,
                        "image_ref": r.image_ref,
                        "verdict": r.verdict,
                        "host_fingerprint": r.host_fingerprint,
                        "issued_at": r.issued_at,
                        "stored_at": r.stored_at,
                        "origin": r.origin,
                        "manifest_digests": [d for _repo, d in store.digests(r.id)],
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return
    if not rows:
        click.echo("no certificates stored" + (f" for {image}" if image else ""), err=True)
        return
    click.echo(f"{'id':<12}  {'issued':<20}  {'verdict':<18}  {'image':<12}  {'origin':<11}  ref")
    for r in rows:
        cid, issued, verdict, origin, ref = (
            printable(v) for v in (r.id, r.issued_at, r.verdict, r.origin, r.image_ref or "-")
        )
        image_id = printable(r.image_id.removeprefix("sha256:")[:12])
        click.echo(f"{cid[:12]}  {issued:<20}  {verdict:<18}  {image_id:<12}  {origin:<11}  {ref}")


@certs.command("show")
@click.argument("ident", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the whole certificate JSON.")
def show_cmd(ident: str, as_json: bool) -> None:
    """Show one certificate (ID: its id or a unique prefix of at least 4 hex digits)."""
    from envbuilder.certify.store import CertStore
    from envbuilder.cli.certify_cmd import print_summary

    store = CertStore()
    cert = store.get(ident)
    if as_json:
        click.echo(cert.to_json(indent=2))
        return
    print_summary(cert, cert.id)
    click.echo(f"origin   {describe_origin(store, cert.id)}")


def describe_origin(store: CertStore, cid: str) -> str:
    """Where a stored certificate came from, in words (certs show)."""
    origin = store.origin_of(cid)
    if origin == "local":
        return "local (certified on this machine)"
    signers = sorted({e.keyid[:12] for e in store.envelopes(cid)})
    if origin == "attestation":
        return f"attestation (fetched from a registry, signed by {', '.join(signers)}; verified at each use)"
    if signers:
        return f"imported (signed by {', '.join(signers)}; verified at each use)"
    return "imported (unsigned: `run` uses it only with --trust-imported)"


@certs.command("verify")
@click.argument("ident", metavar="ID")
@click.option("--image", help="Also check that the certificate is for this image (ID or reference).")
@click.option("--json", "as_json", is_flag=True, help="Print {id, ok, problems} as JSON.")
def verify_cmd(ident: str, image: str | None, as_json: bool) -> None:
    """Recompute the content hash (and, with --image, the image ID). Exit 12 when anything is off."""
    from envbuilder.certify.store import CertStore

    store = CertStore()
    image_id = _image_id(image) if image else None
    problems = store.verify(ident, image_id=image_id)
    if as_json:
        click.echo(json.dumps({"id": ident, "ok": not problems, "problems": problems}, indent=2))
    elif not problems:
        click.echo(f"{ident}: OK (content hash matches" + (f", image {image})" if image else ")"))
    if problems:
        raise CertificateRefusedError(
            f"certificate {ident} failed verification: " + "; ".join(problems),
            hint="re-certify the image on this host: envbuilder certify IMAGE",
        )


def _image_id(image: str) -> str:
    """An image ID as given, or the ID of a local image reference (needs Docker)."""
    bare = image.removeprefix("sha256:")
    if len(bare) >= 12 and all(c in "0123456789abcdef" for c in bare):
        return image
    from envbuilder.errors import UsageError
    from envbuilder.runtime import get as get_runtime

    info = get_runtime().inspect(image)
    if info is None:
        raise UsageError(f"image {image!r} not found locally", hint="give its ID, or build/pull it first")
    return info.id


@certs.command("export")
@click.argument("ident", metavar="ID")
@click.argument("dest", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
def export_cmd(ident: str, dest: Path) -> None:
    """Write a verified certificate to FILE (atomically)."""
    from envbuilder.atomic import written
    from envbuilder.certify.store import CertStore

    replaced = dest.exists()
    CertStore().export(ident, dest)
    click.echo(written(dest, replaced), err=True)


@certs.command("import")
@click.argument("src", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path))
@trust_options
@click.option("--json", "as_json", is_flag=True, help="Print {id, origin, signed, signed_by} as JSON.")
def import_cmd(
    src: Path, key_files: tuple[Path, ...], trust_file: Path | None, max_age: str | None, as_json: bool
) -> None:
    """Verify a certificate file, or a signed attestation envelope, and store it (origin
    `imported`). An envelope must verify against the trust policy (--key/--trust/--max-age, as
    for `verify`). A plain certificate file is stored unsigned, with a warning: `run` uses it
    only with --trust-imported. Exit 12 when it is tampered with, issued in the future, or its
    signature does not hold; 16 when the policy is unusable."""
    from envbuilder.attest import choose_policy
    from envbuilder.attest.imported import import_certificate
    from envbuilder.certify.store import CertStore

    done = import_certificate(
        src,
        store=CertStore(),
        policy=lambda: choose_policy(keys=key_files, trust=trust_file, max_age=max_age),
    )
    if done.signed_by is None:
        click.echo(
            f"envbuilder: warning: {src} is not signed: its hashes prove it is intact, not who made it; "
            "`run` uses it only with --trust-imported (import the signed attestation instead)",
            err=True,
        )
    if as_json:
        click.echo(json.dumps(done.to_dict()))
    elif done.signed_by is not None:
        signer = done.signed_by
        click.echo(f"imported {done.id[:12]} (signed by {signer.key_name}, {signer.keyid[:12]})")
    else:
        click.echo(f"imported {done.id[:12]} (unsigned)")
