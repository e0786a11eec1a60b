"""`envbuilder run` end to end against a fake engine: refusal, --force and its record, the
container's arguments, the memlock fallback, exit codes, Ctrl-C, --monitor, and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cert_factory import H200, IMAGE_ID, cert
from click.testing import CliRunner
from fake_engine import FakeEngine

from envbuilder.certify.certificate import Certificate
from envbuilder.cli import cli
from envbuilder.engine import ImageInfo, Mount, Ulimit
from envbuilder.errors import CertificateRefusedError, UsageError
from envbuilder.host import AccessMode, GpuInfo, HostReport
from envbuilder.run.diagnosis import GpuSeries
from envbuilder.run.launch import OUTPUT_LINES, RunOptions, RunOutcome, parse_size, parse_volume, run_image
from envbuilder.run.monitor import Monitor
from envbuilder.run.xid import XidEvent

DEVICES = AccessMode(
    name="devices",
    available=True,
    detail="4 device nodes",
    devices=("/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"),
    lib_dir="/usr/local/nvidia/lib64",
)


def engine(**kw: Any) -> FakeEngine:
    """The shared FakeEngine holding the image as team/train:1."""
    image = ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=())
    return FakeEngine(images={"team/train:1": image, IMAGE_ID: image}, **kw)


def report(gpus: tuple[GpuInfo, ...] = (H200,)) -> HostReport:
    return HostReport(
        source="nvml", driver="580.159.04" if gpus else None, cuda_driver="13.0" if gpus else None, gpus=gpus
    )


def go(tmp_path: Path, eng: FakeEngine, certificate: Certificate | None, **opts: Any) -> Any:
    lines: list[str] = []
    options = RunOptions(image="team/train:1", command=("python", "train.py"), **opts)
    outcome = run_image(
        options,
        find_certificate=lambda info: (
            [certificate] if certificate is not None and info.id == IMAGE_ID else []
        ),
        eng=eng,
        probe=lambda: report(),
        access_modes=lambda daemon: (DEVICES,),
        say=lines.append,
        log_dir=tmp_path,
        monitor_factory=FakeMonitor,
    )
    return outcome, lines


def log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]


def test_a_covered_run_starts_the_container_like_certify_does(tmp_path: Path) -> None:
    eng = engine(exit_code=0)
    outcome, lines = go(
        tmp_path, eng, cert(), env=("EPOCHS=3",), workdir="/work", volumes=(f"{tmp_path}:/data:ro",)
    )
    assert outcome.exit_code == 0 and outcome.refusals == ()
    (spec,) = eng.runs
    assert ("run_attached", ("python", "train.py")) in eng.calls
    assert "/dev/nvidia0" in spec.devices and "/dev/nvidia-uvm" in spec.devices
    assert Ulimit(name="memlock", soft=-1, hard=-1) in spec.ulimits
    assert Ulimit(name="stack", soft=67108864, hard=67108864) in spec.ulimits
    assert spec.shm_size and spec.workdir == "/work"
    assert Mount(source=str(tmp_path), target="/data", read_only=True) in spec.mounts
    assert spec.env["EPOCHS"] == "3"
    assert spec.name == f"envbuilder-run-{outcome.run_id.lower()}"
    assert spec.labels["io.envbuilder.run"] == "1"
    # the record a janitor writes if this client is SIGKILLed: the log line's own start
    assert spec.labels["io.envbuilder.log"] == str(tmp_path / "runs.jsonl")
    carried = json.loads(spec.labels["io.envbuilder.record"])
    assert {k: v for k, v in log(tmp_path)[0].items() if k in carried} == carried
    assert (spec.image, spec.command) == (IMAGE_ID, ("python", "train.py"))
    assert any("covers this run" in line for line in lines)
    assert log(tmp_path)[0]["outcome"] == "exited" and log(tmp_path)[0]["forced"] is False


def test_the_exit_code_is_passed_through(tmp_path: Path) -> None:
    outcome, _ = go(tmp_path, engine(exit_code=3), cert())
    assert outcome.exit_code == 3
    assert log(tmp_path)[0]["exit_code"] == 3


def test_a_refusal_raises_and_is_logged_without_running(tmp_path: Path) -> None:
    eng = engine()
    with pytest.raises(CertificateRefusedError) as exc:
        go(tmp_path, eng, None)
    assert f"no certificate for image {IMAGE_ID}" in exc.value.message
    assert exc.value.exit_code == 12
    assert eng.runs == []
    assert log(tmp_path)[0]["outcome"] == "refused"


def test_force_runs_anyway_and_records_it(tmp_path: Path) -> None:
    eng = engine(exit_code=0)
    outcome, lines = go(tmp_path, eng, None, force=True)
    assert outcome.forced and len(eng.runs) == 1
    assert any("--force: running although no certificate" in line for line in lines)
    entry = log(tmp_path)[0]
    assert entry["forced"] is True and entry["refusals"][0]["reason"] == "no-certificate"


def test_force_on_a_covered_run_overrides_nothing_and_is_not_recorded_as_forced(tmp_path: Path) -> None:
    outcome, lines = go(tmp_path, engine(exit_code=0), cert(), force=True)
    assert not outcome.forced and outcome.refusals == ()
    assert log(tmp_path)[0]["forced"] is False and log(tmp_path)[0]["refusals"] == []
    assert not any("--force" in line for line in lines)


def test_a_refused_memlock_ulimit_is_dropped_and_said(tmp_path: Path) -> None:
    eng = engine(refuse_memlock=True)
    outcome, lines = go(tmp_path, eng, cert())
    assert ("ulimit_probe", ("memlock",)) in eng.calls
    assert [u.name for u in eng.runs[0].ulimits] == ["stack"]
    assert outcome.warnings[0].startswith("the container runtime refuses the memlock ulimit (error setting")
    assert log(tmp_path)[0]["warnings"] == list(outcome.warnings)
    assert any("refuses the memlock ulimit" in line for line in lines)


def test_ipc_host_replaces_the_shm_size(tmp_path: Path) -> None:
    eng = engine()
    go(tmp_path, eng, cert(), ipc="host")
    assert eng.runs[0].ipc == "host" and eng.runs[0].shm_size is None
    eng2 = engine()
    go(tmp_path, eng2, cert(), shm_size="2g")
    assert eng2.runs[0].shm_size == 2 * 1024**3


def test_ctrl_c_is_logged_and_re_raised(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        go(tmp_path, engine(interrupt_run=True), cert())
    assert log(tmp_path)[0]["outcome"] == "interrupted"


class FakeMonitor(Monitor):
    """A GPU that reads 20% busy; the job's processes are sampled for real (from /proc)."""

    def __init__(self, *, gpus: bool = True) -> None:
        super().__init__(interval=0.1, gpus=False)  # no NVML here: the real monitor minus GPUs
        self.gpus = gpus

    @property
    def available(self) -> bool:
        return self.gpus

    def stop(self) -> list[GpuSeries]:
        super().stop()
        if not self.gpus:
            return []
        n = 30
        return [
            GpuSeries(
                index=0,
                name="NVIDIA H200",
                power_limit_w=700.0,
                series={"t": list(range(n)), "util_gpu": [20.0] * n, "power_w": [100.0] * n},
            )
        ]


