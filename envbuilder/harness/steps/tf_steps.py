"""What the TensorFlow (Keras) certification does its own way: one batch on the CPU (float32 and
mixed_bfloat16), the GPU smoke, and the XLA plan's adapter (`TENSORFLOW`: resident tensors, the
Keras trainer, the tf.data input pipeline); the shared steps are steps/xla.py's. tensorflow is
imported inside each function (after TF_ENV is set)."""

from __future__ import annotations

import math
import os
from functools import partial
from typing import TYPE_CHECKING, Any

from ..record import StepFailed
from ..session import Session
from ..workloads.config import RunConfig
from .training import TrainRun
from .xla import Loader, Loop

if TYPE_CHECKING:  # numpy_data imports numpy: a torch image need not have it
    from ..workloads.numpy_data import Dataset, Split

TF_ENV = {  # set before tensorflow is imported (plan.py)
    "TF_FORCE_GPU_ALLOW_GROWTH": "true",  # no whole-GPU reservation: memory figures are real
    "TF_CPP_MIN_LOG_LEVEL": "2",  # TensorFlow's C++ info lines off (warnings and errors stay)
}


def tf_versions() -> dict[str, Any]:
    import keras
    import tensorflow as tf

    build = tf.sysconfig.get_build_info()
    return {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "built_with_cuda": tf.test.is_built_with_cuda(),
        "build_cuda": build.get("cuda_version"),
        "build_cudnn": build.get("cudnn_version"),
        "devices": [d.name for d in tf.config.list_logical_devices()],
    }


def _grads_finite(grads: list[Any]) -> bool:
    import tensorflow as tf

    return all(g is not None and bool(tf.reduce_all(tf.math.is_finite(g))) for g in grads)


def cpu_check_step(s: Session) -> None:
    """Data and model code work on the CPU: a full-width ResNet-18, one batch, forward + backward,
    in float32 and under the mixed_bfloat16 policy (float32 variables and gradients)."""
    with s.rec.step("cpu_check") as st:
        import tensorflow as tf

        from ..workloads.numpy_data import NUM_CLASSES, render
        from ..workloads.tensorflow.models import build_resnet, count_params
        from ..workloads.tensorflow.train import cross_entropy, normalize

        split = render(8, 64, seed=7)
        losses: dict[str, float] = {}
        with tf.device("/CPU:0"):
            x, y = tf.constant(split.images), tf.constant(split.labels)
            for policy in ("float32", "mixed_bfloat16"):  # the mixed-precision policy path too
                model = build_resnet("resnet18", NUM_CLASSES, size=64, policy=policy)
                with tf.GradientTape() as tape:
                    loss = cross_entropy(model(normalize(x), training=True), y)
                grads = tape.gradient(loss, model.trainable_variables)
                losses[policy] = float(loss)
                if not math.isfinite(float(loss)) or not _grads_finite(grads):
                    raise StepFailed(
                        f"non-finite loss or gradients on the CPU under {policy} (loss {float(loss)})"
                    )
                if any(g.dtype != tf.float32 for g in grads):
                    raise StepFailed(
                        f"{policy}: gradients not float32 ({sorted({g.dtype.name for g in grads})})"
                    )
        st.metrics.update(
            model={"arch": "resnet18", "parameters": count_params(model), "source": "built-in (keras)"},
            image_size=64,
            batch=8,
            loss=losses["float32"],
            loss_by_policy=losses,
            mixed_compute_dtype=model.layers[2].compute_dtype,
            device=loss.device,
            **tf_versions(),
        )


def gpu_smoke_step(s: Session) -> bool:
    """TensorFlow sees the GPU, a matmul there matches the CPU, a forward + backward runs there
    (gradients placed on it), and its allocator grows by at least the parameters. True: passed."""
    with s.rec.step("cuda_smoke") as st:
        import numpy as np
        import tensorflow as tf

        from ..workloads.numpy_data import NUM_CLASSES, render
        from ..workloads.tensorflow.models import build_resnet, count_params
        from ..workloads.tensorflow.train import cross_entropy, memory, normalize

        st.metrics.update(tf_versions())
        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            raise StepFailed(
                "TensorFlow sees no GPU (tf.config.list_physical_devices('GPU') is empty): training "
                "would silently run on the CPU. Check the device nodes, the driver libraries in the "
                "container, and that the image has the CUDA build of tensorflow (tensorflow[and-cuda])."
            )
        dev = "/GPU:0"
        details = tf.config.experimental.get_device_details(gpus[0])
        st.metrics.update(
            device_name=details.get("device_name"), compute_capability=details.get("compute_capability")
        )
        base = memory(dev).get("allocated_mib", 0.0)
        split = render(16, 224, seed=7)
        with tf.device(dev):
            model = build_resnet("resnet18", NUM_CLASSES, size=224)
            after_model = memory(dev).get("allocated_mib", 0.0)
            x, y = tf.constant(split.images), tf.constant(split.labels)
            with tf.GradientTape() as tape:
                loss = cross_entropy(model(normalize(x), training=True), y)
            grads = tape.gradient(loss, model.trainable_variables)
            a = np.random.default_rng(1).standard_normal((512, 512), dtype=np.float32)
            b = np.random.default_rng(2).standard_normal((512, 512), dtype=np.float32)
            diff = float(np.abs(tf.matmul(a, b).numpy() - a @ b).max())
        where = sorted({g.device for g in grads})
        param_mib = count_params(model) * 4 / 2**20
        st.metrics.update(
            loss=float(loss),
            gradients_on=where,
            memory_baseline_mib=base,
            memory_after_model_mib=after_model,
            memory=memory(dev),
            matmul_max_abs_diff_vs_cpu=diff,
        )
        if not all("GPU" in d.upper() for d in where):
            raise StepFailed(f"gradients on {where}, not the GPU")
        if after_model and after_model - base < 0.9 * param_mib:
            raise StepFailed(
                f"GPU memory grew {after_model - base:.1f} MiB for {param_mib:.1f} MiB of parameters"
            )
        if not math.isfinite(float(loss)) or not _grads_finite(grads):
            raise StepFailed(f"non-finite loss or gradients on the GPU (loss {float(loss)})")
        if diff > 0.5:  # TF32 is on by default in TensorFlow: tolerance for a 512-long dot product
            raise StepFailed(f"GPU matmul differs from the CPU by {diff:.3g}")
    return s.rec.last().status == "pass"


