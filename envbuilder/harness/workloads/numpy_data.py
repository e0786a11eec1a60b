"""The synthetic 5-class set for the frameworks that are not torch (JAX, TensorFlow): the same five
shape families, tints, parameter ranges, splits and seeds as pytorch/data.py, rendered with numpy
(which both frameworks bring) in NHWC, their native layout. The random streams are numpy's, so the
pixels are not torch's; the classes, their balance and how learnable they are, are the same."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .synthetic import CLASS_NAMES, MEAN, NUM_CLASSES, PALETTE, STD, describe

__all__ = ["CLASS_NAMES", "MEAN", "NUM_CLASSES", "STD"]  # re-exported for the JAX workloads
_PALETTE = np.array(PALETTE, dtype=np.float32)


if TYPE_CHECKING:  # typing.TypeAlias is 3.10+: the harness also runs on 3.8
    from typing import TypeAlias  # novermin (type checkers only)

Normal: TypeAlias = "Callable[[tuple[int, ...], int], Any]"  # (shape, chunk index) -> float32 N(0, 1) noise


@dataclass(frozen=True)
class Split:
    """uint8 images (N, H, W, 3) and int32 labels (N,): numpy arrays, or device arrays (jax)."""

    images: Any
    labels: Any

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def render(n: int, size: int, seed: int, xp: Any = np, normal: Normal | None = None) -> Split:
    """n images of size x size, balanced labels; deterministic for a seed.

    The per-image parameters are drawn with numpy; the pixels are computed with `xp` (numpy, or
    jax.numpy to render on the device) and the pixel noise drawn by `normal(shape, chunk)`
    (numpy's generator by default)."""
    g = np.random.default_rng(seed)
    labels = (np.arange(n) % NUM_CLASSES)[g.permutation(n)].astype(np.int32)

    def u(*shape: int, lo: float = 0.0, hi: float = 1.0) -> NDArray[np.float32]:
        return (lo + (hi - lo) * g.random(shape)).astype(np.float32)

    cx, cy = u(n, lo=-0.5, hi=0.5), u(n, lo=-0.5, hi=0.5)
    radius = u(n, lo=0.25, hi=0.5)
    freq = u(n, lo=3.0, hi=7.0) * np.float32(3.1416)
    phase = u(n, lo=0.0, hi=6.2832)
    fg = 0.65 * _PALETTE[labels] + 0.35 * u(n, 3)
    bg = u(n, 3, lo=0.0, hi=0.6)
    noise_seed = int(g.integers(0, 2**31 - 1))
    if normal is None:
        ng = np.random.default_rng(noise_seed)

        def normal(shape: tuple[int, ...], chunk: int) -> Any:
            return ng.standard_normal(shape, dtype=np.float32)

    lin = xp.linspace(-1.0, 1.0, size, dtype=xp.float32)
    yy, xx = xp.meshgrid(lin, lin, indexing="ij")
    yy, xx = yy[None], xx[None]
    chunks = []
    step = max(1, min(n, (64 * 224 * 224) // (size * size)))
    for s in range(0, n, step):
        e = min(n, s + step)

        def col(t: NDArray[np.float32], s: int = s, e: int = e) -> Any:
            return xp.asarray(t[s:e, None, None])

        dx, dy = xx - col(cx), yy - col(cy)
        r, f, ph = col(radius), col(freq), col(phase)
        masks = xp.stack(
            [
                (dx * dx + dy * dy) < r * r,
                xp.maximum(xp.abs(dx), xp.abs(dy)) < r * 0.85,
                xp.sin(yy * f + ph) > 0.3,
                xp.sin(xx * f + ph) > 0.3,
                (xp.sin(xx * f) * xp.sin(yy * f + ph)) > 0.1,
            ],
            axis=1,
        )  # (b, classes, H, W)
        mask = masks[xp.arange(e - s), xp.asarray(labels[s:e])][..., None].astype(xp.float32)
        img = xp.asarray(bg[s:e, None, None, :]) * (1 - mask) + xp.asarray(fg[s:e, None, None, :]) * mask
        img = img + 0.08 * normal(tuple(img.shape), s // step)
        chunks.append(xp.round(xp.clip(img, 0, 1) * 255).astype(xp.uint8))
    return Split(images=xp.concatenate(chunks), labels=xp.asarray(labels))


@dataclass(frozen=True)
class Dataset:
    train: Split
    val: Split
    test: Split
    size: int
    seed: int

    def describe(self, device: str) -> dict[str, Any]:
        return describe(
            size=self.size,
            seed=self.seed,
            train=len(self.train),
            val=len(self.val),
            test=len(self.test),
            device=device,
            layout="NHWC",
        )


def make_dataset(
    size: int, n_train: int, n_eval: int, seed: int = 1234, xp: Any = np, normal: Normal | None = None
) -> Dataset:
    """Train/val/test from three derived seeds (disjoint draws), as pytorch/data.py does."""
    return Dataset(
        train=render(n_train, size, seed, xp, normal),
        val=render(n_eval, size, seed + 1, xp, normal),
        test=render(n_eval, size, seed + 2, xp, normal),
        size=size,
        seed=seed,
    )
