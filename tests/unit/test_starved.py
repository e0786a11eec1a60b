"""A starved GPU's two causes (docs/run.md): the input pipeline (busy workers or input threads,
host-to-device traffic near the link's capacity) vs the training loop's own CPU work (the main
process at a full core, busy-looking GPU at low power), from what the host observes: each
process's CPU (run/processes.py, read from /proc for real below) and NVML's PCIe counters. The
series are SYNTHETIC, built to trigger one cause each; tests/data/monitor/record_workloads.py
records real ones on the H200 (replayed in test_monitor.py once committed)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from envbuilder.run.diagnosis import GpuSeries, diagnose, starvation_cause
from envbuilder.run.processes import ProcessSampler, ProcessSeries, cpu_view, read_stat

N = 60


def gpu(util: float, power: float = 300.0, rx: float | None = None, mem: float = 30_000.0) -> GpuSeries:
    series: dict[str, list[Any]] = {
        "t": [float(i) for i in range(N)],
        "util_gpu": [util] * N,
        "mem_used_mib": [1_000.0] + [mem] * (N - 1),
        "power_w": [power] * N,
        "reasons": [0] * N,
    }
    if rx is not None:
        series["pcie_rx_gbs"] = [rx] * N
    return GpuSeries(
        index=0,
        name="NVIDIA H200",
        memory_total_mib=143_771.0,
        power_limit_w=700.0,
        pcie_link_gbs=63.0,
        series=series,
    )


def proc(pid: int, ppid: int, share: float, comm: str = "python") -> ProcessSeries:
    """A process using `share` of a core all along, on the GPU series' clock."""
    t = [float(i) for i in range(N)]
    return ProcessSeries(pid=pid, ppid=ppid, comm=comm, t=t, cpu_s=[share * x for x in t])


SHELL = proc(1, 0, 0.0, "sh")  # `sh -c python train.py`: the container's first process


def loader(main: float, workers: int, each: float) -> list[ProcessSeries]:
    return [SHELL, proc(10, 1, main), *(proc(20 + w, 10, each) for w in range(workers))]


def test_busy_dataloader_workers_name_the_input_pipeline() -> None:
    (f, *_) = diagnose([gpu(util=30.0)], processes=loader(main=0.2, workers=4, each=0.97))
    assert f.rule == "input-bound"
    assert (
        "4 worker process(es) (python 20, python 21, python 22, python 23) at 97% of a core each" in f.message
    )
    assert "pin_memory=True" in f.advice and "DALI" in f.advice and "CUDA graphs" not in f.advice


def test_host_to_device_traffic_near_the_link_names_the_input_pipeline() -> None:
    (f, *_) = diagnose([gpu(util=40.0, rx=41.0)], processes=loader(main=0.3, workers=0, each=0.0))
    assert (
        f.rule == "input-bound" and "host-to-device traffic 41.0 GB/s, 65% of the 63 GB/s link" in f.message
    )


def test_input_threads_in_the_main_process_name_the_input_pipeline() -> None:
    (f, *_) = diagnose([gpu(util=35.0)], processes=[SHELL, proc(10, 1, 3.2)])  # tf.data's threads
    assert f.rule == "input-bound" and "on 3.2 cores" in f.message


def test_the_main_process_at_a_full_core_is_the_loop_not_the_pipeline() -> None:
    (f, *_) = diagnose([gpu(util=45.0)], processes=loader(main=0.99, workers=2, each=0.01))
    assert f.rule == "cpu-bound"
    assert "the main process (python, pid 10) at 99% of a core, no busy worker" in f.message
    assert "CUDA graphs" in f.advice and "larger batch" in f.advice and "workers will not help" in f.advice


def test_busy_at_low_power_with_the_main_process_at_a_core_is_tiny_kernels() -> None:
    quiet = [f.rule for f in diagnose([gpu(util=95.0, power=150.0)])]
    assert quiet[0] == "compute-inefficient"  # no CPU view: the old rule
    (f, *_) = diagnose([gpu(util=95.0, power=150.0)], processes=[SHELL, proc(10, 1, 1.0)])
    assert f.rule == "cpu-bound" and "tiny kernels" in f.message and "21% of the 700 W limit" in f.message


