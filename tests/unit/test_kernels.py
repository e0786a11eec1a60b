"""The kernel inventory (harness/inventory.py) of real device code, judged for GPUs and drivers
(envbuilder/certify/kernels.py): no kernel names the library; PTX of an ISA the driver cannot JIT fails;
the matrix and the inventory disagreeing is said with both."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from envbuilder.certify.kernels import disagreements, judge_inventory
from envbuilder.harness import inventory
from envbuilder.matrix import load_matrix

DATA = Path(__file__).resolve().parents[1] / "data" / "fatbin"


@pytest.fixture(scope="module")
def inv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Site-packages-like folders holding the real slices: torch/lib, jax_cuda12_plugin, ..."""
    root = tmp_path_factory.mktemp("site")
    layout = {
        "torch/lib/libtorch_cuda.so": "torch-2.15.0-libtorch_nvshmem.so",
        "jax_cuda12_plugin/_prng.so": "jax_cuda12_plugin-0.4.26-_prng.so",
        "jax_cuda13_plugin/_prng.so": "jax_cuda13_plugin-0.11.2-_prng.so",
    }
    for dest, src in layout.items():
        (root / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / src, root / dest)
    (root / "torch" / "lib" / "libtorch_cuda.so.2").symlink_to("libtorch_cuda.so")  # one library, once
    (root / "torch" / "lib" / "linker-script.so").write_text("/* GNU ld script */\n" * 300)
    roots = [
        ("torch", root / "torch"),
        ("jax", root / "jax_cuda12_plugin"),
        ("jax", root / "jax_cuda13_plugin"),
    ]
    return inventory.scan(roots)


def test_the_inventory_lists_each_library_once_with_its_kernels(inv: dict[str, Any]) -> None:
    libs = {lib["library"]: lib for lib in inv["libraries"]}
    assert sorted(libs) == [
        "jax_cuda12_plugin/_prng.so",
        "jax_cuda13_plugin/_prng.so",
        "torch/lib/libtorch_cuda.so",
    ]
    assert libs["torch/lib/libtorch_cuda.so"]["sass"] == [
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_90",
        "sm_100",
        "sm_120",
    ]
    assert libs["torch/lib/libtorch_cuda.so"]["ptx"] == []
    assert libs["jax_cuda12_plugin/_prng.so"]["ptx"] == [{"arch": "compute_90", "isa": "8.3"}]
    assert libs["jax_cuda13_plugin/_prng.so"]["owner"] == "jax"
    assert inv["errors"] == [] and not inv["truncated"] and inv["zstd_decoder"]


def test_the_harness_copy_names_uncovered_libraries(inv: dict[str, Any]) -> None:
    assert inventory.uncovered(inv, (9, 0)) == []
    bad = inventory.uncovered(inv, (6, 1))  # a GTX 1080
    assert sorted(bad) == [
        "jax_cuda13_plugin/_prng.so: SASS sm_75 sm_80 sm_90 sm_100 sm_110 sm_120, PTX compute_120",
        "torch/lib/libtorch_cuda.so: SASS sm_75 sm_80 sm_86 sm_90 sm_100 sm_120, PTX none",
    ]
    assert inventory.how_covered(inv, (12, 0))["jax_cuda12_plugin/_prng.so"] == "compute_90"


def test_judged_on_the_h200_everything_runs_natively(inv: dict[str, Any]) -> None:
    v = judge_inventory(load_matrix(), inv, [("NVIDIA H200", "9.0")], "580.159.04")
    assert v.failures == () and v.warnings == ()
    assert "torch/lib/libtorch_cuda.so: sm_90 on NVIDIA H200" in v.covered


def test_no_kernel_fails_naming_the_library(inv: dict[str, Any]) -> None:
    v = judge_inventory(load_matrix(), inv, [("NVIDIA GeForce GTX 1080", "6.1")], "580.95.05")
    assert len(v.failures) == 2
    assert sorted(v.failures)[1].startswith(
        "torch/lib/libtorch_cuda.so has no kernel for NVIDIA GeForce GTX 1080 (sm_61)"
    )


