"""Issue 23 item 13: two envbuilder users (two data folders) on one Docker daemon. One user's
janitor never removes or records another's containers, running or orphaned (ownership.DATA_LABEL);
builds that write the same tag, or the same lock file, wait for each other whatever their data
folder (image/commit.py: one lock folder per machine, tags keyed by daemon); a journal's undo
never moves a tag that another data folder's build has moved since. The real daemon:
tests/integration/test_two_data_folders_docker.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from fake_engine import FakeEngine
from test_orphaned_runs import RECORD, _Client, _Container

from envbuilder.engine import DockerEngine, ImageInfo
from envbuilder.engine.ownership import (
    DATA_LABEL,
    OWNER_LABEL,
    OwnedContainer,
    data_mark,
    leftovers,
    owner_labels,
    record_labels,
)
from envbuilder.image import commit as commit_mod
from envbuilder.image.build import outputs_held
from envbuilder.image.commit import output_lock, repair, shared_locks_dir
from envbuilder.lifecycle import owner_mark

MINE = "0" * 64
NEW = ImageInfo(id="sha256:" + "1" * 64, tags=(), repo_digests=())
THEIRS = ImageInfo(id="sha256:" + "2" * 64, tags=(), repo_digests=())


def _gone_mark() -> str:
    dead = subprocess.Popen(["true"])
    dead.wait()
    return f"{owner_mark().rsplit('/', 2)[0]}/{dead.pid}/1"  # this host, a process that is gone


# --------------------------------------------------------------------------- the data folder's mark


def test_a_data_folder_is_known_by_its_resolved_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "alice", tmp_path / "bob"
    a.mkdir()
    (tmp_path / "link").symlink_to(a)
    assert data_mark(a) == data_mark(tmp_path / "link") == data_mark(tmp_path / "alice" / ".." / "alice")
    assert data_mark(a) != data_mark(b)
    assert len(data_mark(a)) == 16 and int(data_mark(a), 16) >= 0
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(b))
    assert data_mark() == data_mark(b)
    assert owner_labels("run")[DATA_LABEL] == data_mark(b)
    assert owner_labels("run", {DATA_LABEL: "forged"})[DATA_LABEL] == data_mark(b)  # ours wins


def test_the_janitor_picks_only_this_data_folders_containers() -> None:
    def box(cid: str, **labels: str) -> OwnedContainer:
        return OwnedContainer(id=cid, name=f"envbuilder-run-{cid}", status="running", labels=labels)

    mine, theirs = data_mark(), "f" * 16
    boxes = [
        box("mine", **{OWNER_LABEL: "gone", DATA_LABEL: mine}),
        box("theirs", **{OWNER_LABEL: "gone", DATA_LABEL: theirs}),
        box("legacy", **{OWNER_LABEL: "gone"}),  # made before containers carried the mark
        box("empty", **{OWNER_LABEL: "gone", DATA_LABEL: ""}),
        box("prefix", **{OWNER_LABEL: "gone", DATA_LABEL: mine[:8]}),
        box("live", **{OWNER_LABEL: "live", DATA_LABEL: mine}),
    ]
    alive = {"gone": False, "live": True}.get
    assert [c.id for c in leftovers(boxes, alive=lambda m: alive(m))] == ["mine"]
    assert [c.id for c in leftovers(boxes, alive=lambda m: alive(m), data=theirs)] == ["theirs"]


def test_another_data_folders_orphan_is_neither_removed_nor_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    gone = _gone_mark()
    alice_log, bob_log = alice / "runs.jsonl", bob / "runs.jsonl"
    client = _Client(
        [
            _Container(
                {OWNER_LABEL: gone, DATA_LABEL: data_mark(alice), **record_labels(alice_log, RECORD)},
                "running",
                "a" * 64,
            ),
            _Container(
                {OWNER_LABEL: gone, DATA_LABEL: data_mark(bob), **record_labels(bob_log, RECORD)},
                "exited",
                "b" * 64,
            ),
        ]
    )
    notices: list[str] = []
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(bob))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its temp-folder sweep: not the real /tmp
    engine = DockerEngine(janitor=False, notice=notices.append)
    engine._docker = client
    assert engine.sweep_leftovers() == ("envbuilder-run-b",)
    assert client.removed == ["b" * 64]  # alice's running job is not bob's to stop
    assert not alice_log.exists()  # nor to record
    (line,) = [json.loads(x) for x in bob_log.read_text().splitlines()]
    assert line["outcome"] == "orphaned" and line["exit_code"] == 0
    assert not any("a" * 12 in n for n in notices)
    # The daemon is asked for this folder's containers only (the filter), and the answer is
    # checked again (above: the fake client ignores the filter).
    assert client.filters == [{"label": [OWNER_LABEL, f"{DATA_LABEL}={data_mark(bob)}"]}]
    # alice's own next command records her run.
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(alice))
    assert engine.sweep_leftovers() == ("envbuilder-run-a",)
    assert json.loads(alice_log.read_text())["outcome"] == "orphaned"


# --------------------------------------------------------------------------- the shared build locks

HOLDER = """
import sys, time
from pathlib import Path
from envbuilder.image.commit import output_lock
with output_lock([Path(p) for p in sys.argv[3:]], [sys.argv[2]], lambda m: print(m, flush=True), daemon="D1"):
    Path(sys.argv[1]).write_text("held")
    time.sleep(60)