def test_neither_side_busy_says_the_job_waits_on_something_the_host_cannot_see() -> None:
    (f, *_) = diagnose([gpu(util=20.0)], processes=loader(main=0.03, workers=2, each=0.0))
    assert f.rule == "waiting" and "no busy input pipeline and no busy loop" in f.message
    assert "the main process (python, pid 10) at 3% of a core, no busy worker" in f.message
    assert "sleeps" in f.message and "disk or network I/O" in f.message
    assert "py-spy dump --pid 10" in f.advice
    assert "num_workers" not in f.advice and "pin_memory" not in f.advice  # no loader remedy


def test_low_host_to_device_traffic_is_no_evidence_of_the_input_pipeline() -> None:
    (f, *_) = diagnose([gpu(util=20.0, rx=0.3)], processes=loader(main=0.1, workers=0, each=0.0))
    assert f.rule == "waiting" and "host-to-device 0.3 GB/s" in f.message


def test_an_idle_gpu_holding_memory_gets_its_cause_too() -> None:
    got = diagnose([gpu(util=0.0)], processes=[SHELL, proc(10, 1, 1.0)])
    assert [f.rule for f in got] == ["idle", "cpu-bound"]


def test_a_busy_gpu_is_not_called_starved_whatever_the_cpu_does() -> None:
    got = diagnose([gpu(util=97.0, power=650.0)], processes=[SHELL, proc(10, 1, 1.0)])
    assert [f.rule for f in got] == ["gpu-bound", "caching-allocator", "ok"]


def test_without_cpu_or_pcie_evidence_there_is_no_cause() -> None:
    assert starvation_cause(gpu(util=30.0), 0, N, ()) is None
    assert starvation_cause(gpu(util=30.0, rx=2.0), 0, N, ()) is None  # traffic alone, and low


def test_the_main_process_is_the_busiest_without_a_busy_ancestor() -> None:
    view = cpu_view(loader(main=0.5, workers=3, each=0.9), 0.0, float(N))
    assert view is not None and view.main_pid == 10 and [p for p, _ in view.workers] == [20, 21, 22]
    assert view.worker_mean == pytest.approx(0.9) and view.idle_children == 0
    assert cpu_view([proc(5, 1, 0.5)], 100.0, 200.0) is None  # no sample in the window


def test_read_stat_parses_a_name_with_spaces_and_parentheses(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    fields = ["S", "7"] + ["0"] * 9 + ["250", "50"] + ["0"] * 30  # utime 250, stime 50 ticks
    (tmp_path / "42" / "stat").write_text(f"42 (pt_data (worker) 0) {' '.join(fields)}\n")
    ppid, comm, cpu = read_stat(42, tmp_path) or (0, "", 0.0)
    assert (ppid, comm) == (7, "pt_data (worker) 0") and cpu > 0
    assert read_stat(43, tmp_path) is None


def test_the_sampler_reads_real_processes_from_proc() -> None:
    """Two real processes: one spinning, one asleep; the sampler tells them apart."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    nap = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t0 = time.monotonic()
        sampler = ProcessSampler(
            pids=lambda: [spin.pid, nap.pid], clock=lambda: time.monotonic() - t0, interval=0.3
        )
        sampler.start()
        time.sleep(2.0)
        sampler.stop()
    finally:
        spin.kill()
        nap.kill()
        spin.wait()
        nap.wait()
    series = {p.pid: p for p in sampler.series()}
    assert set(series) == {spin.pid, nap.pid} and len(series[spin.pid].t) >= 4
    view = cpu_view(sampler.series(), 0.0, 10.0)
    # The spinning one gets what a shared CI machine gives it (2 cores, several jobs): busy, and
    # far busier than the sleeping one, which does not work at all.
    nap_share = series[nap.pid].share(0.0, 10.0)
    assert nap_share is not None and nap_share < 0.05
    assert view is not None and view.main_pid == spin.pid and view.main_share > max(0.1, 4 * nap_share)
    assert sampler.to_json()["processes"][0]["pid"] == min(spin.pid, nap.pid)
