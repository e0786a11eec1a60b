"""The harness's own digest: sha256 over the payload's files (relative path and content, sorted),
byte caches left out. The harness reports it in its result; certify computes it over the copy it
mounted and refuses a result that names another payload (stdlib only: it runs in the image)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def tree_digest(root: str | os.PathLike[str] | None = None) -> str:
    """`sha256:HEX` of the payload folder `root` (default: this package's folder)."""
    base = Path(root) if root is not None else Path(__file__).resolve().parent
    h = hashlib.sha256()
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        files += [Path(dirpath, f) for f in filenames if not f.endswith((".pyc", ".pyo"))]
    for path in sorted(files, key=lambda p: p.relative_to(base).as_posix()):
        rel = path.relative_to(base).as_posix().encode("utf-8", "surrogateescape")
        data = path.read_bytes()
        h.update(b"%d:%s%d:" % (len(rel), rel, len(data)))
        h.update(data)
    return "sha256:" + h.hexdigest()
