"""Training fed by a DataLoader: the loader-vs-resident comparison of the input pipeline check,
and the fine-tune on the user's own ImageFolder data (--data, --weights)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..config import RunConfig
from ..measure import check_losses, downsample
from .data import NUM_CLASSES, Dataset, normalize
from .loader import HAVE_PIL, DecodeAugment, default_workers, make_loader, scan_image_folder
from .models import build_model, load_weights, memory_format, place
from .train import amp_dtype, free_device_memory, grad_scaler


class _Trainer:
    """A model, its optimiser and one step on a uint8 batch already on the device."""

    def __init__(self, arch: str, classes: int, cfg: RunConfig, weights: str | None = None):
        self.cfg, self.cuda = cfg, cfg.cuda
        model, self.info = build_model(arch, classes, width=cfg.width)
        self.weights = load_weights(model, weights) if weights else None
        self.fmt = memory_format(cfg.channels_last)
        self.model = place(model, cfg.device, cfg.channels_last)
        self.opt = torch.optim.SGD(
            self.model.parameters(), lr=cfg.learning_rate(), momentum=0.9, weight_decay=5e-5
        )
        self.dt = amp_dtype(cfg.amp)
        self.scaler = grad_scaler(cfg)

    def step(self, x_u8: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = normalize(x_u8).contiguous(memory_format=self.fmt)
        with torch.autocast(self.cfg.device, dtype=self.dt or torch.float32, enabled=bool(self.dt)):
            loss = nn.functional.cross_entropy(self.model(x), y)
        self.opt.zero_grad(set_to_none=True)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        return loss.detach()

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def to_device(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        dev = self.cfg.device
        return x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)


def _timed(tr: _Trainer, get: Any, warm: int, batches: int) -> float:
    for _ in range(warm):
        tr.step(*get())
    tr.sync()
    t0 = time.perf_counter()
    for _ in range(batches):
        tr.step(*get())
    tr.sync()
    return tr.cfg.batch * batches / (time.perf_counter() - t0)


class FeedBench:
    """One model measured twice: fed from GPU-resident data, then from a DataLoader iterator.
    Measure resident() before the loader starts: its workers would compete for the CPU."""

    def __init__(self, cfg: RunConfig) -> None:
        free_device_memory()
        self.tr = _Trainer(cfg.arch, NUM_CLASSES, cfg)

    def resident(self, data: Dataset, batches: int) -> float:
        cfg = self.tr.cfg
        gen = torch.Generator(device=cfg.device).manual_seed(3)
        n = len(data.train)

        def batch() -> tuple[torch.Tensor, torch.Tensor]:
            idx = torch.randint(0, n, (cfg.batch,), generator=gen, device=cfg.device)
            return data.train.images[idx], data.train.labels[idx]

        return _timed(self.tr, batch, 3, batches)

    def fed(self, it: Iterator[Any], batches: int) -> float:
        return _timed(self.tr, lambda: self.tr.to_device(*next(it)), 2, batches)


def real_data_run(
    root: Path,
    *,
    arch: str,
    batch: int,
    size: int,
    steps: int,
    amp: str | None,
    device: str,
    workers: int | None,
    weights: str | None,
    loss_drop_min: float,
) -> tuple[dict[str, Any], list[str]]:
    """Fine-tune on root/train, evaluate on root/val. Returns (metrics, problems)."""
    if not HAVE_PIL:
        return {}, ["--data needs PIL (pillow) in the image to decode the images"]
    paths, labels, classes = scan_image_folder(root / "train")
    vpaths, vlabels, vclasses = scan_image_folder(root / "val")
    if vclasses != classes:
        return {}, [f"train/ and val/ have different classes: {classes} vs {vclasses}"]
    cuda = device.startswith("cuda")
    cfg = RunConfig(name="real_data", arch=arch, batch=batch, amp=amp, channels_last=cuda, device=device)
    free_device_memory()
    tr = _Trainer(arch, len(classes), cfg, weights)
    w = workers or default_workers()
    it = iter(make_loader(DecodeAugment(paths, labels, size, train=True), batch, w, pin=cuda))
    losses: list[torch.Tensor] = []
    t0 = time.perf_counter()
    for _ in range(steps):
        losses.append(tr.step(*tr.to_device(*next(it))))
    tr.sync()
    train_s = time.perf_counter() - t0
    del it
    tr.model.eval()
    correct = 0
    val = make_loader(DecodeAugment(vpaths, vlabels, size, train=False), batch, w, pin=cuda, infinite=False)
    with torch.no_grad():
        for x, y in val:
            x, y = tr.to_device(x, y)
            xin = normalize(x).contiguous(memory_format=tr.fmt)
            with torch.autocast(device, dtype=tr.dt or torch.float32, enabled=bool(tr.dt)):
                correct += int((tr.model(xin).argmax(1) == y).sum())
    loss_list = [float(v) for v in torch.stack(losses).float().cpu()]
    acc = correct / len(vlabels)
    chance = 1 / len(classes)
    metrics: dict[str, Any] = {
        "data": str(root),
        "classes": classes,
        "train_images": len(paths),
        "val_images": len(vpaths),
        "model": tr.info,
        "weights": tr.weights,
        "config": {"batch": batch, "steps": steps, "image_size": size, "precision": amp or "fp32"},
        "workers": w,
        "images_per_s": batch * steps / train_s,
        "loss_first": loss_list[0],
        "loss_last": loss_list[-1],
        "loss_curve": downsample(loss_list),
        "val_accuracy": acc,
        "chance": chance,
    }
    problems = check_losses(loss_list, loss_drop_min)
    if not problems and not acc > chance:
        problems.append(f"val accuracy {acc:.3f} is not above chance {chance:.3f}")
    if any(not math.isfinite(v) for v in loss_list):
        metrics["non_finite"] = True
    return metrics, problems
