"""Version parsing and comparison: framework/CUDA versions, driver versions, compute capabilities.

One place for "12.4 matches 12.4.1", for reading a driver branch and for the rules a version typed
on the command line must follow (a driver as NVIDIA prints it, two or three parts, or a bare
branch; Python as X.Y; ASCII digits only), so no module compares or checks version strings by hand.

The parsers are memoised (the resolver asks about the same few hundred strings thousands of
times); they return immutable values, and a refused input raises again on every call.
"""

from __future__ import annotations

import functools
import re

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envbuilder.errors import UsageError

# [0-9], not \d: \d also matches full-width and other Unicode digits, which int() and Version()
# would then accept (full-width "550" reads as 550), so a typed value would not be what the
# matrix compares.
_DRIVER_RE = re.compile(r"^[0-9]{3,4}(\.[0-9]{1,3}){0,2}$")
_CC_RE = re.compile(r"^([0-9]{1,2})\.([0-9])$")
# At most 12 digits a part: no version of ours has more, and packaging's Version() raises a bare
# ValueError past Python's 4300-digit int limit (issue 18: a 5000-digit version was a traceback).
_XY_RE = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,12}){0,3}$")
# A requirement given on the command line or in a spec: longer is a mistake or an attack.
MAX_REQUIREMENT = 200
_QUOTED = 60  # characters of a refused value an error message shows
_PYTHON_XY_RE = re.compile(r"^[0-9]\.[0-9]{1,2}$")


def quote_input(text: object) -> str:
    """The value as an error message quotes it, naming the first non-ASCII character in it
    ("'...' (non-ASCII character '...' U+FF15)" for a full-width 5), since such a value can look
    right on screen. A long value is cut to its first characters and its length: an error line never carries a
    whole document or a 5000-digit number."""
    odd = next((c for c in text if not c.isascii()), None) if isinstance(text, str) else None
    shown = repr(text)
    if isinstance(text, str) and len(text) > _QUOTED:
        shown = f"{text[:_QUOTED]!r}... ({len(text)} characters)"
    return shown if odd is None else f"{shown} (non-ASCII character {odd!r} U+{ord(odd):04X})"


@functools.lru_cache(maxsize=4096)
def parse_version(text: str, what: str = "version") -> Version:
    """Parse a dotted version. Raises UsageError with a hint on malformed input."""
    if not isinstance(text, str) or not _XY_RE.match(text.strip()):
        raise UsageError(
            f"malformed {what} {quote_input(text)}",
            hint=f"write the {what} as dotted numbers, e.g. '12.4' or '2.11.0'",
        )
    try:
        return Version(text.strip())
    except InvalidVersion as exc:  # pragma: no cover - the regex already guards this
        raise UsageError(f"malformed {what} {text!r}") from exc


@functools.lru_cache(maxsize=4096)
def parse_driver(text: str) -> Version:
    """Parse a driver version as the matrix states facts about drivers: '535.104.05', a table's
    '570.26' or a branch floor such as '580'. Raises UsageError on anything else.

    A version given for a host goes through `parse_host_driver`.
    """
    if not isinstance(text, str) or not _DRIVER_RE.match(text.strip()):
        raise UsageError(
            f"malformed driver version {quote_input(text)}",
            hint="give the driver as nvidia-smi prints it, e.g. --driver 535.104.05 (or a branch: 580)",
        )
    return Version(text.strip())


def parse_host_driver(text: str) -> str:
    """Check a driver version given for a host (`--driver`, a fleet node's label) and return it as
    given: the version nvidia-smi prints, three parts ('550.54.14', '580.95.05') or two ('470.86',
    '550.135', '575.64', Jetson Thor's '580.00', a Windows driver under WSL2 such as '577.00'), or a
    bare branch ('580'), which stands for the oldest driver of that branch (580.0.0, the most
    conservative answer; the resolver says so).

    A two-part version is a full version: NVIDIA has published Linux drivers numbered X.Y for
    years (455.23, 470.86, 550.135), and X.Y compares as X.Y.0 (580.00 < 580.65.06 < 580.95.05).
    Raises UsageError for anything else.
    """
    parse_driver(text)
    return text.strip()


def is_driver_branch(driver: str) -> bool:
    """True for a bare branch ('580') given where a driver version goes."""
    return len(parse_driver(driver).release) == 1


def parse_python_xy(text: str) -> str:
    """Check a CPython version given as X.Y ('3.12'). Raises UsageError for '3', '3.11.7',
    'py3.11' and anything else: the patch level comes with the base image."""
    if not isinstance(text, str) or not _PYTHON_XY_RE.match(text.strip()):
        raise UsageError(
            f"malformed Python version {quote_input(text)}: give it as X.Y",
            hint="give the CPython minor version as X.Y, e.g. --python 3.12 (the patch level comes "
            "with the base image)",
        )
    return text.strip()


def driver_branch(driver: str) -> int:
    """The branch number of a driver version: '535.104.05' -> 535."""
    return int(parse_driver(driver).release[0])


@functools.lru_cache(maxsize=4096)
def parse_cc(text: str) -> tuple[int, int]:
    """Parse a compute capability '8.6' -> (8, 6). Raises UsageError on malformed input."""
    m = _CC_RE.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise UsageError(
            f"malformed compute capability {quote_input(text)}",
            hint="write it as MAJOR.MINOR, e.g. --cc 8.6 (nvidia-smi --query-gpu=compute_cap --format=csv)",
        )
    return int(m.group(1)), int(m.group(2))


def cc_str(cc: tuple[int, int]) -> str:
    return f"{cc[0]}.{cc[1]}"


@functools.lru_cache(maxsize=1024)
def parse_specifier(text: str, what: str = "requirement") -> SpecifierSet:
    """Parse a PEP 440 specifier set such as '>=3.10,<3.15'. Raises UsageError.

    The result is shared between callers (memoised): use it, never change it."""
    try:
        return SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise UsageError(
            f"malformed {what} {text!r}: {exc}",
            hint="use PEP 440 specifiers, e.g. '==2.11.*' or '>=2.16,<2.20'",
        ) from exc


@functools.lru_cache(maxsize=4096)
def major_minor(version: str) -> str:
    """'12.4.1' -> '12.4'; '12.4' -> '12.4'."""
    v = parse_version(version)
    release = (*v.release, 0)
    return f"{release[0]}.{release[1]}"


@functools.lru_cache(maxsize=4096)
def major(version: str) -> int:
    return parse_version(version).release[0]


@functools.lru_cache(maxsize=4096)
def version_matches(prefix: str, full: str) -> bool:
    """True when `full` lies inside the release line `prefix`: '12.4' matches '12.4.1' and '12.4',
    not '12.40' or '12.5'."""
    p = parse_version(prefix).release
    f = parse_version(full).release
    return f[: len(p)] == p


def at_least(version: str, minimum: str) -> bool:
    """version >= minimum, both parsed as versions (driver or dotted)."""
    return Version(version) >= Version(minimum)
