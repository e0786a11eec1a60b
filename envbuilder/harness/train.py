"""One training run on GPU-resident (or CPU) synthetic data: timing, memory, learning checks.

Step times come from CUDA events recorded between steps (no per-step sync), warm-up excluded;
losses stay on the device until the end, so measuring does not slow what it measures.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .networks import build_model, load_weights
from .synthetic import NUM_CLASSES, Dataset, Split, normalize


@dataclass
class RunConfig:
    name: str
    arch: str = "resnet18"
    width: int = 64
    batch: int = 32
    steps: int = 200
    warmup: int = 10
    amp: str | None = None  # "bf16" | "fp16" | None (FP32, TF32 per the framework's flags)
    channels_last: bool = False
    compile: bool = False
    lr: float | None = None  # None: 0.1 x batch/256, clamped to [0.02, 0.2]
    device: str = "cuda"
    seed: int = 0
    max_seconds: float = 120.0  # the timed loop stops early past this (recorded as truncated)
    weights: str | None = None
    evaluate: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def learning_rate(self) -> float:
        if self.lr is not None:
            return self.lr
        return min(0.1, max(0.01, 0.1 * self.batch / 256))

    def lr_warmup_steps(self) -> int:
        """Linear learning-rate warm-up: short runs from scratch must not blow up early."""
        return max(1, min(20, self.steps // 4))


def step_stats(times_s: list[float]) -> dict[str, float]:
    """mean/p50/p95/min/max of step times in milliseconds (nearest-rank percentiles)."""
    if not times_s:
        return {}
    xs = sorted(times_s)

    def pct(p: float) -> float:
        return xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))] * 1000

    return {
        "mean_ms": sum(xs) / len(xs) * 1000,
        "p50_ms": pct(50),
        "p95_ms": pct(95),
        "min_ms": xs[0] * 1000,
        "max_ms": xs[-1] * 1000,
    }


def check_losses(losses: list[float], loss_drop_min: float) -> list[str]:
    """Problems with a loss curve: non-finite values, or no fall (last tenth vs first tenth)."""
    for i, v in enumerate(losses):
        if not math.isfinite(v):
            return [f"non-finite loss ({v}) at step {i}"]
    if len(losses) < 4:
        return [f"too few steps ({len(losses)}) to judge the loss"]
    k = max(2, len(losses) // 10)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    if last > (1 - loss_drop_min) * first:
        return [
            f"loss did not fall: mean of last {k} steps {last:.4f} > "
            f"{1 - loss_drop_min:.2f} x first {k} steps {first:.4f}"
        ]
    return []


def grad_scaler(cfg: RunConfig) -> Any:
    """A GradScaler for fp16 on CUDA (torch.amp's, or torch.cuda.amp's before torch 2.3)."""
    if not (cfg.device.startswith("cuda") and cfg.amp == "fp16"):
        return None
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda")
    return torch.cuda.amp.GradScaler()


def amp_dtype(amp: str | None) -> torch.dtype | None:
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(amp or "")


def evaluate(model: nn.Module, split: Split, cfg: RunConfig, batch: int = 256) -> tuple[float, float]:
    """(accuracy, mean loss) of model on split, in eval mode, same precision/layout as training."""
    was_training = model.training
    model.eval()
    dt = amp_dtype(cfg.amp)
    correct, loss_sum = 0, 0.0
    fmt = torch.channels_last if cfg.channels_last else torch.contiguous_format
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


def train_run(
    cfg: RunConfig, data: Dataset, *, loss_drop_min: float, accuracy_margin: float
) -> tuple[dict[str, Any], list[str]]:
    """Train cfg.steps steps; returns (metrics, problems). Problems = reasons the run fails.

    Exceptions (OOM, compile errors outside the first step, driver errors) propagate.
    """
    cuda = cfg.device.startswith("cuda")
    torch.manual_seed(cfg.seed)
    if cuda:
        free_device_memory()
    model, info = build_model(cfg.arch, NUM_CLASSES, width=cfg.width)
    metrics: dict[str, Any] = {"model": info, "config": _config_json(cfg)}
    metrics["config"]["image_size"] = data.size
    if cfg.weights:
        metrics["weights"] = load_weights(model, cfg.weights)
    fmt = torch.channels_last if cfg.channels_last else torch.contiguous_format
    model = model.to(cfg.device, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.learning_rate(), momentum=0.9, weight_decay=5e-5)
    warm_lr = cfg.lr_warmup_steps()
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / warm_lr))
    dt = amp_dtype(cfg.amp)
    scaler = grad_scaler(cfg)
    runner: Any = model
    if cfg.compile:
        runner = torch.compile(model)
    n_train = len(data.train)
    gen = torch.Generator(device=cfg.device).manual_seed(cfg.seed + 17)
    losses = torch.zeros(cfg.steps, device=cfg.device)

    def one_step(i: int, fn: Any) -> None:
        idx = torch.randint(0, n_train, (cfg.batch,), generator=gen, device=cfg.device)
        x = normalize(data.train.images[idx]).contiguous(memory_format=fmt)
        y = data.train.labels[idx]
        with torch.autocast(cfg.device, dtype=dt or torch.float32, enabled=dt is not None):
            out = fn(x)
            loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        sched.step()
        losses[i] = loss.detach().float()

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    # First step alone: lazy init, cuDNN autotune, compilation. A failed compile falls back.
    t0 = time.perf_counter()
    try:
        one_step(0, runner)
        sync()
    except Exception as e:
        if not cfg.compile:
            raise
        metrics["compile_fallback"] = f"{type(e).__name__}: {e}"[:500]
        runner = model
        one_step(0, runner)
        sync()
    metrics["compiled"] = cfg.compile and "compile_fallback" not in metrics
    metrics["first_step_s"] = time.perf_counter() - t0
    warm = max(1, min(cfg.warmup, cfg.steps - 2))
    for i in range(1, warm):
        one_step(i, runner)
    sync()
    # Timed loop.
    marks: list[Any] = []
    wall0 = time.perf_counter()
    done = warm
    for i in range(warm, cfg.steps):
        marks.append(torch.cuda.Event(enable_timing=True) if cuda else time.perf_counter())
        if cuda:
            marks[-1].record()
        one_step(i, runner)
        done = i + 1
        if time.perf_counter() - wall0 > cfg.max_seconds:
            break
    if cuda:
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        marks.append(end)
        times = [marks[j].elapsed_time(marks[j + 1]) / 1000 for j in range(len(marks) - 1)]
    else:
        marks.append(time.perf_counter())
        times = [marks[j + 1] - marks[j] for j in range(len(marks) - 1)]
    wall = time.perf_counter() - wall0
    timed = done - warm
    metrics.update(
        steps_done=done,
        steps_timed=timed,
        truncated=done < cfg.steps,
        timed_wall_s=wall,
        images_per_s=cfg.batch * timed / wall if wall > 0 else 0.0,
        step_time=step_stats(times),
        memory=memory_snapshot(cfg.device),
    )
    loss_list = [float(v) for v in losses[:done].cpu()]
    metrics["loss_first"] = loss_list[0]
    metrics["loss_last"] = loss_list[-1]
    metrics["loss_curve"] = loss_list[:: max(1, len(loss_list) // 20)]
    problems = check_losses(loss_list, loss_drop_min)
    if not all(math.isfinite(float(p.detach().float().sum())) for p in model.parameters()):
        problems.append("non-finite parameters after training")
    if cfg.evaluate and not problems:
        chance = 1.0 / NUM_CLASSES
        val_acc, val_loss = evaluate(model, data.val, cfg)
        test_acc, _ = evaluate(model, data.test, cfg)
        metrics.update(val_accuracy=val_acc, val_loss=val_loss, test_accuracy=test_acc)
        metrics["accuracy_required"] = chance + accuracy_margin
        if not val_acc >= chance + accuracy_margin:
            problems.append(
                f"val accuracy {val_acc:.3f} does not beat chance {chance:.2f} "
                f"by the margin {accuracy_margin:.2f}"
            )
    return metrics, problems  # the caller frees device memory (locals are gone by then)


def _config_json(cfg: RunConfig) -> dict[str, Any]:
    return {
        "arch": cfg.arch,
        "width": cfg.width,
        "batch": cfg.batch,
        "steps": cfg.steps,
        "warmup_steps": cfg.warmup,
        "precision": cfg.amp or "fp32",
        "channels_last": cfg.channels_last,
        "compile": cfg.compile,
        "lr": cfg.learning_rate(),
        "optimizer": "SGD(momentum=0.9, weight_decay=5e-5), linear lr warm-up",
        "lr_warmup_steps": cfg.lr_warmup_steps(),
        **cfg.extra,
    }
