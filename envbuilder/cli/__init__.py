"""The `envbuilder` command: connects the pieces, prints results, maps errors to exit codes.

Each subcommand lives in its own module here and only wires core modules together. Results go
to stdout (so `--json` pipes cleanly); progress and diagnostics to stderr.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

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
        if cmd_name in _COMMANDS and cmd_name not in self.commands:
            importlib.import_module(f"envbuilder.cli.{_COMMANDS[cmd_name]}")  # registers on `cli`
        return super().get_command(ctx, cmd_name)

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
# time the command is looked up: command name -> module, one line each (a test checks the table).
_COMMANDS = {
    "matrix": "matrix_cmd",
    "resolve": "resolve_cmd",
    "doctor": "doctor_cmd",
    "render": "render_cmd",
    "build": "build_cmd",
    "lock": "lock_cmd",
    "wheelhouse": "wheelhouse_cmd",
    "certify": "certify_cmd",
    "certs": "certs_cmd",
    "run": "run_cmd",
    "report": "report_cmd",
    "keys": "keys_cmd",
    "push": "push_cmd",
    "verify": "verify_cmd",
    "gpu": "gpu_cmd",
    "up": "up_cmd",
    "fleet": "fleet_cmd",
    "export": "export_cmd",
}
