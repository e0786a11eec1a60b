"""How envbuilder stops (envbuilder/lifecycle.py), with real processes and real signals: SIGTERM and
SIGHUP run the same cleanup as Ctrl-C and exit 143; a second signal cannot cut the cleanup short;
children die with their parent even on SIGKILL; owner marks tell a live run from a crashed one;
the temp folders of crashed runs are swept, never a live one's."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from envbuilder.engine.ownership import (
    DATA_LABEL,
    OWNER_LABEL,
    OwnedContainer,
    container_name,
    data_mark,
    leftovers,
)
from envbuilder.lifecycle import (
    OWNER_FILE,
    Stopped,
    owner_alive,
    owner_mark,
    process_start,
    run_child,
    scratch_dir,
    stop_signal,
    sweep_temp_dirs,
    temp_dir,
)


def _wait_for(path: Path, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def _cli_with_a_slow_command(tmp_path: Path, body: str) -> subprocess.Popen[str]:
    """The real `envbuilder` entry point (cli.main: signal handlers, error mapping) with one more
    command, `slow`, whose body is given: it writes `ready` when it runs."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from envbuilder.cli import cli, main
        work = Path({str(tmp_path)!r})

        @cli.command()
        def slow() -> None:
            {textwrap.indent(textwrap.dedent(body), "            ").strip()}

        sys.argv = ["envbuilder", "slow"]
        main()
        """
    )
    return subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(
    ("sig", "code", "said"),
    [
        (signal.SIGTERM, 143, "terminated by SIGTERM"),
        (signal.SIGHUP, 143, "terminated by SIGHUP"),
        (signal.SIGINT, 130, "interrupted"),
    ],
)
def test_a_stop_signal_runs_the_cleanup_and_exits_with_its_code(
    tmp_path: Path, sig: signal.Signals, code: int, said: str
) -> None:
    proc = _cli_with_a_slow_command(
        tmp_path,
        """
        try:
            (work / "ready").touch()
            time.sleep(60)
        finally:
            (work / "cleaned").touch()
        """,
    )
    _wait_for(tmp_path / "ready")
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert (tmp_path / "cleaned").exists()
    assert f"envbuilder: error: {said}\nhint: nothing was tagged or half-written" in err
    assert "Traceback" not in err


def test_a_second_signal_does_not_cut_the_cleanup_short_and_a_third_gives_up(tmp_path: Path) -> None:
    proc = _cli_with_a_slow_command(
        tmp_path,
        """
        try:
            (work / "ready").touch()
            time.sleep(60)
        finally:
            (work / "cleaning").touch()
            try:
                for _ in range(300):
                    if (work / "go").exists():
                        break
                    time.sleep(0.02)
                (work / "cleaned").touch()
            except KeyboardInterrupt:
                (work / "abandoned").touch()
                raise
        """,
    )
    _wait_for(tmp_path / "ready")
    proc.send_signal(signal.SIGTERM)
    _wait_for(tmp_path / "cleaning")
    proc.send_signal(signal.SIGTERM)  # noted, not raised
    time.sleep(0.3)
    assert proc.poll() is None
    (tmp_path / "go").touch()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and (tmp_path / "cleaned").exists(), err
    assert "SIGTERM: cleaning up" in err and "send it again" in err

    again = tmp_path / "again"
    again.mkdir()
    proc = _cli_with_a_slow_command(
        again,
        """
        try:
            (work / "ready").touch()
            time.sleep(60)
        finally:
            (work / "cleaning").touch()
            try:
                time.sleep(60)
            except KeyboardInterrupt:
                (work / "abandoned").touch()
                raise
        """,
    )
    _wait_for(again / "ready")
    for _ in range(2):
        proc.send_signal(signal.SIGTERM)
        _wait_for(again / "cleaning")
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert (again / "abandoned").exists() and proc.returncode == 143


def test_children_die_with_their_parent_even_on_sigkill(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import subprocess, time
                from envbuilder.lifecycle import start_child
                child = start_child(["sleep", "60"], start_new_session=True)
                open({str(pidfile)!r} + ".tmp", "w").write(str(child.pid))
                import os; os.rename({str(pidfile)!r} + ".tmp", {str(pidfile)!r})  # whole, or absent
                time.sleep(60)
                """
            ),
        ]
    )
    _wait_for(pidfile)
    child = int(pidfile.read_text())
    assert process_start(child) is not None
    parent.kill()
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while process_start(child) is not None and _state(child) != "Z":
        assert time.monotonic() < deadline, "the child outlived its SIGKILLed parent"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


