"""`envbuilder fleet plan`: the cluster's node classes, and whether an image's stack covers each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envbuilder.cli.fleet_cmd import (
    chosen_scheduler,
    cluster_classes,
    find_image,
    fleet,
    print_classes,
    scheduler_options,
)
from envbuilder.tables import table


@fleet.command("plan")
@click.argument("image", required=False)
@scheduler_options
@click.option(
    "--nodes",
    "nodes_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="k8s: a `kubectl get nodes -o json` file instead of the cluster.",
)
@click.option("--partition", metavar="P", help="slurm: only the nodes of this partition.")
@click.option(
    "--probe", is_flag=True, help="slurm: ask one node per class (srun nvidia-smi) for its GPU and driver."
)
@click.option(
    "--one-image",
    "one_image_spec",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="SPEC",
    help="The one stack SPEC would get for all these classes (`fleet build --one-image`), and why "
    "each class's own newer stack was dropped.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the classes and the coverage as JSON.")
def plan_cmd(
    image: str | None,
    scheduler_name: str | None,
    nodes_file: Path | None,
    partition: str | None,
    probe: bool,
    one_image_spec: Path | None,
    as_json: bool,
) -> None:
    """The cluster's node classes (GPU model and count, driver, features, partitions, each fact
    with its source) and, given IMAGE, whether its stack can cover each class: run's own checks
    (GPU arch, driver floor, NVIDIA_REQUIRE_CUDA) applied to the class.

    Exit codes: 0; 2 bad input; 23 the scheduler cannot be asked; 13/15 the image's registry.
    """
    from envbuilder.fleet.classes import class_coverage
    from envbuilder.fleet.schedulers.base import ClassQuery
    from envbuilder.matrix import load_matrix

    scheduler = chosen_scheduler(scheduler_name)
    matrix = load_matrix()
    query = ClassQuery(nodes_file=nodes_file, partition=partition, probe=probe)
    classes = cluster_classes(scheduler, matrix, query)
    found = find_image(image) if image else None
    coverage = [class_coverage(c, found.info, matrix) for c in classes] if found else []
    choice = None
    if one_image_spec is not None:
        from envbuilder.fleet.one_image import one_stack
        from envbuilder.image.spec import load_spec

        choice = one_stack(matrix, load_spec(one_image_spec).to_request(), classes)
    if as_json:
        doc: dict[str, Any] = {
            "scheduler": scheduler.name,
            "classes": [c.to_dict() for c in classes],
        }
        if choice is not None:
            doc["one_image"] = choice.to_dict() | {
                "rejected": [r.to_dict() for r in choice.resolution.rejected]
            }
        if found:
            doc["image"] = found.to_dict()
            doc["coverage"] = [c.to_dict() for c in coverage]
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"{len(classes)} node class(es) ({scheduler.source})")
    print_classes(classes)
    for c in classes:
        for fact in c.facts:
            click.echo(f"  {c.name}: {fact}")
    if choice is not None:
        _print_one_image(choice)
    if found is None:
        return
    from envbuilder.image.metadata import read_metadata

    stack = read_metadata(found.info).stack_record or {}
    click.echo("")
    click.echo(f"image {found.ref} ({found.info.id[:19]}), stack {stack.get('id', 'unknown')}")
    for line in table(
        ["class", "coverage", "why"],
        [[c.node_class, c.status, "; ".join(c.reasons)] for c in coverage],
        indent="",
    ):
        click.echo(line)


def _print_one_image(choice: Any) -> None:
    """fleet plan --one-image's lines: the common stack (or why none), and each dropped one."""
    from envbuilder.resolve.model import rejection_summary

    click.echo("")
    stack = choice.resolution.stack
    gpus = ", ".join(f"{g.name} (sm_{g.cc.replace('.', '')})" for g in choice.host.gpus) or "no GPU"
    click.echo(f"one image for {', '.join(choice.classes)}: {gpus}, driver {choice.host.driver or 'none'}")
    if stack is None:
        click.echo(f"  no stack fits every class ({rejection_summary(choice.resolution)})")
    else:
        click.echo(f"  stack  {stack.id}")
    for d in choice.dropped:
        click.echo(f"  {d.node_class} alone would get {d.stack}; dropped: {'; '.join(d.reasons)}")
    for note in choice.notes:
        click.echo(f"  note: {note}")
