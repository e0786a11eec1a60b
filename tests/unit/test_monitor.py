"""The monitor's diagnosis rules, each proven on a synthetic series built to trigger it (and not
the others), plus the telemetry/diagnosis files it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from envbuilder.run.diagnosis import Finding, GpuSeries, diagnose, format_diagnosis
from envbuilder.run.joblog import read_job_output
from envbuilder.run.monitor import gpu_series_from_json, write_monitor_files

N = 120  # samples (one per second)


def gpu(
    util: list[float] | None = None,
    mem: list[float] | None = None,
    power: list[float] | None = None,
    reasons: list[int] | None = None,
    temp: list[float] | None = None,
    limit: float = 700.0,
) -> GpuSeries:
    series: dict[str, list[Any]] = {
        "t": [float(i) for i in range(N)],
        "util_gpu": util if util is not None else [95.0] * N,
        "mem_used_mib": mem if mem is not None else [30_000.0] * N,
        "power_w": power if power is not None else [600.0] * N,
        "temp_c": temp if temp is not None else [60.0] * N,
        "reasons": reasons if reasons is not None else [0] * N,
    }
    return GpuSeries(
        index=0, name="NVIDIA H200", memory_total_mib=143_771.0, power_limit_w=limit, series=series
    )


def rules(findings: tuple[Finding, ...]) -> list[str]:
    return [f.rule for f in findings]


def test_healthy_busy_gpu_is_gpu_bound_and_ok() -> None:
    got = diagnose([gpu()])
    assert rules(got) == ["gpu-bound", "ok"]


def test_low_utilization_without_the_hosts_view_is_waiting_not_input_bound() -> None:
    # No process or PCIe evidence: the GPU waits, but nothing says on what, so no loader remedy.
    got = diagnose([gpu(util=[35.0 + (i % 3) for i in range(N)])])
    assert rules(got)[0] == "waiting"
    assert "mostly waiting" in got[0].message and "did not see the job's processes" in got[0].message
    assert "num_workers" not in got[0].advice and "py-spy dump --pid PID" in got[0].advice


def test_spiky_utilization_is_a_wait_too() -> None:
    # Mean 75 % (not "low"), but every fourth sample the GPU starves: bursts between waits.
    util = [10.0 if i % 4 == 0 else 97.0 for i in range(N)]
    got = diagnose([gpu(util=util)])
    assert rules(got)[0] == "waiting"
    assert "spiky" in got[0].message


def test_high_utilization_low_power_is_compute_inefficient() -> None:
    got = diagnose([gpu(power=[210.0] * N)])  # 30 % of 700 W while 95 % busy
    assert rules(got) == ["compute-inefficient"]
    assert "precision" in got[0].advice and "30%" in got[0].message


def test_thermal_clock_events_point_at_cooling() -> None:
    reasons = [0x20 if i % 2 else 0 for i in range(N)]  # sw_thermal_slowdown half the time
    got = diagnose([gpu(reasons=reasons, temp=[89.0] * N)])
    held = [f for f in got if f.rule == "clocks-held-down"]
    assert len(held) == 1
    assert "sw_thermal_slowdown" in held[0].message
    assert "cooling (max 89 C)" in held[0].advice and "power" not in held[0].advice


def test_power_cap_clock_events_point_at_power() -> None:
    got = diagnose([gpu(reasons=[0x4] * N)])  # sw_power_cap every sample
    held = next(f for f in got if f.rule == "clocks-held-down")
    assert "sw_power_cap" in held.message and "100%" in held.message
    assert held.advice.startswith("power") and "cooling" not in held.advice


def test_rare_or_benign_clock_events_are_ignored() -> None:
    rare = [0x4 if i < 5 else 0x1 for i in range(N)]  # 4 % power cap, rest gpu_idle (benign)
    assert "clocks-held-down" not in rules(diagnose([gpu(reasons=rare)]))


def test_memory_climbing_step_after_step_is_a_leak() -> None:
    mem = [20_000.0 + 40.0 * i for i in range(N)]  # +40 MiB per second, never levelling off
    got = diagnose([gpu(mem=mem)])
    leak = next(f for f in got if f.rule == "memory-leak")
    assert leak.severity == "warn"
    assert "loss.item()" in leak.advice


def test_reserved_but_stable_memory_is_the_caching_allocator() -> None:
    # Jumps to 60 GiB in the first seconds (allocator reserves), then flat with small noise.
    mem = [2_000.0 + 58_000.0 * min(1.0, i / 5) + 30 * math.sin(i) for i in range(N)]
    got = diagnose([gpu(mem=mem)])
    assert "memory-leak" not in rules(got)
    cache = next(f for f in got if f.rule == "caching-allocator")
    assert cache.severity == "info" and "not a leak" in cache.advice


def test_idle_gpu_says_the_job_did_not_use_it() -> None:
    got = diagnose([gpu(util=[0.0] * N)])
    assert rules(got) == ["idle"]
    assert "torch.cuda.is_available()" in got[0].advice


def test_too_few_busy_samples_is_not_judged() -> None:
    util = [0.0] * (N - 3) + [90.0] * 3
    assert rules(diagnose([gpu(util=util)])) == ["too-short"]


def test_start_up_and_tear_down_idle_is_ignored() -> None:
    # 20 idle samples before and after a well-fed job must not read as "low utilization".
    util = [0.0] * 20 + [96.0] * (N - 40) + [0.0] * 20
    assert rules(diagnose([gpu(util=util)])) == ["gpu-bound", "ok"]


def test_missing_power_data_does_not_claim_inefficiency() -> None:
    g = gpu(power=[None] * N)  # type: ignore[list-item]
    assert rules(diagnose([g])) == ["gpu-bound", "ok"]


def test_each_gpu_is_judged_on_its_own() -> None:
    busy, idle = gpu(), gpu(util=[0.0] * N)
    idle = GpuSeries(index=1, name=idle.name, series=idle.series)
    got = diagnose([busy, idle])
    assert [(f.gpu, f.rule) for f in got] == [(0, "gpu-bound"), (0, "ok"), (1, "idle")]


def test_files_are_written_beside_each_other(tmp_path: Path) -> None:
    g = gpu(util=[30.0] * N)
    findings = diagnose([g])
    telemetry, diagnosis = write_monitor_files(tmp_path / "m", [g], findings, {"image": "sha256:ab"})
    assert telemetry.parent == diagnosis.parent
    doc = json.loads(telemetry.read_text())
    assert doc["kind"] == "envbuilder-run-telemetry" and doc["image"] == "sha256:ab"
    assert doc["gpus"][0]["series"]["util_gpu"][0] == 30.0
    assert doc["diagnosis"][0]["rule"] == "waiting"
    assert diagnosis.read_text() == format_diagnosis(findings)
    assert "[warn] GPU 0 waiting" in diagnosis.read_text()


def test_a_starved_job_holding_gpu_memory_is_waiting_not_idle() -> None:
    # Measured shape (H200, tiny kernels between 30 ms waits): utilization reads 0-2 %, while the
    # job's memory sits above the pre-job first sample the whole time.
    util = [0.0] * 5 + [2.0 if i % 9 == 0 else 0.0 for i in range(N - 10)] + [0.0] * 5
    mem = [600.0] * 5 + [2_700.0] * (N - 10) + [600.0] * 5
    got = diagnose([gpu(util=util, mem=mem)])
    assert rules(got)[0] == "waiting"
    assert "mostly waiting" in got[0].message


RECORDED = Path(__file__).resolve().parent.parent / "data" / "monitor"


def recorded(name: str) -> GpuSeries:
    """A series recorded by the real Monitor on an H200 (tests/data/monitor/README.md)."""
    g = json.loads((RECORDED / f"h200-{name}.json").read_text())["gpus"][0]
    return GpuSeries(
        index=g["index"],
        name=g["name"],
        uuid=g["uuid"],
        memory_total_mib=g["memory_total_mib"],
        power_limit_w=g["power_limit_w"],
        series=g["series"],
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dense-bf16", ["gpu-bound", "clocks-held-down", "caching-allocator"]),
        ("starved", ["idle"]),
        ("leak", ["waiting", "memory-leak"]),
        ("cached", ["waiting", "caching-allocator"]),
    ],
)
def test_recorded_h200_workloads_get_the_right_diagnosis(name: str, expected: list[str]) -> None:
    got = diagnose([recorded(name)])
    assert rules(got) == expected
    if name == "dense-bf16":
        assert "sw_power_cap" in got[1].message and got[1].advice.startswith("power (mean 658 W)")
    if name == "starved":
        assert "held" in got[0].message and "utilization read 0%" in got[0].message


def test_idle_without_memory_says_the_job_did_not_use_the_gpu() -> None:
    got = diagnose([gpu(util=[0.0] * N, mem=[500.0] * N)])
    assert "no utilization and no memory use" in got[0].message


RECORDED_1201 = RECORDED / "h200-2026-12-01"


@pytest.mark.parametrize(
    ("name", "expected", "detail"),
    [
        ("dense-bf16", ["gpu-bound", "clocks-held-down", "caching-allocator"], "power (mean 671 W)"),
        ("leak", ["waiting", "memory-leak"], "+7697 MiB"),
        ("cached", ["waiting", "caching-allocator"], "held near 9818 MiB"),
    ],
)
def test_second_h200_recording_replays_to_the_same_rules(name: str, expected: list[str], detail: str) -> None:
    """The 2026-12-01 recordings (another session on the H200) through the JSON reader the monitor's
    files are written for: the same rules fire, with the figures of that run."""
    doc = json.loads((RECORDED_1201 / f"{name}.json").read_text())
    got = diagnose(gpu_series_from_json(doc))
    assert rules(got) == expected
    assert detail in format_diagnosis(got)
    # the diagnosis the GPU machine wrote at recording time, but for the starved-GPU rule's name:
    # it said input-bound without evidence then (no processes were recorded); waiting now
    written = [f["rule"] for f in doc["diagnosis"]]
    assert [r.replace("input-bound", "waiting") for r in written] == expected


def test_recorded_oom_output_names_oom_the_remedies_and_the_batch_that_fit() -> None:
    """The issue's job, for real: its printed output on the H200 (doubling the batch until torch
    raised OutOfMemoryError). With the output alone (no telemetry) the diagnosis names OOM, the
    guide's remedies and the batch that last ran."""
    text = (RECORDED_1201 / "oom.out.txt").read_text()
    got = diagnose([], output=read_job_output(text), exit_code=1)
    assert rules(got) == ["out-of-memory"]
    oom = got[0]
    assert "torch.OutOfMemoryError: CUDA out of memory" in oom.message
    assert "batch 2097152 ran, 4194304 did not" in oom.advice
    for remedy in ("mixed precision", "gradient accumulation", "checkpointing"):
        assert remedy in oom.advice
    assert format_diagnosis(got).startswith("[warn] job out-of-memory:")
    # The lines before the error (what fit) and a failed exit, without telemetry: not named OOM.
    before = "\n".join(line for line in text.splitlines() if " ok, " in line)
    assert "out-of-memory" not in rules(diagnose([], output=read_job_output(before), exit_code=1))


def test_an_oom_in_the_output_is_named_on_the_only_gpu_else_on_the_job() -> None:
    """Below the ceiling (one large request failed): with one GPU sampled the finding is that
    GPU's, with its peak; with two neither is guessed."""
    said = read_job_output("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 GiB.")
    one = diagnose([gpu(mem=[90_000.0] * N)], output=said, exit_code=1)
    assert (one[0].rule, one[0].gpu) == ("out-of-memory", 0) and "(peak 87.9 of 140.4 GiB)" in one[0].message
    other = GpuSeries(index=1, name="NVIDIA H200", series=gpu().series)
    two = diagnose([gpu(mem=[90_000.0] * N), other], output=said, exit_code=1)
    assert (two[0].rule, two[0].gpu) == ("out-of-memory", None) and "peak" not in two[0].message
