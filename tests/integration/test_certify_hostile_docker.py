"""Issue 23 for real, against the Docker daemon: an image with its framework deleted (D2) and an
image whose `python3` replays a recorded passing result with this run's nonce (D3) get no
certificate on the CPU path, and `run` refuses both.

Both images are built FROM the bundled CPU image (conftest's cpu_image) in one or two small
layers. The honest quick run that the replay is recorded from is also the check that the host's
CPU-time floor does not refuse an honest run on this (loaded, 2-core) machine.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import envbuilder_cli

pytestmark = pytest.mark.docker

SITE = "/opt/venv/lib/python3.11/site-packages"

# D3's replaying `python3` (shared/reference/hostile-inputs-2026-12-04.md), which sleeps through the
# time the recorded steps claim, so that the host's clock alone cannot tell: only the CPU time the
# container's cgroup used (read by the host) is left to.
REPLAYER = """#!/bin/sh
nonce=""; out=""
while [ $# -gt 0 ]; do case "$1" in --nonce) nonce="$2"; shift;; --out) out="$2"; shift;; esac; shift; done
sleep {sleep}
[ -n "$out" ] && sed "s/__NONCE__/$nonce/" /opt/recorded.json > "$out"
exit 0
"""


def _user(image: str) -> str:
    found = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Config.User}}", image],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return found.stdout.strip() or "root"


def _build(context: Path, dockerfile: str, tag: str, cleanup_refs: list[str]) -> None:
    (context / "Dockerfile").write_text(dockerfile)
    built = subprocess.run(
        ["docker", "build", "-q", "-t", tag, str(context)], capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stderr[-2000:]
    cleanup_refs.append(tag)


def _certify(image: str, data: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = {"ENVBUILDER_DATA_DIR": str(data)}
    return envbuilder_cli("certify", image, "--gpu-access", "none", "--quick", *more, env=env)


def _verdicts(data: Path) -> list[str]:
    res = envbuilder_cli("certs", "list", "--json", env={"ENVBUILDER_DATA_DIR": str(data)})
    assert res.returncode == 0, res.stderr
    return [c["verdict"] for c in json.loads(res.stdout)]


def _run_refused(image: str, data: Path) -> None:
    env = {"ENVBUILDER_DATA_DIR": str(data)}
    res = envbuilder_cli("run", image, "--gpu-access", "none", "--", "true", env=env)
    assert res.returncode == 12, res.stderr[-2000:]
    assert "refusing to run" in res.stderr


def test_an_image_whose_framework_was_deleted_is_not_certified(
    cpu_image: str, run_id: str, cleanup_refs: list[str], tmp_path: Path
) -> None:
    tag = f"envbuilder-it/h2-noframework:{run_id}"
    _build(
        tmp_path,
        f"FROM {cpu_image}\nUSER root\nRUN rm -rf {SITE}/torch\nUSER {_user(cpu_image)}\n",
        tag,
        cleanup_refs,
    )
    data = tmp_path / "data"
    res = _certify(tag, data)
    assert res.returncode == 11, res.stderr[-3000:]
    assert "CERTIFIED" not in res.stdout + res.stderr
    assert "torch is not installed, but this certification is for torch" in res.stderr
    assert "failed certification: failed steps: cpu_check" in res.stderr
    assert _verdicts(data) == ["failed"]  # the evidence is kept, as failed; nothing that passes
    _run_refused(tag, data)


def _recorded(cert: dict[str, Any], nonce: str) -> str:
    """The honest run's harness result with its nonce left to fill in, as D3 recorded it."""
    text = json.dumps(cert["harness"])
    assert text.count(nonce) == 1
    return text.replace(nonce, "__NONCE__")


def test_an_image_that_replays_a_recorded_result_is_not_certified(
    cpu_image: str, run_id: str, cleanup_refs: list[str], tmp_path: Path
) -> None:
    nonce = "f" * 32
    honest_data = tmp_path / "honest"
    honest = _certify(cpu_image, honest_data, "--json", "--nonce", nonce)
    assert honest.returncode == 0, honest.stderr[-3000:]  # the CPU floor passes an honest run here
    cert = json.loads(honest.stdout)
    host_cpu = cert["run"]["host_cpu"]
    assert host_cpu["samples"] >= 1 and host_cpu["cpu_seconds"] > 0.5, host_cpu
    claimed = sum(s["seconds"] for s in cert["harness"]["steps"] if s["status"] != "skip")
    claimed = max(claimed, cert["harness"]["wall_seconds"])
    print(f"honest quick CPU run: claimed {claimed:.1f} s, host saw {host_cpu} in {cert['run']['seconds']} s")

    (tmp_path / "recorded.json").write_text(_recorded(cert, nonce))
    (tmp_path / "python3").write_text(REPLAYER.format(sleep=int(claimed) + 2))
    tag = f"envbuilder-it/h2-replay:{run_id}"
    _build(
        tmp_path,
        f"FROM {cpu_image}\nUSER root\nCOPY recorded.json /opt/recorded.json\n"
        "COPY python3 /opt/venv/bin/python3\nCOPY python3 /usr/local/bin/python3\n"
        "RUN chmod 755 /opt/venv/bin/python3 /usr/local/bin/python3 && chmod 644 /opt/recorded.json\n"
        f"USER {_user(cpu_image)}\n",
        tag,
        cleanup_refs,
    )
    data = tmp_path / "data"
    res = _certify(tag, data)
    assert res.returncode == 11, res.stderr[-3000:]
    assert "CERTIFIED" not in res.stdout + res.stderr
    assert "refused: the result's steps took" in res.stderr, res.stderr[-3000:]
    assert "the container's cgroup used" in res.stderr
    print(next(line for line in res.stderr.splitlines() if "refused: the result's steps took" in line))
    assert _verdicts(data) == ["failed"]
    _run_refused(tag, data)
