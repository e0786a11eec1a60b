"""The synthetic 5-class set's definition, the same for every framework: the classes, their tints,
the normalisation and the record a dataset step writes (pytorch/data.py and numpy_data.py render
it; each framework draws its own pixels)."""

from __future__ import annotations

from typing import Any

NUM_CLASSES = 5
CLASS_NAMES = ("disk", "square", "hstripes", "vstripes", "checker")
# Class tints (RGB 0..1): a colour cue on top of the shape cue.
PALETTE = (
    (0.90, 0.25, 0.20),
    (0.20, 0.75, 0.25),
    (0.20, 0.35, 0.90),
    (0.90, 0.80, 0.15),
    (0.75, 0.25, 0.85),
)
MEAN = 0.5  # per-channel mean and std are equal by construction
STD = 0.25


def describe(
    *, size: int, seed: int, train: int, val: int, test: int, device: str, **more: Any
) -> dict[str, Any]:
    """The dataset step's metrics."""
    return {
        "name": "envbuilder-synthetic-5",
        "classes": list(CLASS_NAMES),
        "image_size": size,
        "seed": seed,
        "train": train,
        "val": val,
        "test": test,
        "device": device,
        **more,
    }
