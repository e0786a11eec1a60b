"""`envbuilder run`: check the image's certificate against this host, then run a command in it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from envbuilder.cli import cli
from envbuilder.cli.options import gpu_access_option, trust_options
from envbuilder.run.hpc import RUNTIMES
from envbuilder.run.launch import IPC_MODES, FindCertificate, RunOptions, run_image


def find_certificates(
    image: str,
    key_files: tuple[Path, ...],
    trust_file: Path | None,
    max_age: str | None,
    trust_imported: bool = False,
) -> FindCertificate:
    """Local certificates, else imported ones, else the image's signed attestations (cached,
    else from its registry), verified against the trust policy the options name
    (run/certificates.py)."""
    from envbuilder.attest import choose_policy
    from envbuilder.certify.store import CertStore
    from envbuilder.run.certificates import certificate_finder

    return certificate_finder(
        image,
        store=CertStore(),
        policy=lambda: choose_policy(keys=key_files, trust=trust_file, max_age=max_age),
        say=lambda line: click.echo(line, err=True),
        trust_imported=trust_imported,
    )


def pull_if_missing(image: str) -> None:
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
    from envbuilder.engine import DockerEngine

    engine = DockerEngine()
    if engine.inspect_image(image) is None:
        click.echo(f"envbuilder: {image} is not here; pulling it", err=True)
        engine.pull(image)


class _DockerRunCommand(click.Command):
    """As `docker run`: the command starts at the first word after IMAGE that is not one of our
    options (`envbuilder run IMAGE python -V`); `--` before it is still accepted, and our options
    may still come after IMAGE (`run IMAGE -v a:b -- cmd`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value: dict[str, bool] = {}
        for p in self.get_params(ctx):
            if isinstance(p, click.Option):
                for name in (*p.opts, *p.secondary_opts):
                    takes_value[name] = not p.is_flag and not p.count
        out: list[str] = []
        positionals = 0
        i = 0
        while i < len(args):
            tok = args[i]
            if tok == "--":
                out += args[i:]
                break
            name = tok.split("=", 1)[0]
            if tok.startswith("-") and name in takes_value:
                out.append(tok)
                if takes_value[name] and "=" not in tok and i + 1 < len(args):
                    out.append(args[i + 1])
                    i += 1
            elif positionals == 0:
                out.append(tok)
                positionals = 1
            else:  # the command: everything from here on is its own
                out += ["--", *args[i:]]
                break
            i += 1
        return super().parse_args(ctx, out)


@cli.command(cls=_DockerRunCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("image")
@click.argument("command", nargs=-1, required=True)
@gpu_access_option
@click.option(
    "--runtime",
    type=click.Choice(RUNTIMES),
    default="docker",
    show_default=True,
    help="docker: IMAGE is a Docker image; apptainer / enroot: IMAGE is the SIF / squashfs file "
    "`envbuilder export` wrote (same certificate checks; --nv / enroot's NVIDIA hook for the GPUs).",
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
@click.option("-i", "--interactive", is_flag=True, help="Hand stdin to the job (automatic on a terminal).")
@click.option("--tty/--no-tty", default=None, help="Give the job a terminal (default: when on one).")
@trust_options
@click.pass_context
def run(
    ctx: click.Context,
    image: str,
    command: tuple[str, ...],
    gpu_access: str,
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
    interactive: bool,
    tty: bool | None,
    key_files: tuple[Path, ...],
    trust_file: Path | None,
    max_age: str | None,
) -> None:
    """Run COMMAND in IMAGE with GPUs, if its certificate covers this host.

    Options come before IMAGE; everything after it is the command, as with `docker run`:
    envbuilder run IMAGE python train.py --epochs 3   (`-- python ...` works too)

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
    if runtime != "docker":
        ctx.exit(
            run_with_runtime(
                image,
                command,
                runtime,
                runtime_path,
                gpu_access,
                force,
                volumes,
                env,
                workdir,
                key_files,
                trust_file,
                max_age,
                trust_imported,
                docker_only={
                    "--monitor": monitor,
                    "--monitor-dir": monitor_dir,
                    "--shm-size": shm_size,
                    "--ipc": ipc,
                    "--network": network,
                    "--interactive": interactive,
                    "--tty/--no-tty": tty is not None,
                },
            )
        )
    on_terminal = sys.stdin.isatty()
    pull_if_missing(image)
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
        find_certificate=find_certificates(image, key_files, trust_file, max_age, trust_imported),
    )
    ctx.exit(outcome.exit_code)


def run_with_runtime(
    path: str,
    command: tuple[str, ...],
    runtime: str,
    runtime_path: str | None,
    gpu_access: str,
    force: bool,
    volumes: tuple[str, ...],
    env: tuple[str, ...],
    workdir: str | None,
    key_files: tuple[Path, ...],
    trust_file: Path | None,
    max_age: str | None,
    trust_imported: bool,
    *,
    docker_only: dict[str, object],
) -> int:
    """`run --runtime apptainer|enroot FILE`: run/hpc.py, with the certificates found as for
    the Docker image the file came from. Raises UsageError for an option only Docker has."""
    from envbuilder.engine.hpc import read_exported
    from envbuilder.errors import UsageError
    from envbuilder.run.coverage import image_ref
    from envbuilder.run.hpc import HpcRunOptions, run_exported

    given = [name for name, value in docker_only.items() if value]
    if given:
        raise UsageError(
            f"{', '.join(given)} only apply to --runtime docker",
            hint="drop them, or run the Docker image with --runtime docker",
        )
    exported = read_exported(Path(path), check_hash=False)  # which image; run_exported checks the hash
    outcome = run_exported(
        HpcRunOptions(
            path=Path(path),
            runtime="apptainer" if runtime == "apptainer" else "enroot",
            command=command,
            gpu_access=gpu_access,
            force=force,
            volumes=volumes,
            env=env,
            workdir=workdir,
            tool=runtime_path,
        ),
        find_certificate=find_certificates(
            image_ref(exported.image), key_files, trust_file, max_age, trust_imported
        ),
    )
    return outcome.exit_code