def monitored(tmp_path: Path, factory: type[FakeMonitor]) -> tuple[RunOutcome, list[str]]:
    """A --monitor run of the fake GPU `factory` gives; its outcome and what run printed."""
    lines: list[str] = []
    outcome = run_image(
        RunOptions(
            image="team/train:1", command=("python", "x.py"), monitor=True, monitor_dir=tmp_path / "m"
        ),
        find_certificate=lambda _info: [cert()],
        eng=engine(),
        probe=lambda: report(),
        access_modes=lambda d: (DEVICES,),
        say=lines.append,
        log_dir=tmp_path,
        monitor_factory=factory,
    )
    return outcome, lines


def test_monitor_writes_telemetry_and_diagnosis_beside_it(tmp_path: Path) -> None:
    outcome, lines = monitored(tmp_path, FakeMonitor)
    telemetry, diagnosis = outcome.monitor_files
    assert telemetry == tmp_path / "m" / "telemetry.json" and diagnosis.parent == telemetry.parent
    assert json.loads(telemetry.read_text())["diagnosis"][0]["rule"] == "waiting"
    assert any("GPU 0 waiting" in line for line in lines)


class XidMonitor(FakeMonitor):
    """The fake GPU above, on which NVML reported Xid 79 and could not read power."""

    def xids(self) -> tuple[XidEvent, ...]:
        return (XidEvent(t=3.5, gpu=0, xid=79),)

    def unsupported(self) -> dict[str, str]:
        return {"gpu0.power_w": "Not Supported"}


