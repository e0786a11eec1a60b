"""`envbuilder run`: check the image's certificate against this host, then run a command in it."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from envbuilder.cli import cli
from envbuilder.cli.options import gpu_access_option
from envbuilder.run.launch import IPC_MODES, RunOptions, run_image


def newest_certificate(image_id: str) -> Mapping[str, Any] | None:
    """The newest stored certificate whose image.id is exactly `image_id`, or None. Raises
    CertificateRefusedError when that certificate's row was tampered with, StoreError."""
    from envbuilder.certify.store import CertStore

    store = CertStore()
    for row in store.list(image=image_id):
        if row.image_id == image_id:
            return store.get(row.id).data
    return None


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("image")
@click.argument("command", nargs=-1, required=True)
@gpu_access_option
@click.option("--force", is_flag=True, help="Run even if the certificate does not cover it (recorded).")
@click.option("--monitor", is_flag=True, help="Sample GPU telemetry meanwhile; write it with a diagnosis.")
@click.option(
    "--monitor-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for telemetry.json and diagnosis.txt (default: DATA/runs/RUN_ID).",
)
@click.option("-v", "--volume", "volumes", multiple=True, metavar="SRC:DST[:ro]", help="Bind mount.")
@click.option("-e", "--env", "env", multiple=True, metavar="K=V", help="Environment variable.")
@click.option("-w", "--workdir", metavar="DIR", help="Working directory inside the container.")
@click.option("--shm-size", metavar="SIZE", help="Shared memory (16g); default half the RAM, max 8g.")
@click.option("--ipc", type=click.Choice(IPC_MODES), help="IPC namespace; host shares the host's /dev/shm.")
@click.option("--network", metavar="NAME", help="Docker network (default: the daemon's default).")
@click.option("-i", "--interactive", is_flag=True, help="Hand stdin to the job (automatic on a terminal).")
@click.option("--tty/--no-tty", default=None, help="Give the job a terminal (default: when on one).")
@click.pass_context
def run(
    ctx: click.Context,
    image: str,
    command: tuple[str, ...],
    gpu_access: str,
    force: bool,
    monitor: bool,
    monitor_dir: Path | None,
    volumes: tuple[str, ...],
    env: tuple[str, ...],
    workdir: str | None,
    shm_size: str | None,
    ipc: str | None,
    network: str | None,
    interactive: bool,
    tty: bool | None,
) -> None:
    """Run COMMAND in IMAGE with GPUs, if its certificate covers this host.

    Write the command after `--`:  envbuilder run IMAGE -- python train.py --epochs 3

    Before starting, the newest certificate for the image's ID must be intact, for this exact
    image, passed, and cover this host's GPUs and driver; otherwise it refuses (exit 12) with the
    reason and what to do, unless --force (recorded in the run log). The job gets shared memory
    and the memlock/stack ulimits training needs; its exit code is passed through; Ctrl-C stops it.
    """
    on_terminal = sys.stdin.isatty()
    outcome = run_image(
        RunOptions(
            image=image,
            command=command,
            gpu_access=gpu_access,
            force=force,
            monitor=monitor,
            monitor_dir=monitor_dir,
            volumes=volumes,
            env=env,
            workdir=workdir,
            shm_size=shm_size,
            ipc=ipc,
            network=network,
            interactive=interactive or on_terminal,
            tty=(on_terminal and sys.stdout.isatty()) if tty is None else tty,
        ),
        find_certificate=newest_certificate,
    )
    ctx.exit(outcome.exit_code)