def test_owner_marks_tell_a_live_owner_from_a_gone_one() -> None:
    mine = owner_mark()
    assert owner_alive(mine) is True
    host, pid, start = mine.rsplit("/", 2)
    assert owner_alive(f"{host}/{pid}/{int(start) + 1}") is False  # a reused pid: another process
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert owner_alive(f"{host}/{dead.pid}/1") is False
    assert owner_alive(f"another-host/{pid}/{start}") is None  # cannot be seen from here
    for malformed in ("", "x", "host/pid/start", f"{host}/\uff11\uff12/3", f"{host}/{pid}"):
        assert owner_alive(malformed) is None


def test_an_owner_mark_of_a_host_whose_name_begins_this_ones_is_another_hosts() -> None:
    """Set U's survivor U40: the mark's host must be this host's whole name. `node1`'s mark on
    `node10` (or `node10`'s on `node1`) names a process this machine cannot see: None, never its
    pid read here (a live run of node1 would be judged gone and its container removed)."""
    _, pid, start = owner_mark().rsplit("/", 2)
    assert owner_alive(f"node1/{pid}/{start}", host="node1") is True
    assert owner_alive(f"node1/{pid}/{start}", host="node10") is None
    assert owner_alive(f"node10/{pid}/{start}", host="node1") is None
    assert owner_alive(f"node1/{pid}/{int(start) + 1}", host="node10") is None  # not False: unseen


def test_the_janitor_picks_only_containers_of_gone_owners() -> None:
    def box(mark: str) -> OwnedContainer:
        return OwnedContainer(
            id=mark,
            name=container_name("certify"),
            status="exited",
            labels={OWNER_LABEL: mark, DATA_LABEL: data_mark()},
        )

    verdicts = {"live": True, "gone": False, "elsewhere": None, "": None}
    picked = leftovers([box(m) for m in verdicts], alive=lambda mark: verdicts[mark])
    assert [c.id for c in picked] == ["gone"]
    assert container_name("pip-freeze").startswith("envbuilder-pip-freeze-")
    with pytest.raises(ValueError, match="purpose"):
        container_name("Bad Purpose")


def test_a_scratch_folder_is_made_in_the_parent_asked_for_and_removed_on_the_way_out(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), scratch_dir("unit", tmp_path) as path:
        assert path.parent == tmp_path and path.name.startswith("envbuilder-unit-")
        assert (path / OWNER_FILE).is_file()  # marked: swept if this process is killed
        raise RuntimeError("the block fails")
    assert list(tmp_path.iterdir()) == []


