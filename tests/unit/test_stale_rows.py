"""Issue 24 item 6, the rows verified on 2026-12-04 (each with its source in the YAML): nvidia/cuda
12.5.1 ubuntu24.04 tags (NVIDIA's supported-tags list; no cuDNN tags there, no 12.5.0 ones), the
python:3.15 slim bases (docker-library/python, 3.15.0), and the CUDA libraries' newest releases on
PyPI (cuda-toolkit 13.4.3, nvidia-nccl-cu13 2.32.6), rewritten by `matrix refresh --libraries-only`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from wheel_factory import make_wheel

from envbuilder.cli import cli
from envbuilder.host.model import Host
from envbuilder.matrix import load_matrix
from envbuilder.matrix.model import Matrix
from envbuilder.resolve.gpus import gpu_from_match, lookup_gpu
from envbuilder.resolve.model import Request
from envbuilder.resolve.resolver import resolve
from envbuilder.resources import matrices_dir


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def test_cuda_12_5_1_has_ubuntu24_04_tags_without_cudnn_and_with_the_verbatim_require(matrix: Matrix) -> None:
    refs = {b.ref: b for b in matrix.base_images}
    for flavor in ("base", "runtime", "devel"):
        image = refs[f"nvidia/cuda:12.5.1-{flavor}-ubuntu24.04"]
        assert image.require_cuda == "12.5" and image.python == "3.12"
        assert {r.branch for r in image.require_rules} == {470, 535, 550}
        assert {"tesla", "cloudgaming"} <= {r.brand for r in image.require_rules}
        assert "geforce" not in {r.brand for r in image.require_rules}
    assert not [r for r in refs if r.startswith("nvidia/cuda:12.5.1-cudnn") and r.endswith("ubuntu24.04")]
    assert not [r for r in refs if r.startswith("nvidia/cuda:12.5.0-")]
    assert "nvidia/cuda:12.5.1-cudnn-runtime-ubuntu22.04" in refs  # the 22.04 row keeps its cuDNN tags


def test_system_cuda_12_5_on_ubuntu24_04_is_refused_for_want_of_cudnn_only(matrix: Matrix) -> None:
    """TensorFlow 2.18 (CUDA 12.5) on system-cuda needs cuDNN 9 in the image: the new 24.04 tags
    have none, and the rejection says exactly that (not "no 12.5 image on ubuntu24.04")."""
    h100 = Host(
        driver="580.95.05", gpus=(gpu_from_match(matrix, lookup_gpu(matrix, "H100")),), source="given"
    )
    req = Request(framework="tensorflow", specifier="==2.18.*", strategy="system-cuda", os="ubuntu24.04")
    res = resolve(matrix, req, h100)
    # TensorFlow needs the image's cuDNN: no 12.5 cuDNN tag on 24.04, and the reason says so
    assert res.stack is None
    assert any(
        r.component == "base-image"
        and "no nvidia/cuda 12.5 runtime image with cuDNN 9 on ubuntu24.04" in r.reason
        for r in res.rejected
    ), res.rejected


def test_python_3_15_slim_bases_serve_the_releases_with_cp315_wheels(matrix: Matrix) -> None:
    slim = {b.ref: b for b in matrix.base_images if b.kind == "slim"}
    assert (
        slim["python:3.15-slim-trixie"].os == "debian13" and slim["python:3.15-slim-trixie"].python == "3.15"
    )
    assert slim["python:3.15-slim-bookworm"].os == "debian12"
    res = resolve(
        matrix,
        Request(framework="torch", specifier="==2.15.0", cpu_only=True),
        Host(driver=None, gpus=(), source="given"),
    )
    assert res.stack is not None and res.stack.python == "3.15"
    assert res.stack.base_image == "python:3.15-slim-trixie"
    old = resolve(
        matrix,
        Request(framework="torch", specifier="==2.14.1", cpu_only=True),
        Host(driver=None, gpus=(), source="given"),
    )
    assert old.stack is not None and old.stack.python == "3.14"  # no cp315 wheels before 2.15 (<3.15)


def test_the_committed_library_list_has_the_pypi_releases_seen_on_2026_12_04() -> None:
    doc = yaml.safe_load((matrices_dir() / "generated" / "cuda_libraries.yaml").read_text())
    libs = doc["libraries"]
    assert libs["nvidia-nccl-cu13"][0] == "2.32.6"
    assert "13.4.3" in libs["cuda-toolkit"] and "13.4.2" in libs["cuda-toolkit"]
    cuda = {r.version for r in load_matrix().cuda.releases}
    assert "13.4.3" not in cuda  # a metapackage re-pin, not a toolkit release (cuda.yaml says why)


def test_refresh_libraries_only_lists_releases_and_reads_no_wheel(tmp_path: Path) -> None:
    folder = tmp_path / "matrices"
    shutil.copytree(matrices_dir(), folder)
    house = tmp_path / "house"
    house.mkdir()
    for name in ("nvidia_nccl_cu13-2.32.6", "nvidia_nccl_cu13-2.32.3"):
        make_wheel(house, f"{name}-py3-none-manylinux_2_27_x86_64.whl")
    make_wheel(house, "cuda_toolkit-13.4.3-py2.py3-none-any.whl")
    before = {p: p.read_text() for p in (folder / "generated").glob("*.yaml")}
    res = CliRunner().invoke(
        cli,
        ["matrix", "refresh", "--dir", str(folder), "--wheelhouse", str(house), "--libraries-only", "--json"],
    )
    assert res.exit_code == 0, res.output
    assert '"wheels_scanned": 0' in res.stdout
    libs = yaml.safe_load((folder / "generated" / "cuda_libraries.yaml").read_text())["libraries"]
    assert libs["nvidia-nccl-cu13"] == ["2.32.6", "2.32.3"] and libs["cuda-toolkit"] == ["13.4.3"]
    for path, text in before.items():  # the framework files are left as they were
        if path.name != "cuda_libraries.yaml":
            assert path.read_text() == text, path
