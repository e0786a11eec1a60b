"""The JAX workloads, in plain JAX (jax.numpy and jax.lax only: no Flax or Optax, which a JAX image
need not carry): ResNet-18/50 in NHWC (models.py) and the jitted training loop (train.py). Each
module imports jax at the top: import them only where jax is."""
