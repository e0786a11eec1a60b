"""`envbuilder fleet build SPEC... --slurm|--k8s`: one image per spec and node class, baked at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envbuilder.cli.build_cmd import image_build_options
from envbuilder.cli.fleet_cmd import class_names, cluster_classes, fleet, one_scheduler, say

if TYPE_CHECKING:
    from envbuilder.image.build import BuildOptions

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@fleet.command("build")
@click.argument("spec_paths", nargs=-1, required=True, type=_FILE, metavar="SPEC...")
@click.option("--slurm", "use_slurm", is_flag=True, help="The node classes of the Slurm cluster.")
@click.option(
    "--k8s", "use_k8s", is_flag=True, help="The node classes of the Kubernetes cluster (GFD labels)."
)
@click.option(
    "--nodes",
    "nodes_file",
    type=_FILE,
    help="--k8s: a `kubectl get nodes -o json` file instead of the cluster.",
)
@click.option("--partition", metavar="P", help="Only the classes of this Slurm partition.")
@click.option("--classes", "classes_text", metavar="A,B", help="Only these node classes.")
@click.option(
    "--one-image",
    is_flag=True,
    help="One image per spec for all the classes (of --partition): the newest stack that fits every "
    "class's GPU and the oldest driver; says why each class's own newer stack was dropped.",
)
@image_build_options
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("fleet-build"),
    show_default=True,
    help="Where the locks, the rendered contexts and docker-bake.hcl go.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the targets and their images as JSON.")
def build_cmd(
    spec_paths: tuple[Path, ...],
    use_slurm: bool,
    use_k8s: bool,
    nodes_file: Path | None,
    partition: str | None,
    classes_text: str | None,
    one_image: bool,
    build_options: BuildOptions,
    out_dir: Path,
    as_json: bool,
) -> None:
    """Build every SPEC for every node class of the cluster: each class's stack resolved for its
    GPU and driver (classes with the same stack share one image), rendered, and built by one
    `docker buildx bake` (OUT/docker-bake.hcl: parallel targets, one shared BuildKit cache). Each
    image is then tagged envbuilder/NAME:STACK and envbuilder/NAME:CLASS and gets its lock
    (OUT/NAME-CLASS.lock.json), exactly as `envbuilder build` does; a failed bake tags nothing.

    --one-image builds one image per spec for all those classes instead (a partition of V100 and
    H100 nodes: the newest build with kernels for both, on the oldest driver of them).

    The build options are `envbuilder build`'s own (--base-image ... --network, the package
    sources). Exit codes: 0 built; 2 bad input; 4 no stack for a class; 8 no buildx; 9 the bake failed;
    23 the scheduler cannot be asked; 13 push failed.
    """
    from envbuilder.cli.progress_view import build_progress
    from envbuilder.engine.buildkit import find_buildx
    from envbuilder.fleet.bake import bake, plan_targets
    from envbuilder.fleet.slurm import select_classes
    from envbuilder.image.spec import load_spec
    from envbuilder.matrix import load_matrix
    from envbuilder.runtime import get as get_runtime

    one_scheduler(use_slurm, use_k8s)
    matrix = load_matrix()
    found = cluster_classes(matrix, use_k8s=use_k8s, nodes_file=nodes_file, partition=partition)
    classes = select_classes(found, class_names(classes_text))
    specs = [(load_spec(p), p) for p in spec_paths]
    out_dir.mkdir(parents=True, exist_ok=True)
    if one_image:
        from envbuilder.fleet.one_image import plan_one_image_targets

        targets, choices = plan_one_image_targets(
            specs, classes, matrix, build_options, out_dir.resolve(), partition or "all"
        )
        for choice in choices:
            for d in choice.dropped:
                say(f"one image: {d.node_class} alone would get {d.stack}; dropped: {'; '.join(d.reasons)}")
    else:
        targets = plan_targets(specs, classes, matrix, build_options, out_dir.resolve())
    buildx = find_buildx()
    with build_progress() as progress:
        outcomes = bake(
            targets,
            get_runtime().engine(),
            buildx,
            keep_dir=out_dir.resolve() / "contexts",
            on_event=progress,
            say=progress.say,
        )
    rows = [
        {
            **t.to_dict(),
            "image_id": o.image.id,
            "tags": list(o.tags),
            "pushed": list(o.pushed),
            "warnings": list(o.warnings),
        }
        for t, o in zip(targets, outcomes, strict=True)
    ]
    if as_json:
        click.echo(
            json.dumps(
                {
                    "bake_file": str(out_dir / "contexts" / "docker-bake.hcl"),
                    "buildx": buildx.version,
                    "targets": rows,
                },
                indent=2,
            )
        )
        return
    for r in rows:
        click.echo(f"built {r['image_id'][:19]}  {r['target']} for {', '.join(r['classes'])}")
        click.echo(f"  stack  {r['stack']}")
        click.echo(f"  tags   {', '.join(r['tags'])}")
        click.echo(f"  lock   {r['lock']}")
