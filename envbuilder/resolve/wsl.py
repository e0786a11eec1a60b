"""WSL2: the driver nvidia-smi prints in the Linux guest is the Windows driver (577.00, 573.76). Here
it becomes the Linux driver that supports the same CUDA, which is what every other rule compares
(cuda.yaml `wsl` says why and from where); the Windows version stays on the host for the output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from envbuilder.errors import UsageError
from envbuilder.host.model import Host
from envbuilder.matrix.model import CudaRelease, Matrix
from envbuilder.versions import driver_branch, major_minor, parse_driver


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowsDriver:
    """A Windows driver and the Linux driver it counts as."""

    windows: str  # as printed: "577.00"
    linux: str  # the Linux toolkit driver of `release`: "575.57.08"
    release: CudaRelease  # the newest CUDA release it supports (as far as the matrix can tell)
    how: str  # why that release


def windows_driver(matrix: Matrix, windows: str) -> WindowsDriver | None:
    """The Linux equivalent of a Windows driver: the newer of (a) the newest CUDA release whose
    Windows toolkit driver it reaches ([NV-RN] Table 3, up to 12.9) and (b) the first release of
    the Linux branch its number falls in (R580's Windows drivers are 580.xx-581.xx). None for a
    driver older than every release. Raises UsageError for a malformed version."""
    have = parse_driver(windows)
    releases = matrix.cuda.releases  # sorted by version
    by_column = [
        r for r in releases if r.windows_driver is not None and parse_driver(r.windows_driver) <= have
    ]
    branches = sorted({driver_branch(r.min_driver) for r in releases})
    below = [b for b in branches if b <= driver_branch(windows)]
    by_branch = next((r for r in releases if below and driver_branch(r.min_driver) == below[-1]), None)
    picks: list[tuple[CudaRelease, str]] = []
    if by_column:
        r = by_column[-1]
        picks.append((r, f"the Windows driver of CUDA {r.label} is {r.windows_driver}"))
    if by_branch is not None:
        picks.append((by_branch, f"a Windows driver of branch R{below[-1]} (the first CUDA of that branch)"))
    if not picks:
        return None
    release, how = max(picks, key=lambda p: parse_driver(p[0].min_driver))
    return WindowsDriver(windows=windows, linux=release.min_driver, release=release, how=how)


def host_under_wsl(matrix: Matrix, host: Host) -> Host:
    """The host with its Windows driver (host.driver, as nvidia-smi printed it under WSL2) replaced
    by the Linux driver it counts as, the Windows one kept in `windows_driver`. Raises UsageError
    when the driver is older than any CUDA release the matrix knows (no CUDA on WSL2)."""
    if host.driver is None or host.windows_driver is not None:
        return host
    got = windows_driver(matrix, host.driver)
    if got is None:
        raise UsageError(
            f"Windows driver {host.driver} (WSL2) is older than any CUDA release envbuilder knows",
            hint="CUDA on WSL2 needs a Windows driver of R470 or newer (NVIDIA's CUDA on WSL User Guide): "
            "update the driver on Windows",
        )
    return replace(host, driver=got.linux, windows_driver=host.driver)


def wsl_warning(matrix: Matrix, host: Host) -> str | None:
    """What resolve says about a WSL2 host: the mapping and what WSL2 lacks; None elsewhere."""
    if host.windows_driver is None or host.driver is None:
        return None
    got = windows_driver(matrix, host.windows_driver)
    cuda = major_minor(got.release.version) if got else "?"
    how = got.how if got else "given"
    lacks = "; ".join(limit.lacks for limit in matrix.cuda.wsl_limits)
    return (
        f"WSL2: driver {host.windows_driver} is the Windows driver; it supports CUDA {cuda} ({how}) and is "
        f"checked as the Linux driver {host.driver}. WSL2 differs from a Linux host: {lacks} "
        "(`envbuilder doctor` on the machine says more)"
    )
