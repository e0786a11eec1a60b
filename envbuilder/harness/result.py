"""Step records, the result document, the verdict and the result's schema check.

Every step prints one JSON line to stdout when it ends; the result document is the last line.
Prose goes to stderr (log()), so the caller never parses prose.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TextIO

PASS, FAIL, SKIP = "pass", "fail", "skip"
STATUSES = (PASS, FAIL, SKIP)
VERDICTS = ("certified", "certified-cpu-only", "failed")
MODES = ("full", "quick", "cpu")


def log(msg: str) -> None:
    """Progress prose: stderr only."""
    print(f"[harness] {msg}", file=sys.stderr, flush=True)


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class StepFailed(Exception):
    """A check inside a step did not hold; the message is the step's reason."""


class StepSkipped(Exception):
    """The step cannot apply here (no GPU, framework absent, budget spent); message = reason."""


@dataclass
class Step:
    name: str
    status: str = PASS
    reason: str = ""
    seconds: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "step",
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "metrics": clean_json(self.metrics),
            "warnings": list(self.warnings),
        }


def clean_json(value: Any) -> Any:
    """Make a value strict-JSON safe: NaN/inf become strings, tuples lists, keys strings."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        return round(value, 6)
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


class Recorder:
    """Collects steps and prints each as one JSON line as it finishes."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.steps: list[Step] = []
        self.current = ""  # the step running now (the watchdog names it)
        # Serialises stdout lines: the watchdog thread may print the result mid-run.
        self.lock = threading.RLock()
        self._out = out if out is not None else sys.stdout

    def emit(self, step: Step) -> Step:
        with self.lock:
            self.steps.append(step)
            print(json.dumps(step.to_json(), allow_nan=False), file=self._out, flush=True)
        mark = {"pass": "ok  ", "fail": "FAIL", "skip": "skip"}[step.status]
        extra = f": {step.reason}" if step.reason else ""
        log(f"{mark} {step.name} ({step.seconds:.1f}s){extra}")
        return step

    @contextmanager
    def step(self, name: str) -> Iterator[Step]:
        """Run a block as a step: StepFailed/StepSkipped set its status, any other exception
        becomes a failed step with the exception as reason (never a crash)."""
        st = Step(name=name)
        self.current = name
        log(f"---- {name}")
        t0 = time.perf_counter()
        try:
            yield st
        except StepSkipped as e:
            st.status, st.reason = SKIP, str(e)
        except StepFailed as e:
            st.status, st.reason = FAIL, str(e)
        except Exception as e:  # every failure becomes a record, never a crash
            st.status, st.reason = FAIL, f"{type(e).__name__}: {e}"
            st.metrics.setdefault("traceback", traceback.format_exc(limit=6)[-2000:])
        st.seconds = time.perf_counter() - t0
        self.current = ""
        self.emit(st)

    def skip(self, name: str, reason: str) -> Step:
        return self.emit(Step(name=name, status=SKIP, reason=reason))

    def run(self, name: str, fn: Callable[[Step], None]) -> Step:
        with self.step(name) as st:
            fn(st)
        return self.steps[-1]


def decide_verdict(
    steps: list[Step], gates: list[dict[str, Any]], *, mode: str, gpu_path: bool
) -> tuple[str, str]:
    """The verdict and its one-line reason.

    failed: any step failed, any gate failed, or nothing was checked at all.
    certified-cpu-only: the CPU path passed (no GPU, or --cpu-only): NOT a GPU certification.
    certified: the GPU path ran and everything that ran passed.
    """
    failed = [s.name for s in steps if s.status == FAIL]
    if failed:
        return "failed", f"failed steps: {', '.join(failed)}"
    bad_gates = [g["name"] for g in gates if g.get("status") == FAIL]
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


