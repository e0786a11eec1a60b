"""SASS per kernel set (issue 24 item 5) and the run-time compiler of XLA frameworks (item 4):
resolve/coverage.py's rules, and the resolver applying them to a build of the real matrix."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from envbuilder.matrix import framework as framework_table
from envbuilder.matrix import load_matrix
from envbuilder.matrix.compiler import ptxas_cuda
from envbuilder.matrix.model import Compiler, KernelSet, Matrix
from envbuilder.resolve.coverage import compiler_gap, sass_coverage


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def _ks(sass: tuple[str, ...], ptx: tuple[str, ...], sets: int) -> KernelSet:
    return KernelSet(sass=sass, ptx=ptx, sets=sets)


TF_221 = (  # the real row: 249 fatbins with sm_90 SASS, 1,149 without it
    _ks(("6.0", "7.0", "8.0", "8.9"), ("9.0",), 1149),
    _ks(("6.0", "7.0", "8.0", "8.9", "9.0"), ("9.0",), 249),
)
TORCH_215 = (  # the real row: arch-specific fatbins of one arch next to full ones
    _ks(("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"), (), 417),
    _ks(("7.5", "8.0", "8.6", "9.0", "10.0", "10.3", "12.0"), (), 58),
    _ks(("9.0",), (), 29),
    _ks(("10.0",), (), 29),
)


def test_coverage_counts_the_kernel_sets_that_carry_code_for_the_gpu() -> None:
    h100 = sass_coverage(TF_221, (9, 0))
    assert (h100.covered, h100.usable, h100.partial) == (249, 1398, True)
    assert h100.share() == "249 of 1,398 kernel sets (18%)"
    a100 = sass_coverage(TF_221, (8, 0))
    assert (a100.covered, a100.usable, a100.partial) == (1398, 1398, False)
    # arch-specific sets of other GPUs are left out; sm_100 SASS runs on 10.3
    assert not sass_coverage(TORCH_215, (8, 0)).partial
    assert sass_coverage(TORCH_215, (8, 0)).usable == 475
    b300 = sass_coverage(TORCH_215, (10, 3))
    assert (b300.covered, b300.usable, b300.partial) == (504, 504, False)


def _with_variant(matrix: Matrix, fw: str, version: str, **fields: Any) -> Matrix:
    """The matrix with one build's variant changed (the real row otherwise)."""
    frameworks = []
    for table in matrix.frameworks:
        if table.name == fw:
            rels = tuple(
                replace(r, variants=tuple(replace(v, **fields) for v in r.variants if v.cuda))
                if r.version == version
                else r
                for r in table.releases
            )
            table = replace(table, releases=rels)
        frameworks.append(table)
    return replace(matrix, frameworks=tuple(frameworks))


def _resolve(matrix: Matrix, framework: str, gpu: str, driver: str) -> Any:
    from envbuilder.cli.options import request_from_options
    from envbuilder.pipeline.resolution import target_host
    from envbuilder.resolve.resolver import resolve

    request = request_from_options(framework, None, None, None, "runtime", False, False)
    return resolve(matrix, request, target_host(matrix, driver, (gpu,), ()))


def test_partial_sass_needs_the_drivers_jit_for_the_rest(matrix: Matrix) -> None:
    full = (_ks(("6.0", "7.0", "8.0", "8.9", "9.0"), ("9.0",), 1398),)
    m = _with_variant(matrix, "tensorflow", "2.21.0", kernel_sets=full)
    ok = _resolve(m, "tensorflow==2.21.0", "H100", "535.104.05")
    assert ok.stack is not None and ok.stack.min_driver == "525.60.13"
    partial = _resolve(
        _with_variant(matrix, "tensorflow", "2.21.0", kernel_sets=TF_221),
        "tensorflow==2.21.0",
        "H100",
        "535.104.05",
    )
    assert partial.stack is None
    reasons = [r.reason for r in partial.rejected if r.component == "driver"]
    assert reasons and all("249 of 1,398 kernel sets (18%)" in r and "PTX ISA 8.5" in r for r in reasons)


