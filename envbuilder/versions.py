"""Version parsing and comparison: framework/CUDA versions, driver versions, compute capabilities.

One place for "12.4 matches 12.4.1" and for reading a driver branch, so no module compares
version strings by hand.
"""

from __future__ import annotations

import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envbuilder.errors import UsageError

_DRIVER_RE = re.compile(r"^\d{3,4}(\.\d{1,3}){0,2}$")
_CC_RE = re.compile(r"^(\d{1,2})\.(\d)$")
_XY_RE = re.compile(r"^\d+(\.\d+){0,3}$")


def parse_version(text: str, what: str = "version") -> Version:
    """Parse a dotted version. Raises UsageError with a hint on malformed input."""
    if not isinstance(text, str) or not _XY_RE.match(text.strip()):
        raise UsageError(
            f"malformed {what} {text!r}",
            hint=f"write the {what} as dotted numbers, e.g. '12.4' or '2.11.0'",
        )
    try:
        return Version(text.strip())
    except InvalidVersion as exc:  # pragma: no cover - the regex already guards this
        raise UsageError(f"malformed {what} {text!r}") from exc


def parse_driver(text: str) -> Version:
    """Parse an NVIDIA driver version such as '535.104.05' or a branch such as '580'.

    Raises UsageError on anything else.
    """
    if not isinstance(text, str) or not _DRIVER_RE.match(text.strip()):
        raise UsageError(
            f"malformed driver version {text!r}",
            hint="give the driver as nvidia-smi prints it, e.g. --driver 535.104.05 (or a branch: 580)",
        )
    return Version(text.strip())


def driver_branch(driver: str) -> int:
    """The branch number of a driver version: '535.104.05' -> 535."""
    return int(parse_driver(driver).release[0])


def parse_cc(text: str) -> tuple[int, int]:
    """Parse a compute capability '8.6' -> (8, 6). Raises UsageError on malformed input."""
    m = _CC_RE.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise UsageError(
            f"malformed compute capability {text!r}",
            hint="write it as MAJOR.MINOR, e.g. --cc 8.6 (nvidia-smi --query-gpu=compute_cap --format=csv)",
        )
    return int(m.group(1)), int(m.group(2))


def cc_str(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


def parse_specifier(text: str, what: str = "requirement") -> SpecifierSet:
    """Parse a PEP 440 specifier set such as '>=3.10,<3.15'. Raises UsageError."""
    try:
        return SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise UsageError(
            f"malformed {what} {text!r}: {exc}",
            hint="use PEP 440 specifiers, e.g. '==2.11.*' or '>=2.16,<2.20'",
        ) from exc


def major_minor(version: str) -> str:
    """'12.4.1' -> '12.4'; '12.4' -> '12.4'."""
    v = parse_version(version)
    release = (*v.release, 0)
    return f"{release[0]}.{release[1]}"


def major(version: str) -> int:
    return parse_version(version).release[0]


def version_matches(prefix: str, full: str) -> bool:
    """True when `full` lies inside the release line `prefix`: '12.4' matches '12.4.1' and '12.4',
    not '12.40' or '12.5'."""
    p = parse_version(prefix).release
    f = parse_version(full).release
    return f[: len(p)] == p


def at_least(version: str, minimum: str) -> bool:
    """version >= minimum, both parsed as versions (driver or dotted)."""
    return Version(version) >= Version(minimum)