def test_monitor_diagnoses_and_writes_the_xids_nvml_reported(tmp_path: Path) -> None:
    outcome, lines = monitored(tmp_path, XidMonitor)
    doc = json.loads(outcome.monitor_files[0].read_text())
    assert doc["xid_events"] == [{"t": 3.5, "gpu": 0, "xid": 79}]
    assert doc["unsupported"] == {"gpu0.power_w": "Not Supported"}
    assert [f["rule"] for f in doc["diagnosis"]][:1] == ["xid"]
    assert any("GPU 0 xid: NVML reported Xid 79 at 3.5 s: GPU has fallen off the bus" in ln for ln in lines)


TORCH_OOM = [
    "batch 8192 ok, 2.1 GiB allocated",
    "trying batch 16384",
    "Traceback (most recent call last):",
    '  File "/work/grow.py", line 9, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 24.00 GiB. GPU 0 has a total "
    "capacity of 139.81 GiB of which 180.00 MiB is free.",
]


def test_monitor_without_gpu_still_reads_the_jobs_output(tmp_path: Path) -> None:
    """No GPU telemetry (no NVML, or no GPU for the container): the job's output still names how
    it died; the tail read back from the engine is kept beside the diagnosis."""
    cpu_cert = cert("certified-cpu-only", gpus=(), cuda=None, min_driver=None)
    out = "".join(f"line {i}\n" for i in range(3000)) + "\n".join(TORCH_OOM) + "\n"
    outcome, lines = go(
        tmp_path,
        engine(exit_code=1, output=out),
        cpu_cert,
        monitor=True,
        gpu_access="none",
        monitor_dir=tmp_path / "m",
    )
    assert outcome.exit_code == 1 and any(
        "no GPU telemetry (the container gets no GPU)" in ln for ln in lines
    )
    telemetry, diagnosis, tail = outcome.monitor_files
    kept = tail.read_text().splitlines()
    assert len(kept) == OUTPUT_LINES and kept[-1] == TORCH_OOM[-1]  # the end, where it died
    doc = json.loads(telemetry.read_text())
    assert doc["gpus"] == [] and [f["rule"] for f in doc["diagnosis"]] == ["out-of-memory"]
    text = diagnosis.read_text()
    assert text.startswith("[warn] job out-of-memory: the job ran out of GPU memory: the job's output says: ")
    assert "reduce the batch size (batch 8192 ran, 16384 did not)" in text and "gradient accumulation" in text
    assert any("out-of-memory" in ln for ln in lines)


