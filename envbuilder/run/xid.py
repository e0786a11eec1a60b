"""Xid errors of the GPUs a job uses (`run --monitor`), where NVML exposes them: one NVML event set
registered for `nvmlEventTypeXidCriticalError` on every sampled GPU, waited on with a short
timeout by one background thread (the harness's sampler, which reads the counters, belongs to the
harness), each event recorded with its time on the monitor's clock, its GPU and its Xid number.
Where NVML cannot deliver them (no event support in a VM or on the part, an old driver) the
reason goes to the telemetry's `unsupported`, never an error.

What the number means comes from XIDS: the common Xids of NVIDIA's Xid documentation,
"Analyzing Xid Errors with the Xid Catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html,
the catalog for Ampere and newer, with its immediate actions), and for the memory Xids (48, 63, 64,
94, 95) and the recovery action (154) NVIDIA's GPU memory error management guide
(https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/). Read 2026-12-01.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

XID_DOCS = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
EVENT_TYPE_XID = 0x8  # nvml.h nvmlEventTypeXidCriticalError
WAIT_MS = 250  # the wait's timeout: stop() returns within about this long
NVML_ERROR_TIMEOUT = 10  # nvml.h: the wait timed out with no event

Owner = Literal["application", "hardware", "driver"]
OWNERS: Mapping[Owner, str] = {
    "application": "the job's own code",
    "hardware": "the GPU or its board",
    "driver": "the driver or GPU firmware",
}


@dataclass(frozen=True, slots=True)
class XidMeaning:
    name: str  # the catalog's description
    owner: Owner  # whose fault it usually is: the job's code, the GPU/board, the driver/firmware
    action: str  # what to do (the catalog's immediate action, in words)

    @property
    def who(self) -> str:
        return OWNERS[self.owner]


XIDS: Mapping[int, XidMeaning] = {
    13: XidMeaning(
        "Graphics Engine Exception",
        "application",
        "usually the job's own kernel (an out-of-bounds access, an illegal instruction): rerun it "
        "under compute-sanitizer, then restart the job; the GPU is fine",
    ),
    31: XidMeaning(
        "GPU memory page fault",
        "application",
        "the job accessed an invalid GPU address (rarely the driver or hardware): find the kernel "
        "with compute-sanitizer or CUDA_LAUNCH_BLOCKING=1, then restart the job",
    ),
    43: XidMeaning(
        "GPU stopped processing",
        "application",
        "the job hit a software fault and its channel was reset; the GPU stays healthy: restart the job",
    ),
    45: XidMeaning(
        "Preemptive cleanup, due to previous errors",
        "driver",
        "the driver tore down the job's work because it was killed or after an earlier error: "
        "look at the Xid before this one",
    ),
    48: XidMeaning(
        "Double Bit ECC Error (uncorrectable memory error)",
        "hardware",
        "the job's data may be corrupt: reset the GPU (nvidia-smi -r), check nvidia-smi -q -d "
        "ECC,ROW_REMAPPER; if it recurs, the GPU needs service (RMA)",
    ),
    63: XidMeaning(
        "ECC page retirement or row remapping recorded",
        "hardware",
        "a faulty memory row was recorded for remapping: reset the GPU when convenient to apply it "
        "(nvidia-smi -q -d ROW_REMAPPER shows it pending)",
    ),
    64: XidMeaning(
        "ECC page retirement or row remapping recording failure",
        "hardware",
        "the faulty row could not be recorded: reset the GPU; if it recurs, contact support (RMA)",
    ),
    74: XidMeaning(
        "NVLink Error",
        "hardware",
        "an NVLink connection failed: check `nvidia-smi nvlink -s` and the error counters (`-e`), "
        "reset the GPU; if it recurs, the link or board needs service",
    ),
    79: XidMeaning(
        "GPU has fallen off the bus",
        "hardware",
        "the GPU stopped answering on PCIe: reboot the node (a GPU reset usually cannot reach it), "
        "check power, cooling and the PCIe seating; if it recurs, the GPU or slot needs service",
    ),
    92: XidMeaning(
        "High single-bit ECC error rate",
        "hardware",
        "corrected memory errors come often: watch nvidia-smi -q -d ECC, reset the GPU when "
        "convenient; if the rate stays high, contact support",
    ),
    94: XidMeaning(
        "Contained ECC error",
        "hardware",
        "an uncorrectable memory error was contained to the job that hit it: restart that job; the "
        "other jobs go on; reset the GPU when convenient so the row is remapped",
    ),
    95: XidMeaning(
        "Uncontained ECC error",
        "hardware",
        "an uncorrectable memory error could not be contained: every job on this GPU is affected; "
        "reset the GPU (nvidia-smi -r) before using it again",
    ),
    119: XidMeaning(
        "GSP RPC timeout",
        "driver",
        "the GPU System Processor's firmware stopped answering the driver: reset the GPU; if it "
        "recurs, update the driver and send nvidia-bug-report.sh output to NVIDIA",
    ),
    154: XidMeaning(
        "GPU recovery action changed",
        "driver",
        "the driver says what the GPU needs now (none, a GPU reset, a node reboot, drain P2P, drain "
        "and reset): read it in `nvidia-smi -q` (GPU Recovery Action) and do that before the next job",
    ),
}


def xid_meaning(xid: int) -> XidMeaning:
    """The table's entry, or a pointer to NVIDIA's catalog for an Xid not in it."""
    return XIDS.get(xid) or XidMeaning(
        f"Xid {xid} (not in envbuilder's table of common Xids)", "driver", f"look it up in {XID_DOCS}"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class XidEvent:
    t: float  # seconds on the monitor's clock
    gpu: int | None  # NVML index; None when NVML did not say which GPU
    xid: int

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "gpu": self.gpu, "xid": self.xid}


def xid_events_from_json(items: Sequence[Mapping[str, Any]] | None) -> tuple[XidEvent, ...]:
    """The XidEvents of a telemetry.json's `xid_events` (recordings replay through it)."""
    return tuple(
        XidEvent(t=float(e["t"]), gpu=None if e.get("gpu") is None else int(e["gpu"]), xid=int(e["xid"]))
        for e in items or ()
    )