def test_each_gpu_of_a_mixed_host_is_judged_on_its_own_sass_coverage(matrix: Matrix) -> None:
    # the A100 (sm_80) has SASS in every kernel set, the H100 in 249 of 1,398: listed after the
    # A100, the H100 still needs the driver's JIT for the rest (its own coverage, not the first GPU's)
    from envbuilder.cli.options import request_from_options
    from envbuilder.pipeline.resolution import target_host
    from envbuilder.resolve.resolver import resolve

    m = _with_variant(matrix, "tensorflow", "2.21.0", kernel_sets=TF_221)
    request = request_from_options("tensorflow==2.21.0", None, None, None, "runtime", False, False)
    alone = resolve(m, request, target_host(m, "535.104.05", ("A100",), ()))
    assert alone.stack is not None
    mixed = resolve(m, request, target_host(m, "535.104.05", ("A100", "H100"), ()))
    assert mixed.stack is None
    reasons = [r.reason for r in mixed.rejected if r.component == "driver"]
    assert reasons and all("249 of 1,398 kernel sets (18%)" in r for r in reasons)


def test_ptxas_is_the_pins_cuda_or_the_newest_of_its_major(matrix: Matrix) -> None:
    assert ptxas_cuda(matrix.cuda, "nvidia-cuda-nvcc-cu12==12.5.82") == "12.5"
    newest12 = max((r.version for r in matrix.cuda.releases if r.version.startswith("12.")), key=_v)
    assert ptxas_cuda(matrix.cuda, "nvidia-cuda-nvcc-cu12>=12.5.82,<13.0") == ".".join(
        newest12.split(".")[:2]
    )
    newest13 = max((r.version for r in matrix.cuda.releases if r.version.startswith("13.")), key=_v)
    assert ptxas_cuda(matrix.cuda, "nvidia-cuda-nvcc>=13.0.48") == ".".join(newest13.split(".")[:2])
    assert ptxas_cuda(matrix.cuda, "nvidia-cuda-nvcc") is None
    assert ptxas_cuda(matrix.cuda, "not a requirement !!") is None


