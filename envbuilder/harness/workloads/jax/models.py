"""ResNet-18/50 (v1.5, as torchvision's: same layers and parameter counts) as pure functions over
pytrees: `init_resnet` gives (params, batch-norm state), `apply_resnet` the logits. NHWC, JAX's
native layout; `dtype` is the compute precision (parameters stay float32, batch norm statistics
are computed in float32)."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

Tree = Any  # nested dicts/lists of arrays (a pytree)
_ARCHS = {"resnet18": ("basic", (2, 2, 2, 2)), "resnet50": ("bottleneck", (3, 4, 6, 3))}
BN_MOMENTUM = 0.1  # torch's convention: running = (1 - m) running + m batch
BN_EPS = 1e-5


def _conv_w(g: np.random.Generator, k: int, cin: int, cout: int) -> Any:
    std = math.sqrt(2.0 / (k * k * cout))  # kaiming normal, fan_out, relu (torchvision's init)
    return (std * g.standard_normal((k, k, cin, cout))).astype(np.float32)


def _bn(c: int, zero: bool = False) -> tuple[Tree, Tree]:
    scale = np.zeros((c,), np.float32) if zero else np.ones((c,), np.float32)
    return {"scale": scale, "bias": np.zeros((c,), np.float32)}, {
        "mean": np.zeros((c,), np.float32),
        "var": np.ones((c,), np.float32),
    }


def init_resnet(seed: int, arch: str, num_classes: int, width: int = 64) -> tuple[Tree, Tree]:
    """(params, state) as numpy arrays (device_put them), drawn with numpy: one op per tensor, not
    one XLA compilation per shape. Residual branches start at zero (zero_init_residual), as torch's."""
    kind, layers = _ARCHS[arch]
    expansion = 1 if kind == "basic" else 4
    keys = np.random.default_rng(seed)
    params: dict[str, Any] = {"stem": {"w": _conv_w(keys, 7, 3, width)}}
    state: dict[str, Any] = {"stem": {}}
    params["stem"]["bn"], state["stem"]["bn"] = _bn(width)
    cin = width
    params["stages"], state["stages"] = [], []
    for si, n in enumerate(layers):
        planes = width * 2**si
        pstage, sstage = [], []
        for bi in range(n):
            stride = 2 if (si > 0 and bi == 0) else 1
            p: dict[str, Any] = {}
            s: dict[str, Any] = {}
            if kind == "basic":
                convs = [(3, cin, planes), (3, planes, planes)]
            else:
                convs = [(1, cin, planes), (3, planes, planes), (1, planes, planes * 4)]
            for ci, (k, a, b) in enumerate(convs):
                p[f"conv{ci}"] = _conv_w(keys, k, a, b)
                p[f"bn{ci}"], s[f"bn{ci}"] = _bn(b, zero=ci == len(convs) - 1)
            if stride != 1 or cin != planes * expansion:
                p["down"] = _conv_w(keys, 1, cin, planes * expansion)
                p["down_bn"], s["down_bn"] = _bn(planes * expansion)
            cin = planes * expansion
            pstage.append(p)
            sstage.append(s)
        params["stages"].append(pstage)
        state["stages"].append(sstage)
    bound = 1 / math.sqrt(cin)  # torch's Linear init
    params["fc"] = {
        "w": keys.uniform(-bound, bound, (cin, num_classes)).astype(np.float32),
        "b": keys.uniform(-bound, bound, (num_classes,)).astype(np.float32),
    }
    return params, state


def count_params(params: Tree) -> int:
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))


def _conv(x: Any, w: Any, stride: int, dtype: Any) -> Any:
    k = w.shape[0]
    pad = ((k // 2, k // 2), (k // 2, k // 2))
    return lax.conv_general_dilated(
        x, w.astype(dtype), (stride, stride), pad, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def _batchnorm(x: Any, p: Tree, s: Tree, train: bool) -> tuple[Any, Tree]:
    """Batch norm as Flax's nn.BatchNorm computes it (the JAX anchors' model): float32 statistics
    in one pass, var = E[x^2] - E[x]^2 (Flax's use_fast_variance, its default), so XLA reads the
    activation once for both moments (a two-pass variance reads it again, forward and backward:
    about 10% of a ResNet step on the H200), and one per-channel multiplier."""
    xf = x.astype(jnp.float32)
    if train:
        mean = jnp.mean(xf, axis=(0, 1, 2))
        var = jnp.maximum(0.0, jnp.mean(jnp.square(xf), axis=(0, 1, 2)) - jnp.square(mean))
        n = xf.size / xf.shape[-1]
        new = {
            "mean": (1 - BN_MOMENTUM) * s["mean"] + BN_MOMENTUM * mean,
            "var": (1 - BN_MOMENTUM) * s["var"] + BN_MOMENTUM * var * n / max(1.0, n - 1),
        }
    else:
        mean, var, new = s["mean"], s["var"], s
    y = (xf - mean) * (lax.rsqrt(var + BN_EPS) * p["scale"]) + p["bias"]
    return y.astype(x.dtype), new


def apply_resnet(
    params: Tree, state: Tree, x: Any, *, train: bool, dtype: Any = jnp.float32
) -> tuple[Any, Tree]:
    """Logits (float32) and the updated batch-norm state (unchanged when not training)."""
    new: dict[str, Any] = {"stem": {}, "stages": []}
    h = _conv(x.astype(dtype), params["stem"]["w"], 2, dtype)
    h, new["stem"]["bn"] = _batchnorm(h, params["stem"]["bn"], state["stem"]["bn"], train)
    h = jax.nn.relu(h)
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))
    for si, (pstage, sstage) in enumerate(zip(params["stages"], state["stages"])):  # noqa: B905
        nstage = []
        for bi, (p, s) in enumerate(zip(pstage, sstage)):  # noqa: B905
            stride = 2 if (si > 0 and bi == 0) else 1
            ns: dict[str, Any] = {}
            n_convs = 2 if "conv2" not in p else 3
            out = h
            for ci in range(n_convs):
                # v1.5: the stride sits on the 3x3 (a basic block's first conv, a bottleneck's second)
                on_this = (ci == 0) if n_convs == 2 else (ci == 1)
                out = _conv(out, p[f"conv{ci}"], stride if on_this else 1, dtype)
                out, ns[f"bn{ci}"] = _batchnorm(out, p[f"bn{ci}"], s[f"bn{ci}"], train)
                if ci < n_convs - 1:
                    out = jax.nn.relu(out)
            idt = h
            if "down" in p:
                idt = _conv(h, p["down"], stride, dtype)
                idt, ns["down_bn"] = _batchnorm(idt, p["down_bn"], s["down_bn"], train)
            h = jax.nn.relu(out + idt)
            nstage.append(ns)
        new["stages"].append(nstage)
    pooled = jnp.mean(h.astype(jnp.float32), axis=(1, 2))
    logits = pooled @ params["fc"]["w"] + params["fc"]["b"]
    return logits, new