def test_temp_folders_of_gone_runs_are_swept_never_a_live_ones(tmp_path: Path) -> None:
    live = temp_dir("render", tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"envbuilder-certify-{dead.pid}-1-abcd1234"
    gone.mkdir()
    (gone / "thresholds.json").write_text("{}")
    (gone / OWNER_FILE).write_text(f"{socket.gethostname()}/{dead.pid}/1\n")  # what temp_dir writes
    young = tmp_path / f"envbuilder-build-{dead.pid}-1-young"
    young.mkdir()
    stranger = tmp_path / "envbuilder-notours"
    stranger.mkdir()
    old = time.time() - 3600
    for path in (live, gone, stranger):
        os.utime(path, (old, old))
    assert sweep_temp_dirs(tmp_path) == [gone]
    assert live.is_dir() and young.is_dir() and stranger.is_dir() and not gone.exists()


def test_stop_signal_names_the_signal_behind_an_interrupt() -> None:
    assert stop_signal(KeyboardInterrupt()) == signal.SIGINT
    assert stop_signal(Stopped(signal.SIGTERM)) == signal.SIGTERM
    assert Stopped(signal.SIGHUP).name == "SIGHUP" and isinstance(Stopped(15), KeyboardInterrupt)


def test_only_folders_temp_dir_made_are_swept_never_a_users_lookalike(tmp_path: Path) -> None:
    """D18: `render --out` swept the user's `envbuilder-render-1-1-abc/` and
    `envbuilder-previousrender-999999-1-zz/` (a file inside, two hours old) beside its output."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    users = [
        tmp_path / "envbuilder-render-1-1-abc",  # D18's names, as the user made them
        tmp_path / "envbuilder-previousrender-999999-1-zz",
        tmp_path / f"envbuilder-render-{dead.pid}-1-abcd1234",  # the exact pattern, no owner file
        tmp_path / f"envbuilder-render-{dead.pid}-2-abcd1234",  # an owner file naming another process
        tmp_path / f"envbuilder-render-{dead.pid}-1-efgh5678",  # ... or another host
    ]
    for folder in users:
        folder.mkdir()
        (folder / "mine.txt").write_text("the user's\n")
    (users[3] / OWNER_FILE).write_text(f"{host}/{dead.pid}/1\n")
    (users[4] / OWNER_FILE).write_text(f"other-host/{dead.pid}/1\n")
    ours = tmp_path / f"envbuilder-render-{dead.pid}-1-ijkl9012"
    ours.mkdir()
    (ours / OWNER_FILE).write_text(f"{host}/{dead.pid}/1\n")
    old = time.time() - 7200
    for path in (*users, ours):
        os.utime(path, (old, old))
    assert sweep_temp_dirs(tmp_path) == [ours]
    assert all((folder / "mine.txt").read_text() == "the user's\n" for folder in users)
    made = temp_dir("render", tmp_path)
    assert (made / OWNER_FILE).read_text() == owner_mark() + "\n"
    assert list(temp_dir("previousrender", tmp_path, marked=False).iterdir()) == []


def test_a_process_start_is_its_start_time_in_clock_ticks_since_boot(tmp_path: Path) -> None:
    """The owner mark's START is /proc/PID/stat's field 22 (starttime): a child started now reads
    as now in ticks since boot (CLOCK_BOOTTIME), even with spaces, ')' and non-ASCII bytes in its
    command name (what /proc/PID/stat shows first, in parentheses)."""
    tick = os.sysconf("SC_CLK_TCK")
    odd = tmp_path / "sl\u00e9e p) \u00ff"  # comm: the executable's name, as bytes
    sleep = shutil.which("sleep")
    assert sleep is not None
    shutil.copy2(sleep, odd)  # a copy in tmp_path: nothing outside it is linked or written
    child = subprocess.Popen([str(odd), "30"])
    try:
        assert "\u00e9".encode() in Path(f"/proc/{child.pid}/stat").read_bytes()
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        start = process_start(child.pid)
        assert start is not None
        assert abs(start / tick - since_boot) < 5.0  # field 23 (vsize) or 21 would be far off
        assert owner_mark(child.pid) == f"{socket.gethostname()}/{child.pid}/{start}"
        assert owner_alive(owner_mark(child.pid)) is True
    finally:
        child.kill()
        child.wait()
    assert process_start(child.pid) is None


def test_a_folder_whose_owner_file_is_not_ascii_is_never_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """temp_dir writes its owner mark in ASCII; an owner file with other bytes (Latin-1 or UTF-8,
    even one that spells this host's name) was not written by it: the folder stays, and the sweep
    goes on to the next one instead of failing."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(socket, "gethostname", lambda: "h\u00f4te")  # a host named in UTF-8
    latin = tmp_path / f"envbuilder-render-{dead.pid}-1-aaaa1111"
    utf8 = tmp_path / f"envbuilder-render-{dead.pid}-1-bbbb2222"
    ours = tmp_path / f"envbuilder-render-{dead.pid}-1-cccc3333"
    for folder in (latin, utf8, ours):
        folder.mkdir()
    (latin / OWNER_FILE).write_bytes(f"h\u00f4te/{dead.pid}/1\n".encode("latin-1"))
    (utf8 / OWNER_FILE).write_bytes(f"h\u00f4te/{dead.pid}/1\n".encode())
    old = time.time() - 7200
    for folder in (latin, utf8, ours):
        os.utime(folder, (old, old))
    assert sweep_temp_dirs(tmp_path) == []  # `ours` has no owner file yet
    assert latin.is_dir() and utf8.is_dir()
    monkeypatch.setattr(socket, "gethostname", lambda: "host-a")
    (ours / OWNER_FILE).write_text(f"host-a/{dead.pid}/1\n", encoding="ascii")
    (latin / OWNER_FILE).write_bytes(f"host-\xe9/{dead.pid}/1\n".encode("latin-1"))
    os.utime(ours, (old, old))
    assert sweep_temp_dirs(tmp_path) == [ours]
    assert latin.is_dir() and utf8.is_dir()


@pytest.mark.parametrize(
    "stat_line",
    [
        "4242 (job) S 1 4242 4242 0 -1 4194560 100 0 0 0",  # cut short: no field 22
        "4242 (job) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 soon 0 0",  # not a number
    ],
)
def test_a_stat_line_without_a_readable_start_is_no_start_time(
    stat_line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A /proc that answers a short or garbled stat line (an emulated one): no start time, so
    the owner is not judged alive, and the janitor does not crash on it."""
    real_read_text = Path.read_text

    def read_text(self: Path, *args: object, **kwargs: object) -> str:
        if str(self) == "/proc/4242/stat":
            return stat_line + "\n"
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)
    assert process_start(4242) is None
    assert owner_alive(f"{socket.gethostname()}/4242/1") is False


def test_an_owner_mark_with_white_space_around_it_is_read_as_the_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mark rewritten by an editor or another tool (spaces around it, a CRLF line end) still
    names its owner: the folder of a gone owner is swept."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(socket, "gethostname", lambda: "host-a")
    folders = [tmp_path / f"envbuilder-render-{dead.pid}-1-dddd{n}444" for n in range(2)]
    for folder, mark in zip(folders, (f" host-a/{dead.pid}/1 \n", f"host-a/{dead.pid}/1\r\n"), strict=True):
        folder.mkdir()
        (folder / OWNER_FILE).write_text(mark, encoding="ascii", newline="")
        old = time.time() - 7200
        os.utime(folder, (old, old))
    assert sorted(sweep_temp_dirs(tmp_path)) == sorted(folders)


@pytest.mark.parametrize("after", [".keep", "\n"], ids=["a suffix", "a line break"])
def test_a_folder_named_like_a_temp_folder_with_more_after_it_is_not_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: str
) -> None:
    """`envbuilder-render-PID-N-XXXXXXXX.keep` (someone kept a copy), or the name with a final line
    break (`$` would take it), is no folder temp_dir made: it stays, whoever its owner file names."""
    kept = _old_folder_of_a_dead_owner(tmp_path, monkeypatch, "envbuilder-render-{pid}-1-eeee5555" + after)
    assert sweep_temp_dirs(tmp_path) == []
    assert kept.is_dir()


def _old_folder_of_a_dead_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A folder named `name` ({pid}: a process that has exited), two hours old, whose owner file
    names that process on this host: what the sweep removes when the name is temp_dir's."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    monkeypatch.setattr(socket, "gethostname", lambda: "host-a")
    kept = tmp_path / name.format(pid=dead.pid)
    kept.mkdir()
    (kept / OWNER_FILE).write_text(f"host-a/{dead.pid}/1\n", encoding="ascii")
    old = time.time() - 7200
    os.utime(kept, (old, old))
    return kept


# --------------------------------------------------------------------------- the seventh operator set
# benchmarks/mutants.py --auto janitor --ops seventh (2026-12-05): the marks' and names' bounds.


def test_an_owner_mark_whose_pid_or_start_is_empty_or_too_long_is_malformed() -> None:
    host = socket.gethostname()
    pid = os.getpid()
    for malformed in (
        f"{host}//1",  # no pid
        f"{host}/{pid}/",  # no start
        f"{host}/12345678901/1",  # a pid of 11 digits
        f"{host}/{pid}/" + "1" * 21,  # a start of 21 digits
    ):
        assert owner_alive(malformed) is None, malformed


@pytest.mark.parametrize(
    "name",
    [
        "envbuilder--{pid}-1-abcd1234",  # no purpose
        "envbuilder-render--1-abcd1234",  # no pid
        "envbuilder-render-{pid}--abcd1234",  # no start
        "envbuilder-render-{pid}-1-abcd123",  # a suffix of 7
        "envbuilder-render-{pid}-1-abcd12345",  # a suffix of 9
    ],
)
def test_a_folder_named_almost_as_temp_dir_names_them_is_not_swept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    kept = _old_folder_of_a_dead_owner(tmp_path, monkeypatch, name)
    assert sweep_temp_dirs(tmp_path) == []
    assert kept.is_dir()


# --------------------------------------------------------------------------- set L (2026-12-06)
# run_child (uv's way of running): the child's whole process group ends with envbuilder's wait.


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether `pid` ends (or is a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while process_start(pid) is not None and _state(pid) != "Z":
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_child_that_times_out_is_ended_with_what_it_started(tmp_path: Path) -> None:
    """uv's own children (its resolver's threads are in-process; a build backend it starts is
    not): the timeout ends the child's whole group, not the child alone."""
    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {tmp_path}/gc.tmp && mv {tmp_path}/gc.tmp {pidfile}; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        run_child(["sh", "-c", script], timeout=2.0)
    grandchild = int(pidfile.read_text())
    try:
        assert _gone(grandchild), "the child's own child outlived the timeout"
    finally:
        if process_start(grandchild) is not None and _state(grandchild) != "Z":
            os.kill(grandchild, signal.SIGKILL)


def test_a_child_is_ended_when_a_ctrl_c_interrupts_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt (Ctrl-C; Stopped is one too) while envbuilder waits on the child: the
    child's group is ended before the interrupt goes on, as for any exception."""
    started: list[int] = []

    def interrupted(self: subprocess.Popen[str], *_args: object, **_kw: object) -> tuple[str, str]:
        started.append(self.pid)
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_child(["sleep", "60"])
    (child,) = started
    try:
        assert _gone(child, within=5.0), "the child outlived the interrupt"
    finally:
        if process_start(child) is not None and _state(child) != "Z":
            os.kill(child, signal.SIGKILL)


# --------------------------------------------------------------------------- --auto io (2026-12-06)


def test_a_stops_error_keeps_the_message_given_and_the_first_signal_stops_at_once() -> None:
    import pytest

    from envbuilder import lifecycle

    assert lifecycle.stop_error(KeyboardInterrupt(), "build stopped").message == "build stopped"
    assert lifecycle.stop_error(lifecycle.Stopped(signal.SIGTERM), "run stopped").message == "run stopped"
    lifecycle._received.clear()
    try:
        with pytest.raises(lifecycle.Stopped):
            lifecycle._on_signal(signal.SIGTERM, None)
        lifecycle._on_signal(signal.SIGTERM, None)  # the second: noted, no raise, cleanup goes on
    finally:
        lifecycle._received.clear()


def test_a_child_that_ignores_sigterm_is_killed_and_run_child_gives_text_from_a_group_of_its_own() -> None:
    import pytest

    from envbuilder.lifecycle import kill_group, run_child

    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 30"], start_new_session=True)
    time.sleep(0.2)
    kill_group(proc, wait_s=0.5)
    assert proc.poll() is not None  # SIGKILL after the ignored SIGTERM
    code = "import os; print(os.getpgid(0) == os.getpid())"
    done = run_child([sys.executable, "-c", code])
    assert done.stdout == "True\n"
    with pytest.raises(subprocess.TimeoutExpired):
        run_child(["sleep", "5"], timeout=0.3)


# ---------------------------------------------------------------------- --auto io, eighth set (2026-12-06)


def test_kill_group_never_waits_without_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group that outlives SIGKILL (a process in uninterruptible sleep) or that envbuilder may
    not signal: each wait lasts `wait_s` at most, and kill_group returns."""
    from envbuilder.lifecycle import kill_group

    class Stuck:
        pid = 4242

        def __init__(self) -> None:
            self.waits: list[float | None] = []

        def wait(self, timeout: float | None = None) -> int:
            self.waits.append(timeout)
            if timeout is None:
                pytest.fail("kill_group waited without a bound")
            raise subprocess.TimeoutExpired("stuck", timeout)

    sent: list[int] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append(sig))
    stuck = Stuck()
    kill_group(stuck, wait_s=0.01)  # type: ignore[arg-type]
    assert sent == [signal.SIGTERM, signal.SIGKILL] and stuck.waits == [0.01, 0.01, 0.01]

    def refused(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "killpg", refused)
    other = Stuck()
    kill_group(other, wait_s=0.01)  # type: ignore[arg-type]
    assert other.waits == [0.01]


def test_run_childs_child_reads_no_stdin_and_runs_in_the_folder_given(tmp_path: Path) -> None:
    """The child's stdin is empty (/dev/null, never envbuilder's own: a tool that asks waits on
    nobody), even when envbuilder's stdin is a pipe with something in it; and it runs in `cwd`."""
    code = "import os, sys; print(repr(sys.stdin.read())); print(os.getcwd())"
    saved = os.dup(0)
    read_end, write_end = os.pipe()
    os.write(write_end, b"typed\n")
    os.close(write_end)
    try:
        os.dup2(read_end, 0)
        done = run_child([sys.executable, "-c", code], cwd=tmp_path, timeout=30)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert done.stdout.splitlines() == ["''", str(tmp_path)]


def test_run_childs_child_dies_with_envbuilder_even_on_sigkill(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    code = f"import os, time; open({str(pidfile)!r} + '.tmp', 'w').write(str(os.getpid())); " + (
        f"os.rename({str(pidfile)!r} + '.tmp', {str(pidfile)!r}); time.sleep(60)"
    )
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from envbuilder.lifecycle import run_child; "
            f"run_child([sys.executable, '-c', {code!r}])",
        ]
    )
    try:
        _wait_for(pidfile)
        child = int(pidfile.read_text())
        parent.kill()
        parent.wait(timeout=10)
        try:
            assert _gone(child), "run_child's child outlived its SIGKILLed parent"
        finally:
            if process_start(child) is not None and _state(child) != "Z":
                os.kill(child, signal.SIGKILL)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_kill_group_of_a_child_already_gone_returns_quietly() -> None:
    """The group ended (and was reaped) before envbuilder's stop reached it: no signal to send,
    no error, nothing to wait for."""
    from envbuilder.lifecycle import kill_group

    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait(timeout=30)
    kill_group(proc, wait_s=0.1)
    assert proc.returncode == 0


