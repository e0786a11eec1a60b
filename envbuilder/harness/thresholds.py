"""Thresholds: load the data the host hands in (--thresholds), pick the GPU's entry, judge runs.

The numbers live in matrices/thresholds.yaml; BUILTIN_DEFAULTS mirrors its `defaults` (a unit
test keeps the two equal) so the payload still gates correctness when run with no file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .multigpu.sweep import human_bytes
from .record import FAIL, PASS, SKIP

BUILTIN_DEFAULTS: dict[str, Any] = {
    "accuracy_margin_over_chance": 0.25,
    "loss_drop_min": 0.2,
    "telemetry_overhead_max": 0.01,
    "throughput_warn_fraction": 0.90,
}


# The multi_gpu step's floors for a GPU/interconnect without an entry of its own (thresholds.yaml
# `multi_gpu.defaults` mirrors this; a unit test keeps them equal). Correctness (reduced values,
# identical parameters) always gates. 0.5 scaling efficiency: at 2 GPUs that is the throughput of
# one GPU, so below it adding GPUs made training slower: a broken path (no P2P, NCCL over
# sockets, a tiny /dev/shm), never a slow interconnect. No bandwidth floor without an anchor.
# busbw_at_bytes: the message size whose busbw a floor judges (1 GiB, where the 2-GPU floors were
# measured); the sweep goes further where memory allows (multigpu/sweep.py), an entry may move it.
BUILTIN_MULTI_GPU: dict[str, Any] = {
    "min_busbw_gbs": None,
    "min_scaling_efficiency": 0.5,
    "busbw_at_bytes": 1 << 30,
}
MULTI_GPU_FIELDS = ("min_busbw_gbs", "min_scaling_efficiency", "reference_busbw_gbs", "busbw_at_bytes")


class ThresholdsError(Exception):
    """The thresholds file cannot be read or has the wrong shape."""


def load_thresholds_file(path: str) -> dict[str, Any]:
    """Read a thresholds document: JSON, or YAML when PyYAML is importable.

    Raises ThresholdsError when the file is missing or malformed.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ThresholdsError(f"cannot read thresholds file {path}: {e}") from e
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            import yaml  # optional: only the host side is sure to have it

            doc = yaml.safe_load(text)
        except ImportError as e:
            raise ThresholdsError(f"{path} is not JSON and PyYAML is not installed") from e
        except Exception as e:
            raise ThresholdsError(f"{path}: not JSON nor YAML: {e}") from e
    if not isinstance(doc, dict):
        raise ThresholdsError(f"{path}: expected a mapping at the top level")
    for key in ("defaults", "gpus"):
        if key in doc and not isinstance(doc[key], dict if key == "defaults" else list):
            raise ThresholdsError(f"{path}: field {key!r} has the wrong type")
    return doc


def select_thresholds(doc: dict[str, Any] | None, gpu_name: str | None) -> dict[str, Any]:
    """Effective thresholds for this host: defaults (built-in, then the file's) plus the entry
    whose nvml_names holds gpu_name. Records which entry applied."""
    applied: dict[str, Any] = dict(BUILTIN_DEFAULTS)
    applied["source"] = "built-in defaults"
    applied["gpu_entry"] = None
    applied["throughput"] = {}
    applied["multi_gpu"] = {"defaults": dict(BUILTIN_MULTI_GPU), "entries": []}
    if doc is None:
        return applied
    applied["source"] = str(doc.get("source_path", "thresholds file"))
    applied.update({k: v for k, v in (doc.get("defaults") or {}).items()})
    for entry in doc.get("gpus") or []:
        if gpu_name and gpu_name in (entry.get("nvml_names") or []):
            applied["gpu_entry"] = entry.get("name", gpu_name)
            applied["throughput"] = dict(entry.get("throughput") or {})
            break
    mg = doc.get("multi_gpu") or {}
    applied["multi_gpu"]["defaults"].update(mg.get("defaults") or {})
    applied["multi_gpu"]["entries"] = [
        dict(e) for e in mg.get("entries") or [] if gpu_name and gpu_name in (e.get("nvml_names") or [])
    ]
    return applied


def pick_multi_gpu(applied: dict[str, Any], interconnect: str, world: int) -> dict[str, Any]:
    """The multi_gpu thresholds for this GPU model, interconnect and GPU count: the first entry
    (already filtered to this GPU by select_thresholds) whose interconnect and world_size match
    (absent = any); its non-null fields replace the defaults. null = no anchor of its own."""
    table = applied.get("multi_gpu") or {}
    spec: dict[str, Any] = dict(BUILTIN_MULTI_GPU)
    spec.update(table.get("defaults") or {})
    spec["entry"] = None
    for e in table.get("entries") or []:
        if e.get("interconnect") not in (None, interconnect) or e.get("world_size") not in (None, world):
            continue
        spec["entry"] = e.get("name")
        spec.update({k: e[k] for k in MULTI_GPU_FIELDS if e.get(k) is not None})
        break
    return spec


