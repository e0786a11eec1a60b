"""The diagnosis of `envbuilder run --monitor`: the field guide's rules (docs/run.md) over the
recorded NVML series of each GPU. `diagnose` is pure; monitor.py records the series.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envbuilder.harness.telemetry import CLOCK_EVENT_REASONS
from envbuilder.run.joblog import JobOutput

# ---- thresholds of the rules (docs/run.md explains each)
MIN_SAMPLES = 8  # fewer busy samples than this: too short to judge
ACTIVE_MEM_MIB = 256.0  # memory this far above the first sample: the job holds the GPU
LOW_UTIL = 60.0  # mean GPU utilization (%) below this: the GPU is waiting
DIP_UTIL = 40.0  # a sample below this counts as a dip
SPIKY_DIP_FRACTION = 0.2  # this share of dips with...
SPIKY_STDEV = 25.0  # ...this spread (points of %) is "spiky"
HIGH_UTIL = 85.0  # mean utilization at or above this: the GPU is kept busy
LOW_POWER_FRACTION = 0.6  # busy but drawing less than this share of the power limit: inefficient
SLOWDOWN_FRACTION = 0.10  # power/thermal clock events in this share of busy samples: held down
LEAK_MIN_MIB = 256.0  # growth second quarter -> last quarter above max(this, 1% of total): a leak
LEAK_MIN_FRACTION = 0.01
CACHE_MIN_MIB = 512.0  # rose this much above the first sample and then held: the caching allocator
OOM_CEILING = 0.97  # memory at this share of the total, and the job failed: it ran out of memory
OOM_ADVICE = (
    "the field guide's first VRAM lesson: reduce the batch size{fit}; mixed precision (bf16 autocast "
    "halves activations); gradient accumulation (same effective batch, smaller steps); activation "
    "checkpointing (torch.utils.checkpoint / jax.checkpoint); and free what the loop keeps alive"
)

THERMAL_BITS = 0x20 | 0x40  # sw_thermal_slowdown, hw_thermal_slowdown
POWER_BITS = 0x4 | 0x80  # sw_power_cap, hw_power_brake_slowdown
HW_SLOWDOWN_BIT = 0x8  # hw_slowdown: heat or an external power brake

Severity = Literal["info", "warn"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSeries:
    """One GPU's samples: columns named as the harness's sampler names them (t, util_gpu, ...)."""

    index: int
    name: str
    uuid: str | None = None
    memory_total_mib: float | None = None
    power_limit_w: float | None = None
    series: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    def column(self, key: str) -> list[Any]:
        return list(self.series.get(key) or [])


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    rule: str  # idle | too-short | input-bound | compute-inefficient | gpu-bound | clocks-held-down
    # | memory-leak | caching-allocator | ok
    severity: Severity
    gpu: int
    message: str  # what was seen, with the numbers
    advice: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "gpu": self.gpu,
            "message": self.message,
            "advice": self.advice,
        }


def _busy_window(util: Sequence[Any], mem: Sequence[Any]) -> tuple[int, int] | None:
    """[first, last] index where the job is on the GPU: utilization > 0, or memory held above the
    first sample (taken before the job started) by ACTIVE_MEM_MIB. Start-up and tear-down are
    not the job; a starved job that holds its model on the GPU at ~0% utilization still is.
    None when no sample shows any utilization (the job never ran a kernel there)."""
    if not any(u is not None and u > 0 for u in util):
        return None
    base = next((float(m) for m in mem if isinstance(m, int | float)), None)
    active = [
        i
        for i in range(len(util))
        if (util[i] is not None and util[i] > 0)
        or (
            base is not None
            and i < len(mem)
            and isinstance(mem[i], int | float)
            and mem[i] - base >= ACTIVE_MEM_MIB
        )
    ]
    return active[0], active[-1]


def _nums(values: Sequence[Any]) -> list[float]:
    return [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]


def _utilization_findings(gpu: GpuSeries, util: list[float], power: list[float]) -> list[Finding]:
    mean = statistics.fmean(util)
    stdev = statistics.pstdev(util)
    dips = sum(1 for u in util if u < DIP_UTIL) / len(util)
    seen = f"GPU utilization mean {mean:.0f}%, {dips:.0%} of samples below {DIP_UTIL:.0f}%"
    feed = (
        "the input pipeline or the CPU is the bottleneck: raise DataLoader num_workers, set "
        "pin_memory=True and persistent_workers, prefetch, decode/augment less on the CPU, or use "
        "a larger batch"
    )
    if mean < LOW_UTIL:
        return [
            Finding(
                rule="input-bound",
                severity="warn",
                gpu=gpu.index,
                message=f"{seen}: the GPU is mostly waiting",
                advice=feed,
            )
        ]
    if dips >= SPIKY_DIP_FRACTION and stdev >= SPIKY_STDEV:
        return [
            Finding(
                rule="input-bound",
                severity="warn",
                gpu=gpu.index,
                message=f"{seen} (spiky, stdev {stdev:.0f} points): bursts of work between waits",
                advice=feed,
            )
        ]
    if mean < HIGH_UTIL:
        return []
    limit = gpu.power_limit_w
    if power and limit:
        share = statistics.fmean(power) / limit
        if share < LOW_POWER_FRACTION:
            return [
                Finding(
                    rule="compute-inefficient",
                    severity="warn",
                    gpu=gpu.index,
                    message=f"{seen}, but power draw only {share:.0%} of the {limit:.0f} W limit: kernels "
                    "keep the GPU busy without using its math units",
                    advice="check precision (mixed precision bf16/fp16, TF32 for FP32), kernels "
                    "(channels_last, torch.compile, cudnn.benchmark) and the model (tiny layers, small "
                    "batch, many small ops or host syncs such as .item() every step)",
                )
            ]
    return [
        Finding(
            rule="gpu-bound",
            severity="info",
            gpu=gpu.index,
            message=f"{seen}: the GPU is the bottleneck and busy",
            advice="more speed now comes from mixed precision, a larger batch, or a faster GPU",
        )
    ]


def _clock_findings(
    gpu: GpuSeries, masks: list[int], temps: list[float], power: list[float]
) -> list[Finding]:
    if not masks:
        return []
    slow_bits = THERMAL_BITS | POWER_BITS | HW_SLOWDOWN_BIT
    share = sum(1 for m in masks if m & slow_bits) / len(masks)
    if share < SLOWDOWN_FRACTION:
        return []
    union = 0
    for m in masks:
        union |= m & slow_bits
    names = [n for bit, n in CLOCK_EVENT_REASONS.items() if union & bit]
    causes = []
    if union & (THERMAL_BITS | HW_SLOWDOWN_BIT):
        hot = f" (max {max(temps):.0f} C)" if temps else ""
        causes.append(f"cooling{hot}: check airflow, fans, inlet temperature and dust")
    if union & (POWER_BITS | HW_SLOWDOWN_BIT):
        draw = f" (mean {statistics.fmean(power):.0f} W)" if power else ""
        causes.append(
            f"power{draw}: check `nvidia-smi -q -d POWER,PERFORMANCE`, the power limit "
            "(nvidia-smi -pl) and the PSU/power brake"
        )
    return [
        Finding(
            rule="clocks-held-down",
            severity="warn",
            gpu=gpu.index,
            message=f"clocks held down in {share:.0%} of busy samples by {', '.join(names)}",
            advice="; ".join(causes),
        )
    ]


def _memory_findings(gpu: GpuSeries, mem: list[float], base: float) -> list[Finding]:
    """`mem`: the job's window; `base`: the first sample of the whole run (before the job)."""
    if len(mem) < MIN_SAMPLES:
        return []
    q = len(mem) // 4
    q2, q3, q4 = (statistics.fmean(mem[i * q : (i + 1) * q]) for i in (1, 2, 3))
    q4 = statistics.fmean(mem[3 * q :])
    growth = q4 - q2
    floor = max(LEAK_MIN_MIB, LEAK_MIN_FRACTION * (gpu.memory_total_mib or 0.0))
    if growth > floor and q2 <= q3 <= q4:
        return [
            Finding(
                rule="memory-leak",
                severity="warn",
                gpu=gpu.index,
                message=f"GPU memory kept climbing: {q2:.0f} -> {q3:.0f} -> {q4:.0f} MiB over the last "
                f"three quarters of the run (+{growth:.0f} MiB)",
                advice="something keeps tensors alive step after step: accumulate loss.item() not the loss "
                "tensor, do not append outputs/graphs to lists, detach what you log, and check "
                "torch.cuda.memory_allocated() per step (allocated, not reserved)",
            )
        ]
    rise = max(mem) - base
    if rise >= CACHE_MIN_MIB and abs(growth) <= floor:
        return [
            Finding(
                rule="caching-allocator",
                severity="info",
                gpu=gpu.index,
                message=f"GPU memory rose {rise:.0f} MiB early, then held near {q4:.0f} MiB",
                advice="not a leak: the framework's caching allocator keeps freed blocks reserved for "
                "reuse (NVML and nvidia-smi show reserved memory; compare torch.cuda.memory_allocated() "
                "with memory_reserved())",
            )
        ]
    return []


