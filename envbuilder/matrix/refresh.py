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
from envbuilder.matrix.generated import CPU, GENERATED, generated_file
from envbuilder.matrix.index import IndexFile, PackageIndex, releases
from envbuilder.matrix.model import Matrix
from envbuilder.matrix.wheel import WheelMetadata, WheelReader
from envbuilder.platforms import DEFAULT_PLATFORM, Machine, Platform, machine_of

Log = Callable[[str], None]


def scan_patterns(cfg: dict[str, Any], *, cpu: bool) -> tuple[str, ...]:
    """The members scanned for a row (refresh.yaml `scan`); a CPU build's row is read from its
    METADATA alone (no member holds kernels), so `matrix check` looks up that scan."""
    return () if cpu else tuple(cfg["scan"])


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
    reader: tuple[tuple[str, str], ...] = ()  # (part, its version) of the reader parts it used

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "sha256": self.sha256,
            "requires_python": self.requires_python,
            "requires_dist": list(self.requires_dist),
            "members": {m: k for m, k in self.members},
            "reader": dict(self.reader),
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
            reader=tuple(sorted((d.get("reader") or {}).items())),
        )

    @property
    def stale(self) -> bool:
        """Would the current reader read this wheel differently? True when a part of the reader
        this scan used has changed since (READER), or the scan predates the record."""
        return not self.reader or any(reader_parts().get(p) != v for p, v in self.reader)

    def metadata(self) -> WheelMetadata:
        name, version, _b, _t = parse_wheel_filename(self.filename)
        return WheelMetadata(
            name=name,
            version=str(version),
            requires_python=self.requires_python,
            requires_dist=self.requires_dist,
        )


def cache_dir() -> Path:
    """Where wheel scans are cached (ENVBUILDER_CACHE_DIR, else ~/.cache/envbuilder: wheel-scans/)."""
    return resources.cache_dir() / "wheel-scans"


def scan_wheel(f: IndexFile, patterns: tuple[str, ...], cache: Path, log: Log) -> WheelScan:
    """METADATA of the wheel `f` and the kernels of its members matching `patterns` (none: metadata
    only); from the cache when this sha256 was scanned for these patterns before. Raises
    PackageIndexError when the wheel cannot be read."""
    if not f.sha256:
        raise PackageIndexError(
            f"{f.filename}: the index gives no sha256", hint="use an index that publishes hashes (PEP 503)"
        )
    cached = cached_scan(f.sha256, patterns, cache)
    if cached is not None and not cached.stale:
        return cached
    with WheelReader(f.url, f.filename) as w:
        md = w.metadata()
        members, used = [], {"metadata"}
        for name in sorted(n for n in w.names() if _wanted(n, patterns)):
            log(f"  scanning {f.filename}: {name}")
            with w.extracted(name, cache / "tmp") as path:
                try:
                    kernels, parts = scan_member(path)
                except fatbin.FatbinError:
                    continue  # not an ELF (a linker script named .so): no kernels
                members.append((name, kernels))
                used |= parts
        current = reader_parts()
        scan = WheelScan(
            filename=f.filename,
            sha256=f.sha256,
            requires_python=md.requires_python,
            requires_dist=md.requires_dist,
            members=tuple(members),
            fetched=w.transfer.fetched,
            reader=tuple(sorted((p, current[p]) for p in used)),
        )
    cache.mkdir(parents=True, exist_ok=True)
    write_text_atomic(
        _cache_file(f.sha256, patterns, cache), json.dumps(scan.to_json(), indent=1, sort_keys=True)
    )
    return scan


def _cache_file(sha256: str, patterns: tuple[str, ...], cache: Path) -> Path:
    return cache / f"{sha256}-{_patterns_key(patterns)}.json"


def cached_scan(sha256: str, patterns: tuple[str, ...], cache: Path) -> WheelScan | None:
    """The cached scan of the wheel `sha256` for `patterns` (stale or not), or None when there is
    none or it is damaged (it is then scanned again)."""
    path = _cache_file(sha256, patterns, cache)
    try:
        return WheelScan.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


# The parts of the wheel reader (envbuilder/harness/fatbin.py and scan_member below), each with
# the version of its logic. A cached scan records the parts it used: when a part changes, bump it
# here, and only the scans that used it are read again (`matrix check` and `matrix refresh` with a
# warm cache stay incremental). tests/unit/test_matrix_check.py pins fatbin.py's hash to this table.
READER: dict[str, int] = {
    "metadata": 1,  # METADATA: Requires-Python, Requires-Dist
    "layout": 1,  # ELF sections, fatbin and entry headers, SASS sms (elf_fatbins, read_fatbin)
    "ptx-plain": 1,  # the `.version` line of uncompressed PTX
    "ptx-lz4": 1,  # ... of LZ4-compressed PTX (lz4_block_decompress)
    "ptx-zstd": 1,  # ... of zstd-compressed PTX (with the zstd decoder this Python has)
    "embedded": 1,  # fatbins kept in data sections, their PTX ISA from the entry header
    "kernel-sets": 1,  # the fatbins grouped by their SASS and PTX lists (coverage per kernel set)
    "targets": 1,  # sm_XY names in the binary (the compiler targets of XLA's NVPTX backend)
}


def reader_parts() -> dict[str, str]:
    """The current version of each reader part ('ptx-zstd' also names the decoder: a scan made
    without one read the ISA from the entry header)."""
    parts = {p: str(v) for p, v in READER.items()}
    parts["ptx-zstd"] += f"+{fatbin.ZSTD_DECODER or 'no-decoder'}"
    return parts


_TARGET_NAME = re.compile(rb"sm_(\d{2,3})[af]?\x00")


def scan_member(path: Path) -> tuple[dict[str, Any], set[str]]:
    """What one shared object carries (fatbin.Kernels.to_dict()), with its kernel sets (its
    fatbins grouped by their SASS and PTX sms: {"sass", "ptx", "count"}) and the sm_XY target
    names its strings hold; and the reader parts used to read it. Raises fatbin.FatbinError for a
    non-ELF or empty file, OSError when it cannot be read."""
    import collections
    import mmap

    with path.open("rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise fatbin.FatbinError("empty file") from None
        with mm:
            own, kept = fatbin.elf_fatbins(mm)
            targets = sorted({int(m.group(1)) for m in _TARGET_NAME.finditer(mm)})
    kernels = fatbin.summarize([e for fb in own for e in fb], [e for fb in kept for e in fb]).to_dict()
    groups: collections.Counter[tuple[tuple[int, ...], tuple[int, ...]]] = collections.Counter()
    for fb in (*own, *kept):
        if fb:
            sass = tuple(sorted({e.sm for e in fb if e.kind == "sass"}))
            groups[(sass, tuple(sorted({e.sm for e in fb if e.kind == "ptx"})))] += 1
    kernels["kernel_sets"] = [
        {"sass": list(s), "ptx": list(p), "count": n} for (s, p), n in sorted(groups.items())
    ]
    kernels["targets"] = targets
    used = {"layout", "kernel-sets", "targets"}
    used |= {f"ptx-{e.compression or 'plain'}" for fb in own for e in fb if e.kind == "ptx"}
    if kept:
        used.add("embedded")
    return kernels, used


def _patterns_key(patterns: tuple[str, ...]) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", "+".join(patterns))[:60] or "metadata"


def _wanted(name: str, patterns: tuple[str, ...]) -> bool:
    base = name.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(base, p) for p in patterns)


# --------------------------------------------------------------------------- picking wheels


def _linux_wheel(f: IndexFile, machine: Machine = "x86_64") -> bool:
    """A manylinux wheel for `machine` (x86_64, aarch64)."""
    return f.filename.endswith(".whl") and "manylinux" in f.filename and machine in f.filename


def _cp_tags(files: Iterable[IndexFile]) -> list[tuple[int, int]]:
    """CPython versions the files have wheels for (cp312 -> (3, 12)); free-threaded ones left out."""
    found = set()
    for f in files:
        for tag in parse_wheel_filename(f.filename)[3]:
            m = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
            if m and not tag.abi.endswith("t"):
                found.add((int(m.group(1)), int(m.group(2))))
    return sorted(found)


def pick_wheel(files: list[IndexFile], machine: Machine = "x86_64") -> IndexFile | None:
    """The Linux wheel for `machine` to read: the newest CPython's (the kernels do not depend on
    it), or a pure-Python one."""
    linux = [f for f in files if _linux_wheel(f, machine)]
    if linux:
        return max(linux, key=lambda f: (max(_cp_tags([f]), default=(0, 0)), f.filename))
    pure = [f for f in files if f.filename.endswith("-none-any.whl")]
    return pure[0] if pure else None


def python_range(files: list[IndexFile], requires_python: str | None, machine: Machine = "x86_64") -> str:
    """The CPython range wheels for `machine` exist for (">=3.10,<3.15" from cp310 ... cp314
    wheels), else the Requires-Python of the metadata."""
    tags = _cp_tags([f for f in files if _linux_wheel(f, machine)])
    if tags:
        lo, hi = tags[0], tags[-1]
        return f">={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"
    return requires_python or ""


# --------------------------------------------------------------------------- metadata rules


def requirements(
    md: WheelMetadata, extra: str | None = None, machine: Machine = "x86_64"
) -> list[Requirement]:
    """Requires-Dist entries that apply on Linux `machine` (with `extra` active, when given)."""
    env = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": machine}
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
    # kernel sets (fatbins) by their (SASS sms, PTX sms): how many of each
    kernel_sets: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = field(default_factory=dict)
    compiler: dict[str, Any] | None = None  # refresh.yaml's `compiler` of an XLA framework
    targets: set[int] = field(default_factory=set)  # sm names in the compiler's binary
    ptxas: str | None = None  # the requirement that brings the compiler's ptxas

    def add(self, scan: WheelScan) -> None:
        self.wheels.append((scan.filename, scan.sha256))
        members = (self.compiler or {}).get("members") or ()
        for member, kernels in scan.members:
            if members and _wanted(member, tuple(members)):
                self.targets |= set(kernels.get("targets") or ())
            if not kernels["sass"] and not kernels["ptx"]:
                continue
            self.scanned.append(member)
            self.sass |= {int(s[3:]) for s in kernels["sass"]}
            for p in kernels["ptx"]:
                sm, isa = int(p["arch"][len("compute_") :]), p["isa"]
                old = self.ptx.get(sm)
                self.ptx[sm] = max((i for i in (old, isa) if i), key=_isa_key, default=None)
            for group in kernels.get("kernel_sets") or ():
                key = (tuple(group["sass"]), tuple(group["ptx"]))
                self.kernel_sets[key] = self.kernel_sets.get(key, 0) + int(group["count"])

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
        }
        if self.kernel_sets:
            row["kernel_sets"] = self.kernel_set_rows(known_cc)
        if self.compiler is not None:
            row["compiler"] = {
                "runs": self.compiler["runs"],
                "targets": [c for c in (_cc(t) for t in sorted(self.targets)) if c in known_cc],
                "ptxas": self.ptxas,
            }
        row |= {
            "wheels": [{"file": f, "sha256": s} for f, s in self.wheels],
            "scanned": sorted(set(self.scanned)),
        }
        if unknown:
            row["unknown_archs"] = unknown  # not in gpus.yaml: left out of sass/ptx until it is
        return row

    def kernel_set_rows(self, known_cc: set[str]) -> list[dict[str, Any]]:
        """The kernel sets grouped by their (known) SASS and PTX lists, most numerous first."""
        merged: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
        for (sass, ptx), n in self.kernel_sets.items():
            key = (
                tuple(c for c in map(_cc, sass) if c in known_cc),
                tuple(c for c in map(_cc, ptx) if c in known_cc),
            )
            merged[key] = merged.get(key, 0) + n
        ordered = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
        return [{"sass": list(s), "ptx": list(p), "sets": n} for (s, p), n in ordered]


