"""`envbuilder render images/NAME.yaml`: resolve the spec's stack for a host, write the build context."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.atomic import require_parent
from envbuilder.cli import cli
from envbuilder.cli.options import host_options
from envbuilder.image.render import (
    SECRET_CA,
    SECRET_EXTRA_INDEX,
    SECRET_INDEX,
    RenderOptions,
    render_dockerfile,
    render_options,
    write_build_context,
)
from envbuilder.image.spec import ImageSpec, load_spec
from envbuilder.pipeline.resolution import resolve_spec
from envbuilder.platforms import Platform
from envbuilder.resolve.model import Stack

SECRET_IDS = (SECRET_CA, SECRET_INDEX, SECRET_EXTRA_INDEX)


def prepare(
    spec_path: Path,
    *,
    driver: str | None = None,
    gpus: tuple[str, ...] = (),
    ccs: tuple[str, ...] = (),
    cpu_only: bool = False,
    platform: Platform | None = None,
    base_image: str | None = None,
    wheelhouse: Path | None = None,
    secrets: tuple[str, ...] = (),
    base_venv: str | None = None,
) -> tuple[ImageSpec, Stack, RenderOptions]:
    """Load the spec, resolve its stack for the host given (or this one), choose render options
    (image.render.render_options, as build does).

    Raises SpecError, UsageError, MatrixError, NoCompatibleStackError. Warnings go to stderr.
    """
    spec = load_spec(spec_path)
    matrix, resolution = resolve_spec(spec, driver, gpus, ccs, cpu_only, platform=platform)
    for warning in resolution.warnings:
        click.echo(f"warning: {warning}", err=True)
    if resolution.python_reason:
        click.echo(resolution.python_reason, err=True)
    assert resolution.stack is not None  # resolve_spec raised otherwise
    options = render_options(
        matrix,
        spec,
        resolution.stack,
        resolution.host,
        base_image=base_image,
        base_venv=base_venv,
        wheelhouse=wheelhouse,
        secret_ids=secrets,
    )
    return spec, resolution.stack, options


@cli.command()
@click.argument("spec_path", type=click.Path(dir_okay=False, path_type=Path))
@host_options
@click.option("--cpu", "cpu_only", is_flag=True, help="Resolve a CPU-only stack.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for Dockerfile + context/ (default: build/NAME).",
)
@click.option(
    "--base-image",
    metavar="REF",
    default=None,
    help="Build FROM this image instead of the resolved base (e.g. a local test image).",
)
@click.option(
    "--base-venv",
    metavar="PATH",
    default=None,
    help="Install into this Python environment of the base image (one that already carries the "
    "framework) instead of creating /opt/venv.",
)
@click.option(
    "--wheelhouse",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Install every wheel from this folder, offline (--no-index).",
)
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    type=click.Choice(SECRET_IDS),
    help="Read this BuildKit secret in the pip steps (ca: CA bundle; pip_index_url, "
    "pip_extra_index_url: private index with its token). Repeatable.",
)
@click.option(
    "--lock",
    "lock_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Take the package pins of this lock file (as `build --lock` installs them) into the context.",
)
@click.option("--print", "print_only", is_flag=True, help="Print the Dockerfile to stdout and write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def render(
    spec_path: Path,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    platform: Platform | None,
    cpu_only: bool,
    out_dir: Path | None,
    base_image: str | None,
    base_venv: str | None,
    wheelhouse: Path | None,
    secrets: tuple[str, ...],
    lock_path: Path | None,
    print_only: bool,
    as_json: bool,
) -> None:
    """Resolve the stack of an image spec for this host (or --driver/--gpu/--cc) and render it.

    Exit codes: 0 written; 2 bad input; 3 bad matrix; 4 no compatible stack; 10 bad spec value.
    """
    spec, stack, options = prepare(
        spec_path,
        driver=driver,
        gpus=gpus,
        ccs=ccs,
        cpu_only=cpu_only,
        platform=platform,
        base_image=base_image,
        wheelhouse=wheelhouse,
        secrets=secrets,
        base_venv=base_venv,
    )
    if lock_path is not None:
        from dataclasses import replace

        from envbuilder.image.lock import read_lock

        options = replace(options, package_locks=read_lock(lock_path).packages)
    elif not print_only:
        click.echo(
            "note: no --lock: the context holds no package pins (`envbuilder lock SPEC` makes them)",
            err=True,
        )
    if print_only:
        click.echo(render_dockerfile(spec, stack, options), nl=False)
        return
    if out_dir is not None:
        require_parent(out_dir)  # the default build/NAME is render's own; --out's folder is the user's
    rendered = write_build_context(spec, stack, out_dir or Path("build") / spec.name, options)
    if as_json:
        doc = {
            "dockerfile": str(rendered.dockerfile),
            "context_dir": str(rendered.context_dir),
            "dockerfile_sha256": rendered.dockerfile_sha256,
            "lock_hash": rendered.lock_hash,
            "secrets": sorted(secrets),
            "stack": rendered.stack.to_dict(),
        }
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        click.echo(f"stack {rendered.stack.id}")
        click.echo(f"wrote {rendered.dockerfile} (sha256 {rendered.dockerfile_sha256[:12]})")
        click.echo(f"context {rendered.context_dir}")
