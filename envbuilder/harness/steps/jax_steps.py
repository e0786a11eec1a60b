"""The JAX certification's own steps (plan.py's jax_plan runs them with the shared training-run
step): one batch on the CPU, the GPU smoke, the device-resident dataset, the batch ramp, the
telemetry overhead A/B and the host-fed input pipeline. jax is imported inside each step."""

from __future__ import annotations

import math
import queue
import threading
import time
from typing import Any

from ..record import StepFailed, StepSkipped, log
from ..session import Session
from ..workloads.config import RunConfig
from .estimates import ESTIMATE
from .overhead import ab_windows
from .pipeline import name_bottleneck
from .ramp import RAMP_CAP, record_ramp

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


def dataset_step(s: Session, size: int, n_train: int, n_eval: int, dev: Any) -> Any:
    """The synthetic set, resident on dev (rendered there with jax.numpy on the GPU)."""
    data = None
    with s.rec.step("dataset") as st:
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
        st.metrics.update(data.describe(str(dev)))
    return data if s.rec.last().status == "pass" else None


def batch_ramp_step(s: Session, data: Any, dev: Any, amp: str, reserve: float, start: int = 64) -> None:
    """ResNet-18, mixed precision: double the batch until XLA runs out of memory, back off,
    bisect. Each batch size compiles anew, so the ramp starts near what the bs64 run predicts."""
    with s.rec.step("batch_ramp") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["ramp"] / 2)
        import jax

        from ..workloads.jax.train import Trainer, memory
        from ..workloads.ramp import find_max_batch

        def try_batch(b: int) -> dict[str, Any]:
            tr = Trainer(RunConfig(name="ramp", batch=b, amp=amp, device="gpu", seed=s.opts.seed), dev)
            for i in range(2):
                tr.step(data.train, jax.random.PRNGKey(i), 0.01).block_until_ready()
            peak = memory(dev).get("peak_allocated_mib")
            del tr
            return {"peak_allocated_mib": round(peak) if peak is not None else None}

        budget = min(ESTIMATE["ramp"], max(5.0, s.remaining() - reserve))
        with s.window(st):
            res = find_max_batch(
                try_batch, start=start, cap=RAMP_CAP, after_oom=s.free, deadline=time.monotonic() + budget
            )
        record_ramp(s, st, res, budget, model="resnet18", precision=amp, start_batch=start)


def telemetry_overhead_step(s: Session, data: Any, dev: Any, amp: str) -> None:
    """The torch step's A/B (steps/overhead.py) with a jitted ResNet-18 at batch 128."""
    with s.rec.step("telemetry_overhead") as st:
        sampler = s.sampler
        if sampler is None:
            raise StepSkipped("no NVML sampler (see telemetry.reason)")
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["overhead"])
        import jax

        from ..workloads.jax.train import Trainer

        b = 128
        tr = Trainer(RunConfig(name="overhead", batch=b, amp=amp, device="gpu", seed=s.opts.seed), dev)
        key = jax.random.PRNGKey(3)

        def window(steps: int) -> float:
            t0 = time.perf_counter()
            loss = None
            for i in range(steps):
                loss = tr.step(data.train, jax.random.fold_in(key, i), 0.01)
            assert loss is not None
            loss.block_until_ready()
            return (time.perf_counter() - t0) / steps

        window(10)  # compile and warm up
        step_s = window(20)
        ab_windows(s, st, sampler, window, step_s, batch=b)


def input_pipeline_step(
    s: Session, data: Any, dev: Any, cfg: RunConfig, *, batches: int, workers: int
) -> None:
    """A host-fed loop (worker threads crop and flip uint8 batches in host memory, device_put each
    step, two batches prefetched) against the same jitted model on device-resident data."""
    with s.rec.step("input_pipeline") as st:
        if data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(12 if s.cuda else 8)
        import jax
        import numpy as np

        from ..workloads.jax.train import Trainer

        host = np.asarray(data.train.images)
        labels = np.asarray(data.train.labels)
        size = data.size
        pad = size // 8

        def make_batch(rng: np.random.Generator) -> tuple[Any, Any]:
            idx = rng.integers(0, len(labels), cfg.batch)
            src = np.pad(host[idx], ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="reflect")
            y0, x0 = rng.integers(0, 2 * pad + 1, 2)
            out = src[:, y0 : y0 + size, x0 : x0 + size]
            flip = rng.random(cfg.batch) < 0.5
            out[flip] = out[flip, :, ::-1]
            return np.ascontiguousarray(out), labels[idx]

        q: queue.Queue[tuple[Any, Any]] = queue.Queue(maxsize=2 * workers)
        stop = threading.Event()

        def worker(seed: int) -> None:
            rng = np.random.default_rng(seed)
            while not stop.is_set():
                item = make_batch(rng)
                while not stop.is_set():
                    try:
                        q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue

        tr = Trainer(cfg, dev)
        key = jax.random.PRNGKey(5)
        with s.window(st):

            def run(get: Any, n: int, warm: int) -> float:
                for i in range(warm):
                    tr.step(get(), jax.random.fold_in(key, i), 0.01)
                jax.block_until_ready(tr.params)
                t0 = time.perf_counter()
                loss = None
                for i in range(n):
                    loss = tr.step(get(), jax.random.fold_in(key, i), 0.01)
                assert loss is not None
                loss.block_until_ready()
                return cfg.batch * n / (time.perf_counter() - t0)

            from ..workloads.numpy_data import Split

            resident = run(lambda: data.train, batches, 3)
            threads = [threading.Thread(target=worker, args=(100 + w,), daemon=True) for w in range(workers)]
            for t in threads:
                t.start()
            try:
                t0 = time.perf_counter()
                for _ in range(batches):
                    q.get()
                loader_only = cfg.batch * batches / (time.perf_counter() - t0)

                def fed_batch() -> Split:
                    x, y = q.get()
                    return Split(images=jax.device_put(x, dev), labels=jax.device_put(y, dev))

                fed = run(fed_batch, batches, 2)
            finally:
                stop.set()
                for t in threads:
                    t.join(timeout=5)
        verdict, facts = name_bottleneck(loader_only, fed, resident, workers, s.device)
        st.metrics.update(
            codec="raw uint8 (host memory)",
            workers=workers,
            worker_kind="threads",
            prefetch=2 * workers,
            batch=cfg.batch,
            model=cfg.arch,
            precision=cfg.amp or "fp32",
            augmentation="random crop (reflect pad 1/8) + horizontal flip",
            loader_only_img_s=loader_only,
            loader_fed_img_s=fed,
            resident_img_s=resident,
            bottleneck=verdict,
            **facts,
        )
        log(f"input pipeline: host {loader_only:.0f}, fed {fed:.0f}, resident {resident:.0f}")
