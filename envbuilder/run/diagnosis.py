"""The diagnosis of `envbuilder run --monitor`: the field guide's rules (docs/run.md) over the
recorded NVML series of each GPU, the CPU of the job's processes and the job's own output.
`diagnose` is pure; monitor.py records the series, processes.py the processes, joblog.py reads
the output.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from envbuilder import frameworks
from envbuilder.harness.telemetry import CLOCK_EVENT_REASONS
from envbuilder.run.joblog import JobOutput
from envbuilder.run.processes import ProcessSeries, cpu_view
from envbuilder.run.xid import XID_DOCS, XidEvent, xid_meaning

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
# A starved GPU's two causes, from the host's view (processes.py, NVML PCIe counters):
MAIN_BUSY_SHARE = 0.9  # the main process at >= 90% of one core: its own loop is the limit
THREADS_SHARE = 1.5  # the main process on more than 1.5 cores: its threads (tf.data, decoding) work
WORKER_BUSY_SHARE = 0.75  # worker processes at >= 75% of a core each (mean): they cannot keep up
H2D_BUSY_FRACTION = 0.5  # host-to-device traffic at half the link or more
# Each framework's own tools (envbuilder/frameworks/NAME.py HINTS), in the registry's order.
CHECKPOINT_APIS = " / ".join(h for fw in frameworks.ALL_FRAMEWORK_MODULES if (h := fw.HINTS.checkpoint))
PROFILERS = " / ".join(h for fw in frameworks.ALL_FRAMEWORK_MODULES if (h := fw.HINTS.profiler))
OOM_ADVICE = (
    "the field guide's first VRAM lesson: reduce the batch size{fit}; mixed precision (bf16 autocast "
    "halves activations); gradient accumulation (same effective batch, smaller steps); activation "
    f"checkpointing ({CHECKPOINT_APIS}); and free what the loop keeps alive"
)
WAIT_ADVICE = (
    "find where the main process blocks: `py-spy dump --pid {pid}` (or py-spy top) while it waits, "
    f"{PROFILERS} for the gaps between kernels; sleeps, locks, disk or network "
    "reads, a collective waiting on another rank and a synchronize on another stream all look "
    "alike from the host"
)
PIPELINE_ADVICE = (
    "feed the GPU faster: more DataLoader workers (num_workers, persistent_workers=True), "
    "pin_memory=True with non_blocking copies, deeper prefetch (prefetch_factor; tf.data "
    "num_parallel_calls and .prefetch(tf.data.AUTOTUNE)), decode and augment on the GPU (DALI, "
    "nvJPEG), send uint8 and normalise on the GPU, or keep the data set resident on the GPU"
)
LOOP_ADVICE = (
    "fewer, larger launches: a larger batch; CUDA graphs (torch.compile(mode='reduce-overhead'), "
    "torch.cuda.graphs); compile to fuse the small ops (torch.compile, jax.jit, "
    "tf.function(jit_compile=True)); no host sync every step (.item(), printing tensors, .cpu()). "
    "More DataLoader workers will not help: the loop itself is the limit"
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
    pcie_link_gbs: float | None = None  # one direction's capacity of the GPU's PCIe link
    series: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    def column(self, key: str) -> list[Any]:
        return list(self.series.get(key) or [])


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    rule: str  # idle | too-short | input-bound | cpu-bound | waiting | compute-inefficient | gpu-bound
    # | clocks-held-down | memory-leak | caching-allocator | out-of-memory | host-out-of-memory
    # | non-finite-loss | nccl-timeout | xid | ok
    severity: Severity
    gpu: int | None  # None: about the job as a whole (its output, its exit)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Starvation:
    """Why a GPU waits, as the host saw it: "pipeline" (workers or input threads busy, or the PCIe
    link near full), "loop" (the main process at a full core), "waiting" (neither is busy)."""

    cause: Literal["pipeline", "loop", "waiting"]
    evidence: str
    main_pid: int | None = None  # the training loop's host PID, where the host saw it


def starvation_cause(gpu: GpuSeries, a: int, b: int, processes: Sequence[ProcessSeries]) -> Starvation | None:
    """The cause over samples [a, b) of the GPU's series; None without CPU or PCIe evidence."""
    t = _nums(gpu.column("t"))
    view = cpu_view(processes, t[a], t[min(b, len(t)) - 1]) if processes and len(t) > a else None
    rx = _nums(gpu.column("pcie_rx_gbs")[a:b])
    h2d = statistics.fmean(rx) if rx else None
    link = gpu.pcie_link_gbs
    pipeline = []
    if view is not None and view.workers and view.worker_mean >= WORKER_BUSY_SHARE:
        comm = {p.pid: p.comm for p in processes}
        named = ", ".join(f"{comm[pid]} {pid}" for pid, _ in view.workers)
        pipeline.append(
            f"{len(view.workers)} worker process(es) ({named}) at {view.worker_mean:.0%} of a core "
            "each: they cannot make batches faster"
        )
    if view is not None and view.main_share >= THREADS_SHARE:
        pipeline.append(
            f"the main process ({view.main_comm}) on {view.main_share:.1f} cores: its threads "
            "(tf.data, decoding, augmentation) are working"
        )
    if h2d is not None and link and h2d >= H2D_BUSY_FRACTION * link:
        pipeline.append(
            f"host-to-device traffic {h2d:.1f} GB/s, {h2d / link:.0%} of the {link:.0f} GB/s link"
        )
    if pipeline:
        return Starvation(cause="pipeline", evidence="; ".join(pipeline))
    if view is None:
        return None
    busy = f"{len(view.workers)} busy worker(s)" if view.workers else "no busy worker"
    traffic = f", host-to-device {h2d:.1f} GB/s" if h2d is not None else ""
    seen = (
        f"the main process ({view.main_comm}, pid {view.main_pid}) at {view.main_share:.0%} of a core, {busy}"
    )
    if view.main_share >= MAIN_BUSY_SHARE:
        return Starvation(cause="loop", evidence=seen + traffic, main_pid=view.main_pid)
    return Starvation(cause="waiting", evidence=seen + traffic, main_pid=view.main_pid)


