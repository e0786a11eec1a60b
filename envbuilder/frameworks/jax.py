"""JAX: a CPU jax/jaxlib plus, per CUDA major, jax[cudaNN] -> jax-cudaNN-plugin and -pjrt
(matrices/refresh.yaml `plugins`); its CUDA is read from the PTX ISA the plugins were built
with. Certified by the harness's XLA plan (harness/steps/jax_steps.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from envbuilder.frameworks.base import CompileCache, Facts, HarnessPlan, MonitorHints, VariantFacts

if TYPE_CHECKING:
    from packaging.requirements import Requirement

NAME = "jax"
FACTS = Facts(
    packages=("jax", "jaxlib"),
    implied_by=("flax", "optax"),
    import_name="jax",
    refresh="plugins",
)
HARNESS = HarnessPlan(
    plan="xla",
    steps_module="steps/jax_steps.py",
    smoke_step="jax_smoke",
    # jax-cudaNN-pjrt: jax_plugins/xla_cudaNN/xla_cuda_plugin.so
    kernel_owners=("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_plugins"),
)
HINTS = MonitorHints(
    oom=re.compile(r"RESOURCE_EXHAUSTED:?\s*Out of memory", re.I),
    oom_example="XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 "
    "bytes.",
    checkpoint="jax.checkpoint",
    profiler="jax.profiler",
)
# Setting the folder turns JAX's persistent compilation cache on (jit-compiled programs, and XLA's
# GPU autotuning results with them); the docs warn it is trusted: it is never shared between images.
COMPILE_CACHES: tuple[CompileCache, ...] = (
    CompileCache(
        env="JAX_COMPILATION_CACHE_DIR",
        folder="jax",
        source="https://docs.jax.dev/en/latest/persistent_compilation_cache.html",
    ),
)
PROBE = """\
import jax
from importlib import metadata
out["version"] = jax.__version__
for major in ("13", "12", "11"):
    try:
        metadata.version("jax-cuda%s-plugin" % major)
        out["cuda"] = major
        break
    except metadata.PackageNotFoundError:
        pass
"""


def read_variant(requirements: Sequence[Requirement]) -> VariantFacts | None:
    """Not asked: a "plugins" framework's variants are its plugin wheels (matrix/refresh.py)."""
    del requirements
    return None
