"""ResNet-18/50 (v1.5, as torchvision's: the stride on the 3x3 conv, same layers and parameter
counts) as Keras functional models in NHWC, TensorFlow's native layout. `policy` is the Keras dtype
policy of every layer ("float32", "mixed_bfloat16", "mixed_float16"): variables stay float32, the
math runs in the policy's compute dtype; the logits come out float32."""

from __future__ import annotations

from typing import Any

import keras

_ARCHS = {"resnet18": ("basic", (2, 2, 2, 2)), "resnet50": ("bottleneck", (3, 4, 6, 3))}
BN_MOMENTUM = 0.9  # Keras' convention (running = m running + (1 - m) batch) = torch's momentum 0.1
BN_EPS = 1e-5


def _conv(x: Any, filters: int, k: int, stride: int, policy: str) -> Any:
    # kaiming normal, fan_out, relu (torchvision's init); no bias before batch norm
    init = keras.initializers.VarianceScaling(2.0, "fan_out", "untruncated_normal")
    if stride > 1 and k > 1:  # torch's symmetric padding (Keras' "same" pads stride-2 convs unevenly)
        x = keras.layers.ZeroPadding2D(k // 2, dtype=policy)(x)
        return keras.layers.Conv2D(
            filters, k, stride, "valid", use_bias=False, kernel_initializer=init, dtype=policy
        )(x)
    return keras.layers.Conv2D(
        filters, k, stride, "same", use_bias=False, kernel_initializer=init, dtype=policy
    )(x)


def _bn(x: Any, policy: str, zero: bool = False) -> Any:
    return keras.layers.BatchNormalization(
        momentum=BN_MOMENTUM,
        epsilon=BN_EPS,
        gamma_initializer="zeros" if zero else "ones",  # zero_init_residual, as torch's
        dtype=policy,
    )(x)


def build_resnet(
    arch: str, num_classes: int, *, width: int = 64, size: int = 224, policy: str = "float32", seed: int = 0
) -> keras.Model:
    """A ResNet taking float32 NHWC images (normalised) of size x size; logits float32."""
    keras.utils.set_random_seed(seed)
    kind, layers = _ARCHS[arch]
    expansion = 1 if kind == "basic" else 4
    inp = keras.Input((size, size, 3), dtype="float32")
    h = keras.layers.Activation("relu", dtype=policy)(_bn(_conv(inp, width, 7, 2, policy), policy))
    h = keras.layers.ZeroPadding2D(1, dtype=policy)(h)
    h = keras.layers.MaxPooling2D(3, 2, dtype=policy)(h)
    cin = width
    for si, n in enumerate(layers):
        planes = width * 2**si
        for bi in range(n):
            stride = 2 if (si > 0 and bi == 0) else 1
            if kind == "basic":
                convs = [(3, planes, stride), (3, planes, 1)]
            else:
                convs = [(1, planes, 1), (3, planes, stride), (1, planes * 4, 1)]
            out = h
            for ci, (k, filters, st) in enumerate(convs):
                out = _bn(_conv(out, filters, k, st, policy), policy, zero=ci == len(convs) - 1)
                if ci < len(convs) - 1:
                    out = keras.layers.Activation("relu", dtype=policy)(out)
            idt = h
            if stride != 1 or cin != planes * expansion:
                idt = _bn(_conv(h, planes * expansion, 1, stride, policy), policy)
            h = keras.layers.Activation("relu", dtype=policy)(keras.layers.Add(dtype=policy)([out, idt]))
            cin = planes * expansion
    pooled = keras.layers.GlobalAveragePooling2D(dtype=policy)(h)
    logits = keras.layers.Dense(num_classes, dtype=policy)(pooled)
    out32 = keras.layers.Activation("linear", dtype="float32")(logits)
    return keras.Model(inp, out32, name=f"{arch}_w{width}")


def count_params(model: keras.Model) -> int:
    return int(sum(int(v.numpy().size) for v in model.trainable_weights))
