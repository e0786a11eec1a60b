"""What envbuilder knows of one training framework, behind one small interface.

Each framework is one module of this package (torch.py, tensorflow.py, jax.py) that satisfies
`Framework` (a module is a valid Protocol implementation, as in cibuildwheel's `platforms/`):
its facts (package names, how its wheels name their CUDA build), the harness steps and workloads
its certification runs (named here, run image-side by envbuilder/harness/), the words `run
--monitor` looks for in its output, and how to read its build in a child interpreter. The
registry (envbuilder/frameworks/__init__.py) lists the modules; every stage reads them from it.
The release tables themselves stay data: matrices/frameworks/NAME.yaml, matrices/refresh.yaml.

Pure, imports no stage: it sits first in the flow (tests/unit/test_layout.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # resolve must not load packaging.requirements (tests/unit/test_cli_imports.py)
    from packaging.requirements import Requirement


RefreshKind = Literal["one_wheel", "plugins"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """Package names and wheel facts of one framework."""

    packages: tuple[str, ...]  # the distributions that are the framework (a pin on any names it)
    implied_by: tuple[str, ...] = ()  # packages that run on this framework only (Lightning, Flax)
    companions: tuple[str, ...] = ()  # packages a stack pins beside it (spec `companions:`)
    import_name: str  # what `import` takes (find_spec in a user's Python)
    # How `matrix refresh` reads its releases (matrices/refresh.yaml holds where):
    # "one_wheel": one CUDA wheel per release, its variant read by `read_variant`;
    # "plugins": a CPU wheel plus CUDA plugin wheels per variant (refresh.yaml `plugins`).
    refresh: RefreshKind = "one_wheel"


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessPlan:
    """What its certification runs, as the image-side harness names it (envbuilder/harness/ is
    stdlib-only and imports nothing of envbuilder, so the host names its pieces and
    tests/unit/test_frameworks.py checks the harness's tables agree)."""

    plan: Literal["torch", "xla"]  # harness/plan.py: run_path (torch) or xla_plan(XLA_FRAMEWORKS[name])
    steps_module: str  # the image-side module of its own steps and workloads (under harness/)
    smoke_step: str  # the step named for it: another framework's certification never counts it
    kernel_owners: tuple[str, ...]  # harness/inventory.py: package folders whose kernels are its own


@dataclass(frozen=True, slots=True, kw_only=True)
class MonitorHints:
    """What `run --monitor` (run/joblog.py, run/diagnosis.py) reads and says for it."""

    oom: re.Pattern[str]  # its out-of-memory message, as it prints it
    oom_example: str  # one such message, quoted from the framework (tests/unit/test_frameworks.py)
    checkpoint: str | None = None  # its activation checkpointing API (the out-of-memory advice)
    profiler: str | None = None  # its profiler (the advice for a GPU that waits)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileCache:
    """A cache on disk of what the framework compiles (kernels, graphs), named by one environment
    variable: certify and run point it into the image's JIT cache volume (certify/jit_cache.py),
    so a container starts with what earlier containers of that image compiled on this host."""

    env: str  # the variable that names its folder
    folder: str  # its folder's name inside the volume (below the CUDA driver's cache, at the top)
    source: str  # where the framework documents the variable


@dataclass(frozen=True, slots=True, kw_only=True)
class VariantFacts:
    """A CUDA build as its wheel's requirements name it (`matrix refresh`)."""

    name: str | None  # the variant's name in matrices/frameworks/NAME.yaml (None: the only one)
    cuda: str | None = None
    cudnn: str | None = None
    nccl: str | None = None


class Framework(Protocol):
    """One framework module (torch.py is the reference)."""

    NAME: str  # the project name: --framework NAME, matrices/frameworks/NAME.yaml
    FACTS: Facts
    HARNESS: HarnessPlan
    HINTS: MonitorHints
    COMPILE_CACHES: tuple[CompileCache, ...]  # () where it keeps none across processes
    # Python run in a child interpreter (host/frameworks.py): it imports the framework and fills
    # the dict `out` with version, cuda (X.Y), archs (sm_XY/compute_XY) and arch_source.
    PROBE: str

    def read_variant(self, requirements: Sequence[Requirement]) -> VariantFacts | None:
        """The CUDA variant a release wheel's requirements (Linux x86_64, refresh.yaml's extra
        active) name; None: not a CUDA build. Only "one_wheel" frameworks are asked."""
        ...


# -- helpers the modules share: reading the nvidia-* pins of a wheel's requirements


def pinned(reqs: Sequence[Requirement], pattern: str) -> str | None:
    """The version a requirement whose name matches `pattern` is pinned to (==X) or floored at
    (>=X); None when there is none."""
    for r in reqs:
        if re.fullmatch(pattern, r.name):
            pins = [s.version for s in r.specifier if s.operator in ("==", "===")]
            floors = [s.version for s in r.specifier if s.operator == ">="]
            if pins or floors:
                return (pins or floors)[0].split("+")[0]
    return None


def xy(version: str | None) -> str | None:
    """'12.8.1' -> '12.8'; None for None or a bare major."""
    if version is None:
        return None
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


def cuda_suffix(reqs: Sequence[Requirement]) -> str | None:
    """'12' when the CUDA runtime the wheel requires is nvidia-cuda-runtime-cu12 ..."""
    for r in reqs:
        m = re.fullmatch(r"nvidia-cuda-runtime-cu(\d+)", r.name)
        if m:
            return m.group(1)
    return None
