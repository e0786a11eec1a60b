"""One JAX training run on device-resident synthetic data (NHWC uint8): the same recipe, timing,
memory and learning checks as the torch loop (pytorch/train.py), with `jax.jit` and donated
parameters, state and optimizer buffers. Per-step times are completion-to-completion: after step i
is dispatched the host waits for step i-1's loss, so one step is always queued (no pipeline stall).
"""

from __future__ import annotations

import time
from collections.abc import Callable
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


# XLA's autotuning off: what a program compiles with when no gate judges its speed (the accuracy
# runs, the batch ramp). Autotuning a ResNet-18 step took 10-32 s per batch size on the H200
# (2026-12-01) and 6-10 s of each accuracy run's first step; without it the ramp's batch 128 compiled
# in 2.7 s (2026-12-05). torch's ramp turns cuDNN's autotuning off likewise.
AUTOTUNE_OFF: dict[str, Any] = {"xla_gpu_autotune_level": "0"}


def refused(exc: BaseException) -> bool:
    """Whether a compile failed because this XLA does not take a compile option (jax: "No such
    compile option: ..."), not for the program's own sake."""
    text = str(exc).lower()
    return "out of memory" not in text and "option" in text


def _train_step_fn(
    p: Tree, s: Tree, m: Tree, images: Any, labels: Any, key: Any, lr: Any, *, batch: int, dtype: Any
) -> tuple[Any, ...]:
    """One SGD step on a random batch of (images, labels), parameters, state and momentum donated."""

    def loss_fn(p: Tree, s: Tree, x: Any, y: Any) -> tuple[Any, Tree]:
        logits, new_s = apply_resnet(p, s, normalize(x, dtype), train=True, dtype=dtype)
        return cross_entropy(logits, y), new_s

    idx = jax.random.randint(key, (batch,), 0, labels.shape[0])
    (loss, new_s), g = jax.value_and_grad(loss_fn, has_aux=True)(p, s, images[idx], labels[idx])
    # torch.optim.SGD: g += wd p; m = momentum m + g; p -= lr m
    m = jax.tree_util.tree_map(lambda mi, gi, pi: MOMENTUM * mi + gi + WEIGHT_DECAY * pi, m, g, p)
    p = jax.tree_util.tree_map(lambda pi, mi: pi - lr * mi, p, m)
    return p, new_s, m, loss


def _eval_batch_fn(
    p: Tree, s: Tree, images: Any, labels: Any, start: Any, *, size: int, dtype: Any
) -> tuple[Any, Any]:
    """(summed loss, correct predictions) of the evaluation batch of `size` images from `start`, in
    eval mode: one compiled program per model, precision and batch size (op by op, the slices,
    softmax, gather, argmax and sums were each compiled on their own for every shape)."""
    x = jax.lax.dynamic_slice_in_dim(images, start, size)
    y = jax.lax.dynamic_slice_in_dim(labels, start, size)
    out = apply_resnet(p, s, normalize(x, dtype), train=False, dtype=dtype)[0]
    logp = jax.nn.log_softmax(out)
    return -jnp.sum(jnp.take_along_axis(logp, y[:, None], axis=1)), jnp.sum(jnp.argmax(out, axis=1) == y)


