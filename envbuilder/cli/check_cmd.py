"""`envbuilder check IMAGE`: the job-start gate (envbuilder/check/), for Slurm prologs and
Kubernetes init containers. Exit 0 PASS, 1 WARN, 2 FAIL; an error that stops the check itself
exits with its family's code (docs/errors.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from envbuilder.check.findings import Finding
from envbuilder.cli import cli
from envbuilder.cli.options import gpu_access_option, trust_options

_MARK = {"pass": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip", "note": "note"}


def render_text(doc: dict[str, object], findings: tuple[Finding, ...]) -> str:
    """The human report: one line per finding (its remedy below a warning or failure), then the verdict."""
    lines = []
    for f in findings:
        where = "" if f.gpu is None else f" [GPU {f.gpu}]"
        lines.append(f"{_MARK[f.status]} {f.check}{where}: {f.message}")
        if f.remedy and f.status in ("warn", "fail"):
            lines.append(f"     remedy: {f.remedy}")
    timings = doc.get("timings")
    total = timings.get("total_s") if isinstance(timings, dict) else None
    lines.append(f"{doc['verdict']}: {doc['reason']} ({total} s)")
    return "\n".join(lines) + "\n"


def _say(line: str) -> None:
    click.echo(line, err=True)


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("image")
@gpu_access_option
@click.option(
    "--xid-window",
    type=click.FloatRange(min=1),
    metavar="SECONDS",
    help="Judge only the Xids the kernel logged in the last SECONDS (default: since boot).",
)
@click.option(
    "--trust-imported",
    is_flag=True,
    help="Accept a certificate `certs import`ed from an unsigned file (as `run` does).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (docs/check.md's schema).")
@trust_options
def check(
    image: str,
    gpu_access: str,
    xid_window: float | None,
    trust_imported: bool,
    as_json: bool,
    key_files: tuple[Path, ...],
    trust_file: Path | None,
    max_age: str | None,
) -> None:
    """Gate a job on this node before it starts: IMAGE's certificate covers this host (as `run`
    checks it: local, imported or the registry's signed attestations), the GPUs are healthy
    (NVML: Xid, ECC, remapped rows, recovery action, throttling, PCIe link, temperature,
    processes already on them), and inside IMAGE each GPU runs CUDA with the framework's
    kernels at the speed the certificate recorded (bf16 GEMM, memory copy, all-reduce with 2+
    GPUs; matrices/thresholds.yaml `check` sets the bands).

    \b
    Exit 0 PASS, 1 WARN, 2 FAIL (each finding with its reason and remedy); other codes: the
    check itself could not run (docs/errors.md). Progress goes to stderr. Target: 30 s; the
    report says so when it nears Slurm's 60 s limit. Recipes: docs/check.md.
    """
    from envbuilder.check import check_image
    from envbuilder.cli.run_cmd import pull_if_missing
    from envbuilder.pipeline.certificates import find_certificates
    from envbuilder.runtime import get as get_runtime

    eng = get_runtime().engine()
    pull_if_missing(image, eng)
    report = check_image(
        image,
        find_certificate=find_certificates(image, key_files, trust_file, max_age, trust_imported, _say),
        gpu_access=gpu_access,
        xid_window_s=xid_window,
        eng=eng,
        say=_say,
    )
    doc = report.to_dict()
    if as_json:
        click.echo(json.dumps(doc, indent=1, sort_keys=True))
    else:
        click.echo(render_text(doc, report.findings), nl=False)
    raise SystemExit(report.exit_code)
