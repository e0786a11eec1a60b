"""What a report shows of a certificate: `build_report` turns the certificate into a Report (pure,
never raises on a malformed field); terminal.py, html.py and compare.py only format it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from envbuilder.certify.certificate import verify_certificate
from envbuilder.report.charts import as_number
from envbuilder.report.multigpu import MultiGpuView, multi_gpu_view

NO_TELEMETRY = "no GPU telemetry"
DASH = "-"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRow:
    name: str
    status: str
    reason: str
    seconds: float
    images_per_s: float | None = None
    step_ms: float | None = None
    p95_ms: float | None = None
    peak_vram_mib: float | None = None
    temp_max_c: float | None = None
    val_accuracy: float | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ComparisonRow:
    """One row of the field guide's table: CPU, GPU FP32, GPU mixed precision."""

    label: str
    step: str | None  # the harness step it comes from; None: not run in this certification
    step_ms: float | None = None
    p95_ms: float | None = None
    images_per_s: float | None = None
    peak_vram_mib: float | None = None
    temp_max_c: float | None = None
    val_accuracy: float | None = None
    largest_batch: int | None = None
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    id: str
    verdict: str
    verdict_reason: str
    issued_at: str
    integrity: tuple[str, ...]  # verify_certificate's problems; empty: intact
    fixture: str | None  # "_fixture" label of test data
    image: tuple[tuple[str, str], ...]
    stack: tuple[tuple[str, str], ...]
    host: tuple[tuple[str, str], ...]
    steps: tuple[StepRow, ...]
    comparison: tuple[ComparisonRow, ...]
    notes: tuple[str, ...] = ()
    telemetry: Mapping[str, Any] | None = None  # the harness's telemetry with series, or None
    telemetry_why: str = ""
    windows: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    multi_gpu: MultiGpuView | None = None  # the harness's multi_gpu section (None: none recorded)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON (without the telemetry series: those stay in the certificate)."""
        doc = asdict(self)
        doc.pop("telemetry")
        doc["telemetry_available"] = self.telemetry is not None
        for key in ("image", "stack", "host"):
            doc[key] = dict(doc[key])
        return doc


def _m(d: Any, *keys: str) -> Any:
    for k in keys:
        d = d.get(k) if isinstance(d, Mapping) else None
    return d


def _step_row(s: Mapping[str, Any]) -> StepRow:
    m = s.get("metrics") if isinstance(s.get("metrics"), Mapping) else {}
    return StepRow(
        name=str(s.get("name", "?")),
        status=str(s.get("status", "?")),
        reason=str(s.get("reason") or ""),
        seconds=as_number(s.get("seconds")) or 0.0,
        images_per_s=as_number(_m(m, "images_per_s")),
        step_ms=as_number(_m(m, "step_time", "mean_ms")),
        p95_ms=as_number(_m(m, "step_time", "p95_ms")),
        peak_vram_mib=as_number(_m(m, "memory", "peak_reserved_mib")),
        temp_max_c=as_number(_m(m, "telemetry", "temp_c", "max")),
        val_accuracy=as_number(_m(m, "val_accuracy")),
        warnings=tuple(str(w) for w in s.get("warnings") or () if isinstance(w, str)),
    )


def _comparison(steps: Sequence[Mapping[str, Any]], rows: Sequence[StepRow]) -> tuple[ComparisonRow, ...]:
    by_name = {r.name: r for r in rows}
    ramp = next((s for s in steps if s.get("name") == "batch_ramp"), None)
    largest = _m(ramp, "metrics", "largest_batch")
    ramp_precision = _m(ramp, "metrics", "precision")

    def training(precisions: tuple[str, ...], cpu: bool) -> Mapping[str, Any] | None:
        found = [
            s
            for s in steps
            if str(s.get("name", "")).startswith("train_")
            and str(s.get("name", "")).startswith("train_cpu") == cpu
            and _m(s, "metrics", "config", "precision") in precisions
        ]
        return min(found, key=lambda s: _m(s, "metrics", "config", "batch") or 0, default=None)

    out = []
    picks = [
        ("CPU", training(("fp32",), cpu=True), ()),
        ("GPU FP32", training(("fp32",), cpu=False), ("fp32",)),
        ("GPU mixed precision", training(("bf16", "fp16"), cpu=False), ("bf16", "fp16")),
    ]
    for label, s, ramp_for in picks:
        if s is None:
            out.append(ComparisonRow(label=label, step=None, note="not run in this certification"))
            continue
        r = by_name[str(s.get("name"))]
        precision = _m(s, "metrics", "config", "precision")
        ramp_ok = ramp_precision in ramp_for and isinstance(largest, int)
        out.append(
            ComparisonRow(
                label=f"{label} ({precision})" if label.endswith("precision") else label,
                step=r.name,
                step_ms=r.step_ms,
                p95_ms=r.p95_ms,
                images_per_s=r.images_per_s,
                peak_vram_mib=r.peak_vram_mib,
                temp_max_c=r.temp_max_c,
                val_accuracy=r.val_accuracy,
                largest_batch=largest if ramp_ok else None,
                note=f"batch {_m(s, 'metrics', 'config', 'batch')}"
                + ("" if r.status == "pass" else f", {r.status}"),
            )
        )
    return tuple(out)


