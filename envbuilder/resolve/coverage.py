"""What a build covers beyond "the arch appears somewhere": SASS per kernel set (a build whose SASS
for a GPU is in only some of its fatbins JITs the rest from PTX), and the run-time compiler of an
XLA framework (a GPU its NVPTX backend or its ptxas does not know cannot run jitted code).

The threshold of "full" SASS is every kernel set that carries code for the GPU (100%): the CUDA
runtime loads each fatbin as its own module, and a module without SASS for the GPU is JIT-compiled
from its PTX when its kernels are first used, which fails on a driver older than the PTX's ISA
(CUDA_ERROR_UNSUPPORTED_PTX_VERSION). Kernel sets with no code for the GPU at all (neither SASS nor
PTX that runs on it) are left out: they are arch-specific kernels a framework dispatches only on
their own GPU (torch 2.15.0's libtorch_cuda.so: 29 fatbins of sm_90 SASS only and 29 of sm_100 only,
next to 476 that carry every arch), and counting them would call every other GPU "partial".
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from packaging.version import Version

from envbuilder.archs import matrix_targets
from envbuilder.matrix.model import Compiler, KernelSet, Matrix
from envbuilder.versions import major_minor


@dataclass(frozen=True, slots=True)
class Coverage:
    """Of the kernel sets that carry code for a GPU, how many carry SASS that runs on it."""

    covered: int
    usable: int

    @property
    def partial(self) -> bool:
        return self.covered < self.usable

    def share(self) -> str:
        """'249 of 1,398 kernel sets (18%)'."""
        pct = 100 * self.covered / self.usable if self.usable else 100.0
        return f"{self.covered:,} of {self.usable:,} kernel sets ({pct:.0f}%)"


@functools.lru_cache(maxsize=4096)
def sass_coverage(kernel_sets: tuple[KernelSet, ...], gpu: tuple[int, int]) -> Coverage:
    """How the kernel sets of a build cover a GPU of compute capability `gpu` with SASS (the
    module docstring says which sets count)."""
    covered = usable = 0
    for ks in kernel_sets:
        targets = matrix_targets(ks.sass, ks.ptx)
        runs = [t for t in targets if t.runs_on(gpu)]
        if not runs:
            continue
        usable += ks.sets
        if any(t.kind == "sass" for t in runs):
            covered += ks.sets
    return Coverage(covered=covered, usable=usable)


def compiler_gap(matrix: Matrix, compiler: Compiler, cc: str) -> str | None:
    """Why the run-time compiler cannot target compute capability `cc`, or None when it can: the
    GPU must be a target of its NVPTX backend and known to its ptxas's CUDA (cuda.yaml archs)."""
    if cc not in compiler.targets:
        newest = max(compiler.targets, key=Version, default=None)
        upto = f"up to sm_{newest.replace('.', '')}" if newest else "no sm target"
        return f"its NVPTX backend names {upto}, not sm_{cc.replace('.', '')} (read from the binary)"
    cuda = compiler.ptxas_cuda
    if cuda is None:  # the system's ptxas, or a requirement that names no CUDA major
        return None
    archs = [r.archs for r in matrix.cuda.releases if major_minor(r.version) == cuda]
    if archs and cc not in archs[-1]:
        return f"its ptxas ({compiler.ptxas}: CUDA {cuda}) cannot compile for sm_{cc.replace('.', '')}"
    return None
