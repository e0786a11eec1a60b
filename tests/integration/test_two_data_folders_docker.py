"""Issue 23 item 13 on the real daemon: two envbuilder users (two data folders) on one Docker
daemon, as on a shared GPU server.

- alice's `run` client is SIGKILLed: her job's container stays. bob's envbuilder (another data
  folder) starts beside it: his janitor neither removes nor records her job (before the fix it did
  both, and that was the flaky test_after_a_sigkill_of_the_client_the_next_command_records_the_
  orphaned_run when another user's test suite ran beside it). alice's next command records it.
- alice's build is held mid-commit (her tag set, her journal written) and bob builds the same tag
  from his own data folder: he waits for her (one lock folder per machine, tags keyed by daemon);
  she is SIGKILLed, he finishes; her next build repairs her journal without moving his tag.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.engine import DockerEngine
from envbuilder.engine.ownership import DATA_LABEL, data_mark

pytestmark = pytest.mark.docker

JANITOR = "from envbuilder.engine import DockerEngine; DockerEngine().ping()"  # any command's first contact


def _env(data: Path, locks: Path) -> dict[str, str]:
    return {**os.environ, "ENVBUILDER_DATA_DIR": str(data), "ENVBUILDER_LOCK_DIR": str(locks)}


def _janitor(data: Path, locks: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", JANITOR], env=_env(data, locks), capture_output=True, text=True, timeout=120
    )


def _container(cid: str) -> dict[str, object] | None:
    res = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True)
    return json.loads(res.stdout)[0] if res.returncode == 0 else None


def _runs(data: Path) -> list[dict[str, object]]:
    path = data / "runs.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_one_users_janitor_leaves_another_users_orphaned_job(base_image: str, tmp_path: Path) -> None:
    alice, bob, locks = tmp_path / "alice", tmp_path / "bob", tmp_path / "locks"
    client = subprocess.Popen(
        [sys.executable, "-m", "envbuilder", "run", "--force", "--gpu-access", "none", base_image, "--",
         "sh", "-c", "echo started; sleep 300"],
        env=_env(alice, locks), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    cid = ""
    try:
        assert client.stdout is not None
        assert client.stdout.readline().strip() == "started", client.stderr.read() if client.stderr else ""
        # -a: the job can print before the daemon marks its container running (1 run in 6 here,
        # 2026-12-05: "started" read, the container still "Created" in `docker ps -a`)
        found = subprocess.run(
            ["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={DATA_LABEL}={data_mark(alice)}"],
            capture_output=True, text=True,
        )  # fmt: skip
        (cid,) = found.stdout.split()
        client.kill()  # SIGKILL: nothing of alice's envbuilder runs any more
        client.communicate(timeout=60)
        assert _runs(alice) == []

        theirs = _janitor(bob, locks)
        assert theirs.returncode == 0, theirs.stderr
        state = _container(cid)
        assert state is not None and state["State"]["Running"] is True  # type: ignore[index]
        assert cid[:12] not in theirs.stderr and _runs(alice) == [] and _runs(bob) == []

        own = _janitor(alice, locks)
        assert own.returncode == 0, own.stderr
        assert f"({cid[:12]}, running), left by an envbuilder run that is gone" in own.stderr
        assert _container(cid) is None
        (line,) = _runs(alice)
        assert (line["outcome"], line["exit_code"], line["recorded_by"]) == ("orphaned", 137, "janitor")
        assert _runs(bob) == []
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        if cid:
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True)


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"the build ended early (exit {proc.returncode}): {proc.communicate()[1][-3000:]}")
        assert time.monotonic() < deadline, "the build never reached its commit"
        time.sleep(0.2)


def test_two_data_folders_building_one_tag_wait_for_each_other(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
) -> None:
    alice, bob, locks = tmp_path / "alice", tmp_path / "bob", tmp_path / "locks"
    tag = f"envbuilder-it/two-users:{run_id}"
    cleanup_refs.append(tag)
    spec_a = write_spec(tmp_path / "a", "two-users").path
    spec_b = write_spec(tmp_path / "b", "two-users").path
    spec_b.write_text(spec_b.read_text() + 'env:\n  BOBS_BUILD: "1"\n')  # another image, same tag

    def build(spec: Path, lock_out: Path) -> list[str]:
        return [sys.executable, "-m", "envbuilder", "build", str(spec), "--cpu", "--base-image", base_image,
                "--wheelhouse", str(wheelhouse), "--tag", tag, "--lock-out", str(lock_out)]  # fmt: skip

    hold = tmp_path / "alice-holds"
    first = subprocess.Popen(
        build(spec_a, tmp_path / "alice.lock.json"),
        env={**_env(alice, locks), "ENVBUILDER_TEST_HOLD_COMMIT": str(hold)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    second: subprocess.Popen[str] | None = None
    try:
        _wait_for(hold, first)  # alice: tag set, journal written, lock file not yet
        alices = engine.inspect_image(tag)
        assert alices is not None
        second = subprocess.Popen(
            build(spec_b, tmp_path / "bob.lock.json"), env=_env(bob, locks),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert second.stderr is not None
        waiting = second.stderr.readline()
        while waiting and "waiting for" not in waiting:
            waiting = second.stderr.readline()
        assert f"waiting for envbuilder {os.uname().nodename}/{first.pid}/" in waiting, waiting
        assert waiting.rstrip().endswith(f"which is writing {tag}")
        time.sleep(2)
        assert second.poll() is None and not (tmp_path / "bob.lock.json").exists()  # he waits

        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
        _, err = second.communicate(timeout=900)
        assert second.returncode == 0, err[-3000:]
        bobs = engine.inspect_image(tag)
        assert bobs is not None and bobs.id != alices.id
        bob_lock = json.loads((tmp_path / "bob.lock.json").read_text())
        assert bobs.id in json.dumps(bob_lock)
        assert not (tmp_path / "alice.lock.json").exists()

        # alice's next build (another output) repairs her journal: bob's tag is not hers to undo.
        other = f"envbuilder-it/two-users-next:{run_id}"
        cleanup_refs.append(other)
        cmd = build(spec_a, tmp_path / "alice2.lock.json")
        cmd[cmd.index(tag)] = other
        res = subprocess.run(cmd, env=_env(alice, locks), capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-3000:]
        assert "undid a build that was killed mid-commit" in res.stderr
        after = engine.inspect_image(tag)
        assert after is not None and after.id == bobs.id
        assert not (tmp_path / "alice.lock.json").exists()
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_cli_uses_the_machines_lock_folder(tmp_path: Path) -> None:
    """A lock folder that is a symlink is refused with the folder named and the variable to set."""
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    spec = write_spec(tmp_path / "images", "two-users-refused").path
    res = envbuilder_cli(
        "build", str(spec), "--cpu", "--tag", "envbuilder-it/never:1", "--lock-out", str(tmp_path / "l.json"),
        env={"ENVBUILDER_LOCK_DIR": str(tmp_path / "link")},
    )  # fmt: skip
    assert res.returncode == 18, res.stderr[-2000:]
    assert f"cannot lock the build's outputs in {tmp_path / 'link'}" in res.stderr
    assert "ENVBUILDER_LOCK_DIR" in res.stderr and "Traceback" not in res.stderr
