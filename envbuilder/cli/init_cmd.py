"""`envbuilder init [FOLDER]`: draft an image spec for the project in FOLDER (image/draft.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from envbuilder.atomic import write_bytes_atomic, written
from envbuilder.cli import cli
from envbuilder.errors import OutputError


@cli.command("init")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path), default=".")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the spec (default: FOLDER/envbuilder.yaml); never replaces a file.",
)
@click.option(
    "--schema",
    "schema_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the spec's JSON Schema here and point the spec at it (editors complete and check).",
)
@click.option("--print", "print_only", is_flag=True, help="Print the draft instead of writing it.")
@click.option("--json", "as_json", is_flag=True, help="Print the draft, its findings and paths as JSON.")
def init_cmd(
    folder: Path, out: Path | None, schema_path: Path | None, print_only: bool, as_json: bool
) -> None:
    """Draft an image spec for the project in FOLDER: its packages (uv.lock, pyproject.toml or
    requirements.txt), the framework they name, the command from the usual entry points.

    Each finding is said; the draft is checked by the spec loader before it is written.
    Exit codes: 0 written; 10 a project file cannot be read; 18 the spec or schema file exists
    or cannot be written.
    """
    from envbuilder.image.draft import draft_spec
    from envbuilder.image.spec_schema import spec_json_schema

    out = out or folder / "envbuilder.yaml"
    schema_ref = None
    if schema_path is not None:
        schema_ref = Path(os.path.relpath(schema_path.resolve(), out.resolve().parent)).as_posix()
    draft = draft_spec(folder, spec_dir=out.resolve().parent, schema_ref=schema_ref)
    wrote: list[str] = []
    if not print_only:
        if schema_path is not None:
            schema = json.dumps(spec_json_schema(), indent=2, sort_keys=True) + "\n"
            wrote.append(written(schema_path, write_bytes_atomic(schema_path, schema.encode())))
        wrote.append(_write_new(out, draft.text))
    if as_json:
        doc = {
            "spec": draft.text,
            "findings": list(draft.findings),
            "written": [] if print_only else [str(out)],
        }
        click.echo(json.dumps(doc, indent=2))
        return
    for finding in draft.findings:
        click.echo(finding, err=True)
    if print_only:
        click.echo(draft.text, nl=False)
        return
    for line in wrote:
        click.echo(line)
    click.echo(f"next: envbuilder up {out}", err=True)


def _write_new(path: Path, text: str) -> str:
    """Write a new spec; an existing file is the user's and is never replaced. Raises OutputError."""
    try:
        write_bytes_atomic(path, text.encode("utf-8"), exclusive=True)
    except FileExistsError:
        raise OutputError(
            f"{path} exists: init never replaces a spec",
            hint="give another --out, or --print to see the draft",
        ) from None
    except OSError as exc:
        raise OutputError(
            f"cannot write {path}: {exc.strerror}", hint="check the folder and its permissions"
        ) from None
    return written(path, False)
