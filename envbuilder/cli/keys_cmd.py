"""`envbuilder keys generate|list|export-public|import`: signing keys and the keys you trust."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from envbuilder.cli import cli


@cli.group()
def keys() -> None:
    """Signing keys (DATA/keys: NAME.key 0600, NAME.pub) and the trust policy (DATA/trust.yaml)."""


@keys.command("generate")
@click.option("--name", default="default", show_default=True, help="Key name (file name in DATA/keys).")
@click.option(
    "--type", "keytype", type=click.Choice(["ecdsa", "ed25519"]), default="ecdsa", show_default=True,
    help="ecdsa: NIST P-256 with SHA-256; ed25519.",
)  # fmt: skip
@click.option(
    "--passphrase",
    "ask",
    is_flag=True,
    help="Encrypt the private key with a passphrase (asked twice; or ENVBUILDER_KEY_PASSPHRASE).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the key's description as JSON.")
def generate_cmd(name: str, keytype: str, ask: bool, as_json: bool) -> None:
    """Make a key pair for signing certificates. The private key never leaves this machine;
    share NAME.pub (`keys export-public`) with whoever runs your images. Exit 16 when the name
    is taken or the passphrase cannot be had."""
    from envbuilder.attest.keys import PASSPHRASE_ENV, generate_key
    from envbuilder.errors import SigningKeyError

    secret: bytes | None = None
    if ask or os.environ.get(PASSPHRASE_ENV):
        if os.environ.get(PASSPHRASE_ENV):
            secret = os.environ[PASSPHRASE_ENV].encode("utf-8")
        elif sys.stdin.isatty():
            typed = click.prompt("passphrase", hide_input=True, confirmation_prompt=True, err=True)
            secret = str(typed).encode("utf-8")
        else:
            raise SigningKeyError("--passphrase needs a terminal to ask on", hint=f"or set {PASSPHRASE_ENV}")
    info = generate_key(name, keytype=keytype, passphrase=secret)
    if as_json:
        click.echo(json.dumps(info.to_dict(), indent=2))
        return
    click.echo(f"key {info.name}: {info.scheme}, keyid {info.keyid}")
    click.echo(f"  private {info.private_path} (0600{', passphrase' if info.encrypted else ''})")
    click.echo(f"  public  {info.public_path} (share this one)")


@keys.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object {keys, trusted}.")
def list_cmd(as_json: bool) -> None:
    """Your signing keys, and the keys the default trust policy trusts."""
    from envbuilder.attest.keys import list_keys
    from envbuilder.attest.policy import default_policy

    own = list_keys()
    policy = default_policy()
    if as_json:
        trusted = [
            {"name": k.name, "keyid": k.keyid, "scheme": k.key.scheme, "repositories": list(k.repositories)}
            for k in policy.keys
        ]
        payload = {"keys": [k.to_dict() for k in own], "trusted": trusted, "policy": policy.source}
        click.echo(json.dumps(payload, indent=2))
        return
    if not own:
        click.echo("no signing keys (envbuilder keys generate)", err=True)
    for k in own:
        lock = ", passphrase" if k.encrypted else ""
        click.echo(f"{k.name:<16} {k.scheme:<20} {k.keyid[:16]}  {k.created}{lock}")
    click.echo(f"trusted ({policy.source}):")
    for t in policy.keys:
        where = ", ".join(t.repositories) or "every repository"
        click.echo(f"  {t.name:<14} {t.keyid[:16]}  {where}")
    if not policy.keys:
        click.echo("  nothing: attestations will be refused (envbuilder keys import KEY.pub)")


@keys.command("export-public")
@click.argument("name", required=False)
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write it here instead of stdout."
)
def export_public_cmd(name: str | None, out: Path | None) -> None:
    """Print (or write) the PEM public key NAME (default: your only key, or `default`)."""
    from envbuilder.atomic import written
    from envbuilder.attest.keys import find_key
    from envbuilder.certify.store import write_atomic

    info = find_key(name)
    pem = info.public_path.read_text(encoding="ascii")
    if out is None:
        click.echo(pem, nl=False)
        return
    click.echo(f"{written(out, write_atomic(out, pem))} (key {info.name}, keyid {info.keyid[:16]})", err=True)


@keys.command("import")
@click.argument("public_key", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--name", help="Name to trust it under (default: the file's name).")
@click.option(
    "--repository",
    "repositories",
    multiple=True,
    metavar="PATTERN",
    help="Trust it only for these repositories (fnmatch, e.g. 'registry.example.com/team/*'; repeatable).",
)
def import_cmd(public_key: Path, name: str | None, repositories: tuple[str, ...]) -> None:
    """Trust a signer's public key: copied into DATA/keys/trusted/ and added to DATA/trust.yaml
    (made on first use with your own keys in it, so they stay trusted)."""
    from envbuilder.attest.keys import load_public_key
    from envbuilder.attest.policy import import_trusted_key

    key = load_public_key(public_key)
    path = import_trusted_key(public_key, name=name, repositories=repositories)
    where = ", ".join(repositories) or "every repository"
    click.echo(f"trusted {name or public_key.stem} ({key.keyid[:16]}) for {where} in {path}")
