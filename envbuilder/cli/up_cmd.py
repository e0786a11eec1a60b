"""`envbuilder up SPEC`: the whole job on this machine, doctor -> base -> resolve -> build ->
certify -> report, with progress, ending in one line: the image, its verdict, the report.

Where the network a build expects is missing (no container registry, the framework's own index
unreachable) it falls back to what this machine can make or already has, and says so: a Debian
base made with debootstrap (engine/localbase.py), the framework wheels pip is configured with
(image/offline.py), and an offline build from a wheelhouse filled on the host.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from envbuilder.cli import cli
from envbuilder.cli.options import gpu_access_option, runtime_option
from envbuilder.cli.progress_view import StepProgress
from envbuilder.doctor.checks import DoctorInputs
from envbuilder.errors import CertificationFailedError, NotGpuCertifiedError
from envbuilder.pipeline.certify import keep_certificate
from envbuilder.pipeline.resolution import resolve_spec
from envbuilder.pipeline.up import build_for_up, choose_base, offline_request, resolve_for_base

STEPS = ("doctor", "base", "resolve", "build", "certify", "report")
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
CPU_ONLY_NOTE = (
    "this machine has no NVIDIA GPU: the image is certified on the CPU path only "
    "(certified-cpu-only); run `envbuilder up` on a GPU host for the GPU certificate"
)


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
        fallbacks = choose_base(engine, first.base_image, base_image, progress.say)
        # whatever the base (made here, pulled or --base-image), an index that does not answer
        # falls back to local wheels (issue 23 D17: with --base-image it was never asked)
        fallbacks, request = offline_request(spec, first, fallbacks, find_links, cpu_only, progress.say)

    with progress.step("resolve"):
        matrix, resolution = resolve_for_base(
            spec, matrix, resolution, fallbacks, request, cpu_only, progress.say
        )
        assert resolution.stack is not None

    with progress.step("build"):
        out.mkdir(parents=True, exist_ok=True)
        # "Dockerfile 2/7": BuildKit's numbering, told apart from up's own [k/6] steps
        on_event = progress.build_events()
        try:
            outcome = build_for_up(
                spec, spec_path, matrix, resolution, engine, fallbacks, out, no_cache, ca_bundle,
                on_event=on_event, say=progress.say,
            )  # fmt: skip
        finally:
            on_event.finish()
        image = outcome.tags[0]

    with progress.step("certify"):
        from envbuilder.certify.certify import certify_image

        cert = certify_image(image, gpu_access=gpu_access, quick=quick, progress=progress.say, runtime=rt)
        cert_path = out / "certificate.json"
        kept = keep_certificate(cert, out_path=cert_path, store=True)
        if kept.error is not None:
            raise kept.error
        stored = kept.stored_id
        assert stored is not None  # else kept.error
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
