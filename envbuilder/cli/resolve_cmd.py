"""`envbuilder resolve`: pick a compatible stack for this (or a given) host and explain the rest."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.cli.options import host_options, request_from_options, request_options
from envbuilder.matrix import load_matrix
from envbuilder.pipeline.resolution import target_host
from envbuilder.platforms import DEFAULT_PLATFORM, Platform
from envbuilder.resolve.model import NoCompatibleStackError, Resolution, Stack


@cli.command()
@request_options
@host_options
@click.option(
    "--wsl",
    is_flag=True,
    help="The host is WSL2: --driver is the Windows driver nvidia-smi prints there (e.g. 577.00), "
    "checked as the Linux driver of the same CUDA. Detected on this machine when nothing is given.",
)
@click.option("--explain", is_flag=True, help="List every rejected candidate and why.")
@click.option("--json", "as_json", is_flag=True, help="Print the resolution as JSON (stable schema).")
@click.option(
    "--lock",
    "lock_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the lock file that `envbuilder build --lock` consumes.",
)
def resolve(
    framework_req: str,
    python: str | None,
    strategy: str | None,
    os_name: str | None,
    flavor: str,
    cpu_only: bool,
    forward_compat: bool,
    driver: str | None,
    gpus: tuple[str, ...],
    ccs: tuple[str, ...],
    platform: Platform | None,
    wsl: bool,
    explain: bool,
    as_json: bool,
    lock_path: Path | None,
) -> None:
    """Resolve a driver-, GPU-, framework- and Python-compatible stack.

    Exit codes: 0 a stack was found; 2 bad input; 3 bad matrix; 4 nothing fits (with --json the
    document, including every rejection, is still printed).
    """
    from envbuilder.resolve.resolver import resolve as resolve_stack

    matrix = load_matrix()
    request = request_from_options(
        framework_req, python, strategy, os_name, flavor, cpu_only, forward_compat, platform
    )
    host = target_host(matrix, driver, gpus, ccs, wsl=wsl)
    resolution = resolve_stack(matrix, request, host)
    from envbuilder.resolve.resolver import installability

    installable = installability(matrix, resolution.stack) if resolution.stack else None
    if as_json:
        doc = resolution.to_dict() | ({"installable": installable} if installable else {})
        click.echo(json.dumps(doc, indent=2, sort_keys=True))
    else:
        _print_human(resolution, explain, installable)
    if resolution.stack is None:
        from envbuilder.resolve.hint import no_stack_hint

        raise NoCompatibleStackError(resolution, no_stack_hint(matrix, resolution))
    if lock_path is not None:
        from envbuilder.image.lock import write_resolution_lock

        write_resolution_lock(lock_path, resolution)
        click.echo(f"wrote {lock_path}", err=True)


def _host_line(resolution: Resolution) -> str:
    host = resolution.host
    gpus = ", ".join(f"{g.name} ({g.cc})" for g in host.gpus) or "no GPU"
    driver = host.driver or "none"
    if host.windows_driver:
        driver = f"{host.windows_driver} (Windows, WSL2; as Linux {host.driver})"
    # linux/amd64 is left unsaid (the lines users know); another platform is named
    platform = resolution.request.platform
    on = f", {platform}" if platform and platform != DEFAULT_PLATFORM else ""
    return f"host: driver {driver}, {gpus}{on} [{host.source}]"


def _print_stack(stack: Stack, indent: str = "  ", installable: str | None = None) -> None:
    rows = [
        ("framework", f"{stack.framework} {stack.version} ({stack.variant})"),
        ("cuda", f"{stack.cuda or '-'}   cudnn {stack.cudnn or '-'}   nccl {stack.nccl or '-'}"),
        ("python", stack.python),
        ("base", f"{stack.base_image} ({stack.strategy})"),
        ("min driver", f"{stack.min_driver or '-'}   NVIDIA_REQUIRE_CUDA {stack.require_cuda or '-'}"),
        ("archs", f"sass {' '.join(stack.sass) or '-'}   ptx {' '.join(stack.ptx) or '-'}"),
        ("install", " ".join(stack.packages) + (f"  (index {stack.index_url})" if stack.index_url else "")),
    ]
    if installable:
        rows.append(("wheels", installable))  # the install set resolves (resolver.installability)
    rows += [("note", n) for n in stack.notes]
    for k, v in rows:
        click.echo(f"{indent}{k:<11}{v}")


def _print_human(resolution: Resolution, explain: bool, installable: str | None = None) -> None:
    click.echo(_host_line(resolution))
    for w in resolution.warnings:
        click.echo(f"warning: {w}", err=True)
    if resolution.stack is not None:
        click.echo(f"\nstack {resolution.stack.id}")
        _print_stack(resolution.stack, installable=installable)
    if resolution.alternatives:
        click.echo("\nalternatives (runners-up)")
        for alt in resolution.alternatives:
            click.echo(f"  {alt.id}   min driver {alt.min_driver or '-'}")
            for note in alt.notes:  # what ranked it below the winner, when a note says so
                click.echo(f"      note: {note}")
    if explain:
        click.echo(f"\nrejected ({len(resolution.rejected)})")
        for r in resolution.rejected:
            click.echo(f"  {r.candidate}\n      {r.component}: {r.reason}")
    elif resolution.rejected:
        components = Counter(r.component for r in resolution.rejected)
        summary = ", ".join(f"{c} {n}" for c, n in components.most_common())
        click.echo(f"\nrejected {len(resolution.rejected)} candidates ({summary}); --explain lists each")
