"""One writer per output, and a tag -> lock step that a kill cannot split.

`output_lock` holds an exclusive file lock per output (each lock file's path, and each tag in its
daemon) for a whole build (a `fleet build`: all its targets' outputs): a second build of the same
outputs waits for the first (saying so), and the lock dies with its holder, even by SIGKILL. The
locks live in one folder of the machine (`shared_locks_dir`: ENVBUILDER_LOCK_DIR, else
/tmp/envbuilder-locks, sticky and world-writable like /tmp), not in the data folder: two users of
one Docker daemon, or one user with two data folders, writing the same tag wait for each other
too. A tag is keyed by the daemon's ID, so the same name in two daemons is two outputs. `commit` then makes
tag and lock one step: it writes a journal (the image, the tags' previous images, the lock's text)
before tagging, writes the lock, and drops the journal. A journal left behind (the process was
killed between the first tag and the lock's rename) is finished or undone by `repair` at the next
build (any spec): every tag at the journal's image -> the lock is written; otherwise the tags go
back.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.engine import Engine
from envbuilder.imageref import DIGEST_RE
from envbuilder.lifecycle import owner_alive, owner_mark
from envbuilder.resources import user_data_dir

Notice = Callable[[str], None]
HOLD_ENV = "ENVBUILDER_TEST_HOLD_COMMIT"  # tests only: a file to create, then wait, mid-commit
LOCK_DIR_ENV = "ENVBUILDER_LOCK_DIR"
# A fixed path, not TMPDIR: every user's envbuilder must find the same folder.
SHARED_LOCK_DIR = Path("/tmp/envbuilder-locks")
_SHOWN = 120  # characters of a lock's holder line shown (anyone can write a shared lock file)


def _key(output: str) -> str:
    return hashlib.sha256(output.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _outputs(lock_outs: Sequence[Path], tags: Sequence[str], daemon: str = "") -> list[str]:
    """What a build writes, as lock keys: `file:PATH` (resolved) and `tag:DAEMON/TAG`."""
    files = {f"file:{Path(p).resolve()}" for p in lock_outs}
    return sorted({*files, *(f"tag:{daemon}/{t}" for t in tags)})


def shared_locks_dir_name() -> Path:
    """Where shared_locks_dir is (it is not created here)."""
    return Path(os.environ.get(LOCK_DIR_ENV) or SHARED_LOCK_DIR)


def shared_locks_dir() -> Path:
    """The machine's folder of build locks (ENVBUILDER_LOCK_DIR, else /tmp/envbuilder-locks),
    created sticky and world-writable (mode 1777, as /tmp) so that every user's builds can lock
    there; its parent is never created. Raises OSError when it cannot be made, is not a folder
    (a symlink included), or belongs to another user (not root) without the sticky bit: then
    that user could replace the lock files under everyone else's builds."""
    path = shared_locks_dir_name()
    try:
        path.mkdir(0o700)
    except FileExistsError:
        pass
    else:
        path.chmod(0o1777)  # after mkdir: the umask must not narrow it
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "not a folder (a symlink is refused)", str(path))
    if st.st_uid not in (0, os.getuid()) and not st.st_mode & stat.S_ISVTX:
        raise OSError(errno.EPERM, "owned by another user and not sticky", str(path))
    return path


def _open_lock(path: Path) -> int:
    """A descriptor on the lock file `path` in the shared folder, created 0666 when missing (the
    next user's build opens it too); read-only when another user's file is not writable to us
    (flock works on it all the same). Never follows a symlink; refuses anything but a plain file
    with one link (a hard link planted there could make the holder line overwrite another file)."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(10):  # a file removed between the two opens: try again
        try:
            fd = os.open(path, os.O_RDWR | flags)
        except FileNotFoundError:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o600)
            except FileExistsError:
                continue
            os.fchmod(fd, 0o666)
        except PermissionError:
            fd = os.open(path, os.O_RDONLY | flags)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            raise OSError(errno.EINVAL, "not a plain lock file", str(path))
        return fd
    raise OSError(errno.EAGAIN, "the lock file keeps disappearing", str(path))


def _holder(fd: int) -> str:
    """Who holds a lock, as its file says; printable ASCII only (another user wrote it)."""
    text = os.pread(fd, 200, 0).decode("ascii", "replace").strip()
    return "".join(c if c.isprintable() else "?" for c in text)[:_SHOWN] or "another build"


def _journal_dir() -> Path:
    path = user_data_dir() / "commits"
    path.mkdir(parents=True, exist_ok=True)
    return path


def context_home(lock_out: Path) -> Path:
    """The folder this output's build context is rendered into, the same path every build (held
    by output_lock like the output itself). The Docker CLI keys BuildKit's context transfer by the
    context's path, so a rebuild from the same folder sends and hashes only what changed: from a
    fresh folder each time, a 190 MB wheelhouse was sent and hashed again on every rebuild (about
    7 s of an 8 s rebuild with nothing changed, benchmarks/results/rebuild-2026-12-01.md). The last
    context stays there (the wheelhouse as hard links, the project's `context:` as a copy)."""
    path = user_data_dir() / "contexts" / _key(f"file:{Path(lock_out).resolve()}")
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def output_lock(
    lock_outs: Sequence[Path], tags: Sequence[str], notice: Notice, *, daemon: str = ""
) -> Iterator[None]:
    """Hold the outputs' file locks in the shared folder (in sorted order: two builds never
    deadlock): each lock file path, and each tag in daemon `daemon` (DaemonInfo.id). Waits for
    another holder, whatever its user or data folder, telling `notice` once who it waits for.
    Raises OSError when the lock folder cannot be used (shared_locks_dir)."""
    fds: list[int] = []
    try:
        folder = shared_locks_dir()
        for output in _outputs(lock_outs, tags, daemon):
            fd = _open_lock(folder / f"{_key(output)}.lock")
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                kind, _, shown = output.partition(":")
                shown = shown.removeprefix(f"{daemon}/") if kind == "tag" else shown
                notice(f"waiting for {_holder(fd)}, which is writing {shown}")
                fcntl.flock(fd, fcntl.LOCK_EX)  # a stop signal interrupts the wait
            with contextlib.suppress(OSError):  # read-only: another user's lock file
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"envbuilder {owner_mark()} ({os.getuid()})\n".encode(), 0)
        yield
    finally:
        for fd in reversed(fds):
            os.close(fd)  # closing releases the lock


