"""The cpu_check and cuda_smoke steps: one batch on the CPU, then the GPU is visible, the build
has kernels for it, and the model, the batch and the gradients really live on it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..kernels import arch_covered
from ..record import StepFailed
from ..session import Session
from .frameworks import FRAMEWORKS, installed, run_smoke

if TYPE_CHECKING:  # torch is imported by the steps themselves: the harness loads without it
    from torch import Tensor, nn


def cpu_check_step(s: Session) -> None:
    with s.rec.step("cpu_check") as st:
        st.metrics.update(cpu_check())


def cuda_smoke_step(s: Session) -> bool:
    """The cuda_smoke step; True when it passed (the GPU benchmarks need it)."""
    with s.rec.step("cuda_smoke") as st:
        st.metrics.update(cuda_smoke())
    return s.rec.last().status == "pass"


def framework_smokes(s: Session, want_gpu: bool) -> None:
    """TensorFlow / JAX smoke, each in a child process, only where installed."""
    for fw in FRAMEWORKS:
        name = f"{fw}_smoke"
        if not installed(fw):
            s.rec.skip(name, f"{fw} is not installed in this environment")
            continue
        if fw != s.opts.framework:
            # Another framework that happens to be importable (a fat base image) is not what
            # this image is certified for; its smoke would gate on someone else's stack.
            s.rec.skip(name, f"{fw} is installed, but this certification is for {s.opts.framework}")
            continue
        with s.rec.step(name) as st:
            s.need(20)
            res = run_smoke(fw, want_gpu, timeout=max(30.0, min(150.0, s.remaining())))
            st.metrics.update(res)
            if res.get("error"):
                raise StepFailed(str(res["error"]))


def one_batch(model: nn.Module, x: Tensor, y: Tensor) -> dict[str, Any]:
    """One forward + backward; fails on non-finite loss or gradients."""
    import torch
    from torch import nn

    out = model(x)
    loss = nn.functional.cross_entropy(out, y)
    loss.backward()
    if not torch.isfinite(loss):
        raise StepFailed(f"non-finite loss {loss.item()}")
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if len(grads) != sum(1 for _ in model.parameters()):
        raise StepFailed("some parameters got no gradient")
    if not all(bool(torch.isfinite(g).all()) for g in grads):
        raise StepFailed("non-finite gradients")
    return {"loss": loss.item(), "logits_shape": list(out.shape)}


CPU_CHECK_THREADS = 1


def cpu_check(size: int = 64, batch: int = 8) -> dict[str, Any]:
    """Data and model code work on the CPU: a real ResNet-18 (full width), one batch.

    On CPU_CHECK_THREADS intra-op threads: one small batch needs no more, and an OpenMP pool on
    every core starves what runs beside it (the compile lane's niced children, which are the
    default GPU order's critical path; on the H200 the 16-thread check took 7.6-9.0 s)."""
    import torch

    from ..workloads.pytorch.data import NUM_CLASSES, normalize, render
    from ..workloads.pytorch.models import build_model

    threads = torch.get_num_threads()
    torch.set_num_threads(CPU_CHECK_THREADS)
    try:
        torch.manual_seed(0)
        split = render(batch, size, seed=7)
        model, info = build_model("resnet18", NUM_CLASSES)
        m = one_batch(model, normalize(split.images), split.labels)
    finally:
        torch.set_num_threads(threads)
    return {"model": info, "image_size": size, "batch": batch, "threads": CPU_CHECK_THREADS, **m}


def cuda_smoke(size: int = 224, batch: int = 16) -> dict[str, Any]:
    """The GPU is visible, the build has kernels for it, the model and the batch live on it,
    a forward+backward runs there, and memory grows as it should."""
    import torch

    from ..workloads.pytorch.data import NUM_CLASSES, normalize, render
    from ..workloads.pytorch.models import build_model

    if not torch.cuda.is_available():
        raise StepFailed(
            f"torch.cuda.is_available() is False (torch {torch.__version__}, built for CUDA "
            f"{torch.version.cuda}): training would silently run on the CPU. Check the device "
            "nodes, the driver libraries in the container and the CUDA build of torch."
        )
    dev = torch.device("cuda", 0)
    t0 = time.perf_counter()
    torch.cuda.init()  # torch's CUDA state, timed on its own (0 where an earlier step made it)
    phases = {"cuda_init": time.perf_counter() - t0}
    props = torch.cuda.get_device_properties(dev)
    cc = (props.major, props.minor)
    arch_list = torch.cuda.get_arch_list()
    ok, how = arch_covered(arch_list, cc)
    metrics: dict[str, Any] = {
        "device_name": props.name,
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "total_memory_mib": round(props.total_memory / 2**20),
        "multiprocessors": props.multi_processor_count,
        "arch_list": arch_list,
        "arch_covered_by": how,
        "bf16_supported": torch.cuda.is_bf16_supported(),
        "torch_cuda_build": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }
    if not ok:
        raise StepFailed(f"this torch build cannot run on the GPU: {how} (built for {arch_list})")
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    model, info = build_model("resnet18", NUM_CLASSES)
    model = model.to(dev)
    after_model = torch.cuda.memory_allocated()
    phases["model"] = time.perf_counter() - t0  # the first model: torchvision's import
    t0 = time.perf_counter()
    split = render(batch, size, seed=7, device=dev)
    phases["batch"] = time.perf_counter() - t0
    x, y = normalize(split.images), split.labels
    where = {p.device.type for p in model.parameters()} | {x.device.type, y.device.type}
    if where != {"cuda"}:
        raise StepFailed(f"parameters/batch not all on cuda: {sorted(where)}")
    t0 = time.perf_counter()
    metrics.update(model=info, batch=batch, image_size=size, **one_batch(model, x, y))
    torch.cuda.synchronize()
    phases["first_batch"] = time.perf_counter() - t0  # cuDNN's and cuBLAS's first use
    grads_on = {p.grad.device.type for p in model.parameters() if p.grad is not None}
    # A GEMM checked against the CPU: catches a broken kernel or a bad device.
    a = torch.randn(512, 512, generator=torch.Generator().manual_seed(1))
    b = torch.randn(512, 512, generator=torch.Generator().manual_seed(2))
    t0 = time.perf_counter()
    diff = float(((a.to(dev) @ b.to(dev)).cpu() - a @ b).abs().max())
    phases["gemm_check"] = time.perf_counter() - t0
    mib = 2**20
    metrics.update(
        gradients_on=sorted(grads_on),
        memory_baseline_mib=base / mib,
        memory_after_model_mib=after_model / mib,
        memory_peak_allocated_mib=torch.cuda.max_memory_allocated() / mib,
        memory_reserved_mib=torch.cuda.memory_reserved() / mib,
        matmul_max_abs_diff_vs_cpu=diff,
        phases_s={k: round(v, 3) for k, v in phases.items()},
    )
    param_mib = sum(p.numel() * p.element_size() for p in model.parameters()) / mib
    if after_model - base < 0.9 * param_mib * mib:
        raise StepFailed(
            f"GPU memory grew {(after_model - base) / mib:.1f} MiB for {param_mib:.1f} MiB of "
            "parameters: the model is not where it should be"
        )
    if torch.cuda.max_memory_allocated() <= after_model:
        raise StepFailed("GPU memory did not grow during forward+backward")
    if grads_on != {"cuda"}:
        raise StepFailed(f"gradients on {sorted(grads_on)}")
    if diff > 0.5:  # TF32 may be on: tolerance for a 512-long dot product of N(0,1) values
        raise StepFailed(f"GPU matmul differs from the CPU by {diff:.3g}")
    del model, x, y, split
    return metrics