def test_monitor_samples_the_containers_processes(tmp_path: Path) -> None:
    """The engine names the container's host PIDs; the monitor reads their CPU from /proc (a real
    spinning process stands in for the job's main process) into telemetry.json."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        eng = engine(pids=(spin.pid,), job_seconds=1.5)
        outcome, _ = go(tmp_path, eng, cert(), monitor=True, monitor_dir=tmp_path / "m")
    finally:
        spin.kill()
        spin.wait()
    doc = json.loads(outcome.monitor_files[0].read_text())
    (p,) = doc["processes"]["processes"]
    assert p["pid"] == spin.pid and len(p["t"]) >= 3 and p["cpu_s"][-1] > p["cpu_s"][0]
    assert ("container_pids", f"envbuilder-run-{outcome.run_id.lower()}") in eng.calls


def test_bad_options_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        parse_volume("/no/such/dir:/data")
    with pytest.raises(UsageError, match="malformed -v"):
        parse_volume("/tmp:/data:rx")
    with pytest.raises(UsageError, match="malformed size"):
        parse_size("lots")
    assert parse_size("512m") == 512 * 1024**2 and parse_size("65536") == 65536
    for item in ("1BAD=x", "BAD\n=x", "NOEQUALS"):  # a key's final line break is no letter either
        with pytest.raises(UsageError, match="malformed -e"):
            go(tmp_path, engine(), cert(), env=(item,))
    with pytest.raises(UsageError, match="not found locally"):
        run_image(
            RunOptions(image="nope", command=("x",)),
            find_certificate=lambda _i: [],
            eng=engine(),
            say=lambda _l: None,
            log_dir=tmp_path,
        )


def test_cli_refusal_exit_code_and_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import envbuilder.certify.gpu_access as gpu_access
    import envbuilder.cli.run_cmd as run_cmd
    import envbuilder.engine
    import envbuilder.runtime.docker

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(envbuilder.engine, "DockerEngine", engine)
    monkeypatch.setattr(gpu_access, "probe_host", lambda: report(gpus=()))
    monkeypatch.setattr(envbuilder.runtime.docker, "gpu_access_modes", lambda **_kw: ())
    monkeypatch.setattr(run_cmd, "find_certificates", lambda *_a: lambda _info: [])
    res = CliRunner().invoke(cli, ["run", "team/train:1", "--", "python", "-c", "print(1)"])
    assert res.exit_code == 12, res.output
    assert f"envbuilder: error: refusing to run: no certificate for image {IMAGE_ID}" in res.output
    assert "hint: re-certify the image on this host: envbuilder certify team/train:1" in res.output


def test_cli_passes_the_exit_code_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import envbuilder.certify.gpu_access as gpu_access
    import envbuilder.cli.run_cmd as run_cmd
    import envbuilder.engine

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(envbuilder.engine, "DockerEngine", lambda: engine(exit_code=3))
    monkeypatch.setattr(gpu_access, "probe_host", lambda: report(gpus=()))
    cpu_cert = cert("certified-cpu-only", gpus=(), cuda=None, min_driver=None)
    monkeypatch.setattr(run_cmd, "find_certificates", lambda *_a: lambda _info: [cpu_cert])
    res = CliRunner().invoke(cli, ["run", "--gpu-access", "none", "team/train:1", "--", "python", "-c", "x"])
    assert res.exit_code == 3, res.output
    assert (tmp_path / "runs.jsonl").is_file()


def test_a_tampered_row_in_the_store_is_a_tampered_refusal(tmp_path: Path) -> None:
    def tampered(_info: ImageInfo) -> list[Certificate]:
        raise CertificateRefusedError(
            "stored certificate 0123abcd failed verification: content hash mismatch"
        )

    with pytest.raises(CertificateRefusedError, match=r"content hash mismatch \[tampered\]"):
        run_image(
            RunOptions(image="team/train:1", command=("x",)),
            find_certificate=tampered,
            eng=engine(),
            probe=lambda: report(),
            access_modes=lambda d: (DEVICES,),
            say=lambda _l: None,
            log_dir=tmp_path,
        )
    assert log(tmp_path)[0]["refusals"][0]["reason"] == "tampered"


def test_local_certificates_newest_first_for_the_exact_image(tmp_path: Path) -> None:
    from envbuilder.certify.store import CertStore
    from envbuilder.run.certificates import certificate_finder

    store = CertStore(tmp_path / "c.sqlite")
    old, new = cert(issued_at="2026-01-01T00:00:00Z"), cert(issued_at="2026-06-01T00:00:00Z")
    store.add(old)
    store.add(new)

    def no_policy() -> Any:
        raise AssertionError("a local certificate needs no trust policy")

    find = certificate_finder("team/train:1", store=store, policy=no_policy)
    got = find(ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=()))
    assert [c.issued_at for c in got] == ["2026-06-01T00:00:00Z", "2026-01-01T00:00:00Z"]
    assert find(ImageInfo(id="sha256:" + "ee" * 32, tags=(), repo_digests=())) == []
