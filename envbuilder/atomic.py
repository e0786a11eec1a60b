"""Crash-safe file writes: whole files replaced atomically, and single-line appends to JSONL logs."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None, exclusive: bool = False) -> bool:
    """Write `data` to `path` so that a reader sees the old file or the new one, never half of
    either (temp file in the same folder, fsync, rename); return whether it replaced a file.

    Permissions are set before any byte is written: `mode` when given (a private key is never
    readable by others, not even for a moment); else a file it replaces keeps its own (a lock at
    0644 stays 0644, a 0600 export stays private) and a new file gets what open() would give
    (0666 less the umask), never the temp file's 0600. `exclusive` never replaces an existing
    file (FileExistsError). Raises OSError; the old file is then untouched and no temp file is
    left behind."""
    path = Path(path)
    try:
        existing: int | None = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        existing = None
    if mode is None:
        mode = existing if existing is not None else default_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            os.link(tmp, path)  # fails when `path` exists, unlike a rename
            Path(tmp).unlink()
        else:
            Path(tmp).replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(tmp).unlink()
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return existing is not None


def write_text_atomic(path: Path, text: str) -> bool:
    """write_bytes_atomic for UTF-8 text; whether it replaced a file. Raises OSError."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def written(path: Path, replaced: bool) -> str:
    """How a command reports an output file: `wrote PATH`, or `replaced PATH` when a file was
    there (its permissions kept), so a replaced file is never replaced silently."""
    return f"{'replaced' if replaced else 'wrote'} {path}"


def default_mode(*, directory: bool = False) -> int:
    """The permissions open() or mkdir() would give a new file or folder: 0666 / 0777 less the
    umask (mkstemp and mkdtemp give 0600 / 0700, which a finished output should not keep)."""
    return (0o777 if directory else 0o666) & ~_umask()


def _umask() -> int:
    """This process's umask, read without changing it where Linux says it (/proc, 4.7+)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)  # elsewhere the only way to read it is to set it
    os.umask(current)
    return current


def append_jsonl(path: Path, record: Mapping[str, Any]) -> None:
    """Append one JSON record as one line, under an exclusive lock, in a single write: concurrent
    writers never interleave and a crash leaves at most a missing line. Raises OSError."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(dict(record), sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock
