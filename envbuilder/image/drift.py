"""Drift: what an image holds against what its lock says it holds.

The image's installed set is read by the harness's stdlib collector (harness/installed.py, run
inside the image); a locked package that is missing, at another version, or (against a build
record) installed from another wheel is a Drift naming the package. `build` refuses to tag an
image with drift; `certify` fails one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder import resources
from envbuilder.errors import BuildFailedError, LockError
from envbuilder.image.lock import InstalledDist, LockFile
from envbuilder.image.packages import LockedPackage

COLLECTOR = "installed.py"  # in the harness folder the image carries


@dataclass(frozen=True, slots=True, kw_only=True)
class Drift:
    name: str
    expected: str  # what the lock (or the build record) says
    found: str  # what the image holds ("missing" when absent)

    def __str__(self) -> str:
        return f"{self.name}: locked {self.expected}, image has {self.found}"


def collector_command(python: str, harness_dir: str) -> list[str]:
    """The argv that prints the image's installed set (one JSON document on stdout)."""
    return [python, f"{harness_dir}/{COLLECTOR}"]


def inline_collector_command(python: str) -> list[str]:
    """The same collector for an image that does not carry the harness (a base image): its
    source given to `python -c` (stdlib only, so any Python 3.8+ runs it)."""
    source = (resources.harness_dir() / COLLECTOR).read_text(encoding="utf-8")
    return [python, "-c", source]


def provided_by_base(
    pins: Iterable[str], installed: Iterable[InstalledDist], base: str
) -> tuple[LockedPackage, ...]:
    """The framework group as the base environment holds it (group "base"): each pin (name==version,
    the stack's framework and companions) must be installed there at a version the pin admits
    (2.11.0+cu130 satisfies ==2.11.0). Raises LockError naming what the base lacks."""
    have = {d.name: d for d in installed}
    out: list[LockedPackage] = []
    problems: list[str] = []
    for pin in sorted(pins):
        req = Requirement(pin)
        name = canonicalize_name(req.name)
        dist = have.get(name)
        if dist is None:
            problems.append(f"{name} is not installed")
        elif not req.specifier.contains(dist.version, prereleases=True):
            problems.append(f"{name} is {dist.version}, the stack pins {req.specifier}")
        else:
            out.append(
                LockedPackage(
                    name=name, version=dist.version, wheel="", sha256=dist.record_sha256 or "",
                    size=None, urls=(), group="base",
                )
            )  # fmt: skip
    if problems:
        raise LockError(
            f"the base environment of {base} does not provide the stack's framework: {'; '.join(problems)}",
            hint="pick a stack that matches the base (e.g. --framework 'torch==X.Y.*' as the base has it), "
            "or build without --base-venv so the image installs the framework itself",
        )
    return tuple(out)


def parse_installed(stdout: str, where: str = "the image") -> tuple[InstalledDist, ...]:
    """The collector's document, checked. Raises BuildFailedError when it is not one."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        doc = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        doc = None
    dists = doc.get("distributions") if isinstance(doc, dict) else None
    if not isinstance(dists, list):
        raise BuildFailedError(f"could not read the installed packages of {where}: {stdout.strip()[-300:]!r}")
    out = []
    for d in dists:
        if not isinstance(d, dict) or not all(isinstance(d.get(k), str) for k in ("name", "version")):
            raise BuildFailedError(f"malformed installed-package entry from {where}: {d!r}"[:300])
        digest = d.get("record_sha256")
        digest = digest if isinstance(digest, str) else None
        out.append(InstalledDist(name=d["name"], version=d["version"], record_sha256=digest))
    return tuple(sorted(out, key=lambda x: x.name))


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def drift_from_lock(installed: Iterable[InstalledDist], locked: Sequence[LockedPackage]) -> list[Drift]:
    """Every locked package must be installed at its locked version (the silent fallback the field
    reports: a "torch 2.8 cu128" image holding 2.4.1+cu124). Extra packages are not drift here:
    the base environment may bring its own (pip, an NGC image's)."""
    have = {d.name: d for d in installed}
    out = []
    for pkg in sorted(locked, key=lambda p: p.name):
        dist = have.get(pkg.name)
        if dist is None:
            out.append(Drift(name=pkg.name, expected=pkg.version, found="missing"))
        elif not _same_version(dist.version, pkg.version):
            out.append(Drift(name=pkg.name, expected=pkg.version, found=dist.version))
    return out


def drift_from_build(installed: Iterable[InstalledDist], recorded: Iterable[InstalledDist]) -> list[Drift]:
    """The image against the installed set its build recorded: same names, versions and RECORD
    digests (another wheel of the same version shows here), nothing added."""
    have = {d.name: d for d in installed}
    want = {d.name: d for d in recorded}
    out = []
    for name in sorted(set(have) | set(want)):
        a, b = want.get(name), have.get(name)
        if b is None:
            out.append(Drift(name=name, expected=_describe(a), found="missing"))
        elif a is None:
            out.append(Drift(name=name, expected="not installed", found=_describe(b)))
        elif not _same_version(a.version, b.version) or a.record_sha256 != b.record_sha256:
            out.append(Drift(name=name, expected=_describe(a), found=_describe(b)))
    return out


def _describe(d: InstalledDist | None) -> str:
    if d is None:
        return "missing"
    return f"{d.version} (RECORD {d.record_sha256[:12] if d.record_sha256 else 'none'})"


def check_against_lock(
    installed: Sequence[InstalledDist], lock: LockFile, image_id: str
) -> tuple[list[Drift], str]:
    """Drift of an image's installed set from a lock: every locked package at its version, and,
    when the lock's build record is this image, the exact set with its RECORD digests. Returns
    (drifts, what was compared, for the record)."""
    platform = lock.build.platform if lock.build and lock.build.platform else "x86_64"
    locked = lock.package_lock(platform)
    drifts = drift_from_lock(installed, locked.packages) if locked else []
    what = f"{len(locked.packages)} locked packages ({platform})" if locked else "no package lock"
    if lock.build is not None and lock.build.image_id == image_id and lock.build.installed:
        drifts += [d for d in drift_from_build(installed, lock.build.installed) if d not in drifts]
        what += f" and the build's installed set ({len(lock.build.installed)} distributions)"
    return drifts, what


def summarize(drifts: Sequence[Drift], limit: int = 5) -> str:
    shown = "; ".join(str(d) for d in drifts[:limit])
    more = f"; and {len(drifts) - limit} more" if len(drifts) > limit else ""
    return shown + more
