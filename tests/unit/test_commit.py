"""image/commit.py: one writer per output (a file lock another process really waits on) and the
tag -> lock commit's journal, finished or undone after its writer was SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_engine import FakeEngine

from envbuilder.engine import ImageInfo
from envbuilder.image import commit as commit_mod
from envbuilder.image.commit import commit, output_lock, repair
from envbuilder.lifecycle import owner_mark
from envbuilder.resources import user_data_dir

NEW = ImageInfo(id="sha256:" + "1" * 64, tags=(), repo_digests=())
OLD = ImageInfo(id="sha256:" + "0" * 64, tags=(), repo_digests=())
HOLDER = """
import sys, time
from pathlib import Path
from envbuilder.image.commit import output_lock
with output_lock([Path(sys.argv[1])], ["me/x:1"], lambda m: print(m, flush=True)):
    Path(sys.argv[2]).write_text("held")
    time.sleep(60)
"""


def fake() -> FakeEngine:
    eng = FakeEngine()
    eng.images.update({NEW.id: NEW, OLD.id: OLD, "me/x:1": OLD})
    return eng


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.05)


def test_a_second_writer_waits_for_the_first_and_a_killed_holder_frees_the_lock(tmp_path: Path) -> None:
    lock_out, held = tmp_path / "x.lock.json", tmp_path / "held"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_out), str(held)], text=True, stdout=subprocess.PIPE
    )
    try:
        _wait_for(held, holder)
        said: list[str] = []
        waiting = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(lock_out), str(tmp_path / "second")],
            text=True,
            stdout=subprocess.PIPE,
        )
        assert waiting.stdout is not None
        line = waiting.stdout.readline()  # printed when it finds the lock held, then it blocks
        assert line.startswith(f"waiting for envbuilder {os.uname().nodename}/{holder.pid}/"), line
        assert f"which is writing {lock_out}" in line
        time.sleep(0.5)
        assert waiting.poll() is None and not (tmp_path / "second").exists()  # it waits
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        _wait_for(tmp_path / "second", waiting)  # the lock died with its holder
        waiting.kill()
        waiting.wait()
        with output_lock([lock_out], ["me/y:1"], said.append):
            pass
        assert said == []
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_commit_tags_and_writes_the_lock_and_leaves_no_journal(tmp_path: Path) -> None:
    eng = fake()
    commit(eng, NEW.id, ["me/x:1", "me/y:1"], tmp_path / "x.lock.json", '{"new": 1}\n')
    assert eng.images["me/x:1"] == NEW and eng.images["me/y:1"] == NEW
    assert (tmp_path / "x.lock.json").read_text() == '{"new": 1}\n'
    assert list((user_data_dir() / "commits").iterdir()) == []


def _killed_journal(tmp_path: Path, eng: FakeEngine, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A commit whose writer died after tagging `me/x:1` (the journal names a dead owner)."""
    lock_out = tmp_path / "x.lock.json"
    lock_out.write_text('{"old": 1}\n')

    def die() -> None:
        raise SystemExit("killed")

    monkeypatch.setattr(commit_mod, "_hold_for_tests", die)
    monkeypatch.setattr(commit_mod, "_undo", lambda *a: None)  # a SIGKILL runs no rollback
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)  # nor the cleanup
    with pytest.raises(SystemExit):
        commit(eng, NEW.id, ["me/x:1", "me/y:1"], lock_out, '{"new": 1}\n')
    monkeypatch.undo()
    (journal,) = (user_data_dir() / "commits").iterdir()
    doc = json.loads(journal.read_text())
    doc["owner"] = owner_mark().rsplit("/", 2)[0] + f"/{2**22 + 12345}/1"  # above pid_max: gone
    journal.write_text(json.dumps(doc))
    return lock_out


def test_a_killed_commit_with_every_tag_done_is_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = fake()
    lock_out = _killed_journal(tmp_path, eng, monkeypatch)
    assert eng.images["me/x:1"] == NEW and lock_out.read_text() == '{"old": 1}\n'  # they disagree
    said: list[str] = []
    (line,) = repair(eng, said.append)
    assert "finished" in line and said == [line]
    assert lock_out.read_text() == '{"new": 1}\n'  # now they agree
    assert list((user_data_dir() / "commits").iterdir()) == []


def test_a_killed_commit_half_tagged_is_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    eng = fake()
    lock_out = _killed_journal(tmp_path, eng, monkeypatch)
    eng.images.pop("me/y:1")  # killed between the two tags
    (line,) = repair(eng, lambda _l: None)
    assert "undid" in line
    assert eng.images["me/x:1"] == OLD and "me/y:1" not in eng.images
    assert lock_out.read_text() == '{"old": 1}\n'


def test_a_live_writers_journal_is_left_alone(tmp_path: Path) -> None:
    journal_dir = user_data_dir() / "commits"
    journal_dir.mkdir(parents=True, exist_ok=True)
    doc = {"owner": owner_mark(), "image_id": NEW.id, "previous": {}, "lock_out": "/x", "lock_text": ""}
    (journal_dir / "live.json").write_text(json.dumps(doc))
    (journal_dir / "junk.json").write_text("{not json")
    assert repair(fake(), lambda _l: None) == []
    assert sorted(p.name for p in journal_dir.iterdir()) == ["live.json"]
    (journal_dir / "live.json").unlink()


