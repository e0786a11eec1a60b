"""`envbuilder check`'s node judgements (check/node.py) at their bands: each clock-event reason's
status, each Xid's (note, warn or fail) and the order they are shown in, the value and the message
each judge gives a finding (--json carries both: never swapped), and the readings NVML may lack.
The fake NVML and its helpers are test_check.py's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from test_check import KMSG, NOT_SUPPORTED, FakeNvml, Obj, T, judged

from envbuilder.check.node import judge_gpu, judge_xids
from envbuilder.harness.telemetry import CLOCK_EVENT_REASONS
from envbuilder.host.health import KernelXid, XidLog, gpu_health, parse_kmsg, read_health

# --------------------------------------------------------------------------- clock-event reasons

# Each reason NVML can give, alone beside gpu_idle (0x1), and the status it gives an idle GPU:
# hardware slowdowns fail, software caps warn, the rest (idle, clocks set, sync boost) pass.
BANDS = {
    "hw_slowdown": "fail",
    "hw_thermal_slowdown": "fail",
    "hw_power_brake_slowdown": "fail",
    "sw_thermal_slowdown": "warn",
    "sw_power_cap": "warn",
    "applications_clocks_setting": "pass",
    "sync_boost": "pass",
    "display_clock_setting": "pass",
}


@pytest.mark.parametrize("reason", sorted(BANDS))
def test_each_clock_event_reason_has_its_band(reason: str) -> None:
    bit = next(b for b, name in CLOCK_EVENT_REASONS.items() if name == reason)
    got = judged(nvmlDeviceGetCurrentClocksEventReasons=0x1 | bit)["node.clocks"]
    assert got.status == BANDS[reason]
    assert got.value == ["gpu_idle", reason]
    assert bool(got.remedy) == (BANDS[reason] != "pass")


def test_every_reason_nvml_names_is_given_a_band() -> None:
    assert set(BANDS) | {"gpu_idle"} == set(CLOCK_EVENT_REASONS.values())


def test_a_slowed_gpus_finding_carries_the_reasons_as_its_value_and_names_the_bad_ones() -> None:
    # gpu_idle, sw_power_cap and hw_slowdown: the hardware one fails, and the message names it alone
    failed = judged(nvmlDeviceGetCurrentClocksEventReasons=0x1 | 0x4 | 0x8)["node.clocks"]
    assert failed.value == ["gpu_idle", "sw_power_cap", "hw_slowdown"]
    assert failed.message == "the GPU is slowed by hardware: hw_slowdown"
    held = judged(nvmlDeviceGetCurrentClocksEventReasons=0x1 | 0x4 | 0x20)["node.clocks"]
    assert held.value == ["gpu_idle", "sw_power_cap", "sw_thermal_slowdown"]
    assert held.message == "the GPU's clocks are held down: sw_power_cap, sw_thermal_slowdown"


# --------------------------------------------------------------------------- Xids


def xid_log(*xids: int) -> XidLog:
    """One kernel line per Xid, on GPU 0's bus (0000:18:00), a second apart."""
    text = "".join(
        f"[ {10 + n}.0] NVRM: Xid (PCI:0000:18:00): {xid}, pid=1, x\n" for n, xid in enumerate(xids)
    )
    return XidLog(xids=parse_kmsg(text))


@pytest.mark.parametrize(
    ("xid", "status"),
    [
        (13, "note"), (31, "note"), (43, "note"), (45, "note"), (154, "note"),  # the job's, or cleanup
        (63, "warn"), (92, "warn"),  # recorded but recoverable
        (48, "fail"), (79, "fail"), (94, "fail"),  # the GPU, its board, the driver
    ],
)  # fmt: skip
def test_each_xid_has_its_status_and_a_note_asks_for_nothing(xid: int, status: str) -> None:
    gpus = read_health(FakeNvml())[0]
    (got,) = judge_xids(xid_log(xid), gpus, uptime_s=99.0, window_s=None)
    assert (got.check, got.status, got.gpu, got.value["xid"]) == ("node.xid", status, 0, xid)
    assert bool(got.remedy) == (status != "note")


def test_the_xids_are_shown_in_ascending_order_whatever_the_logs() -> None:
    # 48 then 13 then 79 in the log: a set of them iterates 48, 13, 79 (CPython hashes small ints
    # to themselves), the report lists them by number.
    gpus = read_health(FakeNvml())[0]
    got = judge_xids(xid_log(48, 13, 79, 48), gpus, uptime_s=99.0, window_s=None)
    assert [(x.value["xid"], x.value["count"]) for x in got] == [(13, 1), (48, 2), (79, 1)]


