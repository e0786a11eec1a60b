"""Inline SVG charts for the HTML report, drawn in Python: no JavaScript, no fonts or files to
fetch, so a report opens anywhere offline. Every text that reaches the SVG is escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from envbuilder.tables import printable

PALETTE = ("#1f6feb", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c", "#0b7285", "#e67700")
WIDTH, HEIGHT = 1100, 230
PAD_L, PAD_R, PAD_T, PAD_B = 100, 16, 28, 34  # wide left: clock-event names fit
SEG_KEYS_PER_ROW = 5


def _text(value: str) -> str:
    """A text for the SVG: printable (tables.printable: a control character or a bidi override from
    a stored step name arrives as its escape, so it cannot reorder or hide what is around it), then
    escaped for XML."""
    return escape(printable(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class Line:
    label: str
    xs: Sequence[float]
    ys: Sequence[float | None]  # None: a gap (the sample had no value)
    color: str = PALETTE[0]
    dashed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """A horizontal bar from x0 to x1 at y: one run's mean step time over its time window."""

    label: str
    x0: float
    x1: float
    y: float
    color: str = PALETTE[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    """A shaded time window in the background (a harness step), labelled when wide enough."""

    label: str
    x0: float
    x1: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    title: str
    y_label: str
    lines: Sequence[Line] = ()
    segments: Sequence[Segment] = ()
    bands: Sequence[Band] = ()
    x_label: str = "seconds since the harness started"
    y_min: float | None = 0.0
    y_max: float | None = None
    x_range: tuple[float, float] | None = None  # fixed time axis, so stacked charts line up
    events: Sequence[tuple[str, Sequence[float], Sequence[bool]]] = field(default=())  # name, xs, on
    key_below: bool = False  # the lines' legend as a key under the plot (many lines), not on top
    # the x axis's ticks: (where, what it says); None: plain numbers at _nice_ticks
    x_ticks: Sequence[tuple[float, str]] | None = None

    def keys(self) -> list[tuple[str, str]]:
        """(label, color) of what the key under the plot names: the segments, and the lines
        when `key_below`."""
        lines = [(ln.label, ln.color) for ln in self.lines] if self.key_below else []
        return [(sg.label, sg.color) for sg in self.segments] + lines


BAND_CHAR_PX = 5.0  # a band label's character at 9 px


def band_label(label: str, width_px: float) -> str | None:
    """What a shaded step window says at its top: the step's name, cut with an ellipsis to the
    band's width; None where not even 3 characters fit (its <title> still names it)."""
    fits = int((width_px - 3) // BAND_CHAR_PX)
    if fits < 3:
        return None
    return label if len(label) <= fits else label[: fits - 1] + "\u2026"


def size_label(n_bytes: float) -> str:
    """A byte count as a binary size: 32 B, 1 KiB, 512 MiB, 8 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n_bytes < 1024 or unit == "GiB":
            return f"{n_bytes:g} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")


def as_number(v: object) -> float | None:
    """A JSON value as a float to plot or print; None for anything else (bools included)."""
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.3g}"


def _path(points: list[tuple[float, float] | None]) -> str:
    out, pen = [], "M"
    for p in points:
        if p is None:
            pen = "M"
            continue
        out.append(f"{pen}{p[0]:.1f},{p[1]:.1f}")
        pen = "L"
    return " ".join(out)


def render_chart(chart: Chart) -> str:
    """One chart as an <svg> element (role="img", with a <title> for screen readers)."""
    strip_h = 14 * len(chart.events)
    key_rows = math.ceil(len(chart.keys()) / SEG_KEYS_PER_ROW)
    height = HEIGHT + strip_h + (6 if strip_h else 0) + 16 * key_rows
    plot_b = HEIGHT - PAD_B
    xs = [x for ln in chart.lines for x in ln.xs]
    xs += [x for s in chart.segments for x in (s.x0, s.x1)] + [x for b in chart.bands for x in (b.x0, b.x1)]
    xs += [x for _, exs, _ in chart.events for x in exs]
    ys = [y for ln in chart.lines for y in ln.ys if y is not None] + [s.y for s in chart.segments]
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}"><title>{_text(chart.title)}</title>',
        f'<text x="{PAD_L}" y="17" class="ct">{_text(chart.title)}</text>',
    ]
    if not xs or (not ys and not chart.events):
        parts.append(
            f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" class="empty" text-anchor="middle">no data</text>'
        )
        return "".join(parts) + "</svg>"
    x0, x1 = chart.x_range or (min(xs), max(xs))
    x1 = x1 if x1 > x0 else x0 + 1.0
    y0 = chart.y_min if chart.y_min is not None else min(ys, default=0.0)
    y1 = chart.y_max if chart.y_max is not None else max(ys, default=1.0) * 1.08
    y1 = y1 if y1 > y0 else y0 + 1.0

    def sx(x: float) -> float:
        return PAD_L + (x - x0) / (x1 - x0) * (WIDTH - PAD_L - PAD_R)

    def sy(y: float) -> float:
        return plot_b - (min(max(y, y0), y1) - y0) / (y1 - y0) * (plot_b - PAD_T)

    for i, b in enumerate(chart.bands):
        w = max(0.5, sx(b.x1) - sx(b.x0))
        parts.append(
            f'<rect class="band{i % 2}" x="{sx(b.x0):.1f}" y="{PAD_T}" width="{w:.1f}" '
            f'height="{plot_b - PAD_T}"><title>{_text(b.label)}</title></rect>'
        )
        label = band_label(b.label, w)
        if label:  # alternate rows, so that neighbouring labels do not run into each other
            y = PAD_T + 9 + 9 * (i % 2)
            parts.append(f'<text class="bandlabel" x="{sx(b.x0) + 2:.1f}" y="{y}">{_text(label)}</text>')
    for t in _nice_ticks(y0, y1):
        parts.append(
            f'<line class="grid" x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{sy(t):.1f}" y2="{sy(t):.1f}"/>'
            f'<text class="tick" x="{PAD_L - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>'
        )
    x_ticks = chart.x_ticks if chart.x_ticks is not None else [(t, _fmt(t)) for t in _nice_ticks(x0, x1, 8)]
    for t, said in x_ticks:
        parts.append(
            f'<text class="tick" x="{sx(t):.1f}" y="{plot_b + 15}" text-anchor="middle">{_text(said)}</text>'
        )
    parts.append(
        f'<text class="axis" x="{WIDTH - PAD_R}" y="{plot_b + 29}" text-anchor="end">'
        f"{_text(chart.x_label)}</text>"
    )
    parts.append(
        f'<text class="axis" transform="translate(40 {(PAD_T + plot_b) / 2:.0f}) rotate(-90)" '
        f'text-anchor="middle">{_text(chart.y_label)}</text>'
    )
    parts.append(
        f'<line class="frame" x1="{PAD_L}" x2="{PAD_L}" y1="{PAD_T}" y2="{plot_b}"/>'
        f'<line class="frame" x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{plot_b}" y2="{plot_b}"/>'
    )
    for ln in chart.lines:
        pts = [None if y is None else (sx(x), sy(y)) for x, y in zip(ln.xs, ln.ys, strict=False)]
        dash = ' stroke-dasharray="5 4"' if ln.dashed else ""
        parts.append(
            f'<path class="line" d="{_path(pts)}" stroke="{ln.color}"{dash}>'
            f"<title>{_text(ln.label)}</title></path>"
        )
    for s in chart.segments:
        parts.append(
            f'<line class="seg" x1="{sx(s.x0):.1f}" x2="{sx(s.x1):.1f}" y1="{sy(s.y):.1f}" '
            f'y2="{sy(s.y):.1f}" stroke="{s.color}"><title>{_text(s.label)}</title></line>'
        )
        if sx(s.x1) - sx(s.x0) >= 5.5 * len(s.label):  # a label only where it fits; <title> always
            parts.append(
                f'<text class="seglabel" x="{sx(s.x0):.1f}" y="{sy(s.y) - 5:.1f}">{_text(s.label)}</text>'
            )
    parts.extend(_legend(chart))
    parts.extend(_event_rows(chart, sx, x0, x1, HEIGHT + 2))
    parts.extend(_segment_key(chart, HEIGHT + strip_h + (6 if strip_h else 0)))
    return "".join(parts) + "</svg>"


def _legend(chart: Chart) -> list[str]:
    out, x = [], WIDTH - PAD_R
    for ln in reversed(() if chart.key_below else chart.lines):
        label = escape(ln.label)
        x -= 14 + 7 * len(ln.label)
        out.append(
            f'<rect x="{x}" y="9" width="10" height="10" fill="{ln.color}"/>'
            f'<text class="legend" x="{x + 14}" y="18">{label}</text>'
        )
    return out


def _event_rows(chart: Chart, scale: Callable[[float], float], x0: float, x1: float, top: float) -> list[str]:
    """One row per clock-event reason: a mark wherever it was active."""
    out: list[str] = []
    for row, (name, exs, on) in enumerate(chart.events):
        y = top + row * 14
        out.append(
            f'<text class="tick" x="{PAD_L - 6}" y="{y + 10}" text-anchor="end">{_text(name)}</text>'
            f'<rect class="evbg" x="{PAD_L}" y="{y}" width="{WIDTH - PAD_L - PAD_R}" height="11"/>'
        )
        step = (x1 - x0) / max(1, len(exs)) if exs else 0.0
        for i, (x, active) in enumerate(zip(exs, on, strict=False)):
            if active:
                nxt = exs[i + 1] if i + 1 < len(exs) else x + step
                w = max(1.0, scale(nxt) - scale(x))
                out.append(f'<rect class="ev" x="{scale(x):.1f}" y="{y}" width="{w:.1f}" height="11"/>')
    return out


def _segment_key(chart: Chart, top: float) -> list[str]:
    """A key under the plot naming every segment (inline labels only appear where they fit),
    and every line of a `key_below` chart."""
    out: list[str] = []
    col_w = (WIDTH - PAD_L - PAD_R) / SEG_KEYS_PER_ROW
    for i, (label, color) in enumerate(chart.keys()):
        x = PAD_L + (i % SEG_KEYS_PER_ROW) * col_w
        y = top + 4 + (i // SEG_KEYS_PER_ROW) * 16
        out.append(
            f'<rect x="{x:.1f}" y="{y}" width="10" height="10" fill="{color}"/>'
            f'<text class="legend" x="{x + 14:.1f}" y="{y + 9}">{_text(label)}</text>'
        )
    return out
