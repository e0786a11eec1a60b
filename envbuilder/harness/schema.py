"""The result document's shape check (`validate_result`): what the host side and the tests rely on.
docs/harness.md shows the document."""

from __future__ import annotations

import json
from typing import Any

from .record import FAIL, PASS, SKIP, STATUSES

VERDICTS = ("certified", "certified-cpu-only", "failed")
MODES = ("full", "quick", "cpu")


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
    # What the host checks a result against (certify/verdict.py): the payload's digest, whether
    # it ran the GPU path, the options it was given (the nonce, the framework).
    need(doc, "harness_sha256", str, "result")
    need(doc, "gpu_path", bool, "result")
    need(doc, "options", dict, "result")
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
