"""Issue 23 items 13 and 14: each condition of the build lock and the commit journal, pinned
(benchmarks/mutants.py --auto buildlock found them unpinned). Every output of a build is locked,
not the first one; where the shared lock folder is and whom it trusts; two builds creating one lock
file at once; a planted or vanishing lock file named in the error; who holds a lock when its file
says nothing."""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_engine import FakeEngine
from test_janitor_scope import _hold, _wait_for

from envbuilder.engine import ImageInfo
from envbuilder.errors import OutputError
from envbuilder.image import commit as commit_mod
from envbuilder.image.build import outputs_held
from envbuilder.image.commit import output_lock, repair, shared_locks_dir, shared_locks_dir_name
from envbuilder.lifecycle import owner_mark
from envbuilder.resources import user_data_dir


@pytest.mark.parametrize("held", ["second lock file", "second tag"])
def test_every_output_of_a_build_is_locked_not_only_the_first(tmp_path: Path, held: str) -> None:
    """A fleet build writes several lock files and tags: another build holding any one of them
    (here the last in order) makes it wait."""
    first, second = tmp_path / "a.lock.json", tmp_path / "b.lock.json"
    if held == "second lock file":
        holder = _hold(tmp_path / "alice", tmp_path / "held", "team/other:1", second)
    else:
        holder = _hold(tmp_path / "alice", tmp_path / "held", "team/y:1")
    said, while_held, got = _build_behind(
        holder, tmp_path / "held", [first, second], ["team/x:1", "team/y:1"]
    )
    assert while_held == [], "the build went ahead while another held one of its outputs"
    (line,) = said
    assert line.endswith("which is writing " + (str(second) if held == "second lock file" else "team/y:1"))
    assert got == ["locked"]


def _build_behind(
    holder: subprocess.Popen[str], held: Path, files: list[Path], tags: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """A build of `files` and `tags` (daemon D1) started once `holder` holds one of them: what the
    build said while it waited, what it had got by then, and what it got once the holder was
    killed (the build then goes on)."""
    said: list[str] = []
    got: list[str] = []

    def build() -> None:
        with output_lock(files, tags, said.append, daemon="D1"):
            got.append("locked")

    waiting = threading.Thread(target=build, daemon=True)
    try:
        _wait_for(held, holder)
        waiting.start()
        deadline = time.monotonic() + 30
        while not said and not got and time.monotonic() < deadline:
            time.sleep(0.05)
        while_held = list(got)
    finally:
        holder.kill()
        holder.wait()
    waiting.join(timeout=30)
    return said, while_held, got


def test_the_lock_folder_is_the_machines_unless_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVBUILDER_LOCK_DIR", raising=False)
    assert shared_locks_dir_name() == Path("/tmp/envbuilder-locks")
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", "")
    assert shared_locks_dir_name() == Path("/tmp/envbuilder-locks")
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", "/srv/locks")
    assert shared_locks_dir_name() == Path("/srv/locks")


def test_a_lock_folder_root_owns_is_trusted_by_every_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An administrator's lock folder (root's, not sticky) is used by any user: root can replace
    anything anyway. Another user's non-sticky folder is refused (test_janitor_scope)."""
    if os.getuid() != 0:
        pytest.skip("needs a folder root owns")
    folder = tmp_path / "locks"
    folder.mkdir(0o755)
    folder.chmod(0o755)
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    monkeypatch.setattr(os, "getuid", lambda: 4242)  # a user, not root
    assert shared_locks_dir() == folder


