"""Xid errors (`run --monitor`): the watcher's NVML event set, the Monitor that runs it beside its
samplers, the telemetry it writes and the diagnosis with what each Xid means. NVML is a fake that
delivers events the way pynvml does (nvmlEventSetWait_v2 returns one event or raises the timeout
error): no real Xid was observed on the H200 (docs/run.md)."""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from envbuilder.run import monitor as monitor_mod
from envbuilder.run.diagnosis import GpuSeries, diagnose, format_diagnosis
from envbuilder.run.monitor import Monitor, write_monitor_files
from envbuilder.run.xid import XID_DOCS, XIDS, XidEvent, XidWatcher, xid_events_from_json, xid_meaning


class NvmlError(Exception):
    """pynvml's NVMLError: the NVML return code in .value."""

    def __init__(self, value: int, text: str) -> None:
        super().__init__(text)
        self.value = value


class FakeNvml:
    """The pynvml calls the watcher and the Monitor make; `events` is what the driver delivers."""

    NVML_ERROR_TIMEOUT = 10
    nvmlEventTypeXidCriticalError = 0x8

    def __init__(self, gpus: int = 2, unsupported: set[int] | None = None, no_events: bool = False) -> None:
        self.gpus = gpus
        self.unsupported = unsupported or set()
        self.no_events = no_events
        self.events: queue.Queue[SimpleNamespace] = queue.Queue()
        self.registered: list[tuple[int, int]] = []
        self.waits = 0
        self.freed = 0
        self.wait_error: Exception | None = None

    def deliver(self, gpu: int, xid: int) -> None:
        self.events.put(SimpleNamespace(device=("handle", gpu), eventType=0x8, eventData=xid))

    # events
    def nvmlEventSetCreate(self) -> str:
        if self.no_events:
            raise NvmlError(3, "Not Supported")
        return "set"

    def nvmlDeviceRegisterEvents(self, handle: tuple[str, int], kind: int, event_set: str) -> None:
        if handle[1] in self.unsupported:
            raise NvmlError(3, "Not Supported")
        self.registered.append((handle[1], kind))

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> SimpleNamespace:
        self.waits += 1
        if self.wait_error is not None:
            raise self.wait_error
        try:
            return self.events.get(timeout=timeout_ms / 1000)
        except queue.Empty:
            raise NvmlError(10, "Timeout") from None

    def nvmlEventSetFree(self, event_set: str) -> None:
        self.freed += 1

    def nvmlDeviceGetIndex(self, handle: tuple[str, int]) -> int:
        return handle[1]

    # what the Monitor asks; the sampler's queries it lacks become the sampler's `unsupported`
    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, i: int) -> tuple[str, int]:
        return ("handle", i)

    def nvmlDeviceGetName(self, h: Any) -> bytes:
        return b"NVIDIA H200"

    def nvmlDeviceGetUUID(self, h: tuple[str, int]) -> str:
        return f"GPU-{h[1]}"

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> SimpleNamespace:
        return SimpleNamespace(total=143_771 * 2**20, used=2_000 * 2**20)

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> SimpleNamespace:
        return SimpleNamespace(gpu=90, memory=40)

    def nvmlShutdown(self) -> None:
        pass


