"""The node's side of `envbuilder check`: NVML's answers (host/health.py) and the kernel's Xids,
judged into findings. A query NVML does not support on a GPU is a note that says so, never a
failure. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from envbuilder.check.findings import CheckThresholds, Finding, Status
from envbuilder.host.health import GpuHealth, XidLog, bus_key
from envbuilder.run.xid import xid_meaning

# Clock-event reasons (telemetry.CLOCK_EVENT_REASONS names) and what each means on an idle GPU.
FAIL_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
WARN_REASONS = ("sw_thermal_slowdown", "sw_power_cap")
# Xids that say nothing against the node: the job's own faults, the driver cleaning up after a
# killed job (45), the recovery action changing (154: node.recovery_action judges the action).
NOTE_XIDS = frozenset({13, 31, 43, 45, 154})
# Recorded but recoverable: a row remap recorded (63: node.remapped_rows fails a pending one) and
# a high rate of corrected errors (92).
WARN_XIDS = frozenset({63, 92})
RECOVERY_REMEDY = {
    "gpu_reset": "reset the GPU (nvidia-smi -r -i INDEX) with no job on it, then check again",
    "node_reboot": "reboot the node, then check again",
    "drain_p2p": "drain the node of multi-GPU (peer-to-peer) jobs, then reset the GPUs",
    "drain_and_reset": "drain the node, reset the GPU (nvidia-smi -r), then check again",
    "bus_reset": "drain the node and reset the GPU's PCIe bus (nvidia-smi -r does it on recent drivers)",
    "system_reboot": "reboot the node, then check again",
    "recover_imex_domain": "recover the IMEX domain (multi-node NVLink) before the next job",
}


def _unsupported(check: str, gpu: GpuHealth, why: str | None) -> Finding:
    return Finding(
        check=check, status="note", gpu=gpu.index, message=f"NVML: {why} on {gpu.name}", value=None
    )


def judge_gpu(gpu: GpuHealth, t: CheckThresholds) -> list[Finding]:
    """Every NVML finding of one GPU."""
    out: list[Finding] = []
    i = gpu.index

    # ECC: uncorrectable errors since the driver loaded fail (data may be corrupt); lifetime ones warn.
    vol, agg = gpu.get("ecc_uncorrected_volatile"), gpu.get("ecc_uncorrected_aggregate")
    if not vol.ok and not agg.ok:
        out.append(_unsupported("node.ecc", gpu, vol.unsupported))
    elif vol.ok and int(vol.value) > 0:
        out.append(
            Finding(
                check="node.ecc",
                status="fail",
                gpu=i,
                value=int(vol.value),
                message=f"{vol.value} uncorrectable ECC error(s) since the driver loaded",
                remedy="drain the node, reset the GPU (nvidia-smi -r); if they recur, the GPU needs "
                "service (RMA)",
            )
        )
    elif agg.ok and int(agg.value) > 0:
        out.append(
            Finding(
                check="node.ecc",
                status="warn",
                gpu=i,
                value=int(agg.value),
                message=f"{agg.value} uncorrectable ECC error(s) in the GPU's lifetime (none since the "
                "driver loaded)",
                remedy="watch nvidia-smi -q -d ECC; a rising count means the GPU needs service",
            )
        )
    else:
        out.append(
            Finding(check="node.ecc", status="pass", gpu=i, message="no uncorrectable ECC errors", value=0)
        )

    # Row remapping (Ampere and newer) and page retirement (older parts): one of them applies.
    rows, pages, pending = (
        gpu.get("remapped_rows"),
        gpu.get("retired_pages_double_bit"),
        gpu.get("retired_pages_pending"),
    )
    if rows.ok:
        r = rows.value
        if r["failure"]:
            out.append(
                Finding(
                    check="node.remapped_rows",
                    status="fail",
                    gpu=i,
                    value=r,
                    message="a row remapping failed: the GPU has run out of spare rows",
                    remedy="drain the node; the GPU needs service (RMA)",
                )
            )
        elif r["pending"]:
            out.append(
                Finding(
                    check="node.remapped_rows",
                    status="fail",
                    gpu=i,
                    value=r,
                    message=f"a row remapping is pending ({r['uncorrectable']} uncorrectable row(s)): not "
                    "applied until a reset",
                    remedy="drain the node and reset the GPU (nvidia-smi -r) to apply it, then check again",
                )
            )
        else:
            out.append(
                Finding(
                    check="node.remapped_rows",
                    status="pass",
                    gpu=i,
                    value=r,
                    message=f"no remapping pending ({r['correctable']} + {r['uncorrectable']} rows remapped)",
                )
            )
    elif pages.ok or pending.ok:
        if pending.ok and pending.value:
            out.append(
                Finding(
                    check="node.retired_pages",
                    status="fail",
                    gpu=i,
                    value=pages.value if pages.ok else None,
                    message="a page retirement is pending: not applied until the driver reloads",
                    remedy="drain the node and reset the GPU or reload the driver, then check again",
                )
            )
        else:
            out.append(
                Finding(
                    check="node.retired_pages",
                    status="pass",
                    gpu=i,
                    value=pages.value if pages.ok else None,
                    message=f"no page retirement pending ({pages.value if pages.ok else '?'} double-bit "
                    "page(s) retired)",
                )
            )
    else:
        out.append(_unsupported("node.memory_repair", gpu, rows.unsupported))

    # The driver's recovery action (R550+; Xid 154 announces a change).
    action = gpu.get("recovery_action")
    if not action.ok:
        out.append(_unsupported("node.recovery_action", gpu, action.unsupported))
    elif action.value == "none":
        out.append(
            Finding(
                check="node.recovery_action",
                status="pass",
                gpu=i,
                value="none",
                message="no recovery action asked",
            )
        )
    else:
        out.append(
            Finding(
                check="node.recovery_action",
                status="fail",
                gpu=i,
                value=action.value,
                message=f"the driver asks for a recovery action: {action.value}",
                remedy=RECOVERY_REMEDY.get(
                    str(action.value), "read nvidia-smi -q (GPU Recovery Action) and do that"
                ),
            )
        )

    # Clock-event (throttle) reasons now, at idle.
    reasons = gpu.get("clock_event_reasons")
    if not reasons.ok:
        out.append(_unsupported("node.clocks", gpu, reasons.unsupported))
    else:
        bad = [r for r in reasons.value if r in FAIL_REASONS]
        slow = [r for r in reasons.value if r in WARN_REASONS]
        if bad:
            out.append(
                Finding(
                    check="node.clocks",
                    status="fail",
                    gpu=i,
                    value=list(reasons.value),
                    message=f"the GPU is slowed by hardware: {', '.join(bad)}",
                    remedy="check cooling, power supply and the board (nvidia-smi -q -d PERFORMANCE); "
                    "drain until fixed",
                )
            )
        elif slow:
            out.append(
                Finding(
                    check="node.clocks",
                    status="warn",
                    gpu=i,
                    value=list(reasons.value),
                    message=f"the GPU's clocks are held down: {', '.join(slow)}",
                    remedy="check the power limit (nvidia-smi -q -d POWER) and cooling",
                )
            )
        else:
            shown = ", ".join(reasons.value) or "none"
            out.append(
                Finding(
                    check="node.clocks",
                    status="pass",
                    gpu=i,
                    value=list(reasons.value),
                    message=f"no slowdown ({shown})",
                )
            )

    # PCIe link: an idle GPU trains its link down to save power (a lower generation is normal);
    # a narrower link than the maximum is a seating, riser or slot problem.
    gen, gen_max = gpu.get("pcie_gen"), gpu.get("pcie_gen_max")
    width, width_max = gpu.get("pcie_width"), gpu.get("pcie_width_max")
    if not (width.ok and width_max.ok):
        out.append(_unsupported("node.pcie", gpu, width.unsupported or width_max.unsupported))
    else:
        lanes, lanes_max = int(width.value), int(width_max.value)
        link = {
            "gen": gen.value if gen.ok else None,
            "gen_max": gen_max.value if gen_max.ok else None,
            "width": lanes,
            "width_max": lanes_max,
        }
        shown = f"Gen{link['gen'] or '?'} x{lanes} (max Gen{link['gen_max'] or '?'} x{lanes_max})"
        if lanes < lanes_max:
            out.append(
                Finding(
                    check="node.pcie",
                    status="fail" if t.pcie_width_fail else "warn",
                    gpu=i,
                    value=link,
                    message=f"PCIe link narrower than the maximum: {shown}",
                    remedy="reseat the GPU or its riser, check the slot; host-device copies run slower "
                    "meanwhile",
                )
            )
        else:
            note = " (a lower generation at idle is power saving)" if link["gen"] != link["gen_max"] else ""
            out.append(
                Finding(check="node.pcie", status="pass", gpu=i, value=link, message=f"PCIe {shown}{note}")
            )

    # Temperature at idle against the slowdown threshold.
    temp, slowdown = gpu.get("temperature_c"), gpu.get("temperature_slowdown_c")
    if not temp.ok:
        out.append(_unsupported("node.temperature", gpu, temp.unsupported))
    else:
        c = int(temp.value)
        limit = int(slowdown.value) if slowdown.ok else None
        if limit is not None and c >= limit:
            out.append(
                Finding(
                    check="node.temperature",
                    status="fail",
                    gpu=i,
                    value=c,
                    message=f"{c} C at idle, at or above the slowdown threshold ({limit} C)",
                    remedy="check the node's cooling (fans, airflow, inlet temperature); drain until fixed",
                )
            )
        elif limit is not None and c >= limit - t.temperature_margin_c:
            out.append(
                Finding(
                    check="node.temperature",
                    status="warn",
                    gpu=i,
                    value=c,
                    message=f"{c} C at idle, within {t.temperature_margin_c:.0f} C of the slowdown "
                    f"threshold ({limit} C)",
                    remedy="check the node's cooling before a long job",
                )
            )
        else:
            against = (
                f" (slowdown at {limit} C)" if limit is not None else " (no slowdown threshold from NVML)"
            )
            out.append(
                Finding(check="node.temperature", status="pass", gpu=i, value=c, message=f"{c} C{against}")
            )

    out.append(judge_processes(gpu, t))
    return out


def judge_processes(gpu: GpuHealth, t: CheckThresholds) -> Finding:
    """Processes already holding the GPU: the memory they hold against its total."""
    i = gpu.index
    held = sum(p["used_mib"] or 0 for p in gpu.processes)
    total = gpu.memory_total_mib
    used = gpu.memory_used_mib
    pids = ", ".join(str(p["pid"]) for p in gpu.processes)
    value = {
        "processes": [dict(p) for p in gpu.processes],
        "held_mib": held,
        "memory_used_mib": used,
        "memory_total_mib": total,
    }
    # Processes of other containers may be invisible (their PIDs in another namespace, or memory
    # hidden without permission): the used memory then speaks for them.
    share = max(held, used or 0) / total if total else 0.0
    if not gpu.processes and share < t.memory_held_warn_fraction:
        return Finding(
            check="node.processes", status="pass", gpu=i, value=value, message="no process holds the GPU"
        )
    who = f"process(es) {pids}" if pids else "something NVML does not list (another container or user)"
    message = f"{who} already hold {share:.0%} of its memory ({max(held, used or 0)} of {total} MiB)"
    if share >= t.memory_held_fail_fraction:
        return Finding(
            check="node.processes",
            status="fail",
            gpu=i,
            value=value,
            message=message,
            remedy="a previous job or a stray process is still on the GPU: stop it "
            "(nvidia-smi --query-compute-apps=pid,used_memory --format=csv), then check again",
        )
    return Finding(
        check="node.processes",
        status="warn",
        gpu=i,
        value=value,
        message=message,
        remedy="the job gets less memory and shares the GPU's time: stop what should not run there",
    )


def judge_xids(
    log: XidLog, gpus: Sequence[GpuHealth], *, uptime_s: float | None, window_s: float | None
) -> list[Finding]:
    """Xids in the kernel log since boot (or in the last `window_s` seconds): NOTE_XIDS are notes,
    WARN_XIDS warnings, every other (the GPU, its board, the driver or firmware) fails."""
    if log.unreadable is not None:
        return [Finding(check="node.xid", status="note", message=log.unreadable)]
    since = None if window_s is None or uptime_s is None else uptime_s - window_s
    seen = [
        x for x in log.xids if since is None or x.seconds_since_boot is None or x.seconds_since_boot >= since
    ]
    span = "since boot" if since is None else f"in the last {window_s:.0f} s"
    by_bus = {bus_key(g.pci_bus_id): g.index for g in gpus}
    if not seen:
        return [
            Finding(check="node.xid", status="pass", message=f"no Xid in the kernel log {span}", value=[])
        ]
    out = []
    for xid in sorted({x.xid for x in seen}):
        hits = [x for x in seen if x.xid == xid]
        meaning = xid_meaning(xid)
        gpus_hit = sorted({by_bus.get(bus_key(x.pci)) for x in hits}, key=lambda v: -1 if v is None else v)
        where = ", ".join("GPU ?" if g is None else f"GPU {g}" for g in gpus_hit)
        status: Status = "note" if xid in NOTE_XIDS else "warn" if xid in WARN_XIDS else "fail"
        out.append(
            Finding(
                check="node.xid",
                status=status,
                gpu=gpus_hit[0] if len(gpus_hit) == 1 else None,
                value={"xid": xid, "count": len(hits), "pci": sorted({x.pci for x in hits})},
                message=f"Xid {xid} ({meaning.name}) x{len(hits)} {span} on {where}: usually {meaning.who}",
                remedy=meaning.action if status != "note" else "",
            )
        )
    return out
