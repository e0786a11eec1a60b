"""`envbuilder lock SPEC|LOCK`: pin every Python package of an image (uv: one wheel and its
sha256 each, per platform) and write the lock file that `build --lock` installs exactly."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.cli.options import (
    host_options,
    package_source_options,
    settings_from_options,
)
from envbuilder.cli.progress_view import task_progress
from envbuilder.errors import SpecError
from envbuilder.image.lock import (
    LockFile,
    lock_from_resolution,
    read_lock,
    spec_base_dir,
    spec_dir_for,
    write_lock,
)
from envbuilder.image.packages import LockSettings, lock_packages
from envbuilder.image.render import RenderOptions, rendered_stack
from envbuilder.image.spec import ImageSpec, load_spec, parse_spec
from envbuilder.pipeline.resolution import resolve_spec
from envbuilder.platforms import Platform, machine_of, parse_platform

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def is_lock_path(path: Path) -> bool:
    """A lock file (JSON) rather than an image spec (YAML)."""
    return path.name.endswith(".json")


def load_lock_or_spec(
    path: Path,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    cpu: bool,
    platform: Platform | None = None,
) -> tuple[LockFile, ImageSpec, Path]:
    """(lock, its spec, the default lock path) for SPEC (resolved for the host and `platform`) or
    LOCK (its own stack; `platform` then only says which package lock the caller wants).

    Raises SpecError, UsageError, NoCompatibleStackError, MatrixError.
    """
    if is_lock_path(path):
        lock = read_lock(path)
        if lock.spec is None:
            raise SpecError(f"{path}: holds no image spec", hint="lock the spec: envbuilder lock SPEC")
        spec = parse_spec(lock.spec, lock.spec_path or str(path), base_dir=spec_base_dir(lock, path))
        return lock, spec, path
    spec = load_spec(path)
    _, resolution = resolve_spec(spec, driver, gpus, ccs, cpu, platform=platform)
    lock = lock_from_resolution(resolution, spec.to_dict())
    return lock, spec, path.with_name(f"{path.stem}.lock.json")


def check_also_platforms(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    """--also-platform: any spelling of a platform, as the package lock names it (x86_64, aarch64)."""
    return tuple(machine_of(parse_platform(v, "--also-platform")) for v in value)


@cli.command("lock")
@click.argument("path", type=_FILE, metavar="SPEC|LOCK")
@host_options
@click.option("--cpu", "cpu_only", is_flag=True, help="Resolve a CPU-only stack (SPEC only).")
@package_source_options
@click.option(
    "--also-platform",
    "also",
    multiple=True,
    callback=check_also_platforms,
    metavar="PLATFORM",
    help="Lock the same stack's packages for this platform too (repeatable; aarch64 or linux/arm64), "
    "where its wheels exist there. To resolve a stack for a platform, use --platform.",
)
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), help="Lock file to write.")
@click.option(
    "--ca-bundle",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CA bundle trusted for the indexes besides the system's (a TLS-intercepting proxy, a private CA).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the package lock as JSON.")
def lock(
    path: Path,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    cpu_only: bool,
    index_url: str | None,
    framework_index: str | None,
    find_links: tuple[Path, ...],
    no_index: bool,
    platform: Platform | None,
    also: tuple[str, ...],
    out: Path | None,
    ca_bundle: Path | None,
    as_json: bool,
) -> None:
    """Pin every Python package of SPEC (or re-pin those of LOCK) with sha256 hashes.

    The framework comes from its own index, the project's packages (requirements list or file,
    pyproject, uv.lock) from the spec's indexes and PyPI, with the framework's pins as
    constraints. Writes SPEC.lock.json (or --out, or LOCK in place) atomically.

    Exit codes: 0 written; 2 bad input; 4 no compatible stack; 10 bad spec or lock; 20 the
    packages could not be locked (no solution, an index unreachable).
    """
    current, spec, default_out = load_lock_or_spec(path, driver, gpus, ccs, cpu_only, platform)
    settings = settings_from_options(index_url, framework_index, find_links, no_index)
    if ca_bundle is not None:
        settings = replace(settings or LockSettings(), ca_bundle=ca_bundle)
    stack = rendered_stack(spec, current.stack, RenderOptions())
    # the stack's own platform (a spec resolved with --platform), or --platform's package lock of a
    # LOCK's stack (as --also-platform)
    first = machine_of(platform or current.stack.platform)
    platforms = list(dict.fromkeys([first, *also]))
    with task_progress("lock") as view:
        locks = tuple(
            lock_packages(spec, stack, platform=p, settings=settings, on_progress=view.say)  # type: ignore[arg-type]
            for p in platforms
        )
    kept = tuple(p for p in current.packages if p.platform not in platforms)
    target = out or default_out
    new = LockFile(
        resolution=current.resolution,
        stack=current.stack,
        spec=spec.to_dict(),
        spec_path=spec.path,
        packages=tuple(sorted((*kept, *locks), key=lambda p: p.platform)),
        spec_dir=spec_dir_for(spec.base_dir, target),
    )
    write_lock(target, new)
    if as_json:
        click.echo(json.dumps(new.to_dict()["packages"], indent=2, sort_keys=True))
        return
    for locked in locks:
        framework, project = locked.group("framework"), locked.group("project")
        click.echo(
            f"{locked.platform}: {len(framework)} framework + {len(project)} project packages, each one "
            f"wheel with its sha256 ({locked.resolver}, Python {locked.python})"
        )
    click.echo(f"wrote {target} (lock hash {new.hash[:12]})")
