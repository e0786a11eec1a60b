"""`envbuilder run`: check the image's certificate against this host, then run a command in it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.cli.options import gpu_access_option, jit_cache_option, runtime_option, say, trust_options
from envbuilder.engine.interface import Engine
from envbuilder.pipeline.certificates import find_certificates, find_exported_certificates
from envbuilder.run.launch import IPC_MODES, RunOptions, parse_options, run_image


def pull_if_missing(image: str, engine: Engine) -> None:
    """`run REGISTRY/NAME:TAG` on a machine that lacks the image pulls it first (only when the
    reference names a registry: Docker Hub names are pulled with `docker pull` by the user).
    Raises RegistryError, DockerUnavailableError."""
    from envbuilder.errors import UsageError
    from envbuilder.registry import parse_reference

    first, slash, _ = image.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        return
    try:
        parse_reference(image)
    except UsageError:
        return  # run_image says the image is not found
    if engine.inspect_image(image) is None:
        click.echo(f"envbuilder: {image} is not here; pulling it", err=True)
        engine.pull(image)


def _consumed(tok: str, takes_value: dict[str, bool]) -> int:
    """How many words `tok` and its value take when it is one of our options (1 or 2), else 0.
    Short flags may be grouped (`-it`) and a short option's value attached (`-eK=V`), as click
    and docker read them."""
    if tok.startswith("--"):
        name = tok.split("=", 1)[0]
        if name not in takes_value:
            return 0
        return 2 if takes_value[name] and "=" not in tok else 1
    if not tok.startswith("-") or len(tok) < 2:
        return 0
    for j, ch in enumerate(tok[1:], 1):
        if f"-{ch}" not in takes_value:
            return 0
        if takes_value[f"-{ch}"]:
            return 1 if j < len(tok) - 1 else 2
    return 1


class _DockerRunCommand(click.Command):
    """As `docker run`: our options come before IMAGE; everything after IMAGE is the command, its
    options included (`run IMAGE -t python -V` runs `-t python -V`, as docker does: with an
    ENTRYPOINT image those are its arguments). One form of earlier versions is still read:
    options of ours between IMAGE and a `--` (`run IMAGE -v a:b -- cmd`) are ours, when every
    word there is one of ours. No command at all: the image's own CMD."""

    def our_options(self, ctx: click.Context) -> dict[str, bool]:
        """Each option name (short and long) -> whether it takes a value."""
        takes_value: dict[str, bool] = {}
        for p in self.get_params(ctx):
            if isinstance(p, click.Option):
                for name in (*p.opts, *p.secondary_opts):
                    takes_value[name] = not p.is_flag and not p.count
        return takes_value

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = self.our_options(ctx)
        out: list[str] = []
        i = 0
        while i < len(args):
            tok = args[i]
            if tok == "--":
                out += args[i:]
                break
            if tok.startswith("-") and tok != "-":  # before IMAGE: ours (click names an unknown one)
                n = max(1, _consumed(tok, takes_value))
                out += args[i : i + n]
                i += n
                continue
            out.append(tok)  # IMAGE
            rest = args[i + 1 :]
            ours = _options_before_dashes(rest, takes_value)
            if ours or rest[:1] == ["--"]:
                out += rest[:ours]
                rest = rest[ours + 1 :]
            out += ["--", *rest] if rest else []
            break
        return super().parse_args(ctx, out)


def _options_before_dashes(rest: list[str], takes_value: dict[str, bool]) -> int:
    """The older form `IMAGE -v a:b -- cmd`: how many words after IMAGE are our options up to a
    `--` (every one of them ours), else 0 (they are the command's)."""
    if not rest or rest[0] == "--" or not rest[0].startswith("-") or "--" not in rest:
        return 0
    end, j = rest.index("--"), 0
    while j < end:
        n = _consumed(rest[j], takes_value)
        if n == 0 or j + n > end:
            return 0
        j += n
    return end


