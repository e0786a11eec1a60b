"""The resolver's decisions that the automatic mutants of `benchmarks/mutants.py --auto resolve`
found unguarded (issue 23 item 14, blind run of 2026-12-05): each test pins one condition, on the
shipped matrix where a row tells the mutant apart and on a hand-made copy of one release where none
does (the copy changes only what the test names)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envbuilder.errors import MatrixError, UsageError
from envbuilder.host import GpuInfo, HostReport
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix import framework as framework_table
from envbuilder.matrix import load_matrix
from envbuilder.matrix.model import BaseImage, KernelSet, KnownBad, Matrix
from envbuilder.pipeline.resolution import target_host
from envbuilder.resolve.model import Request, Resolution
from envbuilder.resolve.resolver import _Candidate, _known_bad, _pick_base, resolve
from envbuilder.resources import matrices_dir
from envbuilder.versions import major, major_minor

DRIVER = "580.159.04"  # R580, newer than every floor of CUDA 12.x and 13.0
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def _only(matrix: Matrix, fw: str, version: str, variant: str, **changes: Any) -> Matrix:
    """The matrix with framework `fw` reduced to one release and one variant, `changes` applied."""
    table = framework_table(matrix, fw)
    rel = next(r for r in table.releases if r.version == version)
    v = replace(next(v for v in rel.variants if v.name == variant), **changes)
    tables = tuple(
        replace(t, releases=(replace(rel, variants=(v,)),)) if t.name == fw else t for t in matrix.frameworks
    )
    return replace(matrix, frameworks=tables)


def _resolve(
    matrix: Matrix, fw: str, spec: str, gpus: tuple[str, ...], driver: str | None = DRIVER, **req: Any
) -> Resolution:
    return resolve(
        matrix, Request(framework=fw, specifier=spec, **req), target_host(matrix, driver, gpus, ())
    )


# --------------------------------------------------------------------------- PTX JIT and kernel sets

# torch 2.15.0+cu132 as if it carried sm_80 SASS and PTX only, in one kind of kernel set: an H100
# (sm_90) runs all of it through PTX JIT.
PTX_ONLY: dict[str, Any] = {
    "sass": ("8.0",),
    "ptx": ("8.0",),
    "kernel_sets": (KernelSet(sass=("8.0",), ptx=("8.0",), sets=5),),
    "ptx_isa": "9.0",
}


def test_a_prerelease_the_matrix_lists_is_a_candidate_for_a_plain_specifier(
    matrix: Matrix, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release row is a candidate whatever its version: a prerelease the matrix holds (a row
    written by hand ahead of the final release) is matched by `>=2.15` as by `==2.16.0rc1`, under
    every packaging the project allows (>=23: before 25, a specifier set left to its default
    refuses a prerelease; the resolver asks for them itself)."""
    from envbuilder.resolve import resolver

    monkeypatch.setattr(
        resolver, "parse_specifier", lambda text, what="": SpecifierSet(text, prereleases=False)
    )
    table = framework_table(matrix, "torch")
    rel = next(r for r in table.releases if r.version == "2.15.0")
    early = replace(rel, version="2.16.0rc1")
    tables = tuple(replace(t, releases=(rel, early)) if t.name == "torch" else t for t in matrix.frameworks)
    res = _resolve(replace(matrix, frameworks=tables), "torch", ">=2.15", (H100,), strategy="bundled")
    assert res.stack is not None and res.stack.version == "2.16.0rc1", res


def test_the_base_image_rows_may_come_in_any_order(matrix: Matrix) -> None:
    """base_images.yaml with its slim rows first: the system-cuda strategy still finds its
    nvidia/cuda image (each row is judged by its own kind)."""
    rows = sorted(matrix.base_images, key=lambda b: b.kind != "slim")
    assert rows[0].kind == "slim"
    m = replace(matrix, base_images=tuple(rows))
    res = _resolve(m, "tensorflow", "==2.12.*", ("NVIDIA A100-SXM4-80GB",), driver="535.104.05")
    assert res.stack is not None and (res.stack.strategy, res.stack.python) == ("system-cuda", "3.10"), res


def test_each_strategy_takes_the_pythons_of_its_own_base_images(matrix: Matrix) -> None:
    """No slim image of Python 3.10 (the bundled strategy's bases), nvidia/cuda ones as shipped:
    tensorflow 2.12 (no bundled wheels) is still found for the system-cuda strategy on 3.10."""
    m = replace(
        matrix,
        base_images=tuple(b for b in matrix.base_images if not (b.kind == "slim" and b.python == "3.10")),
    )
    res = _resolve(m, "tensorflow", "==2.12.*", ("NVIDIA A100-SXM4-80GB",), driver="535.104.05")
    assert res.stack is not None and (res.stack.strategy, res.stack.python) == ("system-cuda", "3.10"), res


def test_a_build_with_sass_for_every_gpu_ranks_above_a_newer_cuda_through_ptx_jit(matrix: Matrix) -> None:
    """torch 2.15.0's cu132 as PTX_ONLY for the H100, its cu130 as shipped (sm_90 SASS): the ranking
    key puts SASS everywhere before the newer CUDA (module docstring), so cu130 is chosen."""
    table = framework_table(matrix, "torch")
    rel = next(r for r in table.releases if r.version == "2.15.0")
    names = {v.name for v in rel.variants}
    assert {"cu130", "cu132"} <= names
    variants = tuple(replace(v, **PTX_ONLY) if v.name == "cu132" else v for v in rel.variants)
    tables = tuple(
        replace(t, releases=(replace(rel, variants=variants),)) if t.name == "torch" else t
        for t in matrix.frameworks
    )
    # a driver new enough for both CUDAs in full (595.58.03: CUDA 13.2 Update 1), so that only SASS decides
    m = replace(matrix, frameworks=tables)
    res = _resolve(m, "torch", "==2.15.0", (H100,), driver="595.58.03", strategy="bundled")
    assert res.stack is not None and res.stack.variant == "cu130", (res.stack, res.rejected)


def test_a_gpu_without_sass_in_a_build_with_kernel_sets_is_all_ptx_jit_not_partial(matrix: Matrix) -> None:
    m = _only(matrix, "torch", "2.15.0", "cu132", **PTX_ONLY)
    res = _resolve(m, "torch", "==2.15.0", (H100,), strategy="bundled")
    s = res.stack
    assert s is not None, res.rejected
    assert f"{H100} runs this build through PTX JIT (slow first start)" in s.notes
    assert not any("has SASS in" in n for n in s.notes), s.notes  # no kernel set has its SASS
    # the ISA was read: its floor is in min_driver and no "PTX ISA not read" note is added
    assert not any("PTX ISA not read" in n or "must JIT-compile" in n for n in s.notes), s.notes
    assert s.require_cuda == "cuda>=13.0"  # PTX ISA 9.0's CUDA, not the build's 13.2


