"""Crash-safe file writes: whole files replaced atomically, and single-line appends to JSONL logs."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None, exclusive: bool = False) -> None:
    """Write `data` to `path` so that a reader sees the old file or the new one, never half of
    either (temp file in the same folder, fsync, rename). `mode` sets the permissions before any
    byte is written (a private key is never readable by others, not even for a moment);
    `exclusive` never replaces an existing file (FileExistsError). Raises OSError; the old file
    is then untouched and no temp file is left behind."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode is not None:
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


def write_text_atomic(path: Path, text: str) -> None:
    """write_bytes_atomic for UTF-8 text. Raises OSError."""
    write_bytes_atomic(path, text.encode("utf-8"))


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
