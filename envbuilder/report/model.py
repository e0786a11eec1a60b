"""What a report shows of a certificate: `build_report` turns the certificate into a Report (pure,
never raises on a malformed field); terminal.py, html.py and compare.py only format it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from envbuilder.certify.certificate import Certificate, verify_certificate
from envbuilder.certify.kernels import inventory_of
from envbuilder.certify.record import StackRecord, StepRecord
from envbuilder.errors import MatrixError
from envbuilder.matrix.ceilings import Ceiling, ceiling_for, shipped_ceilings
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
    # the recorded step times over the run (the harness's step_series): (seconds into the timed
    # steps, mean ms of the steps of that point); empty when the certificate kept none
    series: tuple[tuple[float, float], ...] = ()
    series_per_point: int = 1


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
    # the kernel inventory: (library, owner, SASS, PTX with ISA) per CUDA library with device code
    kernels: tuple[tuple[str, str, str, str], ...] = ()
    step_counts: str = ""  # "17 steps: 15 pass, 2 skip": what the steps table holds
    # which GPU the telemetry is of, where the host had several ("GPU 0 of 2"); "" with one GPU
    telemetry_gpu: str = ""
    # ResNet-50 against its physical ceiling (matrices/ceilings.yaml): what the figure is, and per
    # passing tuned ResNet-50 run (step, images/s, share of the ceiling)
    ceiling: str = ""
    ceiling_runs: tuple[tuple[str, float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON (without the telemetry series: those stay in the certificate)."""
        doc = asdict(self)
        doc.pop("telemetry")
        doc["telemetry_available"] = self.telemetry is not None
        for key in ("image", "stack", "host"):
            doc[key] = dict(doc[key])
        return doc


KERNEL_HEADERS = ("LIBRARY", "OWNER", "SASS (sm)", "PTX (compute, ISA)")


def _m(d: Any, *keys: str) -> Any:
    for k in keys:
        d = d.get(k) if isinstance(d, Mapping) else None
    return d


def _step_row(s: StepRecord) -> StepRow:
    return StepRow(
        name=s.name,
        status=s.status,
        reason=s.reason,
        seconds=s.seconds or 0.0,
        images_per_s=as_number(s.metric("images_per_s")),
        step_ms=as_number(s.metric("step_time", "mean_ms")),
        p95_ms=as_number(s.metric("step_time", "p95_ms")),
        # torch reports its caching allocator's reserved peak; JAX and TensorFlow their allocator's
        peak_vram_mib=as_number(s.metric("memory", "peak_reserved_mib"))
        or as_number(s.metric("memory", "peak_allocated_mib")),
        temp_max_c=as_number(s.metric("telemetry", "temp_c", "max")),
        val_accuracy=as_number(s.metric("val_accuracy")),
        warnings=s.warnings,
        series=_series(s.metric("step_series", "t_s"), s.metric("step_series", "mean_ms")),
        series_per_point=int(as_number(s.metric("step_series", "per_point")) or 1),
    )


def _series(ts: Any, ms: Any) -> tuple[tuple[float, float], ...]:
    """The (t, ms) points of a step_series; () for anything malformed (a report never raises)."""
    if not isinstance(ts, list) or not isinstance(ms, list) or len(ts) != len(ms):
        return ()
    points = [(as_number(t), as_number(m)) for t, m in zip(ts, ms, strict=True)]
    return tuple((t, m) for t, m in points if t is not None and m is not None)


def _comparison(steps: Sequence[StepRecord], rows: Sequence[StepRow]) -> tuple[ComparisonRow, ...]:
    by_name = {r.name: r for r in rows}
    ramp = next((s for s in steps if s.name == "batch_ramp"), None)
    largest = ramp.metric("largest_batch") if ramp else None
    ramp_precision = ramp.metric("precision") if ramp else None

    def training(precisions: tuple[str, ...], cpu: bool) -> StepRecord | None:
        found = [
            s
            for s in steps
            if s.name.startswith("train_")
            and s.name.startswith("train_cpu") == cpu
            and s.metric("config", "precision") in precisions
        ]
        return min(found, key=lambda s: s.metric("config", "batch") or 0, default=None)

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
        r = by_name[s.name]
        precision = s.metric("config", "precision")
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
                note=f"batch {s.metric('config', 'batch')}" + ("" if r.status == "pass" else f", {r.status}"),
            )
        )
    return tuple(out) + _tuned(rows)