def test_a_ptx_isa_not_read_is_said_in_a_note_and_binds_the_builds_own_cuda(matrix: Matrix) -> None:
    m = _only(matrix, "torch", "2.15.0", "cu132", **{**PTX_ONLY, "ptx_isa": None})
    res = _resolve(m, "torch", "==2.15.0", (H100,), strategy="bundled", forward_compat=False)
    # CUDA 13.2's toolkit driver is above R580: the assumed JIT floor refuses this driver
    assert res.stack is None
    assert [r.component for r in res.rejected] == ["driver"]
    assert "PTX ISA not read from the wheels" in res.rejected[0].reason
    ok = _resolve(m, "torch", "==2.15.0", (H100,), driver="620.10.01", strategy="bundled")
    assert ok.stack is not None, ok.rejected
    assert any(n.startswith("PTX ISA not read from the wheels") for n in ok.stack.notes), ok.stack.notes
    assert ok.stack.require_cuda == "cuda>=13.2"


def test_a_gpu_with_sass_everywhere_asks_the_majors_x_0_of_the_toolkit(matrix: Matrix) -> None:
    """A bundled build whose SASS covers every GPU needs only the MVC floor's CUDA X.0."""
    res = _resolve(matrix, "torch", "==2.7.*", (H100,), strategy="bundled")
    s = res.stack
    assert s is not None and s.cuda is not None, res.rejected
    assert major_minor(s.cuda) != f"{major(s.cuda)}.0"  # else X.Y and X.0 are one answer
    assert s.require_cuda == f"cuda>={major(s.cuda)}.0"
    assert not any("PTX JIT" in n for n in s.notes)


# --------------------------------------------------------------------------- known-bad rows


def test_a_ptx_only_known_bad_row_spares_a_build_with_sass_for_that_gpu(matrix: Matrix) -> None:
    """known_bad.yaml's TensorFlow row holds on Blackwell GeForce/RTX PRO through PTX JIT only:
    a build that carried sm_120 SASS runs natively and is not refused by it."""
    row = next(b for b in matrix.known_bad if b.path == "ptx")
    newest = framework_table(matrix, row.framework).releases[-1]
    variant = next(v for v in newest.variants if v.cuda is not None)
    gpu = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    refused = _resolve(matrix, row.framework, f"=={newest.version}", (gpu,))
    assert any(r.component == "known-bad" for r in refused.rejected)  # the row holds on PTX
    sass = (*variant.sass, "12.0")
    m = _only(matrix, row.framework, newest.version, variant.name, sass=sass, kernel_sets=())
    res = _resolve(m, row.framework, f"=={newest.version}", (gpu,))
    assert not any(r.component == "known-bad" for r in res.rejected), res.rejected


