"""The image's side of `envbuilder check` (check/image.py) at its trust boundaries: the short
mode's gate.json comes from the image under test and the certificate's figures from whoever
certified, so each figure is a finite number or none, each step is judged by its own name, and each
finding says what it measured against which certified figure, with the remedy of a warning too.
Written for the automatic mutants of check/image.py that survived the blind run of 2026-12-06
(benchmarks/results/mutants-check-judged-image-2026-12-06.md)."""

from __future__ import annotations

from typing import Any

import pytest
from cert_factory import IMAGE_ID
from fake_engine import FakeEngine
from test_check import BASELINE, IMAGE, MULTI, T, gate_doc, gpu_step, run_of, sealed, well_formed

from envbuilder.check.image import certified_busbw, certified_figures, judge_gate, run_gate
from envbuilder.engine import ContainerSpec, RunResult
from envbuilder.runtime import AccessChoice

# --------------------------------------------------------------------------- the figures' numbers


def _judged(check: str, tflops: Any = 690.0, gbs: Any = 3950.0, *certified: dict[str, Any]) -> Any:
    got = judge_gate(run_of(gate_doc(gpu_step(0, tflops, gbs))), sealed(list(certified) or [BASELINE]), T)
    return next(x for x in got if x.check == check)


@pytest.mark.parametrize(
    "figure", [float("nan"), float("inf"), float("-inf"), 10**400], ids=["nan", "inf", "-inf", "10**400"]
)
def test_a_figure_of_the_image_that_is_no_finite_number_is_no_measure(figure: Any) -> None:
    # gate.json is read by Python's json, which takes NaN, Infinity and a 401-digit integer: a NaN
    # share fails no band (NaN < 0.7 is false: the GPU passed), and float(10**400) raised.
    gemm = _judged("image.gemm", tflops=figure)
    copy = _judged("image.copy", gbs=figure)
    assert (gemm.status, gemm.message) == ("skip", "no bf16 GEMM was measured")
    assert (copy.status, copy.message) == ("skip", "no device-memory copy was measured")


@pytest.mark.parametrize("figure", [0, 0.0, -700.0])
def test_a_certified_figure_of_zero_or_below_is_none_to_judge_against(figure: Any) -> None:
    # a certificate's 0.0 (typed.check_json lets it through) divided the measure by zero
    zero = {**BASELINE, "metrics": {**BASELINE["metrics"], "copy_gbs": figure}}
    assert certified_figures(sealed([zero])) == {"NVIDIA H200": {"bf16_gemm_tflops": 700.0}}
    copy = _judged("image.copy", 690.0, 3950.0, zero)
    assert copy.status == "skip" and "the certificate records none for NVIDIA H200" in copy.message
    assert copy.value == {"measured": 3950.0, "certified": None}
    row = {**MULTI, "metrics": {**MULTI["metrics"], "sweep": [{"bytes": 1 << 28, "busbw_gbs": figure}]}}
    assert certified_busbw(sealed([row]), 2, 1 << 28) is None


@pytest.mark.parametrize("figure", ["3950", True], ids=["text", "bool"])
def test_a_copy_or_busbw_the_image_gives_as_text_or_a_boolean_is_no_measure(figure: Any) -> None:
    copy = _judged("image.copy", 690.0, figure)
    assert (copy.status, copy.message, copy.value) == ("skip", "no device-memory copy was measured", None)
    loop: dict[str, Any] = {"name": "allreduce_loopback", "status": "pass", "reason": "",
            "metrics": {"world_size": 2, "bytes": 1 << 28, "busbw_gbs": figure}}  # fmt: skip
    (got,) = judge_gate(run_of(gate_doc(loop)), sealed([MULTI]), T)
    assert (got.check, got.status, got.message) == (
        "image.allreduce",
        "skip",
        "no all-reduce busbw (2 GPUs) was measured",
    )


