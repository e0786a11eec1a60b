"""Issue 23 items 13 and 14: each condition of the janitor's decisions, pinned (benchmarks/mutants.py
--auto janitor found them unpinned). Whose temporary folder is swept (a gone process's, made by
temp_dir, old enough, a real folder, this user's), what one odd entry does to the rest of a sweep
(nothing), which containers the engine's janitor finds, removes and records, what an orphan's line
says, and that a create that never answers cannot hold envbuilder's exit."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from test_orphaned_runs import RECORD, _Container

from envbuilder import lifecycle
from envbuilder.engine import DockerEngine
from envbuilder.engine.ownership import (
    DATA_LABEL,
    LOG_LABEL,
    OWNER_LABEL,
    RECORD_LABEL,
    OwnedContainer,
    data_mark,
    orphan_record,
    record_labels,
)
from envbuilder.lifecycle import OWNER_FILE, owner_alive, owner_mark, sweep_temp_dirs, temp_dir

HOST = socket.gethostname()
OLD = time.time() - 3600


def _gone_pid() -> int:
    dead = subprocess.Popen(["true"])
    dead.wait()
    return dead.pid


def _folder(root: Path, pid: int, start: int, tail: str, mark: str | None = None, age: float = 3600) -> Path:
    """A folder as temp_dir names it, holding `mark` as its owner file (default: the process its
    name names, on this host), `age` seconds old."""
    path = root / f"envbuilder-render-{pid}-{start}-{tail}"
    path.mkdir()
    (path / "work.txt").write_text("scratch\n")
    (path / OWNER_FILE).write_text((mark if mark is not None else f"{HOST}/{pid}/{start}") + "\n")
    when = time.time() - age
    os.utime(path, (when, when))
    return path


def _tails(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(n)]  # 8 characters, as mkdtemp's


# --------------------------------------------------------------------------- owner marks


def test_an_owner_mark_is_judged_for_the_host_named_not_only_this_one() -> None:
    """owner_alive(mark, host): `host` names the machine whose processes /proc shows (a container
    that shares the host's pid namespace knows it by another name)."""
    _, pid, start = owner_mark().rsplit("/", 2)
    assert owner_alive(f"gpu-node-7/{pid}/{start}", host="gpu-node-7") is True
    assert owner_alive(f"gpu-node-7/{pid}/{int(start) + 1}", host="gpu-node-7") is False
    assert owner_alive(owner_mark(), host="gpu-node-7") is None  # this host's name is then another's


@pytest.mark.parametrize("proc", ["readable", "missing"])
def test_a_temp_folders_name_and_owner_file_name_the_same_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proc: str
) -> None:
    """The sweep takes a folder only when its name and its owner file agree: temp_dir must write
    the same pid and start time in both, with /proc (the start time) and without it (0)."""
    if proc == "missing":
        monkeypatch.setattr(lifecycle, "process_start", lambda _pid: None)
    made = temp_dir("render", tmp_path)
    m = re.fullmatch(r"envbuilder-render-(\d+)-(\d+)-[a-z0-9_]{8}", made.name)
    assert m is not None, made.name
    mark = (made / OWNER_FILE).read_text().strip()
    assert mark == f"{HOST}/{m.group(1)}/{m.group(2)}" == owner_mark()
    assert int(m.group(1)) == os.getpid()
    if proc == "missing":
        assert m.group(2) == "0"
    else:
        assert int(m.group(2)) == lifecycle.process_start(os.getpid()) and int(m.group(2)) > 0


def test_a_killed_processs_temp_folder_is_swept_by_the_next_start(tmp_path: Path) -> None:
    """A real process makes a temp folder and is SIGKILLed before its cleanup: the next sweep
    removes that folder (once old enough), not before."""
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from envbuilder.lifecycle import temp_dir
        print(temp_dir("certify", Path(sys.argv[1])), flush=True)
        time.sleep(60)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    made = Path(child.stdout.readline().strip())
    try:
        os.utime(made, (OLD, OLD))
        assert sweep_temp_dirs(tmp_path) == [] and made.is_dir()  # its process still runs
    finally:
        child.kill()
        child.wait()
    assert sweep_temp_dirs(tmp_path) == [made] and not made.exists()


# --------------------------------------------------------------------------- which folder is swept


