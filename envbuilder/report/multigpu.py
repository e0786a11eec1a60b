"""The multi-GPU part of a certificate's report: the harness's `multi_gpu` section as a summary, a
bus-bandwidth table, one row per rank (2 to 8 and more) and an SVG chart of busbw against message
size (terminal.py and html.py lay them out).

`multi_gpu_view` is pure and never raises on a malformed section: a missing field shows as '-'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envbuilder.harness.multigpu.sweep import human_bytes
from envbuilder.report.charts import PALETTE, Chart, Line, as_number, render_chart, size_label

DASH = "-"
# The rows the busbw table shows (and the gated size, and the largest one measured).
TABLE_SIZES = (1 << 10, 1 << 20, 8 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30, 8 << 30)


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    bytes: int
    busbw_gbs: float
    algbw_gbs: float
    time_us: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RankRow:
    rank: int
    exit_code: int | None
    init_s: float | None
    sweep_s: float | None
    ddp_s: float | None
    sweep_peak_bytes: int | None  # GPU memory the sweep allocated at its largest size
    max_param_abs_diff: float | None
    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiGpuView:
    status: str
    reason: str
    summary: tuple[tuple[str, str], ...]  # label, value: what the terminal and the HTML list
    sweep: tuple[SweepPoint, ...]
    gates: tuple[tuple[str, str, str], ...]  # name, status, reason
    ranks: tuple[RankRow, ...] = ()
    gated_bytes: int | None = None  # the size the busbw floor judges


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
    gate = next((g for g in map(_mapping, mg.get("gates") or ()) if g.get("name") == "multi_gpu:busbw"), {})
    at = gate.get("at_bytes") if isinstance(gate.get("at_bytes"), int) else mg.get("max_bytes")
    size = human_bytes(at) if isinstance(at, int) else DASH
    world = mg.get("world_size")
    ranks = f"{world if world is not None else DASH} x {mg.get('backend', DASH)}"
    value = gate.get("value") if "value" in gate else mg.get("busbw_at_max_gbs")
    busbw = _f(value, ",.1f", " GB/s")
    ddp, one = _f(mg.get("ddp_images_per_s"), ",.0f"), _f(mg.get("single_gpu_images_per_s"), ",.0f")
    summary = [
        ("ranks", f"{ranks}, NCCL {mg.get('nccl_version') or DASH}"),
        ("interconnect", f"{mg.get('interconnect') or DASH}, NCCL_NVLS_ENABLE={nvls or 'unset'}"),
        (
            "all-reduce",
            f"busbw {busbw} at {size} (floor {_f(floors.get('min_busbw_gbs'), ',.0f', ' GB/s')}); "
            + _said(mg.get("allreduce_values_ok"), "every value checked", "WRONG VALUES"),
        ),
    ]
    summary += _sweep_lines(mg, world)
    summary.append(
        (
            "DDP",
            f"{ddp} img/s vs {one} on one GPU: scaling {_f(mg.get('scaling_efficiency'), '.3f')} "
            f"(floor {_f(floors.get('min_scaling_efficiency'), '.2f')}); parameters "
            + _said(mg.get("params_identical"), "identical", "DIFFER"),
        )
    )
    summary += _named_ranks(mg)
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
    return MultiGpuView(
        status=status,
        reason=reason,
        summary=tuple(summary),
        sweep=sweep,
        gates=gates,
        ranks=tuple(_rank_row(_mapping(r), i) for i, r in enumerate(mg.get("ranks") or ())),
        gated_bytes=at if isinstance(at, int) else None,
    )


def _sweep_lines(mg: Mapping[str, Any], world: Any) -> list[tuple[str, str]]:
    """How far the sweep went and why it stopped there; the busbw factor for this rank count."""
    out = []
    sizes = [int(b) for b in (_mapping(r).get("bytes") for r in mg.get("sweep") or ()) if isinstance(b, int)]
    cap = _mapping(mg.get("sweep_cap"))
    if sizes:
        line = f"{human_bytes(min(sizes))} - {human_bytes(max(sizes))}, {len(sizes)} sizes"
        if cap.get("limited_by") == "memory":
            free = as_number(cap.get("free_bytes_min"))
            gib = _f(None if free is None else free / 2**30, ",.1f", " GiB")
            line += f"; stopped by GPU memory ({gib} free on the fullest GPU)"
        elif isinstance(cap.get("requested_bytes"), int):
            line += f" (as asked: {human_bytes(cap['requested_bytes'])})"
        out.append(("sweep", line))
    if isinstance(world, int) and world >= 2:
        peak = _f(mg.get("peak_busbw_gbs"), ",.1f", " GB/s")
        out.append(("busbw", f"algbw x 2(n-1)/n = x {2 * (world - 1) / world:g} at n = {world}; peak {peak}"))
    return out


def _named_ranks(mg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ranks a failure names: hung, a wrong contribution, drifted parameters."""
    out = []
    for key, label in (
        ("hung_ranks", "hung ranks"),
        ("allreduce_culprits", "wrong contribution"),
        ("ranks_with_differing_params", "params differ"),
    ):
        named = mg.get(key)
        if isinstance(named, list) and named:
            out.append((label, "rank " + ", ".join(str(r) for r in named)))
    return out


