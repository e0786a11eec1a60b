"""Which of this host's GPUs a container gets: Docker's `--gpus` syntax (all | N | device=0,2 |
device=GPU-UUID), parsed and matched against the host probe's GPUs. Each runtime's `grant` hands
exactly these to the container in each access mode; run's certificate check covers exactly these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envbuilder.errors import NoGpuError, UsageError
from envbuilder.host import GpuInfo, HostReport
from envbuilder.host.driver_files import gpu_nodes

GPUS_HINT = "write --gpus all, --gpus 2 (the first two), --gpus device=0,2 or --gpus device=GPU-UUID"
# NVML's UUID: GPU-8-4-4-4-12 hex digits (nvidia-smi -L prints it).
_UUID = re.compile(r"^GPU-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
_INDEX = re.compile(r"^[0-9]{1,4}$", re.ASCII)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    """`--gpus` as written: every GPU (`all`), the first `count`, or the listed `ids` (indexes or
    UUIDs, in the order given)."""

    text: str
    count: int | None = None
    ids: tuple[str, ...] = ()

    @property
    def all(self) -> bool:
        return self.count is None and not self.ids


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSelection:
    """The host's GPUs a `--gpus` value selects (in index order), and the device node of each
    that has one (what the devices mode hands in: index -> /dev/nvidiaN)."""

    text: str
    gpus: tuple[GpuInfo, ...]
    nodes: tuple[tuple[int, str], ...] = ()

    @property
    def indexes(self) -> tuple[str, ...]:
        return tuple(str(g.index) for g in self.gpus)

    @property
    def ids(self) -> tuple[str, ...]:
        """What the Container Toolkit is told: the UUIDs when the probe read every one (the same
        GPUs whatever the index order), else the indexes (NVML's, which the Toolkit uses too)."""
        uuids = tuple(g.uuid for g in self.gpus if g.uuid)
        return uuids if len(uuids) == len(self.gpus) else self.indexes

    def node_paths(self) -> tuple[str, ...]:
        """The /dev/nvidiaN node of each selected GPU. Raises NoGpuError for one without a node."""
        have = dict(self.nodes)
        missing = [g for g in self.gpus if g.index not in have]
        if missing:
            who = ", ".join(f"{g.index} ({g.name})" for g in missing)
            raise NoGpuError(
                f"--gpus {self.text}: no /dev/nvidia device node found for GPU {who}",
                hint="`envbuilder doctor` lists the device nodes; or use --gpu-access toolkit or cdi",
            )
        return tuple(have[g.index] for g in self.gpus)


def parse_gpus(text: str) -> GpuSpec:
    """Docker's `--gpus` value: all | N | count=N | device=ID[,ID...] (the whole value may be in
    double quotes, as Docker's CSV reading of it needs for several devices). IDs are NVML indexes
    or GPU UUIDs. Raises UsageError."""
    raw = text.strip()
    body = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'" else raw
    shown = raw[:80]
    if body in ("all", "count=all"):
        return GpuSpec(text=raw)
    key, eq, value = body.partition("=")
    if not eq:
        key, value = "count", body
    if key == "count":
        if not _INDEX.match(value) or int(value) == 0:
            raise UsageError(
                f"--gpus {shown!r}: the count must be a whole number from 1",
                hint=GPUS_HINT + "; --gpu-access none runs without a GPU",
            )
        return GpuSpec(text=raw, count=int(value))
    if key != "device":
        raise UsageError(f"--gpus {shown!r}: envbuilder reads all, N, count=N or device=...", hint=GPUS_HINT)
    ids = tuple(i.strip() for i in value.split(","))
    for i in ids:
        if i.startswith("MIG-") or ":" in i:
            raise UsageError(
                f"--gpus {shown!r}: MIG devices are not supported by run",
                hint="select whole GPUs; " + GPUS_HINT,
            )
        if not (_INDEX.match(i) or _UUID.match(i)):
            raise UsageError(
                f"--gpus {shown!r}: {i[:60]!r} is neither a GPU index nor a GPU UUID",
                hint=GPUS_HINT + " (`nvidia-smi -L` lists indexes and UUIDs)",
            )
    canon = [i if _INDEX.match(i) else i.lower() for i in ids]
    twice = sorted({i for i in canon if canon.count(i) > 1})
    if twice:
        raise UsageError(f"--gpus {shown!r}: {', '.join(twice)} listed twice", hint=GPUS_HINT)
    return GpuSpec(text=raw, ids=ids)


def _listing(gpus: tuple[GpuInfo, ...]) -> str:
    return ", ".join(f"{g.index}: {g.name}" + (f" {g.uuid}" if g.uuid else "") for g in gpus) or "none"


def select_gpus(spec: GpuSpec, report: HostReport, *, root: Path = Path("/")) -> GpuSelection:
    """The host's GPUs `spec` names (`root`: where /proc and /dev are read for the device nodes).
    Raises UsageError (an index or UUID this host lacks, more GPUs than it has), NoGpuError (the
    probe listed no GPU to choose from)."""
    have = tuple(sorted(report.gpus, key=lambda g: g.index))
    if not have:
        raise NoGpuError(
            f"--gpus {spec.text}: the host probe lists no NVIDIA GPU to choose from",
            hint="`envbuilder doctor` says why; drop --gpus, or run on the CPU with --gpu-access none",
        )
    hint = f"this host's GPUs are {_listing(have)}"
    if spec.all:
        chosen = have
    elif spec.count is not None:
        if spec.count > len(have):
            raise UsageError(f"--gpus {spec.text}: this host has {len(have)} GPU(s)", hint=hint)
        chosen = have[: spec.count]
    else:
        by_index = {str(g.index): g for g in have}
        by_uuid = {g.uuid.lower(): g for g in have if g.uuid}
        picked: list[GpuInfo] = []
        for i in spec.ids:
            gpu = by_index.get(i) if _INDEX.match(i) else by_uuid.get(i.lower())
            if gpu is None:
                raise UsageError(f"--gpus {spec.text}: this host has no GPU {i}", hint=hint)
            if gpu in picked:
                raise UsageError(f"--gpus {spec.text}: GPU {gpu.index} is named twice", hint=hint)
            picked.append(gpu)
        chosen = tuple(sorted(picked, key=lambda g: g.index))
    found, _ = gpu_nodes(report, root)
    nodes = tuple((n.index, n.path) for n in found if any(g.index == n.index for g in chosen))
    return GpuSelection(text=spec.text, gpus=chosen, nodes=nodes)
