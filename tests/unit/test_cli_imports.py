"""Commands import only what they use: `envbuilder resolve` (the command people run most) must not
load the Docker SDK, Jinja, the YAML parser (with a compiled matrix) or the host probes."""

from __future__ import annotations

import json
import subprocess
import sys

import envbuilder.cli as cli_pkg

# What resolve has no use for: Docker stack, templates, HTTP, NVML, YAML (served compiled).
NOT_FOR_RESOLVE = (
    *("docker", "jinja2", "requests", "urllib3", "pynvml", "yaml", "envbuilder.engine"),
    "packaging.requirements",  # a plain NAME+SPECIFIERS is read without it (cli/options.py)
)

_PROBE = """
import json, sys
from envbuilder.cli import cli
for _ in range(2):  # the first run may compile the matrix (and import yaml); the second is a hit
    for name in [m for m in sys.modules if m.split(".")[0] in ("yaml", "_yaml")]:
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
    for name, module in cli_pkg._COMMANDS.items():
        __import__(f"envbuilder.cli.{module}")
        assert name in cli_pkg.cli.commands, (name, module)
    assert set(cli_pkg.cli.commands) == set(cli_pkg._COMMANDS)