def validate_result(doc: Any) -> list[str]:
    """Check a result document's shape; returns the problems found (empty = valid)."""
    problems: list[str] = []

    def need(obj: Any, key: str, typ: type | tuple[type, ...], where: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            problems.append(f"{where}: missing {key!r}")
            return None
        if not isinstance(obj[key], typ):
            problems.append(f"{where}.{key}: expected {typ}, got {type(obj[key]).__name__}")
            return None
        return obj[key]

    if not isinstance(doc, dict):
        return ["result: not an object"]
    if doc.get("kind") != "result":
        problems.append("result.kind: expected 'result'")
    need(doc, "schema_version", int, "result")
    need(doc, "harness_version", str, "result")
    for key in ("started", "finished"):
        need(doc, key, str, "result")
    mode = need(doc, "mode", str, "result")
    if mode is not None and mode not in MODES:
        problems.append(f"result.mode: {mode!r} not in {MODES}")
    verdict = need(doc, "verdict", str, "result")
    if verdict is not None and verdict not in VERDICTS:
        problems.append(f"result.verdict: {verdict!r} not in {VERDICTS}")
    need(doc, "verdict_reason", str, "result")
    need(doc, "thresholds", dict, "result")
    need(doc, "telemetry", dict, "result")
    need(doc, "host", dict, "result")
    gates = need(doc, "gates", list, "result") or []
    for i, g in enumerate(gates):
        need(g, "name", str, f"gates[{i}]")
        st = need(g, "status", str, f"gates[{i}]")
        if st is not None and st not in (PASS, FAIL, SKIP, "warn"):
            problems.append(f"gates[{i}].status: {st!r}")
    steps = need(doc, "steps", list, "result") or []
    names: set[str] = set()
    for i, s in enumerate(steps):
        w = f"steps[{i}]"
        if isinstance(s, dict) and s.get("kind") != "step":
            problems.append(f"{w}.kind: expected 'step'")
        name = need(s, "name", str, w)
        if name in names:
            problems.append(f"{w}.name: duplicate {name!r}")
        names.add(name)
        st = need(s, "status", str, w)
        if st is not None and st not in STATUSES:
            problems.append(f"{w}.status: {st!r} not in {STATUSES}")
        reason = need(s, "reason", str, w)
        if st in (FAIL, SKIP) and reason == "":
            problems.append(f"{w}.reason: a {st} needs a reason")
        need(s, "seconds", (int, float), w)
        need(s, "metrics", dict, w)
    if "multi_gpu" in doc:  # absent in documents from before the multi_gpu step
        problems.extend(validate_multi_gpu(doc["multi_gpu"]))
    try:
        json.dumps(doc, allow_nan=False)
    except ValueError as e:
        problems.append(f"result: not strict JSON ({e})")
    return problems


def validate_multi_gpu(sec: Any) -> list[str]:
    """The result's multi_gpu section: status and reason always; what a run that got as far as
    the sweep carries; a pass must have correct values and identical parameters."""
    w = "result.multi_gpu"
    if not isinstance(sec, dict):
        return [f"{w}: not an object"]
    problems: list[str] = []
    status = sec.get("status")
    if status not in STATUSES:
        problems.append(f"{w}.status: {status!r} not in {STATUSES}")
    if not isinstance(sec.get("reason"), str) or (status in (FAIL, SKIP) and not sec.get("reason")):
        problems.append(f"{w}.reason: a string, non-empty for a {status}")
    if status == SKIP:
        return problems
    for key, typ in (("world_size", int), ("backend", str), ("sweep", list), ("env", dict)):
        if not isinstance(sec.get(key), typ):
            problems.append(f"{w}.{key}: expected {typ.__name__}")
    for i, row in enumerate(sec.get("sweep") or []):
        ok = isinstance(row, dict) and isinstance(row.get("bytes"), int)
        nums = ("time_us", "algbw_gbs", "busbw_gbs")
        if not ok or not all(isinstance(row.get(k), (int, float)) for k in nums):
            problems.append(f"{w}.sweep[{i}]: needs bytes and {', '.join(nums)}")
    if status == PASS:
        for key in ("allreduce_values_ok", "params_identical"):
            if sec.get(key) is not True:
                problems.append(f"{w}.{key}: a pass needs true, got {sec.get(key)!r}")
        if not sec.get("sweep"):
            problems.append(f"{w}.sweep: a pass needs the sweep table")
    return problems