def test_a_folder_whose_pid_now_belongs_to_another_process_is_swept(tmp_path: Path) -> None:
    """A pid is reused: a folder naming this live pid with another start time is a gone
    process's."""
    _, pid, start = owner_mark().rsplit("/", 2)
    reused = _folder(tmp_path, int(pid), int(start) + 1, "reused01")
    live = _folder(tmp_path, int(pid), int(start), "livenow1")
    assert sweep_temp_dirs(tmp_path) == [reused]
    assert live.is_dir()


@pytest.mark.parametrize("mark", ["garbage", "", "host/12/", "/1/2", f"{HOST}/x/1"])
def test_a_folder_whose_owner_file_is_malformed_is_left_and_the_sweep_goes_on(
    tmp_path: Path, mark: str
) -> None:
    pid = _gone_pid()
    odd = _folder(tmp_path, pid, 1, "oddmark1", mark=mark)
    ours = _folder(tmp_path, pid, 1, "ourmark1")
    assert sweep_temp_dirs(tmp_path) == [ours]
    assert (odd / "work.txt").read_text() == "scratch\n"


def test_a_gone_processs_folder_is_swept_only_once_old_enough(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """min_age_s: a folder younger than that may still be filled by its maker (the name and the
    owner file are written a moment apart); one exactly that old is swept."""
    pid = _gone_pid()
    young = _folder(tmp_path, pid, 1, "young001", age=5)
    assert sweep_temp_dirs(tmp_path) == [] and young.is_dir()
    assert sweep_temp_dirs(tmp_path, min_age_s=10) == [] and young.is_dir()
    assert sweep_temp_dirs(tmp_path, min_age_s=1) == [young]
    now = 2_000_000_000
    edge = _folder(tmp_path, pid, 1, "edge0001")
    os.utime(edge, (now - 60, now - 60))
    monkeypatch.setattr(time, "time", lambda: float(now))  # the module lifecycle reads
    assert sweep_temp_dirs(tmp_path, min_age_s=60) == [edge]


def test_a_symlink_named_like_a_temp_folder_is_never_followed(tmp_path: Path) -> None:
    pid = _gone_pid()
    (tmp_path / "elsewhere").mkdir()
    target = _folder(tmp_path / "elsewhere", pid, 1, "target01")
    link = tmp_path / f"envbuilder-render-{pid}-1-linked01"
    link.symlink_to(target, target_is_directory=True)
    os.utime(link, (OLD, OLD), follow_symlinks=False)
    assert sweep_temp_dirs(tmp_path) == []
    assert link.is_symlink() and (target / "work.txt").read_text() == "scratch\n"


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_folder_is_never_swept(tmp_path: Path) -> None:
    """On a shared machine another user's envbuilder folders sit in the same /tmp: even one whose
    name and owner file look right is theirs to sweep."""
    pid = _gone_pid()
    theirs = _folder(tmp_path, pid, 1, "theirs01")
    os.chown(theirs, 4242, 4242)
    os.utime(theirs, (OLD, OLD))
    assert sweep_temp_dirs(tmp_path) == []
    assert (theirs / "work.txt").read_text() == "scratch\n"


@pytest.mark.parametrize("odd", ["young", "lookalike", "vanishing"])
def test_one_odd_entry_never_stops_the_sweep_of_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str
) -> None:
    """Many entries, in whatever order the folder lists them: each one skipped (too young, a
    user's lookalike without an owner file, one another sweeper removed meanwhile) is skipped
    alone; every gone process's folder is still swept."""
    pid = _gone_pid()
    skipped = []
    for tail in _tails(12, "skip"):
        path = _folder(tmp_path, pid, 1, tail, age=1 if odd == "young" else 3600)
        if odd == "lookalike":
            (path / OWNER_FILE).unlink()
            os.utime(path, (OLD, OLD))
        skipped.append(path)
    gone = [_folder(tmp_path, pid, 1, tail) for tail in _tails(12, "gone")]
    if odd == "vanishing":
        _lstat_fails(
            monkeypatch, lambda p: "skip" in p.name, FileNotFoundError(2, "No such file or directory")
        )
    assert sorted(sweep_temp_dirs(tmp_path)) == sorted(gone)
    monkeypatch.undo()
    assert all(p.is_dir() for p in skipped) and not any(p.exists() for p in gone)


