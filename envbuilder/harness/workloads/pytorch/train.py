"""One PyTorch training run on GPU-resident (or CPU) synthetic data: timing, memory, learning
checks; and the helpers the other torch steps share (precision, memory, TF32 flags).

Step times come from CUDA events recorded between steps (no per-step sync), warm-up excluded;
losses stay on the device until the end, so measuring does not slow what it measures.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..config import RunConfig
from ..measure import record_run
from .data import NUM_CLASSES, Dataset, Split, normalize
from .models import build_model, load_weights, memory_format, place


def grad_scaler(cfg: RunConfig) -> Any:
    """A GradScaler for fp16 on CUDA (torch.amp's, or torch.cuda.amp's before torch 2.3)."""
    if not (cfg.cuda and cfg.amp == "fp16"):
        return None
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()  # torch < 2.3


def default_amp() -> str:
    """The tuned runs' mixed precision on this GPU (the harness and the compile lane's children)."""
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def amp_dtype(amp: str | None) -> torch.dtype | None:
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp or "")


def tf32_flags() -> dict[str, Any]:
    """Which FP32 paths run in TF32 (cuDNN's is on by default, so "FP32" convolutions are TF32)."""
    flags: dict[str, Any] = {"float32_matmul_precision": torch.get_float32_matmul_precision()}
    backends: tuple[tuple[str, Any], ...] = (
        ("matmul", torch.backends.cuda.matmul),
        ("cudnn", torch.backends.cudnn),
    )
    for label, obj in backends:
        try:
            flags[f"{label}_allow_tf32"] = bool(obj.allow_tf32)
        except Exception as e:  # newer torch: fp32_precision API
            flags[f"{label}_allow_tf32"] = f"unknown ({type(e).__name__})"
        prec = getattr(obj, "fp32_precision", None)
        if isinstance(prec, str):
            flags[f"{label}_fp32_precision"] = prec
    return flags


def evaluate(model: nn.Module, split: Split, cfg: RunConfig, batch: int = 256) -> tuple[float, float]:
    """(accuracy, mean loss) of model on split, in eval mode, same precision/layout as training."""
    was_training = model.training
    model.eval()
    dt = amp_dtype(cfg.amp)
    correct, loss_sum = 0, 0.0
    fmt = memory_format(cfg.channels_last)
    with torch.no_grad():
        for s in range(0, len(split), batch):
            x = normalize(split.images[s : s + batch]).contiguous(memory_format=fmt)
            y = split.labels[s : s + batch]
            with torch.autocast(cfg.device, dtype=dt or torch.float32, enabled=dt is not None):
                out = model(x)
            loss_sum += float(nn.functional.cross_entropy(out.float(), y, reduction="sum"))
            correct += int((out.argmax(1) == y).sum())
    model.train(was_training)
    return correct / len(split), loss_sum / len(split)


def memory_snapshot(device: str) -> dict[str, float]:
    if not device.startswith("cuda"):
        return {}
    mib = 1024 * 1024
    return {
        "peak_allocated_mib": torch.cuda.max_memory_allocated() / mib,
        "peak_reserved_mib": torch.cuda.max_memory_reserved() / mib,
        "allocated_mib": torch.cuda.memory_allocated() / mib,
        "reserved_mib": torch.cuda.memory_reserved() / mib,
    }


def free_device_memory() -> None:
    """Between runs: drop cached blocks and peak counters so each run is measured alone."""
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def dynamo_graphs() -> int | None:
    """How many graphs torch.compile (Dynamo) has compiled in this process; None where this torch
    does not count them."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return None
    return int(counters["stats"]["unique_graphs"])


def import_compiler() -> dict[str, Any]:
    """torch.compile's modules (Dynamo; Inductor's compile_fx, which its first graph loads)
    imported now: a process's first torch.compile() spent 2.5-2.8 s importing them where the
    packages carry no bytecode (the ResNet-50 compiled run's setup took 2.9-3.2 s, the eager one's
    0.4 s), 0.8-0.9 s where they do, as in images (H100s, 2026-12-07).
    {"compiler_import_s"}, or {"compiler_import_error"} (the compile then imports them itself,
    and fails there if it must)."""
    t0 = time.perf_counter()
    try:
        import torch._dynamo  # noqa: F401
        from torch._inductor import compile_fx  # noqa: F401
    except Exception as e:
        return {"compiler_import_error": f"{type(e).__name__}: {e}"[:200]}
    return {"compiler_import_s": round(time.perf_counter() - t0, 3)}


def event_seconds(start: torch.cuda.Event, end: torch.cuda.Event) -> float:
    """Seconds between two recorded CUDA events."""
    return float(start.elapsed_time(end)) / 1000


def mean_step_seconds(step: Callable[[], object], steps: int) -> float:
    """The mean seconds of `steps` calls of `step` on the GPU, from two CUDA events around them
    (a mean, not a median: a cost that lands on a few steps, such as an NVML sample's, counts)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    end.record()
    end.synchronize()
    return event_seconds(start, end) / steps


def train_run(
    cfg: RunConfig, data: Dataset, *, loss_drop_min: float, accuracy_margin: float
) -> tuple[dict[str, Any], list[str]]:
    """Train cfg.steps steps; returns (metrics, problems). Problems = reasons the run fails.

    Exceptions (OOM, compile errors outside the first step, driver errors) propagate.
    """
    return PreparedRun(cfg, data).finish(loss_drop_min=loss_drop_min, accuracy_margin=accuracy_margin)


class PreparedRun:
    """One training run up to the end of its first step (lazy init, cuDNN autotuning, the compile
    when cfg.compile); `finish()` runs the warm-up, the timed loop and the learning checks.
    train_run does both at once; the compile lane's child (precompile.py) prepares, reports, and
    finishes only when the harness gives it the GPU, so nothing is compiled twice."""

    def __init__(self, cfg: RunConfig, data: Dataset) -> None:
        t_setup = time.perf_counter()
        self.cfg, self.data = cfg, data
        torch.manual_seed(cfg.seed)
        if cfg.cuda:
            free_device_memory()
        model, info = build_model(cfg.arch, NUM_CLASSES, width=cfg.width)
        self.metrics: dict[str, Any] = {"model": info, "config": cfg.to_json()}
        self.metrics["config"]["image_size"] = data.size
        if cfg.weights:
            self.metrics["weights"] = load_weights(model, cfg.weights)
        self.fmt = memory_format(cfg.channels_last)
        self.model = place(model, cfg.device, cfg.channels_last)
        self.opt = torch.optim.SGD(
            self.model.parameters(), lr=cfg.learning_rate(), momentum=0.9, weight_decay=5e-5
        )
        warm_lr = cfg.lr_warmup_steps()
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda i: min(1.0, (i + 1) / warm_lr))
        self.dt = amp_dtype(cfg.amp)
        self.scaler = grad_scaler(cfg)
        self.runner: Callable[[torch.Tensor], torch.Tensor] = self.model
        if cfg.compile:
            self.runner = torch.compile(self.model, backend=cfg.extra.get("compile_backend", "inductor"))
        self.gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed + 17)
        self.losses = torch.zeros(cfg.steps, device=cfg.device)
        # First step alone: lazy init, cuDNN autotune, compilation. A failed compile falls back.
        t0 = time.perf_counter()
        self.metrics["setup_s"] = round(t0 - t_setup, 3)
        try:
            self.one_step(0)
            self.sync()
        except Exception as e:
            if not cfg.compile:
                raise
            self.metrics["compile_fallback"] = f"{type(e).__name__}: {e}"[:500]
            self.runner = self.model
            self.one_step(0)
            self.sync()
        self.metrics["compiled"] = cfg.compile and "compile_fallback" not in self.metrics
        self.metrics["first_step_s"] = time.perf_counter() - t0
        # (only for a compiled run: torch._dynamo takes seconds to import)
        self.graphs_at_first_step = dynamo_graphs() if cfg.compile else None

    def one_step(self, i: int) -> None:
        cfg, train = self.cfg, self.data.train
        idx = torch.randint(0, len(train), (cfg.batch,), generator=self.gen, device=cfg.device)
        x = normalize(train.images[idx]).contiguous(memory_format=self.fmt)
        y = train.labels[idx]
        with torch.autocast(cfg.device, dtype=self.dt or torch.float32, enabled=self.dt is not None):
            out = self.runner(x)
            loss = nn.functional.cross_entropy(out, y)
        self.opt.zero_grad(set_to_none=True)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        self.sched.step()
        self.losses[i] = loss.detach().float()

    def sync(self) -> None:
        if self.cfg.cuda:
            torch.cuda.synchronize()

    def finish(
        self, *, loss_drop_min: float, accuracy_margin: float, max_seconds: float | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """The rest of the run; `max_seconds` replaces cfg.max_seconds (the caller's budget now)."""
        cfg, metrics, cuda = self.cfg, self.metrics, self.cfg.cuda
        cap = cfg.max_seconds if max_seconds is None else max_seconds
        warm = max(1, min(cfg.warmup, cfg.steps - 2))
        t_warm = time.perf_counter()
        for i in range(1, warm):
            self.one_step(i)
        self.sync()
        metrics["warmup_s"] = round(time.perf_counter() - t_warm, 3)
        # Timed loop: CUDA events between steps on the GPU (no sync), wall clock on the CPU.
        events: list[torch.cuda.Event] = []
        stamps: list[float] = []
        wall0 = time.perf_counter()
        done = warm
        for i in range(warm, cfg.steps):
            if cuda:
                events.append(torch.cuda.Event(enable_timing=True))
                events[-1].record()
            else:
                stamps.append(time.perf_counter())
            self.one_step(i)
            done = i + 1
            if done >= cfg.min_steps and time.perf_counter() - wall0 > cap:
                break
        if cuda:
            end = torch.cuda.Event(enable_timing=True)
            end.record()
            end.synchronize()
            events.append(end)
            times = [event_seconds(events[j], events[j + 1]) for j in range(len(events) - 1)]
        else:
            stamps.append(time.perf_counter())
            times = [stamps[j + 1] - stamps[j] for j in range(len(stamps) - 1)]
        wall = time.perf_counter() - wall0
        if cfg.compile and self.graphs_at_first_step is not None:
            # A graph compiled after the first step is a recompile the first step did not pay
            # for (and the compile lane's child, which runs only that step, did not cache).
            metrics["graphs_compiled_after_first_step"] = (dynamo_graphs() or 0) - self.graphs_at_first_step

        def evaluated() -> tuple[float, float, float]:
            val_acc, val_loss = evaluate(self.model, self.data.val, cfg)
            test_acc, _ = evaluate(self.model, self.data.test, cfg)
            return val_acc, val_loss, test_acc

        problems = record_run(
            metrics,
            cfg,
            done=done,
            timed=done - warm,
            wall=wall,
            times=times,
            memory=memory_snapshot(cfg.device),
            losses=[float(v) for v in self.losses[:done].cpu()],
            loss_drop_min=loss_drop_min,
            accuracy_margin=accuracy_margin,
            classes=NUM_CLASSES,
            params_finite=lambda: all(
                math.isfinite(float(p.detach().float().sum())) for p in self.model.parameters()
            ),
            evaluate=evaluated,
        )
        return metrics, problems  # the caller frees device memory (the run object holds it until dropped)


class SyntheticTrainer:
    """A fresh ResNet (18 unless told; mixed precision, channels_last) with SGD on the GPU, and `step(batch)`:
    one training step on a random batch of the synthetic set already on the GPU (no loader in the
    way). The batch ramp and the telemetry overhead A/B both train with it."""

    def __init__(self, data: Dataset, amp: str, arch: str = "resnet18") -> None:
        self.train = data.train
        self.model = place(build_model(arch, NUM_CLASSES)[0], "cuda", channels_last=True)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.dtype = amp_dtype(amp)

    def step(self, b: int) -> None:
        idx = torch.randint(0, len(self.train), (b,), device="cuda")
        x = normalize(self.train.images[idx]).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=self.dtype):
            loss = nn.functional.cross_entropy(self.model(x), self.train.labels[idx])
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def drop_grads(self) -> None:
        """After an OOM: let go of the gradients so the memory can be freed."""
        self.opt.zero_grad(set_to_none=True)