def _shared_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared lock folder, made in tmp_path (ENVBUILDER_LOCK_DIR)."""
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    return shared_locks_dir()


def _before_open(monkeypatch: pytest.MonkeyPatch, hook: Callable[[Any, int], None]) -> None:
    """os.open with `hook(path, flags)` run first: it may raise what the real open would, or
    change the file system as another build would meanwhile."""
    real_open = os.open

    def opened(path: Any, flags: int, *args: Any) -> int:
        hook(path, flags)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", opened)


def _opens(monkeypatch: pytest.MonkeyPatch, *, exists_every_time: bool) -> list[int]:
    """os.open as two builds racing for a missing lock file see it: the create finds it made by
    the other (once, or every time: the file keeps being removed between the two opens)."""
    calls: list[int] = []

    def racing(path: Any, flags: int) -> None:
        calls.append(flags)
        if flags & os.O_CREAT and (exists_every_time or len(calls) <= 2):
            if not exists_every_time:
                Path(path).write_text("")  # the other build's file: there to be opened
            raise FileExistsError(17, "File exists", str(path))
        if exists_every_time:
            raise FileNotFoundError(2, "No such file or directory", str(path))

    _before_open(monkeypatch, racing)
    return calls


def test_a_lock_file_another_build_creates_first_is_opened_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _shared_locks(tmp_path, monkeypatch)
    calls = _opens(monkeypatch, exists_every_time=False)
    with output_lock([], ["team/x:1"], lambda _m: None):
        (lock,) = folder.iterdir()
        assert lock.read_text().startswith("envbuilder ")
    assert len(calls) == 3  # missing, created by the other build, then opened


def test_a_lock_file_another_build_makes_between_the_two_opens_keeps_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other build creates the file right after this one found it missing: the create must
    fail on it (O_EXCL) and this build open it as it is, never re-mode another's file."""
    folder = _shared_locks(tmp_path, monkeypatch)
    first = [True]

    def other_build_first(path: Any, flags: int) -> None:
        if first[0] and not flags & os.O_CREAT:
            first[0] = False
            Path(path).touch(0o600, exist_ok=False)  # the other build (first is False by now)
            Path(path).chmod(0o640)
            raise FileNotFoundError(2, "No such file or directory", str(path))

    _before_open(monkeypatch, other_build_first)
    with output_lock([], ["team/x:1"], lambda _m: None):
        (lock,) = folder.iterdir()
        assert stat.S_IMODE(lock.stat().st_mode) == 0o640


def test_a_lock_file_that_keeps_disappearing_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _shared_locks(tmp_path, monkeypatch)
    calls = _opens(monkeypatch, exists_every_time=True)
    with pytest.raises(OSError, match="keeps disappearing"), output_lock([], ["team/x:1"], lambda _m: None):
        pass
    assert len(calls) == 20  # ten tries, two opens each


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_planted_lock_file_is_named_in_the_builds_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str
) -> None:
    folder = _shared_locks(tmp_path, monkeypatch)
    path = folder / f"{commit_mod._key('tag:FAKE:DAEMON/team/x:1')}.lock"
    if plant == "symlink":
        (tmp_path / "victim").write_text("precious\n")
        path.symlink_to(tmp_path / "victim")
    else:
        os.mkfifo(path)
    with pytest.raises(OutputError) as err, outputs_held([], ["team/x:1"], FakeEngine(), lambda _m: None):
        pass
    assert err.value.message == (
        f"cannot lock the build's outputs in {path}: "
        + ("not a plain lock file" if plant == "fifo" else "Too many levels of symbolic links")
    )


def test_a_lock_folder_that_cannot_be_made_is_named_in_the_builds_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "no" / "locks"))
    with pytest.raises(OutputError) as err, outputs_held([], ["team/x:1"], FakeEngine(), lambda _m: None):
        pass
    assert err.value.message.startswith(f"cannot lock the build's outputs in {tmp_path / 'no' / 'locks'}: ")
    assert "ENVBUILDER_LOCK_DIR" in (err.value.hint or "")


def test_a_lock_whose_file_names_nobody_is_held_by_another_build(tmp_path: Path) -> None:
    """The holder line is written after the lock is taken (and not at all in another user's
    read-only file): an empty one still says who is waited for."""
    path = tmp_path / "x.lock"
    for text in ("", "\n  \n"):
        path.write_text(text)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert commit_mod._holder(fd) == "another build"
        finally:
            os.close(fd)


