"""One writer per output, and a tag -> lock step that a kill cannot split.

`output_lock` holds an exclusive file lock per output (each lock file's path and each tag) for a
whole build (a `fleet build`: all its targets' outputs): a second build of the same outputs waits
for the first (saying so), and the lock dies with its holder, even by SIGKILL. `commit` then makes
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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.engine import Engine
from envbuilder.lifecycle import owner_alive, owner_mark
from envbuilder.resources import user_data_dir

Notice = Callable[[str], None]
HOLD_ENV = "ENVBUILDER_TEST_HOLD_COMMIT"  # tests only: a file to create, then wait, mid-commit


def _key(output: str) -> str:
    return hashlib.sha256(output.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _outputs(lock_outs: Sequence[Path], tags: Sequence[str]) -> list[str]:
    return sorted({*(f"file:{Path(p).resolve()}" for p in lock_outs), *(f"tag:{t}" for t in tags)})


def _locks_dir() -> Path:
    path = user_data_dir() / "locks"
    path.mkdir(parents=True, exist_ok=True)
    return path


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
def output_lock(lock_outs: Sequence[Path], tags: Sequence[str], notice: Notice) -> Iterator[None]:
    """Hold the outputs' file locks (in sorted order: two builds never deadlock). Waits for
    another holder, telling `notice` once who it waits for. Raises OSError when the lock folder
    cannot be written."""
    fds: list[int] = []
    try:
        for output in _outputs(lock_outs, tags):
            path = _locks_dir() / f"{_key(output)}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another build"
                notice(f"waiting for {holder}, which is writing {output.partition(':')[2]}")
                fcntl.flock(fd, fcntl.LOCK_EX)  # a stop signal interrupts the wait
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"envbuilder {owner_mark()}\n".encode(), 0)
        yield
    finally:
        for fd in reversed(fds):
            os.close(fd)  # closing releases the lock


def _journal_path(lock_out: Path) -> Path:
    return _journal_dir() / f"{_key(str(Path(lock_out).resolve()))}.json"


def _undo(engine: Engine, image_id: str, previous: dict[str, str | None]) -> None:
    for tag, old in previous.items():
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
    return doc if ok else None


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
        previous = {str(k): (v if isinstance(v, str) else None) for k, v in doc["previous"].items()}
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
