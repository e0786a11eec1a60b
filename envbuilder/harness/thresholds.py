"""Thresholds: load the data the host hands in (--thresholds), pick the GPU's entry, judge runs.

The numbers live in matrices/thresholds.yaml; BUILTIN_DEFAULTS mirrors its `defaults` (a unit
test keeps the two equal) so the payload still gates correctness when run with no file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .result import FAIL, PASS, SKIP

BUILTIN_DEFAULTS: dict[str, Any] = {
    "accuracy_margin_over_chance": 0.25,
    "loss_drop_min": 0.2,
    "telemetry_overhead_max": 0.01,
    "throughput_warn_fraction": 0.90,
}


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
    if doc is None:
        return applied
    applied["source"] = str(doc.get("source_path", "thresholds file"))
    applied.update({k: v for k, v in (doc.get("defaults") or {}).items()})
    for entry in doc.get("gpus") or []:
        if gpu_name and gpu_name in (entry.get("nvml_names") or []):
            applied["gpu_entry"] = entry.get("name", gpu_name)
            applied["throughput"] = dict(entry.get("throughput") or {})
            break
    return applied


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


def judge_overhead(applied: dict[str, Any], overhead: float | None, why: str) -> dict[str, Any]:
    """The telemetry-overhead gate (fraction of step time)."""
    limit = float(applied.get("telemetry_overhead_max", 0.01))
    gate: dict[str, Any] = {"name": "telemetry_overhead", "max": limit}
    if overhead is None:
        gate.update(status=SKIP, reason=why or "not measured")
    elif overhead >= limit:
        gate.update(status=FAIL, value=round(overhead, 5), reason=f"{overhead:.2%} >= {limit:.0%}")
    else:
        gate.update(status=PASS, value=round(overhead, 5), reason=f"{overhead:.2%} < {limit:.0%}")
    return gate
