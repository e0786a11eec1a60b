"""The TensorFlow (Keras) certification's own steps (plan.py's tf_plan runs them with the shared
training-run step): one batch on the CPU, the GPU smoke, the device-resident dataset, the batch
ramp, the telemetry overhead A/B and the tf.data input pipeline. tensorflow is imported inside each
step (after TF_ENV is set)."""

from __future__ import annotations

import math
import time
from typing import Any

from ..record import StepFailed, StepSkipped, log
from ..session import Session
from ..workloads.config import RunConfig
from .estimates import ESTIMATE
from .overhead import ab_windows
from .pipeline import name_bottleneck
from .ramp import RAMP_CAP, record_ramp

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


def dataset_step(s: Session, size: int, n_train: int, n_eval: int, dev: str) -> Any:
    """The synthetic set (rendered with numpy), resident on dev as tensors."""
    data = None
    with s.rec.step("dataset") as st:
        from ..workloads.numpy_data import make_dataset
        from ..workloads.tensorflow.train import to_device

        data = to_device(make_dataset(size, n_train, n_eval, seed=s.opts.seed), dev)
        st.metrics.update(data.describe(dev))
    return data if s.rec.last().status == "pass" else None


def batch_ramp_step(s: Session, data: Any, dev: str, amp: str, reserve: float, start: int = 64) -> None:
    """ResNet-18, mixed precision, XLA: double the batch until TensorFlow runs out of memory
    (ResourceExhaustedError), back off, bisect. Each batch size compiles anew."""
    with s.rec.step("batch_ramp") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["ramp"] / 2)
        from ..workloads.ramp import find_max_batch
        from ..workloads.tensorflow.train import Trainer, memory, reset_peak, wait

        def try_batch(b: int) -> dict[str, Any]:
            reset_peak(dev)
            cfg = RunConfig(name="ramp", batch=b, amp=amp, compile=True, device="gpu", seed=s.opts.seed)
            tr = Trainer(cfg, dev, data.size)
            for i in range(2):
                wait(tr.step(data.train, i, 0.01))
            peak = memory(dev).get("peak_allocated_mib")
            del tr
            return {"peak_allocated_mib": round(peak) if peak is not None else None}

        budget = min(ESTIMATE["ramp"], max(5.0, s.remaining() - reserve))
        with s.window(st):
            res = find_max_batch(
                try_batch, start=start, cap=RAMP_CAP, after_oom=s.free, deadline=time.monotonic() + budget
            )
        record_ramp(s, st, res, budget, model="resnet18", precision=amp, start_batch=start)


def telemetry_overhead_step(s: Session, data: Any, dev: str, amp: str) -> None:
    """The torch step's A/B (steps/overhead.py) with an XLA-compiled Keras ResNet-18 at batch 128."""
    with s.rec.step("telemetry_overhead") as st:
        sampler = s.sampler
        if sampler is None:
            raise StepSkipped("no NVML sampler (see telemetry.reason)")
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["overhead"])
        from ..workloads.tensorflow.train import Trainer, wait

        b = 128
        cfg = RunConfig(name="overhead", batch=b, amp=amp, compile=True, device="gpu", seed=s.opts.seed)
        tr = Trainer(cfg, dev, data.size)

        def window(steps: int) -> float:
            t0 = time.perf_counter()
            loss = None
            for i in range(steps):
                loss = tr.step(data.train, i, 0.01)
            wait(loss)
            return (time.perf_counter() - t0) / steps

        window(10)  # compile and warm up
        step_s = window(20)
        ab_windows(s, st, sampler, window, step_s, batch=b)


def input_pipeline_step(s: Session, data: Any, dev: str, cfg: RunConfig, *, batches: int) -> None:
    """A tf.data pipeline from host memory (random crop with reflect padding and a flip per image,
    `num_parallel_calls=AUTOTUNE`, batched, prefetched, copied to the device each step) against the
    same model on device-resident data."""
    with s.rec.step("input_pipeline") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(12 if s.cuda else 8)
        import numpy as np
        import tensorflow as tf

        from ..workloads.numpy_data import Split
        from ..workloads.tensorflow.train import Trainer, wait

        host = np.asarray(data.train.images)
        labels = np.asarray(data.train.labels)
        size, pad = data.size, data.size // 8
        autotune = tf.data.AUTOTUNE

        def augment(img: Any, label: Any) -> tuple[Any, Any]:
            img = tf.pad(img, [[pad, pad], [pad, pad], [0, 0]], mode="REFLECT")
            img = tf.image.random_crop(img, (size, size, 3))
            return tf.image.random_flip_left_right(img), label

        with tf.device("/CPU:0"):
            ds = (
                tf.data.Dataset.from_tensor_slices((host, labels))
                .shuffle(len(labels), seed=s.opts.seed)
                .repeat()
                .map(augment, num_parallel_calls=autotune, deterministic=False)
                .batch(cfg.batch, drop_remainder=True)
                .prefetch(autotune)
            )
        tr = Trainer(cfg, dev, size)
        with s.window(st):

            def run(get: Any, n: int, warm: int) -> float:
                for i in range(warm):
                    wait(tr.step(get(), i, 0.01))
                t0 = time.perf_counter()
                loss = None
                for i in range(n):
                    loss = tr.step(get(), warm + i, 0.01)
                wait(loss)
                return cfg.batch * n / (time.perf_counter() - t0)

            resident = run(lambda: data.train, batches, 3)
            it = iter(ds)
            next(it)  # the pipeline starts (threads, first shuffle buffer)
            t0 = time.perf_counter()
            for _ in range(batches):
                next(it)
            loader_only = cfg.batch * batches / (time.perf_counter() - t0)

            def fed_batch() -> Split:
                x, y = next(it)
                with tf.device(dev):
                    return Split(images=tf.identity(x), labels=tf.identity(y))

            fed = run(fed_batch, batches, 2)
        # tf.data sizes its own thread pool (AUTOTUNE): the "workers needed" figure counts the whole
        # pipeline as one worker
        verdict, facts = name_bottleneck(loader_only, fed, resident, 1, s.device)
        st.metrics.update(
            codec="raw uint8 (host memory)",
            workers="tf.data AUTOTUNE",
            worker_kind="threads",
            prefetch="AUTOTUNE",
            batch=cfg.batch,
            model=cfg.arch,
            precision=cfg.amp or "fp32",
            jit_compile=cfg.compile,
            augmentation="random crop (reflect pad 1/8) + horizontal flip",
            loader_only_img_s=loader_only,
            loader_fed_img_s=fed,
            resident_img_s=resident,
            bottleneck=verdict,
            **facts,
        )
        log(f"input pipeline (tf.data): host {loader_only:.0f}, fed {fed:.0f}, resident {resident:.0f}")
