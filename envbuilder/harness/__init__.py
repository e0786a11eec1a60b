"""envbuilder's certification payload: copied into images and run there (or on a bare host).

Self-contained: stdlib + the framework (+ numpy/PIL/pynvml when present). It never imports
envbuilder, so it runs under any package name (see docs/harness.md for the in-image layout).
"""

HARNESS_VERSION = "1.2.0"  # 1.1: the multi_gpu step; 1.2: self-limiting NVML sampler, 180 s budget
RESULT_SCHEMA_VERSION = 1