TUNED = (("rn18", "GPU tuned ResNet-18"), ("rn50", "GPU tuned ResNet-50"))


def _tuned(rows: Sequence[StepRow]) -> tuple[ComparisonRow, ...]:
    """Per model, the fastest tuned run that passed, whatever its framework calls it (torch
    tuned_rn50_eager / _compiled, JAX tuned_rn50_jit, TensorFlow tuned_rn50_xla): the row a
    comparison of two frameworks' certificates pairs."""
    out = []
    for short, label in TUNED:
        runs = [r for r in rows if r.name.startswith(f"tuned_{short}_") and r.status == "pass"]
        best = max(runs, key=lambda r: r.images_per_s or 0.0, default=None)
        if best is None or best.images_per_s is None:
            out.append(ComparisonRow(label=label, step=None, note="not run in this certification"))
            continue
        others = [r.name for r in runs if r is not best]
        out.append(
            ComparisonRow(
                label=label,
                step=best.name,
                step_ms=best.step_ms,
                p95_ms=best.p95_ms,
                images_per_s=best.images_per_s,
                peak_vram_mib=best.peak_vram_mib,
                temp_max_c=best.temp_max_c,
                val_accuracy=best.val_accuracy,
                note=best.name + (f" (fastest of {len(runs)})" if others else ""),
            )
        )
    return tuple(out)


def _stack_rows(stack: StackRecord | None, certified_for: str | None) -> tuple[tuple[str, str], ...]:
    """The image's stack (its labels); `certified_for` is the framework the harness certified,
    shown where the image carries no stack label (an image envbuilder did not build)."""
    st = stack or StackRecord()
    framework = f"{st.framework} {st.version or ''} ({st.variant or DASH})" if st.framework else DASH
    if not st.framework and certified_for:
        framework = f"{certified_for} (certified for; the image has no stack label)"
    return (
        ("stack", st.id or DASH),
        ("framework", framework),
        ("cuda / cudnn", f"{st.cuda or DASH} / {st.cudnn or DASH}"),
        ("python", st.python or DASH),
        ("base image", f"{st.base_image or DASH} ({st.strategy or DASH})"),
        ("min driver", st.min_driver or DASH),
        ("archs", f"sass {' '.join(st.sass) or DASH}; ptx {' '.join(st.ptx) or DASH}"),
    )


def _ceiling(
    rows: Sequence[StepRow], gpu: str | None, ceilings: Sequence[Ceiling]
) -> tuple[str, tuple[tuple[str, float, float], ...]]:
    """The tuned ResNet-50 runs that passed as shares of the GPU's MLPerf per-GPU figure: the line
    naming the figure and its source, and (step, images/s, share) per run; ("", ()) without a run;
    a line saying so where the GPU has no figure on file."""
    runs = [r for r in rows if r.name.startswith("tuned_rn50_") and r.status == "pass" and r.images_per_s]
    if not runs or not gpu:
        return "", ()
    c = ceiling_for(gpu, ceilings)
    if c is None:
        return f"no ResNet-50 ceiling on file for {gpu} (matrices/ceilings.yaml)", ()
    line = (
        f"{c.benchmark}, per GPU on {c.model}: {c.images_per_s:,.0f} img/s "
        f"(source: {c.source}; checked: {c.checked})"
    )
    return line, tuple(
        (r.name, float(r.images_per_s or 0), float(r.images_per_s or 0) / c.images_per_s) for r in runs
    )


