"""`envbuilder wheelhouse SPEC|LOCK DIR`: the exact locked wheels, downloaded and checked, for a
build that reaches no index (`build --lock LOCK --wheelhouse DIR --network none`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.cli.lock_cmd import is_lock_path, load_lock_or_spec
from envbuilder.cli.options import host_options, package_source_options, say, settings_from_options
from envbuilder.cli.progress_view import task_progress
from envbuilder.errors import LockError
from envbuilder.image.lock import LockFile, spec_dir_for, write_lock
from envbuilder.image.packages import lock_packages
from envbuilder.image.render import RenderOptions, rendered_stack
from envbuilder.image.wheelhouse import fill_wheelhouse
from envbuilder.platforms import Platform, machine_of


@cli.command("wheelhouse")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path), metavar="SPEC|LOCK")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), metavar="DIR")
@host_options
@click.option("--cpu", "cpu_only", is_flag=True, help="Resolve a CPU-only stack (SPEC only).")
@package_source_options
@click.option("--json", "as_json", is_flag=True, help="Print what is in DIR as JSON.")
def wheelhouse(
    path: Path,
    folder: Path,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    cpu_only: bool,
    index_url: str | None,
    framework_index: str | None,
    find_links: tuple[Path, ...],
    no_index: bool,
    platform: Platform | None,
    as_json: bool,
) -> None:
    """Download exactly the wheels LOCK pins for --platform (default: its stack's) into DIR, each
    sha256-checked.

    Given a SPEC, it is locked first and SPEC.lock.json written beside it. Copy DIR, the lock
    and the project to the offline machine, then: envbuilder build --lock LOCK --wheelhouse DIR
    --network none.

    Exit codes: 0 done; 2 bad input; 4 no compatible stack; 10 bad spec or lock; 20 a wheel could
    not be fetched or its sha256 differs from the lock's (nothing half-written is left in DIR).
    """
    current, spec, lock_path = load_lock_or_spec(path, driver, gpus, ccs, cpu_only, platform)
    machine = machine_of(platform or current.stack.platform)  # default: the stack's own platform
    locked = current.package_lock(machine)
    if locked is None:
        if is_lock_path(path) and current.packages:
            raise LockError(
                f"{path} holds no package lock for {machine}",
                hint=f"envbuilder lock {path} --platform {machine}",
            )
        settings = settings_from_options(index_url, framework_index, find_links, no_index)
        stack = rendered_stack(spec, current.stack, RenderOptions())
        with task_progress("lock") as view:
            locked = lock_packages(spec, stack, platform=machine, settings=settings, on_progress=view.say)
        current = LockFile(
            resolution=current.resolution,
            stack=current.stack,
            spec=spec.to_dict(),
            spec_path=spec.path,
            packages=tuple(sorted((*current.packages, locked), key=lambda p: p.platform)),
            spec_dir=spec_dir_for(spec.base_dir, lock_path),
        )
        write_lock(lock_path, current)
        say(f"wrote {lock_path}")
    with task_progress("wheelhouse") as view:
        fetched = fill_wheelhouse(locked, folder, on_progress=view.say)
    total = sum(f.size for f in fetched)
    if as_json:
        doc = [{"wheel": f.package.wheel, "sha256": f.package.sha256, "source": f.source} for f in fetched]
        click.echo(json.dumps({"folder": str(folder), "lock": str(lock_path), "wheels": doc}, indent=2))
        return
    click.echo(f"{len(fetched)} wheels in {folder} ({total / 1e6:,.1f} MB), every sha256 as locked")
    click.echo(f"offline build: envbuilder build --lock {lock_path} --wheelhouse {folder} --network none")