def _starved(gpu: GpuSeries, seen: str, cause: Starvation | None) -> Finding:
    """The finding for a GPU that waits, named by its cause only on the host's evidence: busy
    workers, input threads or host-to-device traffic (input-bound), the main process at a full
    core (cpu-bound); otherwise "waiting", with what the host cannot see and no loader remedy."""
    if cause is not None and cause.cause == "loop":
        return Finding(
            rule="cpu-bound",
            severity="warn",
            gpu=gpu.index,
            message=f"{seen}: the GPU waits on the training loop's own CPU work ({cause.evidence})",
            advice=LOOP_ADVICE,
        )
    if cause is not None and cause.cause == "pipeline":
        return Finding(
            rule="input-bound",
            severity="warn",
            gpu=gpu.index,
            message=f"{seen}: the input pipeline cannot keep up ({cause.evidence})",
            advice=PIPELINE_ADVICE,
        )
    saw = (
        f"the host sees no busy input pipeline and no busy loop ({cause.evidence})"
        if cause is not None
        else "the host did not see the job's processes, so it names no cause"
    )
    return Finding(
        rule="waiting",
        severity="warn",
        gpu=gpu.index,
        message=f"{seen}; {saw}: the job waits on something the host cannot see (sleeps, "
        "synchronisation with another stream, rank or lock, disk or network I/O, another process)",
        advice=WAIT_ADVICE.format(pid=cause.main_pid if cause is not None and cause.main_pid else "PID"),
    )


def _utilization_findings(
    gpu: GpuSeries, util: list[float], power: list[float], cause: Starvation | None = None
) -> list[Finding]:
    mean = statistics.fmean(util)
    stdev = statistics.pstdev(util)
    dips = sum(1 for u in util if u < DIP_UTIL) / len(util)
    seen = f"GPU utilization mean {mean:.0f}%, {dips:.0%} of samples below {DIP_UTIL:.0f}%"
    if mean < LOW_UTIL:
        return [_starved(gpu, f"{seen}: the GPU is mostly waiting", cause)]
    if dips >= SPIKY_DIP_FRACTION and stdev >= SPIKY_STDEV:
        return [
            _starved(gpu, f"{seen} (spiky, stdev {stdev:.0f} points): bursts of work between waits", cause)
        ]
    if mean < HIGH_UTIL:
        return []
    limit = gpu.power_limit_w
    if power and limit:
        share = statistics.fmean(power) / limit
        if share < LOW_POWER_FRACTION and cause is not None and cause.cause == "loop":
            return [
                Finding(
                    rule="cpu-bound",
                    severity="warn",
                    gpu=gpu.index,
                    message=f"{seen}, but power draw only {share:.0%} of the {limit:.0f} W limit while "
                    f"{cause.evidence}: many tiny kernels, each launched from Python, keep the GPU "
                    "'busy' without using its math units",
                    advice=LOOP_ADVICE,
                )
            ]
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
        "waits nearly all the time; a cpu-bound or input-bound finding beside this one names the "
        "cause where the host saw it",
    )