def test_zero_is_a_time_and_an_uptime_never_a_missing_one() -> None:
    """An Xid stamped 0.0 s after boot is before any window (only one without a time is kept);
    an uptime of 0.0 (a fresh container's /proc/uptime under LXCFS) or a window as long as the
    uptime is still a window applied, and said so."""
    at_zero = KernelXid(xid=79, pci="0000:18:00", seconds_since_boot=0.0, line="")
    untimed = replace(at_zero, xid=48, seconds_since_boot=None)
    got = judge_xids(XidLog(xids=(at_zero, untimed)), (), uptime_s=8000.0, window_s=60.0)
    assert [x.value["xid"] for x in got] == [48]
    (fresh,) = judge_xids(XidLog(), (), uptime_s=0.0, window_s=60.0)
    assert fresh.message == "no Xid in the kernel log in the last 60 s"
    whole = judge_xids(XidLog(xids=parse_kmsg(KMSG)), (), uptime_s=8000.0, window_s=8000.0)
    assert [x.value["xid"] for x in whole] == [13, 79] and "in the last 8000 s" in whole[0].message


# --------------------------------------------------------------------------- memory repair


def test_a_pending_row_remapping_carries_the_rows_as_its_value() -> None:
    got = judged(nvmlDeviceGetRemappedRows=(0, 1, 1, 0))["node.remapped_rows"]
    assert got.value == {"correctable": 0, "uncorrectable": 1, "pending": True, "failure": False}
    assert got.message == "a row remapping is pending (1 uncorrectable row(s)): not applied until a reset"


def older(**over: Any) -> dict[str, Any]:
    """A GPU without a row remapper (before Ampere): page retirement is judged."""
    return judged(nvmlDeviceGetRemappedRows=NOT_SUPPORTED, **over)


def test_retired_pages_carry_their_count_as_the_value_and_say_it() -> None:
    two = older(nvmlDeviceGetRetiredPages=["p1", "p2"], nvmlDeviceGetRetiredPagesPendingStatus=0)
    got = two["node.retired_pages"]
    assert (got.status, got.value) == ("pass", 2)
    assert got.message == "no page retirement pending (2 double-bit page(s) retired)"
    pending = older(nvmlDeviceGetRetiredPages=["p1", "p2"], nvmlDeviceGetRetiredPagesPendingStatus=1)
    assert (pending["node.retired_pages"].status, pending["node.retired_pages"].value) == ("fail", 2)


def test_retired_pages_whose_count_nvml_cannot_give_are_said_as_unknown() -> None:
    got = older(nvmlDeviceGetRetiredPages=NOT_SUPPORTED, nvmlDeviceGetRetiredPagesPendingStatus=0)
    pages = got["node.retired_pages"]
    assert (pages.status, pages.value) == ("pass", None)
    assert pages.message == "no page retirement pending (? double-bit page(s) retired)"


# --------------------------------------------------------------------------- recovery action


def test_a_recovery_action_carries_the_action_as_its_value_and_says_it() -> None:
    got = judged(nvmlDeviceGetFieldValues=[Obj(nvmlReturn=0, value=Obj(uiVal=2))])["node.recovery_action"]
    assert (got.status, got.value) == ("fail", "node_reboot")
    assert got.message == "the driver asks for a recovery action: node_reboot"
    assert got.remedy == "reboot the node, then check again"


def test_a_recovery_action_this_envbuilder_does_not_know_still_says_what_to_do() -> None:
    # a newer driver's action: the finding fails with the generic remedy, never without one
    got = judged(nvmlDeviceGetFieldValues=[Obj(nvmlReturn=0, value=Obj(uiVal=42))])["node.recovery_action"]
    assert (got.status, got.value) == ("fail", "unknown (42)")
    assert got.remedy == "read nvidia-smi -q (GPU Recovery Action) and do that"


# --------------------------------------------------------------------------- PCIe, temperature, memory


def test_a_narrow_pcie_link_fails_where_the_thresholds_say_so() -> None:
    strict = replace(T, pcie_width_fail=True)
    got = {x.check: x for x in judge_gpu(gpu_health(FakeNvml(nvmlDeviceGetCurrPcieLinkWidth=8), 0), strict)}
    assert got["node.pcie"].status == "fail" and got["node.pcie"].remedy
    assert judged(nvmlDeviceGetCurrPcieLinkWidth=8)["node.pcie"].status == "warn"  # T: false
    # set T's T39: any width below the maximum counts, not only half of it or less
    for lanes in (12, 15):
        assert judged(nvmlDeviceGetCurrPcieLinkWidth=lanes)["node.pcie"].status == "warn", lanes
    assert judged(nvmlDeviceGetCurrPcieLinkWidth=16)["node.pcie"].status == "pass"


def test_a_slowdown_threshold_nvml_gives_is_judged_as_given_never_said_to_be_missing() -> None:
    """NVML's threshold is a reading: 0 C (a board that reports nonsense) fails the idle GPU and
    says 0 C, so the odd reading is seen; "no slowdown threshold" is said only when NVML gave none."""
    got = judged(nvmlDeviceGetTemperatureThreshold=0)["node.temperature"]
    assert (got.status, got.value) == ("fail", 31)
    assert got.message == "31 C at idle, at or above the slowdown threshold (0 C)"