def test_run_child_reads_output_that_is_not_utf_8_without_failing() -> None:
    """A tool's output is text with undecodable bytes replaced (a wheel name or a path in
    another encoding), never a UnicodeDecodeError that loses the whole answer."""
    import locale

    code = "import sys; sys.stdout.buffer.write(b'caf\\xe9\\n'); sys.stderr.buffer.write(b'\\xff\\n')"
    done = run_child([sys.executable, "-c", code])
    encoding = locale.getpreferredencoding(False)  # what text mode decodes with (UTF-8 here)
    assert (done.stdout, done.stderr) == (
        b"caf\xe9\n".decode(encoding, "replace"),
        b"\xff\n".decode(encoding, "replace"),
    )


# ------------------------------------------------------------- no fork with Python code (2026-12-06)
# CI's full run warned "os.fork() was called ... JAX is multithreaded, so this will likely lead to
# a deadlock": test_harness_jax.py had started JAX's threads in the pytest process, and every later
# child started through die_with_parent (a preexec_fn) was a real fork() that ran Python code, and
# every at-fork hook, in the child. envbuilder's own processes have threads too (the podman CPU
# meter starts `podman stats` from its thread while the main thread reads the container's output).


def _this_envbuilder() -> dict[str, str]:
    """The environment for a child Python that imports the envbuilder under test (this checkout's,
    whatever the virtual environment's editable install points at)."""
    import envbuilder

    return {**os.environ, "PYTHONPATH": str(Path(envbuilder.__file__).resolve().parents[1])}


