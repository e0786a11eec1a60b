"""The image's side of `envbuilder check` (check/image.py) at its trust boundaries: the short
mode's gate.json comes from the image under test and the certificate's figures from whoever
certified, so each figure is a finite number or none, each step is judged by its own name, and each
finding says what it measured against which certified figure, with the remedy of a warning too.
Written for the automatic mutants of check/image.py that survived the blind run of 2026-12-06
(benchmarks/results/mutants-check-judged-image-2026-12-06.md)."""

from __future__ import annotations

from typing import Any

import pytest
from test_check import BASELINE, MULTI, T, gate_doc, gpu_step, run_of, sealed

from envbuilder.check.image import certified_busbw, certified_figures, judge_gate

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
