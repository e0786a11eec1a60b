"""What the JAX certification does its own way: one batch on the CPU, the GPU smoke, and the XLA
plan's adapter (`JAX`: the dataset rendered on the GPU, the keyed trainer, the thread-fed input
pipeline); the shared steps are steps/xla.py's. jax is imported inside each function."""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from ..record import StepFailed
from ..session import Session
from ..workloads.config import RunConfig
from .training import TrainRun
from .xla import Loader, Loop

if TYPE_CHECKING:  # numpy_data imports numpy: a torch image need not have it
    from ..workloads.numpy_data import Dataset, Split

JAX_ENV = {  # set before jax is imported (plan.py): no 75% preallocation, so memory figures are real
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
}


def jax_versions() -> dict[str, Any]:
    import jax
    import jaxlib

    devices = jax.devices()
    return {
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", None),
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
    }


def cpu_check_step(s: Session) -> None:
    """Data and model code work on the CPU: a full-width ResNet-18, one batch, forward + backward."""
    with s.rec.step("cpu_check") as st:
        import jax
        import numpy as np

        from ..workloads.jax.models import apply_resnet, count_params, init_resnet
        from ..workloads.jax.train import cross_entropy, normalize
        from ..workloads.numpy_data import NUM_CLASSES, render

        cpu = jax.devices("cpu")[0]
        split = render(8, 64, seed=7)
        params, state = jax.device_put(init_resnet(0, "resnet18", NUM_CLASSES), cpu)

        def loss(p: Any) -> Any:
            x = normalize(jax.device_put(split.images, cpu), np.float32)
            return cross_entropy(apply_resnet(p, state, x, train=True)[0], jax.device_put(split.labels, cpu))

        value, grads = jax.jit(jax.value_and_grad(loss))(params)
        leaves = jax.tree_util.tree_leaves(grads)
        if not math.isfinite(float(value)) or not all(bool(np.isfinite(np.asarray(g)).all()) for g in leaves):
            raise StepFailed(f"non-finite loss or gradients on the CPU (loss {float(value)})")
        st.metrics.update(
            model={"arch": "resnet18", "parameters": count_params(params), "source": "built-in (jax)"},
            image_size=64,
            batch=8,
            loss=float(value),
            device=str(cpu),
            **jax_versions(),
        )


def gpu_smoke_step(s: Session) -> bool:
    """JAX sees the GPU, a matmul there matches the CPU, a forward + backward runs there, and the
    device's memory grows by at least the parameters. True when it passed."""
    with s.rec.step("cuda_smoke") as st:
        import jax
        import jax.numpy as jnp
        import numpy as np

        from ..workloads.jax.models import apply_resnet, count_params, init_resnet
        from ..workloads.jax.train import cross_entropy, memory, normalize
        from ..workloads.numpy_data import NUM_CLASSES, render

        st.metrics.update(jax_versions())
        try:
            gpus = jax.devices("gpu")
        except RuntimeError as e:
            raise StepFailed(
                f"JAX sees no GPU ({e}): training would silently run on the CPU. Check the device nodes, "
                "the driver libraries in the container and the CUDA plugin of jaxlib."
            ) from e
        dev = gpus[0]
        st.metrics.update(
            device_name=getattr(dev, "device_kind", str(dev)),
            compute_capability=getattr(dev, "compute_capability", None),
        )
        base = memory(dev).get("allocated_mib", 0.0)
        params, state = jax.block_until_ready(jax.device_put(init_resnet(0, "resnet18", NUM_CLASSES), dev))
        after_model = memory(dev).get("allocated_mib", 0.0)
        split = render(16, 224, seed=7)
        x, y = jax.device_put(split.images, dev), jax.device_put(split.labels, dev)

        def loss(p: Any) -> Any:
            return cross_entropy(apply_resnet(p, state, normalize(x, jnp.float32), train=True)[0], y)

        value, grads = jax.jit(jax.value_and_grad(loss))(params)
        where = {str(next(iter(a.devices()))) for a in jax.tree_util.tree_leaves(grads)}
        a = np.random.default_rng(1).standard_normal((512, 512), dtype=np.float32)
        b = np.random.default_rng(2).standard_normal((512, 512), dtype=np.float32)
        diff = float(np.abs(np.asarray(jax.device_put(a, dev) @ jax.device_put(b, dev)) - a @ b).max())
        param_mib = count_params(params) * 4 / 2**20
        st.metrics.update(
            loss=float(value),
            gradients_on=sorted(where),
            memory_baseline_mib=base,
            memory_after_model_mib=after_model,
            memory=memory(dev),
            matmul_max_abs_diff_vs_cpu=diff,
        )
        if where != {str(dev)}:
            raise StepFailed(f"gradients on {sorted(where)}, not {dev}")
        if after_model and after_model - base < 0.9 * param_mib:
            raise StepFailed(
                f"GPU memory grew {after_model - base:.1f} MiB for {param_mib:.1f} MiB of parameters"
            )
        if not math.isfinite(float(value)):
            raise StepFailed(f"non-finite loss {float(value)}")
        if diff > 0.5:  # TF32 may be on: tolerance for a 512-long dot product of N(0,1) values
            raise StepFailed(f"GPU matmul differs from the CPU by {diff:.3g}")
    return s.rec.last().status == "pass"


