"""How envbuilder stops: one mechanism for build, certify and run (and whatever comes next).

SIGINT, SIGTERM and SIGHUP become an exception in the main thread (`Stopped`, a KeyboardInterrupt,
so every `finally` and every Ctrl-C handler runs: containers are stopped and removed, the build's
process group is killed, temporary folders go, the run-log line is written). A second signal while
that cleanup runs is noted, not raised, so it cannot cut the cleanup short; a third one gives up
on it. Children started with `start_child` get SIGKILL when envbuilder dies, even by SIGKILL.

What a SIGKILL leaves (a container, a temporary folder) is found by its owner mark
(`owner_mark`: host, pid and the process's start time, so a reused pid is not taken for the
owner) and removed at the next start (engine's janitor, `sweep_temp_dirs`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from envbuilder.errors import Interrupted, Terminated

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
TEMP_PREFIX = "envbuilder-"
# envbuilder-<purpose>-<pid>-<start ticks>-<random>: mkdtemp's 8 random characters follow the last '-'.
_TEMP_RE = re.compile(r"^envbuilder-[a-z0-9]+-(\d+)-(\d+)-[a-z0-9_]{8}$", re.ASCII)
# Inside every temp folder: its owner mark. Only a folder holding it, naming the process its name
# names, is envbuilder's to sweep; a user's folder that merely looks like one is never touched.
OWNER_FILE = ".envbuilder-owner"
_MARK_RE = re.compile(r"^(.+)/([0-9]{1,10})/([0-9]{1,20})$", re.ASCII)


class Stopped(KeyboardInterrupt):
    """A stop signal arrived (Ctrl-C is SIGINT). A KeyboardInterrupt, so the code that rolls back
    on Ctrl-C rolls back on SIGTERM too; `signum` says which signal it was."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def stop_signal(exc: BaseException) -> int:
    """The signal behind a KeyboardInterrupt: its own for `Stopped`, SIGINT for a plain one."""
    return exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT)


def stop_error(exc: BaseException, message: str | None = None, hint: str | None = None) -> Interrupted:
    """The error a stop ends a command with, so also its exit code: Interrupted (130) for Ctrl-C,
    Terminated (143) for SIGTERM or SIGHUP."""
    signum = stop_signal(exc)
    if signum == signal.SIGINT:
        return Interrupted(message or "interrupted", hint=hint)
    return Terminated(message or f"terminated by {signal.Signals(signum).name}", hint=hint)


_received: list[int] = []


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    if len(_received) == 1:
        raise Stopped(signum)
    if len(_received) == 2:
        print(
            f"envbuilder: {signal.Signals(signum).name}: cleaning up (containers, build, temporary "
            "folders); send it again to leave that to the next start",
            file=sys.stderr,
            flush=True,
        )
        return
    raise Stopped(signum)


def install_signal_handlers() -> None:
    """Turn SIGINT, SIGTERM and SIGHUP into `Stopped` in the main thread (the CLI calls it once)."""
    _received.clear()
    for sig in HANDLED:
        with contextlib.suppress(ValueError, OSError):  # not the main thread, or not settable here
            signal.signal(sig, _on_signal)


# ---------------------------------------------------------------------------------- owner marks


def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None when
    there is no such process. With the pid it names one process: a pid is reused, this pair not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name may hold spaces and ')'
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def owner_mark(pid: int | None = None) -> str:
    """`HOST/PID/START` of this process (or `pid`): what envbuilder's containers carry as their
    owner label, so a janitor can tell a live run's container from a crashed one's."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}/{pid}/{process_start(pid) or 0}"


def owner_alive(mark: str, host: str | None = None) -> bool | None:
    """Whether the owner named by an owner mark still runs: True, False, or None when the mark is
    malformed or names another host (which this machine cannot see)."""
    m = _MARK_RE.match(mark)
    if m is None or m.group(1) != (host or socket.gethostname()):
        return None
    start = process_start(int(m.group(2)))
    return start is not None and start == int(m.group(3))


# ---------------------------------------------------------------------------------- children


# What a child started by `start_child` runs before the program asked for: its own short Python
# program (python -I -S -c), exec'd by subprocess with no code of envbuilder's between the fork and
# the exec. It asks for SIGKILL when envbuilder dies (prctl PR_SET_PDEATHSIG, kept across the exec),
# exits at once if envbuilder is already gone, gives back the signals Python's start-up ignores
# (SIGPIPE, SIGXFSZ: what subprocess's restore_signals gives back), then execs the program in the
# same process; an exec that fails sends its errno on ERRFD (closed by an exec that works).
_ARM = """\
import os, signal, sys
parent, errfd, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
except (OSError, AttributeError, ImportError):
    pass
if os.getppid() != parent:
    os._exit(1)
