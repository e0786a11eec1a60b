"""The `envbuilder` command: connects the pieces, prints results, maps errors to exit codes.

Each subcommand lives in its own module here and only wires core modules together. Results go
to stdout (so `--json` pipes cleanly); progress and diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

from envbuilder import __version__
from envbuilder.errors import EnvbuilderError, Interrupted

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Turns expected failures into one error line + hint + exit code (traceback only with --debug).

    Subcommands are imported when they are looked up (`_COMMANDS` below), so a command loads only
    what it uses: `resolve` never imports the Docker SDK or Jinja (tests/unit/test_cli_imports.py).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return super().get_command(ctx, cmd_name)
        if cmd_name not in self.commands:
            importlib.import_module(f"envbuilder.cli.{entry.module}")  # registers on `cli`
        command = self.commands[cmd_name]
        command.short_help = entry.summary
        if command.epilog is None:
            command.epilog = f"\b\nExample:\n  {entry.example}"
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table: `envbuilder --help` imports no command module."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, _COMMANDS[name].summary) for name in sorted(_COMMANDS)])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Tab completion of a command name from the table (no command module imported); the
        group's own options as click completes them."""
        from click.shell_completion import CompletionItem

        names = [
            CompletionItem(name, help=_COMMANDS[name].summary)
            for name in sorted(_COMMANDS)
            if name.startswith(incomplete)
        ]
        return names + click.Command.shell_complete(self, ctx, incomplete)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EnvbuilderError as exc:
            _fail(ctx, exc)
        except KeyboardInterrupt as exc:
            _fail(ctx, stopped_error(exc))
        return None


def stopped_error(exc: KeyboardInterrupt) -> Interrupted:
    """The error a stop signal ends a command with: Ctrl-C exit 130, SIGTERM/SIGHUP exit 143
    (envbuilder.lifecycle turns each into a KeyboardInterrupt so the same rollback runs)."""
    from envbuilder.lifecycle import stop_error

    return stop_error(
        exc, hint="nothing was tagged or half-written; its containers and temporary folders were removed"
    )


def _fail(ctx: click.Context, exc: EnvbuilderError) -> None:
    debug = bool(ctx.find_root().params.get("debug"))
    if debug:
        import traceback

        traceback.print_exc()
    from envbuilder.tables import printable  # messages quote stored fields and input: one line each

    click.echo(f"envbuilder: error: {printable(exc.message)}", err=True)
    if exc.log:  # the failed tool's own lines, each kept a line (escaped, indented: none reads as ours)
        click.echo(f"  --- last {len(exc.log)} log lines ---", err=True)
        for line in exc.log:
            click.echo(f"  {printable(line)}", err=True)
    if exc.hint:
        click.echo(f"hint: {printable(exc.hint)}", err=True)
    ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="envbuilder")
@click.option("--debug", is_flag=True, help="Show a traceback for errors.")
def cli(debug: bool) -> None:
    """Resolve, build and certify GPU training containers that are known to work on this machine."""


class _PipeSafe:
    """A text stream whose reader may go away (`envbuilder resolve | head -2`, `build 2>&1 |
    head`): a closed pipe is not an error, so writes after it are dropped and the command
    finishes its work (a build still tags and writes its lock) with its own exit code."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._closed = False

    def write(self, text: str) -> int:
        if not self._closed:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._closed = True
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._closed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _quiet_close(stream: Any) -> None:
    """At exit, Python flushes the real stream once more: point a closed pipe's descriptor at
    /dev/null so that flush cannot fail (the recipe of Python's signal docs, `Note on SIGPIPE`)."""
    if isinstance(stream, _PipeSafe) and stream._closed:
        import os

        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream._stream.fileno())


def main() -> None:
    from envbuilder.lifecycle import install_signal_handlers, stop_signal

    install_signal_handlers()
    sys.stdout = _PipeSafe(sys.stdout)
    sys.stderr = _PipeSafe(sys.stderr)
    try:
        cli.main(prog_name="envbuilder", standalone_mode=True)
    except KeyboardInterrupt as exc:  # raised outside a command (while click parses, or exits)
        sys.exit(128 + stop_signal(exc))
    finally:
        _quiet_close(sys.stdout)
        _quiet_close(sys.stderr)


