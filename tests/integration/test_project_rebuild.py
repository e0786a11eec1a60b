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
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_spec

from envbuilder.engine import ContainerSpec, DockerEngine
from envbuilder.image.commit import context_home
from envbuilder.image.lock import read_lock

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


def test_a_shared_wheelhouse_with_other_projects_wheels_keeps_the_image_id(
    base_image: str, wheelhouse: Path, run_id: str, cleanup_refs: list[str], tmp_path: Path
) -> None:
    """`up` fills one wheelhouse for every project (ENVBUILDER_CACHE_DIR/wheelhouse): another
    project's wheels landing there must not change this project's context, cache or image ID."""
    shared = tmp_path / "shared"
    shared.mkdir()
    for wheel in wheelhouse.glob("*.whl"):
        os.link(wheel, shared / wheel.name)
    spec = write_spec(tmp_path / "images", f"shared-it-{run_id}")
    lock = tmp_path / "shared.lock.json"
    build = ("build", str(spec.path), "--cpu", "--base-image", base_image, "--wheelhouse", str(shared),
             "--lock-out", str(lock), "--network", "none", "--json")  # fmt: skip
    res = cli_in(tmp_path, *build)
    assert res.returncode == 0, res.stderr[-3000:]
    first = json.loads(res.stdout)
    cleanup_refs.append(first["tags"][0])
    (shared / "other_project-1.0-py3-none-any.whl").write_bytes(b"another project's wheel")
    res = cli_in(tmp_path, *build)
    assert res.returncode == 0, res.stderr[-3000:]
    again = json.loads(res.stdout)
    assert again["image_id"] == first["image_id"]
    linked = context_home(lock) / "build" / "context" / "wheelhouse"
    locked = {p.wheel for p in read_lock(lock).packages[0].packages}
    assert {p.name for p in linked.iterdir()} == locked and len(locked) < len(list(shared.iterdir()))


def test_a_lock_from_find_links_built_without_its_wheelhouse_says_so(
    base_image: str, wheelhouse: Path, run_id: str, tmp_path: Path
) -> None:
    """The failure keeps BuildKit's lines (not one line with literal \\n) and names the fix."""
    spec = write_spec(tmp_path / "images", f"nowh-it-{run_id}")
    lock = tmp_path / "nowh.lock.json"
    res = cli_in(tmp_path, "lock", str(spec.path), "--cpu", "--no-index", "--find-links", str(wheelhouse),
                 "--out", str(lock))  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    res = cli_in(tmp_path, "build", "--lock", str(lock), "--base-image", base_image, "--network", "none")
    assert res.returncode == 9, res.stderr[-3000:]
    lines = res.stderr.splitlines()
    (error,) = [
        n for n, line in enumerate(lines) if line.startswith("envbuilder: error: docker build failed")
    ]
    assert lines[error + 1].startswith("  --- last ") and lines[error + 1].endswith(" log lines ---")
    assert "\\n" not in lines[error] and lines[-1].startswith("hint: the lock took ")
    assert f"from the local folder {wheelhouse} (--find-links)" in lines[-1]
    assert (
        f"build with --wheelhouse {wheelhouse}" in lines[-1] and "envbuilder wheelhouse LOCK DIR" in lines[-1]
    )
