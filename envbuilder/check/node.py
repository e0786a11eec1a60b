"""The node's side of `envbuilder check`: NVML's answers (host/health.py) and the kernel's Xids,
judged into findings. A query NVML does not support on a GPU is a note that says so, never a
failure. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envbuilder.check.findings import CheckThresholds, Finding, Status
from envbuilder.host.health import GpuHealth, Query, XidLog, bus_key
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


@dataclass(frozen=True, slots=True)
class Judged:
    """What a judge makes of one reading: the status, the value the finding carries, and why."""

    status: Status
    value: Any
    message: str


def _finding(check: str, gpu: GpuHealth, got: Judged, remedy: str) -> Finding:
    return Finding(
        check=check, status=got.status, gpu=gpu.index, value=got.value, message=got.message, remedy=remedy
    )


def _unsupported(check: str, gpu: GpuHealth, why: str | None) -> Finding:
    return Finding(
        check=check, status="note", gpu=gpu.index, message=f"NVML: {why} on {gpu.name}", value=None
    )


@dataclass(frozen=True, slots=True)
class NvmlCheck:
    """One row of the NVML table. `read`: the reading of a GPU (a Query whose `unsupported` is
    NVML's reason: then the finding is a note); `judge`: the reading against the thresholds;
    `remedy`: what to do, by status (nothing for a pass)."""

    check: str
    read: Callable[[GpuHealth], Query]
    judge: Callable[[Any, CheckThresholds], Judged]
    remedy: Mapping[Status, str]

    def __call__(self, gpu: GpuHealth, t: CheckThresholds) -> Finding:
        reading = self.read(gpu)
        if not reading.ok:
            return _unsupported(self.check, gpu, reading.unsupported)
        got = self.judge(reading.value, t)
        return _finding(self.check, gpu, got, self.remedy.get(got.status, ""))


def _query(name: str) -> Callable[[GpuHealth], Query]:
    """The reader of one NVML answer as it stands."""

    def read(gpu: GpuHealth) -> Query:
        return gpu.get(name)

    return read


def _either(first: str, second: str) -> Callable[[GpuHealth], Query]:
    """The reader of two NVML answers either of which may be unsupported: both, as a pair,
    unless neither is (then the first one's reason)."""

    def read(gpu: GpuHealth) -> Query:
        a, b = gpu.get(first), gpu.get(second)
        return a if not a.ok and not b.ok else Query(value=(a, b))

    return read


# ECC: uncorrectable errors since the driver loaded fail (data may be corrupt); lifetime ones warn.
def _judge_ecc(queries: tuple[Query, Query], t: CheckThresholds) -> Judged:
    vol, agg = queries
    if vol.ok and int(vol.value) > 0:
        return Judged(
            "fail", int(vol.value), f"{vol.value} uncorrectable ECC error(s) since the driver loaded"
        )
    if agg.ok and int(agg.value) > 0:
        return Judged(
            "warn",
            int(agg.value),
            f"{agg.value} uncorrectable ECC error(s) in the GPU's lifetime (none since the driver loaded)",
        )
    return Judged("pass", 0, "no uncorrectable ECC errors")


# Clock-event (throttle) reasons now, at idle.
def _judge_clocks(reasons: Sequence[str], t: CheckThresholds) -> Judged:
    value = list(reasons)
    if bad := [r for r in reasons if r in FAIL_REASONS]:
        return Judged("fail", value, f"the GPU is slowed by hardware: {', '.join(bad)}")
    if slow := [r for r in reasons if r in WARN_REASONS]:
        return Judged("warn", value, f"the GPU's clocks are held down: {', '.join(slow)}")
    return Judged("pass", value, f"no slowdown ({', '.join(reasons) or 'none'})")


# PCIe link: an idle GPU trains its link down to save power (a lower generation is normal);
# a narrower link than the maximum is a seating, riser or slot problem.
def _read_pcie(gpu: GpuHealth) -> Query:
    gen, gen_max = gpu.get("pcie_gen"), gpu.get("pcie_gen_max")
    width, width_max = gpu.get("pcie_width"), gpu.get("pcie_width_max")
    if not (width.ok and width_max.ok):
        return Query(unsupported=width.unsupported or width_max.unsupported)
    return Query(
        value={
            "gen": gen.value if gen.ok else None,
            "gen_max": gen_max.value if gen_max.ok else None,
            "width": int(width.value),
            "width_max": int(width_max.value),
        }
    )


def _judge_pcie(link: dict[str, Any], t: CheckThresholds) -> Judged:
    lanes, lanes_max = link["width"], link["width_max"]
    shown = f"Gen{link['gen'] or '?'} x{lanes} (max Gen{link['gen_max'] or '?'} x{lanes_max})"
    if lanes < lanes_max:
        return Judged(
            "fail" if t.pcie_width_fail else "warn", link, f"PCIe link narrower than the maximum: {shown}"
        )
    note = " (a lower generation at idle is power saving)" if link["gen"] != link["gen_max"] else ""
    return Judged("pass", link, f"PCIe {shown}{note}")


# Temperature at idle against the slowdown threshold.
def _read_temperature(gpu: GpuHealth) -> Query:
    temp, slowdown = gpu.get("temperature_c"), gpu.get("temperature_slowdown_c")
    if not temp.ok:
        return temp
    return Query(value=(int(temp.value), int(slowdown.value) if slowdown.ok else None))


def _judge_temperature(reading: tuple[int, int | None], t: CheckThresholds) -> Judged:
    c, limit = reading
    if limit is not None and c >= limit:
        return Judged("fail", c, f"{c} C at idle, at or above the slowdown threshold ({limit} C)")
    if limit is not None and c >= limit - t.temperature_margin_c:
        margin = f"{t.temperature_margin_c:.0f}"
        return Judged("warn", c, f"{c} C at idle, within {margin} C of the slowdown threshold ({limit} C)")
    against = f" (slowdown at {limit} C)" if limit is not None else " (no slowdown threshold from NVML)"
    return Judged("pass", c, f"{c} C{against}")


# Processes already holding the GPU: the memory they hold against its total.
def _read_processes(gpu: GpuHealth) -> Query:
    return Query(
        value={
            "processes": [dict(p) for p in gpu.processes],
            "held_mib": sum(p["used_mib"] or 0 for p in gpu.processes),
            "memory_used_mib": gpu.memory_used_mib,
            "memory_total_mib": gpu.memory_total_mib,
            "unread": list(gpu.processes_unread),
            "mig_mode": gpu.in_mig_mode,
        }
    )


def _judge_processes(value: dict[str, Any], t: CheckThresholds) -> Judged:
    held, used, total = value["held_mib"], value["memory_used_mib"], value["memory_total_mib"]
    # Processes of other containers may be invisible (their PIDs in another namespace, or memory
    # hidden without permission): the used memory then speaks for them.
    share = max(held, used or 0) / total if total else 0.0
    if not value["processes"] and share < t.memory_held_warn_fraction:
        if value.get("unread"):  # not "none": NVML could not list them; the memory speaks alone
            said = (
                f"{used} of {total} MiB in use" if used is not None and total else "its memory in use unknown"
            )
            unread = "; ".join(value["unread"])
            return Judged("note", value, f"NVML could not list the GPU's processes ({unread}); {said}")
        return Judged("pass", value, "no process holds the GPU")
    pids = ", ".join(str(p["pid"]) for p in value["processes"])
    who = f"process(es) {pids}" if pids else "something NVML does not list (another container or user)"
    amount = max(held, used or 0)
    of = f"{share:.0%} of its memory ({amount} of {total} MiB)" if total else f"{amount} MiB of its memory"
    message = f"{who} already hold {of}"
    if value.get("mig_mode"):
        # Its MIG instances are other jobs' by design, and which one this job gets is the
        # scheduler's choice: what they hold says nothing against the node.
        mig = f"in MIG mode: {message} across its MIG instances (other jobs'): not judged"
        return Judged("note", value, mig)
    return Judged("fail" if share >= t.memory_held_fail_fraction else "warn", value, message)


# Page retirement (parts before Ampere): judged where row remapping is not supported.
def _judge_retired_pages(queries: tuple[Query, Query], t: CheckThresholds) -> Judged:
    pages, pending = queries
    value = pages.value if pages.ok else None
    if pending.ok and pending.value:
        return Judged("fail", value, "a page retirement is pending: not applied until the driver reloads")
    shown = pages.value if pages.ok else "?"
    return Judged("pass", value, f"no page retirement pending ({shown} double-bit page(s) retired)")


ECC = NvmlCheck(
    "node.ecc",
    _either("ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"),
    _judge_ecc,
    {
        "fail": "drain the node, reset the GPU (nvidia-smi -r); if they recur, the GPU needs service (RMA)",
        "warn": "watch nvidia-smi -q -d ECC; a rising count means the GPU needs service",
    },
)
RETIRED_PAGES = NvmlCheck(
    "node.retired_pages",
    _either("retired_pages_double_bit", "retired_pages_pending"),
    _judge_retired_pages,
    {"fail": "drain the node and reset the GPU or reload the driver, then check again"},
)
CLOCKS = NvmlCheck(
    "node.clocks",
    _query("clock_event_reasons"),
    _judge_clocks,
    {
        "fail": "check cooling, power supply and the board (nvidia-smi -q -d PERFORMANCE); drain until fixed",
        "warn": "check the power limit (nvidia-smi -q -d POWER) and cooling",
    },
)
PCIE = NvmlCheck(
    "node.pcie",
    _read_pcie,
    _judge_pcie,
    dict.fromkeys(
        ("fail", "warn"),
        "reseat the GPU or its riser, check the slot; host-device copies run slower meanwhile",
    ),
)
TEMPERATURE = NvmlCheck(
    "node.temperature",
    _read_temperature,
    _judge_temperature,
    {
        "fail": "check the node's cooling (fans, airflow, inlet temperature); drain until fixed",
        "warn": "check the node's cooling before a long job",
    },
)
PROCESSES = NvmlCheck(
    "node.processes",
    _read_processes,
    _judge_processes,
    {
        "fail": "a previous job or a stray process is still on the GPU: stop it "
        "(nvidia-smi --query-compute-apps=pid,used_memory --format=csv), then check again",
        "warn": "the job gets less memory and shares the GPU's time: stop what should not run there",
    },
)


# The special cases: a remedy that depends on more than the status, or a finding whose name
# depends on which query the GPU answers.


def judge_memory_repair(gpu: GpuHealth, t: CheckThresholds) -> Finding:
    """Row remapping (Ampere and newer) or, where the GPU has none, page retirement (older parts);
    neither answered: one note. A failed remapping and a pending one fail with their own remedies."""
    rows = gpu.get("remapped_rows")
    if rows.ok:
        r = rows.value
        if r["failure"]:
            got = Judged("fail", r, "a row remapping failed: the GPU has run out of spare rows")
            remedy = "drain the node; the GPU needs service (RMA)"
        elif r["pending"]:
            why = f"a row remapping is pending ({r['uncorrectable']} uncorrectable row(s)): not applied"
            got = Judged("fail", r, f"{why} until a reset")
            remedy = "drain the node and reset the GPU (nvidia-smi -r) to apply it, then check again"
        else:
            got = Judged(
                "pass", r, f"no remapping pending ({r['correctable']} + {r['uncorrectable']} rows remapped)"
            )
            remedy = ""
        return _finding("node.remapped_rows", gpu, got, remedy)
    if RETIRED_PAGES.read(gpu).ok:
        return RETIRED_PAGES(gpu, t)
    return _unsupported("node.memory_repair", gpu, rows.unsupported)


def judge_recovery_action(gpu: GpuHealth, t: CheckThresholds) -> Finding:
    """The driver's recovery action (R550+; Xid 154 announces a change): its remedy is the action's."""
    action = gpu.get("recovery_action")
    if not action.ok:
        return _unsupported("node.recovery_action", gpu, action.unsupported)
    if action.value == "none":
        return _finding("node.recovery_action", gpu, Judged("pass", "none", "no recovery action asked"), "")
    asked = Judged("fail", action.value, f"the driver asks for a recovery action: {action.value}")
    remedy = RECOVERY_REMEDY.get(str(action.value), "read nvidia-smi -q (GPU Recovery Action) and do that")
    return _finding("node.recovery_action", gpu, asked, remedy)


# Every NVML finding of a GPU, in the order the report lists them.
GPU_CHECKS: tuple[Callable[[GpuHealth, CheckThresholds], Finding], ...] = (
    ECC,
    judge_memory_repair,
    judge_recovery_action,
    CLOCKS,
    PCIE,
    TEMPERATURE,
    PROCESSES,
)


def judge_gpu(gpu: GpuHealth, t: CheckThresholds) -> list[Finding]:
    """Every NVML finding of one GPU (GPU_CHECKS)."""
    return [judge(gpu, t) for judge in GPU_CHECKS]


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
