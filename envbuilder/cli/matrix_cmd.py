"""`envbuilder matrix check|show`: validate and inspect matrices/."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.cli import cli


@cli.group()
def matrix() -> None:
    """Inspect and validate the compatibility matrix (matrices/)."""


@matrix.command("check")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    default=None,
    help="Matrix folder to check (default: the bundled matrices/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
def check(directory: Path | None, as_json: bool) -> None:
    """Load every matrix file and verify its invariants."""
    from envbuilder.matrix import check_matrix

    summary = check_matrix(directory)
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for line in summary["lines"]:
            click.echo(line)