def _all_finite_fn(tree: Tree) -> Any:
    """Whether every leaf of a parameter tree is finite: one compiled program per model (op by op,
    an isfinite and an all for each leaf shape)."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]))


def _programs(**options: Any) -> dict[str, Any]:
    """The run's jitted programs, compiled with `options` (jax.jit's compiler_options). Module
    level, so every Trainer of the same shapes shares one compilation of each."""
    return {
        "train": jax.jit(
            _train_step_fn, static_argnames=("batch", "dtype"), donate_argnums=(0, 1, 2), **options
        ),
        "eval": jax.jit(_eval_batch_fn, static_argnames=("size", "dtype"), **options),
        "finite": jax.jit(_all_finite_fn, **options),
    }


TUNED = _programs()
try:
    UNTUNED = _programs(compiler_options=AUTOTUNE_OFF)
    NO_OPTIONS = ""
except TypeError:  # an older jax.jit, without compiler_options: XLA's defaults
    UNTUNED, NO_OPTIONS = TUNED, "on (this jax.jit takes no compiler_options)"
_train_step = TUNED["train"]


class Trainer:
    """A ResNet, its SGD-momentum buffers and jitted programs (a donating training step, the
    evaluation batch, the finiteness check) on one device. cfg.autotune False: the programs compile
    with AUTOTUNE_OFF, or with XLA's defaults where this XLA refuses the option (`autotune` says
    which: "on", "off" or "on (the option was refused: ...)")."""

    def __init__(self, cfg: RunConfig, dev: Any, num_classes: int = NUM_CLASSES) -> None:
        self.cfg, self.dev = cfg, dev
        self.dtype = compute_dtype(cfg.amp)
        self.programs = TUNED if cfg.autotune else UNTUNED
        self.autotune = "on" if cfg.autotune else NO_OPTIONS or "off"
        params, state = init_resnet(cfg.seed, cfg.arch, num_classes, cfg.width)
        self.n_params = count_params(params)
        self.params, self.state = jax.device_put((params, state), dev)
        self.opt = jax.device_put(jax.tree_util.tree_map(np.zeros_like, params), dev)

    def _call(self, name: str, *args: Any, **kw: Any) -> Any:
        if self.programs is TUNED:
            return self.programs[name](*args, **kw)
        try:
            return self.programs[name](*args, **kw)
        except Exception as e:  # refused at compile time, before anything ran (nothing donated)
            if not refused(e):
                raise
            self.autotune = f"on (the option was refused: {str(e).splitlines()[0][:160]})"
            self.programs = TUNED
            return self.programs[name](*args, **kw)

    def step(self, split: Split, key: Any, lr: float) -> Any:
        """One step on a random batch of `split` (already on the device); returns the loss (async)."""
        self.params, self.state, self.opt, loss = self._call(
            "train",
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
            args = (self.params, self.state, split.images, split.labels, np.int32(s))
            lsum, right = self._call("eval", *args, size=size, dtype=self.dtype)
            loss_sum += float(lsum)
            correct += int(right)
        return correct / n, loss_sum / n

    def params_finite(self) -> bool:
        return bool(self._call("finite", self.params))


def ramp_try(cfg: RunConfig, dev: Any, data: Dataset, *, steps: int = 2) -> dict[str, Any]:
    """One size of the batch ramp: cfg's training step compiled ahead of time with AUTOTUNE_OFF
    (with XLA's defaults where this XLA refuses it), run `steps` times on dev. Returns the memory
    the step needs at its peak: what the device holds before it (the dataset, the model, its
    buffers) plus what XLA planned for the step itself (its temporaries and outputs not written over
    donated inputs), so that peak grows with the batch from try to try (XLA's own peak counter is
    the process's and never goes down). Out-of-memory errors propagate (the ramp's answer)."""
    t0 = time.perf_counter()
    tr = Trainer(cfg, dev)
    key = jax.random.PRNGKey(cfg.seed + 17)
    lr = jnp.float32(0.01)
    args = (tr.params, tr.state, tr.opt, data.train.images, data.train.labels, key, lr)
    lowered = _train_step.lower(*args, batch=cfg.batch, dtype=tr.dtype)
    t1 = time.perf_counter()
    autotune = "off"
    try:
        compiled = lowered.compile(compiler_options=dict(AUTOTUNE_OFF))
    except Exception as e:
        if not refused(e):
            raise
        autotune = f"on (the option was refused: {str(e).splitlines()[0][:120]})"
        compiled = lowered.compile()
    t2 = time.perf_counter()
    before = memory(dev).get("allocated_mib", 0.0)
    planned = None
    analysis = compiled.memory_analysis()
    if analysis is not None:
        planned = (
            analysis.temp_size_in_bytes + max(0, analysis.output_size_in_bytes - analysis.alias_size_in_bytes)
        ) / 2**20
    p, s, m = tr.params, tr.state, tr.opt
    tr.params = tr.state = tr.opt = None  # donated from here on
    for i in range(steps):
        p, s, m, loss = compiled(
            p, s, m, data.train.images, data.train.labels, jax.random.fold_in(key, i), lr
        )
        loss.block_until_ready()
    del p, s, m, tr
    out: dict[str, Any] = {
        "trace_s": round(t1 - t0, 3),
        "compile_s": round(t2 - t1, 3),
        "run_s": round(time.perf_counter() - t2, 3),
        "autotune": autotune,
    }
    if planned is not None:
        out.update(peak_allocated_mib=round(before + planned, 1), xla_planned_mib=round(planned, 3))
    return out


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
        stack=lambda losses: np.asarray(jnp.stack(losses)),
        compiled=True,  # jax.jit: the first step compiles
        loss_drop_min=loss_drop_min,
        accuracy_margin=accuracy_margin,
        classes=NUM_CLASSES,
    )
    metrics["xla_autotune"] = tr.autotune
    return metrics, problems
