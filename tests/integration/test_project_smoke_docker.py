"""The project's own smoke command as a certification step, for real: a project built from its
own folder (`context: .`) whose spec's certify.smoke imports the project's module; `certify
--quick` on the CPU path runs it in the image as its user, in its workdir, and records it as the
project_smoke step; a second spec whose command fails gives a failed certificate (exit 11)
naming the exit code and the command's last line. Offline, from the test wheelhouse, on the
local base; the two builds share every layer but the labels.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TORCH

from envbuilder.certify.certificate import Certificate, verify_certificate
from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker

MODULE = """\
import os


def smoke():
    import torch

    loss = torch.nn.functional.mse_loss(torch.ones(4), torch.zeros(4))
    print(f"demo smoke ok cwd={os.getcwd()} uid={os.getuid()} loss={float(loss):g}")


def broken():
    print("demo starting")
    raise SystemExit("demo: the config file is missing")
"""


def spec_text(name: str, call: str) -> str:
    return (
        "schema_version: 1\n"
        f"name: {name}\n"
        f'framework: "{TORCH}"\n'
        'python: "3.11"\n'
        "strategy: bundled\n"
        "context: .\n"
        "certify:\n"
        "  level: quick\n"
        "  smoke:\n"
        f'    command: ["python", "-c", "import demo; demo.{call}()"]\n'
        "    timeout_s: 120\n"
    )


def cli_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "envbuilder", *args],
        capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL, cwd=folder,
    )  # fmt: skip


def build(folder: Path, spec: str, base_image: str, wheelhouse: Path, tag: str) -> None:
    res = cli_in(
        folder, "build", spec, "--cpu", "--base-image", base_image, "--wheelhouse", str(wheelhouse),
        "--tag", tag, "--lock-out", str(folder.parent / f"{spec}.lock.json"), "--network", "none",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]


def test_certify_runs_the_projects_own_smoke_command(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    proj = tmp_path / "proj"
    (proj / "demo").mkdir(parents=True)
    (proj / "demo" / "__init__.py").write_text(MODULE)
    (proj / "good.yaml").write_text(spec_text(f"h12-smoke-good-{run_id}", "smoke"))
    (proj / "bad.yaml").write_text(spec_text(f"h12-smoke-bad-{run_id}", "broken"))
    good, bad = f"h12-smoke-it/good:{run_id}", f"h12-smoke-it/bad:{run_id}"
    for spec, tag in (("good.yaml", good), ("bad.yaml", bad)):
        build(proj, spec, base_image, wheelhouse, tag)
        cleanup_refs.append(tag)

    out = tmp_path / "good.json"
    res = cli_in(proj, "certify", good, "--quick", "--gpu-access", "none", "--out", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    cert = Certificate.from_json(out.read_text())
    assert cert.verdict == "certified-cpu-only" and verify_certificate(cert) == []
    step = cert.data["run"]["project_smoke"]
    assert step["status"] == "pass" and step["metrics"]["exit_code"] == 0, step
    # the image's user (uid 1000, not root) in its workdir, where `context: .` put the project
    assert step["metrics"]["stdout_tail"] == ["demo smoke ok cwd=/workspace uid=1000 loss=1"]
    assert "--network" in step["metrics"]["docker_args"] and "none" in step["metrics"]["docker_args"]
    assert "certify: project_smoke: pass" in res.stderr
    assert re.search(r"^project_smoke +pass ", res.stdout, re.M), res.stdout  # the summary's table

    res = cli_in(proj, "certify", bad, "--quick", "--gpu-access", "none", "--json")
    assert res.returncode == 11, res.stderr[-3000:]
    failed = json.loads(res.stdout)
    assert failed["verdict"] == "failed" and failed["harness"]["verdict"] == "certified-cpu-only"
    reason = failed["verdict_reason"]
    assert reason.startswith("the project's smoke command failed: python -c 'import demo; demo.broken()'")
    assert "exited 1: demo: the config file is missing" in reason
    smoke = failed["run"]["project_smoke"]
    assert smoke["metrics"]["stdout_tail"] == ["demo starting"]
    assert "failed certification: the project's smoke command failed" in res.stderr
    said = [line for line in res.stderr.splitlines() if "project_smoke" in line or "error" in line]
    print("\n".join(said))  # what a user sees (-s): docs/project.md quotes it
    print(f"smoke seconds: pass {step['seconds']}, fail {smoke['seconds']}")
