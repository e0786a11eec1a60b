"""`envbuilder matrix refresh`: generated arch rows from the wheels themselves. For each framework
release (those in the matrix, and every newer one on the index) it reads the CUDA-carrying wheel's
METADATA (Requires-Python, the nvidia-* pins) and scans the members that hold its kernels
(matrices/refresh.yaml), then writes matrices/generated/<framework>.yaml with the wheel's file
name and sha256 as the source of every row. Scans are cached by the wheel's sha256.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from envbuilder import frameworks as registry
from envbuilder import resources
from envbuilder.atomic import write_text_atomic
from envbuilder.errors import MatrixError, PackageIndexError
from envbuilder.frameworks.base import pinned, xy
from envbuilder.harness import fatbin
from envbuilder.matrix.index import IndexFile, PackageIndex, releases
from envbuilder.matrix.model import Matrix
from envbuilder.matrix.wheel import WheelMetadata, WheelReader

Log = Callable[[str], None]
GENERATED = "generated"


# --------------------------------------------------------------------------- wheel scans


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelScan:
    """What one wheel is: its identity, metadata and the kernels of the members scanned."""

    filename: str
    sha256: str
    requires_python: str | None
    requires_dist: tuple[str, ...]
    members: tuple[tuple[str, dict[str, Any]], ...]  # (member, fatbin.Kernels.to_dict())
    fetched: int = 0  # bytes transferred for this scan
    cached: bool = False  # True: read from the scan cache, the wheel was not opened

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "sha256": self.sha256,
            "requires_python": self.requires_python,
            "requires_dist": list(self.requires_dist),
            "members": {m: k for m, k in self.members},
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> WheelScan:
        return cls(
            filename=d["filename"],
            sha256=d["sha256"],
            requires_python=d.get("requires_python"),
            requires_dist=tuple(d.get("requires_dist", ())),
            members=tuple(sorted(d.get("members", {}).items())),
            cached=True,
        )

    def metadata(self) -> WheelMetadata:
        name, version, _b, _t = parse_wheel_filename(self.filename)
        return WheelMetadata(
            name=name,
            version=str(version),
            requires_python=self.requires_python,
            requires_dist=self.requires_dist,
        )


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envbuilder" / "wheel-scans"


def scan_wheel(f: IndexFile, patterns: tuple[str, ...], cache: Path, log: Log) -> WheelScan:
    """METADATA of the wheel `f` and the kernels of its members matching `patterns` (none: metadata
    only); from the cache when this sha256 was scanned for these patterns before. Raises
    PackageIndexError when the wheel cannot be read."""
    if not f.sha256:
        raise PackageIndexError(
            f"{f.filename}: the index gives no sha256", hint="use an index that publishes hashes (PEP 503)"
        )
    key = cache / f"{f.sha256}-{_patterns_key(patterns)}.json"
    if key.is_file():
        try:
            return WheelScan.from_json(json.loads(key.read_text()))
        except (ValueError, KeyError):
            pass  # a damaged cache entry is scanned again
    with WheelReader(f.url, f.filename) as w:
        md = w.metadata()
        members = []
        for name in sorted(n for n in w.names() if _wanted(n, patterns)):
            log(f"  scanning {f.filename}: {name}")
            with w.extracted(name, cache / "tmp") as path:
                try:
                    members.append((name, fatbin.scan_file(path).to_dict()))
                except fatbin.FatbinError:
                    continue  # not an ELF (a linker script named .so): no kernels
        scan = WheelScan(
            filename=f.filename,
            sha256=f.sha256,
            requires_python=md.requires_python,
            requires_dist=md.requires_dist,
            members=tuple(members),
            fetched=w.transfer.fetched,
        )
    cache.mkdir(parents=True, exist_ok=True)
    write_text_atomic(key, json.dumps(scan.to_json(), indent=1, sort_keys=True))
    return scan


def _patterns_key(patterns: tuple[str, ...]) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", "+".join(patterns))[:60] or "metadata"


def _wanted(name: str, patterns: tuple[str, ...]) -> bool:
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(base, p) for p in patterns)


# --------------------------------------------------------------------------- picking wheels


def _linux_x86_64(f: IndexFile) -> bool:
    return f.filename.endswith(".whl") and "manylinux" in f.filename and "x86_64" in f.filename


def _cp_tags(files: Iterable[IndexFile]) -> list[tuple[int, int]]:
    """CPython versions the files have wheels for (cp312 -> (3, 12)); free-threaded ones left out."""
    found = set()
    for f in files:
        for tag in parse_wheel_filename(f.filename)[3]:
            m = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
            if m and not tag.abi.endswith("t"):
                found.add((int(m.group(1)), int(m.group(2))))
    return sorted(found)


def pick_wheel(files: list[IndexFile]) -> IndexFile | None:
    """The Linux x86_64 wheel to read: the newest CPython's (the kernels do not depend on it), or a
    pure-Python one."""
    linux = [f for f in files if _linux_x86_64(f)]
    if linux:
        return max(linux, key=lambda f: (max(_cp_tags([f]), default=(0, 0)), f.filename))
    pure = [f for f in files if f.filename.endswith("-none-any.whl")]
    return pure[0] if pure else None


def python_range(files: list[IndexFile], requires_python: str | None) -> str:
    """The CPython range wheels exist for (">=3.10,<3.15" from cp310 ... cp314 wheels), else the
    Requires-Python of the metadata."""
    tags = _cp_tags([f for f in files if _linux_x86_64(f)])
    if tags:
        lo, hi = tags[0], tags[-1]
        return f">={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"
    return requires_python or ""


# --------------------------------------------------------------------------- metadata rules


def requirements(md: WheelMetadata, extra: str | None = None) -> list[Requirement]:
    """Requires-Dist entries that apply on Linux x86_64 (with `extra` active, when given)."""
    env = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64"}
    out = []
    for text in md.requires_dist:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None:
            if extra is None:
                out.append(req)
            continue
        mentions_extra = "extra" in str(req.marker)
        if extra is None and mentions_extra:
            continue
        if extra is not None and not mentions_extra:
            continue
        for py in ("3.10", "3.11", "3.12", "3.13", "3.14"):
            if req.marker.evaluate({**env, "extra": extra or "", "python_version": py}):
                out.append(req)
                break
    return out


def _cc(sm: int) -> str:
    return f"{sm // 10}.{sm % 10}"


# --------------------------------------------------------------------------- generated rows


@dataclass(slots=True)
class Variant:
    """One generated variant: what its wheels say."""

    name: str | None  # None: the release's only CUDA variant (no pin names it)
    cuda: str | None = None
    cudnn: str | None = None
    nccl: str | None = None
    sass: set[int] = field(default_factory=set)
    ptx: dict[int, str | None] = field(default_factory=dict)
    wheels: list[tuple[str, str]] = field(default_factory=list)  # (file name, sha256)
    scanned: list[str] = field(default_factory=list)

    def add(self, scan: WheelScan) -> None:
        self.wheels.append((scan.filename, scan.sha256))
        for member, kernels in scan.members:
            if not kernels["sass"] and not kernels["ptx"]:
                continue
            self.scanned.append(member)
            self.sass |= {int(s[3:]) for s in kernels["sass"]}
            for p in kernels["ptx"]:
                sm, isa = int(p["arch"][len("compute_") :]), p["isa"]
                old = self.ptx.get(sm)
                self.ptx[sm] = max((i for i in (old, isa) if i), key=_isa_key, default=None)

    @property
    def ptx_isa(self) -> str | None:
        return max((i for i in self.ptx.values() if i), key=_isa_key, default=None)

    def row(self, known_cc: set[str]) -> dict[str, Any]:
        sass = [_cc(s) for s in sorted(self.sass)]
        ptx = [_cc(s) for s in sorted(self.ptx)]
        unknown = sorted({c for c in sass + ptx if c not in known_cc}, key=Version)
        row: dict[str, Any] = {"name": self.name}
        for key in ("cuda", "cudnn", "nccl"):
            row[key] = getattr(self, key)
        row |= {
            "sass": [c for c in sass if c in known_cc],
            "ptx": [c for c in ptx if c in known_cc],
            "ptx_isa": self.ptx_isa,
            "wheels": [{"file": f, "sha256": s} for f, s in self.wheels],
            "scanned": sorted(set(self.scanned)),
        }
        if unknown:
            row["unknown_archs"] = unknown  # not in gpus.yaml: left out of sass/ptx until it is
        return row


def _isa_key(isa: str) -> tuple[int, ...]:
    return tuple(int(p) for p in isa.split("."))


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    version: str
    python: str
    requires_python: str | None
    variants: tuple[Variant, ...]


@dataclass(slots=True)
class Report:
    """What a refresh did: for the summary line and --json."""

    scanned: int = 0
    cached: int = 0
    fetched: int = 0
    skipped: list[str] = field(default_factory=list)
    new_releases: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- per framework


@dataclass(slots=True)
class Refresher:
    index: PackageIndex
    cache: Path
    log: Log
    report: Report = field(default_factory=Report)
    _files: dict[str, list[IndexFile]] = field(default_factory=dict)

    def files(self, project: str) -> list[IndexFile]:
        if project not in self._files:
            self.log(f"reading the index for {project} ({self.index.location})")
            self._files[project] = self.index.files(project)
        return self._files[project]

    def by_version(self, project: str) -> dict[Version, list[IndexFile]]:
        return dict(releases(self.files(project)))

    def scan(self, f: IndexFile, patterns: tuple[str, ...]) -> WheelScan:
        scan = scan_wheel(f, patterns, self.cache, self.log)
        if scan.cached:
            self.report.cached += 1
        else:
            self.report.scanned += 1
            self.report.fetched += scan.fetched
        return scan

    def versions(self, project: str, known: Iterable[str], since: str) -> list[Version]:
        """The matrix's releases of `project` plus every newer final release on the index."""
        have = self.by_version(project)
        known_v = {Version(k) for k in known}
        newest = max(known_v, default=Version(since))
        out = sorted(v for v in have if v in known_v or v > newest)
        self.report.skipped += [f"{project} {k}: not on the index" for k in sorted(known_v - set(have))]
        return [v for v in out if v >= Version(since)]

    def one_wheel(
        self,
        fw: str,
        cfg: dict[str, Any],
        known: Iterable[str],
        variant: Callable[[WheelScan], Variant | None],
    ) -> list[Release]:
        """Releases of a framework whose CUDA build is one wheel per release (torch on PyPI,
        tensorflow): that wheel scanned, its variant read by `variant` (None: not a CUDA build)."""
        out = []
        files = self.by_version(cfg["package"])
        for v in self.versions(cfg["package"], known, cfg["since"]):
            wheel = pick_wheel(files[v])
            if wheel is None:
                self.report.skipped.append(f"{fw} {v}: no Linux x86_64 wheel")
                continue
            scan = self.scan(wheel, tuple(cfg["scan"]))
            var = variant(scan)
            if var is None:
                self.report.skipped.append(f"{fw} {v}: its wheel requires no CUDA (a CPU build)")
                continue
            var.add(scan)
            python = python_range(files[v], scan.requires_python)
            out.append(
                Release(version=str(v), python=python, requires_python=scan.requires_python, variants=(var,))
            )
        return out

    def one_wheel_framework(self, fw: str, cfg: dict[str, Any], known: Iterable[str]) -> list[Release]:
        """A "one_wheel" framework (torch, tensorflow): its module names the variant from the
        wheel's requirements (refresh.yaml's `extra` active where it names one)."""
        read = registry.get(fw).read_variant

        def variant(scan: WheelScan) -> Variant | None:
            facts = read(requirements(scan.metadata(), cfg.get("extra")))
            if facts is None:
                return None
            return Variant(name=facts.name, cuda=facts.cuda, cudnn=facts.cudnn, nccl=facts.nccl)

        return self.one_wheel(fw, cfg, known, variant)

    # -- "plugins" (jax): jax[cudaNN] -> jax-cudaNN-plugin (+ its pjrt); CUDA from the PTX ISA it was
    # built with
    def plugins(
        self, fw: str, cfg: dict[str, Any], known: Iterable[str], isa_cuda: dict[str, str]
    ) -> list[Release]:
        out = []
        base_files = self.by_version(cfg["package"])
        py_files = self.by_version(cfg["python_from"])
        for v in self.versions(cfg["package"], known, cfg["since"]):
            wheel = pick_wheel(base_files[v])
            if wheel is None:
                continue
            base_md = self.scan(wheel, ()).metadata()
            variants = []
            for name, (plugin, pjrt) in sorted(cfg["plugins"].items()):
                want = next((r for r in requirements(base_md, name) if r.name == plugin), None)
                if want is None:
                    continue
                plugin_v = _newest(self.by_version(plugin), want.specifier)
                if plugin_v is None:
                    why = f"no {plugin} release matches {want.specifier}"
                    self.report.skipped.append(f"{fw} {v} {name}: {why}")
                    continue
                pw = pick_wheel(self.by_version(plugin)[plugin_v])
                if pw is None:
                    continue
                pscan = self.scan(pw, tuple(cfg["scan"]))
                var = Variant(name=name)
                pmd = pscan.metadata()
                # the CUDA wheels: the plugin's with-cuda extra, or (before it had one) the base
                # package's own extra
                with_cuda = requirements(pmd, "with-cuda") or requirements(pmd, "with_cuda")
                with_cuda += requirements(base_md, name)
                var.cudnn = xy(pinned(with_cuda, r"nvidia-cudnn-cu\d+"))
                var.nccl = pinned(with_cuda, r"nvidia-nccl-cu\d+")
                var.add(pscan)
                pjrt_req = next((r for r in requirements(pscan.metadata()) if r.name == pjrt), None)
                pjrt_v = _newest(self.by_version(pjrt), pjrt_req.specifier) if pjrt_req else None
                if pjrt_v is not None and (jw := pick_wheel(self.by_version(pjrt)[pjrt_v])) is not None:
                    var.add(self.scan(jw, tuple(cfg["scan"])))
                var.cuda = isa_cuda.get(var.ptx_isa or "")
                variants.append(var)
            extras = [r for extra in cfg["plugins"] for r in requirements(base_md, extra)]
            lib = next((r for r in [*requirements(base_md), *extras] if r.name == cfg["python_from"]), None)
            lib_v = _newest(py_files, lib.specifier) if lib else None
            python = python_range(py_files[lib_v], None) if lib_v else (base_md.requires_python or "")
            out.append(
                Release(
                    version=str(v),
                    python=python,
                    requires_python=base_md.requires_python,
                    variants=tuple(variants),
                )
            )
        return out

    def libraries(self, names: list[str]) -> dict[str, list[str]]:
        return {n: [str(v) for v, _f in reversed(list(releases(self.files(n))))][:12] for n in names}


