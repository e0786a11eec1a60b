"""One JAX training run on device-resident synthetic data (NHWC uint8): the same recipe, timing,
memory and learning checks as the torch loop (pytorch/train.py), with `jax.jit` and donated
parameters, state and optimizer buffers. Per-step times are completion-to-completion: after step i
is dispatched the host waits for step i-1's loss, so one step is always queued (no pipeline stall).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import measure
from ..config import RunConfig
from ..measure import train_loop
from ..numpy_data import MEAN, NUM_CLASSES, STD, Dataset, Split
from .models import Tree, apply_resnet, count_params, init_resnet

WEIGHT_DECAY = 5e-5
MOMENTUM = 0.9


def compute_dtype(amp: str | None) -> Any:
    return {"bf16": jnp.bfloat16, "fp16": jnp.float16}.get(amp or "", jnp.float32)


def platform_device(platform: str) -> Any:
    """The first device of a platform ("gpu" or "cpu")."""
    return jax.devices(platform)[0]


def memory(dev: Any) -> dict[str, float]:
    """The device allocator's figures in MiB (empty on the CPU, which reports none)."""
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    if not stats:
        return {}
    mib = 2**20
    out = {
        "peak_allocated_mib": stats.get("peak_bytes_in_use", 0) / mib,
        "allocated_mib": stats.get("bytes_in_use", 0) / mib,
    }
    if stats.get("bytes_limit"):
        out["limit_mib"] = stats["bytes_limit"] / mib
    return out


def normalize(x_u8: Any, dtype: Any) -> Any:
    return ((x_u8.astype(jnp.float32) * (1.0 / (255.0 * STD))) - MEAN / STD).astype(dtype)


def cross_entropy(logits: Any, y: Any) -> Any:
    logp = jax.nn.log_softmax(logits.astype(jnp.float32))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


@partial(jax.jit, static_argnames=("batch", "dtype"), donate_argnums=(0, 1, 2))
def _train_step(
    p: Tree, s: Tree, m: Tree, images: Any, labels: Any, key: Any, lr: Any, *, batch: int, dtype: Any
) -> tuple[Any, ...]:
    """One SGD step on a random batch of (images, labels), parameters, state and momentum donated.
    Module level, so every Trainer of the same shapes shares one compilation."""

    def loss_fn(p: Tree, s: Tree, x: Any, y: Any) -> tuple[Any, Tree]:
        logits, new_s = apply_resnet(p, s, normalize(x, dtype), train=True, dtype=dtype)
        return cross_entropy(logits, y), new_s

    idx = jax.random.randint(key, (batch,), 0, labels.shape[0])
    (loss, new_s), g = jax.value_and_grad(loss_fn, has_aux=True)(p, s, images[idx], labels[idx])
    # torch.optim.SGD: g += wd p; m = momentum m + g; p -= lr m
    m = jax.tree_util.tree_map(lambda mi, gi, pi: MOMENTUM * mi + gi + WEIGHT_DECAY * pi, m, g, p)
    p = jax.tree_util.tree_map(lambda pi, mi: pi - lr * mi, p, m)
    return p, new_s, m, loss


@partial(jax.jit, static_argnames=("size", "dtype"))
def _eval_batch(
    p: Tree, s: Tree, images: Any, labels: Any, start: Any, *, size: int, dtype: Any
) -> tuple[Any, Any]:
    """(correct predictions, summed loss) of the `size` images from `start` in eval mode: one
    compiled program per batch size, where the eager slices and reductions were an XLA compilation
    each (per operation and shape) on a run's first evaluation."""
    x = jax.lax.dynamic_slice_in_dim(images, start, size)
    y = jax.lax.dynamic_slice_in_dim(labels, start, size)
    out = apply_resnet(p, s, normalize(x, dtype), train=False, dtype=dtype)[0]
    logp = jax.nn.log_softmax(out)
    loss_sum = -jnp.sum(jnp.take_along_axis(logp, y[:, None], axis=1))
    return jnp.sum(jnp.argmax(out, axis=1) == y), loss_sum


