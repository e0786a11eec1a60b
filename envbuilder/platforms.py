"""The platform axis: which machine a stack is for, in Docker's spelling (`linux/amd64`,
`linux/arm64`), read from any common spelling (`x86_64`, `aarch64`, `arm64`), and the name the
package lock and wheel tags use for it (`x86_64`, `aarch64`). The one place these names meet.
"""

from __future__ import annotations

from typing import Literal

from envbuilder.errors import UsageError

Platform = Literal["linux/amd64", "linux/arm64"]
Machine = Literal["x86_64", "aarch64"]
PLATFORMS: tuple[Platform, ...] = ("linux/amd64", "linux/arm64")
DEFAULT_PLATFORM: Platform = "linux/amd64"  # what the facts of frameworks/*.yaml describe
_MACHINE: dict[Platform, Machine] = {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}
# every spelling people and tools use -> the Docker name (`uname -m`, Debian's dpkg, Go's GOARCH)
_SPELLINGS: dict[str, Platform] = {
    "linux/amd64": "linux/amd64",
    "amd64": "linux/amd64",
    "x86_64": "linux/amd64",
    "x86-64": "linux/amd64",
    "x64": "linux/amd64",
    "linux/arm64": "linux/arm64",
    "linux/arm64/v8": "linux/arm64",
    "arm64": "linux/arm64",
    "aarch64": "linux/arm64",
    "arm64/v8": "linux/arm64",
}
_HINT = "give linux/amd64 or linux/arm64 (x86_64 and aarch64 are read as those)"


def parse_platform(text: str, what: str = "--platform") -> Platform:
    """'aarch64' -> 'linux/arm64'. Raises UsageError for a platform envbuilder has no facts for."""
    found = _SPELLINGS.get(text.strip().lower())
    if found is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise UsageError(f"{what} {shown!r} is not a platform envbuilder builds for", hint=_HINT)
    return found


def machine_of(platform: Platform) -> Machine:
    """'linux/arm64' -> 'aarch64': the package lock's and the wheels' name for the platform."""
    return _MACHINE[platform]


def platform_of_machine(machine: str) -> Platform | None:
    """`uname -m` / platform.machine() -> the platform; None for one envbuilder has no facts for."""
    return _SPELLINGS.get(machine.strip().lower())


def short_name(platform: Platform) -> str:
    """'linux/arm64' -> 'arm64' (stack ids, image tags)."""
    return platform.rpartition("/")[2]


def this_machine() -> Platform | None:
    """The platform of the machine envbuilder runs on (platform.machine()), None when unknown."""
    import platform as _platform

    return platform_of_machine(_platform.machine())
