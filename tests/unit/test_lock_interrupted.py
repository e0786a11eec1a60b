"""An interrupted `envbuilder lock` leaves nothing of uv's behind (issue 23 item 11, hostile-
inputs D8): the real CLI in a child process locks torch 2.13.0 CPU from the local wheelhouse
(uv unpacks the 200 MB torch wheel to hash it), is stopped mid-way, and TMPDIR must be empty.
Before the fix, uv's `--no-cache` cache (.tmpXXXXXX, 107-750 MB) stayed in TMPDIR every time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

SPEC = """schema_version: 1
name: h1-kill
framework: "torch==2.13.0"
python: "3.11"
strategy: bundled
requirements:
  - "filelock"
"""


def _uv_running(tmp: Path) -> bool:
    """uv has started writing in the temp folder (its cache, its temporary files)."""
    for lock_dir in tmp.glob("envbuilder-lock-*"):
        for sub in ("uv-cache", "tmp"):
            if any((lock_dir / sub).glob("*")):
                return True
    return any(p.name.startswith(".tmp") for p in tmp.iterdir())


def _leftovers(tmp: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))


@pytest.mark.parametrize(
    ("signum", "group", "code"),
    [
        (signal.SIGINT, True, 130),  # Ctrl-C on a terminal: the whole foreground group gets it
        (signal.SIGINT, False, 130),
        (signal.SIGTERM, False, 143),
    ],
)
def test_a_stopped_lock_leaves_no_uv_cache_in_tmpdir(
    tmp_path: Path, wheelhouse: Path, signum: int, group: bool, code: int
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    spec = tmp_path / "kill.yaml"
    spec.write_text(SPEC)
    argv = [sys.executable, "-m", "envbuilder", "lock", str(spec), "--cpu", "--no-index"]
    argv += ["--find-links", str(wheelhouse), "--out", str(tmp_path / "kill.lock.json")]
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not _uv_running(tmp) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None, f"lock ended before uv ran: {proc.communicate()}"
        assert _uv_running(tmp), "uv never started writing"
        time.sleep(1.5)  # well inside the torch wheel's unpacking
        if group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err[-2000:]
    assert "Traceback" not in err
    assert not (tmp_path / "kill.lock.json").exists()
    deadline = time.monotonic() + 10  # a killed uv is reaped before envbuilder removes its folder
    while _leftovers(tmp) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _leftovers(tmp) == []


def test_a_lock_killed_with_sigkill_is_swept_by_the_next_one(tmp_path: Path, wheelhouse: Path) -> None:
    """SIGKILL: no cleanup can run; uv dies with envbuilder (lifecycle.start_child) and its folder,
    envbuilder's own, is removed by the next envbuilder command (sweep_temp_dirs)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    spec = tmp_path / "kill.yaml"
    spec.write_text(SPEC)
    argv = [sys.executable, "-m", "envbuilder", "lock", str(spec), "--cpu", "--no-index"]
    argv += ["--find-links", str(wheelhouse), "--out", str(tmp_path / "kill.lock.json")]
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not _uv_running(tmp) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)
    proc.kill()
    proc.wait()
    left = [p for p in tmp.iterdir()]
    assert [p.name for p in left if not p.name.startswith("envbuilder-lock-")] == []  # nothing outside ours
    for p in left:  # as if a minute had passed (the sweep spares younger folders: a live start)
        os.utime(p, (time.time() - 120, time.time() - 120))
    from envbuilder.lifecycle import sweep_temp_dirs

    deadline = time.monotonic() + 10  # uv, killed by the kernel, is gone a moment later
    while _leftovers(tmp) and time.monotonic() < deadline:
        sweep_temp_dirs(tmp)
        time.sleep(0.2)
    assert _leftovers(tmp) == []