@pytest.mark.parametrize("fails", ["every time", "the first time"])
def test_a_lock_the_file_system_cannot_take_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: str
) -> None:
    """A lock folder where flock fails (ENOLCK: an NFS mount without locking, or its lock daemon
    briefly away) is an error at once: the build neither goes ahead unlocked nor says it waits
    for a holder that does not exist."""
    import errno
    import fcntl

    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "locks"))
    real_flock = fcntl.flock
    tries: list[int] = []

    def no_locks(fd: int, op: int) -> None:
        tries.append(op)
        if fails == "every time" or len(tries) == 1:
            raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
        real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", no_locks)
    went_ahead: list[bool] = []
    said: list[str] = []
    held = outputs_held([tmp_path / "x.lock.json"], ["team/x:1"], FakeEngine(), said.append)
    with pytest.raises(OutputError) as err, held:
        went_ahead.append(True)
    assert went_ahead == [] and said == [] and len(tries) == 1
    assert err.value.message == f"cannot lock the build's outputs in {tmp_path / 'locks'}: No locks available"


def test_every_lock_is_released_when_the_build_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the build (however it ends) each of its locks can be taken at once by the next."""
    import fcntl

    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    outs = [tmp_path / "a.lock.json", tmp_path / "b.lock.json"]
    for failing in (False, True):
        ending = pytest.raises(RuntimeError) if failing else contextlib.nullcontext()
        with ending, output_lock(outs, ["team/x:1", "team/y:1"], lambda _m: None):
            assert len(list(folder.iterdir())) == 4
            if failing:
                raise RuntimeError("the build failed")
        for lock in folder.iterdir():
            fd = os.open(lock, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if still held
            finally:
                os.close(fd)


# --------------------------------------------------------------------------- the commit journal

ALICE = ImageInfo(id="sha256:ab12cd34ef56" + "0" * 52, tags=(), repo_digests=())
BOB = ImageInfo(id="sha256:ab12cd34ef56" + "1" * 52, tags=(), repo_digests=())  # the same 12 first
PREV = ImageInfo(id="sha256:ab12cd34ef56" + "2" * 52, tags=(), repo_digests=())


def _gone() -> str:
    dead = subprocess.Popen(["true"])
    dead.wait()
    return f"{owner_mark().rsplit('/', 2)[0]}/{dead.pid}/1"


def _journal(lock_out: Path, image: str, previous: dict[str, str | None], **fields: Any) -> Path:
    path = commit_mod._journal_path(lock_out)
    doc = {"owner": _gone(), "image_id": image, "previous": previous, "lock_out": str(lock_out)}
    path.write_text(json.dumps({**doc, "lock_text": '{"new": 1}\n', **fields}))
    return path


def _engine(*refs: tuple[str, ImageInfo]) -> FakeEngine:
    eng = FakeEngine()
    eng.images.update({i.id: i for i in (ALICE, BOB, PREV)})
    eng.images.update(dict(refs))
    return eng


def test_a_tag_moved_to_an_image_sharing_the_id_prefix_is_another_builds(tmp_path: Path) -> None:
    """alice's build was killed after tagging team/x:1; bob's build then moved the tag to his
    image, whose ID starts like hers: the journal is undone (not finished) and bob's tag stays."""
    lock_out = tmp_path / "x.lock.json"
    journal = _journal(lock_out, ALICE.id, {"team/x:1": PREV.id})
    eng = _engine(("team/x:1", BOB))
    (line,) = repair(eng, lambda _m: None)
    assert line.startswith("undid") and not lock_out.exists() and not journal.exists()
    assert eng.images["team/x:1"] == BOB


def test_undoing_puts_back_a_previous_image_sharing_the_id_prefix(tmp_path: Path) -> None:
    lock_out = tmp_path / "x.lock.json"
    _journal(lock_out, ALICE.id, {"team/x:1": PREV.id, "team/y:1": None})
    eng = _engine(("team/x:1", ALICE))  # killed before team/y:1
    (line,) = repair(eng, lambda _m: None)
    assert line.startswith("undid")
    assert eng.images["team/x:1"] == PREV and "team/y:1" not in eng.images


