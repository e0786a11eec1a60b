"""The README is the front door: short, every link leads somewhere, every `make` target it names
exists, and every `envbuilder` command of its examples runs as shown (exit code and output)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from click.testing import CliRunner

from envbuilder.cli import cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 150


def test_every_relative_link_of_the_readme_and_the_docs_exists() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
        assert links or page.name != "README.md"
        missing += [
            (page.name, link) for link in links if "://" not in link and not (page.parent / link).exists()
        ]
    assert missing == []


def test_every_make_target_it_names_exists() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    named = set(re.findall(r"`?make ([a-z-]+)", README))
    assert {"run", "test", "check"} <= named
    assert [t for t in sorted(named) if not re.search(rf"(?m)^{t}:", makefile)] == []


def _console_examples() -> list[tuple[str, list[str]]]:
    """Each `$ envbuilder ...` line of the console blocks, with the lines shown under it."""
    examples: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", README, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                examples.append((line[2:], []))
            elif examples:
                examples[-1][1].append(line)
    return examples


def test_every_console_example_runs_as_shown() -> None:
    examples = _console_examples()
    assert examples
    for command, shown in examples:
        args = shlex.split(command)
        assert args[0] == "envbuilder"
        result = CliRunner().invoke(cli, args[1:])
        said = result.output.splitlines()
        expect_error = any(line.startswith("envbuilder: error:") for line in shown)
        assert (result.exit_code != 0) == expect_error, (command, result.exit_code, result.output)
        for line in shown:
            if line.strip() and line.strip() != "...":
                assert line in said, (command, line, result.output)
