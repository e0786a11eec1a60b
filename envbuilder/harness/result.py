"""The result document, assembled from what a certification recorded: gates judged from the step
records and the thresholds, the verdict, the multi_gpu section. Pure: the orchestrator (plan.py)
hands in an Outcome; nothing here runs a step or reads the host.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import HARNESS_VERSION, RESULT_SCHEMA_VERSION
from .digest import tree_digest
from .record import FAIL, PASS, Step, clean_json
from .thresholds import judge_overhead, judge_throughput


@dataclass(frozen=True)
class Outcome:
    """What one certification produced, as the orchestrator saw it at one moment (the end, or the
    watchdog firing mid-step)."""

    mode: str  # full | quick | cpu
    framework: str  # torch | jax | tensorflow: the throughput entries of that framework judge
    gpu_path: bool
    budget_s: float
    started: str
    finished: str
    wall_s: float
    options: Mapping[str, Any]  # the options given (defaults and unset ones left out)
    host: Mapping[str, Any]
    facts: Mapping[str, Any]
    steps: tuple[Step, ...]
    thresholds: Mapping[str, Any]  # the applied thresholds (select_thresholds)
    notes: tuple[str, ...]
    telemetry: Mapping[str, Any]


def throughput_evidence(
    steps: Sequence[Step], names: Sequence[str]
) -> tuple[dict[str, float | None], dict[str, str]]:
    """A throughput entry judges the step of its name: (images/s of each that measured,
    why each that did not). A compiled run that fell back to eager measured nothing compiled."""
    measured: dict[str, float | None] = {}
    why_not: dict[str, str] = {}
    by_name = {s.name: s for s in steps}
    for name in names:
        st = by_name.get(name)
        if st is None:
            continue  # never ran: judge_throughput says "run not measured"
        config = st.metrics.get("config") or {}
        if config.get("compile") and "compiled" in st.metrics and not st.metrics["compiled"]:
            why_not[name] = "torch.compile failed (see the step's warnings)"
        elif st.status == PASS and isinstance(st.metrics.get("images_per_s"), (int, float)):
            measured[name] = float(st.metrics["images_per_s"])
        else:
            why_not[name] = f"{name}: {st.status}: {st.reason}"[:300]
    return measured, why_not


def multi_gpu_section(steps: Sequence[Step], mode: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The result's multi_gpu section and its gates, from the multi_gpu step's record."""
    st = next((s for s in steps if s.name == "multi_gpu"), None)
    if st is None:
        why = (
            "not run: quick mode"
            if mode == "quick"
            else "not run: the CUDA smoke test failed or torch is missing"
        )
        return {"status": "skip", "reason": why}, []
    section = {k: v for k, v in st.metrics.items() if k != "traceback"}
    return {"status": st.status, "reason": st.reason, **section}, list(st.metrics.get("gates") or [])


def judge_gates(o: Outcome) -> list[dict[str, Any]]:
    """Throughput and telemetry-overhead gates (GPU path, full mode), then the multi_gpu ones."""
    gates: list[dict[str, Any]] = []
    if o.gpu_path and o.mode == "full":
        table = {
            name: spec
            for name, spec in (o.thresholds.get("throughput") or {}).items()
            if spec.get("framework", "torch") == o.framework
        }
        measured, why_not = throughput_evidence(o.steps, sorted(table))
        gates = judge_throughput({**o.thresholds, "throughput": table}, measured, why_not)
        why = next((s.reason for s in o.steps if s.name == "telemetry_overhead"), "")
        detail = str(o.facts.get("telemetry_overhead_detail", ""))
        gates.append(judge_overhead(dict(o.thresholds), o.facts.get("telemetry_overhead"), why, detail))
    gates.extend(multi_gpu_section(o.steps, o.mode)[1])
    return gates


def decide_verdict(
    steps: Sequence[Step], gates: Sequence[Mapping[str, Any]], *, mode: str, gpu_path: bool
) -> tuple[str, str]:
    """The verdict and its one-line reason.

    failed: any step failed, any gate failed, or nothing was checked at all.
    certified-cpu-only: the CPU path passed (no GPU, or --cpu-only): NOT a GPU certification.
    certified: the GPU path ran and everything that ran passed.
    """
    failed = [s.name for s in steps if s.status == FAIL]
    if failed:
        return "failed", f"failed steps: {', '.join(failed)}"
    bad_gates = [str(g["name"]) for g in gates if g.get("status") == FAIL]
    if bad_gates:
        return "failed", f"below threshold: {', '.join(bad_gates)}"
    passed = [s.name for s in steps if s.status == PASS and s.name != "host"]
    if not passed:
        return "failed", "no check ran (every step was skipped)"
    if not gpu_path:
        return "certified-cpu-only", "CPU path passed; this is NOT a GPU certification"
    if mode == "quick":
        return "certified", "quick mode: host record and smoke tests passed (no benchmark)"
    return "certified", f"{len(passed)} checks passed on the GPU"


def assemble_result(o: Outcome) -> dict[str, Any]:
    """The result document (strict JSON; docs/harness.md shows it, schema.validate_result checks it)."""
    gates = judge_gates(o)
    verdict, reason = decide_verdict(o.steps, gates, mode=o.mode, gpu_path=o.gpu_path)
    doc: dict[str, Any] = clean_json(
        {
            "kind": "result",
            "schema_version": RESULT_SCHEMA_VERSION,
            "harness_version": HARNESS_VERSION,
            "harness_sha256": tree_digest(),
            "mode": o.mode,
            "gpu_path": o.gpu_path,
            "started": o.started,
            "finished": o.finished,
            "wall_seconds": o.wall_s,
            "budget_seconds": o.budget_s,
            "options": dict(o.options),
            "host": dict(o.host),
            "facts": dict(o.facts),
            "steps": [st.to_json() for st in o.steps],
            "thresholds": dict(o.thresholds),
            "gates": gates,
            "verdict": verdict,
            "verdict_reason": reason,
            "notes": list(o.notes),
            "telemetry": dict(o.telemetry),
            "multi_gpu": multi_gpu_section(o.steps, o.mode)[0],
        }
    )
    return doc
