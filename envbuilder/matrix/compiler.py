"""The ptxas an XLA framework's compiler runs: which CUDA the `nvidia-cuda-nvcc` requirement of
its wheels installs, decided once when the matrix is loaded (resolve only compares)."""

from __future__ import annotations

import re
from dataclasses import replace

from packaging.version import Version

from envbuilder.matrix.model import CudaMatrix, FrameworkMatrix
from envbuilder.versions import major_minor


def ptxas_cuda(cuda: CudaMatrix, ptxas: str) -> str | None:
    """The CUDA X.Y of the ptxas a requirement such as 'nvidia-cuda-nvcc-cu12==12.5.82' installs:
    a pin's own X.Y; for a floor, the newest CUDA release of the package's major in cuda.yaml,
    which is what pip installs today. None when it names no CUDA major."""
    # imported here: ~10 ms that a command served from the compiled matrix never needs
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(ptxas)
    except InvalidRequirement:
        return None
    pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
    if pins:
        return major_minor(pins[0])
    # the major: the name's -cuNN (CUDA 12's wheels), else its bound's (nvidia-cuda-nvcc>=13.0.48)
    m = re.search(r"-cu(\d+)$", req.name)
    bounds = [s.version for s in req.specifier if s.operator in (">=", "~=", ">")]
    if m is None and not bounds:
        return None
    cuda_major = int(m.group(1)) if m is not None else Version(bounds[0]).release[0]
    line = [r.version for r in cuda.releases if Version(r.version).release[0] == cuda_major]
    fitting = [v for v in line if req.specifier.contains(v, prereleases=True)] or line
    return major_minor(max(fitting, key=Version)) if fitting else None


def with_ptxas_cuda(cuda: CudaMatrix, frameworks: tuple[FrameworkMatrix, ...]) -> tuple[FrameworkMatrix, ...]:
    """The framework tables with each compiler's `ptxas_cuda` filled in from cuda.yaml."""
    out = []
    for table in frameworks:
        releases = []
        for rel in table.releases:
            variants = tuple(
                replace(v, compiler=replace(v.compiler, ptxas_cuda=ptxas_cuda(cuda, v.compiler.ptxas)))
                if v.compiler is not None and v.compiler.ptxas is not None
                else v
                for v in rel.variants
            )
            releases.append(replace(rel, variants=variants))
        out.append(replace(table, releases=tuple(releases)))
    return tuple(out)