def test_ptx_the_driver_cannot_jit_fails_with_its_isa(inv: dict[str, Any]) -> None:
    # jax 0.4.26's plugin reaches a Blackwell GPU only through compute_90 PTX of ISA 8.3 (CUDA 12.3):
    # a CUDA 12.8 driver JITs it, a CUDA 12.2 one (R535) cannot.
    m = load_matrix()
    ok = judge_inventory(m, inv, [("NVIDIA GeForce RTX 5090", "12.0")], "570.124.06")
    assert ok.failures == ()
    assert "jax_cuda12_plugin/_prng.so: compute_90 on NVIDIA GeForce RTX 5090" in ok.covered
    bad = judge_inventory(m, inv, [("NVIDIA GeForce RTX 5090", "12.0")], "535.104.05")
    assert bad.failures == (
        "jax_cuda12_plugin/_prng.so runs on NVIDIA GeForce RTX 5090 (sm_120) only through PTX compute_90 "
        "of ISA 8.3 (CUDA 12.3): driver 535.104.05 < 545.23.06 cannot JIT-compile it",
    )
    # driver versions compare as versions: 545.100.01 (a three-digit minor, as 535.104.05 has) is
    # newer than 545.23.06, though its text sorts first (set S's S35 compared the text)
    newer = judge_inventory(m, inv, [("NVIDIA GeForce RTX 5090", "12.0")], "545.100.01")
    assert newer.failures == ()


def test_the_jit_floor_is_the_isa_of_the_ptx_the_gpu_runs_not_of_another_arch() -> None:
    """Set T's T29 read the ISA of the library's first PTX whatever its arch: compute_80's 7.0
    (any driver JITs it) stood for the compute_90 PTX of ISA 8.3 an sm_90 GPU runs."""
    ptx = [{"arch": "compute_80", "isa": "7.0"}, {"arch": "compute_90", "isa": "8.3"}]
    inv = {"libraries": [{"library": "libx.so", "owner": "torch", "sass": [], "ptx": ptx}]}
    v = judge_inventory(load_matrix(), inv, [("NVIDIA H100 80GB HBM3", "9.0")], "535.104.05")
    assert "libx.so: compute_90 on NVIDIA H100 80GB HBM3" in v.covered
    assert len(v.failures) == 1 and "compute_90 of ISA 8.3" in v.failures[0], v.failures


def test_an_unreadable_isa_is_a_warning_not_a_guess() -> None:
    inv = {
        "libraries": [
            {"library": "libx.so", "owner": "torch", "sass": [], "ptx": [{"arch": "compute_80", "isa": None}]}
        ]
    }
    v = judge_inventory(load_matrix(), inv, [("NVIDIA A100-SXM4-80GB", "8.0")], "580.95.05")
    assert v.failures == () and "could not be read" in v.warnings[0]


