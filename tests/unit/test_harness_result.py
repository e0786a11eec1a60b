"""The result document assembled from step records (harness/result.py): which runs a throughput
entry judges, why a gate is skipped, the multi_gpu section, and a document from a partial run."""

from __future__ import annotations

from typing import Any

from envbuilder.harness.record import FAIL, PASS, SKIP, Step
from envbuilder.harness.result import Outcome, assemble_result, multi_gpu_section, throughput_evidence
from envbuilder.harness.schema import validate_result
from envbuilder.harness.thresholds import select_thresholds

H200_DOC: dict[str, Any] = {
    "source_path": "t.json",
    "gpus": [
        {
            "name": "NVIDIA H200",
            "nvml_names": ["NVIDIA H200"],
            "throughput": {
                "tuned_rn50_eager": {"anchor_img_s": 4718, "min_fraction": 0.95},
                "tuned_rn50_compiled": {"anchor_img_s": 6661, "min_fraction": 0.95},
                "tuned_rn18_compiled": {"anchor_img_s": 17716, "min_fraction": None},
            },
        }
    ],
}


def _run(name: str, ips: float, *, status: str = PASS, compile: bool = False, compiled: bool = False) -> Step:
    metrics = {"images_per_s": ips, "config": {"compile": compile}, "compiled": compiled}
    return Step(name=name, status=status, reason="" if status == PASS else "why", metrics=metrics)


def test_a_throughput_entry_judges_the_step_of_its_name() -> None:
    steps = [
        _run("tuned_rn50_eager", 4700.0),
        _run("tuned_rn50_compiled", 4650.0, compile=True, compiled=False),  # fell back to eager
        _run("tuned_rn18_eager", 13000.0, status=FAIL),
        _run("train_rn18_fp32_bs32", 900.0),  # not in the table: never judged
    ]
    names = ["tuned_rn18_compiled", "tuned_rn18_eager", "tuned_rn50_compiled", "tuned_rn50_eager"]
    measured, why_not = throughput_evidence(steps, names)
    assert measured == {"tuned_rn50_eager": 4700.0}
    assert why_not == {
        "tuned_rn50_compiled": "torch.compile failed (see the step's warnings)",
        "tuned_rn18_eager": "tuned_rn18_eager: fail: why",
    }  # tuned_rn18_compiled never ran: judge_throughput says "run not measured"


def _outcome(steps: list[Step], **kw: Any) -> Outcome:
    base: dict[str, Any] = {
        "mode": "full",
        "framework": "torch",
        "gpu_path": True,
        "budget_s": 180.0,
        "started": "2026-12-01T00:00:00.000000Z",
        "finished": "2026-12-01T00:02:00.000000Z",
        "wall_s": 120.0,
        "options": {"seed": 1234},
        "host": {"gpus": [{"name": "NVIDIA H200"}]},
        "facts": {"telemetry_overhead": 0.002, "telemetry_overhead_detail": "A/B +0.10%"},
        "steps": (Step(name="host"), *steps),
        "thresholds": select_thresholds(H200_DOC, "NVIDIA H200"),
        "notes": (),
        "telemetry": {"available": False, "reason": "test"},
    }
    return Outcome(**{**base, **kw})


def test_assembled_document_gates_from_the_steps() -> None:
    steps = [
        _run("tuned_rn50_eager", 4700.0),
        _run("tuned_rn50_compiled", 6000.0, compile=True, compiled=True),  # 90.1%: below 95%
        Step(name="telemetry_overhead", metrics={"gated_overhead": 0.002}),
    ]
    doc = assemble_result(_outcome(steps))
    assert validate_result(doc) == []
    gates = {g["name"]: g for g in doc["gates"]}
    assert gates["throughput:tuned_rn50_eager"]["status"] == PASS
    assert gates["throughput:tuned_rn50_compiled"]["status"] == FAIL
    assert gates["throughput:tuned_rn18_compiled"] == {
        "name": "throughput:tuned_rn18_compiled",
        "anchor_img_s": 17716.0,
        "min_fraction": None,
        "warn_fraction": 0.9,
        "status": SKIP,
        "reason": "run not measured",
    }
    assert (
        gates["telemetry_overhead"]["status"] == PASS
        and "A/B +0.10%" in gates["telemetry_overhead"]["reason"]
    )
    assert (
        doc["verdict"] == "failed"
        and doc["verdict_reason"] == "below threshold: throughput:tuned_rn50_compiled"
    )
    assert doc["multi_gpu"] == {
        "status": "skip",
        "reason": "not run: the CUDA smoke test failed or torch is missing",
    }


def test_cpu_and_quick_documents_carry_no_performance_gate() -> None:
    for kw in ({"mode": "cpu", "gpu_path": False}, {"mode": "quick"}):
        doc = assemble_result(_outcome([_run("tuned_rn50_eager", 10.0)], **kw))
        assert doc["gates"] == [] and validate_result(doc) == []
    assert assemble_result(_outcome([], mode="quick"))["multi_gpu"]["reason"] == "not run: quick mode"


def test_multi_gpu_section_and_gates_come_from_its_step() -> None:
    gates = [{"name": "multi_gpu:allreduce_values", "status": FAIL, "reason": "all-reduce values wrong"}]
    st = Step(
        name="multi_gpu",
        status=FAIL,
        reason="all-reduce values wrong: rank 1: ...",
        metrics={"world_size": 2, "gates": gates, "traceback": "no"},
    )
    section, got = multi_gpu_section([Step(name="host"), st], "full")
    assert section == {"status": FAIL, "reason": st.reason, "world_size": 2, "gates": gates}
    assert got == gates
    doc = assemble_result(_outcome([st], mode="cpu", gpu_path=False))
    assert doc["gates"] == gates and doc["verdict"] == "failed"


def test_a_jax_certification_meets_only_the_jax_anchors() -> None:
    doc = {
        "gpus": [
            {
                "name": "NVIDIA H200",
                "nvml_names": ["NVIDIA H200"],
                "throughput": {
                    "tuned_rn50_eager": {"anchor_img_s": 4718, "min_fraction": 0.95},
                    "tuned_rn50_jit": {"anchor_img_s": 6856, "min_fraction": 0.95, "framework": "jax"},
                },
            }
        ]
    }
    steps = [_run("tuned_rn50_jit", 6600.0), Step(name="telemetry_overhead")]
    thresholds = select_thresholds(doc, "NVIDIA H200")
    jax_doc = assemble_result(_outcome(steps, framework="jax", thresholds=thresholds))
    names = [g["name"] for g in jax_doc["gates"]]
    assert names == ["throughput:tuned_rn50_jit", "telemetry_overhead"]
    assert jax_doc["gates"][0]["status"] == PASS and jax_doc["gates"][0]["fraction"] == 0.9627
    torch_doc = assemble_result(_outcome(steps, thresholds=thresholds))
    assert [g["name"] for g in torch_doc["gates"]] == ["throughput:tuned_rn50_eager", "telemetry_overhead"]
