"""The distribution as users get it: `python -m build` makes the sdist and wheel of
`gpu-envbuilder`, `twine check` accepts both, and the wheel installed into a clean venv runs the
commands that need its package data (matrices, templates, images, the harness), from a folder
outside the checkout.

Marked `wheel` (make test runs it): it reaches PyPI for the build backend and the dependencies
(about a minute, most of it pip; pip's cache makes later runs faster).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import envbuilder

pytestmark = pytest.mark.wheel
ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
    )
    assert res.returncode == 0, f"{argv}: exit {res.returncode}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    return res


def test_built_wheel_installs_in_a_clean_venv_and_runs(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist), str(ROOT)], cwd=tmp_path
    )
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    version = envbuilder.__version__
    assert [w.name for w in wheels] == [f"gpu_envbuilder-{version}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"gpu_envbuilder-{version}.tar.gz"]
    checked = _run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)], cwd=tmp_path
    )
    assert checked.stdout.count("PASSED") == 2, checked.stdout

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    _run([str(venv / "bin" / "pip"), "install", "-q", str(wheels[0])], cwd=tmp_path)
    exe = str(venv / "bin" / "envbuilder")
    work = tmp_path / "elsewhere"  # not the checkout: only the wheel's own data can be found
    work.mkdir()

    assert _run([exe, "--version"], cwd=work).stdout.strip() == f"envbuilder, version {version}"
    shipped = _run(
        [str(venv / "bin" / "python"), "-c", "from envbuilder import resources as r; print(r.images_dir())"],
        cwd=work,
    ).stdout.strip()
    assert shipped.startswith(str(venv)) and shipped.endswith("envbuilder/_data/images")

    assert "ok" in _run([exe, "matrix", "check"], cwd=work).stdout.lower()
    resolved = json.loads(
        _run([exe, "resolve", "--driver", "580.159.04", "--gpu", "H200", "--json"], cwd=work).stdout
    )
    assert resolved["stack"]["framework"]["name"] == "torch"
    out = work / "ctx"
    _run(
        [
            exe,
            "render",
            f"{shipped}/pytorch-train.yaml",
            "--driver",
            "580.159.04",
            "--gpu",
            "H200",
            "--out",
            str(out),
        ],
        cwd=work,
    )
    assert (out / "Dockerfile").read_text().startswith("# ")
    harness = sorted(p.name for p in out.rglob("*.py") if "harness" in p.parts[-3:] or "harness" in str(p))
    assert "__main__.py" in harness, sorted(str(p.relative_to(out)) for p in out.rglob("*"))[:40]