def _idle(gpu: GpuSeries, samples: int) -> Finding:
    """No utilization at all. Holding memory means a CUDA context (and maybe a model) is there:
    the work is on the CPU, or the GPU waits for input nearly all the time (kernels busy ~1% of
    the time read as 0% in NVML's utilization)."""
    mem = _nums(gpu.column("mem_used_mib"))
    held = max(mem) - mem[0] if mem else 0.0
    if held < ACTIVE_MEM_MIB:
        return Finding(
            rule="idle",
            severity="warn",
            gpu=gpu.index,
            message=f"GPU {gpu.index} showed no utilization and no memory use in {samples} samples",
            advice="the job did not use this GPU: check torch.cuda.is_available() inside the "
            "container, that the model and batches are moved .to('cuda'), and the GPU access mode",
        )
    return Finding(
        rule="idle",
        severity="warn",
        gpu=gpu.index,
        message=f"the job held {held:.0f} MiB on GPU {gpu.index} but utilization read 0% in all "
        f"{samples} samples",
        advice="either the model or the batches are not on the GPU (check .to('cuda')), or the GPU "
        "waits for input nearly all the time (see the input-bound advice: DataLoader workers, "
        "pin_memory, prefetch, larger batches)",
    )


def _death_findings(gpu: GpuSeries, output: JobOutput | None, exit_code: int | None) -> list[Finding]:
    """How the job died, from its output and from memory at the ceiling; no sample count needed
    (an out-of-memory death is usually too short for the other rules)."""
    mem = _nums(gpu.column("mem_used_mib"))
    peak = max(mem) if mem else None
    total = gpu.memory_total_mib
    at_ceiling = bool(peak and total and peak >= OOM_CEILING * total)
    out: list[Finding] = []
    said = output.oom_line if output else None
    if said or (at_ceiling and exit_code not in (None, 0)):
        shown = f" (peak {peak / 1024:.1f} of {total / 1024:.1f} GiB)" if peak and total else ""
        why = (
            f"the job's output says: {said}"
            if said
            else f"exit code {exit_code} with GPU memory at the ceiling"
        )
        fit = ""
        if output and output.last_fit_batch:
            fit = f" (batch {output.last_fit_batch} ran" + (
                f", {output.oom_batch} did not)" if output.oom_batch else ")"
            )
        out.append(
            Finding(
                rule="out-of-memory",
                severity="warn",
                gpu=gpu.index,
                message=f"the job ran out of GPU memory{shown}: {why}",
                advice=OOM_ADVICE.format(fit=fit),
            )
        )
    if output and output.nonfinite_line:
        out.append(
            Finding(
                rule="non-finite-loss",
                severity="warn",
                gpu=gpu.index,
                message=f"the loss went non-finite: {output.nonfinite_line}",
                advice="lower the learning rate or warm it up, clip gradients, use bf16 rather than fp16 "
                "(or a GradScaler), and check the inputs for NaN",
            )
        )
    if output and output.nccl_timeout_line:
        out.append(
            Finding(
                rule="nccl-timeout",
                severity="warn",
                gpu=gpu.index,
                message=f"a collective timed out: {output.nccl_timeout_line}",
                advice="a rank stopped calling collectives (crash, a data-dependent branch, uneven batches) "
                "or the transport hangs: run `envbuilder doctor` (shm, P2P, NCCL settings), set "
                "NCCL_DEBUG=INFO, and make every rank run the same number of steps",
            )
        )
    return out