class XidWatcher:
    """Waits for Xid critical-error events on the given GPUs ({NVML index: handle}) from start()
    to stop(). `unsupported` says why none can come, per GPU or for all."""

    def __init__(
        self, nvml: Any, handles: Mapping[int, Any], clock: Callable[[], float], wait_ms: int = WAIT_MS
    ) -> None:
        self.nvml, self.clock, self.wait_ms = nvml, clock, wait_ms
        self.unsupported: dict[str, str] = {}
        self._events: list[XidEvent] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._set: Any = None
        self._registered: dict[int, Any] = {}
        if not handles:
            return
        try:
            self._set = nvml.nvmlEventSetCreate()
        except Exception as e:  # NVMLError_NotSupported, a missing function in an old library
            self.unsupported["xid_events"] = _why(e)
            return
        kind = getattr(nvml, "nvmlEventTypeXidCriticalError", EVENT_TYPE_XID)
        for index, handle in handles.items():
            try:
                nvml.nvmlDeviceRegisterEvents(handle, kind, self._set)
                self._registered[index] = handle
            except Exception as e:
                self.unsupported[f"xid_events.gpu{index}"] = _why(e)
        if not self._registered:
            self._free()

    @property
    def watching(self) -> bool:
        return bool(self._registered)

    def start(self) -> None:
        if self.watching:
            self._thread = threading.Thread(target=self._loop, name="nvml-xid-events", daemon=True)
            self._thread.start()

    def stop(self) -> tuple[XidEvent, ...]:
        """Stop waiting (within about wait_ms), free the event set; the events seen."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.wait_ms / 1000 + 5)
        if self._thread is None or not self._thread.is_alive():  # never free a set still waited on
            self._free()
        return self.events()

    def events(self) -> tuple[XidEvent, ...]:
        with self._lock:
            return tuple(self._events)

    def _loop(self) -> None:
        timeout = getattr(self.nvml, "NVML_ERROR_TIMEOUT", NVML_ERROR_TIMEOUT)
        while not self._stop.is_set():
            try:
                data = self.nvml.nvmlEventSetWait_v2(self._set, self.wait_ms)
            except Exception as e:
                if getattr(e, "value", None) == timeout:
                    continue
                self.unsupported["xid_events.wait"] = _why(e)  # a broken wait would spin: stop
                return
            if int(getattr(data, "eventType", EVENT_TYPE_XID)) & EVENT_TYPE_XID:
                event = XidEvent(t=round(self.clock(), 3), gpu=self._index(data), xid=int(data.eventData))
                with self._lock:
                    self._events.append(event)

    def _index(self, data: Any) -> int | None:
        """The NVML index of the event's GPU: asked of NVML, else the only GPU watched."""
        try:
            return int(self.nvml.nvmlDeviceGetIndex(data.device))
        except Exception:
            return next(iter(self._registered)) if len(self._registered) == 1 else None

    def _free(self) -> None:
        if self._set is not None:
            with contextlib.suppress(Exception):  # freeing is best effort, as NVML shutdown is
                self.nvml.nvmlEventSetFree(self._set)
            self._set = None


def _why(e: Exception) -> str:
    return str(e) or type(e).__name__