@pytest.mark.parametrize("figure", ["300.0", True], ids=["text", "bool"])
def test_a_certified_busbw_given_as_text_or_a_boolean_is_no_number(figure: Any) -> None:
    odd = {**MULTI, "metrics": {**MULTI["metrics"], "sweep": [{"bytes": 1 << 28, "busbw_gbs": figure}]}}
    assert certified_busbw(sealed([odd]), 2, 1 << 28) is None
    loop: dict[str, Any] = {"name": "allreduce_loopback", "status": "pass", "reason": "",
            "metrics": {"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 120.0}}  # fmt: skip
    (got,) = judge_gate(run_of(gate_doc(loop)), sealed([odd]), T)
    assert got.status == "skip" and got.value == {"measured": 120.0, "certified": None}


def test_a_gpu_that_measures_zero_fails_it_is_no_missing_measure() -> None:
    gemm = _judged("image.gemm", 0.0)
    assert gemm.status == "fail" and gemm.value == {"measured": 0.0, "certified": 700.0, "fraction": 0.0}
    assert gemm.message == "bf16 GEMM 0.0 TFLOP/s = 0% of the certified 700.0 TFLOP/s (below 70%)"


# --------------------------------------------------------------------------- the certificate's side


def test_a_gpu_model_named_by_no_text_has_no_certified_figures() -> None:
    for name in (7, 7.5, None):
        unnamed = {**BASELINE, "metrics": {**BASELINE["metrics"], "device_name": name}}
        assert certified_figures(sealed([unnamed])) == {}


def test_no_certificate_judges_no_allreduce_and_reads_no_busbw() -> None:
    assert certified_busbw(None, 2, 1 << 28) is None and certified_figures(None) == {}
    loop: dict[str, Any] = {"name": "allreduce_loopback", "status": "pass", "reason": "",
            "metrics": {"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 120.0}}  # fmt: skip
    (got,) = judge_gate(run_of(gate_doc(loop)), None, T)
    assert got.status == "skip" and "the certificate records none for 2 GPUs" in got.message


@pytest.mark.parametrize("sweep", [None, {"bytes": 1 << 28, "busbw_gbs": 300.0}, "300", [[1 << 28, 300.0]]])
def test_a_multi_gpu_step_without_a_sweep_list_of_objects_gives_no_busbw(sweep: Any) -> None:
    # a certificate's metrics are any JSON (typed.check_json): a missing sweep, an object for the
    # list, a row that is itself a list are passed over, never a TypeError or AttributeError
    odd = {**MULTI, "metrics": {"world_size": 2, "sweep": sweep}}
    assert certified_busbw(sealed([odd, MULTI]), 2, 1 << 28) == 300.0
    assert certified_busbw(sealed([odd]), 2, 1 << 28) is None


# --------------------------------------------------------------------------- each finding's words


def test_a_warning_carries_its_remedy_as_a_failure_does_and_a_pass_none() -> None:
    got = judge_gate(
        run_of(gate_doc(gpu_step(0, 700.0, 3000.0), gpu_step(1, 560.0, 4000.0))), sealed([BASELINE]), T
    )
    by = {(x.check, x.gpu): x for x in got}
    assert by[("image.gemm", 1)].status == "warn" and by[("image.copy", 0)].status == "warn"
    assert by[("image.gemm", 1)].remedy.startswith("the GPU computes slower than when certified")
    assert by[("image.copy", 0)].remedy.startswith("GPU memory is slower than when certified")
    assert by[("image.gemm", 0)].remedy == "" and by[("image.copy", 1)].remedy == ""
    well_formed(got)


def test_the_allreduce_says_what_it_measured_and_is_judged_by_the_busbw_band() -> None:
    # 60% of the certified busbw: within busbw's band (warn below 85%, fail below 50%), where the
    # GEMM's or the copy's (fail below 70%) would fail it
    loop: dict[str, Any] = {"name": "allreduce_loopback", "status": "pass", "reason": "",
            "metrics": {"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 180.0}}  # fmt: skip
    (got,) = judge_gate(run_of(gate_doc(loop)), sealed([MULTI]), T)
    assert (got.check, got.status, got.gpu) == ("image.allreduce", "warn", None)
    assert got.message == "all-reduce busbw (2 GPUs) 180.0 GB/s = 60% of the certified 300.0 GB/s (below 85%)"
    assert got.remedy.startswith("the GPUs talk slower than when certified")
    other = {**loop, "metrics": {**loop["metrics"], "world_size": 4}}
    (none,) = judge_gate(run_of(gate_doc(other)), sealed([MULTI]), T)
    assert none.message.startswith(
        "all-reduce busbw (4 GPUs) 180.0 GB/s; the certificate records none for 4 GPUs "
    )


def test_a_skipped_allreduce_is_one_skip_of_image_allreduce_with_the_harness_reason() -> None:
    why = "one GPU: nothing to reduce across"
    skip = {"name": "allreduce_loopback", "status": "skip", "reason": why, "metrics": {}}
    got = judge_gate(run_of(gate_doc(skip)), sealed([MULTI]), T)
    assert [(x.check, x.status, x.message) for x in got] == [("image.allreduce", "skip", why)]


# --------------------------------------------------------------------------- a run without a document


def _no_result(stderr: str) -> str:
    """The message of a short mode that printed `stderr` and no document, read as check reads it
    (run_gate keeps stderr's tail, judge_gate tells its last line)."""

    def job(spec: ContainerSpec, on_stderr: Any) -> RunResult:
        if "--nonce" not in spec.command:
            return RunResult(exit_code=0, stdout="", stderr="")  # the memlock probe
        return RunResult(exit_code=1, stdout="", stderr=stderr)

    eng = FakeEngine(images={IMAGE_ID: IMAGE}, job=job)
    run = run_gate(eng, IMAGE, AccessChoice(name="none", reason="t"), timeout_s=30, say=lambda _line: None)
    (got,) = judge_gate(run, None, T)
    assert (got.check, got.status) == ("image.run", "fail")
    assert got.remedy.startswith("run `envbuilder certify IMAGE --quick`")
    return got.message


def test_a_run_without_a_result_tells_stderrs_last_line_cut_at_300_characters_or_no_output() -> None:
    long = "RuntimeError: " + "x" * 286 + "TAIL"  # 304 characters
    assert _no_result(f"starting\n{long}\n") == (
        f"the check's harness produced no result in the image (exit 1): {long[:300]}"
    )
    assert _no_result(f"{long[:300]}\n").endswith(f"(exit 1): {long[:300]}")
    assert _no_result("") == "the check's harness produced no result in the image (exit 1): no output"


def test_the_last_line_told_is_the_last_line_written_whatever_line_end_ended_the_output() -> None:
    # stderr ending in a blank line leaves its tail ending in a newline ("a\n\n".splitlines() keeps
    # the empty last line); a progress bar's carriage return ends a line too
    assert _no_result("starting\nImportError: no torch\n\n").endswith("(exit 1): ImportError: no torch")
    assert _no_result("loading 10%\rImportError: no torch").endswith("(exit 1): ImportError: no torch")


# --------------------------------------------------------------------------- steps as the image wrote them


def test_a_step_named_by_no_text_or_only_containing_gpu_is_passed_over() -> None:
    # a newer harness's step (or a broken image's) is no GPU's unless it is named gpuN
    odd: list[dict[str, Any]] = [
        {"name": None, "status": "fail", "reason": "?", "metrics": {}},
        {"status": "pass", "metrics": {}},
        {"name": 7, "status": "fail", "reason": "?", "metrics": {}},
        {"name": "multi_gpu", "status": "fail", "reason": "NVLink down", "metrics": {}},
        {
            "name": "nvlink_gpu_peers",
            "status": "pass",
            "reason": "",
            "metrics": {"device_name": "NVIDIA H200"},
        },
    ]
    assert judge_gate(run_of(gate_doc(*odd)), sealed([BASELINE]), T) == []


def test_a_null_reason_is_no_text_and_metrics_that_are_no_object_are_none() -> None:
    bare: dict[str, Any] = {"name": "cuda_smoke", "status": "skip", "reason": None, "metrics": {}}
    assert [x.message for x in judge_gate(run_of(gate_doc(bare)), None, T)] == [""]
    listed = {**gpu_step(0, 690.0, 3950.0), "metrics": [690.0, 3950.0]}
    got = {x.check: x for x in judge_gate(run_of(gate_doc(listed)), sealed([BASELINE]), T)}
    assert got["image.cuda_smoke"].status == "pass" and got["image.gemm"].status == "skip"
    assert got["image.copy"].message == "no device-memory copy was measured"


@pytest.mark.parametrize("name", [["NVIDIA H200"], {"model": "NVIDIA H200"}, 7])
def test_a_gpu_model_the_image_names_by_no_text_is_shown_as_given_and_not_judged(name: Any) -> None:
    step = gpu_step(0, 690.0, 3950.0)
    step["metrics"]["device_name"] = name
    seven = {**BASELINE, "metrics": {**BASELINE["metrics"], "device_name": "7"}}
    got = {x.check: x for x in judge_gate(run_of(gate_doc(step)), sealed([BASELINE, seven]), T)}
    assert got["image.cuda_smoke"].message == f"{name}: CUDA works, a GEMM matches the CPU"
    assert got["image.gemm"].status == ("pass" if name == 7 else "skip")
