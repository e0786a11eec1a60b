"""`envbuilder report --compare A B`: two certificates side by side (two stacks on one GPU, or one
image on two hosts), every field paired and the differences marked, as text, JSON and HTML.

Text fields differ when they are not equal; measurements only when they are more than
TOLERANCE apart (run-to-run noise of a few percent is not a difference worth a highlight).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from markupsafe import Markup

from envbuilder import __version__
from envbuilder.report.charts import PALETTE, Chart, Line, Segment, render_chart
from envbuilder.report.html import jinja_env
from envbuilder.report.model import DASH, Report
from envbuilder.report.terminal import fmt
from envbuilder.tables import printable, table

TOLERANCE = 0.05  # relative difference below which two measurements count as the same


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRow:
    section: str
    field: str
    a: str
    b: str
    differs: bool
    delta: str = ""  # B relative to A for measurements: "+12.3%"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _text_row(section: str, name: str, a: str, b: str) -> DiffRow:
    return DiffRow(section=section, field=name, a=a, b=b, differs=a != b)


def _num_row(section: str, name: str, a: float | None, b: float | None, spec: str = ",.1f") -> DiffRow:
    delta, differs = "", (a is None) != (b is None)
    if a is not None and b is not None:
        scale = max(abs(a), abs(b))
        differs = scale > 0 and abs(a - b) / scale > TOLERANCE
        delta = f"{(b - a) / a:+.1%}" if a else ""
    return DiffRow(section=section, field=name, a=fmt(a, spec), b=fmt(b, spec), differs=differs, delta=delta)


def compare_reports(a: Report, b: Report) -> list[DiffRow]:
    """Every field of two reports paired (pure): summary, image, stack, host, each step's status
    and measurements, and the field guide's comparison rows."""
    rows = [
        _text_row("summary", "verdict", a.verdict, b.verdict),
        _text_row(
            "summary",
            "integrity",
            "intact" if not a.integrity else "FAILED",
            "intact" if not b.integrity else "FAILED",
        ),
        _text_row("summary", "issued", a.issued_at, b.issued_at),
    ]
    for section, pa, pb in (
        ("image", a.image, b.image),
        ("stack", a.stack, b.stack),
        ("host", a.host, b.host),
    ):
        da, db = dict(pa), dict(pb)
        rows += [_text_row(section, k, da.get(k, DASH), db.get(k, DASH)) for k in dict.fromkeys([*da, *db])]
    sa, sb = {s.name: s for s in a.steps}, {s.name: s for s in b.steps}
    for name in dict.fromkeys([*sa, *sb]):
        x, y = sa.get(name), sb.get(name)
        rows.append(
            _text_row(f"step {name}", "status", x.status if x else "absent", y.status if y else "absent")
        )
        if x is None or y is None:
            continue
        for label, va, vb, spec in (
            ("images/s", x.images_per_s, y.images_per_s, ",.0f"),
            ("step ms", x.step_ms, y.step_ms, ",.2f"),
            ("peak VRAM MiB", x.peak_vram_mib, y.peak_vram_mib, ",.0f"),
            ("temp max C", x.temp_max_c, y.temp_max_c, ".0f"),
            ("val acc", x.val_accuracy, y.val_accuracy, ".3f"),
        ):
            if va is not None or vb is not None:
                rows.append(_num_row(f"step {name}", label, va, vb, spec))
    for ca, cb in zip(a.comparison, b.comparison, strict=False):
        label = ca.label.split(" (")[0]
        if label.startswith("GPU tuned"):  # two frameworks' tuned runs have different step names
            rows.append(_text_row(f"guide {label}", "run", ca.step or DASH, cb.step or DASH))
            rows.append(_num_row(f"guide {label}", "images/s", ca.images_per_s, cb.images_per_s, ",.0f"))
            rows.append(
                _num_row(f"guide {label}", "peak VRAM MiB", ca.peak_vram_mib, cb.peak_vram_mib, ",.0f")
            )
            continue
        rows.append(
            _num_row(
                f"guide {label}",
                "largest batch",
                None if ca.largest_batch is None else float(ca.largest_batch),
                None if cb.largest_batch is None else float(cb.largest_batch),
                ",.0f",
            )
        )
    return rows


def format_compare(a: Report, b: Report, rows: list[DiffRow]) -> str:
    """Plain text: one line per field, differences marked with '*' in the first column."""
    head = [printable(f"A {a.id[:12]} {a.verdict}   vs   B {b.id[:12]} {b.verdict}")]
    cells = [["*" if r.differs else "", r.section, r.field, r.a, r.b, r.delta] for r in rows]
    n = sum(r.differs for r in rows)
    return (
        "\n".join(
            [
                *head,
                *table(("", "SECTION", "FIELD", "A", "B", "B VS A"), cells),
                f"{n} of {len(rows)} fields differ (*)",
            ]
        )
        + "\n"
    )


def compare_charts(a: Report, b: Report) -> list[str]:
    """Step times of both (A blue, B orange) and, where both or either recorded telemetry, the
    GPU series overlaid (A solid, B dashed)."""
    segs: list[Segment] = []
    for rep, color, tag in ((a, PALETTE[0], "A"), (b, PALETTE[1], "B")):
        for s in rep.steps:
            if s.step_ms is not None and s.name in rep.windows:
                x0, x1 = rep.windows[s.name]
                segs.append(Segment(label=f"{tag} {s.name}", x0=x0, x1=x1, y=s.step_ms, color=color))
    out = [
        render_chart(
            Chart(
                title="Step time per training run (mean): A blue, B orange",
                y_label="ms per step",
                segments=segs,
            )
        )
    ]
    series = [
        (tag, rep.telemetry["series"]) for tag, rep in (("A", a), ("B", b)) if rep.telemetry is not None
    ]
    if not series:
        return out
    for title, key, unit, top in (
        ("GPU memory used", "mem_used_mib", "MiB", None),
        ("GPU utilization", "util_gpu", "%", 100.0),
        ("Power draw", "power_w", "W", None),
        ("Temperature", "temp_c", "deg C", None),
    ):
        lines = [
            Line(
                label=f"{tag} {key}",
                xs=[float(t) for t in s.get("t") or ()],
                ys=[float(v) if isinstance(v, int | float) else None for v in s.get(key) or ()],
                color=PALETTE[0] if tag == "A" else PALETTE[1],
                dashed=tag == "B",
            )
            for tag, s in series
        ]
        out.append(render_chart(Chart(title=title, y_label=unit, lines=lines, y_max=top)))
    return out


def render_compare_html(a: Report, b: Report, rows: list[DiffRow]) -> str:
    """The side-by-side HTML page (autoescaped, self-contained)."""
    return (
        jinja_env()
        .get_template("report.html.j2")
        .render(
            mode="compare",
            a=a,
            b=b,
            diffs=rows,
            charts=[Markup(c) for c in compare_charts(a, b)],
            version=__version__,
        )
    )