class _KeyedTrainer:
    """A JAX trainer driven by step numbers: step i draws its batch with PRNGKey(i), or with
    fold_in(PRNGKey(stream), i) for a step's own stream."""

    def __init__(self, tr: Any, stream: int | None) -> None:
        import jax

        self.tr, self.stream = tr, stream
        self.base = None if stream is None else jax.random.PRNGKey(stream)

    def step(self, split: Split, i: int, lr: float) -> Any:
        import jax

        key = jax.random.PRNGKey(i) if self.base is None else jax.random.fold_in(self.base, i)
        return self.tr.step(split, key, lr)


class _ThreadLoader:
    """Worker threads crop and flip uint8 batches in host memory into a queue of two batches per
    worker; device_put on the way to the device."""

    def __init__(self, data: Dataset, batch: int, dev: Any, workers: int) -> None:
        import numpy as np

        self.host, self.labels = np.asarray(data.train.images), np.asarray(data.train.labels)
        self.size, self.batch, self.dev, self.workers = data.size, batch, dev, workers
        self.description = {
            "codec": "raw uint8 (host memory)",
            "workers": workers,
            "worker_kind": "threads",
            "prefetch": 2 * workers,
        }
        self.queue: queue.Queue[tuple[Any, Any]] = queue.Queue(maxsize=2 * workers)
        self.batch_seconds: list[float] = []  # what each batch took its thread (Loader)
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def _make_batch(self, rng: Any) -> tuple[Any, Any]:
        import numpy as np

        size, pad = self.size, self.size // 8
        idx = rng.integers(0, len(self.labels), self.batch)
        src = np.pad(self.host[idx], ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="reflect")
        y0, x0 = rng.integers(0, 2 * pad + 1, 2)
        out = src[:, y0 : y0 + size, x0 : x0 + size]
        flip = rng.random(self.batch) < 0.5
        out[flip] = out[flip, :, ::-1]
        return np.ascontiguousarray(out), self.labels[idx]

    def _work(self, seed: int) -> None:
        import numpy as np

        rng = np.random.default_rng(seed)
        while not self.stop.is_set():
            t0 = time.perf_counter()
            item = self._make_batch(rng)
            self.batch_seconds.append(time.perf_counter() - t0)
            while not self.stop.is_set():
                try:
                    self.queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def start(self) -> None:
        self.threads = [
            threading.Thread(target=self._work, args=(100 + w,), daemon=True) for w in range(self.workers)
        ]
        for t in self.threads:
            t.start()

    def host_batch(self) -> Any:
        return self.queue.get()

    def device_batch(self) -> Split:
        import jax

        from ..workloads.numpy_data import Split

        x, y = self.queue.get()
        return Split(images=jax.device_put(x, self.dev), labels=jax.device_put(y, self.dev))

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)


class JaxFramework:
    """The XLA plan's adapter for JAX (steps/xla.py XlaFramework): plain JAX ResNets, jax.jit with
    donated buffers (every run is jitted: RunConfig.compile stays False)."""

    name = "jax"
    env = JAX_ENV
    tuned_tag = "jit"
    compile = False

    cpu_check = staticmethod(cpu_check_step)
    gpu_smoke = staticmethod(gpu_smoke_step)

    def device(self, platform: str) -> Any:
        from ..workloads.jax.train import platform_device

        return platform_device(platform)

    def train_run(self, dev: Any) -> TrainRun:
        from ..workloads.jax.train import train_run

        return partial(train_run, dev=dev)

    def make_dataset(self, s: Session, size: int, n_train: int, n_eval: int, dev: Any) -> Dataset:
        """On the GPU rendered there with jax.numpy; on the CPU with numpy, then device_put."""
        import jax
        import jax.numpy as jnp

        from ..workloads.jax.train import to_device
        from ..workloads.numpy_data import make_dataset

        if s.cuda:
            key = jax.random.PRNGKey(s.opts.seed)
            with jax.default_device(dev):
                data = make_dataset(
                    size, n_train, n_eval, seed=s.opts.seed, xp=jnp,
                    normal=lambda shape, i: jax.random.normal(jax.random.fold_in(key, i), shape),
                )  # fmt: skip
        else:
            data = to_device(make_dataset(size, n_train, n_eval, seed=s.opts.seed), dev)
        data.train.images.block_until_ready()
        return data

    def gpu_facts(self) -> dict[str, Any]:
        return {"xla_preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")}

    def free_mib(self, s: Session, dev: Any) -> float:
        """The allocator's limit less what it holds (XLA reports its limit)."""
        now = self.memory(dev)
        return now.get("limit_mib", 0.0) - now.get("allocated_mib", 0.0)

    def trainer(self, cfg: RunConfig, dev: Any, size: int, stream: int | None = None) -> Loop:
        from ..workloads.jax.train import Trainer

        return _KeyedTrainer(Trainer(cfg, dev), stream)

    def wait(self, loss: Any) -> None:
        loss.block_until_ready()

    def memory(self, dev: Any) -> dict[str, float]:
        from ..workloads.jax.train import memory

        return memory(dev)

    def reset_peak(self, dev: Any) -> None:
        """XLA's peak is the process's: nothing to reset."""

    def loader(self, s: Session, data: Dataset, cfg: RunConfig, dev: Any) -> Loader:
        """Two threads on the CPU path; on the GPU one per core but one, at most eight."""
        workers = max(1, min(8, len(os.sched_getaffinity(0)) - 1)) if s.cuda else 2
        return _ThreadLoader(data, cfg.batch, dev, workers)


JAX = JaxFramework()