@jax.jit
def _all_finite(tree: Tree) -> Any:
    """Every parameter finite, as one program (not a compilation per parameter shape)."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]))


class Trainer:
    """A ResNet, its SGD-momentum buffers and a jitted, donating training step on one device."""

    def __init__(self, cfg: RunConfig, dev: Any, num_classes: int = NUM_CLASSES) -> None:
        self.cfg, self.dev = cfg, dev
        self.dtype = compute_dtype(cfg.amp)
        params, state = init_resnet(cfg.seed, cfg.arch, num_classes, cfg.width)
        self.n_params = count_params(params)
        self.params, self.state = jax.device_put((params, state), dev)
        self.opt = jax.device_put(jax.tree_util.tree_map(np.zeros_like, params), dev)

    def step(self, split: Split, key: Any, lr: float) -> Any:
        """One step on a random batch of `split` (already on the device); returns the loss (async)."""
        self.params, self.state, self.opt, loss = _train_step(
            self.params,
            self.state,
            self.opt,
            split.images,
            split.labels,
            key,
            jnp.float32(lr),
            batch=self.cfg.batch,
            dtype=self.dtype,
        )
        return loss

    def evaluate(self, split: Split, batch: int = 256) -> tuple[float, float]:
        """(accuracy, mean loss) in eval mode (running batch-norm statistics)."""
        correct, loss_sum, n = 0, 0.0, len(split)
        for s in range(0, n, batch):
            size = min(batch, n - s)
            right, loss = _eval_batch(
                self.params, self.state, split.images, split.labels, s, size=size, dtype=self.dtype
            )
            correct += int(right)
            loss_sum += float(loss)
        return correct / n, loss_sum / n

    def params_finite(self) -> bool:
        return bool(_all_finite(self.params))


def to_device(data: Dataset, dev: Any) -> Dataset:
    """The dataset resident on dev (its arrays device_put)."""

    def put(s: Split) -> Split:
        return Split(images=jax.device_put(s.images, dev), labels=jax.device_put(s.labels, dev))

    return Dataset(
        train=put(data.train), val=put(data.val), test=put(data.test), size=data.size, seed=data.seed
    )


def timed_steps(
    n: int, dispatch: Callable[[int], Any], *, max_seconds: float = 1e9, min_steps: int = 0
) -> tuple[list[Any], list[float], float, int]:
    """Run n steps; (losses as device scalars, per-step seconds, wall, steps done). The host waits
    for step i-1 after dispatching step i: times are completion to completion. The time cap
    `max_seconds` never stops it before `min_steps` (measure.timed_steps, jax's wait)."""
    return measure.timed_steps(
        n, dispatch, lambda loss: loss.block_until_ready(), max_seconds=max_seconds, min_steps=min_steps
    )


def train_run(
    cfg: RunConfig, data: Dataset, *, loss_drop_min: float, accuracy_margin: float, dev: Any
) -> tuple[dict[str, Any], list[str]]:
    """Train cfg.steps steps on data (already on dev); returns (metrics, problems), as the torch
    train_run. Exceptions (out of memory, XLA errors) propagate."""
    tr = Trainer(cfg, dev)
    model = {"arch": cfg.arch, "width": cfg.width, "num_classes": NUM_CLASSES, "source": "built-in (jax)"}
    config = {**cfg.to_json(), "image_size": data.size, "jit": True, "donate_buffers": True, "layout": "NHWC"}
    metrics: dict[str, Any] = {"model": {**model, "parameters": tr.n_params}, "config": config}
    base = jax.random.PRNGKey(cfg.seed + 17)
    warm_lr, lr = cfg.lr_warmup_steps(), cfg.learning_rate()

    def dispatch(i: int) -> Any:
        return tr.step(data.train, jax.random.fold_in(base, i), lr * min(1.0, (i + 1) / warm_lr))

    problems = train_loop(
        metrics,
        cfg,
        data,
        tr,
        dispatch,
        lambda loss: loss.block_until_ready(),
        memory=lambda: memory(dev),
        stack=lambda losses: np.asarray(jax.device_get(losses)),  # no concatenation to compile
        compiled=True,  # jax.jit: the first step compiles
        loss_drop_min=loss_drop_min,
        accuracy_margin=accuracy_margin,
        classes=NUM_CLASSES,
    )
    return metrics, problems