@cli.command(cls=_DockerRunCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("image")
@click.argument("command", nargs=-1)
@gpu_access_option
@jit_cache_option
@click.option(
    "--gpus",
    metavar="all|N|device=ID,...",
    help="Which GPUs the job gets, in Docker's syntax: all (default), 2 (the first two), "
    "device=0,2 or device=GPU-UUID; the certificate must cover exactly those.",
)
@runtime_option(
    "docker: IMAGE is a Docker image; apptainer / enroot: IMAGE is the SIF / squashfs file "
    "`envbuilder export` wrote (same certificate checks; --nv / enroot's NVIDIA hook for the GPUs)."
)
@click.option("--runtime-path", metavar="PATH", help="The apptainer or enroot binary (default: on PATH).")
@click.option("--force", is_flag=True, help="Run even if the certificate does not cover it (recorded).")
@click.option(
    "--trust-imported",
    is_flag=True,
    help="Accept a certificate `certs import`ed from an unsigned file (its hashes prove integrity, "
    "not who made it); without it such a certificate is refused [imported-unsigned].",
)
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
@click.option(
    "-p",
    "--publish",
    multiple=True,
    metavar="[IP:]HOST:CONTAINER[/PROTO]",
    help="Publish a container port on the host (-p 8888:8888, -p 127.0.0.1:8080:80/tcp).",
)
@click.option(
    "-u",
    "--user",
    metavar="UID[:GID]|NAME",
    help="Run as this user; -u $(id -u):$(id -g) makes what the job writes into a bind mount yours.",
)
@click.option("--name", metavar="NAME", help="The container's name (default: envbuilder-run-RUN_ID).")
@click.option("-i", "--interactive", is_flag=True, help="Hand stdin to the job (automatic on a terminal).")
@click.option("-t", "--tty/--no-tty", default=None, help="Give the job a terminal (default: when on one).")
@click.option(
    "--rm",
    "remove",
    is_flag=True,
    help="Accepted for docker's sake: envbuilder always removes the container when the job ends.",
)
@trust_options
@click.pass_context
def run(
    ctx: click.Context,
    image: str,
    command: tuple[str, ...],
    gpu_access: str,
    jit_cache: bool,
    gpus: str | None,
    runtime: str,
    runtime_path: str | None,
    force: bool,
    trust_imported: bool,
    monitor: bool,
    monitor_dir: Path | None,
    volumes: tuple[str, ...],
    env: tuple[str, ...],
    workdir: str | None,
    shm_size: str | None,
    ipc: str | None,
    network: str | None,
    publish: tuple[str, ...],
    user: str | None,
    name: str | None,
    interactive: bool,
    tty: bool | None,
    remove: bool,
    key_files: tuple[Path, ...],
    trust_file: Path | None,
    max_age: str | None,
) -> None:
    """Run COMMAND in IMAGE with GPUs, if its certificate covers this host.

    As with `docker run`, options come before IMAGE and everything after it is the command
    (its options included); no command runs the image's own CMD:

    \b
    envbuilder run IMAGE python train.py --epochs 3
    envbuilder run -it --gpus device=0 -u $(id -u):$(id -g) -v $PWD:/work -w /work IMAGE bash

    Before starting, a certificate for the image's ID must be intact, for this exact image,
    passed, and cover this host's GPUs and driver; otherwise it refuses (exit 12) with the
    reason and what to do, unless --force (recorded in the run log). A certificate imported
    from an unsigned file counts only with --trust-imported. With no local certificate, the
    signed attestations of the registry IMAGE names are fetched (pulling the image first if it
    is not here; a local tag or ID is never looked up in a registry) and verified against the
    trust policy (--key/--trust, default DATA/trust.yaml, else your own keys); an unsigned,
    untrusted, edited, replayed, expired or future-dated one is refused.
    The job gets shared memory and the memlock/stack ulimits training needs; its exit code is
    passed through; Ctrl-C stops it.

    With --runtime apptainer|enroot (a node without Docker, e.g. under Slurm) IMAGE is the file
    `envbuilder export IMAGE --sif|--sqsh FILE` wrote: its sidecar names the Docker image, whose
    certificates are checked the same way; the file's sha256 must be the exported one.
    """
    from envbuilder.runtime import get as get_runtime

    rt = get_runtime(runtime)
    if rt.runs == "image":
        _note_misplaced_option(ctx, command)
        on_terminal = sys.stdin.isatty()
        options = RunOptions(
            image=image,
            command=command,
            gpu_access=gpu_access,
            jit_cache=jit_cache,
            gpus=gpus,
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
            publish=publish,
            user=user,
            name=name,
        )
        parse_options(options)  # bad options are said before an image is pulled
        pull_if_missing(image, rt.engine())
        find_certificate = find_certificates(image, key_files, trust_file, max_age, trust_imported, say)
        ctx.exit(run_image(options, runtime=rt, find_certificate=find_certificate).exit_code)
    # --runtime apptainer|enroot: IMAGE is the file `export` wrote (run/hpc.py), its certificates
    # found as for the Docker image the file came from
    from envbuilder.run.hpc import HpcRunOptions, run_exported

    _refuse_docker_only(
        {
            "--monitor": monitor,
            "--monitor-dir": monitor_dir,
            "--shm-size": shm_size,
            "--ipc": ipc,
            "--network": network,
            "--interactive": interactive,
            "--tty/--no-tty": tty is not None,
            "--gpus": gpus is not None,
            "--publish": bool(publish),
            "--user": user is not None,
            "--name": name is not None,
        }
    )
    outcome = run_exported(
        HpcRunOptions(
            path=Path(image),
            runtime=runtime,
            command=command,
            gpu_access=gpu_access,
            force=force,
            jit_cache=jit_cache,
            volumes=volumes,
            env=env,
            workdir=workdir,
            tool=runtime_path,
        ),
        find_certificate=find_exported_certificates(key_files, trust_file, max_age, trust_imported, say),
    )
    ctx.exit(outcome.exit_code)


def _note_misplaced_option(ctx: click.Context, command: tuple[str, ...]) -> None:
    """A command that starts with one of our options (`run IMAGE -t python`) is run as written, as
    docker would; say where our options go, in case that was meant."""
    run_cmd = ctx.command
    if command and isinstance(run_cmd, _DockerRunCommand) and _consumed(command[0], run_cmd.our_options(ctx)):
        click.echo(
            f"envbuilder: note: {command[0]!r} after IMAGE is part of the command (as with docker "
            "run); envbuilder's own options go before IMAGE",
            err=True,
        )


def _refuse_docker_only(options: dict[str, object]) -> None:
    """`run --runtime apptainer|enroot` with an option only Docker has (each name -> whether it
    was given). Raises UsageError naming them."""
    from envbuilder.errors import UsageError

    given = [name for name, value in options.items() if value]
    if given:
        raise UsageError(
            f"{', '.join(given)} only apply to --runtime docker",
            hint="drop them, or run the Docker image with --runtime docker",
        )