@pytest.mark.parametrize("named", [7, "", "evil/image:latest", PREV.id[:19], PREV.id.upper()])
def test_a_journals_previous_image_that_is_no_image_id_is_undone_as_none(
    tmp_path: Path, named: object
) -> None:
    """Anyone who can write the journal folder could put a number, an empty string or another
    image's name there (commit writes an image ID or null): it names no image this commit saw,
    so the tag the killed commit set is removed, never re-tagged to what it names."""
    lock_out = tmp_path / "x.lock.json"
    _journal(lock_out, ALICE.id, {"team/x:1": named, "team/y:1": None})  # type: ignore[dict-item]
    eng = _engine(("team/x:1", ALICE), ("evil/image:latest", BOB))  # killed before team/y:1
    (line,) = repair(eng, lambda _m: None)
    assert line.startswith("undid")
    assert "team/x:1" not in eng.images and ("remove", "team/x:1") in eng.calls
    assert not any(call[0] == "tag" for call in eng.calls)


def test_the_holder_shown_leaves_out_the_line_end_and_spaces_around_it(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    path.write_bytes(b"  envbuilder build 4242 on host-a \r\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert commit_mod._holder(fd) == "envbuilder build 4242 on host-a"
    finally:
        os.close(fd)


_MALFORMED: dict[str, Any] = {
    "a list": ([],),  # a tuple: the whole document
    "no fields": ({},),
    "owner missing": {"owner": None},
    "owner a number": {"owner": 7},
    "image missing": {"image_id": None},
    "image a number": {"image_id": 7},
    "image no ID": {"image_id": "team/x:1"},
    "image an ID's prefix": {"image_id": ALICE.id[:19]},
    "lock_out missing": {"lock_out": None},
    "lock_out a list": {"lock_out": ["x"]},
    "lock text missing": {"lock_text": None},
    "lock text a number": {"lock_text": 1},
    "previous missing": {"previous": None},
    "previous a list": {"previous": ["team/x:1"]},
}


@pytest.mark.parametrize("case", sorted(_MALFORMED))
def test_a_malformed_journal_is_dropped_and_nothing_else_is_done(tmp_path: Path, case: str) -> None:
    lock_out = tmp_path / "x.lock.json"
    journal = _journal(lock_out, ALICE.id, {"team/x:1": None})
    doc = json.loads(journal.read_text())
    change = _MALFORMED[case]
    if isinstance(change, dict):
        doc.update(change)
        doc = {k: v for k, v in doc.items() if v is not None}
    else:
        (doc,) = change
    journal.write_text(json.dumps(doc))
    eng = _engine(("team/x:1", ALICE))
    assert repair(eng, lambda _m: None) == []
    assert not journal.exists() and not lock_out.exists()
    assert eng.images["team/x:1"] == ALICE and ("remove", "team/x:1") not in eng.calls


def test_every_killed_commit_is_repaired_whatever_sits_before_it(tmp_path: Path) -> None:
    """An unreadable journal and a live build's journal (sorted first) are each skipped alone; an
    unreadable one sorted after the live one is removed itself, not the first journal found."""
    folder = user_data_dir() / "commits"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "!junk.json").write_text("{not json")
    (folder / "$junk.json").write_text("[]")
    live = {"owner": owner_mark(), "image_id": ALICE.id, "previous": {}, "lock_out": "/x", "lock_text": ""}
    (folder / "#live.json").write_text(json.dumps(live))
    outs = [tmp_path / "a.lock.json", tmp_path / "b.lock.json"]
    for out in outs:
        _journal(out, ALICE.id, {"team/x:1": None})
    eng = _engine(("team/x:1", ALICE))
    lines = repair(eng, lambda _m: None)
    assert len(lines) == 2 and all(line.startswith("finished") for line in lines)
    assert all(out.read_text() == '{"new": 1}\n' for out in outs)
    assert sorted(p.name for p in folder.iterdir()) == ["#live.json"]
    (folder / "#live.json").unlink()


@pytest.mark.parametrize("when", ["before it is read", "after the lock is written"])
def test_a_journal_another_build_repaired_meanwhile_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Two builds of one data folder (other outputs, so no shared lock) start at once: both
    repair the same journals; the one that finds a journal gone goes on."""
    lock_out = tmp_path / "x.lock.json"
    journal = _journal(lock_out, ALICE.id, {"team/x:1": None})
    if when == "before it is read":
        real_read = commit_mod._read_journal

        def read(path: Path) -> dict[str, Any] | None:
            path.unlink()  # the other build's repair was quicker
            return real_read(path)

        monkeypatch.setattr(commit_mod, "_read_journal", read)
    else:
        from envbuilder.atomic import write_text_atomic as real_write

        def write(path: Path, text: str) -> None:
            real_write(path, text)
            journal.unlink()  # the other build finished it too, and dropped it first

        monkeypatch.setattr("envbuilder.image.commit.write_text_atomic", write)
    lines = repair(_engine(("team/x:1", ALICE)), lambda _m: None)
    assert not journal.exists()
    assert lines == ([] if when == "before it is read" else [lines[0]])


def test_a_killed_commit_whose_image_is_gone_is_not_finished(tmp_path: Path) -> None:
    """No lock is written for an image that no longer exists (a build without tags whose image
    was pruned meanwhile)."""
    lock_out = tmp_path / "x.lock.json"
    _journal(lock_out, "sha256:" + "9" * 64, {})
    (line,) = repair(_engine(), lambda _m: None)
    assert line.startswith("undid") and not lock_out.exists()


def test_an_untagged_image_a_stopped_container_still_uses_is_removed() -> None:
    """The installed-set check ran a container from the new image: removing the image needs
    force (docker rmi -f), as the daemon refuses it otherwise."""
    from envbuilder.image.build import discard_untagged

    class InUse(FakeEngine):
        def remove_image(self, ref: str, *, force: bool = False) -> bool:
            if not force:
                raise RuntimeError(
                    f"conflict: unable to remove {ref}: image is being used by a stopped container"
                )
            return super().remove_image(ref, force=force)

    eng = InUse()
    eng.images[ALICE.id] = ALICE
    discard_untagged(eng, ALICE.id)
    assert ALICE.id not in eng.images


def test_an_outputs_lock_file_is_named_by_the_first_32_hex_digits_of_its_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every user's envbuilder (every version too) must open the same lock file for the same
    output: its name is the SHA-256 of `file:PATH` or `tag:DAEMON/TAG`, 32 hex digits, `.lock`."""
    import hashlib

    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    out = tmp_path / "x.lock.json"
    with output_lock([out], ["team/x:1"], lambda _m: None, daemon="DAEMON"):
        names = sorted(p.name for p in folder.iterdir())
    expected = sorted(
        hashlib.sha256(key.encode()).hexdigest()[:32] + ".lock"
        for key in (f"file:{out.resolve()}", "tag:DAEMON/team/x:1")
    )
    assert names == expected


def test_the_lock_folder_and_a_lock_file_are_private_until_opened_to_everyone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shared folder is made 0700 and only then made 1777 (sticky), a lock file made 0600
    and only then 0666: until each is safe to share, no other user can plant or open anything
    there (even with a umask of 0). What they end as is what every user's build needs."""
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    seen: list[tuple[str, int]] = []
    real_chmod, real_fchmod = Path.chmod, os.fchmod

    def chmod(self: Path, mode: int, **kw: Any) -> None:
        seen.append(("folder", os.lstat(self).st_mode & 0o7777))
        real_chmod(self, mode, **kw)

    def fchmod(fd: int, mode: int) -> None:
        seen.append(("file", os.fstat(fd).st_mode & 0o7777))
        real_fchmod(fd, mode)

    monkeypatch.setattr(Path, "chmod", chmod)
    monkeypatch.setattr(os, "fchmod", fchmod)
    umask = os.umask(0)
    try:
        with output_lock([], ["team/x:1"], lambda _m: None):
            (lock,) = folder.iterdir()
            assert lock.stat().st_mode & 0o7777 == 0o666
    finally:
        os.umask(umask)
    assert seen == [("folder", 0o700), ("file", 0o600)]
    assert folder.stat().st_mode & 0o7777 == 0o1777


def test_the_holder_shown_is_read_from_the_lock_files_first_200_bytes(tmp_path: Path) -> None:
    """Anyone can write a shared lock file: what the wait notice shows of it comes from its
    first 200 bytes only (stripped, at most 120 characters), never from the rest of a big file."""
    path = tmp_path / "x.lock"
    for pad in (80, 81, 100, 150):
        path.write_bytes(b" " * pad + b"x" * 5000)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert commit_mod._holder(fd) == "x" * min(120, 200 - pad)
        finally:
            os.close(fd)


def test_a_lock_folder_of_ones_own_is_used_sticky_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENVBUILDER_LOCK_DIR naming a private folder of the user's own (0700, not sticky): nobody
    else can replace its lock files, so it is used as it is."""
    folder = tmp_path / "mine"
    folder.mkdir()
    folder.chmod(0o700)
    if os.getuid() == 0:  # as root: the folder of a user, and that user running
        os.chown(folder, 4242, -1)
        monkeypatch.setattr(os, "getuid", lambda: 4242)
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    assert shared_locks_dir() == folder
    assert folder.stat().st_mode & 0o7777 == 0o700  # left as the user made it


def test_a_lock_file_that_keeps_disappearing_is_named_in_the_builds_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _shared_locks(tmp_path, monkeypatch)
    _opens(monkeypatch, exists_every_time=True)
    with pytest.raises(OutputError) as err, outputs_held([], ["team/x:1"], FakeEngine(), lambda _m: None):
        pass
    path = folder / f"{commit_mod._key('tag:FAKE:DAEMON/team/x:1')}.lock"
    assert err.value.message == f"cannot lock the build's outputs in {path}: the lock file keeps disappearing"


def test_a_refused_lock_file_leaves_no_descriptor_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived process (`fleet build`) that meets planted lock files does not run out of
    descriptors: the one opened to check the file is closed before the error."""
    folder = _shared_locks(tmp_path, monkeypatch)
    os.mkfifo(folder / f"{commit_mod._key('tag:D/team/x:1')}.lock")
    before = sorted(Path("/proc/self/fd").iterdir())
    for _ in range(3):
        with (
            pytest.raises(OSError, match="not a plain lock file"),
            output_lock([], ["team/x:1"], lambda _m: None, daemon="D"),
        ):
            pass
    assert sorted(Path("/proc/self/fd").iterdir()) == before


def test_an_outputs_build_context_has_one_folder_of_its_own(tmp_path: Path) -> None:
    """context_home: a folder directly in the data folder's `contexts/`, named by the output's
    key (32 hex digits), made if missing; the same one for the same output, by any path to it."""
    from envbuilder.image.commit import context_home

    out = tmp_path / "a" / "x.lock.json"
    home = context_home(out)
    assert home.is_dir() and home.parent == user_data_dir() / "contexts"
    assert re.fullmatch("[0-9a-f]{32}", home.name)
    assert context_home(tmp_path / "a" / ".." / "a" / "x.lock.json") == home
    assert context_home(tmp_path / "y.lock.json") != home


def test_a_build_waiting_for_another_is_told_once_even_when_letting_go_is_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build holds two outputs; another waits for the first of them. When the holder ends, it
    lets go of its outputs last-taken first: by the time the waiter has the first, the second is
    free too, so the waiter says `waiting for` once, not again for an output nobody writes."""
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "locks"))
    outs = [tmp_path / "a.lock.json", tmp_path / "b.lock.json"]
    entered, release, got = threading.Event(), threading.Event(), threading.Event()
    said: list[str] = []

    def holder() -> None:
        with output_lock(outs, [], lambda _m: None):
            entered.set()
            release.wait(10)

    def waiter() -> None:
        with output_lock(outs, [], said.append):
            got.set()

    first = threading.Thread(target=holder, daemon=True)
    first.start()
    assert entered.wait(10)
    second = threading.Thread(target=waiter, daemon=True)
    second.start()
    deadline = time.monotonic() + 10
    while not said:
        assert time.monotonic() < deadline, "the waiter never said whom it waits for"
        time.sleep(0.01)
    real_close = os.close

    def slow_close(fd: int) -> None:  # a loaded machine: each release takes a while
        real_close(fd)
        time.sleep(0.3)

    monkeypatch.setattr(os, "close", slow_close)
    release.set()
    first.join(10)
    second.join(10)
    assert got.is_set()
    assert len(said) == 1 and said[0].startswith("waiting for envbuilder "), said


def test_another_users_lock_file_we_may_only_read_still_locks_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file another user made and did not open to us: opened read-only (flock works on it
    all the same); writing our name into it fails and is left out, the build goes on."""
    folder = _shared_locks(tmp_path, monkeypatch)
    (output,) = commit_mod._outputs([], ["team/x:1"])
    lock = folder / f"{commit_mod._key(output)}.lock"
    lock.write_text("envbuilder other-host/1/1 (4242)\n")

    def not_writable(path: Any, flags: int) -> None:
        if Path(path) == lock and flags & (os.O_RDWR | os.O_WRONLY):
            raise PermissionError(13, "Permission denied", str(path))  # as a non-root user sees it

    _before_open(monkeypatch, not_writable)
    with output_lock([], ["team/x:1"], lambda _m: None):
        assert list(folder.iterdir()) == [lock]  # the other user's file, not one of our own
    assert lock.read_text() == "envbuilder other-host/1/1 (4242)\n"  # left as the other wrote it


def test_a_data_folder_that_is_no_folder_repairs_nothing_and_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.write_text("a file where the data folder should be")
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(data))
    notices: list[str] = []
    assert repair(FakeEngine(), notices.append) == [] and notices == []


