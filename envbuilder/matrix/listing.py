"""The matrix as people and scripts read it: one table per kind of fact (`matrix list KIND`) and
one record per entry (`matrix show NAME`), the JSON records being the fields of matrix/model.py."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from envbuilder.errors import UsageError
from envbuilder.matrix import FRAMEWORKS, framework
from envbuilder.matrix.model import BaseImage, CudaRelease, FrameworkRelease, GpuModel, Matrix
from envbuilder.versions import major, parse_specifier, version_matches

KINDS = ("gpus", *FRAMEWORKS, "cuda", "images", "platforms")
_FILES = {
    "gpus": "gpus.yaml",
    "cuda": "cuda.yaml",
    "images": "base_images.yaml",
    "platforms": "platforms.yaml",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    kind: str
    file: str  # the matrices/ file the facts come from
    reviewed: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    items: tuple[dict[str, Any], ...]  # one JSON record per row

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "file": self.file,
            "reviewed": self.reviewed,
            "count": len(self.items),
            "items": list(self.items),
        }


def list_facts(m: Matrix, kind: str) -> Listing:
    """The table of one kind of fact. Raises UsageError for an unknown kind."""
    if kind not in KINDS:
        raise UsageError(f"unknown matrix list {kind!r}", hint=f"list one of: {', '.join(KINDS)}")
    file = _FILES.get(kind, f"frameworks/{kind}.yaml")
    reviewed = dict(m.reviewed).get(file, "")
    headers: tuple[str, ...]
    rows: list[tuple[str, ...]]
    items: list[dict[str, Any]]
    if kind == "gpus":
        headers = ("MODEL", "CC", "ARCH", "BRAND", "SEGMENT", "DRIVERS")
        rows = [(g.name, g.cc, g.family, g.brand, g.segment, driver_window(g)) for g in m.gpus.models]
        items = [gpu_record(g) for g in m.gpus.models]
    elif kind == "cuda":
        headers = ("CUDA", "RELEASE", "TOOLKIT DRIVER", "MVC FLOOR", "ARCHS")
        floors = {c.major: c.mvc_min_driver for c in m.cuda.majors}
        rows = [
            (r.version, r.label, r.min_driver, floors[major(r.version)], " ".join(r.archs))
            for r in m.cuda.releases
        ]
        items = [cuda_record(m, r) for r in m.cuda.releases]
    elif kind == "images":
        headers = ("IMAGE", "KIND", "CUDA", "CUDNN", "OS", "PYTHON", "REQUIRES")
        rows = [
            (
                b.ref,
                b.kind,
                b.cuda or "-",
                b.cudnn or "-",
                b.os,
                b.python,
                f"cuda>={b.require_cuda}" if b.require_cuda else "-",
            )
            for b in m.base_images
        ]
        items = [image_record(b) for b in m.base_images]
    elif kind == "platforms":  # the framework builds of other platforms than linux/amd64
        headers = ("PLATFORM", "FRAMEWORK", "VERSIONS", "VARIANT", "SASS", "PTX", "ARCHS FROM")
        builds = m.platforms.builds
        rows = [
            (
                b.platform,
                b.framework,
                b.versions or "any",
                b.variant,
                "(linux/amd64's)" if b.archs_from_default else " ".join(b.sass) or "-",
                "(linux/amd64's)" if b.archs_from_default else " ".join(b.ptx) or "-",
                "generated: " * b.generated + (f"{len(b.wheels)} wheel(s) read" if b.wheels else "curated"),
            )
            for b in builds
        ]
        items = [dataclasses.asdict(b) for b in builds]
    else:
        headers = ("VERSION", "PYTHON", "VARIANTS")
        releases = framework(m, kind).releases
        rows = [
            (r.version, r.python, " ".join(_variant_label(v.name, v.default) for v in r.variants))
            for r in releases
        ]
        items = [release_record(r) for r in releases]
    return Listing(
        kind=kind,
        file=file,
        reviewed=reviewed,
        headers=headers,
        rows=tuple(tuple(r) for r in rows),
        items=tuple(items),
    )


def driver_window(g: GpuModel) -> str:
    """'R455+', 'up to R580', 'R570+', 'any' (the driver branches that drive the GPU)."""
    if g.first_branch and g.last_branch:
        return f"R{g.first_branch}-R{g.last_branch}"
    if g.last_branch:
        return f"up to R{g.last_branch}"
    return f"R{g.first_branch}+" if g.first_branch else "any"


def _variant_label(name: str, default: bool) -> str:
    return f"{name}*" if default else name  # * = what a bare `pip install` gets


# --------------------------------------------------------------------------- records (matrix show)


def gpu_record(g: GpuModel) -> dict[str, Any]:
    return {"record": "gpu", **dataclasses.asdict(g), "drivers": driver_window(g)}


def cuda_record(m: Matrix, r: CudaRelease) -> dict[str, Any]:
    mvc = next(c for c in m.cuda.majors if c.major == major(r.version))
    return {"record": "cuda", **dataclasses.asdict(r), "mvc": dataclasses.asdict(mvc)}


def image_record(b: BaseImage) -> dict[str, Any]:
    return {"record": "image", **dataclasses.asdict(b)}


def release_record(r: FrameworkRelease) -> dict[str, Any]:
    return {"record": "framework-release", **dataclasses.asdict(r)}


def find_releases(m: Matrix, name: str, spec: str) -> list[FrameworkRelease]:
    """The releases of framework `name` matching a PEP 440 specifier or a bare version ('2.11'
    means the 2.11 line). Raises UsageError when the specifier is malformed or nothing matches."""
    table = framework(m, name)
    if spec and spec[0].isdigit():
        found = [r for r in table.releases if version_matches(spec, r.version)]
    else:
        parsed = parse_specifier(spec, f"{name} requirement")
        found = [r for r in table.releases if parsed.contains(r.version, prereleases=True)]
    if not found:
        raise UsageError(
            f"no {name} release matches {spec!r}",
            hint=f"`envbuilder matrix list {name}` lists the {len(table.releases)} releases envbuilder knows",
        )
    return found


def find_cuda(m: Matrix, version: str) -> list[CudaRelease]:
    """The CUDA releases of a line ('12.8' -> 12.8.0, 12.8.1) or one release ('12.8.1')."""
    return [r for r in m.cuda.releases if version_matches(version, r.version)]


def find_image(m: Matrix, ref: str) -> BaseImage | None:
    """The base image `ref` names: a full reference, or an nvidia/cuda tag alone."""
    return next((b for b in m.base_images if b.ref in (ref, f"nvidia/cuda:{ref}")), None)


def arch_record(m: Matrix, cc: str) -> dict[str, Any] | None:
    """A compute capability: its architecture, the GPU models that have it, and the CUDA
    toolkits that compile for it. None when the matrix does not know it."""
    arch = next((a for a in m.gpus.archs if a.cc == cc), None)
    if arch is None:
        return None
    return {
        "record": "arch",
        **dataclasses.asdict(arch),
        "gpus": [g.name for g in m.gpus.models if g.cc == cc],
        "toolkits": [r.version for r in m.cuda.releases if cc in r.archs],
    }