def test_a_known_bad_row_is_read_for_its_own_variants_and_its_release_prereleases_too(
    matrix: Matrix, monkeypatch: pytest.MonkeyPatch
) -> None:
    """known_bad.yaml's TensorFlow row limited to the newest release's variant, after a row of
    another framework limited to another variant; the release a prerelease (a row written ahead
    of the final one), the specifier left to packaging < 25's default (prereleases refused)."""
    from envbuilder.resolve import resolver

    monkeypatch.setattr(
        resolver, "parse_specifier", lambda text, what="": SpecifierSet(text, prereleases=False)
    )
    row = next(b for b in matrix.known_bad if b.path == "ptx")
    newest = framework_table(matrix, row.framework).releases[-1]
    variant = next(v for v in newest.variants if v.cuda is not None)
    other = replace(row, framework="torch", variants=("cu999",))
    m = _only(matrix, row.framework, newest.version, variant.name)
    early = f"{newest.version}rc1"
    tables = tuple(
        replace(t, releases=(replace(t.releases[0], version=early),)) if t.name == row.framework else t
        for t in m.frameworks
    )
    m = replace(m, frameworks=tables, known_bad=(other, replace(row, variants=(variant.name,))))
    res = _resolve(m, row.framework, f"=={early}", ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition",))
    assert res.stack is None and any(r.component == "known-bad" for r in res.rejected), res.rejected


def test_a_stack_carries_its_builds_own_values(matrix: Matrix) -> None:
    """The chosen stack's framework, cuDNN, NCCL and packages are the variant's, its flavor the
    image's (TensorFlow: the bundled wheels' extra is not the system-CUDA build's package)."""
    tf = framework_table(matrix, "tensorflow")
    rel = next(
        r for r in reversed(tf.releases) if any(v.bundled_packages != v.system_packages for v in r.variants)
    )
    v = next(v for v in rel.variants if v.cuda is not None and v.bundled_packages != v.system_packages)
    res = _resolve(matrix, "tensorflow", f"=={rel.version}", (H100,), strategy="bundled", flavor="runtime")
    s = res.stack
    assert s is not None and s.variant == v.name, res.rejected
    assert (s.framework, s.cudnn, s.nccl, s.flavor) == ("tensorflow", v.cudnn, v.nccl, None)  # slim: none
    assert s.packages == v.bundled_packages


def test_an_image_without_its_own_require_cuda_gives_a_stack_without_one(matrix: Matrix) -> None:
    """An nvidia/cuda row without NVIDIA_REQUIRE_CUDA (the type allows it): the system-cuda stack
    carries none, not `cuda>=None`, though it has a driver floor."""
    m = replace(
        matrix,
        base_images=tuple(
            replace(b, require_cuda=None) if b.kind == "cuda" else b for b in matrix.base_images
        ),
    )
    res = _resolve(m, "tensorflow", "==2.12.*", ("NVIDIA A100-SXM4-80GB",), driver="535.104.05")
    s = res.stack
    assert s is not None and s.strategy == "system-cuda" and s.min_driver is not None, res.rejected
    image = next(b for b in m.base_images if b.ref == s.base_image)
    assert s.require_cuda is None and (s.flavor, s.python_install) == ("runtime", image.python_install)


def test_a_ptx_only_known_bad_row_holds_where_sass_covers_only_some_kernel_sets(matrix: Matrix) -> None:
    """The sm_120 SASS in 2 of 5 kernel sets: the other 3 run through PTX JIT, where the row holds."""
    row = next(b for b in matrix.known_bad if b.path == "ptx")
    newest = framework_table(matrix, row.framework).releases[-1]
    variant = next(v for v in newest.variants if v.cuda is not None)
    gpu = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
    sass = (*variant.sass, "12.0")
    sets = (
        KernelSet(sass=sass, ptx=variant.ptx, sets=2),
        KernelSet(sass=variant.sass, ptx=variant.ptx, sets=3),
    )
    m = _only(matrix, row.framework, newest.version, variant.name, sass=sass, kernel_sets=sets)
    res = _resolve(m, row.framework, f"=={newest.version}", (gpu,))
    bad = [r for r in res.rejected if r.component == "known-bad" and variant.name in r.candidate]
    assert bad and row.reason in bad[0].reason, res.rejected


# --------------------------------------------------------------------------- platform notes


def test_a_cpu_build_gets_no_note_about_arch_lists_lent_from_linux_amd64(matrix: Matrix) -> None:
    builds = tuple(
        replace(b, archs_from_default=True, wheels=()) if (b.framework, b.variant) == ("torch", "cpu") else b
        for b in matrix.platforms.builds
    )
    m = replace(matrix, platforms=replace(matrix.platforms, builds=builds))
    request = Request(framework="torch", specifier="==2.6.0", cpu_only=True, platform="linux/arm64")
    res = resolve(m, request, Host(driver=None, gpus=(), source="given"))
    assert res.stack is not None, res.rejected
    assert not any("arch lists were not read" in n for n in res.stack.notes), res.stack.notes


# --------------------------------------------------------------------------- strategies


def test_a_build_without_a_system_cuda_package_set_is_refused_for_system_cuda(matrix: Matrix) -> None:
    m = _only(matrix, "torch", "2.15.0", "cu130", system_packages=())
    res = _resolve(m, "torch", "==2.15.0", (H100,), strategy="system-cuda")
    assert res.stack is None
    assert [(r.component, r.reason) for r in res.rejected] == [
        ("strategy", "torch 2.15.0 has no build for a system CUDA")
    ]
    assert _resolve(m, "torch", "==2.15.0", (H100,), strategy="bundled").stack is not None


@pytest.mark.parametrize("strategy", ["system-cuda", "bundled"])
def test_installability_is_looked_up_for_the_strategys_own_package_set(matrix: Matrix, strategy: str) -> None:
    """JAX's system-cuda set (jax[cuda13-local]) is not its bundled one (jax[cuda13]): uv's answer
    on one says nothing of the other."""
    from envbuilder.matrix.model import InstallAnswer
    from envbuilder.resolve.resolver import install_key

    rel = framework_table(matrix, "jax").releases[-1]
    v = next(v for v in rel.variants if v.cuda is not None)
    assert v.system_packages != v.bundled_packages
    packages = v.system_packages if strategy == "system-cuda" else v.bundled_packages
    python = "3.12"
    key = install_key(packages, v.companion_packages, v.index_url, python)
    no = InstallAnswer(
        requirements=key[0], index_url=key[1], python=python, platform=key[3], ok=False, why="x", source="t"
    )
    m = replace(_only(matrix, "jax", rel.version, v.name), installable=(no,))
    res = _resolve(m, "jax", f"=={rel.version}", (H100,), strategy=strategy, python=python)
    assert res.stack is None
    assert [r.component for r in res.rejected] == ["installable"], res.rejected


@pytest.mark.parametrize(("fw", "second_copy"), [("torch", True), ("jax", False)])
def test_a_system_cuda_stack_says_when_its_wheels_bring_a_second_cuda(
    matrix: Matrix, fw: str, second_copy: bool
) -> None:
    """torch's wheels load their own CUDA libraries (uses_system_cuda: false), JAX's -local extra
    the image's: only the first is told that the image's CUDA runtime is a second copy."""
    res = _resolve(matrix, fw, "", (H100,), strategy="system-cuda")
    assert res.stack is not None, res.rejected
    said = any("bring their own CUDA libraries" in n for n in res.stack.notes)
    assert said == second_copy, res.stack.notes


def test_without_a_requested_strategy_bundled_ranks_before_system_cuda(matrix: Matrix) -> None:
    """Same build, same Python (3.12: both strategies have bases of it), same CUDA: only the
    strategy preference orders them (the stack ids would put system-cuda's first)."""
    res = _resolve(matrix, "torch", "==2.15.0", (H100,), python="3.12")
    s = res.stack
    assert s is not None and s.strategy == "bundled", res.rejected
    system = [a for a in res.alternatives if a.strategy == "system-cuda"]
    assert [(a.version, a.variant, a.python) for a in system][:1] == [(s.version, s.variant, "3.12")]
    assert system[0].id > s.id  # else the id, the key's last step, would order them the same way


# --------------------------------------------------------------------------- the JIT floor's reason


def test_a_driver_below_the_jit_floor_is_told_which_ptx_and_why(matrix: Matrix) -> None:
    """PTX ISA 9.0 (CUDA 13.0) JITs on 580.65.06 and newer; R580's first drivers pass the MVC floor
    of CUDA 13 ("580") but not the JIT floor."""
    m = _only(matrix, "torch", "2.15.0", "cu130", **PTX_ONLY)
    res = _resolve(m, "torch", "==2.15.0", (H100,), driver="580.10.01", strategy="bundled")
    assert res.stack is None and [r.component for r in res.rejected] == ["driver"], res.rejected
    reason = res.rejected[0].reason
    assert "driver 580.10.01 < 580.65.06" in reason
    assert (
        f"JIT-compile the build's PTX (compute_80, PTX ISA 9.0, introduced by CUDA 13.0) for {H100}" in reason
    )
    assert "which has no SASS in it" in reason and "has SASS in" not in reason


def test_a_gpu_with_sass_in_some_kernel_sets_is_told_the_rest_needs_the_jit_floor(matrix: Matrix) -> None:
    sets = (KernelSet(sass=("9.0",), ptx=(), sets=3), KernelSet(sass=("8.0",), ptx=("8.0",), sets=1))
    m = _only(
        matrix, "torch", "2.15.0", "cu130", sass=("8.0", "9.0"), ptx=("8.0",), ptx_isa="9.0", kernel_sets=sets
    )
    res = _resolve(m, "torch", "==2.15.0", (H100,), driver="580.10.01", strategy="bundled")
    assert res.stack is None and [r.component for r in res.rejected] == ["driver"], res.rejected
    reason = res.rejected[0].reason
    assert f"{H100} has SASS in 3 of 4 kernel sets (75%)" in reason
    assert "for the kernel sets without its SASS" in reason and "which has no SASS in it" not in reason
    ok = _resolve(m, "torch", "==2.15.0", (H100,), strategy="bundled")
    assert ok.stack is not None
    assert (
        f"{H100} has SASS in 3 of 4 kernel sets (75%) of this build: the rest runs through PTX JIT"
        in " ".join(ok.stack.notes)
    )


# --------------------------------------------------------------------------- releases and requests


def test_a_pre_release_in_the_matrix_is_found_by_a_specifier_that_names_it(matrix: Matrix) -> None:
    table = framework_table(matrix, "torch")
    rel = next(r for r in table.releases if r.version == "2.15.0")
    pre = replace(rel, version="2.16.0rc1", variants=tuple(v for v in rel.variants if v.cuda is None))
    tables = tuple(
        replace(t, releases=(*t.releases, pre)) if t.name == "torch" else t for t in matrix.frameworks
    )
    m = replace(matrix, frameworks=tables)
    res = _resolve(m, "torch", "==2.16.0rc1", (), driver=None, cpu_only=True)
    assert res.stack is not None and res.stack.version == "2.16.0rc1", res.rejected


def test_an_unknown_strategy_is_a_usage_error(matrix: Matrix) -> None:
    from envbuilder.errors import UsageError

    with pytest.raises(UsageError, match="unknown strategy 'nope'"):
        _resolve(matrix, "torch", "", (H100,), strategy="nope")


def test_a_specifier_no_release_matches_says_which_releases_are_known(matrix: Matrix) -> None:
    from envbuilder.errors import UsageError

    table = framework_table(matrix, "torch")
    with pytest.raises(UsageError) as err:
        _resolve(matrix, "torch", ">=99", (H100,))
    assert "no torch release matches 'torch>=99'" in err.value.message
    first, last = table.releases[0].version, table.releases[-1].version
    assert err.value.hint is not None and f"envbuilder knows torch {first} .. {last}" in err.value.hint
    newest = ", ".join(r.version for r in table.releases[-6:])
    assert f"(newest: {newest})" in err.value.hint and len(table.releases) > 6


# --------------------------------------------------------------------------- warnings


def test_a_cpu_request_on_a_host_without_gpus_is_not_warned_about_missing_gpus(matrix: Matrix) -> None:
    res = _resolve(matrix, "torch", "", (), driver=None, cpu_only=True)
    assert res.stack is not None
    assert not any("no GPU on this host or given" in w for w in res.warnings), res.warnings
    bare = _resolve(matrix, "torch", "", (), driver=None)
    assert any("no GPU on this host or given" in w for w in bare.warnings)
    assert bare.request.cpu_only and bare.stack is not None and bare.stack.cuda is None


def test_a_gpu_host_with_its_driver_given_gets_no_driver_warning(matrix: Matrix) -> None:
    res = _resolve(matrix, "torch", "", (H100,))
    assert res.stack is not None
    assert not any("driver" in w for w in res.warnings), res.warnings


@pytest.mark.parametrize(
    ("fw", "spec", "lent"),
    [
        ("torch", "==2.6.*", False),  # curated aarch64 lists (no wheel read): its own, no note
        ("jax", "==0.4.30", True),  # archs_from_default, no wheel read: linux/amd64's taken, said
        ("jax", "==0.11.2", False),  # archs_from_default, but aarch64 wheels were read to check them
    ],
)
def test_a_note_says_when_linux_amd64s_arch_lists_stand_in_unchecked(
    matrix: Matrix, fw: str, spec: str, lent: bool
) -> None:
    """The curated rows alone (the generated linux/arm64 rows left out: `matrix refresh` now reads
    every jax release's aarch64 plugin, so only a matrix without them takes this path)."""
    curated = tuple(b for b in matrix.platforms.builds if not b.generated)
    matrix = replace(matrix, platforms=replace(matrix.platforms, builds=curated))
    res = _resolve(matrix, fw, spec, ("NVIDIA GH200 480GB",), platform="linux/arm64")
    assert res.stack is not None, res.rejected
    said = any("arch lists were not read" in n for n in res.stack.notes)
    assert said == lent, res.stack.notes


# --------------------------------------------------------------------------- the platform's own Python range


def _narrow(matrix: Matrix, variant: str, python: str = ">=3.10,<3.12") -> Matrix:
    """The matrix with torch's linux/arm64 `variant` wheels published for `python` only."""
    builds = tuple(
        replace(b, python=python) if (b.framework, b.variant) == ("torch", variant) else b
        for b in matrix.platforms.builds
    )
    return replace(matrix, platforms=replace(matrix.platforms, builds=builds))


def test_without_python_the_platforms_range_skips_pythons_silently(matrix: Matrix) -> None:
    request = Request(framework="torch", specifier="==2.6.0", cpu_only=True, platform="linux/arm64")
    res = resolve(_narrow(matrix, "cpu"), request, Host(driver=None, gpus=(), source="given"))
    assert res.stack is not None and res.stack.python == "3.11"
    assert not any(r.component == "python" for r in res.rejected), res.rejected


def test_a_python_given_outside_the_platforms_range_is_one_rejection_of_the_cpu_bundled_build(
    matrix: Matrix,
) -> None:
    request = Request(
        framework="torch", specifier="==2.6.0", cpu_only=True, platform="linux/arm64", python="3.13"
    )
    res = resolve(_narrow(matrix, "cpu"), request, Host(driver=None, gpus=(), source="given"))
    assert res.stack is None
    assert [r.candidate for r in res.rejected] == ["torch 2.6.0+cpu / py3.13 / bundled / linux/arm64"]


def test_a_python_given_outside_the_platforms_range_is_said_for_each_strategy_of_a_cuda_build(
    matrix: Matrix,
) -> None:
    m = _narrow(matrix, "cu126")
    res = _resolve(m, "torch", "==2.6.0", ("NVIDIA GH200 480GB",), platform="linux/arm64", python="3.13")
    assert res.stack is None
    python = sorted(r.candidate for r in res.rejected if r.component == "python")
    assert python == [
        "torch 2.6.0+cu126 / py3.13 / bundled / linux/arm64",
        "torch 2.6.0+cu126 / py3.13 / system-cuda / linux/arm64",
    ], res.rejected


# --------------------------------------------------------------------------- alternatives


def test_the_runner_up_is_the_first_alternative(matrix: Matrix) -> None:
    """With one Python and one strategy each build is one survivor: the second-ranked one (torch
    2.15.0+cu132: only MVC support on R580) is the first alternative to the best (+cu130)."""
    res = _resolve(matrix, "torch", "==2.15.0", (H100,), python="3.12", strategy="bundled")
    assert res.stack is not None and (res.stack.version, res.stack.variant) == ("2.15.0", "cu130")
    assert [(a.version, a.variant) for a in res.alternatives] == [("2.15.0", "cu132")]


# --------------------------------------------------------------------------- driver facts


def test_a_cuda_the_matrix_does_not_know_is_an_internal_error_not_a_floor(matrix: Matrix) -> None:
    """The matrix check guarantees every CUDA a build names exists; past it, no floor is made up."""
    from envbuilder.resolve.drivers import first_release, mvc_floor

    with pytest.raises(AssertionError, match=r"matrix check guarantees CUDA 99\.1"):
        first_release(matrix, "99.1")
    with pytest.raises(AssertionError, match=r"matrix check guarantees CUDA major of 99\.1"):
        mvc_floor(matrix, "99.1")


@pytest.mark.parametrize("value", [5, 580.65, None, b"580.65.06"])
def test_a_driver_that_is_not_text_is_a_usage_error(value: object) -> None:
    from envbuilder.errors import UsageError
    from envbuilder.versions import parse_driver

    with pytest.raises(UsageError, match="malformed driver version"):
        parse_driver(value)


# --------------------------------------------------------------------------- platforms of mixed hosts


def test_the_platform_is_inferred_from_any_gpu_that_exists_on_one_platform_only(matrix: Matrix) -> None:
    from envbuilder.resolve.platform import effective_platform

    host = target_host(matrix, DRIVER, (H100, "NVIDIA GH200 480GB", "NVIDIA GB200"), ())
    platform, said = effective_platform(matrix, Request(framework="torch", specifier=""), host)
    assert platform == "linux/arm64"
    assert said is not None and "NVIDIA GB200, NVIDIA GH200 480GB is found only in linux/arm64 hosts" in said


def test_gpus_found_only_on_two_different_platforms_infer_neither(matrix: Matrix) -> None:
    """The one platform every named GPU exists in: a GH200 (linux/arm64 hosts only) beside a GPU
    that a matrix places in linux/amd64 hosts only leaves no such platform (the default, no
    warning), never either one of them. The shipped rows are all linux/arm64, so the second row
    is added here."""
    from envbuilder.matrix.model import PlatformGpu
    from envbuilder.resolve.platform import effective_platform

    amd64_only = PlatformGpu(
        model="NVIDIA H100", platform="linux/amd64", unsupported=None, source="a test row"
    )
    mixed = replace(matrix, platforms=replace(matrix.platforms, gpus=(*matrix.platforms.gpus, amd64_only)))
    host = target_host(mixed, DRIVER, (H100, "NVIDIA GH200 480GB"), ())
    assert effective_platform(mixed, Request(framework="torch", specifier=""), host) == ("linux/amd64", None)
    alone = target_host(mixed, DRIVER, ("NVIDIA GH200 480GB",), ())
    assert effective_platform(mixed, Request(framework="torch", specifier=""), alone)[0] == "linux/arm64"


def test_every_gpu_of_another_platform_is_refused_past_one_without_a_platform_row(matrix: Matrix) -> None:
    from envbuilder.resolve.platform import platform_rejections

    host = target_host(matrix, DRIVER, (H100, "NVIDIA GH200 480GB", "NVIDIA GB200"), ())
    got = platform_rejections(matrix, "linux/amd64", host)
    assert [r.reason.split(" only exists")[0] for r in got] == ["NVIDIA GH200 480GB", "NVIDIA GB200"]


def test_a_jetson_on_another_platform_is_refused_once_for_its_platform(matrix: Matrix) -> None:
    from envbuilder.resolve.platform import platform_rejections

    host = target_host(matrix, DRIVER, ("Jetson AGX Xavier",), ())
    on_amd64 = platform_rejections(matrix, "linux/amd64", host)
    assert [r.reason.split(" (")[0] for r in on_amd64] == [
        "Jetson AGX Xavier only exists in linux/arm64 hosts, not linux/amd64"
    ]
    on_arm64 = platform_rejections(matrix, "linux/arm64", host)
    assert len(on_arm64) == 1 and "only exists" not in on_arm64[0].reason


def test_a_host_without_a_driver_is_left_as_it_is_under_wsl(matrix: Matrix) -> None:
    from envbuilder.resolve.wsl import host_under_wsl

    host = Host(driver=None, gpus=(), source="given")
    assert host_under_wsl(matrix, host) is host


def test_ptxas_knows_the_archs_of_the_newest_release_of_its_cuda(matrix: Matrix) -> None:
    """12.8.0 and 12.8.1 are both CUDA 12.8: the arch list of the newer one is what its ptxas
    compiles for (here the newer one is made to add sm_12.1)."""
    from envbuilder.matrix.model import Compiler
    from envbuilder.resolve.coverage import compiler_gap

    releases = tuple(
        replace(r, archs=(*r.archs, "12.1")) if r.version == "12.8.1" else r for r in matrix.cuda.releases
    )
    m = replace(matrix, cuda=replace(matrix.cuda, releases=releases))
    compiler = Compiler(runs="always", targets=("9.0", "12.1"), ptxas="nvcc", ptxas_cuda="12.8")
    assert compiler_gap(m, compiler, "12.1") is None
    assert compiler_gap(matrix, compiler, "12.1") == "its ptxas (nvcc: CUDA 12.8) cannot compile for sm_121"
    # a ptxas of a CUDA the matrix has no release of: nothing known against it
    assert compiler_gap(matrix, replace(compiler, ptxas_cuda="99.9"), "12.1") is None


# --------------------------------------------------------------------------- the base image pick
# The six survivors an aborted `--auto resolve` run saw in _pick_base (2026-12-05): each filter must
# hold for every image of the pool, not the first only, and say the platform when it refuses.


def _slim(os_name: str, python: str = "3.12") -> BaseImage:
    return BaseImage(
        ref=f"python:{python}-slim-{os_name}", kind="slim", cuda=None, cudnn=None, flavor=None, os=os_name,
        python=python, python_install="present", require_cuda=None, require_rules=(),
    )  # fmt: skip


def _cuda(
    os_name: str,
    cuda: str = "12.6.3",
    flavor: Any = "runtime",
    cudnn: str | None = None,
    python: str = "3.12",
) -> BaseImage:
    return BaseImage(
        ref=f"nvidia/cuda:{cuda}-{flavor}-{os_name}", kind="cuda", cuda=cuda, cudnn=cudnn, flavor=flavor,
        os=os_name, python=python, python_install="apt", require_cuda=None, require_rules=(),
    )  # fmt: skip


def _pick(
    matrix: Matrix,
    images: tuple[BaseImage, ...],
    strategy: Any,
    platform: Any = "linux/amd64",
    needs_cudnn: str | None = None,
    **req: Any,
) -> tuple[BaseImage | None, str]:
    rel = next(r for r in framework_table(matrix, "torch").releases if r.version == "2.14.1")
    variant = next(v for v in rel.variants if v.name == "cu126")
    variant = replace(variant, needs_system_cudnn=needs_cudnn)
    cand = _Candidate(release=rel, variant=variant, strategy=strategy, python="3.12", platform=platform)
    request = Request(framework="torch", specifier="==2.14.1", **req)
    return _pick_base(replace(matrix, base_images=images), request, cand)


def test_the_os_asked_for_is_found_behind_another_slim_image(matrix: Matrix) -> None:
    base, why = _pick(matrix, (_slim("debian13"), _slim("debian12")), "bundled", os="debian12")
    assert base is not None and base.os == "debian12", why


def test_the_platforms_slim_oses_are_kept_wherever_they_stand_and_a_refusal_names_the_platform(
    matrix: Matrix,
) -> None:
    """linux/arm64 publishes slim images for debian12 and debian13 only (matrices/platforms.yaml)."""
    base, why = _pick(matrix, (_slim("ubuntu24.04"), _slim("debian12")), "bundled", platform="linux/arm64")
    assert base is not None and base.os == "debian12", why
    none, why = _pick(matrix, (_slim("ubuntu24.04"),), "bundled", platform="linux/arm64")
    assert none is None and why.endswith(" for linux/arm64"), why
    none, why = _pick(matrix, (_slim("debian12", "3.11"),), "bundled")
    assert none is None and why == "no slim base image with Python 3.12", why


def test_a_cuda_image_must_match_the_builds_cuda_the_flavor_and_carry_no_cudnn_it_does_not_need(
    matrix: Matrix,
) -> None:
    right = _cuda("ubuntu22.04")
    images = (
        _cuda("ubuntu24.04", cuda="12.8.1"),  # another CUDA, on a newer OS
        _cuda("ubuntu22.04", flavor="devel"),  # another flavor
        _cuda("ubuntu24.04", cudnn="9"),  # a cuDNN the wheels bring themselves
        right,
    )
    base, why = _pick(matrix, images, "system-cuda")
    assert base == right, why


def test_the_os_asked_for_and_the_platforms_cuda_oses_hold_for_every_cuda_image(matrix: Matrix) -> None:
    base, why = _pick(matrix, (_cuda("ubuntu24.04"), _cuda("ubuntu22.04")), "system-cuda", os="ubuntu22.04")
    assert base is not None and base.os == "ubuntu22.04", why
    base, why = _pick(
        matrix, (_cuda("rockylinux9"), _cuda("ubuntu22.04")), "system-cuda", platform="linux/arm64"
    )
    assert base is not None and base.os == "ubuntu22.04", why
    none, why = _pick(matrix, (_cuda("rockylinux9"),), "system-cuda", platform="linux/arm64")
    assert none is None and why.endswith(" for linux/arm64"), why


def test_a_bundled_build_takes_a_slim_image_even_where_a_cuda_image_ships_its_python(matrix: Matrix) -> None:
    base, why = _pick(matrix, (_cuda("ubuntu24.04"), _slim("debian12")), "bundled")
    assert base is not None and base.kind == "slim", why


def test_a_build_that_needs_the_system_cudnn_gets_an_image_with_that_cudnn(matrix: Matrix) -> None:
    right = _cuda("ubuntu22.04", cudnn="9")
    base, why = _pick(matrix, (_cuda("ubuntu24.04", cudnn="8"), right), "system-cuda", needs_cudnn="9")
    assert base == right, why


def test_no_cuda_image_with_the_python_names_every_os_and_python_it_has(matrix: Matrix) -> None:
    images = (_cuda("ubuntu20.04", python="3.8"), _cuda("ubuntu22.04", python="3.10"))
    none, why = _pick(matrix, images, "system-cuda")
    assert none is None and "ubuntu20.04 (Python 3.8), ubuntu22.04 (Python 3.10)" in why, why


def test_among_cuda_images_of_one_os_the_newest_cuda_patch_wins(matrix: Matrix) -> None:
    newest = _cuda("ubuntu22.04", cuda="12.6.3")
    base, why = _pick(matrix, (_cuda("ubuntu22.04", cuda="12.6.1"), newest), "system-cuda")
    assert base == newest, why


# --------------------------------------------------------------------------- known-bad rows
# What `--auto gaps` found unguarded in _known_bad (2026-12-05): every row is looked at (the one that
# holds need not be first), and each of its conditions (framework, GPU, variant, release incl.
# pre-releases, PTX path) keeps a row from a build it does not name.

GPU = HostGpu(name="NVIDIA H100 80GB HBM3", cc="9.0")


def _bad(**over: Any) -> KnownBad:
    row = {"framework": "torch", "versions": "", "variants": (), "ccs": ("9.0",), "path": "any",
           "reason": "fails", "issues": ("https://example/1",)}  # fmt: skip
    return KnownBad(**{**row, **over})


def _verdict(
    matrix: Matrix, rows: tuple[KnownBad, ...], how: str = "sass", version: str = "2.14.1"
) -> str | None:
    rel = next(r for r in framework_table(matrix, "torch").releases if r.version == "2.14.1")
    variant = next(v for v in rel.variants if v.name == "cu126")
    return _known_bad(replace(matrix, known_bad=rows), replace(rel, version=version), variant, GPU, how)


@pytest.mark.parametrize(
    "miss",
    [
        {"framework": "jax"},
        {"ccs": ("8.0",)},
        {"variants": ("cu118",)},
        {"versions": "<2.14"},
        {"path": "ptx"},  # the GPU runs SASS here
    ],
)
def test_a_known_bad_row_that_misses_the_build_leaves_it_and_the_next_row_still_holds(
    matrix: Matrix, miss: dict[str, Any]
) -> None:
    assert _verdict(matrix, (_bad(**miss),)) is None
    said = _verdict(matrix, (_bad(**miss), _bad(reason="the second row")))
    assert said is not None and said.startswith("the second row: NVIDIA H100 80GB HBM3 (sm_90)"), said


def test_a_known_bad_row_holds_for_its_variant_any_path_and_a_pre_release(matrix: Matrix) -> None:
    assert _verdict(matrix, (_bad(variants=("cu126",)),)) is not None
    assert _verdict(matrix, (_bad(path="any"),), how="sass") is not None
    assert _verdict(matrix, (_bad(path="ptx"),), how="ptx") is not None
    assert _verdict(matrix, (_bad(versions=">=2.14"),), version="2.15.0rc1") is not None


def test_the_newest_os_is_picked_by_its_version_not_its_text_nor_the_cuda_patch(matrix: Matrix) -> None:
    """rockylinux10 is newer than rockylinux9 (the text sorts it first), and a newer OS wins over a
    newer CUDA patch of an older OS (benchmarks/mutants.py --auto base --ops new, 2026-12-05)."""
    newer_os = _cuda("rockylinux10", cuda="12.6.1")
    base, why = _pick(matrix, (_cuda("rockylinux9", cuda="12.6.3"), newer_os), "system-cuda")
    assert base == newer_os, why


def test_a_variant_whose_cuda_has_a_patch_takes_the_images_of_its_minor(matrix: Matrix) -> None:
    """The loader takes a variant's CUDA as any version ("12.6.1"): the pool matches on X.Y."""
    rel = next(r for r in framework_table(matrix, "torch").releases if r.version == "2.14.1")
    variant = replace(next(v for v in rel.variants if v.name == "cu126"), cuda="12.6.1")
    cand = _Candidate(
        release=rel, variant=variant, strategy="system-cuda", python="3.12", platform="linux/amd64"
    )
    image = _cuda("ubuntu22.04", cuda="12.6.3")
    base, why = _pick_base(
        replace(matrix, base_images=(image,)), Request(framework="torch", specifier="==2.14.1"), cand
    )
    assert base == image, why


# --------------------------------------------------------------------------- second operator set (--ops new)


def test_a_driver_branch_older_than_the_gpus_first_is_one_every_stack_refusal(matrix: Matrix) -> None:
    """A GeForce RTX 5090 (Blackwell, first driven by R570) on R565: refused before any candidate,
    saying which branch it needs."""
    res = _resolve(matrix, "torch", "", ("NVIDIA GeForce RTX 5090",), driver="565.57.01")
    assert res.stack is None
    assert [(r.candidate, r.component) for r in res.rejected] == [("every stack", "gpu-support")]
    assert "needs driver branch R570 or newer; driver 565.57.01 is too old" in res.rejected[0].reason


def test_a_builds_own_driver_floor_above_every_other_binds_and_is_named(matrix: Matrix) -> None:
    """A variant's own min_driver over the MVC and JIT floors refuses a driver below it, naming it."""
    m = _only(matrix, "torch", "2.15.0", "cu132", min_driver="590.10.01")
    res = _resolve(m, "torch", "==2.15.0", (H100,), strategy="bundled", forward_compat=False)
    assert res.stack is None and {r.component for r in res.rejected} == {"driver"}, res.rejected
    assert "torch cu132's own floor" in res.rejected[0].reason and "590.10.01" in res.rejected[0].reason
    ok = _resolve(m, "torch", "==2.15.0", (H100,), driver="590.10.01", strategy="bundled")
    assert ok.stack is not None and ok.stack.min_driver == "590.10.01", ok.rejected


def test_a_ptx_jit_floor_asks_the_builds_cuda_as_x_y_even_when_written_with_its_patch(matrix: Matrix) -> None:
    """A build whose PTX ISA was not read binds its own CUDA: NVIDIA_REQUIRE_CUDA names X.Y, which
    a driver reports ("cuda>=13.2.1" would refuse a CUDA 13.2 driver)."""
    m = _only(matrix, "torch", "2.15.0", "cu132", **{**PTX_ONLY, "ptx_isa": None, "cuda": "13.2.1"})
    ok = _resolve(m, "torch", "==2.15.0", (H100,), driver="620.10.01", strategy="bundled")
    assert ok.stack is not None, ok.rejected
    assert ok.stack.require_cuda == "cuda>=13.2"


def test_every_refused_release_is_listed_newest_first(matrix: Matrix) -> None:
    """--explain reads the refusals in the order they are found: the newest release first, as the
    answer prefers it."""
    res = _resolve(matrix, "torch", ">=2.0", (H100,), driver="535.54.03", strategy="bundled")
    versions = [Version(r.candidate.split("+")[0].split()[1]) for r in res.rejected]
    assert len(set(versions)) > 2 and versions == sorted(versions, reverse=True)


def test_the_ptx_isa_table_names_each_cuda_as_x_y(matrix: Matrix) -> None:
    """drivers.jit_floor compares a release's X.Y with the CUDA that introduced an ISA: that CUDA
    is X.Y in ptx_isa.yaml (the reason its major_minor is one of the mutants' equivalents)."""
    assert matrix.ptx_isa and all(len(p.cuda.split(".")) == 2 for p in matrix.ptx_isa)


# --------------------------------------------------------------------------- third operator set (--ops third)
# benchmarks/mutants.py --auto resolve/base/gaps --ops third (2026-12-05): floors compared as text,
# blank notes, pre-releases, strategy refusals of CPU builds, base OSes and stack ids.


def test_the_highest_floor_binds_by_version_where_the_text_sorts_it_lower(matrix: Matrix) -> None:
    """525.105.17 (a build's own floor) is above CUDA 12's minor-version floor 525.60.13, though
    "525.105.17" < "525.60.13" as text: a 525.85.12 driver is refused, naming the build's floor."""
    m = _only(matrix, "torch", "2.14.1", "cu126", min_driver="525.105.17")
    res = _resolve(
        m, "torch", "==2.14.1", (H100,), driver="525.85.12", strategy="bundled", forward_compat=False
    )
    assert res.stack is None
    assert [r.component for r in res.rejected] == ["driver"], res.rejected
    assert res.rejected[0].reason.startswith(
        "driver 525.85.12 < 525.105.17 needed by this CUDA 12.6 build (torch cu126's own floor)"
    ), res.rejected[0].reason
    ok = _resolve(
        m, "torch", "==2.14.1", (H100,), driver="525.105.17", strategy="bundled", forward_compat=False
    )
    assert ok.stack is not None and ok.stack.min_driver == "525.105.17", ok.rejected


def test_a_system_cuda_stack_the_toolkit_starts_plainly_has_no_blank_note(matrix: Matrix) -> None:
    """R580 meets the image's cuda>= itself (no brand exemption to tell): nothing is added to the
    notes, which `resolve` prints one per line."""
    res = _resolve(matrix, "torch", "==2.14.1", (H100,), strategy="system-cuda", python="3.12")
    assert res.stack is not None, res.rejected
    assert res.stack.notes and all(n.strip() for n in res.stack.notes), res.stack.notes
    assert not any("exemption" in n for n in res.stack.notes), res.stack.notes


def _with_pre_release(matrix: Matrix, version: str = "2.16.0rc1") -> Matrix:
    """torch with a CPU-only pre-release `version` after its newest release."""
    table = framework_table(matrix, "torch")
    newest = table.releases[-1]
    pre = replace(newest, version=version, variants=tuple(v for v in newest.variants if v.cuda is None))
    tables = tuple(
        replace(t, releases=(*t.releases, pre)) if t.name == "torch" else t for t in matrix.frameworks
    )
    return replace(matrix, frameworks=tables)


@pytest.mark.parametrize("spec", [">2.15.0", ">=2.16.0a0,<2.17", ""])
def test_a_pre_release_the_matrix_lists_is_a_candidate_of_a_range_that_does_not_name_one(
    matrix: Matrix, spec: str
) -> None:
    """A row of the curated matrix is a candidate wherever the range holds it (pip's own rule for
    a range that only a pre-release meets): `torch>2.15.0` is not "no release matches"."""
    res = _resolve(_with_pre_release(matrix), "torch", spec, (), driver=None, cpu_only=True)
    assert res.stack is not None and res.stack.version == "2.16.0rc1", res.rejected


def test_a_cpu_request_lists_no_system_cuda_refusal_of_a_cpu_build(matrix: Matrix) -> None:
    """A CPU build has no system-cuda form: not a candidate, so --explain does not list it."""
    res = _resolve(matrix, "torch", ">=2.13", (), driver=None, cpu_only=True)
    assert res.stack is not None and res.stack.variant == "cpu"
    assert not any(r.component == "strategy" for r in res.rejected), res.rejected
    assert not any("system-cuda" in r.candidate for r in res.rejected), res.rejected
    one = _resolve(matrix, "torch", "==2.14.1", (), driver=None, cpu_only=True, python="3.12")
    assert one.stack is not None and one.rejected == (), one.rejected


def test_a_system_cuda_stack_installs_the_system_package_set_under_an_id_naming_its_image(
    matrix: Matrix,
) -> None:
    """jax[cuda13-local] on an nvidia/cuda image, not jax[cuda13] (pip's CUDA, the slim image's):
    the id says which base, and locks and certificates carry that id."""
    res = _resolve(matrix, "jax", "==0.12.0.1", (H100,), strategy="system-cuda", python="3.12")
    s = res.stack
    assert s is not None, res.rejected
    assert s.packages == ("jax[cuda13-local]==0.12.0.1",), s.packages
    assert s.strategy == "system-cuda" and s.base_image == "nvidia/cuda:13.0.3-cudnn-runtime-ubuntu24.04"
    assert s.id == "jax0.12.0.1-cuda13-py3.12-cuda13.0.3-runtime-ubuntu24.04"


def test_a_linux_amd64_stack_id_has_no_platform_suffix_and_another_platforms_has(matrix: Matrix) -> None:
    """Ids from before the platform axis stay as they were (locks and certificates name them)."""
    amd64 = _resolve(matrix, "torch", "==2.14.1", (H100,), strategy="bundled", python="3.12")
    assert amd64.stack is not None and amd64.stack.id == "torch2.14.1-cu130-py3.12-bundled-debian13"
    arm64 = _resolve(
        matrix,
        "torch",
        "==2.14.1",
        ("NVIDIA GH200 480GB",),
        strategy="bundled",
        python="3.12",
        platform="linux/arm64",
    )
    assert arm64.stack is not None and arm64.stack.id == "torch2.14.1-cu130-py3.12-bundled-debian13-arm64"


def test_a_bundled_build_takes_the_newest_slim_os_by_its_version(matrix: Matrix) -> None:
    """debian13 over debian12 on the shipped matrix; debian10 over debian9, though the text sorts
    "debian9" last (the rule _pick_base uses for nvidia/cuda images)."""
    res = _resolve(matrix, "torch", "==2.14.1", (H100,), strategy="bundled", python="3.13")
    assert res.stack is not None and res.stack.os == "debian13", res.rejected
    base, why = _pick(matrix, (_slim("debian9"), _slim("debian10")), "bundled")
    assert base is not None and base.os == "debian10", why
    base, why = _pick(matrix, (_slim("debian10"), _slim("debian9")), "bundled")
    assert base is not None and base.os == "debian10", why


def test_a_missing_base_image_is_named_with_the_os_and_cudnn_asked_for(matrix: Matrix) -> None:
    none, why = _pick(matrix, (_slim("debian12"),), "bundled", os="debian13")
    assert none is None and why == "no slim base image with Python 3.12 on debian13", why
    none, why = _pick(matrix, (_cuda("ubuntu24.04"),), "system-cuda", os="ubuntu22.04")
    assert none is None and why == "no nvidia/cuda 12.6 runtime image on ubuntu22.04", why
    none, why = _pick(matrix, (_cuda("ubuntu24.04"),), "system-cuda", needs_cudnn="9")
    assert none is None and why == "no nvidia/cuda 12.6 runtime image with cuDNN 9", why


def test_an_os_name_without_a_version_sorts_below_every_versioned_one(matrix: Matrix) -> None:
    base, why = _pick(matrix, (_slim("trixie"), _slim("debian12")), "bundled")
    assert base is not None and base.os == "debian12", why
    base, why = _pick(matrix, (_slim("trixie"),), "bundled")
    assert base is not None and base.os == "trixie", why


def test_a_cpu_stack_requires_no_cuda(matrix: Matrix) -> None:
    request = Request(framework="torch", specifier="==2.6.0", cpu_only=True)
    res = resolve(matrix, request, Host(driver=None, gpus=(), source="given"))
    assert res.stack is not None and res.stack.cuda is None, res.rejected
    assert res.stack.require_cuda is None


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("last_branch: 470}", "last_branch: 0}", "expected a driver branch like 580, got 0"),
        ("last_branch: 470}", "last_branch: true}", "expected int, got bool True"),
        ("last_branch: 470}", "last_branch: -470}", "expected a driver branch like 580, got -470"),
        ('name: "Tesla K80"', 'name: " "', "empty: a model needs the name users give (--gpu)"),
    ],
)
def test_a_gpu_models_branches_and_name_are_checked_at_load(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    """A branch of 0 or a YAML yes (read as 1 by Python) would be a "last supported branch" every
    driver is past: each GPU of that generation refused on any host. A blank name is no name a
    user can give."""
    err = _load_edited(tmp_path, "gpus.yaml", old, new)
    assert "gpus.yaml" in err.message and said in err.message


@pytest.mark.parametrize("major", ["", "9.1", "nine"])
def test_a_cuda_image_whose_cudnn_major_is_no_number_is_refused_at_load(tmp_path: Path, major: str) -> None:
    """The base picked for a stack that needs no system cuDNN is one with none (cudnn null):
    an empty major would read as none there and put a cuDNN image under it."""
    err = _load_edited(tmp_path, "base_images.yaml", 'major: "8"', f'major: "{major}"')
    assert "base_images.yaml" in err.message and "cudnn" in err.message
    assert f'expected a cuDNN major version like "9", got {major!r}' in err.message


def _load_edited(tmp_path: Path, name: str, old: str, new: str) -> MatrixError:
    """The shipped matrices with the first `old` of file `name` made `new`: the loader's refusal."""
    root = tmp_path / "matrices"
    shutil.copytree(matrices_dir(), root)
    text = (root / name).read_text(encoding="utf-8")
    assert old in text
    (root / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(MatrixError) as err:
        load_matrix(root)
    return err.value


# --------------------------------------------------------------------------- what a probe reads
# The sixth operator set (`is None` made a truth test) asked which empty values reach the resolver:
# the driver and the compute capability come from nvidia-smi's cells unchecked, and an empty one
# ('' from a blank cell, None read as '' by HostReport.to_host) reached it. The host this machine
# probes is faked here (target_host probes when nothing is given).


def _probed(monkeypatch: pytest.MonkeyPatch, driver: str | None, *gpus: tuple[str, str | None]) -> None:
    report = HostReport(
        source="nvidia-smi",
        driver=driver,
        cuda_driver=None,
        gpus=tuple(GpuInfo(index=i, name=n, uuid=None, cc=cc, brand=None) for i, (n, cc) in enumerate(gpus)),
    )
    monkeypatch.setattr("envbuilder.host.probe_host", lambda: report)


def test_a_probed_gpu_whose_compute_capability_was_not_read_is_its_models(
    matrix: Matrix, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nvidia-smi's compute_cap [N/A] for an H100: the matrix knows the model's 9.0 (before: the
    resolver refused "malformed compute capability ''", asking for a --cc nobody typed)."""
    _probed(monkeypatch, DRIVER, (H100, None))
    host = target_host(matrix, None, (), ())
    assert [(g.name, g.cc, g.model) for g in host.gpus] == [(H100, "9.0", "NVIDIA H100")]
    res = resolve(matrix, Request(framework="torch", specifier="==2.11.*"), host)
    assert res.stack is not None and "9.0" in res.stack.sass, res.rejected
    # a compute capability the probe did read stays as read
    _probed(monkeypatch, DRIVER, (H100, "9.0"))
    assert target_host(matrix, None, (), ()).gpus[0].cc == "9.0"


def test_a_probed_gpu_of_no_known_name_and_no_compute_capability_is_refused_naming_it(
    matrix: Matrix, monkeypatch: pytest.MonkeyPatch
) -> None:
    _probed(monkeypatch, DRIVER, ("NVIDIA Prototype X9", None))
    with pytest.raises(UsageError) as err:
        target_host(matrix, None, (), ())
    assert "'NVIDIA Prototype X9'" in err.value.message and "compute capability" in err.value.message
    assert "--cc X.Y" in (err.value.hint or "") and "--driver" in (err.value.hint or "")
    # its compute capability read, an unknown name is resolved by it as before
    _probed(monkeypatch, DRIVER, ("NVIDIA Prototype X9", "9.0"))
    host = target_host(matrix, None, (), ())
    assert [(g.cc, g.model) for g in host.gpus] == [("9.0", None)]
    assert resolve(matrix, Request(framework="torch", specifier="==2.11.*"), host).stack is not None


@pytest.mark.parametrize("driver", ["", "[N/A]", " "])
def test_a_probed_driver_that_is_no_version_is_refused_saying_where_it_came_from(
    matrix: Matrix, monkeypatch: pytest.MonkeyPatch, driver: str
) -> None:
    """Not read as "no driver" (which resolves without checking the driver at all): refused, the
    message naming the probe, the hint how to describe the host instead."""
    _probed(monkeypatch, driver, (H100, "9.0"))
    with pytest.raises(UsageError) as err:
        target_host(matrix, None, (), ())
    assert f"driver version {driver!r}, as nvidia-smi reported it" in err.value.message
    assert "--driver VERSION" in (err.value.hint or "")


def test_a_driver_that_is_empty_never_reads_as_no_driver_in_the_resolver(matrix: Matrix) -> None:
    """The resolver parses every host driver that is not None before it looks at a candidate: an
    empty one (a host built by hand) is a malformed version, never "no driver given"."""
    with pytest.raises(UsageError, match="malformed driver version ''"):
        resolve(
            matrix,
            Request(framework="torch", specifier="==2.11.*"),
            Host(driver="", gpus=target_host(matrix, None, (H100,), ()).gpus),
        )


def test_every_gpu_model_has_a_name_and_real_driver_branches(matrix: Matrix) -> None:
    """What the resolver's driver-branch check (_check_gpu_support) takes from gpus.yaml: a host
    GPU's model is a model's name, never '' (that would skip the check), and a last branch is a
    driver branch, never 0 (that would refuse every driver: 'its last driver branch is R0')."""
    for m in matrix.gpus.models:
        assert m.name.strip(), m
        for branch in (m.first_branch, m.last_branch):
            assert branch is None or (type(branch) is int and 100 <= branch <= 9999), m
    # a model's last branch refuses a newer driver and keeps its own (Kepler: R470)
    kepler = next(m for m in matrix.gpus.models if m.last_branch == 470)
    on = {d: target_host(matrix, d, (kepler.name,), ()) for d in ("470.256.02", "535.104.05")}
    req = Request(framework="torch", specifier="")

    def refused(driver: str) -> list[str]:
        return [r.reason for r in resolve(matrix, req, on[driver]).rejected if r.component == "gpu-support"]

    assert refused("470.256.02") == []
    assert "its last driver branch is R470" in " ".join(refused("535.104.05")), refused("535.104.05")
