"""The seven workloads of tests/data/monitor/record_workloads.py as the real monitor recorded them on
the H200 (2026-12-01, process and PCIe sampling included; tests/data/monitor/README.md), replayed
through the pure diagnosis: each rule asserted on the real recording that shows it. The table is
what each recording must be diagnosed as; the diagnosis printed on the GPU machine differs only
where the starved-GPU rule was fixed since (input-bound without evidence is `waiting` now)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from envbuilder.run.diagnosis import Finding, diagnose, format_diagnosis
from envbuilder.run.joblog import read_job_output
from envbuilder.run.monitor import gpu_series_from_json
from envbuilder.run.processes import processes_from_json

S3 = Path(__file__).resolve().parent.parent / "data" / "monitor" / "h200-2026-12-01-s3"

EXPECTED = {
    "dense-bf16": ["gpu-bound", "clocks-held-down", "caching-allocator"],
    "starved": ["idle"],
    "leak": ["waiting", "memory-leak"],
    "cached": ["waiting", "caching-allocator"],
    "oom": ["out-of-memory", "waiting", "clocks-held-down"],
    "loop-bound": ["cpu-bound"],
    "loader-starved": ["input-bound"],
}
# Printed on the GPU machine before the fix: a starved GPU with no busy loader, no host-to-device
# traffic and an idle main process was called input-bound there.
FIXED = {"leak", "cached", "oom"}


def doc(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((S3 / f"{name}.json").read_text())
    return data


def replay(name: str) -> tuple[Finding, ...]:
    d = doc(name)
    oom = name == "oom"
    return diagnose(
        gpu_series_from_json(d),
        processes=processes_from_json(d["processes"]["processes"]),
        output=read_job_output((S3 / "oom.out.txt").read_text()) if oom else None,
        exit_code=1 if oom else None,  # the OOM job's exit; the others ended cleanly
    )


def one(findings: tuple[Finding, ...], rule: str) -> Finding:
    (f,) = [f for f in findings if f.rule == rule]
    return f


def test_every_recording_is_in_the_table() -> None:
    assert {p.stem for p in S3.glob("*.json")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recording_replays_to_its_expected_diagnosis(name: str) -> None:
    got = replay(name)
    assert [f.rule for f in got] == EXPECTED[name]
    written = [f["rule"] for f in doc(name)["diagnosis"]]
    printed = (S3 / f"{name}.diagnosis.txt").read_text()
    assert re.findall(r"^\[\w+\] (?:GPU \d+|job) ([\w-]+):", printed, re.M) == written  # the same run
    if name in FIXED:
        assert [r.replace("input-bound", "waiting") for r in written] == EXPECTED[name]
    else:
        assert written == EXPECTED[name]
    # Every rule the fixes did not touch says, word for word, what the GPU machine printed (the
    # out-of-memory finding now names the one GPU sampled and its peak, test below).
    for f, w in zip(got, doc(name)["diagnosis"], strict=True):
        if f.rule not in ("waiting", "input-bound", "idle"):
            peak = " (peak 128.8 of 140.4 GiB)" if f.rule == "out-of-memory" else ""
            assert (
                f.message == w["message"].replace("memory:", f"memory{peak}:", 1) and f.advice == w["advice"]
            )


def test_loop_bound_is_cpu_bound_with_the_main_process_at_a_full_core() -> None:
    f = one(replay("loop-bound"), "cpu-bound")
    assert "the main process (python3, pid 3071) at 102% of a core, no busy worker" in f.message
    assert "host-to-device 0.2 GB/s" in f.message and "mostly waiting" in f.message
    assert "CUDA graphs" in f.advice and "workers will not help" in f.advice


def test_loader_starved_is_input_bound_naming_the_busy_dataloader_workers() -> None:
    f = one(replay("loader-starved"), "input-bound")
    assert "2 worker process(es) (pt_data_worker 3138, pt_data_worker 3139) at 99% of a core" in f.message
    assert "num_workers" in f.advice and "pin_memory=True" in f.advice and "CUDA graphs" not in f.advice


@pytest.mark.parametrize(("name", "share"), [("leak", "6%"), ("cached", "15%"), ("oom", "25%")])
def test_sleeping_or_allocating_jobs_are_waiting_not_input_bound(name: str, share: str) -> None:
    """No DataLoader and no host-to-device traffic (they sleep or allocate between steps): the
    GPU waits, the host cannot see on what, and no loader remedy is given."""
    got = replay(name)
    assert "input-bound" not in [f.rule for f in got]
    f = one(got, "waiting")
    assert f"the main process (python3, pid 3071) at {share} of a core, no busy worker" in f.message
    assert "host-to-device 0.0 GB/s" in f.message
    assert "sleeps" in f.message and "disk or network I/O" in f.message and "another process" in f.message
    assert "py-spy dump --pid 3071" in f.advice
    for loader_remedy in ("num_workers", "pin_memory", "prefetch", "DataLoader"):
        assert loader_remedy not in f.advice


def test_oom_from_the_jobs_output_with_the_remedies_and_the_last_batch_that_fit() -> None:
    f = one(replay("oom"), "out-of-memory")
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 GiB" in f.message
    # the one GPU sampled, with the peak NVML saw (the step before, whose batch fit)
    assert f.gpu == 0 and f.message.startswith("the job ran out of GPU memory (peak 128.8 of 140.4 GiB): ")
    assert "batch 2097152 ran, 4194304 did not" in f.advice
    for remedy in ("reduce the batch size", "mixed precision", "gradient accumulation", "checkpointing"):
        assert remedy in f.advice
    # memory peaked at 128.8 of 140.4 GiB (92%): below the ceiling rule, so the output names it
    mem = gpu_series_from_json(doc("oom"))[0].column("mem_used_mib")
    assert 0.9 < max(mem) / 143_771.0 < 0.97
    assert "out-of-memory" not in [g.rule for g in diagnose(gpu_series_from_json(doc("oom")), exit_code=1)]


def test_leak_is_a_memory_leak() -> None:
    f = one(replay("leak"), "memory-leak")
    assert "7258 -> 10859 -> 14893 MiB" in f.message and "(+7635 MiB)" in f.message
    assert f.severity == "warn"


def test_cached_is_the_caching_allocator_not_a_leak() -> None:
    got = replay("cached")
    assert "memory-leak" not in [f.rule for f in got]
    f = one(got, "caching-allocator")
    assert "rose 8576 MiB early, then held near 9818 MiB" in f.message and "not a leak" in f.advice


@pytest.mark.parametrize(("name", "share", "power"), [("dense-bf16", "100%", 682), ("oom", "52%", 256)])
def test_clocks_held_down_with_its_reason(name: str, share: str, power: int) -> None:
    f = one(replay(name), "clocks-held-down")
    assert f"clocks held down in {share} of busy samples by sw_power_cap" == f.message
    assert f.advice.startswith(f"power (mean {power} W)") and "cooling" not in f.advice


def test_starved_is_idle_with_memory_held() -> None:
    (f,) = replay("starved")
    assert f.rule == "idle"
    assert f.message == "the job held 258 MiB on GPU 0 but utilization read 0% in all 64 samples"
    assert "num_workers" not in f.advice and "pin_memory" not in f.advice


def test_dense_bf16_is_gpu_bound() -> None:
    got = replay("dense-bf16")
    # its main process spins at a full core in synchronize(): a busy GPU is never called starved
    assert got[0].rule == "gpu-bound" and got[0].message.startswith("GPU utilization mean 99%")
    assert "the GPU is the bottleneck and busy" in format_diagnosis(got)
