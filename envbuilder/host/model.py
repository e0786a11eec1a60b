"""The host as resolve sees it: the driver and each GPU, probed (host/probe.py) or given on the
command line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class HostGpu:
    """One GPU as probed or as given on the command line."""

    name: str
    cc: str
    brand: str | None = None
    segment: str | None = None
    uuid: str | None = None
    memory_total_mib: int | None = None
    model: str | None = None  # canonical GpuModel name when known

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cc": self.cc,
            "brand": self.brand,
            "segment": self.segment,
            "uuid": self.uuid,
            "memory_total_mib": self.memory_total_mib,
            "model": self.model,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    driver: str | None  # None: no NVIDIA driver
    gpus: tuple[HostGpu, ...] = ()
    source: str = "given"  # nvml | nvidia-smi | proc | given | none

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver": self.driver,
            "gpus": [g.to_dict() for g in self.gpus],
            "source": self.source,
        }
