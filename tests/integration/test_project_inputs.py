"""The inputs people have, locked by the real uv from the test wheelhouse (offline): a requirements
file with a `-r` include, a pyproject.toml with an optional group, an existing uv.lock. Each
project package comes out as one wheel with the sha256 of the very file in the wheelhouse, and
the lock records the digest of every input file read. No Docker: marked `docker` because it needs
the wheelhouse that `make services` provides. About 16 s a lock (uv unpacks torch to hash it each
time), four locks: the real uv on each input kind is what these prove."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.image.lock import read_lock
from envbuilder.image.packages import LockedPackage, uv_binary

pytestmark = pytest.mark.docker


def lock_project(spec: Path, wheelhouse: Path, *extra_lines: str) -> tuple[dict[str, LockedPackage], Path]:
    """`envbuilder lock SPEC --cpu --no-index --find-links WHEELHOUSE`: the project group, by name."""
    with spec.open("a", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in extra_lines))
    out = spec.with_name("project.lock.json")
    proc = envbuilder_cli(
        "lock", str(spec), "--cpu", "--no-index", "--find-links", str(wheelhouse), "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    (locked,) = read_lock(out).packages
    assert {p.name for p in locked.group("framework")} >= {"torch", "sympy"}
    return {p.name: p for p in locked.group("project")}, out


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_requirements_file_with_an_include(tmp_path: Path, wheelhouse: Path) -> None:
    spec = write_spec(tmp_path, "req-file")
    (tmp_path / "base.txt").write_text("packaging>=24  # shared pins\n")
    (tmp_path / "requirements.txt").write_text("-r base.txt\nwheel\n")
    project, out = lock_project(spec.path, wheelhouse, "requirements: requirements.txt")
    assert sorted(project) == ["packaging", "wheel"]
    for pkg in project.values():
        assert pkg.sha256 == file_sha256(wheelhouse / pkg.wheel)
    (locked,) = read_lock(out).packages
    assert dict(locked.inputs) == {
        "requirements.txt": file_sha256(tmp_path / "requirements.txt"),
        "base.txt": file_sha256(tmp_path / "base.txt"),
    }


def test_a_pyproject_and_its_optional_group(tmp_path: Path, wheelhouse: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.11"\n'
        'dependencies = ["packaging>=24"]\n\n[project.optional-dependencies]\ntrain = ["wheel"]\n'
    )
    plain, _ = lock_project(write_spec(tmp_path, "pyproject").path, wheelhouse, "pyproject: pyproject.toml")
    assert sorted(plain) == ["packaging"]
    spec = write_spec(tmp_path, "pyproject-train")
    extras, _ = lock_project(spec.path, wheelhouse, "pyproject: {path: pyproject.toml, extras: [train]}")
    assert sorted(extras) == ["packaging", "wheel"]
    assert extras["wheel"].sha256 == file_sha256(wheelhouse / extras["wheel"].wheel)


def test_an_existing_uv_lock(tmp_path: Path, wheelhouse: Path) -> None:
    project_dir = tmp_path / "proj"
    project_dir.mkdir()
    (project_dir / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.11"\n'
        'dependencies = ["packaging"]\n\n[tool.uv]\npackage = false\n'
    )
    argv = [uv_binary(), "lock", "--no-index", "--find-links", str(wheelhouse), "--no-config", "--quiet"]
    subprocess.run(argv, cwd=project_dir, check=True, capture_output=True, timeout=300)
    assert 'name = "packaging"' in (project_dir / "uv.lock").read_text()
    project, out = lock_project(write_spec(tmp_path, "uvlock").path, wheelhouse, "uv_lock: proj/uv.lock")
    assert sorted(project) == ["packaging"]
    assert project["packaging"].sha256 == file_sha256(wheelhouse / project["packaging"].wheel)
    (locked,) = read_lock(out).packages
    assert {name for name, _ in locked.inputs} == {"proj/uv.lock", "proj/pyproject.toml"}
