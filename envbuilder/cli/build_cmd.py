"""`envbuilder build`: resolve (or read a lock), render, build with BuildKit, tag, lock, push."""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import click

from envbuilder.cli import cli
from envbuilder.cli.options import (
    F,
    check_registry_option,
    check_tags,
    host_options,
    package_source_options,
    resolve_spec,
    runtime_option,
    settings_from_options,
)
from envbuilder.cli.progress_view import build_progress
from envbuilder.engine import BUILD_NETWORKS, BuildSecret
from envbuilder.engine.buildkit import secret_flag
from envbuilder.errors import UsageError
from envbuilder.image.build import (
    BuildOptions,
    BuildOutcome,
    build_epoch,
    for_stack_platform,
    plan_from_lock,
    plan_from_spec,
    run_build,
)
from envbuilder.image.packages import LockSettings
from envbuilder.image.render import SECRET_CA, SECRET_INDEX
from envbuilder.image.spec import load_spec
from envbuilder.platforms import Platform, machine_of
from envbuilder.runtime import get as get_runtime

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


_SECRET_HINT = 'quote a field that holds a comma or a quote, as docker reads it: id=ca,"src=/certs/a,b.pem"'


def parse_secret(text: str) -> BuildSecret:
    """`id=NAME,src=FILE` (docker's syntax; `source=` too), read as docker reads it: one CSV
    record, so a path with a comma is written quoted (`id=ca,"src=/certs/a,b.pem"`), and
    engine.buildkit.secret_flag quotes it again for docker. Raises UsageError."""
    import csv

    try:
        (parts,) = list(csv.reader([text], strict=True))
    except (csv.Error, ValueError):
        raise UsageError(f"--secret {text!r}: expected id=NAME,src=FILE", hint=_SECRET_HINT) from None
    fields: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not value:
            raise UsageError(f"--secret {text!r}: expected id=NAME,src=FILE", hint=_SECRET_HINT)
        fields[key.strip()] = value.strip()
    sid, src = fields.get("id"), fields.get("src") or fields.get("source")
    if not sid or not src:
        raise UsageError(f"--secret {text!r}: expected id=NAME,src=FILE", hint=_SECRET_HINT)
    if not Path(src).is_file():
        raise UsageError(f"--secret {text!r}: {src} is not a file")
    return BuildSecret(id=sid, src=Path(src))


def _lock_settings(
    settings: LockSettings | None, ca_bundle: Path | None, index_url_file: Path | None
) -> LockSettings | None:
    """The build's secrets serve the lock too: the CA bundle is trusted, and a private mirror
    (URL with its token) replaces the framework index and PyPI unless an option named one."""
    if ca_bundle is None and index_url_file is None:
        return settings
    settings = settings or LockSettings()
    mirror = index_url_file.read_text(encoding="utf-8").strip() if index_url_file else None
    return replace(
        settings,
        ca_bundle=ca_bundle,
        default_index=settings.default_index or mirror,
        framework_index=settings.framework_index or mirror,
        # The lock records the mirror as <secret:pip_index_url>; messages never show it.
        secrets=((SECRET_INDEX, mirror),) if mirror else (),
    )


# The options that say how an image is built, shared by `build` and `fleet build`: declared once
# (image_build_options), turned into BuildOptions by one builder (build_options_from).
BUILD_OPTION_NAMES = (
    "base_image", "base_venv", "wheelhouse", "secrets", "ca_bundle", "pip_index_url_file", "push",
    "no_cache", "network", "index_url", "framework_index", "find_links", "no_index",
)  # fmt: skip


def build_options_from(
    *,
    base_image: str | None,
    base_venv: str | None,
    wheelhouse: Path | None,
    secrets: tuple[str, ...],
    ca_bundle: Path | None,
    pip_index_url_file: Path | None,
    push: str | None,
    no_cache: bool,
    network: str | None,
    index_url: str | None,
    framework_index: str | None,
    find_links: tuple[Path, ...],
    no_index: bool,
) -> BuildOptions:
    """The BuildOptions those options ask for (the secrets parsed; the CA bundle and the private
    index as secrets that serve the lock too). Raises UsageError (a malformed or repeated secret,
    an index URL that is not https://)."""
    parsed = [parse_secret(s) for s in secrets]
    if ca_bundle:
        parsed.append(BuildSecret(id=SECRET_CA, src=ca_bundle))
    if pip_index_url_file:
        parsed.append(BuildSecret(id=SECRET_INDEX, src=pip_index_url_file))
    dupes = [k for k, n in Counter(s.id for s in parsed).items() if n > 1]
    if dupes:
        raise UsageError(f"secret id {dupes[0]!r} given twice")
    for s in parsed:
        secret_flag(s)  # what docker cannot read (a line break in the path) refused now, not after the lock
    sources = settings_from_options(index_url, framework_index, find_links, no_index)
    return BuildOptions(
        base_image=base_image,
        base_venv=base_venv,
        wheelhouse=wheelhouse,
        secrets=tuple(parsed),
        push=push,
        no_cache=no_cache,
        network=network,
        lock_settings=_lock_settings(sources, ca_bundle, pip_index_url_file),
    )