def wait_for(predicate: Any, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def test_the_watcher_records_each_xid_with_its_time_gpu_and_number() -> None:
    nvml = FakeNvml()
    t0 = time.monotonic()
    w = XidWatcher(
        nvml, {0: ("handle", 0), 1: ("handle", 1)}, clock=lambda: time.monotonic() - t0, wait_ms=50
    )
    assert w.watching and nvml.registered == [(0, 0x8), (1, 0x8)] and w.unsupported == {}
    w.start()
    nvml.deliver(1, 79)
    nvml.deliver(0, 13)
    wait_for(lambda: len(w.events()) == 2)
    time.sleep(0.15)  # a few timed-out waits: not errors
    events = w.stop()
    assert [(e.gpu, e.xid) for e in events] == [(1, 79), (0, 13)]
    assert 0 <= events[0].t <= events[1].t < 10
    assert nvml.waits > 2 and nvml.freed == 1 and w.unsupported == {}


def test_stop_returns_within_the_waits_timeout() -> None:
    nvml = FakeNvml(gpus=1)
    w = XidWatcher(nvml, {0: ("handle", 0)}, clock=time.monotonic, wait_ms=100)
    w.start()
    time.sleep(0.05)
    t = time.monotonic()
    assert w.stop() == ()
    assert time.monotonic() - t < 2.0 and nvml.freed == 1


def test_no_event_support_is_said_in_unsupported_not_raised() -> None:
    none = XidWatcher(FakeNvml(no_events=True), {0: ("handle", 0)}, clock=time.monotonic)
    assert not none.watching and none.unsupported == {"xid_events": "Not Supported"}
    none.start()
    assert none.stop() == ()
    part = XidWatcher(FakeNvml(unsupported={1}), {0: ("handle", 0), 1: ("handle", 1)}, clock=time.monotonic)
    assert part.watching and part.unsupported == {"xid_events.gpu1": "Not Supported"}
    nvml = FakeNvml(unsupported={0})
    alone = XidWatcher(nvml, {0: ("handle", 0)}, clock=time.monotonic)
    assert not alone.watching and nvml.freed == 1  # nothing registered: the set is freed at once


def test_a_failing_wait_stops_the_thread_and_says_why() -> None:
    nvml = FakeNvml(gpus=1)
    nvml.wait_error = NvmlError(999, "Unknown Error")
    w = XidWatcher(nvml, {0: ("handle", 0)}, clock=time.monotonic, wait_ms=20)
    w.start()
    wait_for(lambda: "xid_events.wait" in w.unsupported)
    w.stop()
    assert nvml.waits == 1 and w.unsupported["xid_events.wait"] == "Unknown Error"  # no spinning


def test_the_monitor_watches_xids_and_writes_them_with_what_nvml_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nvml = FakeNvml(gpus=2, unsupported={1})
    monkeypatch.setattr(monitor_mod, "load_nvml", lambda: (nvml, ""))
    m = Monitor(interval=0.05)
    assert m.available
    m.start()
    nvml.deliver(0, 94)
    wait_for(lambda: m._xid is not None and len(m._xid.events()) == 1)
    time.sleep(0.2)
    gpus = m.stop()
    assert [(e.gpu, e.xid) for e in m.xids()] == [(0, 94)]
    unsupported = m.unsupported()
    assert unsupported["xid_events.gpu1"] == "Not Supported"
    assert "gpu0.power_w" in unsupported  # the sampler's queries the fake lacks, per GPU
    findings = diagnose(gpus, xids=m.xids())
    telemetry, _ = write_monitor_files(
        tmp_path, gpus, findings, {}, xids=m.xids(), unsupported=m.unsupported()
    )
    doc = json.loads(telemetry.read_text())
    assert doc["xid_events"] == [{"t": m.xids()[0].t, "gpu": 0, "xid": 94}]
    assert doc["unsupported"]["xid_events.gpu1"] == "Not Supported"
    assert doc["diagnosis"][0]["rule"] == "xid" and "Contained ECC error" in doc["diagnosis"][0]["message"]
    assert xid_events_from_json(doc["xid_events"]) == m.xids()  # a recording replays


def test_an_xid_is_diagnosed_with_what_its_number_means() -> None:
    got = diagnose([], xids=[XidEvent(t=12.34, gpu=0, xid=79)])
    assert [f.rule for f in got] == ["xid"]
    f = got[0]
    assert f.gpu == 0 and f.severity == "warn"
    assert (
        f.message
        == "NVML reported Xid 79 at 12.3 s: GPU has fallen off the bus (usually the GPU or its board)"
    )
    assert "reboot the node" in f.advice and XID_DOCS in f.advice
    assert format_diagnosis(got).startswith("[warn] GPU 0 xid: NVML reported Xid 79")


def test_repeated_xids_are_one_finding_per_gpu_and_number_in_time_order() -> None:
    xids = [XidEvent(t=5.0, gpu=1, xid=31), XidEvent(t=2.0, gpu=0, xid=13), XidEvent(t=7.0, gpu=1, xid=31)]
    got = diagnose([], xids=xids)
    assert [(f.gpu, f.message.split(":")[0]) for f in got] == [
        (0, "NVML reported Xid 13 at 2.0 s"),
        (1, "NVML reported Xid 31 2 times from 5.0 s"),
    ]
    assert "usually the job's own code" in got[1].message and "compute-sanitizer" in got[1].advice


def test_an_xid_beside_an_oom_and_the_other_rules() -> None:
    """An Xid is how the job died, judged before the sample count like the output's death lines."""
    g = GpuSeries(index=0, name="H200", series={"t": [0.0, 1.0], "util_gpu": [0.0, 50.0]})
    got = diagnose([g], xids=[XidEvent(t=1.0, gpu=0, xid=48)])
    assert [f.rule for f in got] == ["xid", "too-short"]
    assert "Double Bit ECC" in got[0].message and "nvidia-smi -r" in got[0].advice


@pytest.mark.parametrize("xid", [13, 31, 43, 45, 48, 63, 64, 74, 79, 92, 94, 95, 119, 154])
def test_the_table_covers_the_common_xids(xid: int) -> None:
    meaning = XIDS[xid]
    assert meaning.name and meaning.action and meaning.who


def test_an_xid_outside_the_table_points_at_nvidias_catalog() -> None:
    m = xid_meaning(140)
    assert "not in envbuilder's table" in m.name and XID_DOCS in m.action
