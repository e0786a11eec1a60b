"""`envbuilder run --monitor`: NVML telemetry of the GPUs a job uses (the harness's sampler, one per
GPU on background threads, PCIe traffic included), the Xid errors NVML reports (xid.py), the CPU
of the job's processes (processes.py), and the files it leaves: telemetry.json, the tail of the
job's output and the diagnosis (diagnosis.py holds the rules).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.harness.telemetry import CLOCK_EVENT_REASONS, FIELDS, PCIE_FIELDS, Sampler, load_nvml
from envbuilder.run.diagnosis import Finding, GpuSeries, format_diagnosis
from envbuilder.run.processes import ProcessSampler, ProcessSeries
from envbuilder.run.xid import XidEvent, XidWatcher

# The sampler keeps its own time under this share, as in certification (docs/harness.md): NVML
# samples cost 4-10 ms on the H200 VMs, so a GPU's sampler may run less often than `interval`.
MAX_DUTY = 0.005
# GB/s per lane of each PCIe generation after line coding (PCI-SIG: 2.5/5 GT/s 8b/10b, then
# 8/16/32/64 GT/s 128b/130b; Gen6 FLIT): x16 Gen5 = 63 GB/s, perf-anchors 6d's "spec".
PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def pcie_link_gbs(generation: int | None, width: int | None) -> float | None:
    """One direction's capacity of a PCIe link, or None when either is unknown."""
    if not generation or not width or generation not in PCIE_LANE_GBS:
        return None
    return round(PCIE_LANE_GBS[generation] * width, 1)


class Monitor:
    """Samples the given GPUs (NVML indices; None = all; `gpus=False`: none) on background threads
    while a job runs, and the job's processes once `watch_processes` names them.

    NVML missing or failing is not an error: `available` (GPU telemetry) is False and `why` says
    why; the processes and the job's output are still read.
    """

    def __init__(
        self,
        indices: Sequence[int] | None = None,
        interval: float = 1.0,
        max_samples: int = 86_400,
        *,
        gpus: bool = True,
    ) -> None:
        self.interval = interval
        self.why = ""
        self._samplers: list[tuple[GpuSeries, Sampler]] = []
        self._xid: XidWatcher | None = None
        self._xids: tuple[XidEvent, ...] = ()
        self._unsupported: dict[str, str] = {}
        self._procs: ProcessSampler | None = None
        self._t0 = time.monotonic()
        self._nvml: Any = None
        if not gpus:
            self.why = "the container gets no GPU"
            return
        nvml, why = load_nvml()
        self._nvml = nvml
        if nvml is None:
            self.why = why
            return
        handles: dict[int, Any] = {}
        try:
            count = int(nvml.nvmlDeviceGetCount())
            for i in indices if indices is not None else range(count):
                if not 0 <= i < count:
                    continue
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                meta = GpuSeries(
                    index=i,
                    name=_text(nvml.nvmlDeviceGetName(h)),
                    uuid=_text(nvml.nvmlDeviceGetUUID(h)),
                    memory_total_mib=nvml.nvmlDeviceGetMemoryInfo(h).total / 2**20,
                    power_limit_w=_optional(lambda h=h: nvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000),
                    pcie_link_gbs=pcie_link_gbs(
                        _optional(lambda h=h: nvml.nvmlDeviceGetMaxPcieLinkGeneration(h)),
                        _optional(lambda h=h: nvml.nvmlDeviceGetMaxPcieLinkWidth(h)),
                    ),
                )
                sampler = Sampler(
                    nvml, h, interval=interval, max_samples=max_samples, max_duty=MAX_DUTY, pcie=True
                )
                self._samplers.append((meta, sampler))
                handles[i] = h
        except Exception as exc:  # NVMLError and friends: telemetry is best effort
            self.why = f"NVML: {exc}"
            self._samplers = []
        if not self._samplers and not self.why:
            self.why = "no GPU to sample"
        if self._samplers:
            self._xid = XidWatcher(nvml, handles, clock=self.clock)

    @property
    def available(self) -> bool:
        return bool(self._samplers)

    def clock(self) -> float:
        """The time base of every series: the first GPU sampler's, else seconds since made."""
        if self._samplers:
            return self._samplers[0][1].now()
        return time.monotonic() - self._t0

    def watch_processes(self, pids: Callable[[], Sequence[int]]) -> None:
        """Sample the CPU of the processes `pids()` lists (host PIDs) from start() on."""
        self._procs = ProcessSampler(pids=pids, clock=self.clock, interval=self.interval)

    def start(self) -> None:
        for _, s in self._samplers:
            s.start()
        if self._xid is not None:
            self._xid.start()
        if self._procs is not None:
            self._procs.start()

    def processes(self) -> tuple[ProcessSeries, ...]:
        """The job's processes as sampled (after stop())."""
        return self._procs.series() if self._procs is not None else ()

    def processes_record(self) -> dict[str, Any] | None:
        return self._procs.to_json() if self._procs is not None else None

    def xids(self) -> tuple[XidEvent, ...]:
        """The Xid errors NVML reported while sampling (after stop())."""
        return self._xids

    def unsupported(self) -> dict[str, str]:
        """What NVML could not give, and why: each GPU's queries (`gpuN.KEY`) and the Xid events
        (`xid_events...`), after stop()."""
        return dict(self._unsupported)

    def stop(self) -> list[GpuSeries]:
        """Stop sampling; the recorded series, one per GPU."""
        if self._procs is not None:
            self._procs.stop()
        out = []
        for meta, s in self._samplers:
            s.stop()
            data = s.to_json()
            self._unsupported.update({f"gpu{meta.index}.{k}": v for k, v in data["unsupported"].items()})
            out.append(
                GpuSeries(
                    index=meta.index,
                    name=meta.name,
                    uuid=meta.uuid,
                    memory_total_mib=meta.memory_total_mib,
                    power_limit_w=meta.power_limit_w,
                    pcie_link_gbs=meta.pcie_link_gbs,
                    series=data["series"],
                )
            )
        if self._xid is not None:  # its event set is freed before NVML shuts down
            self._xids = self._xid.stop()
            self._unsupported.update(self._xid.unsupported)
        if self._nvml is not None:
            _optional(self._nvml.nvmlShutdown)
        return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(fn: Any) -> Any:
    try:
        return fn()
    except Exception:
        return None