def image_build_options(func: F) -> F:
    """--base-image, --base-venv, --wheelhouse, --secret, --ca-bundle, --pip-index-url-file,
    --push, --no-cache, --network and the package sources (package_source_options); the command
    gets them as one `build_options: BuildOptions` (build_options_from)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in BUILD_OPTION_NAMES}
        return func(*args, build_options=build_options_from(**given), **kwargs)

    options: list[Callable[[Any], Any]] = [
        package_source_options,
        click.option(
            "--network",
            type=click.Choice(BUILD_NETWORKS),
            help="Network of the build's RUN steps: none proves an offline (--wheelhouse) build; "
            "host for a daemon without a bridge network.",
        ),
        click.option("--no-cache", is_flag=True, help="Build without BuildKit's layer cache."),
        click.option(
            "--push",
            metavar="REGISTRY",
            callback=check_registry_option,
            help="Push to REGISTRY (host[:port]) after building.",
        ),
        click.option("--pip-index-url-file", type=_FILE, help="File holding a private index URL with token."),
        click.option("--ca-bundle", type=_FILE, help="CA bundle for pip (TLS-intercepting proxy); a secret."),
        click.option(
            "--secret",
            "secrets",
            multiple=True,
            metavar="id=ID,src=FILE",
            help="A BuildKit secret (repeatable).",
        ),
        click.option(
            "--wheelhouse",
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            help="Install wheels only from this folder (offline, air-gapped).",
        ),
        click.option(
            "--base-venv",
            metavar="PATH",
            help="Install into this Python environment of the base image (one that already carries "
            "the framework, e.g. an NGC image) instead of creating /opt/venv.",
        ),
        click.option("--base-image", metavar="REF", help="Build FROM this image instead of the stack's."),
    ]
    decorated: Any = wrapper
    for option in options:
        decorated = option(decorated)
    return cast(F, decorated)


def outcome_dict(outcome: BuildOutcome) -> dict[str, Any]:
    record = outcome.lock.build
    assert record is not None
    steps = outcome.result.steps
    locked = outcome.lock.package_lock(record.platform)
    return {
        "image_id": outcome.image.id,
        "tags": list(outcome.tags),
        "size_bytes": outcome.image.size,
        "base_image": record.base_image,
        "base_image_digest": record.base_image_digest,
        "stack_id": outcome.lock.stack.id,
        "python_reason": outcome.lock.resolution.get("python_reason"),  # when the spec named none
        "lock_hash": outcome.lock.hash,
        "dockerfile_sha256": record.dockerfile_sha256,
        "steps": len(steps),
        "cached_steps": outcome.result.cached_steps,
        "build_seconds": round(outcome.result.seconds, 2),
        "packages": len(record.packages),
        "locked_packages": len(locked.packages) if locked else 0,
        "resolver": locked.resolver if locked else None,
        "lock_file": str(outcome.lock_path),
        "pushed": list(outcome.pushed),
        "warnings": list(outcome.warnings),
        "source_date_epoch": record.source_date_epoch,
    }


def _print_summary(d: dict[str, Any]) -> None:
    click.echo(f"built {d['image_id']}")
    click.echo(f"  tags        {', '.join(d['tags'])}")
    click.echo(f"  size        {d['size_bytes'] / 1e6:,.0f} MB")
    click.echo(f"  stack       {d['stack_id']}")
    if d["python_reason"]:
        click.echo(f"  python      {d['python_reason'].removeprefix('python ')}")
    click.echo(f"  base        {d['base_image']} ({d['base_image_digest'] or 'digest unknown'})")
    click.echo(f"  cache hits  {d['cached_steps']}/{d['steps']} steps, {d['build_seconds']:.1f}s")
    click.echo(
        f"  packages    {d['locked_packages']} locked with sha256 ({d['resolver']}), "
        f"{d['packages']} installed, checked against the lock"
    )
    click.echo(f"  lock        {d['lock_file']}")
    if d["source_date_epoch"] is not None:
        click.echo(
            f"  epoch       SOURCE_DATE_EPOCH={d['source_date_epoch']} (reproducible: same inputs, same ID)"
        )
    for ref in d["pushed"]:
        click.echo(f"  pushed      {ref}")


@cli.command()
@click.argument("spec_path", required=False, type=_FILE, metavar="[SPEC]")
@click.option("--lock", "lock_path", type=_FILE, help="Rebuild the stack (and spec) of a lock file.")
@host_options
@click.option("--cpu", "cpu_only", is_flag=True, help="Resolve a CPU-only stack.")
@image_build_options
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="REF",
    callback=check_tags,
    help="Also tag the image REF (repeatable).",
)
@click.option("--lock-out", type=click.Path(dir_okay=False, path_type=Path), help="Lock file to write.")
@click.option(
    "--reproducible/--no-reproducible",
    default=None,
    help="Build so that the same inputs give the same image ID: every file time set to "
    "SOURCE_DATE_EPOCH (the environment's, else the lock's, else 0), exported by buildx and loaded. "
    "Needs a builder that can rewrite file times (docs/reproducible.md). Default: as the --lock was built.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the build summary as JSON.")
@runtime_option("The container runtime that builds and stores the image (one with an image store).")
def build(
    spec_path: Path | None,
    lock_path: Path | None,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    platform: Platform | None,
    cpu_only: bool,
    build_options: BuildOptions,
    tags: tuple[str, ...],
    lock_out: Path | None,
    reproducible: bool | None,
    as_json: bool,
    runtime: str,
) -> None:
    """Build images/NAME.yaml (or --lock FILE) into a tagged image and write its lock file.

    Every Python package is locked first (uv: one wheel and its sha256 each) unless the lock
    already holds them; the image installs exactly that set, hash-checked, and is checked
    against it before it is tagged.

    Exit codes: 0 built; 2 bad input; 4 no compatible stack; 7 Docker unreachable; 8 no BuildKit
    client (with --reproducible: no builder that can rewrite file times); 9 build failed
    (nothing tagged, lock untouched); 10 bad spec/lock; 13 push failed; 20 packages could not be
    locked; 24 the runtime (--runtime podman: the podman program) is missing or failed; 130
    interrupted.
    """
    options = replace(build_options, tags=tags, lock_out=lock_out)
    spec = load_spec(spec_path) if spec_path else None
    if lock_path is not None:
        from envbuilder.matrix import load_matrix

        plan = plan_from_lock(lock_path, options, spec, matrix=load_matrix())
    elif spec is not None and spec_path is not None:
        matrix, resolution = resolve_spec(
            spec, driver, gpus, ccs, cpu_only, settings=options.lock_settings, platform=platform
        )
        plan = plan_from_spec(spec, resolution, options, spec_path, matrix)
    else:
        raise UsageError("give an image spec or --lock FILE", hint="envbuilder build images/NAME.yaml")
    # the image installs the package lock of its stack's platform; with --lock, --platform picks
    # another of the lock's package locks (`lock --also-platform`), as before the platform axis
    target = platform if lock_path is not None and platform is not None else plan.stack.platform
    if target != plan.stack.platform:
        click.echo(
            f"warning: {lock_path} holds a stack resolved for {plan.stack.platform}; installing its "
            f"{machine_of(target)} package lock (the stack's arch facts are {plan.stack.platform}'s)",
            err=True,
        )
    options = (
        for_stack_platform(options, plan.stack)
        if target == plan.stack.platform
        else (replace(options, platform=machine_of(target)))
    )
    options = replace(options, source_date_epoch=build_epoch(reproducible, plan.previous, os.environ))
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    with build_progress() as progress:
        outcome = run_build(
            plan, options, get_runtime(runtime).engine(), on_event=progress, on_message=progress.say
        )
    for warning in outcome.warnings[len(plan.warnings) :]:
        click.echo(f"warning: {warning}", err=True)
    summary = outcome_dict(outcome)
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        _print_summary(summary)