def test_no_python_code_runs_in_a_child_between_its_fork_and_its_exec(tmp_path: Path) -> None:
    """A process with a thread of its own and at-fork hooks (as JAX's and logging's): starting
    children with run_child and start_child runs none of the hooks, in the parent or the child.
    In a child Python of its own: an at-fork hook cannot be taken back from the pytest process."""
    seen = tmp_path / "hooks"
    code = textwrap.dedent(
        f"""
        import os, threading, time
        from envbuilder.lifecycle import run_child, start_child
        def note(where):
            with open({str(seen)!r}, "a") as f:
                f.write(where + "\\n")
        os.register_at_fork(before=lambda: note("before"), after_in_child=lambda: note("child"))
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        assert run_child(["true"], timeout=30).returncode == 0
        assert start_child(["true"]).wait(timeout=30) == 0
        print("started")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_this_envbuilder()
    )
    assert done.returncode == 0 and done.stdout == "started\n", done.stderr[-2000:]
    assert not seen.exists(), f"at-fork hooks ran: {seen.read_text().split()}"


def test_a_process_with_jax_started_starts_children_without_jaxs_fork_warning(tmp_path: Path) -> None:
    """CI's warning itself, in a child Python of its own (JAX's threads stay out of pytest's)."""
    if importlib.util.find_spec("jax") is None:  # not imported here: jax stays out of pytest's process
        pytest.skip("jax is not installed")
    code = textwrap.dedent(
        """
        import jax.numpy as jnp
        jnp.ones(3).block_until_ready()  # JAX's backend: its threads, its at-fork hook
        from envbuilder.lifecycle import run_child
        assert run_child(["true"], timeout=60).returncode == 0
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**_this_envbuilder(), "JAX_PLATFORMS": "cpu"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "fork" not in done.stderr, done.stderr[-2000:]


def test_start_childs_child_is_the_program_with_the_signals_a_program_expects() -> None:
    """The pid Popen gives is the program's own (the arming Python execs it in place), and the
    program gets SIGPIPE and SIGXFSZ at their defaults, which the arming Python's start-up ignored:
    `yes | head` ends, a full disk's file ends the writer, as under subprocess alone."""
    from envbuilder.lifecycle import start_child

    code = "import os; print(os.getpid())"
    with start_child([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as proc:
        out, _ = proc.communicate(timeout=30)
    assert int(out) == proc.pid and proc.returncode == 0
    status = run_child(["cat", "/proc/self/status"], timeout=30).stdout
    ignored = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} is ignored in the child"


def test_start_child_raises_as_popen_does_for_a_program_that_cannot_start(tmp_path: Path) -> None:
    from envbuilder.lifecycle import start_child

    with pytest.raises(FileNotFoundError) as missing:
        start_child([str(tmp_path / "no-such-program")], stdout=subprocess.PIPE)
    assert missing.value.filename == str(tmp_path / "no-such-program")
    with pytest.raises(FileNotFoundError):
        run_child(["envbuilder-no-such-program-anywhere"], env={"PATH": str(tmp_path)})
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        start_child([str(script)])


def test_no_module_of_envbuilder_passes_a_preexec_fn() -> None:
    """A preexec_fn is Python code in a forked child of a process that may have threads (the
    subprocess documentation: "not safe to use in the presence of threads"); start_child arms
    what one did in a process of its own."""
    import ast

    import envbuilder

    root = Path(envbuilder.__file__).parent
    found = [
        f"{path.relative_to(root)}:{node.lineno}"
        for path in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.keyword) and node.arg == "preexec_fn"
    ]
    assert found == []
