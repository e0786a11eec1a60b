"""How long each GPU step is expected to take: the budget skips a step whose estimate exceeds what
is left, with that as its reason."""

# Seconds each step is expected to take on an H200 (measured anchors + margin): a step whose
# estimate exceeds what is left of the budget is skipped, with that as its reason.
ESTIMATE = {
    "fp32": 15,
    "amp": 8,
    "bs64": 8,
    "ramp": 30,  # the most it may take; it gets what the steps after it leave
    "rn18_eager": 8,
    "rn50_eager": 15,
    "rn50_compiled": 70,  # cold Inductor compile 58-63 s (perf-anchors 1c)
    "rn18_compiled": 30,  # cold compile 21 s (perf-anchors 2)
    # The compiled runs after the compile lane's child filled the Inductor cache: tracing, loading
    # the cached graph and kernels, the timed loop (measured on the H200: 4.5-4.8 s for ResNet-50).
    "rn50_warm_compile": 20,
    "rn18_warm_compile": 15,
    # The compiled runs on the compile lane's child that compiled them: warm-up, the timed loop
    # and the evaluation only (UNCONFIRMED until benchmarks/gpu measures it).
    "rn50_served": 10,
    "rn18_served": 8,
    # The XLA frameworks' tuned runs (plan.py xla_plan): torch's eager estimates plus a margin for
    # the XLA compile in the run's first step (none for JAX's ResNet-18; Keras jit_compile=True).
    "rn18_jit": 8,
    "rn50_jit": 25,
    "rn18_xla": 18,
    "rn50_xla": 30,
    "overhead": 24,
    "pipeline": 12,
}