def _v(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_compiler_gap_names_the_nvptx_backend_or_the_ptxas(matrix: Matrix) -> None:
    old_llvm = Compiler(runs="always", targets=("8.0", "8.6", "8.9", "9.0"), ptxas=None)
    assert compiler_gap(matrix, old_llvm, "9.0") is None
    gap = compiler_gap(matrix, old_llvm, "12.0")
    assert gap is not None and "up to sm_90, not sm_120" in gap
    pin = "nvidia-cuda-nvcc-cu12==12.5.82"
    new_llvm = Compiler(runs="on-request", targets=("9.0", "10.0", "12.0"), ptxas=pin, ptxas_cuda="12.5")
    gap = compiler_gap(matrix, new_llvm, "12.0")
    assert gap is not None and "ptxas (nvidia-cuda-nvcc-cu12==12.5.82: CUDA 12.5)" in gap
    floor = "nvidia-cuda-nvcc-cu12>=12.5.82,<13"
    assert (
        compiler_gap(
            matrix, replace(new_llvm, ptxas=floor, ptxas_cuda=ptxas_cuda(matrix.cuda, floor)), "12.0"
        )
        is None
    )


def test_an_xla_that_cannot_target_the_gpu_refuses_jax_and_notes_tensorflow(matrix: Matrix) -> None:
    old = Compiler(runs="always", targets=("8.0", "8.6", "8.9", "9.0"), ptxas=None)
    jax = framework_table(matrix, "jax").releases[-1]
    m = _with_variant(matrix, "jax", jax.version, compiler=old)
    res = _resolve(m, f"jax=={jax.version}", "RTX 5090", "580.95.05")
    assert res.stack is None or res.stack.version != jax.version
    hits = [r for r in res.rejected if r.component == "compiler" and jax.version in r.candidate]
    assert hits and "XLA compiles kernels at run time and cannot target" in hits[0].reason
    assert "any Python" in hits[0].candidate, "a compiler refusal is one line per build"
    tf = framework_table(matrix, "tensorflow").releases[-1]
    m = _with_variant(matrix, "tensorflow", tf.version, compiler=replace(old, runs="on-request"))
    res = _resolve(m, f"tensorflow=={tf.version}", "H100", "580.95.05")
    assert res.stack is not None and not any("XLA" in n for n in res.stack.notes)
    res = _resolve(m, f"tensorflow=={tf.version}", "B200", "580.95.05")  # PTX JIT for its kernels
    assert res.stack is not None and res.stack.version == tf.version
    assert any("cannot target NVIDIA B200" in n and "use jit_compile=False" in n for n in res.stack.notes)


def test_a_platforms_own_arch_lists_drop_the_amd64_kernel_sets_and_compiler(matrix: Matrix) -> None:
    from envbuilder.matrix.platforms import variant_for_platform

    for table in matrix.frameworks:
        for rel in table.releases:
            for v in rel.variants:
                got = variant_for_platform(matrix, "linux/arm64", rel, v)
                if isinstance(got, str) or got[1] is None or got[1].archs_from_default:
                    continue
                own = replace(v, kernel_sets=TF_221, compiler=Compiler(runs="always", targets=(), ptxas=None))
                arm = variant_for_platform(matrix, "linux/arm64", rel, own)
                assert not isinstance(arm, str)
                assert arm[0].kernel_sets == () and arm[0].compiler is None, (rel.version, v.name)
                return
    pytest.fail("no linux/arm64 build with its own arch lists in the matrix")


def test_the_hint_of_a_compiler_refusal_names_a_release_whose_xla_can(matrix: Matrix) -> None:
    from envbuilder.resolve.hint import no_stack_hint

    res = _resolve(matrix, "jax==0.4.26", "RTX 5090", "580.95.05")  # the real rows: up to sm_90
    assert res.stack is None and {r.component for r in res.rejected} == {"compiler"}
    hint = no_stack_hint(matrix, res)
    assert "the XLA of jax==0.4.26 cannot compile for this GPU: the newest jax release whose XLA can" in hint


def test_a_compiler_gap_names_the_newest_target_by_version_not_text(matrix: Matrix) -> None:
    """sm_100 is the newest of 9.0 and 10.0 ("9.0" > "10.0" as text): the refusal says how far the
    backend reaches (benchmarks/mutants.py --auto resolve --ops third, 2026-12-05)."""
    llvm = Compiler(runs="always", targets=("8.0", "9.0", "10.0"), ptxas=None)
    gap = compiler_gap(matrix, llvm, "12.0")
    assert gap == "its NVPTX backend names up to sm_100, not sm_120 (read from the binary)", gap


def test_a_compiler_whose_binary_named_no_target_refuses_every_gpu_and_says_so(matrix: Matrix) -> None:
    """`matrix refresh` writes `targets: []` when no sm name of gpus.yaml is in the binary (the
    loader takes it): every GPU is refused with that reason, not a crash."""
    blind = Compiler(runs="always", targets=(), ptxas=None)
    gap = compiler_gap(matrix, blind, "9.0")
    assert gap == "its NVPTX backend names no sm target, not sm_90 (read from the binary)", gap
    jax = framework_table(matrix, "jax").releases[-1]
    res = _resolve(
        _with_variant(matrix, "jax", jax.version, compiler=blind), f"jax=={jax.version}", "H100", "580.95.05"
    )
    hits = [r for r in res.rejected if r.component == "compiler" and jax.version in r.candidate]
    assert hits and "names no sm target, not sm_90" in hits[0].reason, res.rejected


# --------------------------------------------------------------------------- set Q's survivors


def test_the_highest_floor_binds_whichever_was_found_last(matrix: Matrix) -> None:
    """A build's own driver floor above the floor of its PTX JIT (found after it, for the GPU that
    runs the PTX) still binds: the stack's minimum driver is the highest of them."""
    m = _with_variant(matrix, "tensorflow", "2.21.0", kernel_sets=TF_221, min_driver="575.51.03")
    ok = _resolve(m, "tensorflow==2.21.0", "H100", "580.95.05")
    assert ok.stack is not None and ok.stack.min_driver == "575.51.03"
    assert any("PTX JIT" in n for n in ok.stack.notes)  # the JIT floor was found, below it
    old = _resolve(m, "tensorflow==2.21.0", "H100", "560.35.03")
    assert old.stack is None
    assert any("575.51.03" in r.reason for r in old.rejected if r.component == "driver")