for name in ("SIGPIPE", "SIGXFSZ"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
os.set_inheritable(errfd, False)
try:
    os.execvp(argv[0], argv)
except OSError as e:
    os.write(errfd, str(e.errno or 0).encode())
os._exit(127)
"""


def start_child(argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen(argv, **popen) for a child that gets SIGKILL when this process dies,
    however it dies (prctl PR_SET_PDEATHSIG), and exits at once if this process is already gone.
    Raises what Popen raises (OSError: cannot start it, a program not found included).

    No Python code runs in the child between the fork and the exec (no `preexec_fn`): a process
    with threads (envbuilder's own meters, tickers and readers; a test process with JAX's or
    torch's threads) may fork only into code that needs none of their locks. A `preexec_fn`
    forks with Python code to run, and runs every at-fork hook (JAX warns from its own: "os.fork()
    was called ... this will likely lead to a deadlock"). Here subprocess execs a fresh Python,
    which arms the death signal and execs `argv`: same process, same pid, one start-up of Python
    (about 10 ms) more."""
    argv = [os.fspath(a) for a in argv]
    if not sys.platform.startswith("linux") or not sys.executable:
        return subprocess.Popen(argv, **popen)  # no death signal to arm there
    read_end, write_end = os.pipe()
    try:
        popen["pass_fds"] = (*popen.get("pass_fds", ()), write_end)
        arm = [sys.executable, "-I", "-S", "-c", _ARM, str(os.getpid()), str(write_end)]
        proc = subprocess.Popen([*arm, *argv], **popen)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as errors:  # EOF once the program is exec'd (or the child is gone)
            said = errors.read()
    except BaseException:
        _discard(proc)
        raise
    if said:
        _discard(proc)
        try:
            code = int(said)
        except ValueError:
            code = errno.EIO
        raise OSError(code, os.strerror(code), argv[0])
    return proc


def _discard(proc: subprocess.Popen[Any]) -> None:
    """A child that never became its program: killed, reaped, its pipes closed."""
    with contextlib.suppress(OSError):
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def kill_group(proc: subprocess.Popen[Any], first: int = signal.SIGTERM, wait_s: float = 5.0) -> None:
    """Stop a child started in its own process group (start_new_session) and everything it
    started: `first` to the whole group, SIGKILL if it is still there after `wait_s`; returns once
    the child is gone (reaped), so what it was writing can be removed safely after."""
    for sig in (first, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)


def run_child(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """subprocess.run (output captured as text, no stdin) for a tool envbuilder waits on, such
    as uv: in a process group of its own that is ended whole when envbuilder stops (a stop
    signal's `Stopped`, a timeout, any exception), and killed with envbuilder on a SIGKILL
    (start_child). A terminal's Ctrl-C reaches envbuilder alone, which then ends the group
    before its `finally` blocks remove the child's folders. Raises OSError (cannot start it),
    subprocess.TimeoutExpired."""
    with start_child(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        cwd=cwd,
        env=env,
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            kill_group(proc)
            raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


# ---------------------------------------------------------------------------------- temp folders


def temp_dir(purpose: str, parent: Path | None = None, *, marked: bool = True) -> Path:
    """A new private folder `envbuilder-PURPOSE-PID-START-XXXXXXXX` (in `parent`, else the
    system's temp folder) holding OWNER_FILE (this process's owner mark): the caller removes it in
    a `finally`; after a SIGKILL `sweep_temp_dirs` does. `marked=False` leaves it empty (a rename
    target), and then unswept until the caller calls `mark_temp_dir` on it."""
    start = process_start(os.getpid()) or 0
    path = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{purpose}-{os.getpid()}-{start}-", dir=parent))
    if marked:
        mark_temp_dir(path)
    return path


def mark_temp_dir(path: Path) -> None:
    """Write this process's owner mark into `path` (one of its temp folders): what makes it
    sweepable once this process is gone. Raises OSError."""
    (Path(path) / OWNER_FILE).write_text(owner_mark() + "\n", encoding="ascii")


def _is_ours(entry: Path, pid: int, start: int) -> bool:
    """Whether a folder whose name matches temp_dir's was made by temp_dir for that process: it
    holds OWNER_FILE naming this host, that pid and that start time. Raises OSError (no owner
    file, or one that cannot be read: the sweep skips the folder)."""
    mark = (entry / OWNER_FILE).read_text(encoding="ascii", errors="replace").strip()
    m = _MARK_RE.match(mark)
    if m is None or m.group(1) != socket.gethostname():
        return False
    return (int(m.group(2)), int(m.group(3))) == (pid, start)


@contextlib.contextmanager
def scratch_dir(purpose: str, parent: Path | None = None) -> Iterator[Path]:
    """temp_dir as a context: removed on every way out (a stop signal included)."""
    path = temp_dir(purpose, parent)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep_temp_dirs(root: Path | None = None, *, min_age_s: float = 60.0) -> list[Path]:
    """Remove the temporary folders of envbuilder processes that are gone (killed before their
    cleanup ran); return what was removed. Only folders temp_dir made are candidates: the name
    pattern with a pid and start time, and OWNER_FILE inside naming that same process (a user's
    `envbuilder-render-1-1-abc/` is never removed). A folder whose owner still runs, that is
    younger than `min_age_s`, not a real folder (a symlink) or another user's, stays."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        m = _TEMP_RE.fullmatch(entry.name)  # `$` would take a name with a final line break
        if m is None:
            continue
        pid, start = int(m.group(1)), int(m.group(2))
        live = process_start(pid)
        if live is not None and live == start:
            continue
        try:
            if not entry.is_dir() or entry.is_symlink() or now - entry.lstat().st_mtime < min_age_s:
                continue
            if entry.lstat().st_uid != os.getuid() or not _is_ours(entry, pid, start):
                continue
        except OSError:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed
