"""Every condition of `envbuilder check`'s judgements, one table row each that flips that
condition alone: the NVML readings of check/node.py (ECC, row remapping and page retirement,
recovery action, clock-event reasons, PCIe width and generation, temperature, processes) at each
band edge on both sides and with each reading missing; the Xid window; every GPU of a node,
where only a later one is sick; the image's figures against the certificate (check/image.py:
the right GPU model, the right step, the same GPU count and size); the bands, the verdict, its
exit code and the time findings (check/findings.py). GpuHealth is built directly from its
Query readings (host/health.py's own types); the certificates and short-mode documents are
test_check.py's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from cert_factory import H200 as H200_INFO
from test_check import BASELINE, MULTI, T, gate_doc, gpu_step, run_of, sealed

from envbuilder.check.findings import (
    EXIT_CODES,
    Band,
    Finding,
    time_findings,
    validate_report,
    verdict_of,
    verdict_reason,
)
from envbuilder.check.gate import CheckReport, check_image, gpus_handed_in, node_findings
from envbuilder.check.image import GateRun, certified_busbw, certified_figures, judge_gate, summarise_refusals
from envbuilder.check.node import FAIL_REASONS, WARN_REASONS, judge_gpu, judge_xids
from envbuilder.host import HostReport
from envbuilder.host.health import GpuHealth, KernelXid, Query, XidLog
from envbuilder.run.coverage import Refusal

NO = Query(unsupported="not supported: Not Supported")
HEALTHY: dict[str, Any] = {
    "ecc_uncorrected_volatile": 0,
    "ecc_uncorrected_aggregate": 0,
    "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
    "retired_pages_double_bit": 0,
    "retired_pages_pending": False,
    "recovery_action": "none",
    "clock_event_reasons": ["gpu_idle"],
    "pcie_gen": 1,
    "pcie_gen_max": 5,
    "pcie_width": 16,
    "pcie_width_max": 16,
    "temperature_c": 31,
    "temperature_slowdown_c": 87,
}
TOTAL_MIB = 1000


def health(
    index: int = 0, processes: tuple[dict[str, Any], ...] = (), used: int | None = 0, **over: Any
) -> GpuHealth:
    """GPU `index` as NVML reads it: healthy and idle but for `over` (a Query, or a value)."""
    readings = {**HEALTHY, **over}
    return GpuHealth(
        index=index,
        name="NVIDIA H200",
        uuid=f"GPU-{index}",
        pci_bus_id=f"00000000:{0x18 + index:02x}:00.0",
        memory_total_mib=TOTAL_MIB,
        memory_used_mib=used,
        queries={k: v if isinstance(v, Query) else Query(value=v) for k, v in readings.items()},
        processes=processes,
    )


def finding(check: str, gpu: GpuHealth, t: Any = T) -> Finding:
    (got,) = [f for f in judge_gpu(gpu, t) if f.check == check]
    return got


# --------------------------------------------------------------------------- ECC


@pytest.mark.parametrize(
    ("volatile", "aggregate", "status", "value"),
    [
        pytest.param(0, 0, "pass", 0, id="none"),
        pytest.param(1, 1, "fail", 1, id="one-since-load"),
        pytest.param(0, 1, "warn", 1, id="one-in-lifetime"),
        pytest.param(2, 9, "fail", 2, id="fail-carries-the-volatile"),
        pytest.param(0, 7, "warn", 7, id="warn-carries-the-aggregate"),
        pytest.param(NO, 3, "warn", 3, id="volatile-unsupported"),
        pytest.param(3, NO, "fail", 3, id="aggregate-unsupported"),
        pytest.param(NO, 0, "pass", 0, id="volatile-unsupported-none"),
        pytest.param(0, NO, "pass", 0, id="aggregate-unsupported-none"),
        pytest.param(NO, NO, "note", None, id="both-unsupported"),
    ],
)
def test_the_ecc_rule(volatile: Any, aggregate: Any, status: str, value: Any) -> None:
    got = finding("node.ecc", health(ecc_uncorrected_volatile=volatile, ecc_uncorrected_aggregate=aggregate))
    assert (got.status, got.value) == (status, value)
    assert bool(got.remedy) == (status in ("fail", "warn"))


# --------------------------------------------------------------------------- memory repair


def rows(pending: bool = False, failure: bool = False, uncorrectable: int = 0) -> dict[str, Any]:
    return {"correctable": 0, "uncorrectable": uncorrectable, "pending": pending, "failure": failure}


@pytest.mark.parametrize(
    ("over", "check", "status", "remedy"),
    [
        pytest.param({}, "node.remapped_rows", "pass", "", id="rows-clean"),
        pytest.param({"remapped_rows": rows(pending=True, uncorrectable=1)}, "node.remapped_rows", "fail",
                     "reset the GPU", id="rows-pending"),
        pytest.param({"remapped_rows": rows(failure=True)}, "node.remapped_rows", "fail", "RMA",
                     id="rows-failed"),
        pytest.param({"remapped_rows": rows(pending=True, failure=True)}, "node.remapped_rows", "fail", "RMA",
                     id="rows-failed-and-pending"),
        pytest.param({"remapped_rows": rows(), "retired_pages_pending": True}, "node.remapped_rows", "pass",
                     "", id="rows-answer-first"),
        pytest.param({"remapped_rows": NO}, "node.retired_pages", "pass", "", id="pages-clean"),
        pytest.param({"remapped_rows": NO, "retired_pages_pending": True}, "node.retired_pages", "fail",
                     "reload the driver", id="pages-pending"),
        pytest.param({"remapped_rows": NO, "retired_pages_double_bit": 3}, "node.retired_pages", "pass", "",
                     id="pages-retired-none-pending"),
        pytest.param({"remapped_rows": NO, "retired_pages_double_bit": NO, "retired_pages_pending": True},
                     "node.retired_pages", "fail", "reload the driver", id="pages-count-unsupported-pending"),
        pytest.param({"remapped_rows": NO, "retired_pages_pending": NO}, "node.retired_pages", "pass", "",
                     id="pages-pending-unsupported"),
        pytest.param({"remapped_rows": NO, "retired_pages_double_bit": NO, "retired_pages_pending": NO},
                     "node.memory_repair", "note", "", id="neither"),
    ],
)  # fmt: skip
def test_the_memory_repair_rule(over: dict[str, Any], check: str, status: str, remedy: str) -> None:
    got = [
        f
        for f in judge_gpu(health(**over), T)
        if f.check.startswith(("node.remapped", "node.retired", "node.memory"))
    ]
    assert [(f.check, f.status) for f in got] == [(check, status)]
    readings = {**HEALTHY, **over}
    if check == "node.remapped_rows":
        assert got[0].value == readings["remapped_rows"] and isinstance(got[0].message, str)
    elif check == "node.retired_pages":
        pages = readings["retired_pages_double_bit"]
        assert got[0].value == (None if pages is NO else pages) and isinstance(got[0].message, str)
    assert remedy in got[0].remedy and bool(got[0].remedy) == bool(remedy)


# --------------------------------------------------------------------------- recovery action


@pytest.mark.parametrize(
    ("action", "status", "remedy"),
    [
        pytest.param("none", "pass", "", id="none"),
        pytest.param("gpu_reset", "fail", "nvidia-smi -r -i INDEX", id="gpu-reset"),
        pytest.param("node_reboot", "fail", "reboot the node", id="node-reboot"),
        pytest.param("drain_p2p", "fail", "peer-to-peer", id="drain-p2p"),
        pytest.param("drain_and_reset", "fail", "drain the node, reset", id="drain-and-reset"),
        pytest.param("bus_reset", "fail", "PCIe bus", id="bus-reset"),
        pytest.param("system_reboot", "fail", "reboot the node", id="system-reboot"),
        pytest.param("recover_imex_domain", "fail", "IMEX", id="imex"),
        pytest.param("unknown (42)", "fail", "GPU Recovery Action", id="unknown"),
        pytest.param("", "fail", "GPU Recovery Action", id="empty"),
        pytest.param(NO, "note", "", id="unsupported"),
    ],
)
def test_the_recovery_action_rule(action: Any, status: str, remedy: str) -> None:
    got = finding("node.recovery_action", health(recovery_action=action))
    assert got.status == status
    if status != "note":
        assert got.value == action and isinstance(got.message, str) and got.message != action
    assert remedy in got.remedy and bool(got.remedy) == bool(remedy)


# --------------------------------------------------------------------------- clock-event reasons


@pytest.mark.parametrize(
    ("reasons", "status"),
    [
        pytest.param([], "pass", id="none"),
        pytest.param(["gpu_idle"], "pass", id="idle"),
        pytest.param(["gpu_idle", "applications_clocks_setting", "sync_boost"], "pass", id="harmless"),
        pytest.param(["sw_power_cap"], "warn", id="power-cap"),
        pytest.param(["gpu_idle", "sync_boost", "sw_thermal_slowdown"], "warn", id="thermal-third"),
        pytest.param(["hw_slowdown"], "fail", id="hw"),
        pytest.param(["gpu_idle", "sw_power_cap", "hw_power_brake_slowdown"], "fail", id="brake-after-warn"),
        pytest.param(["sw_thermal_slowdown", "hw_thermal_slowdown"], "fail", id="hw-thermal-after-sw"),
        pytest.param(NO, "note", id="unsupported"),
    ],
)
def test_the_clock_rule(reasons: Any, status: str) -> None:
    got = finding("node.clocks", health(clock_event_reasons=reasons))
    assert got.status == status
    named = {"fail": FAIL_REASONS, "warn": WARN_REASONS}.get(status, ())
    if named:
        assert got.message.endswith(": " + ", ".join(r for r in reasons if r in named))
    if status != "note":
        assert got.value == list(reasons)


# --------------------------------------------------------------------------- PCIe


@pytest.mark.parametrize(
    ("width", "width_max", "gen", "gen_max", "strict", "status"),
    [
        pytest.param(16, 16, 1, 5, False, "pass", id="x16-of-16-idle-gen"),
        pytest.param(15, 16, 5, 5, False, "warn", id="x15-of-16"),
        pytest.param(12, 16, 5, 5, False, "warn", id="x12-of-16"),
        pytest.param(8, 16, 5, 5, False, "warn", id="x8-of-16-half"),
        pytest.param(1, 16, 5, 5, False, "warn", id="x1-of-16"),
        pytest.param(7, 8, 4, 4, False, "warn", id="x7-of-8"),
        pytest.param(8, 8, 4, 4, False, "pass", id="x8-of-8"),
        pytest.param(15, 16, 5, 5, True, "fail", id="x15-strict"),
        pytest.param(16, 16, 5, 5, True, "pass", id="x16-strict"),
        pytest.param(16, 16, NO, NO, False, "pass", id="gen-unsupported"),
        pytest.param(NO, 16, 5, 5, False, "note", id="width-unsupported"),
        pytest.param(16, NO, 5, 5, False, "note", id="width-max-unsupported"),
    ],
)
def test_the_pcie_rule(width: Any, width_max: Any, gen: Any, gen_max: Any, strict: bool, status: str) -> None:
    t = replace(T, pcie_width_fail=strict)
    gpu = health(pcie_width=width, pcie_width_max=width_max, pcie_gen=gen, pcie_gen_max=gen_max)
    got = finding("node.pcie", gpu, t)
    assert got.status == status
    assert bool(got.remedy) == (status in ("fail", "warn"))
    if status != "note":  # the link is the finding's value, the words its message (never swapped)
        assert got.value == {
            "gen": None if gen is NO else gen,
            "gen_max": None if gen_max is NO else gen_max,
            "width": width,
            "width_max": width_max,
        }
        assert f"x{width} (max Gen" in got.message


def test_a_pcie_pass_says_a_lower_generation_is_power_saving_only_when_it_is_lower() -> None:
    assert "power saving" in finding("node.pcie", health(pcie_gen=1, pcie_gen_max=5)).message
    assert "power saving" not in finding("node.pcie", health(pcie_gen=5, pcie_gen_max=5)).message


# --------------------------------------------------------------------------- temperature

LIMIT = 87
MARGIN = int(T.temperature_margin_c)


@pytest.mark.parametrize(
    ("celsius", "limit", "status"),
    [
        pytest.param(LIMIT + 1, LIMIT, "fail", id="above-limit"),
        pytest.param(LIMIT, LIMIT, "fail", id="at-limit"),
        pytest.param(LIMIT - 1, LIMIT, "warn", id="limit-minus-1"),
        pytest.param(LIMIT - MARGIN, LIMIT, "warn", id="at-margin"),
        pytest.param(LIMIT - MARGIN - 1, LIMIT, "pass", id="below-margin"),
        pytest.param(31, LIMIT, "pass", id="cool"),
        pytest.param(31, 0, "fail", id="a-threshold-of-0"),
        pytest.param(200, NO, "pass", id="no-threshold"),
        pytest.param(NO, LIMIT, "note", id="no-temperature"),
    ],
)
def test_the_temperature_rule(celsius: Any, limit: Any, status: str) -> None:
    got = finding("node.temperature", health(temperature_c=celsius, temperature_slowdown_c=limit))
    assert got.status == status
    if status != "note":
        assert got.value == celsius and got.message.startswith(f"{celsius} C")


def test_the_temperature_margin_is_the_thresholds_not_a_constant() -> None:
    wide = replace(T, temperature_margin_c=20)
    assert finding("node.temperature", health(temperature_c=LIMIT - 15), wide).status == "warn"
    assert finding("node.temperature", health(temperature_c=LIMIT - 15), T).status == "pass"


# --------------------------------------------------------------------------- processes

WARN_MIB = round(T.memory_held_warn_fraction * TOTAL_MIB)  # 50 of 1000
FAIL_MIB = round(T.memory_held_fail_fraction * TOTAL_MIB)  # 500 of 1000


def proc(pid: int, mib: int | None) -> dict[str, Any]:
    return {"pid": pid, "used_mib": mib}


@pytest.mark.parametrize(
    ("processes", "used", "status"),
    [
        pytest.param((), 0, "pass", id="idle"),
        pytest.param((), WARN_MIB - 1, "pass", id="used-below-warn"),
        pytest.param((), WARN_MIB, "warn", id="used-at-warn"),
        pytest.param((), FAIL_MIB - 1, "warn", id="used-below-fail"),
        pytest.param((), FAIL_MIB, "fail", id="used-at-fail"),
        pytest.param((proc(7, 1),), 1, "warn", id="a-listed-process-warns"),
        pytest.param((proc(7, None),), 0, "warn", id="a-process-hiding-its-memory"),
        pytest.param((proc(7, FAIL_MIB),), 0, "fail", id="held-beats-used"),
        pytest.param((proc(7, 1),), FAIL_MIB, "fail", id="used-beats-held"),
        pytest.param((proc(7, 10), proc(8, FAIL_MIB - 10)), 0, "fail", id="held-summed"),
        pytest.param(
            (proc(7, 10), proc(8, None), proc(9, FAIL_MIB - 10)), 0, "fail", id="third-process-counts"
        ),
        pytest.param((), None, "pass", id="used-unknown"),
    ],
)
def test_the_processes_rule(processes: tuple[dict[str, Any], ...], used: int | None, status: str) -> None:
    got = finding("node.processes", health(processes=processes, used=used))
    assert got.status == status
    held = sum(p["used_mib"] or 0 for p in processes)  # a process hiding its memory holds none we know of
    assert (got.value["processes"], got.value["held_mib"]) == (list(processes), held)
    if status != "pass":
        assert f"({max(held, used or 0)} of {TOTAL_MIB} MiB)" in got.message
        assert ", ".join(str(p["pid"]) for p in processes) in got.message


@pytest.mark.parametrize(
    ("unread", "processes", "used", "status"),
    [
        pytest.param(("compute: NoPermission",), (), 0, "note", id="compute-list-unread"),
        pytest.param(("compute: x", "graphics: y"), (), None, "note", id="both-unread-memory-unknown"),
        pytest.param(
            ("graphics: Not Supported",), (proc(7, 1),), 1, "warn", id="a-listed-process-still-warns"
        ),
        pytest.param(("compute: x",), (), FAIL_MIB, "fail", id="memory-still-fails"),
        pytest.param((), (), 0, "pass", id="both-read-and-empty"),
    ],
)
def test_a_process_list_nvml_could_not_give_is_not_read_as_none(
    unread: tuple[str, ...], processes: tuple[dict[str, Any], ...], used: int | None, status: str
) -> None:
    # An unread list said "no process holds the GPU"; now the finding says NVML could not list
    # them (a note: the memory in use still warns and fails as before).
    got = finding("node.processes", replace(health(processes=processes, used=used), processes_unread=unread))
    assert got.status == status
    assert got.value["unread"] == list(unread)
    if status == "note":
        assert got.message.startswith(f"NVML could not list the GPU's processes ({'; '.join(unread)});")
        assert ("0 of 1000 MiB in use" in got.message) == (used == 0)
    if status == "pass":
        assert got.message == "no process holds the GPU"


@pytest.mark.parametrize(
    ("processes", "used", "status"),
    [
        pytest.param((), 0, "pass", id="idle"),
        pytest.param((proc(7, 1),), 1, "note", id="a-process-on-an-instance"),
        pytest.param((), FAIL_MIB, "note", id="other-instances-hold-most"),
    ],
)
def test_a_gpu_in_mig_mode_is_not_judged_on_what_its_instances_hold(
    processes: tuple[dict[str, Any], ...], used: int, status: str
) -> None:
    """Other jobs on its other MIG instances are the design, not a stray process: a note, never
    a warning or a FAIL that drains the node; the same readings without MIG still fail."""
    got = finding("node.processes", health(processes=processes, used=used, mig_mode=True))
    assert (got.status, got.value["mig_mode"]) == (status, True)
    if status == "note":
        assert got.message.startswith("in MIG mode: ") and got.message.endswith("not judged")
        assert finding("node.processes", health(processes=processes, used=used)).status != "note"


def test_a_gpu_whose_total_memory_is_unknown_warns_on_a_listed_process_only() -> None:
    blind = replace(health(used=900), memory_total_mib=None)
    assert finding("node.processes", blind).status == "pass"
    held = replace(health(processes=(proc(7, 900),), used=900), memory_total_mib=None)
    assert finding("node.processes", held).status == "warn"
    small = replace(health(used=None), memory_total_mib=20)  # used unknown: no memory held, not 1 MiB
    assert finding("node.processes", small).status == "pass"


# --------------------------------------------------------------------------- every GPU of the node

SICK: dict[str, dict[str, Any]] = {
    "node.ecc": {"ecc_uncorrected_volatile": 1},
    "node.remapped_rows": {"remapped_rows": rows(pending=True)},
    "node.recovery_action": {"recovery_action": "gpu_reset"},
    "node.clocks": {"clock_event_reasons": ["hw_slowdown"]},
    "node.temperature": {"temperature_c": LIMIT},
    "node.processes": {"used": FAIL_MIB},
}
REPORT = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H200_INFO,) * 3)


@pytest.mark.parametrize("sick_index", [0, 1, 2], ids=["first", "second", "third"])
@pytest.mark.parametrize("check", sorted(SICK))
def test_each_gpu_of_the_node_is_judged_on_its_own_readings(check: str, sick_index: int) -> None:
    gpus = tuple(health(i, **(SICK[check] if i == sick_index else {})) for i in range(3))
    got = node_findings(gpus, None, REPORT, T, xids=XidLog, uptime_s=None, xid_window_s=None)
    assert {(f.gpu, f.status) for f in got if f.check == check} == {
        (i, "fail" if i == sick_index else "pass") for i in range(3)
    }
    assert verdict_of(got) == "FAIL"


def test_a_narrow_link_on_the_last_gpu_warns_for_that_gpu() -> None:
    gpus = (health(0), health(1), health(2, pcie_width=15))
    got = node_findings(gpus, None, REPORT, T, xids=XidLog, uptime_s=None, xid_window_s=None)
    assert [(f.gpu, f.status) for f in got if f.check == "node.pcie"] == [
        (0, "pass"),
        (1, "pass"),
        (2, "warn"),
    ]
    assert verdict_of(got) == "WARN"


@pytest.mark.parametrize(
    ("gpus", "why", "probe_gpus", "want"),
    [
        pytest.param((), None, (), [("node.nvml", "skip")], id="no-gpu-anywhere"),
        pytest.param((), "no NVML", (H200_INFO,), [("node.nvml", "warn")], id="gpus-nvml-cannot-read"),
        pytest.param((), None, (H200_INFO,), [("node.nvml", "warn")], id="nvml-lists-none-probe-some"),
        pytest.param((health(0),), "broken", (H200_INFO,), [("node.nvml", "warn")], id="why-wins-over-gpus"),
    ],
)
def test_the_node_without_nvml_rule(gpus: Any, why: str | None, probe_gpus: Any, want: list[Any]) -> None:
    report = replace(REPORT, gpus=probe_gpus)
    got = node_findings(gpus, why, report, T, xids=XidLog, uptime_s=None, xid_window_s=None)
    assert [(f.check, f.status) for f in got] == want


# --------------------------------------------------------------------------- Xids


def xid(number: int, at: float | None, bus: int = 0x18, form: str = "0000:{:02x}:00") -> KernelXid:
    return KernelXid(xid=number, pci=form.format(bus), seconds_since_boot=at, line="")


@pytest.mark.parametrize(
    ("at", "uptime", "window", "kept"),
    [
        pytest.param(940.0, 1000.0, 60.0, True, id="at-window-edge"),
        pytest.param(939.9, 1000.0, 60.0, False, id="just-before-window"),
        pytest.param(999.0, 1000.0, 60.0, True, id="inside-window"),
        pytest.param(None, 1000.0, 60.0, True, id="untimed-kept"),
        pytest.param(1.0, 1000.0, None, True, id="no-window"),
        pytest.param(1.0, None, 60.0, True, id="no-uptime"),
        pytest.param(0.0, 60.0, 60.0, True, id="window-is-uptime"),
        pytest.param(0.0, 60.5, 60.0, False, id="window-shorter-than-uptime"),
        pytest.param(500.0, 1000.0, 0.0, False, id="window-zero"),
        pytest.param(500.0, 0.0, 60.0, True, id="uptime-zero"),
    ],
)
def test_the_xid_window_rule(
    at: float | None, uptime: float | None, window: float | None, kept: bool
) -> None:
    got = judge_xids(XidLog(xids=(xid(79, at),)), (), uptime_s=uptime, window_s=window)
    assert [f.status for f in got] == (["fail"] if kept else ["pass"])
    assert got[0].value == ({"xid": 79, "count": 1, "pci": ["0000:18:00"]} if kept else [])
    span = "since boot" if window is None or uptime is None else f"in the last {window:.0f} s"
    assert got[0].check == "node.xid" and span in got[0].message


@pytest.mark.parametrize(
    ("buses", "gpu"),
    [
        pytest.param((0x18,), 0, id="first-gpu"),
        pytest.param((0x19,), 1, id="second-gpu"),
        pytest.param((0x1A,), 2, id="third-gpu"),
        pytest.param((0x19, 0x19), 1, id="twice-on-one"),
        pytest.param((0x18, 0x1A), None, id="two-gpus"),
        pytest.param((0x77,), None, id="no-such-gpu"),
        pytest.param((0x18, 0x77), None, id="known-and-unknown-bus"),
        pytest.param((0x1A, 0x18), None, id="two-gpus-last-first"),
    ],
)
def test_an_xid_is_put_on_the_gpu_of_its_bus(buses: tuple[int, ...], gpu: int | None) -> None:
    gpus = (health(0), health(1), health(2))
    log = XidLog(xids=tuple(xid(48, 10.0 + n, bus) for n, bus in enumerate(buses)))
    (got,) = judge_xids(log, gpus, uptime_s=None, window_s=None)
    assert (got.check, got.gpu, got.value["count"]) == ("node.xid", gpu, len(buses))
    assert got.value["pci"] == sorted({f"0000:{b:02x}:00" for b in buses})
    known = sorted({b - 0x18 for b in buses if b - 0x18 in (0, 1, 2)})
    shown = ["GPU ?"] * (len(set(buses)) > len(known)) + [f"GPU {g}" for g in known]
    assert f"since boot on {', '.join(shown)}:" in got.message


@pytest.mark.parametrize(
    ("xids", "verdict"),
    [
        pytest.param((13, 45), "PASS", id="notes-only"),
        pytest.param((13, 63), "WARN", id="note-then-warn"),
        pytest.param((92, 13, 31), "WARN", id="warn-first"),
        pytest.param((13, 43, 79), "FAIL", id="fail-last"),
        pytest.param((63, 48), "FAIL", id="warn-then-fail"),
    ],
)
def test_the_xid_statuses_make_the_verdict(xids: tuple[int, ...], verdict: str) -> None:
    log = XidLog(xids=tuple(xid(n, 10.0 + i) for i, n in enumerate(xids)))
    got = judge_xids(log, (health(0),), uptime_s=None, window_s=None)
    assert verdict_of(got) == verdict
    assert all(bool(f.remedy) == (f.status != "note") for f in got)


def test_an_unreadable_kernel_log_is_a_note() -> None:
    (got,) = judge_xids(XidLog(unreadable="no permission"), (), uptime_s=None, window_s=None)
    assert (got.check, got.status, got.message) == ("node.xid", "note", "no permission")


# --------------------------------------------------------------------------- bands, verdict, exit code


@pytest.mark.parametrize(
    ("measured", "reference", "status"),
    [
        pytest.param(100.0, 100.0, "pass", id="equal"),
        pytest.param(90.0, 100.0, "pass", id="at-warn"),
        pytest.param(89.99, 100.0, "warn", id="below-warn"),
        pytest.param(70.0, 100.0, "warn", id="at-fail"),
        pytest.param(69.99, 100.0, "fail", id="below-fail"),
        pytest.param(0.0, 100.0, "fail", id="zero"),
        pytest.param(150.0, 100.0, "pass", id="faster"),
        pytest.param(50.0, 0.0, "skip", id="zero-reference"),
        pytest.param(50.0, -1.0, "skip", id="negative-reference"),
    ],
)
def test_the_band_rule(measured: float, reference: float, status: str) -> None:
    assert Band(warn_below=0.9, fail_below=0.7).judge(measured, reference) == status


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        pytest.param((), "PASS", id="nothing"),
        pytest.param(("pass", "skip", "note"), "PASS", id="skip-and-note"),
        pytest.param(("skip",), "PASS", id="skip-alone"),
        pytest.param(("pass", "pass", "warn"), "WARN", id="warn-last"),
        pytest.param(("warn", "pass"), "WARN", id="warn-first"),
        pytest.param(("pass", "warn", "note", "fail"), "FAIL", id="fail-last"),
        pytest.param(("fail", "warn"), "FAIL", id="fail-first"),
        pytest.param(("note", "skip", "fail"), "FAIL", id="fail-among-notes"),
    ],
)
def test_the_verdict_rule_and_its_exit_code(statuses: tuple[str, ...], verdict: str) -> None:
    findings = [Finding(check=f"c{i}", status=s, message="m") for i, s in enumerate(statuses)]  # type: ignore[arg-type]
    assert verdict_of(findings) == verdict
    assert EXIT_CODES[verdict] == {"PASS": 0, "WARN": 1, "FAIL": 2}[verdict]
    reason = verdict_reason(findings)
    if verdict != "PASS":
        assert reason.count(": m") == sum(1 for s in statuses if s == verdict.lower())


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        pytest.param(T.time_target_s, [], id="at-target"),
        pytest.param(T.time_target_s + 0.1, ["note"], id="past-target"),
        pytest.param(T.time_limit_s - 10.1, ["note"], id="before-limit-band"),
        pytest.param(T.time_limit_s - 10, ["warn"], id="at-limit-band"),
        pytest.param(T.time_limit_s + 5, ["warn"], id="past-limit"),
        pytest.param(0.5, [], id="fast"),
    ],
)
def test_the_time_rule(seconds: float, want: list[str]) -> None:
    assert [f.status for f in time_findings(seconds, T)] == want


def report_doc(verdict: str, exit_code: int, statuses: tuple[str, ...]) -> dict[str, Any]:
    return {
        "kind": "envbuilder-check", "schema_version": 1, "verdict": verdict, "exit_code": exit_code,
        "reason": "r", "image": "i", "image_id": None, "started": "s", "node": {}, "certificate": None,
        "findings": [{"check": "c", "status": s, "gpu": None, "message": "m", "remedy": "", "value": None}
                     for s in statuses],
        "image_run": None, "timings": {"total_s": 1.0}, "limits": {},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("verdict", "exit_code", "statuses", "valid"),
    [
        pytest.param("PASS", 0, ("pass",), True, id="pass"),
        pytest.param("WARN", 1, ("pass", "warn"), True, id="warn"),
        pytest.param("FAIL", 2, ("warn", "fail"), True, id="fail"),
        pytest.param("FAIL", 1, ("fail",), False, id="fail-with-exit-1"),
        pytest.param("WARN", 2, ("warn",), False, id="warn-with-exit-2"),
        pytest.param("PASS", 0, ("pass", "fail"), False, id="pass-hiding-a-fail"),
        pytest.param("WARN", 1, ("fail", "warn"), False, id="warn-hiding-a-fail"),
        pytest.param("PASS", 0, ("pass", "bogus"), False, id="unknown-status"),
    ],
)
def test_the_report_documents_verdict_rule(
    verdict: str, exit_code: int, statuses: tuple[str, ...], valid: bool
) -> None:
    assert (validate_report(report_doc(verdict, exit_code, statuses)) == []) is valid


# --------------------------------------------------------------------------- the image's figures

OTHER_BASELINE = {
    **BASELINE,
    "metrics": {"device_name": "NVIDIA H100", "bf16_gemm_tflops": 400.0, "copy_gbs": 2000.0},
}


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        pytest.param([BASELINE], {"NVIDIA H200": {"bf16_gemm_tflops": 700.0, "copy_gbs": 4000.0}}, id="one"),
        pytest.param([OTHER_BASELINE, BASELINE], {"NVIDIA H100", "NVIDIA H200"}, id="second-model"),
        pytest.param(
            [MULTI, {**BASELINE, "status": "skip"}, BASELINE], {"NVIDIA H200"}, id="after-other-steps",
        ),
        pytest.param([{**BASELINE, "status": "fail"}], {}, id="failed-step"),
        pytest.param([{**BASELINE, "name": "gate_baseline_x"}], {}, id="other-step"),
        pytest.param(
            [{**BASELINE, "metrics": {**BASELINE["metrics"], "device_name": None}}], {}, id="no-model",
        ),
        pytest.param(
            [{**BASELINE, "metrics": {**BASELINE["metrics"], "copy_gbs": 0}}],
            {"NVIDIA H200": {"bf16_gemm_tflops": 700.0}}, id="zero-figure-dropped",
        ),
        pytest.param(
            [{**BASELINE, "metrics": {**BASELINE["metrics"], "bf16_gemm_tflops": "700"}}],
            {"NVIDIA H200": {"copy_gbs": 4000.0}}, id="text-figure-dropped",
        ),
        pytest.param(
            [{**BASELINE, "metrics": {"device_name": "NVIDIA H200", "bf16_gemm_tflops": True}}], {},
            id="bool-only",
        ),
    ],
)  # fmt: skip
def test_the_certified_figures_rule(steps: list[dict[str, Any]], want: Any) -> None:
    got = certified_figures(sealed(steps))
    assert (set(got) if isinstance(want, set) else got) == want


@pytest.mark.parametrize(
    ("world", "nbytes", "want"),
    [
        pytest.param(2, 1 << 28, 300.0, id="first-row"),
        pytest.param(2, 1 << 30, 330.0, id="second-row"),
        pytest.param(2, (1 << 28) + 1, None, id="other-size"),
        pytest.param(4, 1 << 28, None, id="other-gpu-count"),
        pytest.param(1, 1 << 28, None, id="one-gpu"),
    ],
)
def test_the_certified_busbw_rule(world: int, nbytes: int, want: float | None) -> None:
    assert certified_busbw(sealed([BASELINE, MULTI]), world, nbytes) == want


def test_the_busbw_is_the_multi_gpu_step_of_the_same_gpu_count_when_several_are_recorded() -> None:
    four = {**MULTI, "metrics": {"world_size": 4, "sweep": [{"bytes": 1 << 28, "busbw_gbs": 200.0}]}}
    for steps in ([four, MULTI], [MULTI, four]):
        cert = sealed(steps)
        assert (certified_busbw(cert, 2, 1 << 28), certified_busbw(cert, 4, 1 << 28)) == (300.0, 200.0)


@pytest.mark.parametrize(
    ("gpu1", "status1"),
    [
        pytest.param(gpu_step(1, 700.0, 4000.0), "pass", id="second-equal"),
        pytest.param(gpu_step(1, 629.0, 4000.0), "warn", id="second-below-warn"),
        pytest.param(gpu_step(1, 489.0, 4000.0), "fail", id="second-below-fail"),
        pytest.param(gpu_step(1, 400.0, 2000.0, name="NVIDIA H100"), "pass", id="second-own-model"),
        pytest.param(gpu_step(1, 279.0, 2000.0, name="NVIDIA H100"), "fail", id="second-own-model-slow"),
        pytest.param(gpu_step(1, 10.0, 10.0, name="NVIDIA B200"), "skip", id="second-unrecorded-model"),
    ],
)
def test_each_gpus_figure_is_judged_against_its_own_models(gpu1: dict[str, Any], status1: str) -> None:
    cert = sealed([BASELINE, OTHER_BASELINE])
    doc = gate_doc(gpu_step(0, 700.0, 4000.0), gpu1, gpu_step(2, 700.0, 4000.0))
    got = judge_gate(run_of(doc), cert, T)
    gemm = {f.gpu: f.status for f in got if f.check == "image.gemm"}
    assert gemm == {0: "pass", 1: status1, 2: "pass"}
    (second,) = [f for f in got if f.check == "image.gemm" and f.gpu == 1]
    measured = gpu1["metrics"]["bf16_gemm_tflops"]
    assert second.value["measured"] == measured
    assert bool(second.remedy) == (status1 in ("warn", "fail"))
    below = {"warn": f"(below {T.gemm.warn_below:.0%})", "fail": f"(below {T.gemm.fail_below:.0%})"}
    for band, words in below.items():
        assert (words in second.message) == (status1 == band), second.message


@pytest.mark.parametrize(
    ("metrics", "status"),
    [
        pytest.param({"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 300.0}, "pass", id="equal"),
        pytest.param({"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 254.0}, "warn", id="below-warn"),
        pytest.param({"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 149.0}, "fail", id="below-fail"),
        pytest.param({"world_size": 2, "bytes": 1 << 30, "busbw_gbs": 280.0}, "warn", id="the-sizes-own-row"),
        pytest.param({"world_size": 4, "bytes": 1 << 28, "busbw_gbs": 1.0}, "skip", id="other-gpu-count"),
        pytest.param({"world_size": "2", "bytes": 1 << 28, "busbw_gbs": 1.0}, "skip", id="world-as-text"),
        pytest.param(
            {"world_size": 2, "bytes": float(1 << 28), "busbw_gbs": 1.0}, "skip", id="bytes-as-float"
        ),
        pytest.param({"world_size": 2, "bytes": 1 << 28}, "skip", id="nothing-measured"),
    ],
)
def test_the_allreduce_rule(metrics: dict[str, Any], status: str) -> None:
    step = {"name": "allreduce_loopback", "status": "pass", "reason": "", "seconds": 1.0, "metrics": metrics}
    (got,) = judge_gate(run_of(gate_doc(step)), sealed([BASELINE, MULTI]), T)
    assert (got.check, got.status) == ("image.allreduce", status)


@pytest.mark.parametrize(
    ("step", "check", "status"),
    [
        pytest.param({"name": "framework", "status": "fail", "reason": "no torch"}, "image.framework", "fail",
                     id="framework-fails"),
        pytest.param({"name": "cuda_smoke", "status": "fail", "reason": "no GPU"}, "image.cuda_smoke", "fail",
                     id="smoke-fails"),
        pytest.param({"name": "cuda_smoke", "status": "skip", "reason": "cpu"}, "image.cuda_smoke", "skip",
                     id="smoke-skipped"),
        pytest.param({"name": "gpu2", "status": "fail", "reason": "ECC"}, "image.cuda_smoke", "fail",
                     id="third-gpu-fails"),
        pytest.param({"name": "allreduce_loopback", "status": "fail", "reason": "nccl"}, "image.allreduce",
                     "fail", id="allreduce-fails"),
        pytest.param({"name": "allreduce_loopback", "status": "skip", "reason": "1 GPU"}, "image.allreduce",
                     "skip", id="allreduce-skipped"),
        pytest.param({"name": "watchdog", "status": "fail", "reason": "hung"}, "image.run", "fail",
                     id="watchdog"),
    ],
)  # fmt: skip
def test_the_short_mode_step_rules(step: dict[str, Any], check: str, status: str) -> None:
    got = judge_gate(run_of(gate_doc(step)), sealed([BASELINE]), T)
    assert [(f.check, f.status) for f in got] == [(check, status)]
    assert got[0].message == step["reason"]


def test_a_short_mode_without_a_document_fails() -> None:
    (got,) = judge_gate(run_of(None), sealed([BASELINE]), T)
    assert (got.check, got.status) == ("image.run", "fail")


@pytest.mark.parametrize("status", ["skip", "error", None, ""], ids=["skip", "error", "none", "empty"])
def test_a_gpu_step_that_did_not_pass_never_reads_as_cuda_working(status: str | None) -> None:
    """A gpuN step is judged a working GPU only when it passed: a step of any other status
    (the harness writes pass or fail; anything else is a document it did not write whole) fails
    the GPU's smoke finding, never `CUDA works, a GEMM matches the CPU` with its kernels passed."""
    step = {**gpu_step(1, 700.0, 4000.0), "status": status, "reason": None}
    got = judge_gate(run_of(gate_doc(gpu_step(0, 700.0, 4000.0), step)), sealed([BASELINE]), T)
    assert [(f.check, f.status) for f in got if f.gpu == 1] == [("image.cuda_smoke", "fail")]
    (smoke,) = [f for f in got if f.gpu == 1]
    assert smoke.message == f"the step gpu1 ended {str(status)!r} without a reason"
    assert verdict_of(got) == "FAIL"


@pytest.mark.parametrize(
    ("statuses", "verdict", "code"),
    [
        pytest.param(("pass", "skip", "note"), "PASS", 0, id="pass"),
        pytest.param(("pass", "note", "warn"), "WARN", 1, id="warn-last"),
        pytest.param(("warn", "pass", "fail", "skip"), "FAIL", 2, id="fail-third"),
        pytest.param(("skip",), "PASS", 0, id="only-skipped"),
    ],
)
def test_the_reports_verdict_and_exit_code(statuses: tuple[str, ...], verdict: str, code: int) -> None:
    findings = tuple(Finding(check=f"c{i}", status=s, message="m") for i, s in enumerate(statuses))  # type: ignore[arg-type]
    report = CheckReport(
        image="i", image_id=None, findings=findings, certificate=None, host=None, gpu_access="none",
        timings={"total_s": 1.0}, thresholds=T, started="s",
    )  # fmt: skip
    doc = report.to_dict()
    assert (report.verdict, report.exit_code) == (verdict, code)
    assert (doc["verdict"], doc["exit_code"]) == (verdict, code)
    assert validate_report(doc) == []


@pytest.mark.parametrize("form", ["0000:{:02x}:00.0", "00000000:{:02x}:00.0", "{:02x}:00.0"], ids=str)
def test_an_xid_is_put_on_its_gpu_whatever_form_its_address_takes(form: str) -> None:
    gpus = (health(0), health(1), health(2))
    (got,) = judge_xids(XidLog(xids=(xid(79, 1.0, 0x19, form),)), gpus, uptime_s=None, window_s=None)
    assert got.gpu == (None if form.startswith("{") else 1)


@pytest.mark.parametrize(
    ("number", "status"),
    [(13, "note"), (31, "note"), (43, "note"), (45, "note"), (154, "note"), (63, "warn"), (92, "warn"),
     (48, "fail"), (79, "fail"), (94, "fail"), (95, "fail"), (119, "fail"), (1, "fail")],
)  # fmt: skip
def test_each_xids_status(number: int, status: str) -> None:
    (got,) = judge_xids(XidLog(xids=(xid(number, 1.0),)), (health(0),), uptime_s=None, window_s=None)
    assert got.status == status


def test_the_xids_are_listed_by_number() -> None:
    log = XidLog(xids=tuple(xid(n, 1.0 + i) for i, n in enumerate((79, 13, 48, 13, 154, 63))))
    got = judge_xids(log, (health(0),), uptime_s=None, window_s=None)
    assert [(f.value["xid"], f.value["count"]) for f in got] == [(13, 2), (48, 1), (63, 1), (79, 1), (154, 1)]


@pytest.mark.parametrize(
    ("times", "kept"),
    [
        pytest.param((10.0, 990.0), [990.0], id="old-then-recent"),
        pytest.param((990.0, 10.0), [990.0], id="recent-then-old"),
        pytest.param((None, 10.0, 995.0), [None, 995.0], id="untimed-first"),
        pytest.param((10.0, None), [None], id="untimed-second"),
    ],
)
def test_the_window_judges_each_xid_by_its_own_time(
    times: tuple[float | None, ...], kept: list[float | None]
) -> None:
    log = XidLog(xids=tuple(xid(79, at) for at in times))
    (got,) = judge_xids(log, (health(0),), uptime_s=1000.0, window_s=60.0)
    assert got.value["count"] == len(kept)


ROW_256M = {"bytes": 1 << 28, "busbw_gbs": 1.5}


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        pytest.param([{**MULTI, "name": "multi_gpu_x"}, MULTI], 300.0, id="other-step-first"),
        pytest.param([{**MULTI, "name": "multi_gpu_x"}], None, id="other-step-only"),
        pytest.param(
            [{**MULTI, "metrics": {"world_size": 2, "sweep": ["x", None, ROW_256M]}}], 1.5,
            id="rows-that-are-no-mapping",
        ),
        pytest.param([{**MULTI, "metrics": {"world_size": 2, "sweep": "x"}}], None, id="sweep-no-list"),
        pytest.param(
            [{**MULTI, "metrics": {"world_size": 2, "sweep": [{"bytes": 1 << 28, "busbw_gbs": 0}]}}], None,
            id="zero-busbw",
        ),
    ],
)  # fmt: skip
def test_the_certified_busbw_is_the_multi_gpu_steps_row(
    steps: list[dict[str, Any]], want: float | None
) -> None:
    assert certified_busbw(sealed(steps), 2, 1 << 28) == want


@pytest.mark.parametrize(
    ("measured", "reference"),
    [(123.456, 700.0), (699.994, 700.0), (0.005, 700.0), (700.0, 654.321)],
    ids=["three-decimals", "just-below", "tiny", "odd-reference"],
)
def test_a_figures_value_is_the_measured_and_certified_figures_to_two_decimals(
    measured: float, reference: float
) -> None:
    baseline = {**BASELINE, "metrics": {**BASELINE["metrics"], "bf16_gemm_tflops": reference}}
    got = judge_gate(run_of(gate_doc(gpu_step(0, measured, 4000.0))), sealed([baseline]), T)
    (gemm,) = [f for f in got if f.check == "image.gemm"]
    assert gemm.value == {
        "measured": round(measured, 2),
        "certified": round(reference, 2),
        "fraction": round(measured / reference, 3),
    }


@pytest.mark.parametrize(
    "figure",
    [True, "700", float("nan"), float("inf"), None, [700.0]],
    ids=["bool", "text", "nan", "inf", "null", "list"],
)
@pytest.mark.parametrize("key", ["bf16_gemm_tflops", "copy_gbs"])
def test_a_figure_the_image_gives_that_is_no_finite_number_is_not_measured(key: str, figure: Any) -> None:
    """The image's gate.json is read, not trusted: a figure that is no finite number is a skip
    ("not measured"), never compared (NaN < x is false: it would pass every band)."""
    step = gpu_step(0, 700.0, 4000.0)
    step["metrics"] = {**step["metrics"], key: figure}
    got = judge_gate(run_of(gate_doc(step)), sealed([BASELINE]), T)
    check = {"bf16_gemm_tflops": "image.gemm", "copy_gbs": "image.copy"}[key]
    (judged,) = [f for f in got if f.check == check]
    assert judged.status == "skip" and judged.message.startswith("no ")


@pytest.mark.parametrize("figure", [True, "300", float("nan"), None], ids=["bool", "text", "nan", "null"])
def test_an_allreduce_figure_that_is_no_finite_number_is_not_measured(figure: Any) -> None:
    metrics = {"world_size": 2, "bytes": 1 << 28, "busbw_gbs": figure}
    step = {"name": "allreduce_loopback", "status": "pass", "reason": "", "seconds": 1.0, "metrics": metrics}
    (got,) = judge_gate(run_of(gate_doc(step)), sealed([BASELINE, MULTI]), T)
    assert (got.check, got.status) == ("image.allreduce", "skip") and got.message.startswith("no ")


def test_every_refusal_is_a_failed_certificate_finding_with_its_words() -> None:
    refusals = [
        Refusal(reason="driver-too-old", message="m1", hint="h1"),
        Refusal(reason="gpu-model", message="m2", hint="h2"),
        Refusal(reason="require-cuda", message="m3", hint="h3"),
    ]
    got = summarise_refusals(refusals)
    assert [(f.check, f.status, f.message, f.remedy, f.value) for f in got] == [
        (f"certificate.{r.reason}", "fail", r.message, r.hint, r.reason) for r in refusals
    ]


def test_the_steps_after_a_failed_allreduce_are_judged_too() -> None:
    failed = {"name": "allreduce_loopback", "status": "fail", "reason": "nccl", "metrics": {}}
    hung = {"name": "watchdog", "status": "fail", "reason": "hung"}
    got = judge_gate(run_of(gate_doc(failed, hung)), sealed([BASELINE]), T)
    assert [(f.check, f.status) for f in got] == [("image.allreduce", "fail"), ("image.run", "fail")]


def test_a_passing_gpu_steps_findings_carry_what_the_image_said() -> None:
    framework = {"name": "framework", "status": "pass", "reason": "",
                 "metrics": {"framework": "torch", "version": "2.11.0", "cuda_build": "13.0"}}  # fmt: skip
    slow_copy = gpu_step(0, 700.0, 3000.0)  # 75% of the certified 4000 GB/s
    got = {f.check: f for f in judge_gate(run_of(gate_doc(framework, slow_copy)), sealed([BASELINE]), T)}
    assert (got["image.framework"].status, got["image.framework"].value) == ("pass", "2.11.0")
    assert got["image.framework"].message == "torch 2.11.0 imports (CUDA build 13.0)"
    assert got["image.kernels"].value == "SASS sm_90"
    assert (got["image.copy"].status, got["image.copy"].value["certified"]) == ("warn", 4000.0)


# --------------------------------------------------------------------------- the GPUs the image saw

TORCH_GPU: dict[str, Any] = {"framework": "torch", "gpu_path": True}
SMOKE_FAILED = {"name": "cuda_smoke", "status": "fail", "reason": "torch.cuda.is_available() is False"}
SMOKE_SKIPPED = {"name": "cuda_smoke", "status": "skip", "reason": "CPU path: no GPU was given to this check"}


def gpus(n: int) -> list[dict[str, Any]]:
    return [gpu_step(i, 700.0, 4000.0) for i in range(n)]


@pytest.mark.parametrize(
    ("facts", "steps", "handed_in", "status", "words"),
    [
        pytest.param({**TORCH_GPU, "device_count": 2}, gpus(2), 2, "pass", "saw and tested all 2 GPU(s)",
                     id="all-seen"),
        pytest.param({**TORCH_GPU, "device_count": 1, "cuda_visible_devices": "0"}, gpus(1), 8, "fail",
                     "the image saw 1 of 8 GPUs handed in (CUDA_VISIBLE_DEVICES=0 in the image)",
                     id="env-hides-seven"),
        pytest.param({**TORCH_GPU, "device_count": 7}, gpus(7), 8, "fail", "saw 7 of 8 GPUs", id="one-short"),
        pytest.param({**TORCH_GPU, "device_count": 0}, [SMOKE_FAILED], 1, "fail", "saw 0 of 1 GPUs",
                     id="saw-none"),
        pytest.param({**TORCH_GPU, "gpu_path": False}, [SMOKE_SKIPPED], 2, "fail",
                     "saw 0 of 2 GPUs handed in (it found no GPU device node", id="took-the-cpu-path"),
        pytest.param({**TORCH_GPU, "gpu_path": False, "device_count": 2}, gpus(2), 2, "fail", "saw 0 of 2",
                     id="cpu-path-whatever-the-count"),
        pytest.param(TORCH_GPU, gpus(1), 1, "fail", "did not say how many GPUs it saw", id="count-missing"),
        pytest.param({**TORCH_GPU, "device_count": True}, gpus(1), 1, "fail", "device_count True",
                     id="count-bool"),
        pytest.param({**TORCH_GPU, "device_count": "1"}, gpus(1), 1, "fail", "device_count '1'",
                     id="count-text"),
        pytest.param({**TORCH_GPU, "device_count": 1.0}, gpus(1), 1, "fail", "device_count 1.0",
                     id="count-float"),
        pytest.param({**TORCH_GPU, "device_count": -1}, gpus(1), 1, "fail", "device_count -1",
                     id="count-negative"),
        pytest.param({**TORCH_GPU, "device_count": None}, gpus(1), 1, "fail", "did not say", id="count-null"),
        pytest.param([], gpus(1), 1, "fail", "did not say", id="facts-not-an-object"),
        pytest.param({"framework": "jax", "gpu_path": True, "measured": False}, [SMOKE_SKIPPED], 4, "warn",
                     "none of the 4 GPU(s) handed in", id="not-torch"),
        pytest.param({"framework": "jax", "gpu_path": True}, [SMOKE_SKIPPED], 4, "fail", "did not say",
                     id="not-torch-measured-unsaid"),
        pytest.param({**TORCH_GPU, "measured": True}, gpus(1), 1, "fail", "did not say",
                     id="measured-true-is-no-count"),
        pytest.param({"gpu_path": True}, [SMOKE_SKIPPED], 4, "fail", "did not say", id="framework-unsaid"),
        pytest.param({**TORCH_GPU, "device_count": 2}, gpus(1), 2, "fail", "no step for GPU 1 of the 2",
                     id="a-step-missing"),
        pytest.param({**TORCH_GPU, "device_count": 3}, [gpus(3)[0], gpus(3)[2]], 3, "fail",
                     "no step for GPU 1", id="a-middle-step-missing"),
        pytest.param({**TORCH_GPU, "device_count": 1}, [{**gpu_step(0, 1.0, 1.0), "name": "gpu\u0660"}], 1,
                     "fail", "no step for GPU 0", id="step-of-no-ascii-index"),
        pytest.param({**TORCH_GPU, "device_count": 2}, [gpu_step(0, 700.0, 4000.0), {**SMOKE_FAILED,
                     "name": "gpu1"}], 2, "pass", "all 2", id="a-failed-step-is-a-step"),
        pytest.param({**TORCH_GPU, "device_count": 2}, gpus(2), 1, "pass", "(it saw 2)", id="saw-more"),
    ],
)  # fmt: skip
def test_the_image_must_see_and_step_on_every_gpu_handed_in(
    facts: Any, steps: list[dict[str, Any]], handed_in: int, status: str, words: str
) -> None:
    run = run_of(gate_doc(*steps, facts=facts))
    got = [f for f in judge_gate(run, sealed([BASELINE]), T, handed_in=handed_in) if f.check == "image.gpus"]
    assert [(f.status, f.gpu) for f in got] == [(status, None)], got
    assert words in got[0].message, got[0].message
    assert bool(got[0].remedy) == (status != "pass")
    if status == "fail" and "of" in words and "saw" in words:
        assert "CUDA_VISIBLE_DEVICES" in got[0].remedy and "NVIDIA_VISIBLE_DEVICES" in got[0].remedy
    assert verdict_of(got) == {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}[status]


