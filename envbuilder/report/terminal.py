"""A report as plain text for the terminal: summary, per-step table, the field guide's comparison
(CPU vs GPU FP32 vs mixed precision) and the multi-GPU part."""

from __future__ import annotations

from envbuilder.report.model import DASH, KERNEL_HEADERS, ComparisonRow, Report
from envbuilder.report.multigpu import RANK_HEADERS, TABLE_HEADERS, rank_rows, table_rows
from envbuilder.tables import printable, table


def fmt(v: float | int | None, spec: str = ",.1f", suffix: str = "") -> str:
    return DASH if v is None else f"{v:{spec}}{suffix}"


def comparison_cells(c: ComparisonRow) -> list[str]:
    ms = DASH if c.step_ms is None else f"{c.step_ms:.1f} ({fmt(c.p95_ms)})"
    return [
        c.label,
        ms,
        fmt(c.images_per_s, ",.0f"),
        fmt(c.peak_vram_mib, ",.0f", " MiB"),
        fmt(c.temp_max_c, ".0f", " C"),
        fmt(c.val_accuracy, ".3f"),
        fmt(c.largest_batch, "d"),
        c.note,
    ]


COMPARISON_HEADERS = (
    "RUN",
    "STEP MS (P95)",
    "IMG/S",
    "PEAK VRAM",
    "TEMP MAX",
    "VAL ACC",
    "LARGEST BATCH",
    "NOTE",
)


def format_terminal(r: Report) -> str:
    """The report as plain text: summary, per-step table, the field guide's comparison."""
    out = [f"certificate {r.id[:12]}  {r.verdict.upper()}  ({r.verdict_reason})"]
    if r.fixture:
        out.append(f"  FIXTURE: {r.fixture}")
    integrity = "intact" if not r.integrity else "FAILED: " + "; ".join(r.integrity)
    out += [f"  {k:<14}{v}" for k, v in (*r.image, *r.stack, *r.host)]
    out += [f"  {'issued':<14}{r.issued_at}", f"  {'integrity':<14}{integrity}", "", "steps"]
    rows = [
        [
            s.name,
            s.status,
            f"{s.seconds:.1f}",
            fmt(s.images_per_s, ",.0f"),
            fmt(s.step_ms),
            fmt(s.peak_vram_mib, ",.0f"),
            fmt(s.val_accuracy, ".3f"),
            s.reason[:60],
        ]
        for s in r.steps
    ]
    out += table(("STEP", "STATUS", "SECONDS", "IMG/S", "STEP MS", "VRAM MIB", "VAL ACC", "REASON"), rows)
    out += [f"  warning ({s.name}): {w}" for s in r.steps for w in s.warnings]  # as the HTML has them
    out += ["", "comparison (field guide: CPU vs GPU FP32 vs mixed precision; the fastest tuned runs)"]
    out += table(COMPARISON_HEADERS, [comparison_cells(c) for c in r.comparison])
    if r.ceiling:
        out += ["", f"ResNet-50 against its ceiling: {r.ceiling}"]
        out += [f"  {name:<22}{ips:>9,.0f} img/s  {share:6.1%}" for name, ips, share in r.ceiling_runs]
    if r.multi_gpu is not None:
        mg = r.multi_gpu
        out += ["", f"multi-GPU: {mg.status}" + (f" ({mg.reason})" if mg.reason else "")]
        out += [f"  {k:<14}{v}" for k, v in mg.summary]
        out += table(TABLE_HEADERS, table_rows(mg)) if mg.sweep else []
        out += table(RANK_HEADERS, rank_rows(mg)) if mg.ranks else []
        out += [f"  gate {name}: {status} ({reason})" for name, status, reason in mg.gates]
    if r.kernels:
        out += ["", "kernel inventory (what each CUDA library carries, read from its fatbins)"]
        out += table(KERNEL_HEADERS, [list(k) for k in r.kernels])
    out += ["", f"telemetry: {r.telemetry_why or 'GPU time series kept (see the HTML report)'}"]
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(printable(line) for line in out) + "\n"  # one line per item, whatever it holds