def test_matrix_and_inventory_disagreeing_names_both(inv: dict[str, Any]) -> None:
    same = disagreements(["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], [], "torch 2.15.0+cu132", inv, "torch")
    assert same == []
    said = disagreements(
        ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], ["12.0"], "torch 2.15.0+cu130 (curated)", inv, "torch"
    )
    sass = "SASS 7.5, 8.0, 8.6, 9.0, 10.0, 12.0"
    assert said == [
        f"the matrix (torch 2.15.0+cu130 (curated)) says {sass} and PTX 12.0; the image's torch "
        f"libraries (torch/lib/libtorch_cuda.so) carry {sass} and PTX none"
    ]
    assert disagreements(["9.0"], [], "x", inv, "tensorflow") == []  # no such libraries: nothing to compare


def test_an_uncovered_library_outside_the_framework_is_a_warning(inv: dict[str, Any]) -> None:
    """As on the H200 (2026-12-01): the torch 2.11 cu130 stack's libcufftw.so.12 carries one sm_75
    cubin; torch does not load it, and its GPU steps passed. Not the framework's own: a warning."""
    wrapper = {"library": "nvidia/cu13/lib/libcufftw.so.12", "owner": "nvidia", "sass": ["sm_75"], "ptx": []}
    own = {**wrapper, "library": "torch/lib/libtorch_fake.so", "owner": "torch"}
    with_wrapper = {**inv, "libraries": [*inv["libraries"], wrapper]}
    v = judge_inventory(load_matrix(), with_wrapper, [("NVIDIA H200", "9.0")], "580.159.04")
    assert v.failures == ()
    assert v.warnings == (
        "nvidia/cu13/lib/libcufftw.so.12 has no kernel for NVIDIA H200 (sm_90): "
        "SASS for 7.5 and PTX for none (not the framework's own library)",
    )
    assert inventory.uncovered(with_wrapper, (9, 0)) == [
        "nvidia/cu13/lib/libcufftw.so.12: SASS sm_75, PTX none"
    ]
    assert inventory.uncovered(with_wrapper, (9, 0), inventory.FRAMEWORK_OWNERS) == []
    with_own = {**inv, "libraries": [*inv["libraries"], own]}
    bad = judge_inventory(load_matrix(), with_own, [("NVIDIA H200", "9.0")], "580.159.04")
    assert bad.failures == (
        "torch/lib/libtorch_fake.so has no kernel for NVIDIA H200 (sm_90): SASS for 7.5 and PTX for none",
    )


def test_the_harness_step_fails_only_for_the_framework_s_own_libraries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from envbuilder.harness.record import Recorder
    from envbuilder.harness.steps import inventory as step

    wrapper = {"library": "nvidia/cu13/lib/libcufftw.so.12", "owner": "nvidia", "sass": ["sm_75"], "ptx": []}
    libs = [wrapper]
    monkeypatch.setattr(
        inventory,
        "scan",
        lambda _roots: {"libraries": libs, "errors": [], "truncated": False, "seconds": 0.1},
    )
    h200 = {"gpus": [{"name": "NVIDIA H200", "compute_capability": "9.0"}]}
    rec = Recorder(io.StringIO())
    step.kernel_inventory_step(rec, h200)
    (done,) = rec.steps
    assert done.status == "pass" and len(done.warnings) == 1
    assert "libcufftw.so.12" in done.warnings[0] and "not the framework's own library" in done.warnings[0]
    libs.append({**wrapper, "library": "torch/lib/libtorch_fake.so", "owner": "torch"})
    step.kernel_inventory_step(rec, h200)
    assert rec.steps[1].status == "fail" and "torch/lib/libtorch_fake.so" in (rec.steps[1].reason or "")
    assert "libcufftw" not in (rec.steps[1].reason or "")


def test_the_libraries_are_read_beside_the_host_step_not_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold, the inventory's first read of the libraries is most of its time: the harness starts
    it before the host step (which waits on the driver and imports) and judges it after."""
    import io
    import threading
    import time

    from envbuilder.harness import plan
    from envbuilder.harness.record import Recorder
    from envbuilder.harness.session import Options

    scanning = threading.Event()

    def scan(_roots: object) -> dict[str, object]:
        scanning.set()
        return {"libraries": [], "errors": [], "truncated": False, "seconds": 0.0}

    def host_record(_nvml: object, _why: str) -> dict[str, object]:
        assert scanning.wait(10), "the inventory did not start before the host step ended"
        return {"gpus": []}

    judged: list[str] = []
    monkeypatch.setattr(inventory, "scan", scan)
    monkeypatch.setattr(plan, "host_record", host_record)
    monkeypatch.setattr(plan, "run_path", lambda *_a, **_k: judged.append("path"))
    rec = Recorder(io.StringIO())
    plan.Certification(Options(cpu_only=True), None, rec, started=time.monotonic()).run()
    assert [s.name for s in rec.steps] == ["host", "kernel_inventory"]
    assert [s.status for s in rec.steps] == ["pass", "pass"] and judged == ["path"]