@pytest.mark.parametrize("fails", [False, True])
def test_a_journal_removed_during_the_commit_changes_nothing_of_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    """The data folder's `commits/` emptied while a commit runs (a user cleaning up): a commit
    that succeeds still succeeds, one that fails still raises its own failure, tags put back."""
    eng = fake()
    lock_out = tmp_path / "x.lock.json"
    lock_out.write_text('{"old": 1}\n')

    def cleaned() -> None:
        for journal in (user_data_dir() / "commits").iterdir():
            journal.unlink()
        if fails:
            raise KeyboardInterrupt

    monkeypatch.setattr(commit_mod, "_hold_for_tests", cleaned)
    if fails:
        with pytest.raises(KeyboardInterrupt):
            commit(eng, NEW.id, ["me/x:1"], lock_out, '{"new": 1}\n')
        assert eng.images["me/x:1"] == OLD and lock_out.read_text() == '{"old": 1}\n'
    else:
        commit(eng, NEW.id, ["me/x:1"], lock_out, '{"new": 1}\n')
        assert eng.images["me/x:1"] == NEW and lock_out.read_text() == '{"new": 1}\n'
    assert list((user_data_dir() / "commits").iterdir()) == []


def test_a_killed_commit_of_a_relative_lock_path_is_finished_where_it_was_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`envbuilder build --lock-out x.lock.json` killed mid-commit; the next build, started in
    another folder, finishes it in the folder the first one ran in, not in its own."""
    eng = fake()
    monkeypatch.chdir(tmp_path)
    Path("x.lock.json").write_text('{"old": 1}\n')

    def die() -> None:
        raise SystemExit("killed")

    with monkeypatch.context() as killed:
        killed.setattr(commit_mod, "_hold_for_tests", die)
        killed.setattr(commit_mod, "_undo", lambda *a: None)  # a SIGKILL runs no rollback
        killed.setattr(Path, "unlink", lambda self, missing_ok=False: None)  # nor the cleanup
        with pytest.raises(SystemExit):
            commit(eng, NEW.id, ["me/x:1"], Path("x.lock.json"), '{"new": 1}\n')
    (journal,) = (user_data_dir() / "commits").iterdir()
    doc = json.loads(journal.read_text())
    doc["owner"] = owner_mark().rsplit("/", 2)[0] + f"/{2**22 + 12345}/1"  # above pid_max: gone
    journal.write_text(json.dumps(doc))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (line,) = repair(eng, lambda _l: None)
    assert "finished" in line
    assert (tmp_path / "x.lock.json").read_text() == '{"new": 1}\n'
    assert not (elsewhere / "x.lock.json").exists()


def test_the_commits_killed_builds_left_are_repaired_in_one_fixed_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several killed builds (one per lock file): repair reports them in the order of their
    journals' names, the same on every file system, whatever order the folder lists them in."""
    eng = fake()
    outs = [tmp_path / f"{n}.lock.json" for n in "abcdefgh"]

    def die() -> None:
        raise SystemExit("killed")

    for out in outs:
        out.write_text('{"old": 1}\n')
        with monkeypatch.context() as killed:
            killed.setattr(commit_mod, "_hold_for_tests", die)
            killed.setattr(commit_mod, "_undo", lambda *a: None)  # a SIGKILL runs no rollback
            killed.setattr(Path, "unlink", lambda self, missing_ok=False: None)  # nor the cleanup
            with pytest.raises(SystemExit):
                commit(eng, NEW.id, ["me/x:1"], out, '{"new": 1}\n')
    gone = owner_mark().rsplit("/", 2)[0] + f"/{2**22 + 12345}/1"  # above pid_max: gone
    journals = sorted((user_data_dir() / "commits").iterdir())
    assert len(journals) == len(outs)
    for journal in journals:
        doc = json.loads(journal.read_text())
        journal.write_text(json.dumps({**doc, "owner": gone}))
    order = [json.loads(j.read_text())["lock_out"] for j in journals]
    lines = repair(eng, lambda _l: None)
    assert [next(o for o in order if o in line) for line in lines] == order


def test_the_next_build_finishes_a_commit_a_killed_build_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """outputs_held, which every build goes through, repairs first: the killed build's lock file
    is finished and the build says so through its own notices."""
    from envbuilder.image.build import outputs_held

    eng = fake()
    lock_out = _killed_journal(tmp_path, eng, monkeypatch)
    said: list[str] = []
    with outputs_held([lock_out], ["me/x:1"], eng, said.append):
        assert lock_out.read_text() == '{"new": 1}\n'
    assert [s for s in said if "killed mid-commit" in s] == [
        f"finished a build that was killed mid-commit: {lock_out} now describes {NEW.id[:19]}"
    ]
    assert list((user_data_dir() / "commits").iterdir()) == []