# Subcommands register themselves on `cli` when their module is imported, which happens the first
# time the command is looked up. One line each: command name -> its module, the summary `envbuilder
# --help` and Tab completion show without importing it (a test checks each against the command),
# and the example its own --help ends with.
class _Entry(NamedTuple):
    module: str
    summary: str
    example: str


_COMMANDS = {
    "init": _Entry(
        "init_cmd",
        "Draft an image spec for the project in this folder.",
        "envbuilder init --schema spec.schema.json",
    ),
    "doctor": _Entry(
        "doctor_cmd", "Check GPUs, driver, Docker and GPU access on this machine.", "envbuilder doctor --json"
    ),
    "resolve": _Entry(
        "resolve_cmd",
        "Pick a driver/GPU/framework/Python-compatible stack.",
        "envbuilder resolve --driver 580.95.05 --gpu 'RTX 4090' --framework 'torch==2.14.*' --explain",
    ),
    "render": _Entry(
        "render_cmd",
        "Write the Dockerfile and build context of a spec.",
        "envbuilder render images/pytorch-train.yaml --out build/ctx",
    ),
    "lock": _Entry(
        "lock_cmd",
        "Pin every Python package to one wheel and its sha256.",
        "envbuilder lock train.yaml --out train.lock.json",
    ),
    "wheelhouse": _Entry(
        "wheelhouse_cmd",
        "Download exactly the locked wheels, for offline builds.",
        "envbuilder wheelhouse train.lock.json wheels",
    ),
    "build": _Entry(
        "build_cmd",
        "Build a spec (or a lock) into a tagged image.",
        "envbuilder build --lock train.lock.json --wheelhouse wheels --network none",
    ),
    "certify": _Entry(
        "certify_cmd",
        "Prove an image on this host's GPUs; keep the certificate.",
        "envbuilder certify envbuilder/pytorch-train:TAG --json",
    ),
    "up": _Entry(
        "up_cmd",
        "The whole job: doctor, resolve, build, certify, report.",
        "envbuilder up images/pytorch-train.yaml",
    ),
    "run": _Entry(
        "run_cmd",
        "Run a command in a certified image, with the GPUs.",
        "envbuilder run envbuilder/pytorch-train:TAG python train.py --epochs 3",
    ),
    "check": _Entry(
        "check_cmd",
        "Gate a job: image certified here, GPUs healthy, figures as certified.",
        "envbuilder check envbuilder/pytorch-train:TAG --json",
    ),
    "report": _Entry(
        "report_cmd",
        "Show a certificate as a table and an HTML page.",
        "envbuilder report 3f2a --html report.html",
    ),
    "certs": _Entry(
        "certs_cmd", "List, show, verify, export and import certificates.", "envbuilder certs list"
    ),
    "keys": _Entry("keys_cmd", "Signing keys and the keys you trust.", "envbuilder keys generate --name ci"),
    "push": _Entry(
        "push_cmd",
        "Push an image, with signed attestations (--attest).",
        "envbuilder push envbuilder/pytorch-train:TAG --to registry.example.com/team/train:1 --attest",
    ),
    "verify": _Entry(
        "verify_cmd",
        "Verify an image's attestations in its registry.",
        "envbuilder verify registry.example.com/team/train:1",
    ),
    "gpu": _Entry(
        "gpu_cmd",
        "Set up this host's GPUs for containers (CDI spec).",
        "envbuilder gpu cdi-spec --out /etc/cdi/nvidia.yaml",
    ),
    "fleet": _Entry(
        "fleet_cmd",
        "Plan, certify and build for a cluster's node classes.",
        "envbuilder fleet plan --scheduler slurm",
    ),
    "export": _Entry(
        "export_cmd",
        "Export an image as an Apptainer SIF or enroot squashfs.",
        "envbuilder export envbuilder/pytorch-train:TAG --sif train.sif",
    ),
    "matrix": _Entry(
        "matrix_cmd",
        "Inspect, check and refresh the compatibility facts.",
        "envbuilder matrix show 'H100 SXM'",
    ),
}
