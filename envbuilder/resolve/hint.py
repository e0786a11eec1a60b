"""What to do when nothing fits: a hint that follows the rejections' main cause. The GPU's arch
-> the newest release that has kernels for it; the driver -> the driver that unlocks the newest
stack. Both are found by resolving again with that one constraint lifted."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from packaging.version import Version

from envbuilder.matrix.model import Matrix
from envbuilder.platforms import DEFAULT_PLATFORM
from envbuilder.resolve.model import Resolution
from envbuilder.resolve.resolver import resolve

_EXPLAIN = "run with --explain to see each reason"


def no_stack_hint(matrix: Matrix, resolution: Resolution) -> str:
    """The hint for a resolution without a stack (NoCompatibleStackError's)."""
    counts = Counter(r.component for r in resolution.rejected)
    if not counts:
        return f"{_EXPLAIN}; relax the requirement"
    cause = counts.most_common(1)[0][0]
    req, host = resolution.request, resolution.host
    on = f" on {req.platform}" if req.platform not in (None, DEFAULT_PLATFORM) else ""
    if cause == "platform":
        every = [r for r in resolution.rejected if r.component == "platform" and r.candidate == "every stack"]
        if every:
            return f"{_EXPLAIN}; {every[0].reason}"
        return f"{_EXPLAIN}; no {req.requirement} build is published{on} (matrices/platforms.yaml)"
    if cause == "arch" and req.specifier:
        wider = resolve(matrix, replace(req, specifier=""), host)
        if wider.stack is not None:
            s = wider.stack
            return (
                f"{_EXPLAIN}; no {req.requirement} build has kernels for this GPU: the newest {s.framework} "
                f"release that has is {s.version} (--framework '{s.framework}=={s.version}')"
            )
        return f"{_EXPLAIN}; no {req.framework} release in the matrix has kernels for this GPU{on}"
    if cause == "arch":
        return f"{_EXPLAIN}; no {req.framework} release in the matrix has kernels for this GPU{on}"
    if cause == "compiler":  # XLA's run-time compiler: a newer release may know the GPU
        newer = resolve(matrix, replace(req, specifier=""), host) if req.specifier else None
        if newer is not None and newer.stack is not None:
            s = newer.stack
            return (
                f"{_EXPLAIN}; the XLA of {req.requirement} cannot compile for this GPU: the newest "
                f"{s.framework} release whose XLA can is {s.version} "
                f"(--framework '{s.framework}=={s.version}')"
            )
        return (
            f"{_EXPLAIN}; no {req.framework} release in the matrix has an XLA that compiles for this GPU{on}"
        )
    if cause == "driver" and host.driver is not None:
        newest = max((c.min_driver for c in matrix.cuda.releases), key=Version)
        unlocked = resolve(matrix, req, replace(host, driver=newest))
        if unlocked.stack is not None and unlocked.stack.min_driver:
            s = unlocked.stack
            return (
                f"{_EXPLAIN}; driver {host.driver} is too old for {req.requirement}: "
                f"driver >= {s.min_driver} unlocks {s.id}"
            ) + _forward_compat_hint(matrix, resolution)
    if cause == "installable" and req.python is not None:
        other = resolve(matrix, replace(req, python=None), host)
        if (found := other.stack) is not None:
            return (
                f"{_EXPLAIN}; {req.requirement} has no wheels for all of its install set on Python "
                f"{req.python}: Python {found.python} installs {found.id} (--python {found.python})"
            )
    return f"{_EXPLAIN}; relax the requirement ({cause} rejected most candidates)"


def _forward_compat_hint(matrix: Matrix, resolution: Resolution) -> str:
    """'; or --forward-compat ...' when CUDA forward compatibility would give a stack on this host
    (data-center GPUs, system-cuda: resolve/forward_compat.py); '' otherwise."""
    req = resolution.request
    if req.forward_compat or req.strategy == "bundled":
        return ""
    again = resolve(matrix, replace(req, forward_compat=True, strategy="system-cuda"), resolution.host)
    if again.stack is None or again.stack.forward_compat is None:
        return ""
    flags = "--forward-compat" + ("" if req.strategy else " --strategy system-cuda")
    return f"; or keep this driver: {flags} runs {again.stack.id} through {again.stack.forward_compat[0]}"
