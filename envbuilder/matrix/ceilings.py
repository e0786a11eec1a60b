"""matrices/ceilings.yaml: per GPU model, the ResNet-50 training throughput MLPerf Training has
shown it to reach (with the source of each figure), for the report's "share of the ceiling"."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from envbuilder.errors import MatrixError
from envbuilder.resources import matrices_dir

FILE = "ceilings.yaml"


@dataclass(frozen=True, slots=True)
class Ceiling:
    model: str
    nvml_names: tuple[str, ...]
    images_per_s: float
    source: str
    checked: str
    benchmark: str


def parse_ceilings(doc: Any, where: str = FILE) -> tuple[Ceiling, ...]:
    """The ceilings of a loaded ceilings.yaml; MatrixError naming the field that is wrong."""

    def bad(field: str, why: str) -> MatrixError:
        return MatrixError(f"{where}: {field}: {why}", "fix matrices/ceilings.yaml", file=where, field=field)

    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        raise bad("schema_version", "expected a mapping with schema_version: 1")
    section = doc.get("resnet50_training")
    if not isinstance(section, dict) or not isinstance(section.get("gpus"), list):
        raise bad("resnet50_training.gpus", "expected a list")
    benchmark = str(section.get("benchmark") or "")
    out: list[Ceiling] = []
    seen: set[str] = set()
    for i, row in enumerate(section["gpus"]):
        at = f"resnet50_training.gpus[{i}]"
        if not isinstance(row, dict):
            raise bad(at, "expected a mapping")
        names = row.get("nvml_names")
        value = row.get("images_per_s")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise bad(f"{at}.nvml_names", "expected a non-empty list of names")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise bad(f"{at}.images_per_s", f"expected a positive number, not {value!r}")
        for key in ("model", "source", "checked"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise bad(f"{at}.{key}", "missing: every figure names its GPU, source and check")
        for n in names:
            if n.casefold() in seen:
                raise bad(f"{at}.nvml_names", f"{n!r} has a ceiling already")
            seen.add(n.casefold())
        out.append(
            Ceiling(
                model=row["model"],
                nvml_names=tuple(names),
                images_per_s=float(value),
                source=" ".join(row["source"].split()),
                checked=row["checked"],
                benchmark=benchmark,
            )
        )
    return tuple(out)


def load_ceilings(path: Path | None = None) -> tuple[Ceiling, ...]:
    """matrices/ceilings.yaml (or `path`), parsed; MatrixError when missing or malformed."""
    path = path or matrices_dir() / FILE
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        hint = "restore matrices/ceilings.yaml"
        raise MatrixError(f"{path}: cannot be read ({e})", hint, file=str(path)) from e
    return parse_ceilings(doc, str(path))


@functools.cache
def shipped_ceilings() -> tuple[Ceiling, ...]:
    """The shipped file's ceilings, read once per process."""
    return load_ceilings()


def ceiling_for(gpu_name: str | None, ceilings: Sequence[Ceiling]) -> Ceiling | None:
    """The ceiling of the GPU model NVML calls `gpu_name` (exact name, any case), or None."""
    if not gpu_name:
        return None
    key = gpu_name.strip().casefold()
    return next((c for c in ceilings if key in (n.casefold() for n in c.nvml_names)), None)
