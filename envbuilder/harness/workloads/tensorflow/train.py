"""One TensorFlow (Keras) training run on device-resident synthetic data (NHWC uint8): the same
recipe, timing, memory and learning checks as the torch and JAX loops. The step is a tf.function
(`jit_compile=True` with cfg.compile: XLA) that gathers a random batch on the device, normalises it,
and applies SGD with momentum and weight decay to the Keras model's variables, as torch.optim.SGD
does. Mixed precision is the Keras dtype policy (mixed_bfloat16 / mixed_float16, a static loss
scale for fp16). Per-step times are completion-to-completion (measure.train_loop)."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import tensorflow as tf

from ..config import RunConfig
from ..measure import train_loop
from ..numpy_data import MEAN, NUM_CLASSES, STD, Dataset, Split
from .models import build_resnet, count_params

WEIGHT_DECAY = 5e-5
MOMENTUM = 0.9
FP16_LOSS_SCALE = 1024.0  # static: the short runs here never overflow it (bf16 needs none)
POLICIES = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}


def policy(amp: str | None) -> str:
    return POLICIES.get(amp or "", "float32")


def device_name(platform: str) -> str:
    """The first device of a platform ("gpu" or "cpu") as TensorFlow names it."""
    return "/GPU:0" if platform == "gpu" else "/CPU:0"


def memory(dev: str) -> dict[str, float]:
    """TensorFlow's allocator figures for a GPU in MiB (empty on the CPU, which reports none)."""
    if "GPU" not in dev.upper():
        return {}
    try:
        info = tf.config.experimental.get_memory_info(dev.strip("/"))
    except (ValueError, tf.errors.OpError):
        return {}
    mib = 2**20
    return {"peak_allocated_mib": info["peak"] / mib, "allocated_mib": info["current"] / mib}


def reset_peak(dev: str) -> None:
    if "GPU" in dev.upper():
        with contextlib.suppress(ValueError, tf.errors.OpError):
            tf.config.experimental.reset_memory_stats(dev.strip("/"))


def normalize(x_u8: Any) -> Any:
    mean = tf.constant(MEAN, tf.float32)
    std = tf.constant(STD, tf.float32)
    return (tf.cast(x_u8, tf.float32) * (1.0 / 255.0) - mean) / std


def cross_entropy(logits: Any, y: Any) -> Any:
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=tf.cast(logits, tf.float32))
    )


class Trainer:
    """A Keras ResNet, its SGD-momentum buffers and one tf.function step on one device."""

    def __init__(self, cfg: RunConfig, dev: str, size: int, num_classes: int = NUM_CLASSES) -> None:
        self.cfg, self.dev, self.size = cfg, dev, size
        self.policy = policy(cfg.amp)
        with tf.device(dev):
            self.model = build_resnet(
                cfg.arch, num_classes, width=cfg.width, size=size, policy=self.policy, seed=cfg.seed
            )
            self.variables = list(self.model.trainable_variables)
            self.momentum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in self.variables]
        self.n_params = count_params(self.model)
        self.scale = FP16_LOSS_SCALE if self.policy == "mixed_float16" else 1.0
        self._step = tf.function(self._train_step, jit_compile=cfg.compile, reduce_retracing=True)
        # evaluation is not timed: no XLA compilation per eval batch shape
        self._logits = tf.function(lambda x: self.model(normalize(x), training=False), reduce_retracing=True)

    def _train_step(self, images: Any, labels: Any, seed: Any, lr: Any) -> Any:
        idx = tf.random.stateless_uniform((self.cfg.batch,), seed, 0, tf.shape(labels)[0], dtype=tf.int32)
        x = normalize(tf.gather(images, idx))
        y = tf.gather(labels, idx)
        with tf.GradientTape() as tape:
            loss = cross_entropy(self.model(x, training=True), y)
            scaled = loss * self.scale
        grads = tape.gradient(scaled, self.variables)
        for v, m, g in zip(self.variables, self.momentum, grads):  # noqa: B905 (Python 3.8 images)
            g = tf.cast(g, tf.float32) / self.scale
            # torch.optim.SGD: g += wd p; m = momentum m + g; p -= lr m
            m.assign(MOMENTUM * m + g + WEIGHT_DECAY * v)
            v.assign_sub(lr * m)
        return loss

    def step(self, split: Split, seed: int, lr: float) -> Any:
        """One step on a random batch of `split` (tensors on the device); the loss (asynchronous)."""
        with tf.device(self.dev):
            return self._step(
                split.images, split.labels, tf.constant([seed, 17], tf.int32), tf.constant(lr, tf.float32)
            )

    def evaluate(self, split: Split, batch: int = 256) -> tuple[float, float]:
        """(accuracy, mean loss) in inference mode (running batch-norm statistics)."""
        correct, loss_sum, n = 0, 0.0, len(split)
        with tf.device(self.dev):
            for s in range(0, n, batch):
                out = tf.cast(self._logits(split.images[s : s + batch]), tf.float32)
                y = split.labels[s : s + batch]
                loss_sum += float(
                    tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=out))
                )
                correct += int(
                    tf.reduce_sum(tf.cast(tf.argmax(out, axis=1, output_type=tf.int32) == y, tf.int32))
                )
        return correct / n, loss_sum / n

    def params_finite(self) -> bool:
        return all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in self.variables)


def to_device(data: Dataset, dev: str) -> Dataset:
    """The dataset resident on dev (its arrays as tensors placed there)."""

    def put(s: Split) -> Split:
        with tf.device(dev):
            return Split(images=tf.identity(tf.constant(s.images)), labels=tf.identity(tf.constant(s.labels)))

    return Dataset(
        train=put(data.train), val=put(data.val), test=put(data.test), size=data.size, seed=data.seed
    )


def wait(loss: Any) -> None:
    """Block until a step's loss is computed (the step is done on the device)."""
    loss.numpy()


def train_run(
    cfg: RunConfig, data: Dataset, *, loss_drop_min: float, accuracy_margin: float, dev: str
) -> tuple[dict[str, Any], list[str]]:
    """Train cfg.steps steps on data (already on dev); returns (metrics, problems), as the torch
    and JAX train_run. Exceptions (out of memory, XLA errors) propagate."""
    reset_peak(dev)
    tr = Trainer(cfg, dev, data.size)
    model = {"arch": cfg.arch, "width": cfg.width, "num_classes": NUM_CLASSES, "source": "built-in (keras)"}
    config = {
        **cfg.to_json(),
        "image_size": data.size,
        "jit_compile": cfg.compile,
        "dtype_policy": tr.policy,
        "layout": "NHWC",
    }
    metrics: dict[str, Any] = {"model": {**model, "parameters": tr.n_params}, "config": config}
    warm_lr, lr = cfg.lr_warmup_steps(), cfg.learning_rate()

    def dispatch(i: int) -> Any:
        return tr.step(data.train, cfg.seed * 100_003 + i, lr * min(1.0, (i + 1) / warm_lr))

    problems = train_loop(
        metrics,
        cfg,
        data,
        tr,
        dispatch,
        wait,
        memory=lambda: memory(dev),
        stack=lambda losses: np.asarray(tf.stack(losses)),
        compiled=cfg.compile,  # tracing, and XLA compilation with jit_compile, in the first step
        loss_drop_min=loss_drop_min,
        accuracy_margin=accuracy_margin,
        classes=NUM_CLASSES,
    )
    return metrics, problems
