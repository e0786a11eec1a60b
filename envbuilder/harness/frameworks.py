"""The frameworks the harness certifies: one row each, image-side (stdlib only, imports nothing
of envbuilder). `--framework` takes these names (session.py), the XLA plan its adapters
(plan.py), the kernel inventory their package folders (inventory.py). The host's registry
(envbuilder/frameworks/) names the same frameworks; tests/unit/test_frameworks.py checks they agree.
"""

from __future__ import annotations

from typing import NamedTuple


class HarnessFramework(NamedTuple):
    # Its XLA-plan adapter (steps/MODULE.py's OBJECT, an XlaFramework) as "MODULE:OBJECT";
    # None: the torch plan (plan.run_path).
    adapter: str | None
    # Top-level package folders whose CUDA libraries are its own kernels (inventory.py).
    kernel_packages: tuple[str, ...]
    # The Python packages its training process imports, the largest first: whether they carry
    # compiled bytecode (bytecode.py).
    python_packages: tuple[str, ...]
    # The variables naming its compile caches' folders (the host's frameworks/NAME.py
    # COMPILE_CACHES): what the host record says of them (hostinfo.compile_caches).
    compile_caches: tuple[str, ...] = ()


FRAMEWORKS: dict[str, HarnessFramework] = {
    # torchvision's models import Dynamo, which imports sympy; torch.compile's Inductor, triton
    "torch": HarnessFramework(
        None,
        ("torch",),
        ("torch", "torchvision", "sympy", "triton"),
        ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"),
    ),
    "tensorflow": HarnessFramework("tf_steps:TENSORFLOW", ("tensorflow",), ("tensorflow", "keras")),
    # jax-cudaNN-pjrt: jax_plugins/xla_cudaNN/xla_cuda_plugin.so
    "jax": HarnessFramework(
        "jax_steps:JAX",
        ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_plugins"),
        ("jax", "jaxlib"),
        ("JAX_COMPILATION_CACHE_DIR",),
    ),
}
