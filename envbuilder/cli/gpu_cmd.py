"""`envbuilder gpu ...`: set up this host's GPUs for containers (`cdi-spec`: a CDI spec without the
NVIDIA Container Toolkit)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.host import HostReport, Runner, Which, probe_host, run_command
from envbuilder.host.cdi import build_cdi_spec, require_files, write_cdi_spec
from envbuilder.host.driver_files import find_driver_files


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuInputs:
    """Where `gpu cdi-spec` gets its facts; the defaults read this machine. Tests pass fakes."""

    probe: Callable[[], HostReport] = probe_host
    run: Runner = run_command
    which: Which = shutil.which
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    root: Path = Path("/")
    machine: str | None = None


@cli.group()
def gpu() -> None:
    """Set up this host's GPUs for containers."""


@gpu.command("cdi-spec")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the spec here, atomically (e.g. /etc/cdi/nvidia.yaml; .json writes JSON). "
    "Default: print it to stdout.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON result (path, devices, notes, the spec).")
@click.pass_context
def cdi_spec(ctx: click.Context, out: Path | None, as_json: bool) -> None:
    """Write a CDI spec for this host's GPUs, as `nvidia-ctk cdi generate` does, without the
    NVIDIA Container Toolkit.

    Devices nvidia.com/gpu=0.. (by index), =GPU-<uuid> and =all; every container gets the control
    nodes, the driver's libraries from the ldconfig cache (.so.<driver version>), nvidia-smi and
    its kin, IPC sockets and GSP firmware. Docker 25+ reads specs in /etc/cdi and /var/run/cdi
    with {"features": {"cdi": true}} in daemon.json: then `docker run --device nvidia.com/gpu=all`
    and `envbuilder certify|run --gpu-access cdi` work. Regenerate after a driver update.

    Exit codes: 0 written; 2 the file cannot be written; 5 no NVIDIA driver, GPU or driver library.
    """
    given = ctx.find_object(GpuInputs)  # tests hand in fakes through CliRunner's obj=
    i = given if given is not None else GpuInputs()
    report = i.probe()
    files = require_files(
        find_driver_files(report, run=i.run, which=i.which, env=i.env, root=i.root, machine=i.machine)
    )
    spec = build_cdi_spec(files, root=i.root, machine=i.machine)
    if out is not None:
        write_cdi_spec(spec, out)
    for note in files.notes:
        click.echo(f"envbuilder: note: {note}", err=True)
    if as_json:
        click.echo(json.dumps(spec.summary(str(out) if out else None), indent=2))
    elif out is None:
        click.echo(spec.render(), nl=False)
    else:
        click.echo(
            f"wrote {out}: {len(spec.device_names)} devices ({', '.join(spec.device_names)}), "
            f"{len(spec.doc['containerEdits']['mounts'])} mounts, cdiVersion {spec.doc['cdiVersion']}, "
            f"driver {files.driver}"
        )
