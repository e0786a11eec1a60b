"""A harness result document that validate_result (harness/schema.py) accepts, and its steps:
the base that the shape and verdict tests change one field of."""

from __future__ import annotations

from typing import Any


def result_step(name: str = "host", **over: Any) -> dict[str, Any]:
    return {
        "kind": "step",
        "name": name,
        "status": "pass",
        "reason": "",
        "seconds": 0.1,
        "metrics": {},
    } | over


def result_doc(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "kind": "result",
        "schema_version": 1,
        "harness_version": "1.0.0",
        "harness_sha256": "sha256:" + "0" * 64,
        "gpu_path": False,
        "options": {"nonce": "n"},
        "mode": "cpu",
        "started": "t0",
        "finished": "t1",
        "verdict": "certified-cpu-only",
        "verdict_reason": "CPU path passed",
        "thresholds": {},
        "telemetry": {},
        "host": {},
        "gates": [{"name": "g", "status": "pass"}],
        "steps": [result_step("host"), result_step("cpu_check")],
    }
    return base | over
