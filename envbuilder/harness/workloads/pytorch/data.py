"""The built-in synthetic 5-class image dataset: procedurally generated from a seed, learnable.

Each class is a shape family (disk, square, horizontal stripes, vertical stripes, checkerboard)
drawn in a class-tinted colour over a random background, with random position, size, frequency
and pixel noise. Parameters come from a CPU generator, so a seed gives the same images on any
device; rendering is vectorised and runs where the images will live (GPU-resident data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..synthetic import CLASS_NAMES, MEAN, NUM_CLASSES, PALETTE, STD, describe

__all__ = ["CLASS_NAMES", "NUM_CLASSES"]  # re-exported: the torch steps read them here


@dataclass(frozen=True)
class Split:
    """uint8 images (N, 3, H, W) and int64 labels (N,), on one device."""

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def render(n: int, size: int, seed: int, device: str | torch.device = "cpu") -> Split:
    """Render n images of size x size with balanced labels. Deterministic for a seed."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    labels = torch.arange(n) % NUM_CLASSES
    labels = labels[torch.randperm(n, generator=g)]

    def u(*shape: int, lo: float = 0.0, hi: float = 1.0) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(*shape, generator=g)

    cx, cy = u(n, lo=-0.5, hi=0.5), u(n, lo=-0.5, hi=0.5)
    radius = u(n, lo=0.25, hi=0.5)
    freq = u(n, lo=3.0, hi=7.0)
    phase = u(n, lo=0.0, hi=6.2832)
    palette = torch.tensor(PALETTE)
    fg = 0.65 * palette[labels] + 0.35 * u(n, 3)
    bg = u(n, 3, lo=0.0, hi=0.6)
    noise_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
    params = [t.to(device) for t in (labels, cx, cy, radius, freq, phase, fg, bg)]
    labels_d, cx, cy, radius, freq, phase, fg, bg = params

    images = torch.empty((n, 3, size, size), dtype=torch.uint8, device=device)
    dev_gen = torch.Generator(device=device).manual_seed(noise_seed)
    lin = torch.linspace(-1.0, 1.0, size, device=device)
    yy, xx = torch.meshgrid(lin, lin, indexing="ij")
    chunk = max(1, min(n, (64 * 224 * 224) // (size * size)))
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        sl = slice(s, e)

        def col(t: torch.Tensor, sl: slice = sl) -> torch.Tensor:
            return t[sl].view(-1, 1, 1)

        dx, dy = xx - col(cx), yy - col(cy)
        r = col(radius)
        masks = torch.stack(
            [
                (dx * dx + dy * dy) < r * r,
                torch.maximum(dx.abs(), dy.abs()) < r * 0.85,
                torch.sin(yy * col(freq) * 3.1416 + col(phase)) > 0.3,
                torch.sin(xx * col(freq) * 3.1416 + col(phase)) > 0.3,
                (torch.sin(xx * col(freq) * 3.1416) * torch.sin(yy * col(freq) * 3.1416 + col(phase))) > 0.1,
            ],
            dim=1,
        )  # (b, classes, H, W)
        lab = labels_d[sl]
        mask = masks[torch.arange(e - s, device=device), lab].unsqueeze(1).float()
        img = bg[sl].view(-1, 3, 1, 1) * (1 - mask) + fg[sl].view(-1, 3, 1, 1) * mask
        img = img + 0.08 * torch.randn(img.shape, generator=dev_gen, device=device)
        images[sl] = (img.clamp(0, 1) * 255).round().to(torch.uint8)
    return Split(images=images, labels=labels_d)


@dataclass(frozen=True)
class Dataset:
    train: Split
    val: Split
    test: Split
    size: int
    seed: int

    def describe(self) -> dict[str, Any]:
        return describe(
            size=self.size,
            seed=self.seed,
            train=len(self.train),
            val=len(self.val),
            test=len(self.test),
            device=str(self.train.images.device),
        )


def make_dataset(
    size: int, n_train: int, n_eval: int, seed: int = 1234, device: str | torch.device = "cpu"
) -> Dataset:
    """Train/val/test splits from three derived seeds (disjoint draws)."""
    return Dataset(
        train=render(n_train, size, seed, device),
        val=render(n_eval, size, seed + 1, device),
        test=render(n_eval, size, seed + 2, device),
        size=size,
        seed=seed,
    )


def normalize(images_u8: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """uint8 NCHW -> normalized float on the batch's device. Scalar maths only: no small
    host-to-device copies that would serialise the training loop."""
    return images_u8.to(dtype=torch.float32).mul_(1.0 / (255.0 * STD)).sub_(MEAN / STD).to(dtype)