def _journal_path(lock_out: Path) -> Path:
    return _journal_dir() / f"{_key(str(Path(lock_out).resolve()))}.json"


def _undo(engine: Engine, image_id: str, previous: dict[str, str | None]) -> None:
    """Put each tag back where it was, but only a tag that still names `image_id` (what the
    commit set): one moved since is another build's (another data folder's, which never sees
    this journal), and stays."""
    for tag, old in previous.items():
        now = engine.inspect_image(tag)
        if now is None or now.id != image_id:
            continue
        if old is None:
            engine.remove_image(tag)
        elif old != image_id:
            engine.tag(old, tag)


def commit(engine: Engine, image_id: str, tags: Sequence[str], lock_out: Path, lock_text: str) -> None:
    """Tag `image_id` as every tag and write `lock_text` to `lock_out`, as one step: on any failure
    (Ctrl-C, SIGTERM too) the tags go back and the lock stays as it was; after a SIGKILL `repair`
    finishes or undoes it. Hold `output_lock` around it. Raises OSError (the lock, the journal),
    DockerUnavailableError."""
    previous: dict[str, str | None] = {}
    for t in tags:
        info = engine.inspect_image(t)
        previous[t] = info.id if info is not None else None
    journal = _journal_path(lock_out)
    record = {
        "owner": owner_mark(),
        "image_id": image_id,
        "previous": previous,
        "lock_out": str(Path(lock_out).resolve()),
        "lock_text": lock_text,
    }
    write_text_atomic(journal, json.dumps(record, sort_keys=True))
    try:
        for t in tags:
            engine.tag(image_id, t)
        _hold_for_tests()
        write_text_atomic(Path(lock_out), lock_text)
    except BaseException:
        _undo(engine, image_id, previous)
        journal.unlink(missing_ok=True)
        raise
    journal.unlink(missing_ok=True)


def _hold_for_tests() -> None:
    """With ENVBUILDER_TEST_HOLD_COMMIT=PATH: create PATH and wait (tests kill the build here)."""
    hold = os.environ.get(HOLD_ENV)
    if hold:
        import time

        Path(hold).write_text(str(os.getpid()))
        time.sleep(120)


def _read_journal(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and all(isinstance(doc.get(k), str) for k in ("owner", "image_id", "lock_out"))
    ok = ok and isinstance(doc.get("lock_text"), str) and isinstance(doc.get("previous"), dict)
    return doc if ok and DIGEST_RE.fullmatch(doc["image_id"]) else None


def repair(engine: Engine, notice: Notice) -> list[str]:
    """Finish or undo the commits that a killed build left (their owner is gone); return one line
    per repair. A journal whose owner runs is left alone; an unreadable one is removed."""
    done: list[str] = []
    try:
        journals = sorted(_journal_dir().glob("*.json"))
    except OSError:
        return done
    for path in journals:
        doc = _read_journal(path)
        if doc is None:
            path.unlink(missing_ok=True)
            continue
        if owner_alive(doc["owner"]) is not False:
            continue
        image_id, lock_out = doc["image_id"], Path(doc["lock_out"])
        # commit writes image IDs (or None: the tag was new). Anything else (a damaged or edited
        # journal) names no image: that tag is removed, never re-tagged to whatever it names.
        previous = {
            str(k): (v if isinstance(v, str) and DIGEST_RE.fullmatch(v) else None)
            for k, v in doc["previous"].items()
        }
        tagged = all((info := engine.inspect_image(t)) is not None and info.id == image_id for t in previous)
        if tagged and engine.inspect_image(image_id) is not None:
            write_text_atomic(lock_out, doc["lock_text"])
            line = f"finished a build that was killed mid-commit: {lock_out} now describes {image_id[:19]}"
        else:
            _undo(engine, image_id, previous)
            line = f"undid a build that was killed mid-commit: {', '.join(previous)} put back"
        path.unlink(missing_ok=True)
        notice(line)
        done.append(line)
    return done