@pytest.mark.parametrize("handed_in", [None, 0])
def test_a_run_given_no_gpu_is_not_judged_on_gpus(handed_in: int | None) -> None:
    """The CPU path (--gpu-access none, a node without GPUs): no image.gpus finding at all."""
    doc = gate_doc({"name": "framework", "status": "pass", "reason": "", "metrics": {}}, SMOKE_SKIPPED,
                   facts={"framework": "torch", "gpu_path": False})  # fmt: skip
    got = judge_gate(run_of(doc), sealed([BASELINE]), T, handed_in=handed_in)
    assert "image.gpus" not in {f.check for f in got}
    assert verdict_of(got) == "PASS"


def test_no_result_is_judged_once_not_again_on_its_gpus() -> None:
    none = GateRun(doc=None, exit_code=124, stderr_tail="killed", seconds=40.0)
    assert [f.check for f in judge_gate(none, None, T, handed_in=8)] == ["image.run"]


@pytest.mark.parametrize(
    ("access", "probed", "nvml", "want"),
    [
        pytest.param("none", 8, 8, None, id="cpu-path"),
        pytest.param("devices", 8, 8, 8, id="both-list-all"),
        pytest.param("toolkit", 8, 0, 8, id="nvml-unreadable"),
        pytest.param("cdi", 1, 2, 2, id="nvml-lists-more"),
        pytest.param("devices", 0, 0, 0, id="none-listed"),
    ],
)
def test_the_gpus_handed_in_are_every_gpu_of_the_node(
    access: str, probed: int, nvml: int, want: int | None
) -> None:
    report = HostReport(source="nvml", driver="580.95.05", cuda_driver="13.0", gpus=(H200_INFO,) * probed)
    assert gpus_handed_in(access, report, [health(i) for i in range(nvml)]) == want


def test_an_image_that_hides_gpus_fails_the_whole_check_with_the_reason() -> None:
    """End to end: the probe lists 2 GPUs, the image's ENV sets CUDA_VISIBLE_DEVICES=0, so its short
    mode sees 1 and measures GPU 0 only: FAIL, not a PASS on a GPU nobody tested."""
    from test_check import DEVICES, engine_answering, healthy

    def check(count: int, probed: int, nvml: Any = healthy) -> Any:
        facts = {**TORCH_GPU, "device_count": count, "cuda_visible_devices": "0"}
        eng = engine_answering(lambda spec: gate_doc(*gpus(count), facts=facts))
        return check_image(
            "team/train:1", find_certificate=lambda info: [sealed([BASELINE])], eng=eng,
            probe=lambda: HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0",
                                     gpus=(H200_INFO,) * probed),
            access_modes=lambda daemon: (DEVICES,), health=nvml, xids=XidLog,
        )  # fmt: skip

    hid = check(1, 2)
    assert (hid.verdict, hid.exit_code) == ("FAIL", 2)
    reason = hid.to_dict()["reason"]
    assert "the image saw 1 of 2 GPUs handed in (CUDA_VISIBLE_DEVICES=0 in the image)" in reason
    assert validate_report(hid.to_dict()) == []
    assert check(2, 2).verdict == "PASS"
    assert check(1, 0).verdict == "PASS"  # the probe lists none, NVML one: one handed in, one seen
    unknown = check(1, 0, nvml=lambda: ((), "NVML: gone"))
    (skip,) = [f for f in unknown.findings if f.check == "image.gpus"]
    assert skip.status == "skip" and "not known" in skip.message


@pytest.mark.parametrize(("mig", "verdict"), [(True, "PASS"), (False, "FAIL")])
def test_a_mig_node_is_not_held_to_its_gpu_count(mig: bool, verdict: str) -> None:
    """A node whose 2 GPUs are in MIG mode: the image's CUDA enumerates one MIG device, so its
    count of 1 is no fault of the image: image.gpus is skipped with the reason, not a FAIL that
    would drain every MIG node. The same count with MIG off still fails."""
    from test_check import DEVICES, engine_answering

    eng = engine_answering(lambda spec: gate_doc(*gpus(1), facts={**TORCH_GPU, "device_count": 1}))
    report = check_image(
        "team/train:1", find_certificate=lambda info: [sealed([BASELINE])], eng=eng,
        probe=lambda: HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0",
                                 gpus=(H200_INFO,) * 2),
        access_modes=lambda daemon: (DEVICES,),
        health=lambda: (tuple(health(i, mig_mode=mig) for i in range(2)), None), xids=XidLog,
    )  # fmt: skip
    (seen,) = [f for f in report.findings if f.check == "image.gpus"]
    assert report.verdict == verdict
    if mig:
        assert seen.status == "skip" and seen.message.startswith("GPU 0, 1 in MIG mode")
    else:
        assert seen.status == "fail" and "saw 1 of 2" in seen.message
