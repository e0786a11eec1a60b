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


def _resolve(
    matrix: Matrix, framework: str, *, gpus: tuple[str, ...] = (), driver: str | None = None, **req: Any
) -> Any:
    from envbuilder.cli.options import request_from_options
    from envbuilder.pipeline.resolution import target_host
    from envbuilder.resolve.resolver import resolve

    request = request_from_options(
        framework, req.get("python"), req.get("strategy"), None, "runtime", bool(req.get("cpu")), False
    )
    return resolve(matrix, request, target_host(matrix, driver, gpus, ()))


def _newest_os(names: Any) -> str:
    return str(max(names, key=lambda o: Version(o.lstrip("abcdefghijklmnopqrstuvwxyz"))))


@pytest.mark.parametrize(
    ("strategy", "python"),
    [("bundled", "3.11"), ("bundled", "3.12"), ("system-cuda", "3.12"), ("system-cuda", "3.10")],
)
def test_the_base_image_is_the_newest_os_with_that_python_and_the_right_cudnn(
    matrix: Matrix, strategy: str, python: str
) -> None:
    from envbuilder.matrix import framework as framework_table

    res = _resolve(
        matrix, "torch", gpus=("NVIDIA H200",), driver="580.159.04", python=python, strategy=strategy
    )
    s = res.stack
    assert s is not None, res.rejected
    base = next(b for b in matrix.base_images if b.ref == s.base_image)
    same = [b for b in matrix.base_images if b.kind == ("slim" if strategy == "bundled" else "cuda")]
    same = [b for b in same if b.python == python]
    if strategy == "system-cuda":
        release = next(r for r in framework_table(matrix, "torch").releases if r.version == s.version)
        variant = next(v for v in release.variants if v.name == s.variant)
        assert base.cudnn == (variant.needs_system_cudnn or None)
        same = [b for b in same if b.cuda and major_minor(b.cuda) == major_minor(s.cuda or "")]
        same = [b for b in same if b.cudnn == base.cudnn and b.flavor == base.flavor]
    assert base.os == _newest_os(b.os for b in same)


def test_alternatives_are_capped_and_distinct(matrix: Matrix) -> None:
    from envbuilder.resolve.resolver import MAX_ALTERNATIVES

    res = _resolve(matrix, "torch", gpus=("NVIDIA H200",), driver="580.159.04")
    assert len(res.alternatives) == MAX_ALTERNATIVES == 4
    keys = [(s.version, s.variant, s.strategy) for s in (res.stack, *res.alternatives)]
    assert len(set(keys)) == len(keys)


def test_the_no_driver_warning_is_for_gpu_hosts_only(matrix: Matrix) -> None:
    gpu = _resolve(matrix, "torch", gpus=("NVIDIA H200",))
    assert any("no driver given" in w for w in gpu.warnings)
    cpu = _resolve(matrix, "torch", cpu=True)
    assert not any("no driver given" in w for w in cpu.warnings)


def test_an_exemption_covers_exactly_one_driver_branch() -> None:
    from envbuilder.require_cuda import Properties, parse_require_cuda, require_cuda_text

    text = require_cuda_text("12.6", (("tesla", 535),))
    assert text == "cuda>=12.6 brand=tesla,driver>=535,driver<536"
    req = parse_require_cuda(text)
    assert req.admits(Properties(cuda="12.2", driver="535.999.99", brand="tesla"))
    assert not req.admits(Properties(cuda="12.2", driver="536.0.0", brand="tesla"))
    assert not req.admits(Properties(cuda="12.2", driver="534.99.99", brand="tesla"))


def test_driver_branches_are_compared_as_numbers(matrix: Matrix) -> None:
    """A four-digit branch (a driver 1000.x) is newer than R470, the K80's last branch."""
    res = _resolve(matrix, "torch", gpus=("Tesla K80",), driver="1000.10.1")
    assert res.stack is None
    assert [r.component for r in res.rejected] == ["gpu-support"]
    assert "not supported by driver branch 1000" in res.rejected[0].reason


