"""`envbuilder certify IMAGE`: run the harness in the image on this host, store the certificate."""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from envbuilder import frameworks
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.record import StepRecord, items, number
from envbuilder.cli import cli
from envbuilder.cli.options import check_seconds, gpu_access_option, jit_cache_option, runtime_option, say
from envbuilder.errors import CertificationFailedError, NotGpuCertifiedError
from envbuilder.pipeline.certify import keep_certificate
from envbuilder.tables import printable


def key_metric(step: StepRecord) -> str:
    """The one number that says most about a step, for the summary table."""

    def num(key: str) -> float | None:
        return number(step.metric(key))

    if step.name == "host":
        names = sorted({str(g.get("name")) for g in items(step.metric("gpus"))})
        return ", ".join(names) or "no GPU visible"
    if step.name == "multi_gpu":
        return _multi_gpu_metric(num)
    if step.name == "project_smoke":  # the project's own command (certify/smoke.py)
        words = step.metric("command")
        said = shlex.join(str(w) for w in words) if isinstance(words, list) else "?"
        return textwrap.shorten(f"exit {num('exit_code') or 0:.0f}: {said}", 70, placeholder=" ...")
    if (ips := num("images_per_s")) is not None:
        acc = num("val_accuracy")
        return f"{ips:,.0f} img/s" + (f", val acc {acc:.2f}" if acc is not None else "")
    if (fed := num("loader_fed_img_s")) is not None:
        res = num("resident_img_s")
        return f"loader {fed:,.0f} vs resident {res or 0:,.0f} img/s"
    if (batch := num("largest_batch")) is not None:
        return f"largest batch {batch:.0f}"
    if (over := num("overhead")) is not None:
        return f"overhead {over:.2%}"
    for key in ("train", "loss"):
        if (v := num(key)) is not None:
            return f"{key} {v:g}"
    return ""


def _multi_gpu_metric(num: Callable[[str], float | None]) -> str:
    """busbw at the largest all-reduce size and the DDP scaling efficiency."""
    parts = []
    if (bw := num("busbw_at_max_gbs")) is not None:
        size = num("max_bytes") or 0
        at = f" at {size / 2**30:g} GiB" if size >= 2**30 else f" at {size / 2**20:g} MiB" if size else ""
        parts.append(f"busbw {bw:,.1f} GB/s{at}")
    if (eff := num("scaling_efficiency")) is not None:
        parts.append(f"DDP x{num('world_size') or 0:.0f} scaling {eff:.2f}")
    return ", ".join(parts)


def print_summary(cert: Certificate, stored_id: str | None) -> None:
    """Steps table, gates, verdict (stdout); every line `printable` (the fields are the image's)."""

    def echo(line: str) -> None:
        click.echo(printable(line))

    steps = cert.steps
    width = max([len(s.name) for s in steps] + [4])
    echo(f"{'step':<{width}}  {'status':<6} {'seconds':>8}  key metric")
    for s in steps:
        secs = f"{s.seconds:8.1f}" if s.seconds is not None else f"{'-':>8}"
        detail = key_metric(s) if s.status == "pass" else textwrap.shorten(s.reason, 70, placeholder=" ...")
        echo(f"{s.name:<{width}}  {s.status:<6} {secs}  {detail}")
    for g in cert.gates:
        echo(f"gate {g.name}: {g.status} ({g.reason})")
    host, image = cert.host, cert.image
    click.echo("")
    echo(f"image    {image.ref} ({image.id[:19]})")
    echo(f"host     driver {host.driver or 'none'}, GPU access {host.gpu_access}")
    echo(f"verdict  {cert.verdict.upper()}: {cert.verdict_reason}")
    if cert.verdict == "certified-cpu-only":
        echo("         this image is NOT GPU-certified: only the CPU path ran")
    if stored_id:
        echo(f"stored   {stored_id[:12]} (envbuilder certs show {stored_id[:12]})")


@cli.command()
@click.argument("image")
@runtime_option(
    "The container runtime that runs the image (one with an image store: docker; the file runtimes "
    "certify through `fleet certify --runtime`)."
)
@gpu_access_option
@jit_cache_option
@click.option("--quick", is_flag=True, help="Host record and smoke tests only (seconds).")
@click.option(
    "--require-gpu",
    is_flag=True,
    help="Exit 22 when only the CPU path could be certified (certified-cpu-only): for CI.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the certificate JSON on stdout.")
