"""`envbuilder doctor`: print what this machine offers for GPU training, one verdict per check."""

from __future__ import annotations

from dataclasses import replace

import click

from envbuilder.cli import cli
from envbuilder.doctor.checks import DoctorInputs, exit_error, format_report, run_doctor


def _progress(message: str) -> None:
    click.echo(f"doctor: {message}", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as a JSON document.")
@click.option(
    "--python",
    "python",
    type=click.Path(exists=True, dir_okay=False),
    help="The Python whose torch/jax/tensorflow to check (default: the first python3 on PATH "
    "outside envbuilder's own environment).",
)
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, python: str | None) -> None:
    """Check GPUs, driver, Docker, GPU access modes and the frameworks of your Python.

    Exit codes: 0 all checks ok or warn; 5 no NVIDIA GPU or driver; 6 a check failed.
    """
    given = ctx.find_object(DoctorInputs)  # tests hand in fake probes through CliRunner's obj=
    inputs = given if given is not None else DoctorInputs(progress=_progress)
    if python is not None:
        inputs = replace(inputs, python=python)
    report = run_doctor(inputs)
    click.echo(report.to_json() if as_json else format_report(report))
    error = exit_error(report)
    if error is not None:
        raise error