# --------------------------------------------------------------------------- set G's survivors (h13)


def _arm_cpu(matrix: Matrix, **req: Any) -> Any:
    from envbuilder.host.model import Host
    from envbuilder.resolve.model import Request
    from envbuilder.resolve.resolver import resolve

    request = Request(framework="torch", specifier="==2.6.0", cpu_only=True, platform="linux/arm64", **req)
    return resolve(matrix, request, Host(driver=None, gpus=(), source="given"))


@pytest.mark.parametrize("unknown_first", [True, False])
def test_driver_branch_support_is_checked_past_a_gpu_of_unknown_model(
    matrix: Matrix, unknown_first: bool
) -> None:
    from envbuilder.host.model import Host
    from envbuilder.resolve.gpus import gpu_from_cc, gpu_from_match, lookup_gpu
    from envbuilder.resolve.model import Request
    from envbuilder.resolve.resolver import resolve

    unknown = gpu_from_cc(matrix, "9.0")
    assert unknown.model is None
    k80 = gpu_from_match(matrix, lookup_gpu(matrix, "Tesla K80"))
    gpus = (unknown, k80) if unknown_first else (k80, unknown)
    request = Request(framework="torch", specifier=">=2.0")
    res = resolve(matrix, request, Host(driver="580.159.04", gpus=gpus, source="given"))
    assert res.stack is None and [r.component for r in res.rejected] == ["gpu-support"]
    alone = resolve(matrix, request, Host(driver="580.159.04", gpus=(unknown,), source="given"))
    assert not any(r.component == "gpu-support" for r in alone.rejected)


def test_the_platforms_own_python_range_of_its_wheels_binds_without_python(matrix: Matrix) -> None:
    from dataclasses import replace

    free = _arm_cpu(matrix)
    assert free.stack is not None and free.stack.python == "3.13"
    builds = tuple(
        replace(b, python=">=3.10,<3.12") if (b.framework, b.variant) == ("torch", "cpu") else b
        for b in matrix.platforms.builds
    )
    narrow = replace(matrix, platforms=replace(matrix.platforms, builds=builds))
    res = _arm_cpu(narrow)
    assert res.stack is not None and res.stack.python == "3.11", res.rejected


def test_python_candidates_are_the_strategys_own_bases(matrix: Matrix) -> None:
    from envbuilder.resolve.model import Request
    from envbuilder.resolve.resolver import python_candidates

    request = Request(framework="torch", specifier=">=2.0")
    for strategy, kind in (("bundled", "slim"), ("system-cuda", "cuda")):
        want = {b.python for b in matrix.base_images if b.kind == kind}
        assert set(python_candidates(matrix, request, strategy)) == want  # type: ignore[arg-type]
    cuda = {b.python for b in matrix.base_images if b.kind == "cuda"}
    assert cuda != {b.python for b in matrix.base_images}  # else the check above proves nothing


def test_a_known_bad_row_holds_for_its_own_framework_only(matrix: Matrix) -> None:
    from envbuilder.matrix import framework as framework_table
    from envbuilder.resolve.gpus import gpu_from_cc
    from envbuilder.resolve.resolver import _known_bad

    row = next(b for b in matrix.known_bad if not b.variants and b.path == "ptx")
    gpu = gpu_from_cc(matrix, row.ccs[0])
    own = framework_table(matrix, row.framework).releases[-1]
    assert _known_bad(matrix, own, own.variants[-1], gpu, "ptx") is not None
    other = next(f for f in ("torch", "jax", "tensorflow") if f != row.framework)
    for rel in framework_table(matrix, other).releases:
        for v in rel.variants:
            assert _known_bad(matrix, rel, v, gpu, "ptx") is None, (rel.version, v.name)