def _newest(by_version: dict[Version, list[IndexFile]], spec: SpecifierSet) -> Version | None:
    fitting = [v for v in by_version if spec.contains(v, prereleases=False)]
    return max(fitting, default=None)


# --------------------------------------------------------------------------- the files


def isa_table(matrix_dir: Path) -> dict[str, str]:
    """PTX ISA -> the CUDA X.Y that introduced it (matrices/ptx_isa.yaml)."""
    data = yaml.safe_load((matrix_dir / "ptx_isa.yaml").read_text())
    return {str(r["isa"]): str(r["cuda"]) for r in data["isa"]}


def render(framework: str, rows: list[Release], known_cc: set[str], index: str, when: str) -> str:
    """The generated file: deterministic (sorted, no timestamps but the review date)."""
    doc = {
        "schema_version": 1,
        "framework": framework,
        "source": f"envbuilder matrix refresh from {index}: each row names the wheels it was read from "
        "(file name and sha256); sass/ptx/ptx_isa from their .nv_fatbin sections, python from the CPython "
        "wheels published, cuda/cudnn/nccl from their nvidia-* requirements",
        "reviewed": when,
        "releases": [
            {
                "version": r.version,
                "python": r.python,
                "requires_python": r.requires_python,
                "variants": [v.row(known_cc) for v in r.variants],
            }
            for r in sorted(rows, key=lambda r: Version(r.version))
        ],
    }
    head = (
        f"# GENERATED by `envbuilder matrix refresh` -- do not edit; rerun it (matrices/refresh.yaml says\n"
        f"# what it reads). Curated facts for {framework} live in matrices/frameworks/{framework}.yaml.\n"
    )
    return head + yaml.safe_dump(doc, sort_keys=False, width=120, default_flow_style=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefreshResult:
    files: tuple[tuple[str, str, str], ...]  # (path relative to the matrix folder, old text, new text)
    report: Report

    def diff(self) -> str:
        out: list[str] = []
        for rel, old, new in self.files:
            out += difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                f"a/matrices/{rel}",
                f"b/matrices/{rel}",
            )
        return "".join(out)

    @property
    def changed(self) -> list[str]:
        return [rel for rel, old, new in self.files if old != new]


