"""Issue 23 items 13 and 14: each condition of the build lock and the commit journal, pinned
(benchmarks/mutants.py --auto buildlock found them unpinned). Every output of a build is locked,
not the first one; where the shared lock folder is and whom it trusts; two builds creating one lock
file at once; a planted or vanishing lock file named in the error; who holds a lock when its file
says nothing."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_engine import FakeEngine
from test_janitor_scope import _hold, _wait_for

from envbuilder.errors import OutputError
from envbuilder.image import commit as commit_mod
from envbuilder.image.build import outputs_held
from envbuilder.image.commit import output_lock, shared_locks_dir, shared_locks_dir_name


@pytest.mark.parametrize("held", ["second lock file", "second tag"])
def test_every_output_of_a_build_is_locked_not_only_the_first(tmp_path: Path, held: str) -> None:
    """A fleet build writes several lock files and tags: another build holding any one of them
    (here the last in order) makes it wait."""
    first, second = tmp_path / "a.lock.json", tmp_path / "b.lock.json"
    if held == "second lock file":
        holder = _hold(tmp_path / "alice", tmp_path / "held", "team/other:1", second)
    else:
        holder = _hold(tmp_path / "alice", tmp_path / "held", "team/y:1")
    said: list[str] = []
    got: list[str] = []

    def build() -> None:
        with output_lock([first, second], ["team/x:1", "team/y:1"], said.append, daemon="D1"):
            got.append("locked")

    waiting = threading.Thread(target=build, daemon=True)
    try:
        _wait_for(tmp_path / "held", holder)
        waiting.start()
        deadline = time.monotonic() + 30
        while not said and not got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got == [], "the build went ahead while another held one of its outputs"
        (line,) = said
        assert line.endswith(
            "which is writing " + (str(second) if held == "second lock file" else "team/y:1")
        )
    finally:
        holder.kill()
        holder.wait()
    waiting.join(timeout=30)
    assert got == ["locked"]


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
    monkeypatch.setattr(commit_mod.os, "getuid", lambda: 4242)  # a user, not root
    assert shared_locks_dir() == folder


def _opens(monkeypatch: pytest.MonkeyPatch, *, exists_every_time: bool) -> list[int]:
    """os.open as two builds racing for a missing lock file see it: the create finds it made by
    the other (once, or every time: the file keeps being removed between the two opens)."""
    real_open = os.open
    calls: list[int] = []

    def racing(path: Any, flags: int, *args: Any) -> int:
        calls.append(flags)
        if flags & os.O_CREAT and (exists_every_time or len(calls) <= 2):
            if not exists_every_time:
                Path(path).write_text("")  # the other build's file: there to be opened
            raise FileExistsError(17, "File exists", str(path))
        if exists_every_time:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(commit_mod.os, "open", racing)
    return calls


def test_a_lock_file_another_build_creates_first_is_opened_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    shared_locks_dir()
    calls = _opens(monkeypatch, exists_every_time=False)
    with output_lock([], ["team/x:1"], lambda _m: None):
        (lock,) = folder.iterdir()
        assert lock.read_text().startswith("envbuilder ")
    assert len(calls) == 3  # missing, created by the other build, then opened


def test_a_lock_file_that_keeps_disappearing_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    shared_locks_dir()
    calls = _opens(monkeypatch, exists_every_time=True)
    with pytest.raises(OSError, match="keeps disappearing"), output_lock([], ["team/x:1"], lambda _m: None):
        pass
    assert len(calls) == 20  # ten tries, two opens each


@pytest.mark.parametrize("plant", ["symlink", "fifo"])
def test_a_planted_lock_file_is_named_in_the_builds_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str
) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    shared_locks_dir()
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


def test_a_lock_the_file_system_cannot_take_stops_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock folder where flock fails (ENOLCK: an NFS mount without locking) is an error: the
    build never goes ahead unlocked."""
    import errno
    import fcntl

    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "locks"))

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    went_ahead: list[bool] = []
    held = outputs_held([tmp_path / "x.lock.json"], ["team/x:1"], FakeEngine(), lambda _m: None)
    with pytest.raises(OutputError, match="No locks available"), held:
        went_ahead.append(True)
    assert went_ahead == []