def test_installability_is_looked_up_for_the_platform_resolved_for(matrix: Matrix) -> None:
    from dataclasses import replace

    from envbuilder.matrix.model import InstallAnswer
    from envbuilder.resolve.resolver import install_key

    bare = replace(matrix, installable=())
    s = _arm_cpu(bare).stack
    assert s is not None
    key = install_key(s.packages, s.companions, s.index_url, s.python, "linux/arm64")
    no = InstallAnswer(
        requirements=key[0],
        index_url=key[1],
        python=s.python,
        platform="linux/arm64",
        ok=False,
        why="x",
        source="test",
    )
    refused = _arm_cpu(replace(matrix, installable=(no,)))
    assert any(r.component == "installable" for r in refused.rejected)
    assert refused.stack is None or refused.stack.id != s.id
    elsewhere = _arm_cpu(replace(matrix, installable=(replace(no, platform="linux/amd64"),)))
    assert elsewhere.stack is not None and elsewhere.stack.id == s.id


def test_cuda_bases_of_a_platform_are_its_nvidia_cuda_os_list(matrix: Matrix) -> None:
    from envbuilder.host.model import Host
    from envbuilder.resolve.gpus import gpu_from_match, lookup_gpu
    from envbuilder.resolve.model import Request
    from envbuilder.resolve.resolver import resolve

    gh200 = gpu_from_match(matrix, lookup_gpu(matrix, "NVIDIA GH200 480GB"))
    request = Request(framework="torch", specifier=">=2.9", strategy="system-cuda", platform="linux/arm64")
    res = resolve(matrix, request, Host(driver="580.159.04", gpus=(gh200,), source="given"))
    assert res.stack is not None, res.rejected
    published = next(i for i in matrix.platforms.images if i.platform == "linux/arm64")
    assert res.stack.os in published.cuda_os and res.stack.os not in published.slim_os


# --------------------------------------------------------------------------- set H's survivors (h13)


def test_a_known_bad_row_holds_for_pre_releases_in_its_range(matrix: Matrix) -> None:
    from dataclasses import replace

    from envbuilder.matrix import framework as framework_table
    from envbuilder.resolve.gpus import gpu_from_cc
    from envbuilder.resolve.resolver import _known_bad

    row = next(b for b in matrix.known_bad if not b.variants and b.path == "ptx" and b.versions == ">=2.12")
    gpu = gpu_from_cc(matrix, row.ccs[0])
    own = framework_table(matrix, row.framework).releases[-1]
    for version, bad in (("2.99.0rc1", True), ("2.12.0rc0", False), ("2.11.0rc1", False)):
        got = _known_bad(matrix, replace(own, version=version), own.variants[-1], gpu, "ptx")
        assert (got is not None) == bad, version


def test_python_candidates_come_newest_first_as_versions(matrix: Matrix) -> None:
    from envbuilder.resolve.model import Request
    from envbuilder.resolve.resolver import python_candidates

    got = python_candidates(matrix, Request(framework="torch", specifier=">=2.0"), "bundled")
    assert got == sorted(got, key=Version, reverse=True)
    assert "3.9" in got and "3.13" in got and got.index("3.13") < got.index("3.9")


def test_a_python_given_outside_the_platforms_wheel_range_is_refused_not_resolved(matrix: Matrix) -> None:
    """A real bug found by set G (h13): --python skipped the platform's own range of the wheels
    (platforms.yaml `python`), so a linux/arm64 stack was resolved for a Python it has no wheel for."""
    from dataclasses import replace

    builds = tuple(
        replace(b, python=">=3.10,<3.12") if (b.framework, b.variant) == ("torch", "cpu") else b
        for b in matrix.platforms.builds
    )
    narrow = replace(matrix, platforms=replace(matrix.platforms, builds=builds))
    res = _arm_cpu(narrow, python="3.13")
    assert res.stack is None
    assert [r.component for r in res.rejected] == ["python"]
    assert "outside the range of torch 2.6.0's linux/arm64 wheels >=3.10,<3.12" in res.rejected[0].reason
    inside = _arm_cpu(narrow, python="3.11")
    assert inside.stack is not None and inside.stack.python == "3.11"
    assert _arm_cpu(matrix, python="3.13").stack is not None  # the shipped row has no range of its own
