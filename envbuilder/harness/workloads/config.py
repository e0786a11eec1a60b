"""One training run's configuration and its recipe (optimizer, learning rate and its warm-up), the
same for every framework: short runs from scratch must learn, reliably."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OPTIMIZER = "SGD(momentum=0.9, weight_decay=5e-5), linear lr warm-up"


@dataclass(frozen=True)
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
    lr: float | None = None  # None: 0.1 x batch/256, clamped to [0.01, 0.1]
    device: str = "cuda"
    seed: int = 0
    max_seconds: float = 120.0  # the timed loop stops early past this (recorded as truncated)
    min_steps: int = 0  # the time cap never stops the loop before this many steps
    weights: str | None = None
    evaluate: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def learning_rate(self) -> float:
        if self.lr is not None:
            return self.lr
        return min(0.1, max(0.01, 0.1 * self.batch / 256))

    def lr_warmup_steps(self) -> int:
        """Linear learning-rate warm-up: short runs from scratch must not blow up early."""
        return max(1, min(20, self.steps // 4))

    def to_json(self) -> dict[str, Any]:
        """The run's `config` record."""
        return {
            "arch": self.arch,
            "width": self.width,
            "batch": self.batch,
            "steps": self.steps,
            "warmup_steps": self.warmup,
            "precision": self.amp or "fp32",
            "channels_last": self.channels_last,
            "compile": self.compile,
            "lr": self.learning_rate(),
            "optimizer": OPTIMIZER,
            "lr_warmup_steps": self.lr_warmup_steps(),
            "min_steps": self.min_steps,
            **self.extra,
        }
