"""TensorFlow: one wheel per release whose `and-cuda` extra names CUDA, cuDNN and NCCL (absent
before 2.14), certified by the harness's XLA plan (harness/steps/tf_steps.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from envbuilder.frameworks.base import (
    CompileCache,
    Facts,
    HarnessPlan,
    MonitorHints,
    VariantFacts,
    cuda_suffix,
    pinned,
    xy,
)

if TYPE_CHECKING:
    from packaging.requirements import Requirement

NAME = "tensorflow"
# XLA's persistent cache is a TF_XLA_FLAGS switch the user's own flags would mix with: none kept.
COMPILE_CACHES: tuple[CompileCache, ...] = ()
FACTS = Facts(
    packages=("tensorflow", "tensorflow-cpu"),
    implied_by=("tf-keras",),
    import_name="tensorflow",
)
HARNESS = HarnessPlan(
    plan="xla",
    steps_module="steps/tf_steps.py",
    smoke_step="tensorflow_smoke",
    kernel_owners=("tensorflow",),
)
HINTS = MonitorHints(
    oom=re.compile(r"(ResourceExhaustedError|OOM when allocating tensor)"),
    oom_example="ResourceExhaustedError: OOM when allocating tensor with shape[256,64,112,112]",
)
PROBE = """\
import tensorflow as tf
info = tf.sysconfig.get_build_info()
out.update(version=tf.__version__, cuda=info.get("cuda_version"),
           archs=list(info.get("cuda_compute_capabilities") or []),
           arch_source="tf.sysconfig.get_build_info()")
"""


def read_variant(requirements: Sequence[Requirement]) -> VariantFacts | None:
    """cudaNN from the and-cuda extra's nvidia-cuda-runtime-cuNN (None: a release without one)."""
    suffix = cuda_suffix(requirements)
    return VariantFacts(
        name=f"cuda{suffix}" if suffix else None,
        cuda=xy(pinned(requirements, r"nvidia-cuda-runtime-cu\d+")),
        cudnn=xy(pinned(requirements, r"nvidia-cudnn-cu\d+")),
        nccl=pinned(requirements, r"nvidia-nccl-cu\d+"),
    )
