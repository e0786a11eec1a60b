"""The time-axis charts of a certificate's HTML report (html.py): step time per run from the
step windows, and GPU memory, utilization, power, temperature and clock events from the telemetry.
"""

from __future__ import annotations

from envbuilder.harness.telemetry import CLOCK_EVENT_REASONS
from envbuilder.report.charts import PALETTE, Band, Chart, Line, Segment, as_number, render_chart
from envbuilder.report.model import Report


def step_time_chart(r: Report) -> str | None:
    """The recorded step times over each training run, one line per run, on the seconds of its
    own timed steps; None when no step kept a series (certificates before step_series)."""
    runs = [x for x in r.steps if x.series]
    if not runs:
        return None
    per = max(x.series_per_point for x in runs)
    how = f"; a point is the mean of up to {per} consecutive steps" if per > 1 else ""
    lines = [
        Line(
            label=x.name,
            xs=[t for t, _ in x.series],
            ys=[m for _, m in x.series],
            color=PALETTE[i % len(PALETTE)],
        )
        for i, x in enumerate(runs)
    ]
    return render_chart(
        Chart(
            title=f"Step time over each training run (recorded per step{how})",
            y_label="ms per step",
            x_label="seconds into the run's timed steps",
            lines=lines,
            key_below=True,
        )
    )


def charts(r: Report) -> list[str]:
    """The report's SVG charts on one time axis: step time always (from the step windows); GPU
    memory, utilization, power, temperature and clock events when telemetry was recorded."""
    s = r.telemetry["series"] if r.telemetry is not None else {}
    t = [float(x) for x in s.get("t") or ()]
    spans = [x for w in r.windows.values() for x in w] + t
    rng = (min(spans), max(spans)) if spans else None
    bands = [Band(label=k, x0=a, x1=b) for k, (a, b) in r.windows.items()]
    timed = [(x, x.step_ms) for x in r.steps if x.step_ms is not None and x.name in r.windows]
    segs = [
        Segment(
            label=f"{x.name} {ms:.1f} ms",
            x0=r.windows[x.name][0],
            x1=r.windows[x.name][1],
            y=ms,
            color=PALETTE[i % len(PALETTE)],
        )
        for i, (x, ms) in enumerate(timed)
    ]
    out = [
        step_time_chart(r)
        or render_chart(
            Chart(
                title="Step time per training run (mean: this certificate kept no per-step times)",
                y_label="ms per step",
                segments=segs,
                bands=bands,
                x_range=rng,
            )
        )
    ]
    if r.telemetry is None:
        return out

    # With several GPUs the harness samples the first one: every line and title says which.
    of_gpu = f"{r.telemetry_gpu}: " if r.telemetry_gpu else ""

    def line(key: str, label: str, color: str = PALETTE[0]) -> Line:
        return Line(label=of_gpu + label, xs=t, ys=[as_number(v) for v in s.get(key) or ()], color=color)

    masks = [int(m) if as_number(m) is not None else 0 for m in s.get("reasons") or ()]
    seen = [(bit, name) for bit, name in CLOCK_EVENT_REASONS.items() if any(m & bit for m in masks)]
    for title, unit, lines, top, events in (
        ("GPU memory used", "MiB", [line("mem_used_mib", "memory used")], None, []),
        (
            "GPU utilization",
            "%",
            [line("util_gpu", "SM busy"), line("util_mem", "memory busy", PALETTE[1])],
            100.0,
            [],
        ),
        ("Power draw", "W", [line("power_w", "power", PALETTE[2])], None, []),
        ("Temperature", "deg C", [line("temp_c", "GPU temperature", PALETTE[1])], None, []),
        (
            "SM clock and clock-event reasons",
            "MHz",
            [line("sm_clock_mhz", "SM clock", PALETTE[3])],
            None,
            [(name, t, [bool(m & bit) for m in masks]) for bit, name in seen],
        ),
    ):
        if r.telemetry_gpu:
            title = f"{title} ({r.telemetry_gpu}, the GPU the harness samples)"
        chart = Chart(
            title=title, y_label=unit, lines=lines, bands=bands, y_max=top, x_range=rng, events=events
        )
        out.append(render_chart(chart))
    return out
