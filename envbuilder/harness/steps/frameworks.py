"""TensorFlow and JAX smoke tests, each run in a child process (`python3 frameworks.py jax`).

A child keeps their GPU memory (JAX preallocates 75% by default) and their import time out of
the torch process. Stdlib only at the top: this file also runs as a plain script.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FRAMEWORKS = ("tensorflow", "jax")


def _jax(want_gpu: bool) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    devices = jax.devices()
    gpus = [d for d in devices if d.platform == "gpu"]
    out: dict[str, Any] = {
        "version": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
    }
    if want_gpu and not gpus:
        out["error"] = "JAX sees no GPU (jax.devices() has no gpu platform)"
        return out
    dev = gpus[0] if gpus else devices[0]
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    a = jax.device_put(jax.random.normal(k1, (1024, 1024)), dev)
    b = jax.device_put(jax.random.normal(k2, (1024, 1024)), dev)
    c = (a @ b).block_until_ready()

    def f(w: Any) -> Any:
        return jnp.sum(jnp.tanh(a @ w) ** 2)

    g = jax.grad(f)(b).block_until_ready()
    out.update(
        matmul_device=str(next(iter(c.devices()))),
        grad_device=str(next(iter(g.devices()))),
        grad_finite=bool(jnp.isfinite(g).all()),
        matmul_sum=float(jnp.sum(c)),
    )
    if not out["grad_finite"]:
        out["error"] = "non-finite gradient"
    return out


def _tensorflow(want_gpu: bool) -> dict[str, Any]:
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    out: dict[str, Any] = {
        "version": tf.__version__,
        "gpus": [g.name for g in gpus],
        "built_with_cuda": tf.test.is_built_with_cuda(),
    }
    if want_gpu and not gpus:
        out["error"] = "TensorFlow sees no GPU (tf.config.list_physical_devices('GPU') is empty)"
        return out
    name = "/GPU:0" if gpus else "/CPU:0"
    with tf.device(name):
        a = tf.random.normal((1024, 1024), seed=1)
        w = tf.Variable(tf.random.normal((1024, 1024), seed=2))
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.tanh(tf.matmul(a, w)) ** 2)
        g = tape.gradient(loss, w)
    out.update(
        matmul_device=loss.device,
        grad_device=g.device,
        grad_finite=bool(tf.reduce_all(tf.math.is_finite(g))),
    )
    if want_gpu and "GPU" not in g.device.upper():
        out["error"] = f"gradient computed on {g.device}, not the GPU"
    if not out["grad_finite"]:
        out["error"] = "non-finite gradient"
    return out


def child_main(name: str, want_gpu: bool) -> int:
    t0 = time.perf_counter()
    try:
        res = {"jax": _jax, "tensorflow": _tensorflow}[name](want_gpu)
    except Exception as e:
        res = {"error": f"{type(e).__name__}: {e}"[:1000]}
    res["seconds_in_child"] = round(time.perf_counter() - t0, 3)
    print(json.dumps(res, default=str))
    return 0


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def run_smoke(name: str, want_gpu: bool, timeout: float = 150.0) -> dict[str, Any]:
    """Run one framework's smoke in a child; returns its JSON (with 'error' when it failed)."""
    env = dict(os.environ)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = [sys.executable, str(Path(__file__).resolve()), name, "gpu" if want_gpu else "cpu"]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr or "").strip().splitlines()[-5:]
        return {"error": f"child exited {proc.returncode} without a result: {' | '.join(tail)}"}
    res: dict[str, Any] = json.loads(lines[-1])
    return res


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1], len(sys.argv) > 2 and sys.argv[2] == "gpu"))
