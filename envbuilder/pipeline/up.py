"""`up`'s steps below the command line: the base image (the one given, the stack's, else a local
one made here with debootstrap), the request resolved again for what the fallbacks changed (the
base's Python and OS, the framework from local wheels when its index does not answer), and the
build (offline from a wheelhouse filled on this host, when the index did not answer).

Each step takes the engine it drives and a `say` for its progress lines; none prints.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet

from envbuilder.engine import Engine
from envbuilder.errors import LockError, RegistryError
from envbuilder.matrix.model import Matrix
from envbuilder.pipeline.resolution import resolve_spec
from envbuilder.resolve.model import Request, Resolution, Stack

if TYPE_CHECKING:
    from envbuilder.engine.progress import BuildEvent
    from envbuilder.image.build import BuildOutcome
    from envbuilder.image.spec import ImageSpec

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallbacks:
    """What `up` used instead of the network it expected, each with why (shown and in --json)."""

    base_image: str | None = None  # a local base made here (debootstrap), with what it carries:
    base_python: str | None = None
    base_os: str | None = None
    framework_pin: str | None = None
    find_links: tuple[Path, ...] = ()
    wheelhouse: Path | None = None
    notes: tuple[str, ...] = ()


def choose_base(engine: Engine, stack_base: str, given: str | None, say: Say) -> Fallbacks:
    """The base image: the one given, the stack's (local or pulled), else a local one made here.
    A given base is used as a local one is: its Python and OS read from it (docs/up.md)."""
    if given is not None:
        from envbuilder.engine.localbase import probe_base

        if engine.inspect_image(given) is None:
            engine.pull(given)  # RegistryError: neither here nor reachable
        python, os_name = probe_base(engine, given, hint="give --base-image an image with python3 and venv")
        note = f"built FROM {given} (--base-image: {os_name}, Python {python})"
        say(note)
        return Fallbacks(base_image=given, base_python=python, base_os=os_name, notes=(note,))
    if engine.inspect_image(stack_base) is not None:
        say(f"base {stack_base} (local)")
        return Fallbacks()
    try:
        engine.pull(stack_base)
    except RegistryError as exc:
        from envbuilder.engine.localbase import ensure_local_base

        why = textwrap.shorten(str(exc), 200, placeholder=" ...")
        say(f"cannot pull {stack_base}: {why}")
        local = ensure_local_base(engine, on_message=say)
        made = "made here" if local.made else "made earlier"
        note = (
            f"no container registry is reachable (pulling {stack_base} failed): built FROM {local.ref}, "
            f"{made} with debootstrap ({local.os}, Python {local.python})"
        )
        say(note)
        return Fallbacks(base_image=local.ref, base_python=local.python, base_os=local.os, notes=(note,))
    say(f"base {stack_base} (pulled)")
    return Fallbacks()


def offline_request(
    spec: ImageSpec,
    stack: Stack,
    fallbacks: Fallbacks,
    given_links: tuple[Path, ...],
    cpu_only: bool,
    say: Say,
) -> tuple[Fallbacks, Request | None]:
    """The request to resolve again, or None when nothing changes: for a local base made here,
    its Python and OS; when the framework's index does not answer (whatever the base), the
    newest framework version in local wheels (--find-links, else pip's configured find-links),
    built offline from a wheelhouse filled on this host. Raises LockError."""
    from envbuilder.image.offline import configured_find_links, index_unreachable, local_framework_versions
    from envbuilder.resources import cache_dir

    local_base = fallbacks.base_image is not None
    why = index_unreachable(stack.index_url) if stack.index_url else None
    if not local_base and why is None:
        return fallbacks, None
    python = stack.python  # the stack's, kept while the framework version is pinned below
    request = replace(spec.to_request(cpu_only=cpu_only), python=python)
    if local_base:
        assert fallbacks.base_python is not None and fallbacks.base_os is not None
        python = fallbacks.base_python
        request = replace(request, python=python, os=fallbacks.base_os)
    notes = list(fallbacks.notes)
    links: tuple[Path, ...] = ()
    pin = None
    if why is not None:
        links = given_links or configured_find_links()
        versions = [
            v
            for v in local_framework_versions(links, stack.framework, python=python, variant=stack.variant)
            if SpecifierSet(spec.specifier).contains(v, prereleases=True)
        ]
        if not versions:
            where = ", ".join(map(str, links)) or "no find-links folder"
            raise LockError(
                f"the {stack.framework} index is unreachable ({why}) and no local {stack.framework} "
                f"wheel for Python {python} ({stack.variant}) is in {where}",
                hint=f"give --find-links DIR holding a {stack.framework} wheel, or a network that "
                "reaches the index",
            )
        pin = f"=={versions[0].public}"
        request = replace(request, specifier=",".join(s for s in (spec.specifier, pin) if s))
        note = (
            f"the {stack.framework} index is unreachable ({why}): {stack.framework}{pin} from the "
            f"local wheels in {', '.join(map(str, links))}, the rest from PyPI"
        )
        say(note)
        notes.append(note)
    wheelhouse = cache_dir() / "wheelhouse"
    notes.append(f"built offline (--network none) from a wheelhouse filled on this host: {wheelhouse}")
    return replace(
        fallbacks, framework_pin=pin, find_links=links, wheelhouse=wheelhouse, notes=tuple(notes)
    ), request


def resolve_for_base(
    spec: ImageSpec,
    matrix: Matrix,
    resolution: Resolution,
    fallbacks: Fallbacks,
    request: Request | None,
    cpu_only: bool,
    say: Say,
) -> tuple[Matrix, Resolution]:
    """`up`'s resolve step: the spec's first answer (`matrix`, `resolution`), or, when the
    fallbacks changed the request (offline_request), that request resolved. Said: why this
    Python (when the spec named none), and the stack built, with the first answer it replaces
    and why (stack_line). Raises what resolve_spec raises."""
    first = resolution.stack
    if request is not None:
        matrix, resolution = resolve_spec(spec, None, (), (), cpu_only, request=request)
    assert first is not None and resolution.stack is not None  # resolve_spec raises otherwise
    if resolution.python_reason:
        say(resolution.python_reason)
    say(stack_line(resolution.stack, first, fallbacks))
    return matrix, resolution


def stack_line(built: Stack, first: Stack, fallbacks: Fallbacks) -> str:
    """The resolve step's announcement: the stack built, and when a fallback changed the spec's
    first answer, which one it replaces and why (the base's Python and OS, the local framework)."""
    line = f"stack {built.id}, FROM {fallbacks.base_image or built.base_image}"
    if built.id == first.id:
        return line
    why = []
    if fallbacks.base_image is not None:
        why.append(f"the base has Python {fallbacks.base_python} on {fallbacks.base_os}")
    if fallbacks.framework_pin is not None:
        why.append(f"{first.framework}{fallbacks.framework_pin} from local wheels")
    return f"{line} (instead of {first.id}: {', '.join(why) or 'a fallback'})"


def build_for_up(
    spec: ImageSpec,
    spec_path: Path,
    matrix: Matrix,
    resolution: Resolution,
    engine: Engine,
    fallbacks: Fallbacks,
    out: Path,
    no_cache: bool,
    ca_bundle: Path | None = None,
    *,
    on_event: Callable[[BuildEvent], None] | None = None,
    say: Say = lambda _line: None,
) -> BuildOutcome:
    """Plan and build the stack resolved (lock, certificate and report of `out` kept out of the
    build context), with the base and the local wheels of `fallbacks`; when it has a wheelhouse,
    the package lock is made first and its wheels fetched into it (every sha256 as locked), and
    the build runs with no network. `on_event` hears BuildKit's steps. Returns the BuildOutcome.
    Raises what image/build.py run_build raises, and LockError."""
    from envbuilder.engine import BuildSecret
    from envbuilder.image.build import BuildOptions, ensure_package_lock, run_build
    from envbuilder.image.packages import DEFAULT_INDEX, LockSettings
    from envbuilder.image.render import SECRET_CA
    from envbuilder.image.wheelhouse import fill_wheelhouse
    from envbuilder.pipeline.build import plan_spec

    settings = (
        LockSettings(framework_index=DEFAULT_INDEX, find_links=fallbacks.find_links)
        if fallbacks.find_links
        else None
    )
    secrets: tuple[BuildSecret, ...] = ()
    if ca_bundle is not None:  # as build's --ca-bundle: trusted by the lock and by the install steps
        settings = replace(settings or LockSettings(), ca_bundle=ca_bundle)
        secrets = (BuildSecret(id=SECRET_CA, src=ca_bundle),)
    options = BuildOptions(
        base_image=fallbacks.base_image,
        secrets=secrets,
        wheelhouse=fallbacks.wheelhouse,
        lock_settings=settings,
        lock_out=out / "lock.json",
        outputs=(out,),  # its certificate and report, when --out lies in the project
        no_cache=no_cache,
        network="none" if fallbacks.wheelhouse else None,
    )
    plan, options = plan_spec(spec, spec_path, matrix, resolution, options)
    for warning in plan.warnings:
        say(f"warning: {warning}")
    if fallbacks.wheelhouse is not None:
        plan = ensure_package_lock(plan, options, engine, say)
        locked = next(p for p in plan.packages if p.platform == options.platform)
        fetched = fill_wheelhouse(locked, fallbacks.wheelhouse, on_progress=say)
        say(f"{len(fetched)} wheels in {fallbacks.wheelhouse}, every sha256 as locked")

    outcome = run_build(plan, options, engine, on_event=on_event, on_message=say)
    for warning in outcome.warnings[len(plan.warnings) :]:
        say(f"warning: {warning}")
    say(f"built {outcome.image.id[:19]} ({outcome.image.size / 1e6:,.0f} MB), {outcome.tags[0]}")
    return outcome