def refresh_matrix(
    matrix: Matrix,
    matrix_dir: Path | None,
    index: PackageIndex,
    *,
    frameworks: tuple[str, ...] = registry.NAMES,
    cache: Path | None = None,
    today: str,
    log: Log = lambda _m: None,
) -> RefreshResult:
    """Read the index and the wheels, and compute the generated files (nothing is written here:
    `write_result` does that). Raises PackageIndexError when the index or a wheel cannot be read,
    MatrixError when matrices/refresh.yaml is malformed."""
    folder = matrix_dir or resources.matrices_dir()
    try:
        cfg = yaml.safe_load((folder / "refresh.yaml").read_text())["frameworks"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise MatrixError(f"{folder / 'refresh.yaml'} cannot be read: {exc}") from exc
    r = Refresher(index=index, cache=cache or cache_dir(), log=log)
    known_cc = {a.cc for a in matrix.gpus.archs}
    isa_cuda = isa_table(folder)
    files = []
    for fw in frameworks:
        table = next(t for t in matrix.frameworks if t.name == fw)
        known = [rel.version for rel in table.releases if any(v.cuda for v in rel.variants)]
        if registry.get(fw).FACTS.refresh == "plugins":
            rows = r.plugins(fw, cfg[fw], known, isa_cuda)
        else:
            rows = r.one_wheel_framework(fw, cfg[fw], known)
        have = {rel.version for rel in table.releases}
        r.report.new_releases += [f"{fw} {row.version}" for row in rows if row.version not in have]
        rel_path = f"{GENERATED}/{fw}.yaml"
        old_path = folder / rel_path
        old = old_path.read_text() if old_path.is_file() else ""
        files.append((rel_path, old, render(fw, rows, known_cc, index.location, today)))
    libs = yaml.safe_load((folder / "refresh.yaml").read_text()).get("libraries") or []
    if libs:
        rel_path = f"{GENERATED}/cuda_libraries.yaml"
        old_path = folder / rel_path
        old = old_path.read_text() if old_path.is_file() else ""
        files.append((rel_path, old, render_libraries(r.libraries(libs), index.location, today)))
    return RefreshResult(files=tuple(files), report=r.report)


def render_libraries(found: dict[str, list[str]], index: str, when: str) -> str:
    """The newest final releases of the CUDA libraries (what a floor such as >=9.8 installs today)."""
    doc = {
        "schema_version": 1,
        "source": f"envbuilder matrix refresh from {index}: final releases on the index, newest first",
        "reviewed": when,
        "libraries": found,
    }
    head = "# GENERATED by `envbuilder matrix refresh` -- do not edit; rerun it.\n"
    return head + yaml.safe_dump(doc, sort_keys=True, width=120, default_flow_style=None)


def write_result(result: RefreshResult, matrix_dir: Path | None) -> None:
    """Write the changed generated files (atomically, each). Raises OSError."""
    folder = matrix_dir or resources.matrices_dir()
    for rel, old, new in result.files:
        if old != new:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(folder / rel, new)