def diagnose(
    gpus: Sequence[GpuSeries], *, output: JobOutput | None = None, exit_code: int | None = None
) -> tuple[Finding, ...]:
    """Apply the field guide's rules to each GPU's samples and the job's output (pure). Never
    raises; an empty or idle series gives an 'idle' or 'too-short' finding rather than a guess,
    beside how the job died when its output or memory at the ceiling says so."""
    out: list[Finding] = []
    for gpu in gpus:
        death = _death_findings(gpu, output, exit_code)
        out.extend(death)
        util_all = gpu.column("util_gpu")
        window = _busy_window(util_all, gpu.column("mem_used_mib"))
        if window is None:
            out.append(_idle(gpu, len(util_all)))
            continue
        a, b = window[0], window[1] + 1
        util = _nums(util_all[a:b])
        if len(util) < MIN_SAMPLES:
            out.append(
                Finding(
                    rule="too-short",
                    severity="info",
                    gpu=gpu.index,
                    message=f"only {len(util)} busy samples: too short to diagnose",
                )
            )
            continue
        power = _nums(gpu.column("power_w")[a:b])
        temps = _nums(gpu.column("temp_c")[a:b])
        masks = [int(m) for m in _nums(gpu.column("reasons")[a:b])]
        found = _utilization_findings(gpu, util, power)
        found += _clock_findings(gpu, masks, temps, power)
        mem_all = _nums(gpu.column("mem_used_mib"))
        found += _memory_findings(gpu, _nums(gpu.column("mem_used_mib")[a:b]), mem_all[0] if mem_all else 0.0)
        if not any(f.severity == "warn" for f in found + death):
            found.append(Finding(rule="ok", severity="info", gpu=gpu.index, message="no problem found"))
        out.extend(found)
    return tuple(out)


def format_diagnosis(findings: Sequence[Finding]) -> str:
    """The diagnosis as short plain text, one finding per paragraph."""
    lines = []
    for f in findings:
        lines.append(f"[{f.severity}] GPU {f.gpu} {f.rule}: {f.message}")
        if f.advice:
            lines.append(f"    -> {f.advice}")
    return "\n".join(lines) + "\n"
