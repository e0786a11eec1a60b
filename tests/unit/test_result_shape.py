"""The harness result's shape check (harness/schema.py validate_result) and the verdict rule
(harness/result.py decide_verdict), which the host applies to every result (certify/verdict.py):
each condition pinned, as the automatic mutants (benchmarks/mutants.py --auto verdict,
2026-12-05) found them unpinned: items past the first of a list, an item that is not an object,
a field missing (one problem, not two), the whole document not an object, the quick mode's
reason."""

from __future__ import annotations

from typing import Any

import pytest
from result_docs import result_doc as doc
from result_docs import result_step as step

from envbuilder.harness.record import Step
from envbuilder.harness.result import decide_verdict
from envbuilder.harness.schema import validate_result


def test_the_base_document_is_valid() -> None:
    assert validate_result(doc()) == []


@pytest.mark.parametrize("value", ["result", [], None, 1])
def test_a_document_that_is_not_an_object_is_one_problem(value: Any) -> None:
    assert validate_result(value) == ["result: not an object"]


# Every field the host relies on, written out (not read from the schema: a field dropped from the
# checks must fail here).
REQUIRED = (
    "schema_version",
    "harness_version",
    "harness_sha256",
    "gpu_path",
    "options",
    "started",
    "finished",
    "mode",
    "verdict",
    "verdict_reason",
    "thresholds",
    "telemetry",
    "host",
    "gates",
    "steps",
)


@pytest.mark.parametrize("key", REQUIRED)
def test_each_missing_field_is_exactly_one_problem(key: str) -> None:
    d = doc()
    del d[key]
    assert validate_result(d) == [f"result: missing {key!r}"]


def test_an_unknown_mode_or_verdict_is_a_problem() -> None:
    assert validate_result(doc(mode="turbo")) == ["result.mode: 'turbo' not in ('full', 'quick', 'cpu')"]
    assert validate_result(doc(verdict="ok"))[0].startswith("result.verdict: 'ok' not in")


@pytest.mark.parametrize("at", [0, 1])
def test_every_gate_is_checked_not_only_the_first(at: int) -> None:
    gates: list[Any] = [{"name": "a", "status": "pass"}, {"name": "b", "status": "pass"}]
    gates[at] = {"name": "x", "status": "bogus"}
    assert validate_result(doc(gates=gates)) == [f"gates[{at}].status: 'bogus'"]
    gates[at] = {"name": "x"}
    assert validate_result(doc(gates=gates)) == [f"gates[{at}]: missing 'status'"]


@pytest.mark.parametrize("at", [0, 1])
def test_every_step_is_checked_not_only_the_first(at: int) -> None:
    steps = [step("host"), step("cpu_check")]
    del steps[at]["status"]
    assert validate_result(doc(steps=steps)) == [f"steps[{at}]: missing 'status'"]


@pytest.mark.parametrize("item", [None, 5, "name", ["name"]])
def test_a_gate_or_step_that_is_not_an_object_is_a_problem_not_a_crash(item: Any) -> None:
    gates = validate_result(doc(gates=[item]))
    assert gates == ["gates[0]: missing 'name'", "gates[0]: missing 'status'"]
    steps = validate_result(doc(steps=[item]))
    assert "steps[0]: missing 'name'" in steps and "steps[0]: missing 'status'" in steps


def test_a_nan_anywhere_is_not_strict_json() -> None:
    problems = validate_result(doc(host={"x": float("nan")}))
    assert len(problems) == 1 and problems[0].startswith("result: not strict JSON")


def _steps(*statuses: str) -> list[Step]:
    names = ["host", "cuda_smoke", "train"]
    return [
        Step(name=n, status=s, reason="" if s == "pass" else s, seconds=1.0)
        for n, s in zip(names[: len(statuses)], statuses, strict=True)
    ]


def test_the_verdict_reason_says_quick_or_counts_the_checks() -> None:
    assert decide_verdict(_steps("pass", "pass"), [], mode="quick", gpu_path=True) == (
        "certified",
        "quick mode: host record and smoke tests passed (no benchmark)",
    )
    assert decide_verdict(_steps("pass", "pass", "pass"), [], mode="full", gpu_path=True) == (
        "certified",
        "2 checks passed on the GPU",
    )


def test_the_host_record_alone_or_skipped_steps_certify_nothing() -> None:
    assert decide_verdict(_steps("pass", "skip"), [], mode="cpu", gpu_path=False)[0] == "failed"
    assert decide_verdict(_steps("skip", "pass"), [], mode="cpu", gpu_path=False)[0] == "certified-cpu-only"


# ------------------------------------------------------------------ the second operator set (2026-12-05)
# benchmarks/mutants.py --auto verdict --ops new on main: a dropped check, a removed item.


@pytest.mark.parametrize("key", REQUIRED)
def test_each_field_of_the_wrong_type_is_exactly_one_problem(key: str) -> None:
    wrong = 1.5  # no field of a result is a float
    problems = validate_result(doc(**{key: wrong}))
    assert len(problems) == 1 and problems[0].startswith(f"result.{key}: expected "), problems


@pytest.mark.parametrize("key", ["name", "status", "reason", "seconds", "metrics"])
def test_each_missing_step_field_is_exactly_one_problem(key: str) -> None:
    s = step("cpu_check")
    del s[key]
    assert validate_result(doc(steps=[step("host"), s])) == [f"steps[1]: missing {key!r}"]


def test_a_step_of_another_kind_is_a_problem() -> None:
    assert validate_result(doc(steps=[step("host"), step("cpu_check", kind="gate")])) == [
        "steps[1].kind: expected 'step'"
    ]


@pytest.mark.parametrize("status", ["fail", "skip"])
def test_a_failed_or_skipped_step_needs_a_reason(status: str) -> None:
    bare = step("cpu_check", status=status, reason="")
    assert validate_result(doc(steps=[step("host"), bare])) == [f"steps[1].reason: a {status} needs a reason"]
    told = step("cpu_check", status=status, reason="why")
    assert validate_result(doc(steps=[step("host"), told])) == []


@pytest.mark.parametrize("seconds", [0, 3, 0.5])
def test_a_steps_seconds_may_be_an_int_or_a_float(seconds: float) -> None:
    assert validate_result(doc(steps=[step("host", seconds=seconds)])) == []


def test_a_malformed_multi_gpu_section_is_a_problem_of_the_result() -> None:
    assert validate_result(doc(multi_gpu=[])) == ["result.multi_gpu: not an object"]
    assert validate_result(doc(multi_gpu={"status": "skip", "reason": "one GPU"})) == []


# An empty string is a value the image's result can carry, not a field left out: the host must
# refuse it as it refuses any other unknown mode, verdict or status (issue 23, --ops sixth).
def test_an_empty_mode_verdict_or_status_is_a_problem_not_an_absent_field() -> None:
    assert validate_result(doc(mode="")) == ["result.mode: '' not in ('full', 'quick', 'cpu')"]
    assert validate_result(doc(verdict="")) == [
        "result.verdict: '' not in ('certified', 'certified-cpu-only', 'failed')"
    ]
    assert validate_result(doc(gates=[{"name": "g", "status": ""}])) == ["gates[0].status: ''"]
    steps = [step("host"), step("cpu_check", status="")]
    assert validate_result(doc(steps=steps)) == ["steps[1].status: '' not in ('pass', 'fail', 'skip')"]
