"""The TensorFlow workloads, in Keras 3 on the TensorFlow backend (what `tensorflow` brings, no other
package): ResNet-18/50 in NHWC (models.py) and the training loop (train.py) with tf.function,
optionally XLA-compiled (`jit_compile=True`). Each module imports tensorflow at the top: import
them only where tensorflow is."""
