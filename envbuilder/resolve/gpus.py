"""GPU models by the names people and NVML give them, and a host's GPUs filled in from the matrix."""

from __future__ import annotations

import difflib
from dataclasses import replace

from envbuilder.errors import UsageError
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix.model import GpuModel, Matrix
from envbuilder.versions import parse_cc


def lookup_gpu(matrix: Matrix, name: str) -> GpuModel:
    """The GPU model NVML calls `name` (case-insensitive). Raises UsageError naming the closest
    known names when there is no such model."""
    wanted = name.strip().casefold()
    by_name: dict[str, GpuModel] = {}
    for model in matrix.gpus.models:
        for n in (model.name, *model.nvml_names):
            by_name[n.casefold()] = model
    if wanted in by_name:
        return by_name[wanted]
    originals = {n.casefold(): n for m in matrix.gpus.models for n in (m.name, *m.nvml_names)}
    close = difflib.get_close_matches(wanted, list(originals), n=3, cutoff=0.5)
    suggestion = ", ".join(repr(originals[c]) for c in close) if close else "none close"
    raise UsageError(
        f"unknown GPU {name!r} (closest known: {suggestion})",
        hint="use the exact name nvidia-smi prints, or give the compute capability with --cc X.Y",
    )


def gpu_from_model(model: GpuModel, **extra: object) -> HostGpu:
    return HostGpu(
        name=str(extra.get("name") or model.name),
        cc=model.cc,
        brand=model.brand,
        segment=model.segment,
        model=model.name,
        uuid=extra.get("uuid") if isinstance(extra.get("uuid"), str) else None,  # type: ignore[arg-type]
    )


def gpu_from_cc(matrix: Matrix, cc: str) -> HostGpu:
    """A GPU known only by its compute capability. Raises UsageError for an unknown one."""
    parse_cc(cc)
    known = {a.cc for a in matrix.gpus.archs}
    if cc not in known:
        raise UsageError(
            f"unknown compute capability {cc!r}",
            hint=f"known compute capabilities: {', '.join(sorted(known, key=parse_cc))}",
        )
    return HostGpu(name=f"GPU with compute capability {cc}", cc=cc)


def enrich_host(matrix: Matrix, host: Host) -> Host:
    """Fill brand/segment/model of probed GPUs from the matrix when NVML's name is known."""
    gpus = []
    for g in host.gpus:
        try:
            model = lookup_gpu(matrix, g.name)
        except UsageError:
            gpus.append(g)
            continue
        gpus.append(replace(g, brand=g.brand or model.brand, segment=model.segment, model=model.name))
    return replace(host, gpus=tuple(gpus))