def test_a_folder_that_cannot_be_removed_is_not_reported_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = _gone_pid()
    stuck = _folder(tmp_path, pid, 1, "stuck001")
    fine = _folder(tmp_path, pid, 1, "fine0001")
    real_unlink = os.unlink

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        folder = kwargs.get("dir_fd")
        if folder is not None and Path(f"/proc/self/fd/{folder}").readlink() == stuck:
            raise PermissionError(1, "Operation not permitted", str(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    assert sweep_temp_dirs(tmp_path) == [fine]
    monkeypatch.undo()
    assert stuck.is_dir() and not fine.exists()


# --------------------------------------------------------------------------- an orphan's line


def _box(status: str, labels: dict[str, str]) -> OwnedContainer:
    return OwnedContainer(id="c" * 64, name="envbuilder-run-x", status=status, labels=labels)


def test_a_log_label_without_a_record_is_no_line(tmp_path: Path) -> None:
    for labels in (
        {LOG_LABEL: str(tmp_path / "r.jsonl")},
        {**record_labels(tmp_path / "r.jsonl", RECORD), RECORD_LABEL: ""},
    ):
        assert orphan_record(_box("exited", labels), {}) is None


def test_a_running_orphans_seconds_run_to_the_clock_when_no_time_is_given(tmp_path: Path) -> None:
    started = datetime.now(timezone.utc) - timedelta(seconds=30)
    state = {"StartedAt": started.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"}
    got = orphan_record(_box("running", record_labels(tmp_path / "r.jsonl", RECORD)), state)
    assert got is not None and 29 <= got[1]["seconds"] <= 120


@pytest.mark.parametrize(
    ("finished", "seconds"), [("16:00:00Z", 0.0), ("16:00:00.5Z", 0.5), ("16:00:00.0004Z", 0.0)]
)
def test_an_orphan_that_ran_under_a_second_keeps_its_time(
    tmp_path: Path, finished: str, seconds: float
) -> None:
    state = {"ExitCode": 0, "StartedAt": "2026-12-01T16:00:00Z", "FinishedAt": f"2026-12-01T{finished}"}
    got = orphan_record(_box("exited", record_labels(tmp_path / "r.jsonl", RECORD)), state)
    assert got is not None and got[1]["seconds"] == seconds and got[1]["exit_code"] == 0


def test_a_record_that_is_not_strict_json_is_refused_when_the_container_is_made(tmp_path: Path) -> None:
    """The label is read by whoever inspects the container (jq, another janitor): never `NaN`."""
    with pytest.raises(ValueError):
        record_labels(tmp_path / "r.jsonl", {**RECORD, "seconds": float("nan")})


# --------------------------------------------------------------------------- the engine's janitor


class _Daemon:
    """The SDK client as the janitor uses it, listing as the daemon does: exited containers only
    with all=True (test_orphaned_runs._Client lists everything)."""

    def __init__(self, found: list[_Container]) -> None:
        self.removed: list[str] = []
        client = self

        class _Containers:
            def list(self, **kw: Any) -> list[_Container]:
                return found if kw.get("all") else [c for c in found if c.status == "running"]

        class _Api:
            def remove_container(self, cid: str, force: bool) -> None:
                assert force, "a running orphan is removed only with force (docker rm -f)"
                client.removed.append(cid)

        self.containers, self.api = _Containers(), _Api()


def _engine(
    monkeypatch: pytest.MonkeyPatch, data: Path, tmp: Path, client: _Daemon
) -> tuple[DockerEngine, list[str]]:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(data))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # sweep_temp_dirs' default root
    notices: list[str] = []
    engine = DockerEngine(janitor=False, notice=notices.append)
    engine._docker = client
    return engine, notices


def test_the_janitor_removes_and_records_every_orphan_of_this_folder_exited_ones_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    log = data / "runs.jsonl"
    gone = f"{HOST}/{_gone_pid()}/1"
    mine = {OWNER_LABEL: gone, DATA_LABEL: data_mark(data)}
    boxes = [
        _Container({**mine, **record_labels(log, {**RECORD, "run_id": "R1"})}, "exited", "1" * 64),
        _Container({**mine, **record_labels(log, {**RECORD, "run_id": "R2"})}, "running", "2" * 64),
        _Container(dict(mine), "exited", "3" * 64),  # a certify container: no record to write
        _Container({**mine, **record_labels(log, {**RECORD, "run_id": "R4"})}, "running", "4" * 64),
    ]
    boxes[3].attrs = {}  # an inspect answer without State: no times, still recorded
    client = _Daemon(boxes)
    engine, notices = _engine(monkeypatch, data, tmp, client)
    assert sorted(engine.sweep_leftovers()) == [f"envbuilder-run-{n}" for n in "1234"]
    assert sorted(client.removed) == [n * 64 for n in "1234"]
    lines = {x["run_id"]: x for x in map(json.loads, log.read_text().splitlines())}
    assert sorted(lines) == ["R1", "R2", "R4"]
    assert (lines["R1"]["exit_code"], lines["R2"]["exit_code"], lines["R4"]["exit_code"]) == (0, 137, 137)
    assert lines["R4"]["seconds"] is None
    assert sum("recorded run" in n for n in notices) == 3
    assert not any("not recording" in n for n in notices)


def test_the_janitor_says_each_temp_folder_it_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    pid = _gone_pid()
    folders = [_folder(tmp, pid, 1, tail) for tail in ("first001", "second01", "third001")]
    engine, notices = _engine(monkeypatch, data, tmp, _Daemon([]))
    assert engine.sweep_leftovers() == ()
    assert not any(f.exists() for f in folders)
    assert sorted(n for n in notices if "left by an envbuilder run" in n) == sorted(
        f"removed {f}, left by an envbuilder run that is gone" for f in folders
    )


HUNG_CREATE = """
import signal, threading
import envbuilder.engine.docker_engine as de
from envbuilder.engine import DockerEngine
from envbuilder.engine.container import ContainerSpec

de.CREATE_SETTLE_S = 0.2
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job starts with it ignored


class Containers:
    def create(self, image, command, **kw):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        threading.Event().wait()  # the daemon never answers

    def get(self, name):
        import docker.errors

        raise docker.errors.NotFound(name)


class Client:
    containers = Containers()


engine = DockerEngine(janitor=False)
engine._docker = Client()
try:
    engine._settled_create(ContainerSpec(image="img", purpose="certify", name="envbuilder-certify-x"), [])
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def test_a_create_that_never_answers_cannot_hold_envbuilders_exit(tmp_path: Path) -> None:
    """Ctrl-C during a create the daemon never answers: envbuilder gives up on it and exits; the
    create's thread must not keep the process alive."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HUNG_CREATE], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the process did not exit: the hung create's thread held it")
    assert proc.returncode == 0 and out.strip() == "stopped"


def test_the_janitor_says_what_it_removed_and_which_line_it_could_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each removed container is named in a notice with its owner; an orphan whose line cannot be
    written (its log is a folder, or its record label holds NaN, which no strict JSON line may)
    is said so, and the janitor goes on to the next one."""
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    (data / "blocked.jsonl").mkdir(parents=True)
    log = data / "runs.jsonl"
    gone = f"{HOST}/{_gone_pid()}/1"
    mine = {OWNER_LABEL: gone, DATA_LABEL: data_mark(data)}
    nan = json.dumps({**RECORD, "run_id": "R2", "gpu_util": float("nan")})  # what a hand-made label can say
    boxes = [
        _Container(
            {**mine, **record_labels(data / "blocked.jsonl", {**RECORD, "run_id": "R1"})}, "exited", "1" * 64
        ),
        _Container({**mine, LOG_LABEL: str(log), RECORD_LABEL: nan}, "exited", "2" * 64),
        _Container({**mine, **record_labels(log, {**RECORD, "run_id": "R3"})}, "exited", "3" * 64),
    ]
    engine, notices = _engine(monkeypatch, data, tmp, _Daemon(boxes))
    assert sorted(engine.sweep_leftovers()) == [f"envbuilder-run-{n}" for n in "123"]
    for n in "123":
        assert (
            f"removed envbuilder-run-{n} ({n * 12}, exited), left by an envbuilder run that is gone ({gone})"
            in notices
        )
    assert any(n.startswith(f"could not record run R1 in {data / 'blocked.jsonl'}: ") for n in notices)
    assert any(n.startswith(f"could not record run R2 in {log}: ") for n in notices)
    assert f"recorded run R3 in {log} as orphaned" in notices
    assert [json.loads(line)["run_id"] for line in log.read_text().splitlines()] == ["R3"]


# --------------------------------------------------------------------------- what the janitor never raises
# (the fifth operator set, 2026-12-05: handlers narrowed to a subclass or re-raising survived)


def test_an_owner_file_that_is_a_folder_is_not_ours_and_the_sweep_goes_on(tmp_path: Path) -> None:
    pid = _gone_pid()
    odd = _folder(tmp_path, pid, 1, "aaaa0001")
    (odd / OWNER_FILE).unlink()
    (odd / OWNER_FILE).mkdir()  # read_text: IsADirectoryError, an OSError but no FileNotFoundError
    os.utime(odd, (OLD, OLD))
    gone = _folder(tmp_path, pid, 1, "aaaa0002")
    assert sweep_temp_dirs(tmp_path) == [gone]
    assert odd.is_dir()


def test_a_sweep_of_a_root_that_is_no_folder_removes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "a-file"
    root.write_text("x")
    assert sweep_temp_dirs(root) == []  # NotADirectoryError, not a traceback
    assert root.read_text() == "x"


def test_an_entry_the_sweep_may_not_look_at_is_skipped_and_the_others_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = _gone_pid()
    hidden = _folder(tmp_path, pid, 1, "bbbb0001")
    gone = _folder(tmp_path, pid, 1, "bbbb0002")
    _lstat_fails(monkeypatch, lambda p: p == hidden, PermissionError(13, "Permission denied"))
    assert sweep_temp_dirs(tmp_path) == [gone]
    monkeypatch.undo()
    assert hidden.is_dir()


def test_a_process_whose_stat_cannot_be_read_has_no_start_time(monkeypatch: pytest.MonkeyPatch) -> None:
    real_read = Path.read_text

    def read_text(self: Path, *args: Any, **kw: Any) -> str:
        if str(self) == "/proc/4242/stat":
            raise PermissionError(13, "Permission denied", str(self))  # hidepid=2, say
        return real_read(self, *args, **kw)

    monkeypatch.setattr(Path, "read_text", read_text)
    assert lifecycle.process_start(4242) is None


def test_an_orphan_whose_times_docker_cannot_give_is_recorded_without_seconds(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    box = _Container({OWNER_LABEL: "h/1/1", **record_labels(log, RECORD)}, "exited", "5" * 64)
    owned = OwnedContainer(id=box.id, name=box.name, status=box.status, labels=box.labels)
    state = {"Status": "exited", "ExitCode": 0, "StartedAt": "2026-13-45T25:61:00Z", "FinishedAt": "soon"}
    got = orphan_record(owned, state)
    assert got is not None and got[1]["seconds"] is None and got[1]["exit_code"] == 0


def test_a_daemon_that_refuses_one_removal_or_the_listing_never_stops_envbuilder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import docker.errors

    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    mine = {OWNER_LABEL: f"{HOST}/{_gone_pid()}/1", DATA_LABEL: data_mark(data)}
    boxes = [_Container(dict(mine), "exited", n * 64) for n in "12"]
    client = _Daemon(boxes)
    real_remove = client.api.remove_container

    def remove(cid: str, force: bool) -> None:
        if cid.startswith("1"):
            raise docker.errors.APIError("409 Conflict: removal of container is already in progress")
        real_remove(cid, force)

    monkeypatch.setattr(client.api, "remove_container", remove)
    engine, _ = _engine(monkeypatch, data, tmp, client)
    assert tuple(engine.sweep_leftovers()) == ("envbuilder-run-2",)  # 1 stays; no traceback

    def refuse(**kw: Any) -> list[_Container]:
        raise docker.errors.APIError("500 Server Error")

    monkeypatch.setattr(client.containers, "list", refuse)
    assert tuple(engine.sweep_leftovers()) == ()


def _lstat_fails(monkeypatch: pytest.MonkeyPatch, which: Callable[[Path], bool], error: OSError) -> None:
    """Path.lstat raises `error` (with the path as its filename) for the entries `which` picks."""
    real_lstat = Path.lstat

    def lstat(self: Path) -> os.stat_result:
        if which(self):
            raise type(error)(error.errno, error.strerror, str(self))
        return real_lstat(self)

    monkeypatch.setattr(Path, "lstat", lstat)
