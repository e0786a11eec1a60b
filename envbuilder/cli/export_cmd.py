"""`envbuilder export IMAGE --sif FILE | --sqsh FILE`: a Docker image as an Apptainer SIF or an
enroot squashfs, for nodes without Docker (the target runtime's `export`: runtime/apptainer.py,
runtime/enroot.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.cli.options import say


@cli.command("export")
@click.argument("image")
@click.option("--sif", type=click.Path(dir_okay=False, path_type=Path), help="Write an Apptainer SIF here.")
@click.option(
    "--sqsh", type=click.Path(dir_okay=False, path_type=Path), help="Write an enroot squashfs here."
)
@click.option(
    "--apptainer", "apptainer_path", metavar="PATH", help="The apptainer binary (default: on PATH)."
)
@click.option(
    "--apptainer-image",
    metavar="IMAGE",
    help="A Docker image with apptainer in it, to build the SIF where no apptainer is installed.",
)
@click.option("--enroot", "enroot_path", metavar="PATH", help="The enroot binary (default: on PATH).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def export(
    image: str,
    sif: Path | None,
    sqsh: Path | None,
    apptainer_path: str | None,
    apptainer_image: str | None,
    enroot_path: str | None,
    as_json: bool,
) -> None:
    """Export the local Docker IMAGE as a SIF (`apptainer build FILE docker-archive://...`, after
    `docker save`) or a squashfs (`enroot import dockerd://IMAGE`), with a sidecar
    FILE.envbuilder.json naming the image (ID, labels) and the file's sha256, which
    `envbuilder run --runtime apptainer|enroot FILE` checks before it runs the file under the
    image's certificates. The file appears only when complete: a failed or interrupted export
    leaves none.

    Exit codes: 0 written; 2 bad input or no such image; 7 Docker unreachable; 24 the runtime is
    missing or failed (its last lines shown).
    """
    from envbuilder.errors import ContainerRuntimeError, UsageError
    from envbuilder.runtime import DEFAULT, Runtime
    from envbuilder.runtime import get as get_runtime

    if (sif is None) == (sqsh is None):
        raise UsageError(
            "give exactly one of --sif FILE or --sqsh FILE", hint="envbuilder export IMAGE --sif image.sif"
        )
    out: Path
    target: Runtime
    if sif is not None:
        if enroot_path:
            raise UsageError(
                "--enroot applies to --sqsh", hint="for a SIF give --apptainer or --apptainer-image"
            )
        out, target = sif, get_runtime("apptainer", binary=apptainer_path, image=apptainer_image)
    else:
        if apptainer_path or apptainer_image:
            raise UsageError(
                "--apptainer/--apptainer-image apply to --sif", hint="for a squashfs give --enroot"
            )
        assert sqsh is not None
        out, target = sqsh, get_runtime("enroot", binary=enroot_path)
    there = target.available()  # said before the image is looked for
    if not there.ok:
        raise ContainerRuntimeError(there.reason, hint=there.hint)
    done = target.export(image, out, source=get_runtime(DEFAULT).engine(), say=say)
    fmt = done.format
    if as_json:
        click.echo(json.dumps({"image": image, **done.to_dict()}, indent=2, sort_keys=True))
        return
    runtime = target.name
    click.echo(
        f"exported {image} -> {done.path} ({fmt}, {done.size / 1e6:,.1f} MB, {done.sha256[:19]}, "
        f"{done.seconds:.1f} s, {done.tool})\n"
        f"sidecar: {done.sidecar}\n"
        f"run it: envbuilder run --runtime {runtime} {done.path} -- COMMAND"
    )
