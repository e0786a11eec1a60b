"""A real DataLoader pipeline (JPEG decode + augmentation, workers, pinned memory, prefetch), the
input_pipeline step's subject, and the ImageFolder reader for --data.
"""

from __future__ import annotations

import ctypes
import io
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler

from .data import Split

try:  # PIL is optional: without it the loader moves raw bytes (and says JPEG was not measured)
    from PIL import Image

    HAVE_PIL = True
    _BILINEAR = getattr(Image, "Resampling", Image).BILINEAR  # Resampling: Pillow >= 9.1
except ImportError:  # pragma: no cover - depends on the image
    HAVE_PIL = False

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}


def _crop_box(w: int, h: int, train: bool) -> tuple[int, int, int, int]:
    """RandomResizedCrop's box (scale 0.08-1, ratio 3/4-4/3) when training, else a center crop."""
    if train:
        area = w * h
        for _ in range(10):
            target = area * float(torch.empty(1).uniform_(0.08, 1.0))
            logr = torch.empty(1).uniform_(math.log(3 / 4), math.log(4 / 3))
            ratio = math.exp(float(logr))
            cw, ch = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
            if 0 < cw <= w and 0 < ch <= h:
                x = int(torch.randint(0, w - cw + 1, (1,)))
                y = int(torch.randint(0, h - ch + 1, (1,)))
                return x, y, x + cw, y + ch
    side = round(min(w, h) * 0.875)
    x, y = (w - side) // 2, (h - side) // 2
    return x, y, x + side, y + side


if TYPE_CHECKING:  # a subscripted base is evaluated at class creation: tuple[...] fails on 3.8
    _ItemDataset = torch.utils.data.Dataset[tuple[torch.Tensor, int]]
else:
    _ItemDataset = torch.utils.data.Dataset


class DecodeAugment(_ItemDataset):
    """Encoded images (JPEG bytes, file paths, or raw uint8 HWC bytes) -> augmented uint8 CHW."""

    def __init__(
        self,
        items: list[bytes] | list[str],
        labels: list[int],
        size: int,
        *,
        train: bool = True,
        raw_hw: tuple[int, int] | None = None,
    ):
        self.items, self.labels, self.size, self.train, self.raw_hw = (
            items,
            labels,
            size,
            train,
            raw_hw,
        )

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        item = self.items[i]
        flip = self.train and bool(torch.rand(1) < 0.5)
        if self.raw_hw is not None:  # no PIL: raw bytes, crop + resize with torch
            if not isinstance(item, bytes):
                raise TypeError(f"raw_hw needs the images as bytes, got {type(item).__name__}")
            h, w = self.raw_hw
            t = torch.frombuffer(bytearray(item), dtype=torch.uint8).view(h, w, 3)
            x0, y0, x1, y1 = _crop_box(w, h, self.train)
            t = t[y0:y1, x0:x1].permute(2, 0, 1).unsqueeze(0).float()
            t = torch.nn.functional.interpolate(t, size=(self.size, self.size), mode="bilinear")
            out = t.squeeze(0).round().clamp(0, 255).to(torch.uint8)
        else:
            src = io.BytesIO(item) if isinstance(item, bytes) else item
            with Image.open(src) as im:
                img = im.convert("RGB")
            box = _crop_box(img.width, img.height, self.train)
            img = img.resize((self.size, self.size), _BILINEAR, box=box)
            out = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8)
            out = out.view(self.size, self.size, 3).permute(2, 0, 1).contiguous()
        if flip:
            out = out.flip(-1)
        return out, self.labels[i]


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The bytes of a CPU uint8 tensor, without numpy (which the image may lack)."""
    t = t.contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def encode_split(split: Split, quality: int = 90) -> tuple[list[bytes], list[int], str]:
    """uint8 images -> JPEG bytes (q90) when PIL is here, else raw HWC bytes."""
    imgs = split.images.cpu().permute(0, 2, 3, 1).contiguous()
    labels = [int(v) for v in split.labels.cpu()]
    blobs: list[bytes] = []
    for im in imgs:
        raw = tensor_bytes(im)
        if HAVE_PIL:
            h, w = im.shape[0], im.shape[1]
            buf = io.BytesIO()
            Image.frombytes("RGB", (w, h), raw).save(buf, format="JPEG", quality=quality)
            raw = buf.getvalue()
        blobs.append(raw)
    return blobs, labels, ("jpeg" if HAVE_PIL else "raw")


PREFETCH_FACTOR = 4  # batches each worker prepares ahead


def _worker_options(workers: int) -> dict[str, Any]:
    if workers <= 0:
        return {}
    return {"prefetch_factor": PREFETCH_FACTOR, "persistent_workers": True, "timeout": 300}


def make_loader(
    ds: DecodeAugment, batch: int, workers: int, *, pin: bool, infinite: bool = True
) -> DataLoader[Any]:
    sampler = RandomSampler(ds, replacement=True, num_samples=10**8) if infinite else None
    return DataLoader(
        ds,
        batch_size=batch,
        sampler=sampler,
        shuffle=False,
        num_workers=workers,
        pin_memory=pin,
        drop_last=infinite,
        **_worker_options(workers),
    )


class TimedBatches(_ItemDataset):
    """A DecodeAugment read a batch at a time (the sampler gives each worker a list of indices):
    (images, labels, the seconds the worker took to decode, augment and stack them)."""

    def __init__(self, ds: DecodeAugment) -> None:
        self.ds = ds

    def __len__(self) -> int:
        return len(self.ds)

    def __getitem__(self, indices: Any) -> Any:
        t0 = time.perf_counter()
        items = [self.ds[i] for i in indices]
        x = torch.stack([im for im, _ in items])
        y = torch.tensor([label for _, label in items], dtype=torch.long)
        return x, y, time.perf_counter() - t0


def make_timed_loader(ds: DecodeAugment, batch: int, workers: int, *, pin: bool) -> DataLoader[Any]:
    """make_loader's pipeline (same workers, pinning and prefetch, endless random batches), each
    batch with the seconds its worker took (TimedBatches), for steps/pipeline.py loader_rate."""
    sampler = BatchSampler(RandomSampler(ds, replacement=True, num_samples=10**8), batch, drop_last=True)
    return DataLoader(
        TimedBatches(ds),
        batch_size=None,  # the sampler's lists reach TimedBatches whole: no collation
        sampler=sampler,
        num_workers=workers,
        pin_memory=pin,
        **_worker_options(workers),
    )


def without_seconds(it: Iterator[Any], seconds: list[float]) -> Iterator[tuple[Any, Any]]:
    """A timed loader's batches as (images, labels); each batch's worker seconds go to `seconds`."""
    for x, y, took in it:
        seconds.append(float(took))
        yield x, y


def default_workers() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def scan_image_folder(root: Path) -> tuple[list[str], list[int], list[str]]:
    """ImageFolder layout: root/<class>/<image>. Returns (paths, labels, class names)."""
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    if not classes:
        raise ValueError(f"{root}: no class folders")
    paths: list[str] = []
    labels: list[int] = []
    for ci, c in enumerate(classes):
        for f in sorted((root / c).rglob("*")):
            if f.suffix.lower() in IMAGE_SUFFIXES:
                paths.append(str(f))
                labels.append(ci)
    if not paths:
        raise ValueError(f"{root}: no images ({', '.join(sorted(IMAGE_SUFFIXES))})")
    return paths, labels, classes
