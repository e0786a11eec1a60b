"""What the small CPU benchmarks (compile_cache_bench.py, loader_rate_bench.py,
lane_exit_bench.py) share: the machine they ran on, and their result written as
benchmarks/results/STEM-DATE.json (the figures) and .md (the table a reader sees)."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def today() -> str:
    return dt.date.today().isoformat()


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()}


def write(stem: str, doc: dict[str, Any], lines: list[str]) -> None:
    """RESULTS/STEM-DATE.json from doc (its "date") and .md from lines, which are printed too."""
    (RESULTS / f"{stem}-{doc['date']}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (RESULTS / f"{stem}-{doc['date']}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