def _rank_row(r: Mapping[str, Any], i: int) -> RankRow:
    phase, mem = _mapping(r.get("phase_s")), _mapping(r.get("sweep_memory"))
    rank, code, peak = r.get("rank"), r.get("exit_code"), mem.get("peak_allocated_bytes")
    init = as_number(r.get("init_s"))
    return RankRow(
        rank=rank if isinstance(rank, int) else i,
        exit_code=code if isinstance(code, int) else None,
        init_s=init if init is not None else as_number(phase.get("init")),
        sweep_s=as_number(phase.get("sweep")),
        ddp_s=as_number(phase.get("ddp")),
        sweep_peak_bytes=peak if isinstance(peak, int) else None,
        max_param_abs_diff=as_number(r.get("max_param_abs_diff")),
        error=str(r.get("error") or "")[:160],
    )


RANK_HEADERS = ("RANK", "EXIT", "INIT S", "SWEEP S", "DDP S", "SWEEP PEAK", "PARAM DIFF", "ERROR")


def rank_rows(v: MultiGpuView) -> list[list[str]]:
    """One row per rank: how it ended, its phases, the sweep's GPU memory, its parameter drift."""
    return [
        [
            str(r.rank),
            DASH if r.exit_code is None else str(r.exit_code),
            _f(r.init_s, ".1f"),
            _f(r.sweep_s, ".1f"),
            _f(r.ddp_s, ".1f"),
            DASH if r.sweep_peak_bytes is None else f"{r.sweep_peak_bytes / 2**30:.2f} GiB",
            _f(r.max_param_abs_diff, ".3g"),
            r.error or DASH,
        ]
        for r in v.ranks
    ]


def table_rows(v: MultiGpuView) -> list[list[str]]:
    """The sweep at a few sizes (and the largest one measured): size, time, algbw, busbw."""
    largest = v.sweep[-1].bytes if v.sweep else 0
    return [
        [human_bytes(p.bytes), f"{p.time_us:,.1f}", f"{p.algbw_gbs:,.2f}", f"{p.busbw_gbs:,.2f}"]
        for p in v.sweep
        if p.bytes in TABLE_SIZES or p.bytes in (largest, v.gated_bytes)
    ]


TABLE_HEADERS = ("SIZE", "TIME US", "ALGBW GB/S", "BUSBW GB/S")


def busbw_chart(v: MultiGpuView) -> str | None:
    """busbw against message size on a log2 axis; None without a sweep."""
    if not v.sweep:
        return None
    xs = [math.log2(p.bytes) for p in v.sweep]
    lo, hi = math.floor(min(xs)), math.ceil(max(xs))
    # powers of two that land on 1 KiB, 1 MiB, 1 GiB: every 10th, 5th (32 KiB, ...), 2nd or each one
    every = next(n for n in (1, 2, 5, 10) if (hi - lo) / n <= 8 or n == 10)
    chart = Chart(
        title="NCCL all-reduce bus bandwidth by message size",
        y_label="busbw GB/s",
        lines=[Line(label="busbw", xs=xs, ys=[p.busbw_gbs for p in v.sweep], color=PALETTE[0])],
        x_label="message size (log scale)",
        x_ticks=[(float(e), size_label(2.0**e)) for e in range(lo, hi + 1) if e % every == 0],
    )
    return render_chart(chart)
