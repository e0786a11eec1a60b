"""Commands import only what they use: `envbuilder resolve` (the command people run most) must not
load the Docker SDK, Jinja, the YAML parser (with a compiled matrix) or the host probes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import envbuilder.cli as cli_pkg

# What resolve has no use for: Docker stack, templates, HTTP, NVML, YAML (served compiled).
NOT_FOR_RESOLVE = (
    *("docker", "jinja2", "requests", "urllib3", "pynvml", "yaml", "envbuilder.engine"),
    "packaging.requirements",  # a plain NAME+SPECIFIERS is read without it (cli/options.py)
)

_PROBE = """
import json, sys
from envbuilder.cli import cli
for _ in range(2):  # the first run may compile the matrix (and import yaml, and packaging.requirements
    # for the XLA compilers' nvcc pins); the second is a hit
    compiling = [m for m in sys.modules if m.split(".")[0] in ("yaml", "_yaml")]
    for name in [*compiling, *[m for m in sys.modules if m == "packaging.requirements"]]:
        del sys.modules[name]
    import envbuilder.matrix as matrix_pkg
    matrix_pkg._load_default.cache_clear()
    try:
        cli.main(args=["resolve", "--driver", "580.95.05", "--gpu", "NVIDIA H200"], standalone_mode=False)
    except SystemExit:
        pass
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def test_resolve_imports_only_what_it_uses() -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    modules = json.loads(proc.stdout.splitlines()[-1])
    assert "envbuilder.resolve.resolver" in modules  # it did resolve
    loaded = [m for m in modules if any(m == bad or m.startswith(bad + ".") for bad in NOT_FOR_RESOLVE)]
    assert loaded == []


def test_every_command_module_is_in_the_lazy_table() -> None:
    """The name -> module table in cli/__init__.py matches what the modules register."""
    for name, entry in cli_pkg._COMMANDS.items():
        __import__(f"envbuilder.cli.{entry.module}")
        assert name in cli_pkg.cli.commands, (name, entry.module)
    assert set(cli_pkg.cli.commands) == set(cli_pkg._COMMANDS)


def _parse_example(example: str) -> click.Context:
    """Parse an example command line down to its leaf command, as click would run it, without
    invoking anything: unknown options, missing arguments and bad choices raise."""
    args = shlex.split(example)
    assert args[0] == "envbuilder", example
    ctx = cli_pkg.cli.make_context("envbuilder", args[1:])
    command: click.Command = cli_pkg.cli
    while isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        _name, sub, sub_args = command.resolve_command(ctx, rest)
        assert sub is not None, example
        command = sub
        ctx = command.make_context(_name or "", sub_args, parent=ctx)
    return ctx


def test_each_commands_example_parses_and_is_shown_in_its_help(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the input files the examples name, empty: only parsing is checked
    for name, entry in cli_pkg._COMMANDS.items():
        for word in shlex.split(entry.example):
            if word.startswith("/"):  # an output path: never made here
                continue
            if word.endswith((".yaml", ".json")):
                (tmp_path / word).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / word).touch()
            elif word == "wheels":
                (tmp_path / word).mkdir(exist_ok=True)
        _parse_example(entry.example)
        help_text = CliRunner().invoke(cli_pkg.cli, [name, "--help"]).output
        assert "Example:" in help_text and entry.example.split()[1] in help_text, name


def test_top_level_help_lists_every_summary_whole_without_importing_a_command() -> None:
    """`envbuilder --help` reads the table: no command module is imported, no summary cut."""
    probe = (
        "import sys; from envbuilder.cli import cli\n"
        "try:\n    cli.main(args=['--help'])\nexcept SystemExit:\n    pass\n"
        "print([m for m in sys.modules if m.startswith('envbuilder.cli.')])"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines()[-1] == "[]"
    for name, entry in cli_pkg._COMMANDS.items():
        assert f"{name} " in proc.stdout and entry.summary in " ".join(proc.stdout.split()), name
    ctx = cli_pkg.cli.make_context("envbuilder", [], resilient_parsing=True)
    completion = cli_pkg.cli.shell_complete(ctx, "re")
    assert [item.value for item in completion if not item.value.startswith("-")] == [
        "render",
        "report",
        "resolve",
    ]