def _death_findings(
    gpus: Sequence[GpuSeries], output: JobOutput | None, exit_code: int | None, oom_killed: bool
) -> list[Finding]:
    """How the job died, from its output, its exit and memory at the ceiling; no sample count
    needed (an out-of-memory death is usually too short for the other rules). About the job, or
    the GPU whose memory was full."""
    full: list[tuple[GpuSeries | None, float | None]] = []
    for g in gpus:
        mem = _nums(g.column("mem_used_mib"))
        if mem and g.memory_total_mib and max(mem) >= OOM_CEILING * g.memory_total_mib:
            full.append((g, max(mem)))
    out: list[Finding] = []
    said = output.oom_line if output else None
    failed = exit_code not in (None, 0)
    fit = ""
    if output and output.last_fit_batch:
        fit = f" (batch {output.last_fit_batch} ran" + (
            f", {output.oom_batch} did not)" if output.oom_batch else ")"
        )
    where: list[tuple[GpuSeries | None, float | None]] = list(full[:1]) if said else list(full)
    if said and not where:  # below the ceiling (one large request failed): the only GPU, or the job
        sampled = [(g, max(mem)) for g in gpus if (mem := _nums(g.column("mem_used_mib")))]
        where = list(sampled) if len(sampled) == 1 else [(None, None)]
    if said or (full and failed):
        for gs, peak in where:
            total = gs.memory_total_mib if gs is not None else None
            shown = f" (peak {peak / 1024:.1f} of {total / 1024:.1f} GiB)" if peak and total else ""
            why = (
                f"the job's output says: {said}"
                if said
                else f"exit code {exit_code} with GPU memory at the ceiling"
            )
            out.append(
                Finding(
                    rule="out-of-memory",
                    severity="warn",
                    gpu=gs.index if gs is not None else None,
                    message=f"the job ran out of GPU memory{shown}: {why}",
                    advice=OOM_ADVICE.format(fit=fit),
                )
            )
    if oom_killed:
        out.append(
            Finding(
                rule="host-out-of-memory",
                severity="warn",
                gpu=None,
                message=f"the kernel's OOM killer ended the container (exit code {exit_code}): host "
                "memory ran out, not GPU memory",
                advice="fewer DataLoader workers or a smaller prefetch (each worker holds batches), load "
                "the data set lazily instead of into RAM, and check the container's memory limit",
            )
        )
    if output and output.nonfinite_line:
        out.append(
            Finding(
                rule="non-finite-loss",
                severity="warn",
                gpu=None,
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
                gpu=None,
                message=f"a collective timed out: {output.nccl_timeout_line}",
                advice="a rank stopped calling collectives (crash, a data-dependent branch, uneven batches) "
                "or the transport hangs: run `envbuilder doctor` (shm, P2P, NCCL settings), set "
                "NCCL_DEBUG=INFO, and make every rank run the same number of steps",
            )
        )
    return out


def _xid_findings(xids: Sequence[XidEvent]) -> list[Finding]:
    """One finding per (GPU, Xid number), in the order first seen, with what the number means."""
    seen: dict[tuple[int | None, int], list[XidEvent]] = {}
    for e in sorted(xids, key=lambda e: e.t):
        seen.setdefault((e.gpu, e.xid), []).append(e)
    out = []
    for (gpu, xid), events in seen.items():
        meaning = xid_meaning(xid)
        times = (
            f"{len(events)} times from {events[0].t:.1f} s" if len(events) > 1 else f"at {events[0].t:.1f} s"
        )
        out.append(
            Finding(
                rule="xid",
                severity="warn",
                gpu=gpu,
                message=f"NVML reported Xid {xid} {times}: {meaning.name} (usually {meaning.who})",
                advice=f"{meaning.action}; the kernel log has the full line (`dmesg | grep -i xid`); "
                f"NVIDIA's Xid catalog: {XID_DOCS}",
            )
        )
    return out


def diagnose(
    gpus: Sequence[GpuSeries],
    *,
    output: JobOutput | None = None,
    exit_code: int | None = None,
    processes: Sequence[ProcessSeries] = (),
    oom_killed: bool = False,
    xids: Sequence[XidEvent] = (),
) -> tuple[Finding, ...]:
    """Apply the field guide's rules to each GPU's samples, the job's processes, its output and
    the Xid errors NVML reported (pure). Never raises; an empty or idle series gives an 'idle' or
    'too-short' finding rather than a guess, beside how the job died when its output, its exit,
    memory at the ceiling or an Xid says so. Without GPUs only the job's output and exit are judged."""
    death = _xid_findings(xids) + _death_findings(gpus, output, exit_code, oom_killed)
    out: list[Finding] = list(death)
    for gpu in gpus:
        util_all = gpu.column("util_gpu")
        window = _busy_window(util_all, gpu.column("mem_used_mib"))
        if window is None:
            out.append(_idle(gpu, len(util_all)))
            cause = starvation_cause(gpu, 0, len(util_all), processes)
            held = out[-1].message.startswith("the job held")
            if held and cause is not None and cause.cause in ("loop", "pipeline"):
                out.append(_starved(gpu, "GPU utilization 0%", cause))
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
        found = _utilization_findings(gpu, util, power, starvation_cause(gpu, a, b, processes))
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
        where = f"GPU {f.gpu}" if f.gpu is not None else "job"
        lines.append(f"[{f.severity}] {where} {f.rule}: {f.message}")
        if f.advice:
            lines.append(f"    -> {f.advice}")
    return (
        "\n".join(lines) + "\n" if lines else "no finding: no GPU telemetry and nothing in the job's output\n"
    )
