"""`envbuilder up SPEC`: the whole job on this machine, doctor -> base -> resolve -> build ->
certify -> report, with progress, ending in one line: the image, its verdict, the report.

Where the network a build expects is missing (no container registry, the framework's own index
unreachable) it falls back to what this machine can make or already has, and says so: a Debian
base made with debootstrap (engine/localbase.py), the framework wheels pip is configured with
(image/offline.py), and an offline build from a wheelhouse filled on the host.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click
from packaging.specifiers import SpecifierSet

from envbuilder.cli import cli
from envbuilder.cli.options import gpu_access_option, resolve_spec, runtime_option
from envbuilder.cli.progress_view import StepProgress
from envbuilder.doctor.checks import DoctorInputs
from envbuilder.errors import CertificationFailedError, LockError, NotGpuCertifiedError, RegistryError

STEPS = ("doctor", "base", "resolve", "build", "certify", "report")
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
CPU_ONLY_NOTE = (
    "this machine has no NVIDIA GPU: the image is certified on the CPU path only "
    "(certified-cpu-only); run `envbuilder up` on a GPU host for the GPU certificate"
)


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


@cli.command()
@click.argument("spec_path", type=_FILE, metavar="SPEC")
@runtime_option("The container runtime that builds and certifies (one with an image store).")
@gpu_access_option
@click.option(
    "--require-gpu",
    is_flag=True,
    help="Fail (exit 22) unless the image gets a GPU certificate (no GPU here, or only the CPU "
    "path certified).",
)
@click.option("--base-image", metavar="REF", help="Build FROM this image instead of the stack's.")
@click.option(
    "--find-links",
    "find_links",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder of local wheels for the framework when its index is unreachable "
    "(default: pip's own find-links, PIP_FIND_LINKS or pip.conf).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the lock, certificate and HTML report go (default: build/NAME).",
)
@click.option(
    "--ca-bundle",
    type=_FILE,
    help="CA bundle trusted for the package indexes, by the lock and in the build (a "
    "TLS-intercepting proxy, a private CA); a BuildKit secret, never in a layer.",
)
@click.option("--quick", is_flag=True, help="Certify with the smoke tests only (seconds).")
@click.option("--no-cache", is_flag=True, help="Build without BuildKit's layer cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON on stdout.")
@click.pass_context
def up(
    ctx: click.Context,
    spec_path: Path,
    runtime: str,
    gpu_access: str,
    require_gpu: bool,
    base_image: str | None,
    find_links: tuple[Path, ...],
    out_dir: Path | None,
    ca_bundle: Path | None,
    quick: bool,
    no_cache: bool,
    as_json: bool,
) -> None:
    """Doctor, base, resolve, build, certify and report SPEC (images/NAME.yaml) on this machine.

    Progress goes to stderr (a live line on a terminal; one line per step with elapsed times,
    at least every 10 s, when piped); the last line on stdout names the image, its verdict and
    the report. Without a GPU, a CPU stack is built and certified `certified-cpu-only`.

    Exit codes: 0 certified, or certified-cpu-only without --require-gpu; 11 certification
    failed; 22 --require-gpu and no GPU certificate; and those of doctor's probes, resolve (4),
    build (7, 8, 9, 10, 20) and certify (5).
    """
    from envbuilder.image.spec import load_spec

    progress = StepProgress(STEPS)
    spec = load_spec(spec_path)
    out = out_dir or Path("build") / spec.name

    with progress.step("doctor"):
        cpu_only = _doctor(progress, ctx.find_object(DoctorInputs))
    if cpu_only and require_gpu:
        raise NotGpuCertifiedError(
            "--require-gpu: this machine has no NVIDIA GPU, so no GPU certificate can be made here",
            hint="run it on a GPU host, or drop --require-gpu for a certified-cpu-only image",
        )

    # The stack's base image decides what this machine can build on: the base step comes first,
    # from the spec's first answer (pure, no output), and the resolve step then names the one
    # stack that is built (issue 26: it named the first answer, replaced after a base fallback).
    from envbuilder.runtime import get as get_runtime

    matrix, resolution = resolve_spec(spec, None, (), (), cpu_only)
    first = resolution.stack
    assert first is not None  # resolve_spec raises otherwise
    rt = get_runtime(runtime)
    engine = rt.engine()
    with progress.step("base"):
        engine.ping()
        fallbacks = _base(engine, first.base_image, base_image, progress)
        # whatever the base (made here, pulled or --base-image), an index that does not answer
        # falls back to local wheels (issue 23 D17: with --base-image it was never asked)
        fallbacks, request = _offline_request(spec, first, fallbacks, find_links, cpu_only, progress)

    with progress.step("resolve"):
        if request is not None:
            matrix, resolution = resolve_spec(spec, None, (), (), cpu_only, request=request)
        assert resolution.stack is not None
        if resolution.python_reason:
            progress.say(resolution.python_reason)
        progress.say(stack_line(resolution.stack, first, fallbacks))

    with progress.step("build"):
        out.mkdir(parents=True, exist_ok=True)
        outcome = _build(
            spec, spec_path, matrix, resolution, engine, fallbacks, out, no_cache, progress, ca_bundle
        )
        image = outcome.tags[0]

    with progress.step("certify"):
        from envbuilder.certify.certify import certify_image
        from envbuilder.certify.store import CertStore, write_atomic

        cert = certify_image(image, gpu_access=gpu_access, quick=quick, progress=progress.say, runtime=rt)
        stored = CertStore().add(cert)
        cert_path = out / "certificate.json"
        write_atomic(cert_path, cert.to_json(indent=2) + "\n")
        progress.say(f"verdict {cert.verdict}: {cert.verdict_reason}")

    with progress.step("report"):
        from envbuilder.report.html import render_html, write_html
        from envbuilder.report.model import build_report

        report_path = write_html(out / "report.html", render_html(build_report(cert)))
        progress.say(f"wrote {report_path}")

    summary: dict[str, Any] = {
        "image": image,
        "image_id": outcome.image.id,
        "verdict": cert.verdict,
        "verdict_reason": cert.verdict_reason,
        "certificate": stored,
        "certificate_file": str(cert_path),
        "report": str(report_path),
        "lock_file": str(outcome.lock_path),
        "stack": resolution.stack.id,  # the one built (after any base fallback)
        "seconds": round(progress.elapsed(), 1),
        "fallbacks": list(fallbacks.notes),
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for note in fallbacks.notes:
            click.echo(f"note: {note}")
        if cert.verdict == "certified-cpu-only":
            click.echo(f"note: {CPU_ONLY_NOTE}")
        took = f"stack {resolution.stack.id}, {progress.elapsed():.0f} s"
        click.echo(f"{image}  {cert.verdict}  {report_path}  ({took})")
    if cert.verdict == "failed":
        raise CertificationFailedError(
            f"{image} failed certification: {cert.verdict_reason}",
            hint=f"see {report_path}; `envbuilder certs show {stored[:12]}` keeps the whole evidence",
        )
    if require_gpu and cert.verdict != "certified":
        raise NotGpuCertifiedError(
            f"--require-gpu: {image} is {cert.verdict}, not GPU-certified",
            hint="check `envbuilder doctor` for the GPU access this host offers (--gpu-access)",
        )


def stack_line(built: Any, first: Any, fallbacks: Fallbacks) -> str:
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


def _doctor(progress: StepProgress, given: DoctorInputs | None) -> bool:
    """Run doctor's checks (the host's own frameworks left out: the image brings its own); True
    when this machine has no GPU (a CPU-only stack, then). Tests hand in fake probes as `given`."""
    from envbuilder.doctor.checks import run_doctor

    inputs = given or DoctorInputs(progress=progress.say, installed=lambda _name: False)
    report = run_doctor(inputs)
    counts = {s: sum(1 for c in report.checks if c.status == s) for s in ("ok", "warn", "fail")}
    progress.say(
        f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail; `envbuilder doctor` shows each"
    )
    for c in report.checks:
        if c.status == "fail":
            progress.say(f"fail {c.name}: {c.detail}")
    gpus = report.host.gpus
    if report.verdict == "no-gpu" or not gpus:
        progress.say("no NVIDIA GPU: a CPU-only stack, certified on the CPU path")
        return True
    names = ", ".join(sorted({g.name for g in gpus}))
    progress.say(f"{len(gpus)} GPU(s): {names}, driver {report.host.driver}")
    return False


def _base(engine: Any, stack_base: str, given: str | None, progress: StepProgress) -> Fallbacks:
    """The base image: the one given, the stack's (local or pulled), else a local one made here.
    A given base is used as a local one is: its Python and OS read from it (docs/up.md)."""
    if given is not None:
        from envbuilder.engine.localbase import probe_base

        if engine.inspect_image(given) is None:
            engine.pull(given)  # RegistryError: neither here nor reachable
        python, os_name = probe_base(engine, given, hint="give --base-image an image with python3 and venv")
        note = f"built FROM {given} (--base-image: {os_name}, Python {python})"
        progress.say(note)
        return Fallbacks(base_image=given, base_python=python, base_os=os_name, notes=(note,))
    if engine.inspect_image(stack_base) is not None:
        progress.say(f"base {stack_base} (local)")
        return Fallbacks()
    try:
        engine.pull(stack_base)
    except RegistryError as exc:
        from envbuilder.engine.localbase import ensure_local_base

        why = textwrap.shorten(str(exc), 200, placeholder=" ...")
        progress.say(f"cannot pull {stack_base}: {why}")
        local = ensure_local_base(engine, on_message=progress.say)
        made = "made here" if local.made else "made earlier"
        note = (
            f"no container registry is reachable (pulling {stack_base} failed): built FROM {local.ref}, "
            f"{made} with debootstrap ({local.os}, Python {local.python})"
        )
        progress.say(note)
        return Fallbacks(base_image=local.ref, base_python=local.python, base_os=local.os, notes=(note,))
    progress.say(f"base {stack_base} (pulled)")
    return Fallbacks()


def _offline_request(
    spec: Any,
    stack: Any,
    fallbacks: Fallbacks,
    given_links: tuple[Path, ...],
    cpu_only: bool,
    progress: StepProgress,
) -> tuple[Fallbacks, Any]:
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
        python, os_name = fallbacks.base_python, fallbacks.base_os
        assert python is not None and os_name is not None
        request = replace(request, python=python, os=os_name)
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
        progress.say(note)
        notes.append(note)
    wheelhouse = cache_dir() / "wheelhouse"
    notes.append(f"built offline (--network none) from a wheelhouse filled on this host: {wheelhouse}")
    return replace(
        fallbacks, framework_pin=pin, find_links=links, wheelhouse=wheelhouse, notes=tuple(notes)
    ), request


def _build(
    spec: Any,
    spec_path: Path,
    matrix: Any,
    resolution: Any,
    engine: Any,
    fallbacks: Fallbacks,
    out: Path,
    no_cache: bool,
    progress: StepProgress,
    ca_bundle: Path | None = None,
) -> Any:
    from envbuilder.engine import BuildSecret
    from envbuilder.image.build import (
        BuildOptions,
        ensure_package_lock,
        for_stack_platform,
        plan_from_spec,
        run_build,
    )
    from envbuilder.image.packages import DEFAULT_INDEX, LockSettings
    from envbuilder.image.render import SECRET_CA
    from envbuilder.image.wheelhouse import fill_wheelhouse

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
    plan = plan_from_spec(spec, resolution, options, spec_path, matrix)
    options = for_stack_platform(options, plan.stack)
    for warning in plan.warnings:
        progress.say(f"warning: {warning}")
    if fallbacks.wheelhouse is not None:
        plan = ensure_package_lock(plan, options, engine, progress.say)
        locked = next(p for p in plan.packages if p.platform == options.platform)
        fetched = fill_wheelhouse(locked, fallbacks.wheelhouse, on_progress=progress.say)
        progress.say(f"{len(fetched)} wheels in {fallbacks.wheelhouse}, every sha256 as locked")

    # "Dockerfile 2/7": BuildKit's numbering, told apart from up's own [k/6] steps
    on_event = progress.build_events()
    try:
        outcome = run_build(plan, options, engine, on_event=on_event, on_message=progress.say)
    finally:
        on_event.finish()
    for warning in outcome.warnings[len(plan.warnings) :]:
        progress.say(f"warning: {warning}")
    progress.say(f"built {outcome.image.id[:19]} ({outcome.image.size / 1e6:,.0f} MB), {outcome.tags[0]}")
    return outcome