# --------------------------------------------------------------------------- the seventh operator set
# benchmarks/mutants.py --auto buildlock --ops seventh (2026-12-05): errors widened, a prefix stripped.


def test_a_lock_folder_that_cannot_be_made_says_why_not_that_it_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mkdir's own error (a parent we may not write, a read-only file system) is the one told:
    taken for "it exists already", it became "No such file or directory" from the lstat after."""
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "locks"))

    def refused(self: Path, *a: Any, **kw: Any) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refused)
    with pytest.raises(PermissionError):
        shared_locks_dir()


def test_a_lock_file_that_cannot_be_created_says_why_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only "another build created it first" is tried again: a refusal to create it is told as it
    is, not after ten tries as "the lock file keeps disappearing"."""
    real = os.open
    calls: list[int] = []

    def fake(path: Any, flags: int, *a: Any) -> int:
        calls.append(flags)
        if flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied", str(path))
        if len(calls) < 30:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path, flags, *a)

    monkeypatch.setattr(os, "open", fake)  # the os module commit.py calls
    with pytest.raises(PermissionError):
        commit_mod._open_lock(tmp_path / "x.lock")
    assert len(calls) == 2


def test_a_folder_in_a_lock_files_place_is_refused_as_a_folder(tmp_path: Path) -> None:
    (tmp_path / "x.lock").mkdir()
    with pytest.raises(IsADirectoryError):
        commit_mod._open_lock(tmp_path / "x.lock")


