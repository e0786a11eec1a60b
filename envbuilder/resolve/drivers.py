"""What a driver means for CUDA: the newest CUDA it runs natively, each CUDA major's
minor-version-compatibility floor, the toolkit driver of a CUDA release."""

from __future__ import annotations

import functools

from envbuilder.matrix.model import CudaRelease, Matrix
from envbuilder.versions import major, major_minor, parse_driver, parse_version


def native_cuda(matrix: Matrix, driver: str) -> str | None:
    """The newest CUDA X.Y a driver supports without any compatibility layer (what nvidia-smi
    prints as "CUDA Version"): the newest release whose toolkit driver is <= the driver."""
    return _native_cuda(matrix.cuda.releases, driver)


@functools.lru_cache(maxsize=64)  # the resolver asks once per candidate for the same driver
def _native_cuda(releases: tuple[CudaRelease, ...], driver: str) -> str | None:
    best: str | None = None
    for r in releases:
        if parse_driver(r.min_driver) <= parse_driver(driver):
            best = major_minor(r.version)
    return best


def first_release(matrix: Matrix, cuda: str) -> CudaRelease:
    for r in matrix.cuda.releases:
        if major_minor(r.version) == major_minor(cuda):
            return r
    raise AssertionError(f"matrix check guarantees CUDA {cuda} exists")  # pragma: no cover


def mvc_floor(matrix: Matrix, cuda: str) -> str:
    """Lowest driver on which any build of this CUDA major runs (minor-version compatibility)."""
    for m in matrix.cuda.majors:
        if m.major == major(cuda):
            return m.mvc_min_driver
    raise AssertionError(f"matrix check guarantees CUDA major of {cuda} exists")  # pragma: no cover


def jit_floor(matrix: Matrix, isa: str) -> tuple[str, str] | None:
    """(the CUDA X.Y that introduced PTX ISA `isa`, the lowest driver that JIT-compiles it: the
    toolkit driver of the first CUDA release at or after it, ptx_isa.yaml + cuda.yaml); None when
    the ISA is not in the table."""
    cuda = next((p.cuda for p in matrix.ptx_isa if p.isa == isa), None)
    if cuda is None:
        return None
    for r in matrix.cuda.releases:
        if parse_version(major_minor(r.version)) >= parse_version(cuda):
            return cuda, r.min_driver
    return None