def build_report(cert: Certificate, ceilings: Sequence[Ceiling] | None = None) -> Report:
    """The Report of a certificate (pure but for reading the shipped matrices/ceilings.yaml once,
    when `ceilings` is not given). A malformed field shows as '-', never raises."""
    harness, image, host = cert.harness, cert.image, cert.host
    if ceilings is None:
        try:
            ceilings = shipped_ceilings()
        except MatrixError:  # a report of a certificate needs no matrix: shown without the share
            ceilings = ()
    steps = cert.steps
    rows = tuple(_step_row(s) for s in steps)
    telemetry = _m(harness, "telemetry")
    series = _m(telemetry, "series")
    has_series = isinstance(series, Mapping) and bool(series.get("t"))
    # A GPU-less run has nothing to sample, whatever the harness found missing (pynvml, say).
    reason = "no GPU" if not host.gpus else (_m(telemetry, "reason") or "no GPU took part")
    why = "" if has_series else f"{NO_TELEMETRY} ({reason})"
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
    notes = harness.get("notes")
    ceiling = _ceiling(rows, host.gpus[0].name if host.gpus else None, ceilings)
    return Report(
        id=cert.id,
        verdict=cert.verdict or "?",
        verdict_reason=cert.verdict_reason,
        issued_at=cert.issued_at or "?",
        integrity=tuple(verify_certificate(cert)),
        fixture=str(harness.get("_fixture") or cert.run.get("_fixture") or "") or None,
        image=(("ref", image.ref or DASH), ("id", image.id or DASH)),
        stack=_stack_rows(image.stack, str(_m(harness, "options", "framework") or "") or None),
        host=(
            ("gpus", ", ".join(f"{g.name} (cc {g.cc})" for g in host.gpus) or "no GPU"),
            ("driver", f"{host.driver or 'none'} (CUDA {host.cuda_driver or DASH})"),
            ("gpu access", host.gpu_access or DASH),
            ("fingerprint", (host.fingerprint or DASH)[:19]),
        ),
        steps=rows,
        comparison=_comparison(steps, rows),
        notes=tuple(str(n) for n in notes) if isinstance(notes, list) else (),
        telemetry=telemetry if has_series else None,
        telemetry_why=why,
        windows=windows,
        multi_gpu=multi_gpu_view(harness),
        kernels=_kernel_rows(harness),
        step_counts=step_counts(rows),
        telemetry_gpu=f"GPU 0 of {len(host.gpus)}" if len(host.gpus) > 1 else "",
        ceiling=ceiling[0],
        ceiling_runs=ceiling[1],
    )


def step_counts(rows: Sequence[StepRow]) -> str:
    """How many steps the table shows and how each ended, counted as the verdict counts its
    checks (the host record is a record, not a check): "17 steps: the host record, 14 pass, 2 skip"."""
    if not rows:
        return ""
    host = [r for r in rows if r.name == "host"]
    counts = Counter(r.status for r in rows if r.name != "host")
    order = ["pass", "fail", "skip", *sorted(set(counts) - {"pass", "fail", "skip"})]
    said = [f"{counts[s]} {s}" for s in order if counts[s]]
    if host:
        said.insert(
            0, "the host record" if host[0].status == "pass" else f"the host record ({host[0].status})"
        )
    return f"{len(rows)} steps: {', '.join(said)}"


def _kernel_rows(harness: Mapping[str, Any]) -> tuple[tuple[str, str, str, str], ...]:
    """The harness's kernel inventory as table rows (none when the harness recorded none)."""
    inv = inventory_of(harness) or {}
    rows = []
    for lib in inv.get("libraries") or ():
        if not isinstance(lib, Mapping):
            continue
        sass = " ".join(str(x).removeprefix("sm_") for x in lib.get("sass") or ()) or DASH
        ptx = " ".join(
            f"{str(p.get('arch')).removeprefix('compute_')} (ISA {p.get('isa') or '?'})"
            for p in lib.get("ptx") or ()
            if isinstance(p, Mapping)
        )
        rows.append((str(lib.get("library")), str(lib.get("owner") or DASH), sass, ptx or DASH))
    return tuple(rows)