class _TfDataLoader:
    """A tf.data pipeline from host memory: reflect-pad crop and flip per image
    (`num_parallel_calls=AUTOTUNE`), shuffled, batched, prefetched; tf.identity onto the device."""

    workers = 1  # tf.data sizes its own thread pool (AUTOTUNE): counted as one worker

    def __init__(self, s: Session, data: Dataset, cfg: RunConfig, dev: str) -> None:
        import numpy as np
        import tensorflow as tf

        host, labels = np.asarray(data.train.images), np.asarray(data.train.labels)
        size, pad = data.size, data.size // 8
        autotune = tf.data.AUTOTUNE

        def augment(img: Any, label: Any) -> tuple[Any, Any]:
            img = tf.pad(img, [[pad, pad], [pad, pad], [0, 0]], mode="REFLECT")
            img = tf.image.random_crop(img, (size, size, 3))
            return tf.image.random_flip_left_right(img), label

        with tf.device("/CPU:0"):
            self.ds = (
                tf.data.Dataset.from_tensor_slices((host, labels))
                .shuffle(len(labels), seed=s.opts.seed)
                .repeat()
                .map(augment, num_parallel_calls=autotune, deterministic=False)
                .batch(cfg.batch, drop_remainder=True)
                .prefetch(autotune)
            )
        self.dev = dev
        self.description = {
            "codec": "raw uint8 (host memory)",
            "workers": "tf.data AUTOTUNE",
            "worker_kind": "threads",
            "prefetch": "AUTOTUNE",
            "jit_compile": cfg.compile,
        }
        self.it: Any = None
        self.batch_seconds: list[float] = []  # tf.data does not say what a batch took its threads

    def start(self) -> None:
        self.it = iter(self.ds)
        next(self.it)  # the pipeline starts (threads, first shuffle buffer)

    def host_batch(self) -> Any:
        return next(self.it)

    def device_batch(self) -> Split:
        import tensorflow as tf

        from ..workloads.numpy_data import Split

        x, y = next(self.it)
        with tf.device(self.dev):
            return Split(images=tf.identity(x), labels=tf.identity(y))

    def close(self) -> None:
        self.it = None


class TensorFlowFramework:
    """The XLA plan's adapter for TensorFlow (steps/xla.py XlaFramework): Keras ResNets under the
    mixed-precision policy, `jit_compile=True` (XLA) for the tuned, ramp and overhead runs."""

    name = "tensorflow"
    env = TF_ENV
    tuned_tag = "xla"
    compile = True

    cpu_check = staticmethod(cpu_check_step)
    gpu_smoke = staticmethod(gpu_smoke_step)

    def device(self, platform: str) -> str:
        from ..workloads.tensorflow.train import device_name

        return device_name(platform)

    def train_run(self, dev: Any) -> TrainRun:
        from ..workloads.tensorflow.train import train_run

        return partial(train_run, dev=dev)

    def make_dataset(self, s: Session, size: int, n_train: int, n_eval: int, dev: Any) -> Dataset:
        """Rendered with numpy, resident on dev as tensors."""
        from ..workloads.numpy_data import make_dataset
        from ..workloads.tensorflow.train import to_device

        return to_device(make_dataset(size, n_train, n_eval, seed=s.opts.seed), dev)

    def gpu_facts(self) -> dict[str, Any]:
        return {
            "dtype_policy": "mixed_bfloat16",
            "tf_force_gpu_allow_growth": os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH"),
        }

    def free_mib(self, s: Session, dev: Any) -> float:
        """Free memory of the first GPU from NVML (TensorFlow's allocator reports no limit)."""
        if s.sampler is None:
            return 0.0
        try:
            return float(s.sampler.nvml.nvmlDeviceGetMemoryInfo(s.sampler.handle).free) / 2**20
        except Exception:
            return 0.0

    def trainer(self, cfg: RunConfig, dev: Any, size: int, stream: int | None = None) -> Loop:
        """`stream` is not used: Keras' stateless draw is seeded with the step number alone."""
        from ..workloads.tensorflow.train import Trainer

        return Trainer(cfg, dev, size)

    def wait(self, loss: Any) -> None:
        from ..workloads.tensorflow.train import wait

        wait(loss)

    def memory(self, dev: Any) -> dict[str, float]:
        from ..workloads.tensorflow.train import memory

        return memory(dev)

    def reset_peak(self, dev: Any) -> None:
        from ..workloads.tensorflow.train import reset_peak

        reset_peak(dev)

    def loader(self, s: Session, data: Dataset, cfg: RunConfig, dev: Any) -> Loader:
        return _TfDataLoader(s, data, cfg, dev)


TENSORFLOW = TensorFlowFramework()