"""


def _hold(data: Path, held: Path, tag: str, *lock_outs: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "ENVBUILDER_DATA_DIR": str(data)}
    args = [sys.executable, "-c", HOLDER, str(held), tag, *map(str, lock_outs)]
    return subprocess.Popen(args, text=True, stdout=subprocess.PIPE, env=env)


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the holder never took the lock"
        time.sleep(0.05)


@pytest.mark.parametrize("same", ["tag", "lock-file"])
def test_two_data_folders_writing_one_output_wait_for_each_other(tmp_path: Path, same: str) -> None:
    """alice holds the lock of tag team/x:1 (or of a lock file): bob, with another data folder, waits."""
    shared = tmp_path / "shared.lock.json"
    first = _hold(
        tmp_path / "alice", tmp_path / "held-a", "team/x:1", *([shared] if same == "lock-file" else [])
    )
    procs = [first]
    try:
        _wait_for(tmp_path / "held-a", first)
        tag = "team/x:1" if same == "tag" else "team/other:1"
        second = _hold(tmp_path / "bob", tmp_path / "held-b", tag, *([shared] if same == "lock-file" else []))
        procs.append(second)
        assert second.stdout is not None
        line = second.stdout.readline()
        assert line.startswith(f"waiting for envbuilder {owner_mark().rsplit('/', 2)[0]}/{first.pid}/"), line
        assert line.rstrip().endswith("which is writing " + ("team/x:1" if same == "tag" else str(shared)))
        time.sleep(0.5)
        assert second.poll() is None and not (tmp_path / "held-b").exists()
        first.kill()
        first.wait()
        _wait_for(tmp_path / "held-b", second)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_the_same_tag_in_another_daemon_is_another_output(tmp_path: Path) -> None:
    first = _hold(tmp_path / "alice", tmp_path / "held-a", "team/x:1")
    try:
        _wait_for(tmp_path / "held-a", first)
        said: list[str] = []
        with output_lock([], ["team/x:1"], said.append, daemon="D2"):
            pass
        assert said == []
    finally:
        first.kill()
        first.wait()


def test_a_build_locks_its_tags_in_the_engines_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[Any, ...]] = []
    real = commit_mod.output_lock

    def spy(lock_outs: Any, tags: Any, notice: Any, *, daemon: str = "") -> Any:
        seen.append((tuple(tags), daemon))
        return real(lock_outs, tags, notice, daemon=daemon)

    monkeypatch.setattr("envbuilder.image.build.output_lock", spy)
    with outputs_held(
        [tmp_path / "x.lock.json"], ["team/x:1"], FakeEngine(daemon_id="ABCD:EF"), lambda _m: None
    ):
        pass
    assert seen == [(("team/x:1",), "ABCD:EF")]


def test_the_lock_folder_is_sticky_and_shared_and_never_a_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    old = os.umask(0o077)
    try:
        assert shared_locks_dir() == folder
    finally:
        os.umask(old)
    assert folder.stat().st_mode & 0o7777 == 0o1777
    with output_lock([], ["team/x:1"], lambda _m: None):
        (lock,) = folder.iterdir()
        assert lock.stat().st_mode & 0o777 == 0o666  # the next user's build opens it too
    target = tmp_path / "elsewhere"
    target.mkdir()
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "link"))
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(OSError, match="symlink"):
        shared_locks_dir()
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "no" / "parent"))
    with pytest.raises(FileNotFoundError):
        shared_locks_dir()
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("plant", ["symlink", "hardlink", "fifo"])
def test_a_planted_lock_file_is_refused_and_its_target_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant: str
) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    shared_locks_dir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path = folder / f"{commit_mod._key('tag:/team/x:1')}.lock"
    if plant == "symlink":
        path.symlink_to(victim)
    elif plant == "hardlink":
        os.link(victim, path)
    else:
        os.mkfifo(path)
    with pytest.raises(OSError), output_lock([], ["team/x:1"], lambda _m: None):
        pass
    assert victim.read_text() == "precious\n"


def test_a_holder_line_written_by_someone_else_is_shown_harmless(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    path.write_text("\x1b]0;owned\x07envbuilder " + "x" * 500)
    fd = os.open(path, os.O_RDONLY)
    try:
        shown = commit_mod._holder(fd)
    finally:
        os.close(fd)
    assert "\x1b" not in shown and "\x07" not in shown and len(shown) <= 120


# --------------------------------------------------------------------------- repair across folders


def test_undoing_a_killed_commit_leaves_a_tag_another_build_moved_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice's build was SIGKILLed after tagging team/x:1 (her journal says: put back nothing, the
    tag was new); bob's build, with another data folder, then tagged team/x:1 as his image. alice's
    next build repairs her journal: bob's tag stays, her other, untouched tag goes back."""
    eng = FakeEngine()
    eng.images.update({NEW.id: NEW, THEIRS.id: THEIRS, "team/x:1": THEIRS, "team/y:1": NEW})
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "alice"))
    journal = commit_mod._journal_path(tmp_path / "x.lock.json")
    journal.write_text(
        json.dumps(
            {
                "owner": _gone_mark(),
                "image_id": NEW.id,
                "previous": {"team/x:1": None, "team/y:1": None},
                "lock_out": str(tmp_path / "x.lock.json"),
                "lock_text": "{}",
            }
        )
    )
    (line,) = repair(eng, lambda _m: None)
    assert line.startswith("undid a build that was killed mid-commit")
    assert eng.images["team/x:1"] == THEIRS  # bob's
    assert "team/y:1" not in eng.images  # alice's own half-commit, undone
    assert not (tmp_path / "x.lock.json").exists() and not journal.exists()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_lock_folder_must_be_sticky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock folder that another (non-root) user owns and may empty at will is refused, unless it
    is sticky like /tmp (then nobody removes another's lock file)."""
    folder = tmp_path / "locks"
    folder.mkdir(0o777)
    folder.chmod(0o777)
    os.chown(folder, 4242, 4242)
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    with pytest.raises(PermissionError, match="not sticky"):
        shared_locks_dir()
    folder.chmod(0o1777)
    assert shared_locks_dir() == folder


def test_a_failed_build_never_removes_an_image_someone_has_tagged() -> None:
    """A reproducible build gives bob's image ID to alice's build of the same lock: when alice's
    installed-set check fails, the image is removed only if nobody tagged it."""
    from envbuilder.image.build import discard_untagged

    tagged = ImageInfo(id=THEIRS.id, tags=("bob/x:1",), repo_digests=())
    eng = FakeEngine()
    eng.images.update({THEIRS.id: tagged, "bob/x:1": tagged, NEW.id: NEW})
    discard_untagged(eng, THEIRS.id)
    assert eng.images[THEIRS.id] == tagged and ("remove", THEIRS.id) not in eng.calls
    discard_untagged(eng, NEW.id)
    assert NEW.id not in eng.images
    discard_untagged(eng, "sha256:" + "9" * 64)  # gone already: nothing to do


def test_one_lock_file_by_any_path_is_one_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--lock-out x.lock.json` from its folder, its absolute path and a symlinked folder are one
    file: one lock."""
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    want = commit_mod._outputs([tmp_path / "x.lock.json"], ["team/x:1"], "D1")
    assert commit_mod._outputs([Path("x.lock.json")], ["team/x:1"], "D1") == want
    assert commit_mod._outputs([tmp_path / "link" / "x.lock.json"], ["team/x:1"], "D1") == want
    assert commit_mod._outputs([], ["team/x:1"], "D2") != commit_mod._outputs([], ["team/x:1"], "D1")


@pytest.mark.parametrize("owner", ["another-host/1/1", "live", "not a mark"])
def test_a_journal_whose_owner_is_not_known_dead_here_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: str
) -> None:
    """Only a journal whose writer is gone from this host is finished or undone: a build running
    on another host that shares this data folder, or still running here, is not repaired."""
    eng = FakeEngine()
    eng.images.update({NEW.id: NEW, "team/x:1": NEW})
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "alice"))
    journal = commit_mod._journal_path(tmp_path / "x.lock.json")
    mark = owner_mark() if owner == "live" else owner
    doc = {"owner": mark, "image_id": NEW.id, "previous": {"team/x:1": None}}
    journal.write_text(json.dumps({**doc, "lock_out": str(tmp_path / "x.lock.json"), "lock_text": "{}"}))
    assert repair(eng, lambda _m: None) == []
    assert journal.exists() and eng.images["team/x:1"] == NEW and not (tmp_path / "x.lock.json").exists()


def test_an_orphans_line_is_written_only_into_this_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log path rides on a container label, which anyone who can reach the daemon can set: a
    container forged with this folder's mark and a log elsewhere is removed, its line not written."""
    alice = tmp_path / "alice"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    labels = {OWNER_LABEL: _gone_mark(), DATA_LABEL: data_mark(alice), **record_labels(victim, RECORD)}
    client = _Client([_Container(labels, "exited", "e" * 64)])
    notices: list[str] = []
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(alice))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its temp-folder sweep: not the real /tmp
    engine = DockerEngine(janitor=False, notice=notices.append)
    engine._docker = client
    assert engine.sweep_leftovers() == ("envbuilder-run-e",)
    assert victim.read_text() == "precious\n"
    assert any(f"its log {victim} is not in this data folder" in n for n in notices)


def test_a_log_in_a_folder_that_only_shares_the_data_folders_prefix_is_not_ours(tmp_path: Path) -> None:
    from envbuilder.engine.ownership import log_is_ours

    alice = tmp_path / "alice"
    assert log_is_ours(alice / "runs.jsonl", alice)
    assert not log_is_ours(tmp_path / "alice-evil" / "runs.jsonl", alice)
    assert not log_is_ours(alice / "sub" / "runs.jsonl", alice)
    assert not log_is_ours(tmp_path / "runs.jsonl", alice)


def test_a_data_folder_reached_through_a_symlink_is_the_same_folder(tmp_path: Path) -> None:
    """ENVBUILDER_DATA_DIR may name a symlink (a home folder on another disk): a run's log written
    through the link and a janitor that knows the real path (or the other way round) agree that
    the log is this folder's; a link to another folder is not."""
    from envbuilder.engine.ownership import log_is_ours

    real = tmp_path / "disk" / "alice"
    real.mkdir(parents=True)
    link = tmp_path / "alice"
    link.symlink_to(real)
    assert log_is_ours(link / "runs.jsonl", real)
    assert log_is_ours(real / "runs.jsonl", link)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "evil").symlink_to(elsewhere)
    assert not log_is_ours(tmp_path / "evil" / "runs.jsonl", link)


def test_a_lock_folder_that_is_a_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path / "file"))
    with pytest.raises(NotADirectoryError, match="not a folder"):
        shared_locks_dir()


def test_a_read_only_lock_file_is_never_opened_through_a_symlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's lock file we may not write is opened read-only: still never through a link."""
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    shared_locks_dir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    path = folder / "planted.lock"
    path.symlink_to(victim)
    real_open = os.open

    def no_write(p: Any, flags: int, *args: Any) -> int:
        if flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied", str(p))  # as for another user's 0644 file
        return real_open(p, flags, *args)

    monkeypatch.setattr(os, "open", no_write)  # the module calls os.open
    with pytest.raises(OSError):
        commit_mod._open_lock(path)


def test_the_holder_line_is_replaced_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "locks"
    monkeypatch.setenv("ENVBUILDER_LOCK_DIR", str(folder))
    path = shared_locks_dir() / f"{commit_mod._key('tag:/team/x:1')}.lock"
    path.write_text("envbuilder a-much-longer-host-name-than-this-one/123456789/123456789012 (0)\n" * 3)
    with output_lock([], ["team/x:1"], lambda _m: None):
        assert path.read_text() == f"envbuilder {owner_mark()} ({os.getuid()})\n"


def test_a_commit_stopped_by_ctrl_c_puts_the_tags_back(tmp_path: Path) -> None:
    class Stopping(FakeEngine):
        def tag(self, image: str, ref: str) -> None:
            if ref == "team/y:1":
                raise KeyboardInterrupt
            super().tag(image, ref)

    eng = Stopping()
    eng.images.update({NEW.id: NEW, THEIRS.id: THEIRS, "team/x:1": THEIRS})
    (tmp_path / "x.lock.json").write_text("old\n")
    with pytest.raises(KeyboardInterrupt):
        commit_mod.commit(eng, NEW.id, ["team/x:1", "team/y:1"], tmp_path / "x.lock.json", "new\n")
    assert eng.images["team/x:1"] == THEIRS and "team/y:1" not in eng.images
    assert (tmp_path / "x.lock.json").read_text() == "old\n"


def test_a_killed_commit_is_finished_where_the_lock_was_not_where_a_link_points_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal names the lock file by its real path at commit time: a folder link on the way
    that is pointed elsewhere before the repair (by anyone who can write where the link lives)
    does not carry the repair's write there."""
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    link = tmp_path / "link"
    link.symlink_to(project)
    left: list[str] = []

    class Killed(FakeEngine):  # the journal as a SIGKILL right after the first tag leaves it
        def tag(self, image: str, ref: str) -> None:
            super().tag(image, ref)
            if not left:
                left.append(commit_mod._journal_path(link / "x.lock.json").read_text())

    eng = Killed()
    eng.images.update({NEW.id: NEW})
    commit_mod.commit(eng, NEW.id, ["team/x:1"], link / "x.lock.json", "new\n")
    (project / "x.lock.json").unlink()
    journal = commit_mod._journal_path(link / "x.lock.json")
    journal.write_text(json.dumps({**json.loads(left[0]), "owner": _gone_mark()}))
    link.unlink()
    link.symlink_to(other)
    (line,) = repair(eng, lambda _m: None)
    assert line.startswith("finished a build that was killed mid-commit")
    assert (project / "x.lock.json").read_text() == "new\n"
    assert list(other.iterdir()) == []


def test_a_journal_that_is_not_utf8_is_removed_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """commit writes its journal as ASCII JSON: one with bytes that are not UTF-8 was damaged, and
    its lock text (whatever a lenient decoding would make of it) is never written anywhere."""
    eng = FakeEngine()
    eng.images.update({NEW.id: NEW, "team/x:1": NEW})
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "alice"))
    journal = commit_mod._journal_path(tmp_path / "x.lock.json")
    doc = {"owner": _gone_mark(), "image_id": NEW.id, "previous": {"team/x:1": None}}
    text = json.dumps({**doc, "lock_out": str(tmp_path / "x.lock.json"), "lock_text": "LOCK"})
    journal.write_bytes(text.encode().replace(b"LOCK", b"\xff\xfe{}"))
    assert repair(eng, lambda _m: None) == []
    assert not journal.exists() and not (tmp_path / "x.lock.json").exists()
    assert eng.images["team/x:1"] == NEW


def test_a_container_of_this_data_folder_without_an_owner_mark_is_left_alone() -> None:
    # No owner mark: whose it is cannot be told, so it is no leftover (and no crash on the real
    # owner_alive, which reads a mark).
    mine = data_mark()
    unmarked = OwnedContainer(id="x", name="envbuilder-run-x", status="exited", labels={DATA_LABEL: mine})
    assert leftovers([unmarked], data=mine) == []
