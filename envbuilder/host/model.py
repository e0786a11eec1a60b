"""The host as resolve sees it: the driver and each GPU, probed (host/probe.py) or given on the
command line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbuilder.platforms import Platform, platform_of_machine
from envbuilder.typed import INT, STR, check_document, list_of, obj, opt

_MAYBE_STR = opt(STR)
GPU_SHAPE = obj(
    {
        "name": STR,
        "cc": STR,
        "memory_total_mib": opt(INT),
        **dict.fromkeys(("brand", "segment", "uuid", "model"), _MAYBE_STR),
    },
    required=("name", "cc"),
)
# Host.to_dict()'s field types (a lock's resolution.host): what Host.from_dict checks.
HOST_SHAPE = obj(
    {
        "driver": _MAYBE_STR,
        "gpus": opt(list_of(GPU_SHAPE)),
        "source": _MAYBE_STR,
        "windows_driver": _MAYBE_STR,
        "platform": _MAYBE_STR,
    }
)


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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HostGpu:
        """Inverse of to_dict. Raises KeyError/TypeError on a malformed dict (callers wrap it)."""
        memory = d.get("memory_total_mib")
        return cls(
            name=str(d["name"]),
            cc=str(d["cc"]),
            brand=_optional_str(d.get("brand")),
            segment=_optional_str(d.get("segment")),
            uuid=_optional_str(d.get("uuid")),
            memory_total_mib=int(memory) if memory is not None else None,
            model=_optional_str(d.get("model")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    driver: str | None  # None: no NVIDIA driver
    gpus: tuple[HostGpu, ...] = ()
    source: str = "given"  # nvml | nvidia-smi | proc | given | none
    # WSL2: the Windows driver nvidia-smi printed; `driver` is then the Linux driver it counts as
    # (resolve/wsl.py). None elsewhere, and then absent from to_dict().
    windows_driver: str | None = None
    # The machine's platform (envbuilder/platforms.py): probed (platform.machine()) or given
    # (--platform). None: not known (a host described by --driver/--gpu alone); then absent from
    # to_dict(), and the resolver takes the platform the GPUs exist in, else linux/amd64.
    platform: Platform | None = None

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "driver": self.driver,
                "gpus": [g.to_dict() for g in self.gpus],
                "source": self.source,
            }
            | ({"windows_driver": self.windows_driver} if self.windows_driver else {})
            | ({"platform": self.platform} if self.platform else {})
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Host:
        """Inverse of to_dict, every field type-checked (HOST_SHAPE). Raises WrongType (a
        ValueError) on a malformed dict (callers wrap it)."""
        check_document(d, HOST_SHAPE)
        gpus = d.get("gpus") or []
        return cls(
            driver=_optional_str(d.get("driver")),
            gpus=tuple(HostGpu.from_dict(g) for g in gpus),
            source=str(d.get("source") or "given"),
            windows_driver=_optional_str(d.get("windows_driver")),
            platform=platform_of_machine(d["platform"]) if d.get("platform") else None,
        )


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)