@click.option(
    "--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), help="Also write it here."
)
@click.option("--no-store", is_flag=True, help="Do not keep the certificate in the local store.")
@click.option(
    "--budget-seconds",
    type=float,
    callback=check_seconds,
    help="The harness's time budget (default: its own).",
)
@click.option("--steps", type=click.IntRange(min=8), help="Training steps of the accuracy runs.")
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    callback=check_seconds,
    help="Kill the container after this many seconds.",
)
@click.option(
    "--push", is_flag=True,
    help="Then push IMAGE (REGISTRY/NAME:TAG) with its signed certificates attached (push --attest).",
)  # fmt: skip
@click.option(
    "--sign-key", "key_name", metavar="NAME", help="Signing key for --push (default: the only one)."
)
@click.option(
    "--framework",
    type=click.Choice(frameworks.NAMES),
    help="What to certify for when IMAGE's labels do not say (an image envbuilder did not build).",
)
@click.option(
    "--lock",
    "lock_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Check the image's installed packages against this lock file (drift fails, named).",
)
@click.option(
    "--nonce",
    metavar="HEX",
    hidden=True,  # a fleet job's: the submitting host hands it in and checks the result echoes it
    help="The nonce the harness result must echo (default: a fresh one).",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also print the certificate's warnings as notes, those said once a day too (the memlock "
    "ulimit this Docker daemon refuses).",
)
def certify(
    image: str,
    runtime: str,
    gpu_access: str,
    jit_cache: bool,
    quick: bool,
    require_gpu: bool,
    as_json: bool,
    out_path: Path | None,
    no_store: bool,
    budget_seconds: float | None,
    steps: int | None,
    timeout_s: float | None,
    push: bool,
    key_name: str | None,
    framework: str | None,
    lock_path: Path | None,
    nonce: str | None,
    verbose: bool,
) -> None:
    """Certify IMAGE on this host: smoke tests, training benchmark and telemetry in the container.

    Progress goes to stderr; the summary (or with --json the certificate) to stdout. The
    certificate is stored (see `envbuilder certs`) even when it failed. Exit codes per verdict:
    0 certified; 0 certified-cpu-only (22 with --require-gpu); 11 failed. Others: 5 the asked
    GPU access mode is not available; 7 Docker is unreachable; 2 the image is not found. With
    --push, also those of `envbuilder push`: a failed image is not pushed, and the key is
    checked before certification starts.
    """
    from envbuilder.certify.certify import certify_image

    if push:
        from envbuilder.attest.keys import find_key
        from envbuilder.errors import UsageError
        from envbuilder.registry import parse_reference

        if no_store:
            raise UsageError("--push attaches the stored certificate: drop --no-store")
        parse_reference(image)
        find_key(key_name)  # before the long run, not after it
    from envbuilder.cli.progress_view import task_progress
    from envbuilder.runtime import get as get_runtime

    with task_progress("certify") as view:
        cert = certify_image(
            image,
            runtime=get_runtime(runtime),
            gpu_access=gpu_access,
            quick=quick,
            jit_cache=jit_cache,
            progress=lambda line: view.message(line, indent="", collapse=False),
            budget_s=budget_seconds,
            steps=steps,
            timeout_s=timeout_s,
            framework=framework,
            lock=_read_lock(lock_path),
            nonce=nonce,
        )
        if verbose:
            for warning in cert.run.get("warnings") or ():
                view.say(f"note: {warning}")
    # the file the user named first, then the store (pipeline/certify.py)
    kept = keep_certificate(cert, out_path=out_path, store=not no_store, say=say)
    if as_json:
        click.echo(cert.to_json(indent=2))
    else:
        print_summary(cert, kept.stored_id)
    if kept.error is not None:
        raise kept.error
    if cert.verdict == "failed":
        raise CertificationFailedError(
            f"{image} failed certification: {cert.verdict_reason}",
            hint="see the failing steps above; `envbuilder certs show ID` keeps the whole evidence"
            + ("; nothing was pushed" if push else ""),
        )
    if require_gpu and cert.verdict == "certified-cpu-only":
        raise NotGpuCertifiedError(
            f"--require-gpu: {image} is certified-cpu-only: {cert.verdict_reason}",
            hint="certify on a host with an NVIDIA GPU and a GPU access mode (`envbuilder doctor` "
            "lists them)" + ("; nothing was pushed" if push else ""),
        )
    if push:
        from envbuilder.cli.push_cmd import push_with_progress

        outcome = push_with_progress(image, to=None, attest=True, key_name=key_name)
        new = sum(1 for a in outcome.attached if a.new)
        click.echo(f"pushed {outcome.reference} with {new} new attestation(s)", err=True)


if TYPE_CHECKING:
    from envbuilder.image.lock import LockFile


def _read_lock(path: Path | None) -> LockFile | None:
    """The lock file to check the image against (None: not checked). Raises SpecError."""
    if path is None:
        return None
    from envbuilder.image.lock import read_lock

    return read_lock(path)
