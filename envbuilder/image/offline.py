"""What a build can use when the network it expects is not there: whether an index answers, the
folders of local wheels pip is configured with, and which framework versions lie in them.

`envbuilder up` uses these to fall back (and say so) on a machine that reaches PyPI but not the
framework's own index or any container registry.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

_PIP_CONFIG_LINE = re.compile(r"^[\w:.-]*\.?find-links='(?P<value>[^']*)'$")


def index_unreachable(url: str, *, timeout_s: float = 8.0) -> str | None:
    """None when `url` answers (any HTTP status: it is there), else why not (one line)."""
    req = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"{url}: {reason}"


def configured_find_links(
    environ: Mapping[str, str] | None = None, *, pip_config: str | None = None
) -> tuple[Path, ...]:
    """The local wheel folders pip on this machine is configured with: PIP_FIND_LINKS and the
    `find-links` of pip's configuration files (`pip config list`), existing folders only, in order.
    `pip_config` is that command's output (read here when None)."""
    env = os.environ if environ is None else environ
    values = [*env.get("PIP_FIND_LINKS", "").split()]
    if pip_config is None:
        pip_config = _pip_config_list()
    for line in pip_config.splitlines():
        if m := _PIP_CONFIG_LINE.match(line.strip()):
            values += m.group("value").split()
    out: list[Path] = []
    for value in values:
        path = Path(value.removeprefix("file://"))
        if path.is_dir() and path not in out:
            out.append(path)
    return tuple(out)


def _pip_config_list() -> str:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout if proc.returncode == 0 else ""


def local_framework_versions(
    folders: Iterable[Path], framework: str, *, python: str, variant: str | None
) -> list[Version]:
    """The versions of `framework` whose wheel in `folders` installs on Linux x86_64 CPython
    `python` (X.Y), newest first. A wheel whose local label (`+cpu`, `+cu130`) is not `variant`
    is left out; one without a label is kept."""
    name = canonicalize_name(framework)
    cp = f"cp{python.replace('.', '')}"
    found: set[Version] = set()
    for folder in folders:
        for wheel in folder.glob("*.whl"):
            try:
                dist, version, _build, wheel_tags = parse_wheel_filename(wheel.name)
            except InvalidWheelFilename:
                continue
            if dist != name or (version.local is not None and version.local != variant):
                continue
            if any(_fits(t.interpreter, t.abi, t.platform, cp) for t in wheel_tags):
                found.add(version)
    return sorted(found, reverse=True)


def _fits(interpreter: str, abi: str, platform: str, cp: str) -> bool:
    abi3_ok = abi == "abi3" and interpreter.startswith("cp3") and int(interpreter[3:] or 0) <= int(cp[3:])
    python_ok = interpreter in (cp, "py3") or abi3_ok
    platform_ok = platform == "any" or (
        platform.startswith(("manylinux", "linux")) and platform.endswith("x86_64")
    )
    return python_ok and platform_ok
