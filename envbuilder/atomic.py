"""Crash-safe file writes: whole files replaced atomically, and single-line appends to JSONL logs.

The output policy, one rule for every file envbuilder writes (a lock, an export, a report, a
render's files, a key): envbuilder writes a regular file or a new one, never through or over
anything else. A path that holds a symbolic link (even to a regular file), a FIFO, a device node
(/dev/stdout, /dev/full), a socket or a folder is refused before a byte is written: OutputError
(exit 18, "not envbuilder's to replace"), the path and what is there named, the link or device
untouched. Writing through a link or a device is never what envbuilder does: a command that can
print to stdout does so without a path (`keys export-public` without --out, `--json`), never
through /dev/stdout. A missing parent folder is an OutputError naming it: envbuilder creates no
folder for a file the user named. A new file gets 0666 less the umask, a replaced regular file
keeps its own permissions (read with lstat: never a link's 0777). docs/files.md says it for users."""

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

from envbuilder.errors import OutputError


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None, exclusive: bool = False) -> bool:
    """Write `data` to `path` so that a reader sees the old file or the new one, never half of
    either (temp file in the same folder, fsync, rename); return whether it replaced a file.

    Permissions are set before any byte is written: `mode` when given (a private key is never
    readable by others, not even for a moment); else a file it replaces keeps its own (a lock at
    0644 stays 0644, a 0600 export stays private) and a new file gets what open() would give
    (0666 less the umask), never the temp file's 0600. `exclusive` never replaces an existing
    file (FileExistsError). Raises OSError; the old file is then untouched and no temp file is
    left behind; OutputError (the output policy above: not a regular file, no parent folder)."""
    path = Path(path)
    before = check_output_path(path)
    existing = stat.S_IMODE(before.st_mode) if before is not None else None
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


def check_output_path(path: Path) -> os.stat_result | None:
    """Whether `path` may be written under the output policy (module docstring): the lstat of
    the regular file there, or None where there is nothing yet. Raises OutputError (a symlink,
    FIFO, device, socket or folder at the path; a parent folder that does not exist), OSError
    (the path cannot be examined, e.g. no permission on its folder)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:  # a parent is a file
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(
                f"refusing to write {path}: it is {path_kind(st.st_mode)}, not a file envbuilder may replace",
                hint="give the path of a regular file or a new one (envbuilder never writes through a "
                "link or into a FIFO or device; remove what is there if it is yours)",
                file=str(path),
            )
        return st
    require_parent(path)
    return None


def require_parent(path: Path) -> None:
    """The folder a named output goes into exists: envbuilder creates none for it. Raises
    OutputError naming the missing folder."""
    parent = Path(path).parent
    if not parent.is_dir():
        raise OutputError(
            f"cannot write {path}: the folder {parent} does not exist",
            hint="create the folder first, or choose another path (envbuilder creates no folders for it)",
            file=str(path),
        )


def make_output_dir(path: Path) -> Path:
    """A folder the user named for several outputs (`fleet build --out`, `fleet certify --out`):
    made if missing, but never its parents; a symlink or anything but a folder at the path is
    refused as for a file. Raises OutputError."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:  # a name too long, a folder that cannot be searched, a file as a parent
        raise OutputError(
            f"cannot use the folder {path}: {exc.strerror}",
            hint="give the path of a folder you can write in",
            file=str(path),
        ) from exc
    if st is None:
        require_parent(path)
        try:
            path.mkdir()
        except FileExistsError:  # made meanwhile: judged below
            st = os.lstat(path)
        except OSError as exc:
            raise OutputError(f"cannot make the folder {path}: {exc.strerror}", file=str(path)) from exc
        else:
            return path
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(
            f"refusing to write into {path}: it is {path_kind(st.st_mode)}, not a folder",
            hint="give the path of a folder or a new one (envbuilder never writes through a link)",
            file=str(path),
        )
    return path


def path_kind(mode: int) -> str:
    """What a stat mode names, in words: 'a symbolic link', 'a FIFO', 'a character device'..."""
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def write_text_atomic(path: Path, text: str) -> bool:
    """write_bytes_atomic for UTF-8 text; whether it replaced a file. Raises OSError, OutputError."""
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