def test_a_gpu_whose_memory_nvml_cannot_read_is_judged_on_its_processes_alone() -> None:
    gib = 1 << 30
    got = judged(nvmlDeviceGetMemoryInfo=NOT_SUPPORTED)["node.processes"]
    assert (got.status, got.message) == ("pass", "no process holds the GPU")
    held = judged(
        nvmlDeviceGetMemoryInfo=NOT_SUPPORTED,
        nvmlDeviceGetComputeRunningProcesses=[Obj(pid=7, usedGpuMemory=2 * gib)],
    )["node.processes"]
    assert held.status == "warn"
    assert held.message == "process(es) 7 already hold 2048 MiB of its memory"  # no "of None MiB"


def test_a_process_list_nvml_refuses_is_recorded_as_unread_not_as_none() -> None:
    # NVML refusing the compute list (no permission in a container, an older driver) read as "no
    # process" and check said "no process holds the GPU"; now the reason is kept and said.
    gpu = gpu_health(FakeNvml(nvmlDeviceGetComputeRunningProcesses=NOT_SUPPORTED), 0)
    assert len(gpu.processes_unread) == 1
    assert gpu.processes_unread[0].startswith("nvmlDeviceGetComputeRunningProcesses: ")
    assert gpu.to_dict()["processes_unread"] == list(gpu.processes_unread)
    got = judged(nvmlDeviceGetComputeRunningProcesses=NOT_SUPPORTED)["node.processes"]
    assert got.status == "note"
    assert got.message.startswith(
        "NVML could not list the GPU's processes (nvmlDeviceGetComputeRunningProcesses: "
    )
    assert gpu_health(FakeNvml(), 0).processes_unread == ()  # both lists read: nothing unread


@pytest.mark.parametrize(
    "refused",
    ["nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"],
)
def test_the_probe_and_check_read_nvmls_process_lists_through_one_reader(refused: str) -> None:
    # host/probe.py (doctor, certify's GPU watch) and host/health.py (check) each read NVML's two
    # lists and modelled a refused one two ways; one reader now (probe.nvml_processes): both see
    # the same processes, and a refused list of either kind is unknown in both, never "none".
    from envbuilder.host.probe import nvml_processes, probe_nvml

    gib = 1 << 30
    both = {
        "nvmlDeviceGetComputeRunningProcesses": [Obj(pid=7, usedGpuMemory=2 * gib)],
        "nvmlDeviceGetGraphicsRunningProcesses": [Obj(pid=9, usedGpuMemory=None)],
        "nvmlSystemGetDriverVersion": "580.95.05",
        "nvmlSystemGetCudaDriverVersion": 13000,
    }
    report = probe_nvml(FakeNvml(**both))
    assert not isinstance(report, str)
    read = report.gpus[0].processes
    assert read is not None and [(p.pid, p.kind, p.used_mib) for p in read] == [
        (7, "compute", 2048),
        (9, "graphics", None),  # memory the driver hides is unknown, not 0
    ]
    assert [dict(p) for p in gpu_health(FakeNvml(**both), 0).processes] == [
        {"pid": 7, "used_mib": 2048},
        {"pid": 9, "used_mib": None},
    ]
    nvml = FakeNvml(**{**both, refused: NOT_SUPPORTED})
    listed, unread = nvml_processes(nvml, "h0")
    assert len(unread) == 1 and unread[0].startswith(f"{refused}: ")
    assert len(listed) == 1  # what the other list gave is kept
    report = probe_nvml(nvml)
    assert not isinstance(report, str) and report.gpus[0].processes is None
    assert gpu_health(nvml, 0).processes_unread == unread


def test_an_nvidia_ml_py_without_a_function_the_probe_asks_is_no_crash() -> None:
    # An older nvidia-ml-py without a function the probe asks (the CUDA version, the graphics
    # list): probe_host promises never to raise, but the AttributeError went out of probe_nvml.
    # Now an optional field stays None and a missing process list is unread, with why.
    from envbuilder.host.probe import nvml_processes, probe_host

    nvml = FakeNvml(nvmlSystemGetDriverVersion="470.82.01")
    del nvml.answers["nvmlDeviceGetGraphicsRunningProcesses"]
    listed, unread = nvml_processes(nvml, "h0")
    assert listed == () and unread == ("nvmlDeviceGetGraphicsRunningProcesses: not in this nvidia-ml-py",)
    report = probe_host(nvml=nvml, machine="x86_64")
    assert report.source == "nvml" and report.driver == "470.82.01" and report.cuda_driver is None
    assert report.gpus[0].processes is None