def judge_multi_gpu(
    spec: dict[str, Any], m: dict[str, Any], *, perf_why_not: str = ""
) -> list[dict[str, Any]]:
    """Gates of the multi_gpu step from its metrics m: the all-reduce values, identical parameters
    (both always), busbw at spec's busbw_at_bytes and DDP scaling efficiency (a threshold when spec
    holds one; report-only skips otherwise). perf_why_not: skip the performance gates with it."""

    def flag(name: str, ok: Any, good: str, bad: str, why_missing: str) -> dict[str, Any]:
        if ok is None:
            return {"name": name, "status": SKIP, "reason": why_missing}
        return {"name": name, "status": PASS if ok else FAIL, "reason": good if ok else bad}

    gates = [
        flag(
            "multi_gpu:allreduce_values",
            m.get("allreduce_values_ok"),
            "every size reduced to n(n+1)/2",
            "all-reduce values wrong",
            "the sweep did not finish",
        ),
        flag(
            "multi_gpu:params_identical",
            m.get("params_identical"),
            "max abs difference 0 on every rank",
            "parameters differ across ranks after DDP training",
            "the DDP run did not finish",
        ),
    ]
    size, busbw, short = busbw_at(spec, m)
    for key, value, unit in (
        ("busbw", busbw, "GB/s"),
        ("scaling_efficiency", m.get("scaling_efficiency"), ""),
    ):
        limit = spec.get("min_busbw_gbs" if key == "busbw" else "min_scaling_efficiency")
        gate: dict[str, Any] = {"name": f"multi_gpu:{key}", "min": limit, "value": value}
        at = f" at {human_bytes(size)}" if key == "busbw" else ""
        if key == "busbw":
            gate.update(at_bytes=size, reference_gbs=spec.get("reference_busbw_gbs"))
        shown = f"{value:.3g} {unit}".strip() if isinstance(value, (int, float)) else ""
        if perf_why_not:
            gate.update(status=SKIP, reason=perf_why_not)
        elif key == "busbw" and short:
            # A floor the sweep never reached is not met: the GPU had too little free memory.
            gate.update(status=SKIP if limit is None else FAIL, reason=short)
        elif value is None:
            gate.update(status=SKIP, reason="not measured")
        elif limit is None:
            gate.update(status=SKIP, reason=f"report only: {shown}{at} (no threshold: UNCONFIRMED anchor)")
        elif float(value) < float(limit):
            gate.update(status=FAIL, reason=f"{key} {shown}{at} < {float(limit):g} {unit}".rstrip())
        else:
            gate.update(status=PASS, reason=f"{key} {shown}{at} >= {float(limit):g} {unit}".rstrip())
        gates.append(gate)
    return gates


def busbw_at(spec: dict[str, Any], m: dict[str, Any]) -> tuple[int | None, float | None, str]:
    """(size, busbw there, why it is missing) for the gate: the sweep row at spec's busbw_at_bytes;
    a result without a sweep table gives its busbw_at_max_gbs when max_bytes is that size."""
    want = int(spec.get("busbw_at_bytes") or BUILTIN_MULTI_GPU["busbw_at_bytes"])
    rows = [r for r in m.get("sweep") or [] if isinstance(r, dict)]
    top = max((int(r["bytes"]) for r in rows if isinstance(r.get("bytes"), int)), default=m.get("max_bytes"))
    for r in rows:
        if r.get("bytes") == want and isinstance(r.get("busbw_gbs"), (int, float)):
            return want, float(r["busbw_gbs"]), ""
    if not rows and m.get("max_bytes") == want and m.get("busbw_at_max_gbs") is not None:
        return want, float(m["busbw_at_max_gbs"]), ""
    if isinstance(top, int) and top < want:
        cap = m.get("sweep_cap") or {}
        why = f" ({cap['limited_by']} cap)" if isinstance(cap, dict) and cap.get("limited_by") else ""
        stopped = f"the sweep stopped at {human_bytes(top)}{why}"
        return want, None, f"busbw not measured at {human_bytes(want)}: {stopped}"
    return want, None, ""


def judge_throughput(
    applied: dict[str, Any], measured: dict[str, float | None], skipped: dict[str, str]
) -> list[dict[str, Any]]:
    """One gate per throughput entry of the applied thresholds.

    status: pass; warn (below throughput_warn_fraction, or below min_fraction of a warn-only
    entry); fail (below min_fraction); skip (the run did not happen; reason says why).
    """
    gates: list[dict[str, Any]] = []
    warn_frac = float(applied.get("throughput_warn_fraction", 0.9))
    for name, spec in sorted((applied.get("throughput") or {}).items()):
        anchor = float(spec["anchor_img_s"])
        min_frac = spec.get("min_fraction")
        gate: dict[str, Any] = {
            "name": f"throughput:{name}",
            "anchor_img_s": anchor,
            "min_fraction": min_frac,
            "warn_fraction": warn_frac,
        }
        value = measured.get(name)
        if value is None:
            gate.update(status=SKIP, reason=skipped.get(name, "run not measured"))
        else:
            frac = value / anchor
            gate.update(value_img_s=round(value, 1), fraction=round(frac, 4))
            if min_frac is not None and frac < float(min_frac):
                gate.update(status=FAIL, reason=f"{frac:.1%} of anchor < {float(min_frac):.0%}")
            elif frac < warn_frac:
                gate.update(status="warn", reason=f"{frac:.1%} of anchor < {warn_frac:.0%}")
            else:
                gate.update(status=PASS, reason=f"{frac:.1%} of anchor")
        gates.append(gate)
    return gates


def judge_overhead(
    applied: dict[str, Any], overhead: float | None, why: str, detail: str = ""
) -> dict[str, Any]:
    """The telemetry-overhead gate (fraction of step time); `detail` says what the value is made of."""
    limit = float(applied.get("telemetry_overhead_max", 0.01))
    gate: dict[str, Any] = {"name": "telemetry_overhead", "max": limit}
    more = f" ({detail})" if detail else ""
    if overhead is None:
        gate.update(status=SKIP, reason=why or "not measured")
    elif overhead >= limit:
        gate.update(status=FAIL, value=round(overhead, 5), reason=f"{overhead:.2%} >= {limit:.0%}{more}")
    else:
        gate.update(status=PASS, value=round(overhead, 5), reason=f"{overhead:.2%} < {limit:.0%}{more}")
    return gate