def test_a_tag_that_begins_with_characters_of_the_daemon_id_is_shown_whole(tmp_path: Path) -> None:
    """The daemon's part is removed from the shown tag as a prefix, not as a set of characters
    (`D1/1d/app:1` showed `d/app:1`)."""
    holder = _hold(tmp_path / "alice", tmp_path / "held", "1d/app:1")  # the holder's daemon: D1
    said, _, got = _build_behind(holder, tmp_path / "held", [], ["1d/app:1"])
    (line,) = said
    assert line.endswith("which is writing 1d/app:1"), line
    assert got == ["locked"]


def test_a_user_without_a_home_folder_is_told_so_by_repair_not_given_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """HOME unset and no passwd entry for the uid (a container's arbitrary uid): Path.home()
    raises RuntimeError, which reached the user as a traceback from the build's repair (and from
    every use of the data or cache folder); it is a one-line UsageError naming what to set, and
    repair does not take it for "no journals"."""
    import pwd

    from envbuilder.errors import UsageError
    from envbuilder.resources import cache_dir

    for name in ("HOME", "ENVBUILDER_DATA_DIR", "XDG_DATA_HOME", "ENVBUILDER_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)

    def no_entry(uid: int) -> Any:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    for call in (user_data_dir, cache_dir, lambda: repair(FakeEngine(), lambda _m: None)):
        with pytest.raises(UsageError, match="cannot tell this user's home folder") as err:
            call()
        assert "ENVBUILDER_DATA_DIR" in (err.value.hint or "")
