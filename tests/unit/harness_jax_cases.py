"""The JAX workloads alone, in-process with real jax on the CPU (plain JAX ResNets, jitted).

Not collected by a plain pytest run (the name does not start with test_): test_harness_jax.py runs
this file in a child pytest, so JAX's threads never start in the suite's own process, where later
tests fork (the torch DataLoader's workers, subprocesses): a fork after JAX started its threads may
deadlock, and Python warns of it.
"""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")  # the dev extra installs jax[cpu]; an image certifies with its own

from envbuilder.harness.workloads.config import RunConfig  # noqa: E402
from envbuilder.harness.workloads.jax.models import count_params, init_resnet  # noqa: E402
from envbuilder.harness.workloads.jax.train import (  # noqa: E402
    Trainer,
    platform_device,
    timed_steps,
    to_device,
    train_run,
)
from envbuilder.harness.workloads.numpy_data import NUM_CLASSES, make_dataset, render  # noqa: E402

pytestmark = pytest.mark.harness


@pytest.mark.parametrize(("arch", "params"), [("resnet18", 11_689_512), ("resnet50", 25_557_032)])
def test_jax_resnets_match_torchvision_sizes(arch: str, params: int) -> None:
    assert count_params(init_resnet(0, arch, 1000)[0]) == params


def test_numpy_dataset_is_deterministic_and_balanced() -> None:
    import numpy as np

    a, b, c = render(40, 32, seed=5), render(40, 32, seed=5), render(40, 32, seed=6)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.images, c.images)
    assert a.images.shape == (40, 32, 32, 3) and a.images.dtype == np.uint8
    assert np.bincount(a.labels, minlength=NUM_CLASSES).tolist() == [8] * NUM_CLASSES


def test_batchnorm_one_pass_statistics_match_the_two_pass_ones() -> None:
    # The one-pass variance (Flax's, the anchors') against numpy's two-pass one, bf16 input.
    import jax.numpy as jnp
    import numpy as np

    from envbuilder.harness.workloads.jax.models import BN_EPS, BN_MOMENTUM, _batchnorm

    rng = np.random.default_rng(3)
    x = (2.0 + 3.0 * rng.standard_normal((8, 6, 6, 16))).astype(np.float32)
    xb = jnp.asarray(x, jnp.bfloat16)
    p = {"scale": np.full((16,), 1.5, np.float32), "bias": np.full((16,), 0.25, np.float32)}
    st = {"mean": np.zeros((16,), np.float32), "var": np.ones((16,), np.float32)}
    y, new = _batchnorm(xb, p, st, train=True)
    xf = np.asarray(xb.astype(jnp.float32))
    mean, var = xf.mean(axis=(0, 1, 2)), xf.var(axis=(0, 1, 2))
    n = xf.size / 16
    np.testing.assert_allclose(np.asarray(new["mean"]), BN_MOMENTUM * mean, rtol=1e-5, atol=1e-6)
    want_var = (1 - BN_MOMENTUM) + BN_MOMENTUM * var * n / (n - 1)
    np.testing.assert_allclose(np.asarray(new["var"]), want_var, rtol=1e-4)
    want = (xf - mean) / np.sqrt(var + BN_EPS) * 1.5 + 0.25
    assert y.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(y.astype(jnp.float32)), want, atol=0.05)


def test_timed_steps_are_completion_to_completion() -> None:
    class Done:
        def block_until_ready(self) -> Done:
            return self

    losses, times, wall, n = timed_steps(5, lambda i: Done())
    assert n == 5 and len(losses) == 5 and len(times) == 4 and wall >= sum(times) >= 0


def test_jax_run_learns_and_a_diverged_run_is_caught() -> None:
    dev = platform_device("cpu")
    data = to_device(make_dataset(32, 512, 128, seed=1234), dev)
    cfg = RunConfig(name="t", width=8, batch=32, steps=40, warmup=4, device="cpu")
    metrics, problems = train_run(cfg, data, loss_drop_min=0.2, accuracy_margin=0.2, dev=dev)
    assert problems == [], problems
    assert metrics["val_accuracy"] >= 0.4 and metrics["loss_last"] < metrics["loss_first"]
    assert metrics["steps_timed"] == 36 and metrics["config"]["jit"] is True
    st = metrics["step_time"]
    assert 0 < st["min_ms"] <= st["p50_ms"] <= st["p95_ms"] <= st["max_ms"]
    bad = RunConfig(name="t", width=8, batch=32, steps=10, warmup=2, lr=1e30, device="cpu")  # same compile
    metrics, problems = train_run(bad, data, loss_drop_min=0.2, accuracy_margin=0.2, dev=dev)
    assert any("non-finite" in p for p in problems) and "val_accuracy" not in metrics


def test_the_evaluation_is_every_image_once_in_eval_mode() -> None:
    # Trainer.evaluate (one compiled program a batch size) against the model applied to the whole
    # split at once: 40 images in batches of 16 are two full batches and one of 8, none twice.
    import jax.numpy as jnp
    import numpy as np

    from envbuilder.harness.workloads.jax.models import apply_resnet
    from envbuilder.harness.workloads.jax.train import normalize

    dev = platform_device("cpu")
    split = to_device(make_dataset(32, 8, 40, seed=11), dev).val
    tr = Trainer(RunConfig(name="t", width=8, batch=8, device="cpu", seed=2), dev)
    tr.step(split, jax.random.PRNGKey(0), 0.5)  # a step away from the initial weights
    logits = apply_resnet(tr.params, tr.state, normalize(split.images, jnp.float32), train=False)[0]
    logp = np.asarray(jax.nn.log_softmax(logits))
    labels = np.asarray(split.labels)
    accuracy, loss = tr.evaluate(split, batch=16)
    assert accuracy == np.mean(np.argmax(logp, axis=1) == labels)
    assert loss == pytest.approx(-np.mean(logp[np.arange(40), labels]), rel=1e-5)
    # a batch that reached past the end, or started at the wrong image, would not give these
    assert tr.evaluate(split, batch=40) == pytest.approx((accuracy, loss), rel=1e-5)
    assert tr.params_finite()
    tr.params["stem"]["w"] = tr.params["stem"]["w"].at[0, 0, 0, 0].set(jnp.nan)
    assert not tr.params_finite()
