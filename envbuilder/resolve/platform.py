"""Which platform a resolution is for, and what the platform rules out before any candidate: a
GPU that only exists in hosts of another platform, or one envbuilder gives no stack for there
(Jetson on L4T). The facts are matrices/platforms.yaml (matrix/platforms.py).
"""

from __future__ import annotations

from envbuilder.host.model import Host
from envbuilder.matrix.model import Matrix
from envbuilder.matrix.platforms import gpu_platform
from envbuilder.platforms import DEFAULT_PLATFORM, Platform, parse_platform
from envbuilder.resolve.model import Rejection, Request


def effective_platform(matrix: Matrix, request: Request, host: Host) -> tuple[Platform, str | None]:
    """(the platform, a warning when it was inferred from the GPUs). The order: the request's
    (--platform); the probed host's own; the one platform every named GPU exists in (GH200,
    GB10, Jetson Thor, T4G: linux/arm64); else linux/amd64."""
    if request.platform is not None:
        return request.platform, None
    if host.platform is not None:
        return host.platform, None
    rows = [(g, gpu_platform(matrix, g.model)) for g in host.gpus]
    only = {row.platform for _, row in rows if row is not None}
    if len(only) == 1:
        platform = parse_platform(only.pop(), "platforms.yaml platform")
        named = ", ".join(sorted({g.name for g, row in rows if row is not None}))
        return platform, (
            f"resolving for {platform}: {named} is found only in {platform} hosts "
            f"(give --platform to choose; matrices/platforms.yaml)"
        )
    return DEFAULT_PLATFORM, None


def platform_rejections(matrix: Matrix, platform: Platform, host: Host) -> list[Rejection]:
    """Every-stack rejections: a GPU of another platform's hosts, or one without a stack here."""
    out = []
    for g in host.gpus:
        row = gpu_platform(matrix, g.model)
        if row is None:
            continue
        if row.platform != platform:
            out.append(
                Rejection(
                    candidate="every stack",
                    component="platform",
                    reason=f"{g.name} only exists in {row.platform} hosts, not {platform} ({row.source}); "
                    f"resolve with --platform {row.platform}",
                )
            )
        elif row.unsupported:
            out.append(
                Rejection(
                    candidate="every stack",
                    component="platform",
                    reason=f"{g.name} {row.unsupported} ({row.source})",
                )
            )
    return out
