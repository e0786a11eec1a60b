"""How a job died, from its output and NVML (run/joblog.py, diagnosis._death_findings). The output
lines are the frameworks' own message formats; the series are SYNTHETIC until the H200 recordings
(tests/data/monitor/record_workloads.py oom) are committed."""

from __future__ import annotations

import pytest

from envbuilder.run.diagnosis import GpuSeries, diagnose
from envbuilder.run.joblog import read_job_output

TOTAL = 143_771.0  # MiB: the H200's, as NVML reports it
TORCH_OOM = """\
batch 4096 ok, 2.1 s/step
batch 8192 ok, 4.0 s/step
trying batch 16384
Traceback (most recent call last):
  File "/workspace/grow.py", line 14, in <module>
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 24.00 GiB. GPU 0 has a total \
capacity of 139.81 GiB of which 180.00 MiB is free.
"""
TF_OOM = (
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
    "shape[512,64,112,112] and type float on /job:localhost/replica:0/task:0/device:GPU:0"
)
JAX_OOM = (
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
    "25769803776 bytes."
)


@pytest.mark.parametrize(
    ("text", "framework"),
    [
        (TORCH_OOM, "torch"),
        (TF_OOM, "tensorflow"),
        (JAX_OOM, "jax"),
        ("CUDNN_STATUS_ALLOC_FAILED", "cudnn/cublas"),
    ],
)
def test_each_frameworks_oom_message_is_read(text: str, framework: str) -> None:
    got = read_job_output(text)
    assert got.oom_framework == framework and got.oom_line


def test_the_batch_that_last_fit_and_the_one_that_did_not() -> None:
    got = read_job_output(TORCH_OOM)
    assert got.oom_batch == 16384 and got.last_fit_batch == 8192
    assert read_job_output("step 10 loss 2.31\nstep 11 loss nan\n").nonfinite_line == "step 11 loss nan"
    nccl = read_job_output("[rank1]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)")
    assert nccl.nccl_timeout_line and nccl.oom_line is None


def _oom_job(samples: int = 5) -> GpuSeries:
    """The issue's job: memory grows to 139.6 GiB within a few samples, then it dies."""
    mem = [1_000.0 + (139.6 * 1024 - 1_000.0) * i / (samples - 1) for i in range(samples)]
    series: dict[str, list[float]] = {"t": [float(i) for i in range(samples)], "mem_used_mib": mem}
    series["util_gpu"] = [0.0, 90.0, 95.0, 97.0, 40.0][:samples]
    return GpuSeries(index=0, name="NVIDIA H200", memory_total_mib=TOTAL, power_limit_w=700.0, series=series)


def test_the_oom_job_is_named_with_the_remedies_not_only_too_short() -> None:
    findings = diagnose([_oom_job()], output=read_job_output(TORCH_OOM), exit_code=1)
    rules = [f.rule for f in findings]
    assert rules == ["out-of-memory", "too-short"]
    oom = findings[0]
    assert (
        oom.severity == "warn"
        and "139.6 of 140.4 GiB" in oom.message
        and "torch.OutOfMemoryError" in oom.message
    )
    remedies = ("reduce the batch size (batch 8192 ran, 16384 did not)", "mixed precision", "checkpointing")
    assert all(r in oom.advice for r in (*remedies, "gradient accumulation")), oom.advice


def test_memory_at_the_ceiling_and_a_failed_exit_is_oom_without_output() -> None:
    findings = diagnose([_oom_job()], exit_code=1)
    assert (
        findings[0].rule == "out-of-memory"
        and "exit code 1 with GPU memory at the ceiling" in findings[0].message
    )
    assert [f.rule for f in diagnose([_oom_job()], exit_code=0)] == ["too-short"]  # full but fine


def test_output_findings_are_about_the_job_once_whatever_the_gpu_count() -> None:
    """Two GPUs, one full: the OOM line is named once, on the full GPU; a NaN line once, for the job."""
    idle = GpuSeries(index=1, name="NVIDIA H200", memory_total_mib=TOTAL, series={"util_gpu": [0.0] * 5})
    output = read_job_output(TORCH_OOM + "step 3 loss nan\n")
    findings = diagnose([_oom_job(), idle], output=output, exit_code=1)
    named = [(f.rule, f.gpu) for f in findings if f.rule in ("out-of-memory", "non-finite-loss")]
    assert named == [("out-of-memory", 0), ("non-finite-loss", None)]


def test_the_kernels_oom_killer_is_host_memory_not_gpu_memory() -> None:
    (f,) = diagnose([], exit_code=137, oom_killed=True)
    assert f.rule == "host-out-of-memory" and f.gpu is None and "not GPU memory" in f.message
    assert "DataLoader workers" in f.advice
    assert diagnose([], exit_code=1) == ()  # nothing seen, nothing said