def _stack_rows(stack: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    fw = _m(stack, "framework") or {}
    archs = _m(stack, "archs") or {}
    return (
        ("stack", str(stack.get("id") or DASH)),
        ("framework", f"{fw.get('name', DASH)} {fw.get('version', '')} ({fw.get('variant', DASH)})"),
        ("cuda / cudnn", f"{stack.get('cuda') or DASH} / {stack.get('cudnn') or DASH}"),
        ("python", str(stack.get("python") or DASH)),
        ("base image", f"{stack.get('base_image') or DASH} ({stack.get('strategy') or DASH})"),
        ("min driver", str(stack.get("min_driver") or DASH)),
        (
            "archs",
            f"sass {' '.join(map(str, archs.get('sass') or ())) or DASH}; "
            f"ptx {' '.join(map(str, archs.get('ptx') or ())) or DASH}",
        ),
    )


def build_report(cert: Mapping[str, Any]) -> Report:
    """The Report of a certificate document (pure). A malformed field shows as '-', never raises."""
    harness = _m(cert, "harness") or {}
    image, host = _m(cert, "image") or {}, _m(cert, "host") or {}
    raw_steps = [s for s in harness.get("steps") or () if isinstance(s, Mapping)]
    rows = tuple(_step_row(s) for s in raw_steps)
    gpus = [g for g in host.get("gpus") or () if isinstance(g, Mapping)]
    telemetry = _m(harness, "telemetry")
    series = _m(telemetry, "series")
    has_series = isinstance(series, Mapping) and bool(series.get("t"))
    why = "" if has_series else f"{NO_TELEMETRY} ({_m(telemetry, 'reason') or 'no GPU took part'})"
    windows = {
        str(k): (float(v[0]), float(v[1]))
        for k, v in (_m(telemetry, "windows") or {}).items()
        if isinstance(v, list | tuple) and len(v) == 2 and all(as_number(x) is not None for x in v)
    }
    if not windows:  # no telemetry: lay the steps end to end on the harness's clock
        t = 0.0
        for r in rows:
            windows[r.name] = (t, t + r.seconds)
            t += r.seconds
    return Report(
        id=str(cert.get("content_hash", "")).removeprefix("sha256:"),
        verdict=str(cert.get("verdict", "?")),
        verdict_reason=str(cert.get("verdict_reason") or ""),
        issued_at=str(cert.get("issued_at", "?")),
        integrity=tuple(verify_certificate(cert)),
        fixture=str(_m(harness, "_fixture") or _m(cert, "run", "_fixture") or "") or None,
        image=(("ref", str(image.get("ref") or DASH)), ("id", str(image.get("id") or DASH))),
        stack=_stack_rows(_m(image, "stack") or {}),
        host=(
            ("gpus", ", ".join(f"{g.get('name')} (cc {g.get('cc')})" for g in gpus) or "no GPU"),
            ("driver", f"{host.get('driver') or 'none'} (CUDA {host.get('cuda_driver') or DASH})"),
            ("gpu access", str(host.get("gpu_access") or DASH)),
            ("fingerprint", str(host.get("fingerprint") or DASH)[:19]),
        ),
        steps=rows,
        comparison=_comparison(raw_steps, rows),
        notes=tuple(str(n) for n in harness.get("notes") or ()),
        telemetry=telemetry if has_series else None,
        telemetry_why=why,
        windows=windows,
        multi_gpu=multi_gpu_view(harness),
    )