def _isa_key(isa: str) -> tuple[int, ...]:
    return tuple(int(p) for p in isa.split("."))


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    version: str
    python: str
    requires_python: str | None
    variants: tuple[Variant, ...]
    # off linux/amd64: (variant, why) of the variants the index has no wheel of this platform for
    missing: tuple[tuple[str, str], ...] = ()


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
    # the wheels read: linux/amd64's (x86_64) or another platform's (aarch64). Off linux/amd64 a
    # CPU build is a row too (variant `cpu`, read from METADATA alone): that the platform's wheel
    # of the release carries no CUDA is the fact.
    machine: Machine = "x86_64"

    @property
    def cpu_rows(self) -> bool:
        return self.machine != machine_of(DEFAULT_PLATFORM)

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
        tensorflow): that wheel scanned, its variant read by `variant` (None: not a CUDA build).
        Off linux/amd64 the METADATA is read first, and a CPU build's members are not scanned."""
        out = []
        files = self.by_version(cfg["package"])
        for v in self.versions(cfg["package"], known, cfg["since"]):
            wheel = pick_wheel(files[v], self.machine)
            if wheel is None:
                self.report.skipped.append(f"{fw} {v}: no Linux {self.machine} wheel")
                continue
            scan = self.scan(wheel, scan_patterns(cfg, cpu=True) if self.cpu_rows else tuple(cfg["scan"]))
            var = variant(scan)
            if var is None and self.cpu_rows:
                var = Variant(name=CPU)
            elif var is None:
                self.report.skipped.append(f"{fw} {v}: its wheel requires no CUDA (a CPU build)")
                continue
            elif self.cpu_rows:
                scan = self.scan(wheel, scan_patterns(cfg, cpu=False))
            var.add(scan)
            python = python_range(files[v], scan.requires_python, self.machine)
            out.append(
                Release(version=str(v), python=python, requires_python=scan.requires_python, variants=(var,))
            )
        return out

    def one_wheel_framework(self, fw: str, cfg: dict[str, Any], known: Iterable[str]) -> list[Release]:
        """A "one_wheel" framework (torch, tensorflow): its module names the variant from the
        wheel's requirements (refresh.yaml's `extra` active where it names one)."""
        read = registry.get(fw).read_variant

        def variant(scan: WheelScan) -> Variant | None:
            reqs = requirements(scan.metadata(), cfg.get("extra"), self.machine)
            facts = read(reqs)
            if facts is None:
                return None
            var = Variant(name=facts.name, cuda=facts.cuda, cudnn=facts.cudnn, nccl=facts.nccl)
            _with_compiler(var, cfg, reqs)  # refresh.yaml's `compiler` (tensorflow's XLA)
            return var

        return self.one_wheel(fw, cfg, known, variant)

    # -- "plugins" (jax): jax[cudaNN] -> jax-cudaNN-plugin (+ its pjrt); CUDA from the PTX ISA it was
    # built with
    def plugins(
        self, fw: str, cfg: dict[str, Any], known: Iterable[str], isa_cuda: dict[str, str]
    ) -> list[Release]:
        out, m = [], self.machine
        base_files = self.by_version(cfg["package"])
        py_files = self.by_version(cfg["python_from"])
        for v in self.versions(cfg["package"], known, cfg["since"]):
            wheel = pick_wheel(base_files[v], self.machine)
            if wheel is None:
                continue
            base_md = self.scan(wheel, ()).metadata()
            variants: list[Variant] = []
            missing: list[tuple[str, str]] = []
            for name, (plugin, pjrt) in sorted(cfg["plugins"].items()):
                want = next((r for r in requirements(base_md, name, m) if r.name == plugin), None)
                if want is None:
                    continue
                plugin_v = _newest(self.by_version(plugin), want.specifier)
                if plugin_v is None:
                    why = f"no {plugin} release matches {want.specifier}"
                    self.report.skipped.append(f"{fw} {v} {name}: {why}")
                    continue
                pw = pick_wheel(self.by_version(plugin)[plugin_v], m)
                if pw is None or not _linux_wheel(pw, m):
                    why = f"{plugin} {plugin_v} has no Linux {m} wheel on {self.index.location}"
                    self.report.skipped.append(f"{fw} {v} {name}: {why}")
                    missing.append((name, why))
                    continue
                pscan = self.scan(pw, tuple(cfg["scan"]))
                var = Variant(name=name)
                pmd = pscan.metadata()
                # the CUDA wheels: the plugin's with-cuda extra, or (before it had one) the base
                # package's own extra
                with_cuda = requirements(pmd, "with-cuda", m) or requirements(pmd, "with_cuda", m)
                with_cuda += requirements(base_md, name, m)
                var.cudnn = xy(pinned(with_cuda, r"nvidia-cudnn-cu\d+"))
                var.nccl = pinned(with_cuda, r"nvidia-nccl-cu\d+")
                _with_compiler(var, cfg, with_cuda)
                var.add(pscan)
                pjrt_req = next((r for r in requirements(pscan.metadata(), None, m) if r.name == pjrt), None)
                pjrt_v = _newest(self.by_version(pjrt), pjrt_req.specifier) if pjrt_req else None
                if pjrt_v is not None and (jw := pick_wheel(self.by_version(pjrt)[pjrt_v], m)) is not None:
                    var.add(self.scan(jw, tuple(cfg["scan"])))
                var.cuda = isa_cuda.get(var.ptx_isa or "")
                variants.append(var)
            if not variants and not missing and self.cpu_rows:
                continue  # no CUDA plugin for this platform: nothing to say of the release here
            extras = [r for extra in cfg["plugins"] for r in requirements(base_md, extra, m)]
            lib_reqs = [*requirements(base_md, None, m), *extras]
            lib = next((r for r in lib_reqs if r.name == cfg["python_from"]), None)
            lib_v = _newest(py_files, lib.specifier) if lib else None
            python = python_range(py_files[lib_v], None, m) if lib_v else (base_md.requires_python or "")
            out.append(
                Release(
                    version=str(v),
                    python=python,
                    requires_python=base_md.requires_python,
                    variants=tuple(variants),
                    missing=tuple(missing) if self.cpu_rows else (),
                )
            )
        return out

    def libraries(self, names: list[str]) -> dict[str, list[str]]:
        return {n: [str(v) for v, _f in reversed(list(releases(self.files(n))))][:12] for n in names}


