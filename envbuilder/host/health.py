"""The node's GPU health as NVML reports it at one moment (`read_health`), and the Xid errors the
kernel logged since boot (`kernel_xids`): what `envbuilder check` judges before a job. Reading
only; the judgement is check/'s. Each query a GPU or driver does not support is recorded as
"not supported" with NVML's words, never an error (a consumer part has no row remapper, a VM may
hide ECC). Parsing is split from I/O so tests hand in fake NVML objects and log text."""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envbuilder.harness.telemetry import decode_reasons
from envbuilder.host.probe import nvml_processes
from envbuilder.typed import ascii_int

UNSUPPORTED = "not supported"
_MIB = 1024 * 1024
# nvml.h: nvmlMemoryErrorType_t UNCORRECTED = 1, nvmlEccCounterType_t VOLATILE = 0 (since the last
# driver load) / AGGREGATE = 1 (lifetime); nvmlPageRetirementCause_t DOUBLE_BIT = 1;
# NVML_TEMPERATURE_GPU = 0; NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1; NVML_DEVICE_MIG_ENABLE = 1.
_UNCORRECTED, _VOLATILE, _AGGREGATE, _DOUBLE_BIT = 1, 0, 1, 1
_TEMP_GPU, _THRESHOLD_SLOWDOWN = 0, 1
_MIG_ENABLE = 1
# nvml.h NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (R575+; nvidia-ml-py's constant wins where it has one)
# and its values (nvmlDeviceGpuRecoveryAction_t, as nvidia-ml-py 13 names them).
FI_RECOVERY_ACTION = 230
RECOVERY_ACTIONS = {
    0: "none",
    1: "gpu_reset",
    2: "node_reboot",
    3: "drain_p2p",
    4: "drain_and_reset",
    5: "recover_imex_domain",
    6: "bus_reset",
    7: "system_reboot",
}
# nvmlValueType_t -> the member of the value union holding it (the union has every member: reading
# the wrong one gives the wrong bytes).
_VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
# The kernel's NVRM line: "NVRM: Xid (PCI:0000:18:00): 79, pid=..., GPU has fallen off the bus."
_XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F:.]+)\): (\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """One NVML answer: `value`, or `unsupported` with NVML's reason (the GPU or driver lacks it)."""

    value: Any = None
    unsupported: str | None = None

    @property
    def ok(self) -> bool:
        return self.unsupported is None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuHealth:
    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    queries: Mapping[str, Query] = field(default_factory=dict)
    processes: tuple[Mapping[str, Any], ...] = ()  # {"pid", "used_mib"}
    # NVML's words for each process list it could not give (compute, graphics): then `processes`
    # is what the others listed, not "none", and check's node.processes says so
    processes_unread: tuple[str, ...] = ()

    def get(self, name: str) -> Query:
        return self.queries.get(name) or Query(unsupported="not asked")

    @property
    def in_mig_mode(self) -> bool:
        """NVML says the GPU is split into MIG instances now (a GPU without MIG: False)."""
        mig = self.get("mig_mode")
        return mig.ok and mig.value is True

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "pci_bus_id": self.pci_bus_id,
            "memory_total_mib": self.memory_total_mib,
            "memory_used_mib": self.memory_used_mib,
            "processes": [dict(p) for p in self.processes],
            "processes_unread": list(self.processes_unread),
            **{k: (q.value if q.ok else {"unsupported": q.unsupported}) for k, q in self.queries.items()},
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelXid:
    xid: int
    pci: str  # as the kernel wrote it: "0000:18:00"
    seconds_since_boot: float | None
    line: str

    def to_dict(self) -> dict[str, Any]:
        return {"xid": self.xid, "pci": self.pci, "seconds_since_boot": self.seconds_since_boot}


@dataclass(frozen=True, slots=True, kw_only=True)
class XidLog:
    """The Xids of the kernel log since boot, or why it could not be read."""

    xids: tuple[KernelXid, ...] = ()
    unreadable: str | None = None


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _ask(nvml: Any, fn: str, *args: Any) -> Query:
    """One NVML call as a Query: a missing function (an older nvidia-ml-py) or any NVMLError
    (NotSupported, NoPermission, ...) is recorded as not supported, with its words."""
    call = getattr(nvml, fn, None)
    if call is None:
        return Query(unsupported=f"{fn} is not in this nvidia-ml-py")
    try:
        return Query(value=call(*args))
    except Exception as e:  # pynvml's NVMLError_* family, whatever the driver says
        return Query(
            unsupported=f"{UNSUPPORTED}: {e}" if "Not Supported" in str(e) else str(e) or type(e).__name__
        )


def _field(nvml: Any, handle: Any, field_id: int) -> Query:
    """One NVML field value (nvmlDeviceGetFieldValues) as a Query."""
    got = _ask(nvml, "nvmlDeviceGetFieldValues", handle, [field_id])
    if not got.ok:
        return got
    try:
        item = got.value[0]
        if int(getattr(item, "nvmlReturn", 0)) != 0:
            return Query(unsupported=f"{UNSUPPORTED}: field {field_id} returned NVML error {item.nvmlReturn}")
        value = item.value
        member = _VALUE_MEMBERS.get(int(getattr(item, "valueType", -1)))
        if member is None:  # no type said: the one member present (a test's plain object)
            member = next(m for m in _VALUE_MEMBERS.values() if hasattr(value, m))
        return Query(value=int(getattr(value, member)))
    except (IndexError, TypeError, ValueError, AttributeError, StopIteration) as e:
        return Query(unsupported=f"field {field_id}: unreadable answer ({e})")


def _map(q: Query, fn: Callable[[Any], Any]) -> Query:
    if not q.ok:
        return q
    try:
        return Query(value=fn(q.value))
    except (TypeError, ValueError, AttributeError, IndexError) as e:
        return Query(unsupported=f"unreadable answer ({e})")


def gpu_health(nvml: Any, index: int) -> GpuHealth:
    """What NVML says of GPU `index` now. Raises whatever nvmlDeviceGetHandleByIndex raises."""
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    name = _ask(nvml, "nvmlDeviceGetName", h)
    mem = _ask(nvml, "nvmlDeviceGetMemoryInfo", h)
    uuid = _ask(nvml, "nvmlDeviceGetUUID", h)
    pci = _ask(nvml, "nvmlDeviceGetPciInfo", h)
    reasons_fn = (
        "nvmlDeviceGetCurrentClocksEventReasons"
        if hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons")
        else "nvmlDeviceGetCurrentClocksThrottleReasons"
    )
    queries: dict[str, Query] = {
        "ecc_uncorrected_volatile": _ask(nvml, "nvmlDeviceGetTotalEccErrors", h, _UNCORRECTED, _VOLATILE),
        "ecc_uncorrected_aggregate": _ask(nvml, "nvmlDeviceGetTotalEccErrors", h, _UNCORRECTED, _AGGREGATE),
        "remapped_rows": _map(
            _ask(nvml, "nvmlDeviceGetRemappedRows", h),
            lambda v: {
                "correctable": int(v[0]),
                "uncorrectable": int(v[1]),
                "pending": bool(v[2]),
                "failure": bool(v[3]),
            },
        ),
        "retired_pages_double_bit": _map(
            _ask(nvml, "nvmlDeviceGetRetiredPages", h, _DOUBLE_BIT), lambda v: len(v)
        ),
        "retired_pages_pending": _map(
            _ask(nvml, "nvmlDeviceGetRetiredPagesPendingStatus", h), lambda v: bool(v)
        ),
        "recovery_action": _map(
            _field(nvml, h, int(getattr(nvml, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", FI_RECOVERY_ACTION))),
            lambda v: RECOVERY_ACTIONS.get(int(v), f"unknown ({v})"),
        ),
        "clock_event_reasons": _map(_ask(nvml, reasons_fn, h), lambda v: decode_reasons(int(v))),
        "pcie_gen": _ask(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", h),
        "pcie_gen_max": _ask(nvml, "nvmlDeviceGetMaxPcieLinkGeneration", h),
        "pcie_width": _ask(nvml, "nvmlDeviceGetCurrPcieLinkWidth", h),
        "pcie_width_max": _ask(nvml, "nvmlDeviceGetMaxPcieLinkWidth", h),
        "temperature_c": _ask(nvml, "nvmlDeviceGetTemperature", h, _TEMP_GPU),
        "temperature_slowdown_c": _ask(nvml, "nvmlDeviceGetTemperatureThreshold", h, _THRESHOLD_SLOWDOWN),
        # (current, pending): the mode now, and the one after the next GPU reset
        "mig_mode": _map(_ask(nvml, "nvmlDeviceGetMigMode", h), lambda v: int(v[0]) == _MIG_ENABLE),
    }
    procs, unread = nvml_processes(nvml, h)
    return GpuHealth(
        index=index,
        name=_text(name.value) if name.ok else "unknown",
        uuid=_text(uuid.value) if uuid.ok else None,
        pci_bus_id=_text(getattr(pci.value, "busId", "")) or None if pci.ok else None,
        memory_total_mib=int(mem.value.total) // _MIB if mem.ok else None,
        memory_used_mib=int(mem.value.used) // _MIB if mem.ok else None,
        queries=queries,
        processes=tuple({"pid": p.pid, "used_mib": p.used_mib} for p in procs),
        processes_unread=unread,
    )


def read_health(nvml: Any = None) -> tuple[tuple[GpuHealth, ...], str | None]:
    """Every GPU's health, or () and why NVML could not be asked (not installed, no driver).
    `nvml`: the nvidia-ml-py module (None: import pynvml). Never raises."""
    if nvml is None:
        try:
            nvml = importlib.import_module("pynvml")
        except ImportError as e:
            return (), f"nvidia-ml-py is not importable ({e})"
    try:
        nvml.nvmlInit()
    except Exception as e:
        return (), f"NVML: {e}"
    try:
        count = int(nvml.nvmlDeviceGetCount())
        return tuple(gpu_health(nvml, i) for i in range(count)), None
    except Exception as e:
        return (), f"NVML: {e}"
    finally:
        with contextlib.suppress(Exception):  # shutting down is best effort
            nvml.nvmlShutdown()


def parse_kmsg(text: str) -> tuple[KernelXid, ...]:
    """The NVRM Xid lines of a kernel log: /dev/kmsg records ("PRI,SEQ,USEC,FLAGS;MESSAGE", the
    time in microseconds since boot) or dmesg lines ("[SECONDS] MESSAGE")."""
    out = []
    for line in text.splitlines():
        m = _XID_LINE.search(line)
        if m is None:
            continue
        seconds: float | None = None
        head, semi, _ = line.partition(";")
        parts = head.split(",")
        usec = ascii_int(parts[2]) if semi and len(parts) >= 3 else None
        if usec is not None:
            seconds = usec / 1e6
        else:
            stamp = re.match(r"^\[\s*(\d+(?:\.\d+)?)\]", line)
            seconds = float(stamp.group(1)) if stamp else None
        out.append(
            KernelXid(xid=int(m.group(2)), pci=m.group(1).lower(), seconds_since_boot=seconds, line=line)
        )
    return tuple(out)


def read_kmsg(path: Path = Path("/dev/kmsg"), limit: int = 4 << 20) -> str:
    """Every record in the kernel's ring buffer now, without waiting for new ones. Raises OSError
    (no permission: kernel.dmesg_restrict and not root; no such device in a container)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    chunks, size = [], 0
    try:
        while size < limit:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break  # the end of the buffer
            except OSError as e:
                if e.errno == 32:  # EPIPE: a record was overwritten while reading; go on
                    continue
                raise
            if not rec:
                break
            chunks.append(rec)
            size += len(rec)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace")


def kernel_xids(read: Callable[[], str] = read_kmsg) -> XidLog:
    """The Xids the kernel logged since boot (its ring buffer: old ones may have rotated out)."""
    try:
        return XidLog(xids=parse_kmsg(read()))
    except OSError as e:
        return XidLog(
            unreadable=f"the kernel log is not readable here ({e.strerror or e}): run as root, "
            "or set kernel.dmesg_restrict=0"
        )


def uptime_seconds() -> float:
    """Now on the kernel log's clock: CLOCK_MONOTONIC, the seconds since boot without suspend, as
    /dev/kmsg stamps its records (on the dev VM, 2026-12-06, a record written and this clock read
    after it differed by 0.015 s). Not /proc/uptime: LXCFS serves a container its own uptime there
    (a Kubernetes init container), which would put every Xid since the host's boot inside the
    --xid-window."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def bus_key(pci: str | None) -> str | None:
    """A PCI address reduced to domain:bus:device ("00000000:18:00.0" and "0000:18:00" -> "0000:18:00")."""
    if not pci:
        return None
    parts = pci.lower().split(":")
    if len(parts) < 3:
        return None
    return f"{parts[-3][-4:]}:{parts[-2]}:{parts[-1].split('.')[0]}"
