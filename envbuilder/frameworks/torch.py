"""PyTorch: one CUDA wheel per release on PyPI (and cuXYZ builds on download.pytorch.org),
certified by the harness's torch plan."""

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
    pinned,
    xy,
)

if TYPE_CHECKING:
    from packaging.requirements import Requirement

NAME = "torch"
FACTS = Facts(
    packages=("torch",),
    implied_by=("pytorch-lightning", "lightning", "torchvision", "torchaudio"),
    companions=("torchvision", "torchaudio"),
    import_name="torch",
)
HARNESS = HarnessPlan(
    plan="torch",
    steps_module="workloads/pytorch",
    smoke_step="torch_smoke",
    kernel_owners=("torch",),
)
# torch.cuda.OutOfMemoryError before 2.3
HINTS = MonitorHints(
    oom=re.compile(r"(torch\.(cuda\.)?OutOfMemoryError|CUDA out of memory)", re.I),
    oom_example="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 139.81 GiB of which 1.06 GiB is free.",
    checkpoint="torch.utils.checkpoint",
    profiler="torch.profiler",
)
# torch.compile writes its FX graphs, AOT autograd artifacts, Triton kernels and autotuning results
# to TORCHINDUCTOR_CACHE_DIR (default /tmp/torchinductor_USER: gone with the container); Triton
# kernels compiled outside Inductor go to TRITON_CACHE_DIR (default ~/.triton/cache).
_CACHING = "https://docs.pytorch.org/tutorials/recipes/torch_compile_caching_configuration_tutorial.html"
COMPILE_CACHES: tuple[CompileCache, ...] = (
    CompileCache(env="TORCHINDUCTOR_CACHE_DIR", folder="torchinductor", source=_CACHING),
    CompileCache(env="TRITON_CACHE_DIR", folder="triton", source=_CACHING),
)
# torch.cuda.get_arch_list() is empty without a GPU; _cuda_getArchFlags() answers anyway.
PROBE = """\
import torch
out.update(version=torch.__version__, cuda=torch.version.cuda)
archs = torch.cuda.get_arch_list() if torch.cuda.is_available() else []
out["arch_source"] = "torch.cuda.get_arch_list()"
if not archs:
    flags = getattr(torch._C, "_cuda_getArchFlags", lambda: None)()
    archs, out["arch_source"] = (flags or "").split(), "torch._C._cuda_getArchFlags()"
out["archs"] = list(archs)
"""


def read_variant(requirements: Sequence[Requirement]) -> VariantFacts | None:
    """cuXYZ, named by the wheel's cuda-toolkit / nvidia-cuda-runtime pin (none: a CPU build)."""
    cuda = pinned(requirements, r"cuda-toolkit|nvidia-cuda-runtime(-cu\d+)?")
    if cuda is None:
        return None
    return VariantFacts(
        name=f"cu{''.join(cuda.split('.')[:2])}",
        cuda=xy(cuda),
        cudnn=pinned(requirements, r"nvidia-cudnn-cu\d+"),
        nccl=pinned(requirements, r"nvidia-nccl-cu\d+"),
    )
