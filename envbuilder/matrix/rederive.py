"""`envbuilder matrix check`'s second half: each row of matrices/generated/<framework>.yaml (and of
generated/arm64/<framework>.yaml, read from the linux/arm64 wheels) read again from its wheels'
scans by the current reader, and every field the reader decides compared.

Incremental: a wheel whose cached scan used no reader part that changed since (refresh.READER)
is re-derived from that scan, offline; only the others are read again, by range requests, and only
when an index is given (`--fetch`); without one they are listed as not checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.utils import parse_wheel_filename

from envbuilder.errors import MatrixError
from envbuilder.frameworks import NAMES
from envbuilder.matrix.generated import CPU, generated_file
from envbuilder.matrix.index import IndexFile, PackageIndex
from envbuilder.matrix.refresh import Log, Variant, WheelScan, cached_scan, scan_patterns, scan_wheel
from envbuilder.platforms import DEFAULT_PLATFORM, PLATFORMS

# The fields of a generated variant that the wheel reader decides (the rest come from the index
# listing or METADATA, which the reader does not interpret).
READ_FIELDS = ("sass", "ptx", "ptx_isa", "kernel_sets", "compiler.targets", "scanned", "unknown_archs")


@dataclass(slots=True)
class RowCheck:
    """What re-deriving the generated rows found."""

    rows: int = 0  # generated variants seen
    checked: int = 0  # re-derived and compared
    differences: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    from_cache: int = 0  # wheel scans re-used
    read: int = 0  # wheels read again (stale or missing scans, with an index)
    fetched: int = 0  # bytes of range reads


def check_generated(
    folder: Path,
    known_cc: set[str],
    cache: Path,
    *,
    index: PackageIndex | None = None,
    frameworks: Iterable[str] = NAMES,
    log: Log = lambda _m: None,
) -> RowCheck:
    """Re-derive every generated row under `folder` from the scans of its wheels (in `cache`;
    read again from `index` when missing or stale) and compare the reader's fields. Raises
    MatrixError for an unreadable refresh.yaml or generated file, PackageIndexError when a wheel
    cannot be read."""
    cfg = _load(folder / "refresh.yaml").get("frameworks") or {}
    out = RowCheck()
    for fw, platform in ((fw, p) for p in PLATFORMS for fw in frameworks):
        path = folder / generated_file(fw, platform)
        if not path.is_file() or fw not in cfg:
            continue
        for rel, row in _variants(path, fw):
            out.rows += 1
            where = f"{fw} {rel} {row.get('name') or '(only CUDA variant)'}"
            if platform != DEFAULT_PLATFORM:
                where += f" {platform}"
            # a CPU build's row (off linux/amd64) was read from its METADATA alone
            cpu = row.get("name") == CPU
            patterns = scan_patterns(cfg[fw], cpu=cpu)
            scans = [_scan(f, sha, patterns, cache, index, out, log) for f, sha in _wheels(row, where, path)]
            if any(scan is None for scan in scans):
                out.unchecked.append(where)
                continue
            var = Variant(name=row.get("name"), compiler=None if cpu else cfg[fw].get("compiler"))
            for scan in scans:
                assert scan is not None
                var.add(scan)
            out.checked += 1
            out.differences += [f"{where}: {d}" for d in _compare(row, var.row(known_cc))]
    return out


def _variants(path: Path, fw: str) -> list[tuple[str, dict[str, Any]]]:
    """(release version, variant row) of a generated file. Raises MatrixError for a malformed one."""
    out = []
    for i, rel in enumerate(_load(path).get("releases") or ()):
        if not isinstance(rel, dict) or not isinstance(rel.get("variants") or [], list):
            raise MatrixError(f"generated/{fw}.yaml releases[{i}]: expected a mapping with a variants list")
        for row in rel.get("variants") or ():
            if not isinstance(row, dict):
                raise MatrixError(
                    f"generated/{fw}.yaml releases[{i}] ({rel.get('version')}): a variant is not a mapping"
                )
            out.append((str(rel.get("version")), row))
    return out


def _wheels(row: dict[str, Any], where: str, path: Path) -> list[tuple[str, str]]:
    wheels = row.get("wheels") or []
    ok = isinstance(wheels, list) and all(
        isinstance(w, dict) and isinstance(w.get("file"), str) and isinstance(w.get("sha256"), str)
        for w in wheels
    )
    if not ok:
        raise MatrixError(
            f"{path.name}: {where}: `wheels` must list {{file, sha256}} mappings",
            hint="generated files are written by `envbuilder matrix refresh`, not by hand",
        )
    return [(w["file"], w["sha256"]) for w in wheels]


def _scan(
    filename: str,
    sha256: str,
    patterns: tuple[str, ...],
    cache: Path,
    index: PackageIndex | None,
    out: RowCheck,
    log: Log,
) -> WheelScan | None:
    scan = cached_scan(sha256, patterns, cache)
    if scan is not None and not scan.stale:
        out.from_cache += 1
        return scan
    if index is None:
        return None
    found = _find(index, filename, sha256)
    if found is None:
        raise MatrixError(
            f"{filename} (sha256 {sha256[:12]}...) is not on {index.location}",
            hint="the generated row names a wheel this index does not have: `matrix refresh` rewrites it",
        )
    scan = scan_wheel(found, patterns, cache, log)
    out.read += 1
    out.fetched += scan.fetched
    return scan


_LISTINGS: dict[tuple[str, str], list[IndexFile]] = {}


def _find(index: PackageIndex, filename: str, sha256: str) -> IndexFile | None:
    project = str(parse_wheel_filename(filename)[0])
    key = (index.location, project)
    if key not in _LISTINGS:
        _LISTINGS[key] = index.files(project)
    return next((f for f in _LISTINGS[key] if f.filename == filename and f.sha256 == sha256), None)


def _get(row: dict[str, Any], dotted: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _compare(committed: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """'ptx_isa: committed 8.3, the reader reads 8.5' for each reader field that differs."""
    out = []
    for name in READ_FIELDS:
        old, new = _get(committed, name), _get(fresh, name)
        if old != new:
            out.append(f"{name}: committed {_short(old)}, the reader reads {_short(new)}")
    return out


def _short(value: Any) -> str:
    text = "absent" if value is None else yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    text = text.removesuffix("\n...").removesuffix("...").strip()
    return text if len(text) <= 160 else text[:157] + "..."


def _load(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise MatrixError(f"{path} cannot be read: {exc}") from exc
    if not isinstance(data, dict):
        raise MatrixError(f"{path}: expected a mapping at the top level")
    return data
