"""The installed set of this Python environment: every distribution, its version, and a digest
of its RECORD (the files its wheel brought, with their hashes), so two images hold the same
packages exactly when their sets are equal. Stdlib only, Python 3.8+: `python installed.py`
prints one JSON document; the harness imports `installed_set`.

The digest leaves out what installers write themselves (INSTALLER, REQUESTED, RECORD,
direct_url.json, uv's cache notes, compiled .pyc files, console scripts outside site-packages,
whose shebang names the environment), so the same wheel gives the same digest whether pip or
uv installed it, and a different wheel (another build of the same version) a different one.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from importlib import metadata
from typing import Any

INSTALLER_FILES = frozenset(
    {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json", "uv_build.json"}
)


def canonical_name(name: str) -> str:
    """PEP 503 normalisation (what `packaging.utils.canonicalize_name` does)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def record_digest(record_text: str) -> str:
    """sha256 over the sorted `path,hash` rows of a RECORD that came from the wheel."""
    rows = []
    for row in csv.reader(record_text.splitlines()):
        if not row or not row[0]:
            continue
        path = row[0].replace("\\", "/")
        parts = path.split("/")
        if path.startswith(("../", "/")) or "__pycache__" in parts or path.endswith(".pyc"):
            continue
        if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in INSTALLER_FILES:
            continue
        rows.append(f"{path},{row[1] if len(row) > 1 else ''}")
    return hashlib.sha256("\n".join(sorted(rows)).encode("utf-8")).hexdigest()


def installed_set() -> list[dict[str, str | None]]:
    """Every distribution on sys.path (the first of a name wins, as imports do), sorted."""
    seen: dict[str, dict[str, str | None]] = {}
    for dist in metadata.distributions():
        raw_name = dist.metadata["Name"]
        if not raw_name:
            continue
        name = canonical_name(str(raw_name))
        if name in seen:
            continue
        record = dist.read_text("RECORD")
        seen[name] = {
            "name": name,
            "version": str(dist.version),
            "record_sha256": record_digest(record) if record is not None else None,
        }
    return [seen[k] for k in sorted(seen)]


def main() -> int:
    doc: dict[str, Any] = {
        "kind": "installed",
        "python": sys.version.split()[0],
        "prefix": sys.prefix,
        "distributions": installed_set(),
    }
    print(json.dumps(doc, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
