"""A project built from its own folder (docs/project.md: the spec beside the code, `context: .`)
stays certified: after `lock`, `wheelhouse`, `report` and `up` wrote their outputs into that
folder, three builds with nothing edited give one image ID, and the certificate issued after
the first still covers it (`run` starts). envbuilder's outputs never enter the context; the
user's own `.dockerignore` still applies. Offline from the test wheelhouse, on the local base.

About 4-6 min on the 2-core machine: `up` (local base made with debootstrap when missing, its own
torch layer) is most of it; the three builds are cache hits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.engine import ContainerSpec, DockerEngine

pytestmark = pytest.mark.docker


def cli_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI run from `folder`, as a user working in their project would run it."""
    return subprocess.run(
        [sys.executable, "-m", "envbuilder", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        stdin=subprocess.DEVNULL,
        cwd=folder,
    )


def write_project(folder: Path, name: str) -> None:
    (folder / "src").mkdir(parents=True)
    (folder / "train.yaml").write_text(
        "schema_version: 1\n"
        f"name: {name}\n"
        "description: a project built from its own folder\n"
        'framework: "torch==2.13.0"\n'
        'python: "3.11"\n'
        "strategy: bundled\n"
        "requirements: requirements.txt\n"
        "context: .\n"
        'cmd: ["python", "src/train.py"]\n'
    )
    (folder / "requirements.txt").write_text("packaging\n")
    (folder / "src" / "train.py").write_text("print('training')\n")
    (folder / ".dockerignore").write_text("# the user's own\nnotes.secret\n")
    (folder / "notes.secret").write_text("not for the image\n")


def test_three_builds_after_lock_wheelhouse_report_and_up_give_one_image_id(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))  # its own certificate store
    proj = tmp_path / "proj"
    name = f"proj-it-{run_id}"
    write_project(proj, name)

    res = cli_in(proj, "lock", "train.yaml", "--cpu", "--no-index", "--find-links", str(wheelhouse))
    assert res.returncode == 0, res.stderr[-3000:]
    res = cli_in(proj, "wheelhouse", "train.lock.json", "wheels")
    assert res.returncode == 0, res.stderr[-3000:]
    build = ("build", "--lock", "train.lock.json", "--wheelhouse", "wheels", "--base-image", base_image,
             "--network", "none", "--json")  # fmt: skip

    res = cli_in(proj, *build)
    assert res.returncode == 0, res.stderr[-3000:]
    first = json.loads(res.stdout)
    tag = first["tags"][0]
    cleanup_refs.append(tag)
    cert_file = tmp_path / "cert.json"
    res = cli_in(proj, "certify", tag, "--quick", "--gpu-access", "none", "--out", str(cert_file))
    assert res.returncode == 0, res.stderr[-3000:]
    cert = json.loads(cert_file.read_text())
    assert cert["image"]["id"] == first["image_id"]
    res = cli_in(proj, "report", str(cert_file))  # ./envbuilder-report-ID.html, into the project
    assert res.returncode == 0, res.stderr[-3000:]
    res = cli_in(proj, "up", "train.yaml", "--quick", "--find-links", str(wheelhouse))  # ./build/NAME/
    assert res.returncode == 0, res.stderr[-4000:]
    cleanup_refs.append(res.stdout.strip().splitlines()[-1].split()[0])
    outputs = ["train.lock.json", "wheels", f"build/{name}/lock.json", f"build/{name}/certificate.json"]
    assert all((proj / p).exists() for p in outputs) and list(proj.glob("envbuilder-report-*.html"))

    ids = [first["image_id"]]
    for _ in range(2):
        res = cli_in(proj, *build)
        assert res.returncode == 0, res.stderr[-3000:]
        ids.append(json.loads(res.stdout)["image_id"])
    print(f"image IDs of three builds with nothing edited: {ids}")  # the measured figure (-s)
    assert len(set(ids)) == 1, ids

    # The certificate issued after the first build still covers the image: `run` starts it.
    res = cli_in(proj, "run", "--gpu-access", "none", tag, "python", "src/train.py")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "training" in res.stdout
    listing = engine.run(
        ContainerSpec(image=tag, command=("sh", "-c", "cd /workspace && find . | sort")), timeout_s=120
    )
    files = set(listing.stdout.split())
    assert {"./src/train.py", "./train.yaml", "./requirements.txt", "./.dockerignore"} <= files
    leaked = [f for f in files if "lock.json" in f or "wheels" in f or "envbuilder-report" in f]
    assert not leaked and "./build" not in files and "./notes.secret" not in files, sorted(files)
