"""The GPU path: CUDA smoke, the ResNet-18 sequence (FP32 -> mixed precision -> batch 64 ->
batch ramp), the tuned runs (ResNet-18 and ResNet-50 at batch 256, eager and compiled), the
telemetry overhead measurement and the input pipeline check. Each is a step that can fail alone."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .result import StepFailed, StepSkipped, log
from .suite import Suite

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
    "overhead": 24,
    "pipeline": 12,
}
TUNED_BATCH = 256
RAMP_CAP = 65536


def tf32_flags() -> dict[str, Any]:
    import torch

    flags: dict[str, Any] = {"float32_matmul_precision": torch.get_float32_matmul_precision()}
    for label, obj in (("matmul", torch.backends.cuda.matmul), ("cudnn", torch.backends.cudnn)):
        try:
            flags[f"{label}_allow_tf32"] = bool(obj.allow_tf32)
        except Exception as e:  # newer torch: fp32_precision API
            flags[f"{label}_allow_tf32"] = f"unknown ({type(e).__name__})"
        prec = getattr(obj, "fp32_precision", None)
        if isinstance(prec, str):
            flags[f"{label}_fp32_precision"] = prec
    return flags


def cuda_smoke_step(s: Suite) -> bool:
    from .smoke import cuda_smoke

    with s.rec.step("cuda_smoke") as st:
        st.metrics.update(cuda_smoke())
    return s.rec.steps[-1].status == "pass"


def run_gpu_benchmarks(s: Suite) -> None:
    """Steps d, f (overhead) and e of the issue on the GPU, in budget order."""
    import torch

    from .train import RunConfig

    torch.backends.cudnn.benchmark = True
    bf16 = torch.cuda.is_bf16_supported()
    amp = "bf16" if bf16 else "fp16"
    s.facts.update(amp=amp, tf32=tf32_flags(), cudnn_benchmark=True)
    s.make_data(224, 4096, 512)
    steps = s.opts.steps or 200

    def rn18(**kw: Any) -> RunConfig:
        return RunConfig(name="", arch="resnet18", device="cuda", seed=s.opts.seed, **kw)

    fp32 = s.train_step(
        "train_rn18_fp32_bs32",
        rn18(batch=32, steps=steps, extra={"tf32": tf32_flags()}),
        estimate=ESTIMATE["fp32"],
    )
    s.train_step(f"train_rn18_{amp}_bs32", rn18(batch=32, steps=steps, amp=amp), estimate=ESTIMATE["amp"])
    # Batch 64 only when the first run left room for it (2x its peak + 20%).
    peak = (fp32.metrics.get("memory") or {}).get("peak_reserved_mib")
    free_mib = (torch.cuda.mem_get_info()[0] / 2**20) if torch.cuda.is_available() else 0
    if peak is None:
        s.rec.skip(f"train_rn18_{amp}_bs64", "no memory figure from the batch-32 run")
    elif 2.4 * peak > free_mib:
        s.rec.skip(
            f"train_rn18_{amp}_bs64",
            f"not enough VRAM headroom: batch 32 peaked at {peak:.0f} MiB, {free_mib:.0f} free",
        )
    else:
        s.train_step(
            f"train_rn18_{amp}_bs64",
            rn18(batch=64, steps=steps, amp=amp, extra={"headroom_free_mib": free_mib}),
            estimate=ESTIMATE["bs64"],
        )
    # The tuned runs come before the batch ramp (the issue lists the ramp first): they carry the
    # throughput gates, so they must not be the ones the time budget squeezes out, and they
    # should not run on an allocator the ramp has just filled to the brim.
    tuned = {"amp": amp, "channels_last": True, "device": "cuda", "seed": s.opts.seed}
    s.train_step(
        "tuned_rn18_eager",
        RunConfig(name="", arch="resnet18", batch=TUNED_BATCH, steps=70, warmup=10, **tuned),
        estimate=ESTIMATE["rn18_eager"],
        gate_key="tuned_rn18_eager",
    )
    for compiled in (False, True):
        tag = "compiled" if compiled else "eager"
        s.train_step(
            f"tuned_rn50_{tag}",
            RunConfig(
                name="", arch="resnet50", batch=TUNED_BATCH, steps=48, warmup=8, compile=compiled, **tuned
            ),
            estimate=ESTIMATE[f"rn50_{tag}"],
            gate_key=f"tuned_rn50_{tag}",
        )
    batch_ramp(s, amp, reserve=ESTIMATE["overhead"] + ESTIMATE["pipeline"])
    telemetry_overhead(s, amp)
    s.input_pipeline(
        RunConfig(name="", arch="resnet50", batch=TUNED_BATCH, **tuned),
        src_size=320,
        n_images=512,
        batches=8,
    )
    # Compiling ResNet-18 too is the first thing to go when time is short (it is not gated).
    s.train_step(
        "tuned_rn18_compiled",
        RunConfig(name="", arch="resnet18", batch=TUNED_BATCH, steps=70, warmup=10, compile=True, **tuned),
        estimate=ESTIMATE["rn18_compiled"],
        gate_key="tuned_rn18_compiled",
    )
    s.real_data("resnet18", 64, 224, s.opts.steps or 100, amp)


def synthetic_trainer(s: Suite, amp: str) -> tuple[Any, Callable[[int], None]]:
    """A fresh ResNet-18 (mixed precision, channels_last) with SGD, and `train_once(batch)`: one
    step on a random batch of the synthetic set already on the GPU (no loader in the way). The
    batch ramp and the telemetry overhead A/B both train with it."""
    import torch

    from .networks import build_model
    from .synthetic import NUM_CLASSES, normalize
    from .train import amp_dtype

    assert s.data is not None
    data = s.data.train
    model = build_model("resnet18", NUM_CLASSES)[0].to("cuda", memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dt, n = amp_dtype(amp), len(data)

    def train_once(b: int) -> None:
        idx = torch.randint(0, n, (b,), device="cuda")
        x = normalize(data.images[idx]).contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=dt):
            loss = torch.nn.functional.cross_entropy(model(x), data.labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return opt, train_once


def batch_ramp(s: Suite, amp: str, reserve: float) -> None:
    """ResNet-18, mixed precision, channels_last: double until OOM, back off, bisect."""
    import torch

    from .ramp import find_max_batch
    from .train import free_device_memory

    with s.rec.step("batch_ramp") as st:
        if s.data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["ramp"] / 2)
        free_device_memory()
        opt, train_once = synthetic_trainer(s, amp)
        # cuDNN autotuning each new batch would cost seconds per size; off for the ramp only.
        torch.backends.cudnn.benchmark = False

        def try_batch(b: int) -> dict[str, Any]:
            torch.cuda.reset_peak_memory_stats()
            for _ in range(2):
                train_once(b)
            torch.cuda.synchronize()
            return {"peak_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20)}

        def after_oom() -> None:
            opt.zero_grad(set_to_none=True)
            free_device_memory()

        t_start = s.window_start()
        budget = min(ESTIMATE["ramp"], max(5.0, s.remaining() - reserve))
        try:
            res = find_max_batch(
                try_batch,
                start=64,
                cap=RAMP_CAP,
                after_oom=after_oom,
                deadline=time.monotonic() + budget,
            )
        finally:
            torch.backends.cudnn.benchmark = True
            s.window_end(st, t_start)
        st.metrics.update(res, model="resnet18", precision=amp, channels_last=True)
        st.metrics["ramp_budget_s"] = round(budget, 1)
        if res["stopped"]:
            st.warnings.append(res["stopped"])
        if res["largest_batch"] is None:
            raise StepFailed("even the smallest batch of the ramp ran out of memory")
        s.facts["largest_batch"] = res["largest_batch"]
        log(f"batch ramp: largest batch {res['largest_batch']}, first OOM {res['first_oom_batch']}")


def measure_overhead(window: Any, pairs: int, pause: Any, resume: Any) -> dict[str, Any]:
    """A/B: the same window with the sampler off and on, back to back, in ABBA order.

    `window()` returns the mean step time (s) of one window. Each pair's ratio on/off compares two
    adjacent windows, so drift (clocks, temperature) cancels. Reported: the mean ratio - 1 as the
    overhead estimate, and its one-sided 95% lower bound (Student t over the pairs): the
    overhead the data *shows* for certain. On the H200 VM single windows vary by up to 15%, so an
    estimate alone cannot resolve 1%; `judge_overhead_measurement` combines the bound with the
    sampler's own measured cost.
    """
    off: list[float] = []
    on: list[float] = []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        for sampling in order:
            (resume if sampling else pause)()
            (on if sampling else off).append(window())
    resume()
    # The harness also runs on Python 3.8/3.9 images, where zip() has no strict=.
    ratios = [a / b for a, b in zip(on, off) if b > 0]  # noqa: B905
    out: dict[str, Any] = {
        "windows_off_s": off,
        "windows_on_s": on,
        "pair_ratios": [round(r, 5) for r in ratios],
        "median_step_off_ms": _median(sorted(off)) * 1000,
        "median_step_on_ms": _median(sorted(on)) * 1000,
        "overhead": None,
        "overhead_lower_95": None,
        "noise": None,
    }
    if ratios:
        mean = sum(ratios) / len(ratios)
        out["overhead"] = mean - 1
        if len(ratios) > 1:
            sd = (sum((r - mean) ** 2 for r in ratios) / (len(ratios) - 1)) ** 0.5
            se = sd / len(ratios) ** 0.5
            out["noise"] = sd
            out["overhead_lower_95"] = mean - _T95[min(len(ratios) - 1, len(_T95)) - 1] * se - 1
    return out


# One-sided 95% Student t quantiles for 1..10 degrees of freedom (more: use the last).
_T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812)


def judge_overhead_measurement(
    measured: dict[str, Any], duty_cycle: float | None, limit: float
) -> tuple[float | None, str | None]:
    """The value gated against `limit`, and a failure reason or None.

    Fails when the A/B shows an overhead of `limit` or more with 95% confidence, or when the
    sampler's own time (mean cost of one sample / interval) reaches `limit`: either way the
    sampler slows training measurably. The gated value is the larger of the two.
    """
    lower = measured.get("overhead_lower_95")
    candidates = [v for v in (lower, duty_cycle) if v is not None]
    if not candidates:
        return None, None
    value = max(candidates)
    if lower is not None and lower >= limit:
        return value, f"training steps slowed by at least {lower:.2%} with the sampler on (95% bound)"
    if duty_cycle is not None and duty_cycle >= limit:
        return value, f"the sampler itself takes {duty_cycle:.2%} of the time"
    return value, None


def overhead_detail(measured: dict[str, Any], cost: dict[str, Any]) -> str:
    """What the gated overhead is made of, for the gate's reason: the A/B and the sampler's share."""
    parts = []
    if measured.get("overhead") is not None:
        bound = measured.get("overhead_lower_95")
        parts.append(
            f"A/B {measured['overhead']:+.2%}"
            + (f", 95% lower bound {bound:+.2%}" if bound is not None else "")
        )
    if cost.get("sampler_duty_cycle") is not None:
        parts.append(
            f"sampler {cost['sampler_duty_cycle']:.2%} of the time: {cost['sample_cost_ms']:.1f} ms "
            f"per sample, one per {cost['period_s']:.2f} s"
        )
    return "; ".join(parts)


def _median(xs: list[float]) -> float:
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


OVERHEAD_PAIRS = 6  # 12 windows of >= 150 steps: 20-26 s for ResNet-18 at batch 128 on an H200
OVERHEAD_MIN_STEPS = 150


def telemetry_overhead(s: Suite, amp: str) -> None:
    import torch

    from .train import free_device_memory

    with s.rec.step("telemetry_overhead") as st:
        if s.sampler is None:
            raise StepSkipped("no NVML sampler (see telemetry.reason)")
        if s.data is None:
            raise StepSkipped("no dataset (the dataset step did not pass)")
        s.need(ESTIMATE["overhead"])
        free_device_memory()
        b = 128
        train_once = synthetic_trainer(s, amp)[1]

        def window(steps: int) -> float:
            # The mean step time from two CUDA events, not a median: a sample's cost lands on a
            # few steps, a median would hide it.
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(steps):
                train_once(b)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / steps / 1000

        for _ in range(8):
            train_once(b)
        step_s = window(20)
        assert s.sampler is not None
        # Each window spans more than one sampler period (which stretches when NVML is slow), so
        # every "on" window holds at least one sample.
        steps = max(OVERHEAD_MIN_STEPS, math.ceil(1.2 * s.sampler.period() / step_s))
        res = measure_overhead(lambda: window(steps), OVERHEAD_PAIRS, s.sampler.pause, s.sampler.resume)
        st.metrics.update(res, window_steps=steps, batch=b, model="resnet18")
        cost = s.sampler.cost()
        st.metrics.update(cost)
        limit = float(s.applied["telemetry_overhead_max"])
        value, why = judge_overhead_measurement(res, cost["sampler_duty_cycle"], limit)
        st.metrics["gated_overhead"] = value
        s.facts["telemetry_overhead"] = value
        s.facts["telemetry_overhead_detail"] = overhead_detail(res, cost)
        if why is not None:
            raise StepFailed(f"{why} (limit {limit:.0%} of step time)")