def _with_compiler(var: Variant, cfg: dict[str, Any], reqs: list[Requirement]) -> None:
    """The compiler an XLA framework runs (refresh.yaml `compiler`), with the requirement that
    brings its ptxas (an nvidia-cuda-nvcc pin or floor)."""
    comp = cfg.get("compiler")
    if not comp:
        return
    var.compiler = comp
    found = next((r for r in reqs if re.fullmatch(comp["ptxas"], r.name)), None)
    var.ptxas = f"{found.name}{found.specifier}" if found is not None and found.specifier else None


def _newest(by_version: dict[Version, list[IndexFile]], spec: SpecifierSet) -> Version | None:
    fitting = [v for v in by_version if spec.contains(v, prereleases=False)]
    return max(fitting, default=None)


# --------------------------------------------------------------------------- the files


def isa_table(matrix_dir: Path) -> dict[str, str]:
    """PTX ISA -> the CUDA X.Y that introduced it (matrices/ptx_isa.yaml)."""
    data = yaml.safe_load((matrix_dir / "ptx_isa.yaml").read_text())
    return {str(r["isa"]): str(r["cuda"]) for r in data["isa"]}


def render(
    framework: str,
    rows: list[Release],
    known_cc: set[str],
    index: str,
    when: str,
    platform: Platform = DEFAULT_PLATFORM,
) -> str:
    """The generated file: deterministic (sorted, no timestamps but the review date)."""
    doc: dict[str, Any] = {"schema_version": 1, "framework": framework}
    if platform != DEFAULT_PLATFORM:
        doc |= {"platform": platform, "index": index}  # the resolver installs these rows from `index`
    doc |= {
        "source": f"envbuilder matrix refresh from {index}: each row names the wheels it was read from "
        "(file name and sha256); sass/ptx/ptx_isa/kernel_sets from their fatbins (the .nv_fatbin sections "
        "and those kept in data sections), compiler targets from the sm_XY names in the XLA binary, "
        "python from the CPython wheels published, cuda/cudnn/nccl and compiler ptxas from their nvidia-* "
        "requirements",
        "reviewed": when,
        "releases": [
            {
                "version": r.version,
                "python": r.python,
                "requires_python": r.requires_python,
                "variants": [v.row(known_cc) for v in r.variants],
            }
            | ({"missing": [{"variant": n, "reason": why} for n, why in r.missing]} if r.missing else {})
            for r in sorted(rows, key=lambda r: Version(r.version))
        ],
    }
    curated = (
        f"matrices/frameworks/{framework}.yaml"
        if platform == DEFAULT_PLATFORM
        else "matrices/platforms.yaml (these rows win over its rows of the same release and variant)"
    )
    head = (
        f"# GENERATED by `envbuilder matrix refresh` -- do not edit; rerun it (matrices/refresh.yaml says\n"
        f"# what it reads). Curated facts for {framework} live in {curated}.\n"
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
    platforms: tuple[Platform, ...] = (DEFAULT_PLATFORM,),
    cache: Path | None = None,
    today: str,
    log: Log = lambda _m: None,
) -> RefreshResult:
    """Read the index and the wheels of each platform, and compute the generated files (nothing
    is written here: `write_result` does that). Raises PackageIndexError when the index or a
    wheel cannot be read, MatrixError when matrices/refresh.yaml is malformed."""
    folder = matrix_dir or resources.matrices_dir()
    try:
        cfg = yaml.safe_load((folder / "refresh.yaml").read_text())["frameworks"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise MatrixError(f"{folder / 'refresh.yaml'} cannot be read: {exc}") from exc
    report = Report()
    known_cc = {a.cc for a in matrix.gpus.archs}
    isa_cuda = isa_table(folder)
    files = []
    listings: dict[str, list[IndexFile]] = {}  # one index listing per project, for every platform
    for platform in platforms:
        r = Refresher(
            index=index,
            cache=cache or cache_dir(),
            log=log,
            report=report,
            _files=listings,
            machine=machine_of(platform),
        )
        for fw in frameworks:
            table = next(t for t in matrix.frameworks if t.name == fw)
            known = [rel.version for rel in table.releases if any(v.cuda for v in rel.variants)]
            if registry.get(fw).FACTS.refresh == "plugins":
                rows = r.plugins(fw, cfg[fw], known, isa_cuda)
            else:
                rows = r.one_wheel_framework(fw, cfg[fw], known)
            if platform == DEFAULT_PLATFORM:
                have = {rel.version for rel in table.releases}
                report.new_releases += [f"{fw} {row.version}" for row in rows if row.version not in have]
            rel_path = generated_file(fw, platform)
            old_path = folder / rel_path
            old = old_path.read_text() if old_path.is_file() else ""
            if not rows and not old and platform != DEFAULT_PLATFORM:
                continue  # no wheel of this platform on the index: no file to start
            files.append((rel_path, old, render(fw, rows, known_cc, index.location, today, platform)))
    r = Refresher(index=index, cache=cache or cache_dir(), log=log, report=report, _files=listings)
    libs = yaml.safe_load((folder / "refresh.yaml").read_text()).get("libraries") or []
    if libs:
        rel_path = f"{GENERATED}/cuda_libraries.yaml"
        old_path = folder / rel_path
        old = old_path.read_text() if old_path.is_file() else ""
        files.append((rel_path, old, render_libraries(r.libraries(libs), index.location, today)))
    return RefreshResult(files=tuple(files), report=report)


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
