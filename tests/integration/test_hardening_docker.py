"""Issue 18 for real, against the Docker daemon: an image cannot certify itself, and two builds of
one spec (one SIGKILLed inside the tag -> lock window) leave tag and lock agreeing.

The stub image is built FROM the bundled CPU image (conftest's cpu_image); the builds reuse its
layer cache, so each takes the time of a cached build plus the installed-set check.
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
from envbuilder.image.commit import HOLD_ENV
from envbuilder.image.lock import read_lock

pytestmark = pytest.mark.docker

# The image's own harness and its python3 both print a GPU verdict (issue 18, defect 1).
STUB_RESULT = '{"kind":"result","verdict":"certified","verdict_reason":"all GPU steps passed"}'
STUB = f"""#!/bin/sh
echo '{STUB_RESULT}'
echo '{STUB_RESULT}' > /envbuilder-io/result.json 2>/dev/null
exit 0
"""


def test_an_image_that_replaces_the_harness_and_python_cannot_certify_itself(
    cpu_image: str, engine: DockerEngine, run_id: str, cleanup_refs: list[str], tmp_path: Path
) -> None:
    info = engine.inspect_image(cpu_image)
    assert info is not None
    harness = info.labels["io.envbuilder.harness"]
    (tmp_path / "stub").write_text(STUB)
    (tmp_path / "Dockerfile").write_text(
        f"FROM {cpu_image}\nUSER root\nCOPY stub {harness}/run.py\nCOPY stub /opt/venv/bin/python3\n"
        f"COPY stub /usr/local/bin/python3\nRUN chmod 755 {harness}/run.py /opt/venv/bin/python3 "
        "/usr/local/bin/python3\n"
    )
    tag = f"envbuilder-it/stub:{run_id}"
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr[-2000:]
    cleanup_refs.append(tag)
    data = tmp_path / "data"
    res = envbuilder_cli(
        "certify", tag, "--gpu-access", "none", "--json", env={"ENVBUILDER_DATA_DIR": str(data)}
    )
    assert res.returncode == 11, res.stderr[-3000:]
    assert "CERTIFIED" not in res.stdout + res.stderr
    assert "refused: the harness result is malformed" in res.stderr
    listed = json.loads(
        envbuilder_cli("certs", "list", "--json", env={"ENVBUILDER_DATA_DIR": str(data)}).stdout
    )
    assert [c["verdict"] for c in listed] == ["failed"]  # the evidence is kept, as failed


# Issue 23 D7: an image whose python3 prints JSON nested 100,000 deep and plants result.json as a
# symlink to a file of the host's (the io folder is a bind mount: the host would follow it).
DEEP_STUB = """#!/bin/sh
printf '{"kind":"result","a":'
head -c 100000 /dev/zero | tr '\\0' '['
head -c 100000 /dev/zero | tr '\\0' ']'
printf '}\\n'
ln -sf HOST_FILE /envbuilder-io/result.json 2>/dev/null
exit 0
"""


def test_an_image_printing_deep_json_or_planting_a_result_symlink_fails_without_a_traceback(
    cpu_image: str, engine: DockerEngine, run_id: str, cleanup_refs: list[str], tmp_path: Path
) -> None:
    info = engine.inspect_image(cpu_image)
    assert info is not None
    harness = info.labels["io.envbuilder.harness"]
    host_file = tmp_path / "host-result.json"  # what the planted link names, on the host
    host_file.write_text(STUB_RESULT)
    (tmp_path / "stub").write_text(DEEP_STUB.replace("HOST_FILE", str(host_file)))
    (tmp_path / "Dockerfile").write_text(
        f"FROM {cpu_image}\nUSER root\nCOPY stub {harness}/run.py\nCOPY stub /opt/venv/bin/python3\n"
        f"COPY stub /usr/local/bin/python3\nRUN chmod 755 {harness}/run.py /opt/venv/bin/python3 "
        "/usr/local/bin/python3\n"
    )
    tag = f"envbuilder-it/deep:{run_id}"
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert built.returncode == 0, built.stderr[-2000:]
    cleanup_refs.append(tag)
    res = envbuilder_cli(
        "certify", tag, "--gpu-access", "none", env={"ENVBUILDER_DATA_DIR": str(tmp_path / "data")}
    )
    assert res.returncode == 11, res.stderr[-3000:]  # was a RecursionError traceback, exit 1
    assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr
    assert "produced no result" in res.stderr and "CERTIFIED" not in res.stdout + res.stderr


def _build(
    spec: Path, tag: str, lock_out: Path, base: str, wheels: Path, **env: str
) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "envbuilder", "build", str(spec), "--cpu", "--base-image", base,
            "--wheelhouse", str(wheels), "--tag", tag, "--lock-out", str(lock_out)]  # fmt: skip
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_two_builds_of_one_spec_and_a_sigkill_mid_commit_leave_tag_and_lock_agreeing(
    cpu_image: str,
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
) -> None:
    spec = write_spec(tmp_path / "images", "certify-it")  # cpu_image's spec: its layers are cached
    tag, lock_out, hold = f"envbuilder-it/race:{run_id}", tmp_path / "race.lock.json", tmp_path / "held"
    cleanup_refs.append(tag)
    first = _build(spec.path, tag, lock_out, base_image, wheelhouse, **{HOLD_ENV: str(hold)})
    second: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 600
        while not hold.exists():
            assert first.poll() is None, first.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the first build never reached its commit"
            time.sleep(0.5)
        # Inside the window: tagged, the lock not yet written (what a SIGKILL used to leave).
        tagged = engine.inspect_image(tag)
        assert tagged is not None and not lock_out.exists()
        second = _build(spec.path, tag, lock_out, base_image, wheelhouse)
        time.sleep(8)
        assert second.poll() is None  # it waits for the first build's outputs
        first.send_signal(signal.SIGKILL)
        first.wait()
        _out, err = second.communicate(timeout=600)
        assert second.returncode == 0, err[-3000:]
        assert "waiting for envbuilder" in err and "finished a build that was killed mid-commit" in err
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    lock = read_lock(lock_out)
    now = engine.inspect_image(tag)
    assert lock.build is not None and now is not None and lock.build.image_id == now.id
    assert list((Path(os.environ["ENVBUILDER_DATA_DIR"]) / "commits").iterdir()) == []
