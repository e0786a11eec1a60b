"""`envbuilder matrix check|show`: validate and inspect matrices/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envbuilder.cli import cli
from envbuilder.matrix import load_matrix


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
    summary = check_matrix(directory)
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for line in summary["lines"]:
            click.echo(line)


def check_matrix(directory: Path | None = None) -> dict[str, Any]:
    """Load the matrix and summarise it. Raises MatrixError."""
    m = load_matrix(directory, compiled=False)  # a check reads and checks the YAML itself
    lines = [
        f"ok  cuda.yaml: {len(m.cuda.releases)} releases "
        f"({m.cuda.releases[0].version} .. {m.cuda.releases[-1].version}), "
        "minimum drivers non-decreasing",
        f"ok  gpus.yaml: {len(m.gpus.models)} GPU models, {len(m.gpus.archs)} compute capabilities",
    ]
    counts: dict[str, Any] = {"cuda_releases": len(m.cuda.releases), "gpus": len(m.gpus.models)}
    for fw in m.frameworks:
        n_var = sum(len(r.variants) for r in fw.releases)
        lines.append(
            f"ok  frameworks/{fw.name}.yaml: {len(fw.releases)} releases "
            f"({fw.releases[0].version} .. {fw.releases[-1].version}), {n_var} variants"
        )
        counts[fw.name] = {"releases": len(fw.releases), "variants": n_var}
    n_cuda = sum(1 for b in m.base_images if b.kind == "cuda")
    lines.append(f"ok  base_images.yaml: {n_cuda} nvidia/cuda tags, {len(m.base_images) - n_cuda} slim bases")
    counts["base_images"] = len(m.base_images)
    lines.append("ok  invariants: quoted versions, known CUDA and compute capabilities, no duplicates")
    return {"ok": True, "counts": counts, "reviewed": dict(m.reviewed), "lines": lines}
