"""Issue 23 item 14: the driver rules of resolve/drivers.py at their boundaries, over every row of
the shipped matrix (a one-line `<` for `<=` moves a whole CUDA release to the neighbouring driver).
The situations themselves (a driver in the floor's branch but below it, a --python outside a
release's range, mixed GPUs) are resolver cases in tests/data/cases/."""

from __future__ import annotations

from typing import Any

import pytest
from packaging.version import Version

from envbuilder.matrix import load_matrix
from envbuilder.matrix.model import Matrix
from envbuilder.resolve.drivers import first_release, jit_floor, mvc_floor, native_cuda
from envbuilder.versions import major_minor, parse_driver


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def _below(driver: str) -> str:
    """The driver version just below `driver` (580.65.06 -> 580.65.5)."""
    v = parse_driver(driver).release
    parts = list(v) + [0] * (3 - len(v))
    for i in (2, 1, 0):
        if parts[i] > 0:
            parts[i] -= 1
            parts[i + 1 :] = [999] * (2 - i)
            break
    return ".".join(str(p) for p in parts)


def test_a_toolkit_driver_runs_its_own_cuda_natively_and_one_below_does_not(matrix: Matrix) -> None:
    firsts: dict[str, str] = {}
    for r in matrix.cuda.releases:
        firsts.setdefault(major_minor(r.version), r.min_driver)
    for cuda, driver in firsts.items():
        native = native_cuda(matrix, driver)
        # its own CUDA, or a newer one whose toolkit driver is the same (13.4 and 13.5: R615)
        assert native is not None and (native == cuda or firsts[native] == driver), (cuda, driver, native)
        below = native_cuda(matrix, _below(driver))
        assert below is None or Version(below) < Version(cuda), (cuda, driver, below)


def test_first_release_is_the_ga_of_that_cuda(matrix: Matrix) -> None:
    assert first_release(matrix, "13.0").min_driver == "580.65.06"
    assert first_release(matrix, "12.6.3").version == "12.6.0"


def test_the_mvc_floor_is_the_majors(matrix: Matrix) -> None:
    assert mvc_floor(matrix, "12.8") == "525.60.13"
    assert mvc_floor(matrix, "13.2") == "580"
    assert mvc_floor(matrix, "11.8") == "450.80.02"


def test_the_jit_floor_is_the_first_release_at_or_after_the_isas_cuda(matrix: Matrix) -> None:
    for row in matrix.ptx_isa:
        found = jit_floor(matrix, row.isa)
        if found is None:
            continue  # an ISA newer than every release in the table
        cuda, driver = found
        assert cuda == row.cuda
        release = next(
            r for r in matrix.cuda.releases if Version(major_minor(r.version)) >= Version(row.cuda)
        )
        assert driver == release.min_driver
    assert jit_floor(matrix, "0.0") is None


def _verdict(version: str, *, sass: bool, full: bool, cuda: str = "12.8", python: str = "3.12") -> Any:
    from envbuilder.resolve.model import Stack
    from envbuilder.resolve.resolver import _Verdict

    stack = Stack(
        id=f"torch{version}-cu-{cuda}-{sass}-{full}-{python}", framework="torch", version=version,
        variant="cu", cuda=cuda, cudnn=None, nccl=None, python=python, base_image="b", os="debian13",
        strategy="bundled", flavor=None, min_driver="580", require_cuda=None, sass=(), ptx=(),
        index_url=None, packages=(), companions=(), python_install="present",
    )  # fmt: skip
    return _Verdict(stack=stack, sass_everywhere=sass, full_driver=full)


def test_the_ranking_key_orders_version_then_native_kernels_then_full_driver_then_cuda() -> None:
    """The resolver's ranking (module docstring), one step of the key at a time."""
    from envbuilder.resolve.model import Request
    from envbuilder.resolve.resolver import _rank_key

    request = Request(framework="torch", specifier="")
    ranked = [
        _verdict("2.8.0", sass=False, full=False),  # the newest version first, whatever else
        _verdict("2.7.0", sass=True, full=False),  # native SASS before PTX JIT
        _verdict("2.7.0", sass=False, full=True),
        _verdict("2.6.0", sass=True, full=True, cuda="12.6"),  # full driver support before MVC
        _verdict("2.6.0", sass=True, full=False, cuda="12.8"),
        _verdict("2.5.0", sass=True, full=True, cuda="12.8"),  # then the newest CUDA
        _verdict("2.5.0", sass=True, full=True, cuda="12.6", python="3.13"),
        _verdict("2.4.0", sass=True, full=True, python="3.13"),  # then the newest Python
        _verdict("2.4.0", sass=True, full=True, python="3.12"),
    ]
    shuffled = list(reversed(ranked))
    shuffled.sort(key=lambda v: _rank_key(v, request), reverse=True)
    assert [v.stack.id for v in shuffled] == [v.stack.id for v in ranked]
