"""The multi-GPU part of a certificate's report: the harness's `multi_gpu` section as a summary, a
bus-bandwidth table and an SVG chart of busbw against message size (terminal.py and html.py lay them out).

`multi_gpu_view` is pure and never raises on a malformed section: a missing field shows as '-'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envbuilder.harness.multigpu.step import human_bytes
from envbuilder.report.charts import PALETTE, Chart, Line, as_number, render_chart

DASH = "-"
TABLE_SIZES = (1 << 10, 1 << 20, 8 << 20, 64 << 20, 256 << 20, 1 << 30)  # the rows the table shows


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    bytes: int
    busbw_gbs: float
    algbw_gbs: float
    time_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiGpuView:
    status: str
    reason: str
    summary: tuple[tuple[str, str], ...]  # label, value: what the terminal and the HTML list
    sweep: tuple[SweepPoint, ...]
    gates: tuple[tuple[str, str, str], ...]  # name, status, reason


def _f(v: Any, spec: str, suffix: str = "") -> str:
    x = as_number(v)
    return DASH if x is None else f"{x:{spec}}{suffix}"


def _mapping(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _said(v: Any, yes: str, no: str) -> str:
    return yes if v is True else no if v is False else DASH


def multi_gpu_view(harness: Mapping[str, Any]) -> MultiGpuView | None:
    """None when the certificate has no multi_gpu section (a harness before 1.1)."""
    mg = harness.get("multi_gpu")
    if not isinstance(mg, Mapping):
        return None
    status, reason = str(mg.get("status") or "?"), str(mg.get("reason") or "")
    if status == "skip":
        return MultiGpuView(status=status, reason=reason, summary=(), sweep=(), gates=())
    nvls = _mapping(mg.get("env")).get("nvls_enable")
    floors = _mapping(mg.get("thresholds"))
    at = mg.get("max_bytes")
    size = human_bytes(at) if isinstance(at, int) else DASH
    ranks = f"{mg.get('world_size', DASH)} x {mg.get('backend', DASH)}"
    busbw = _f(mg.get("busbw_at_max_gbs"), ",.1f", " GB/s")
    ddp, one = _f(mg.get("ddp_images_per_s"), ",.0f"), _f(mg.get("single_gpu_images_per_s"), ",.0f")
    summary = (
        ("ranks", f"{ranks}, NCCL {mg.get('nccl_version') or DASH}"),
        ("interconnect", f"{mg.get('interconnect') or DASH}, NCCL_NVLS_ENABLE={nvls or 'unset'}"),
        (
            "all-reduce",
            f"busbw {busbw} at {size} (floor {_f(floors.get('min_busbw_gbs'), ',.0f', ' GB/s')}); "
            + _said(mg.get("allreduce_values_ok"), "every value checked", "WRONG VALUES"),
        ),
        (
            "DDP",
            f"{ddp} img/s vs {one} on one GPU: scaling {_f(mg.get('scaling_efficiency'), '.3f')} "
            f"(floor {_f(floors.get('min_scaling_efficiency'), '.2f')}); parameters "
            + _said(mg.get("params_identical"), "identical", "DIFFER"),
        ),
    )
    rows = [_mapping(r) for r in mg.get("sweep") or ()]
    sweep = tuple(
        SweepPoint(
            bytes=r["bytes"],
            busbw_gbs=as_number(r.get("busbw_gbs")) or 0.0,
            algbw_gbs=as_number(r.get("algbw_gbs")) or 0.0,
            time_us=as_number(r.get("time_us")) or 0.0,
        )
        for r in rows
        if isinstance(r.get("bytes"), int) and as_number(r.get("busbw_gbs")) is not None
    )
    gates = tuple(
        (str(g.get("name")), str(g.get("status")), str(g.get("reason") or ""))
        for g in map(_mapping, mg.get("gates") or ())
    )
    return MultiGpuView(status=status, reason=reason, summary=summary, sweep=sweep, gates=gates)


def table_rows(v: MultiGpuView) -> list[list[str]]:
    """The sweep at a few sizes (and the largest one measured): size, time, algbw, busbw."""
    largest = v.sweep[-1].bytes if v.sweep else 0
    return [
        [human_bytes(p.bytes), f"{p.time_us:,.1f}", f"{p.algbw_gbs:,.2f}", f"{p.busbw_gbs:,.2f}"]
        for p in v.sweep
        if p.bytes in TABLE_SIZES or p.bytes == largest
    ]


TABLE_HEADERS = ("SIZE", "TIME US", "ALGBW GB/S", "BUSBW GB/S")


def busbw_chart(v: MultiGpuView) -> str | None:
    """busbw against message size on a log2 axis; None without a sweep."""
    if not v.sweep:
        return None
    xs = [math.log2(p.bytes) for p in v.sweep]
    chart = Chart(
        title="NCCL all-reduce bus bandwidth by message size",
        y_label="busbw GB/s",
        lines=[Line(label="busbw", xs=xs, ys=[p.busbw_gbs for p in v.sweep], color=PALETTE[0])],
        x_label="message size, log2 bytes (10 = 1 KiB, 20 = 1 MiB, 30 = 1 GiB)",
    )
    return render_chart(chart)
