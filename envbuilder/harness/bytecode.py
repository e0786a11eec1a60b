"""Whether the certified framework's Python packages carry compiled bytecode (a `.pyc` for this
interpreter beside each module). Where they do not, every process that imports them compiles them
from source first: each time where bytecode is not written (PYTHONDONTWRITEBYTECODE, as envbuilder
runs the harness; a read-only file system), once per container otherwise. Measured on an H100
machine whose torch venv had none (2026-12-07, benchmarks/results/issue27-h100-2026-12-07-d/):
`import torch` 2.8-3.5 s, torchvision's models (which import Dynamo) 4.1-4.7 s more, per process;
with the bytecode compiled a certification's compile children started 5-7 s sooner. envbuilder's
own images are built with `uv pip install --compile-bytecode` (image/render.py); an image built
otherwise gets a warning. Stdlib only; the packages are found without importing them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Below this share of modules with bytecode a package is warned about.
MOSTLY_COMPILED = 0.5


def package_bytecode(names: Iterable[str], cache_tag: str | None = None) -> dict[str, Any]:
    """{"cache_tag", "packages": {name: {"modules", "compiled"}}} over the installed packages of
    `names` (absent ones are left out): how many of their .py modules have a .pyc for `cache_tag`
    (default: this interpreter's) in their __pycache__."""
    tag = cache_tag or sys.implementation.cache_tag
    packages: dict[str, dict[str, int]] = {}
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        modules = compiled = 0
        for root in spec.submodule_search_locations:
            m, c = _count(root, tag)
            modules, compiled = modules + m, compiled + c
        packages[name] = {"modules": modules, "compiled": compiled}
    return {"cache_tag": tag, "packages": packages}


def _count(root: str, tag: str) -> tuple[int, int]:
    modules = compiled = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        try:
            cached = {p.name for p in (Path(dirpath) / "__pycache__").iterdir()}
        except OSError:
            cached = set()
        for f in files:
            if f.endswith(".py"):
                modules += 1
                compiled += f"{f[:-3]}.{tag}.pyc" in cached
    return modules, compiled


def bytecode_warnings(record: dict[str, Any]) -> list[str]:
    """One line naming every package with fewer than MOSTLY_COMPILED of its modules compiled (none
    when all have enough): one remedy covers them all."""
    short = [
        f"{name} {p['compiled']} of {p['modules']}"
        for name, p in sorted((record.get("packages") or {}).items())
        if p["modules"] and p["compiled"] < MOSTLY_COMPILED * p["modules"]
    ]
    if not short:
        return []
    return [
        f"modules with compiled bytecode for {record.get('cache_tag')}: {', '.join(short)}: every "
        "process that imports them compiles the rest from source first (seconds: 2.8-3.5 s for torch "
        "alone on an H100 machine), each time where bytecode is not written (PYTHONDONTWRITEBYTECODE, "
        "a read-only image), once per container otherwise; install with `uv pip install "
        "--compile-bytecode` or run `python -m compileall` over site-packages in the image"
    ]
