"""`envbuilder push IMAGE [--to REF] [--attest]`: push an image, and attach its signed certificates."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from envbuilder.cli import cli
from envbuilder.cli.options import passphrase_prompt

if TYPE_CHECKING:
    from envbuilder.attest.push import PushOutcome


def push_with_progress(image: str, *, to: str | None, attest: bool, key_name: str | None) -> PushOutcome:
    """envbuilder.attest.push with the real engine and store, the passphrase asked on the
    terminal, progress on stderr; shared by `push` and `certify --push`."""
    from envbuilder.attest.push import push_image
    from envbuilder.certify.store import CertStore
    from envbuilder.runtime import get as get_runtime

    return push_image(
        image,
        engine=get_runtime().engine(),
        store=CertStore(),
        to=to,
        attest=attest,
        key_name=key_name,
        passphrase=passphrase_prompt,
        say=lambda line: click.echo(line, err=True),
    )


def push_and_print(image: str, *, to: str | None, attest: bool, key_name: str | None, as_json: bool) -> None:
    """Push (and attest), then print the outcome."""
    outcome = push_with_progress(image, to=to, attest=attest, key_name=key_name)
    if as_json:
        click.echo(json.dumps(outcome.to_dict(), indent=2))
        return
    click.echo(f"pushed   {outcome.reference}")
    click.echo(f"image    {outcome.image_id}")
    if outcome.certificates:
        click.echo(f"keyed    {len(outcome.certificates)} certificate(s) by the manifest digest in the store")
    for a in outcome.attached:
        state = "attached" if a.new else "already there"
        click.echo(f"attest   {a.certificate[:12]} {a.predicate_type}: {a.descriptor.digest[:19]} ({state})")
    if not attest:
        click.echo("(no attestations: add --attest to sign and attach the certificates)")


@cli.command()
@click.argument("image")
@click.option(
    "--to", metavar="REF", help="Push as REGISTRY/NAME:TAG (tagged so first); default: IMAGE itself."
)
@click.option("--attest", is_flag=True, help="Sign the image's certificates and attach them in the registry.")
@click.option(
    "--sign-key", "key_name", metavar="NAME", help="Key in DATA/keys (default: the only one, or `default`)."
)
@click.option("--json", "as_json", is_flag=True, help="Print {reference, digest, attestations} as JSON.")
def push(image: str, to: str | None, attest: bool, key_name: str | None, as_json: bool) -> None:
    """Push IMAGE to its registry (credentials: the Docker config). With --attest, every
    certificate of the image in the local store is signed (DSSE, in-toto statements) and
    attached to the pushed manifest as an OCI 1.1 artifact, so that `verify` and `run` work on
    any machine. Everything that can refuse is checked before anything is pushed; pushing
    again attaches only what is missing.

    Exit codes: 2 no such image; 12 --attest but no certificate; 16 no key or wrong passphrase;
    13 push failed; 14 the registry refused the credentials; 7 Docker unreachable.
    """
    push_and_print(image, to=to, attest=attest, key_name=key_name, as_json=as_json)