def write_monitor_files(
    folder: Path,
    gpus: Sequence[GpuSeries],
    findings: Sequence[Finding],
    context: Mapping[str, Any],
    *,
    processes: Mapping[str, Any] | None = None,
    output: str = "",
    xids: Sequence[XidEvent] = (),
    unsupported: Mapping[str, str] | None = None,
) -> tuple[Path, ...]:
    """Write telemetry.json and diagnosis.txt (and output.txt, the tail of the job's output, when
    there is one) into `folder`, atomically; return their paths, telemetry and diagnosis first.
    Raises OSError when the folder cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema_version": 1,
        "kind": "envbuilder-run-telemetry",
        **context,
        "fields": list(FIELDS + PCIE_FIELDS),
        "reason_bits": {str(b): n for b, n in CLOCK_EVENT_REASONS.items()},
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "uuid": g.uuid,
                "memory_total_mib": g.memory_total_mib,
                "power_limit_w": g.power_limit_w,
                "pcie_link_gbs": g.pcie_link_gbs,
                "series": {k: list(v) for k, v in g.series.items()},
            }
            for g in gpus
        ],
        "processes": processes,
        "xid_events": [e.to_dict() for e in xids],
        "unsupported": dict(unsupported or {}),
        "diagnosis": [f.to_dict() for f in findings],
    }
    telemetry = folder / "telemetry.json"
    diagnosis = folder / "diagnosis.txt"
    write_text_atomic(telemetry, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    write_text_atomic(diagnosis, format_diagnosis(findings))
    if not output:
        return telemetry, diagnosis
    tail = folder / "output.txt"
    write_text_atomic(tail, output if output.endswith("\n") else output + "\n")
    return telemetry, diagnosis, tail


def gpu_series_from_json(doc: Mapping[str, Any]) -> list[GpuSeries]:
    """The GpuSeries of a telemetry.json (what write_monitor_files wrote; recordings replay it)."""
    return [
        GpuSeries(
            index=int(g["index"]),
            name=str(g["name"]),
            uuid=g.get("uuid"),
            memory_total_mib=g.get("memory_total_mib"),
            power_limit_w=g.get("power_limit_w"),
            pcie_link_gbs=g.get("pcie_link_gbs"),
            series=g.get("series") or {},
        )
        for g in doc.get("gpus") or ()
    ]
