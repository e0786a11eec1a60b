"""doctor: checks and verdicts from fake probes, the framework fit rules, and the CLI's exit codes
(including a real run on this GPU-less machine, which must exit 5 with a plain message)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_host import FakeGpu, FakeNvml, FakeRunner, data, gpu_root, ok, smi_runner

import envbuilder
from envbuilder.cli import cli
from envbuilder.doctor.checks import (
    DockerState,
    DoctorInputs,
    DoctorReport,
    exit_error,
    format_report,
    probe_docker,
    run_doctor,
)
from envbuilder.errors import DockerUnavailableError, DoctorFailedError, NoGpuError
from envbuilder.host import CommandResult, HostReport, collectives, probe_host
from envbuilder.host.frameworks import (
    FrameworkBuild,
    cuda_fit,
    frameworks_in,
    kernel_fit,
    probe_framework,
    user_python,
)
from envbuilder.matrix.model import CudaMajor, CudaMatrix, GpuMatrix, Matrix

REPO = Path(__file__).resolve().parents[2]
PY = "/fake/python"
TORCH_CU130 = data("torch-cu130.json")
CU130_ARCHS = tuple(json.loads(TORCH_CU130)["archs"])
NO_DOCKER = DockerState(
    reachable=False, detail="the docker Python SDK is not installed", fix="pip install docker"
)
DOCKER_NVIDIA = DockerState(reachable=True, detail="Docker 26.1.5 (overlay2)", runtimes=("nvidia", "runc"))


def _matrix(floor12: str = "525.60.13") -> Matrix:
    majors = (
        CudaMajor(major=13, mvc_min_driver="580", mvc_max_branch=None),
        CudaMajor(major=12, mvc_min_driver=floor12, mvc_max_branch=580),
    )
    return Matrix(
        cuda=CudaMatrix(releases=(), majors=majors, forward_compat_segments=()),
        gpus=GpuMatrix(archs=(), models=()),
        frameworks=(),
        base_images=(),
    )


def _which(name: str) -> str | None:
    return "ldconfig" if name == "ldconfig" else None


def _inputs(
    tmp_path: Path,
    *,
    gpus: tuple[FakeGpu, ...] = (FakeGpu(),),
    nvml: FakeNvml | None = None,
    run: FakeRunner | None = None,
    torch: str | None = TORCH_CU130,
    docker: DockerState = NO_DOCKER,
    devices: bool = True,
) -> DoctorInputs:
    """A host as the fakes describe it: NVML with `gpus`, ldconfig finding libcuda, and torch
    answering the framework probe with `torch` (None: torch not installed)."""
    runner = run or FakeRunner()
    runner.table[("ldconfig", "-p")] = ok(data("ldconfig-p.txt"))
    if torch is not None:
        runner.table[(PY, "-c", "*")] = ok(torch)
    return DoctorInputs(
        nvml=nvml or FakeNvml(list(gpus)),
        run=runner,
        root=gpu_root(tmp_path) if devices else tmp_path,
        which=_which,
        env={},
        docker=lambda: docker,
        python=PY,
        installed=lambda name: name == "torch" and torch is not None,
        matrix=_matrix,
    )


def _check(report: DoctorReport, name: str) -> tuple[str, str]:
    found = [c for c in report.checks if c.name == name]
    assert len(found) == 1, f"{name} not in {[c.name for c in report.checks]}"
    return found[0].status, found[0].detail


# --------------------------------------------------------------------------- framework fit rules


def _host(driver: str, cuda: str, cc: str = "9.0") -> HostReport:
    report = probe_host(
        nvml=FakeNvml([FakeGpu(cc=(int(cc[0]), int(cc[2:])))], driver=driver), run=FakeRunner()
    )
    return replace(report, cuda_driver=cuda)


def test_cuda_fit_native_and_older_majors_are_ok() -> None:
    assert cuda_fit("13.0", _host("580.159.04", "13.0"), _matrix())[0] == "ok"
    assert cuda_fit("12.8", _host("580.159.04", "13.0"), _matrix())[0] == "ok"


def test_cuda_fit_minor_version_compatibility_warns_with_the_floor() -> None:
    status, detail, fix = cuda_fit("12.8", _host("535.104.05", "12.2"), _matrix())
    assert status == "warn"
    assert "minor-version compatibility (driver >= 525.60.13)" in detail
    assert fix is not None and "CUDA <= 12.2" in fix


def test_cuda_fit_without_matrix_says_the_floor_is_unknown() -> None:
    status, detail, _ = cuda_fit("12.8", _host("535.104.05", "12.2"), None)
    assert (status, "the matrix was not loaded" in detail) == ("warn", True)


def test_cuda_fit_fails_across_majors_and_below_the_floor() -> None:
    status, detail, _ = cuda_fit("13.0", _host("535.104.05", "12.2"), _matrix())
    assert (status, "insufficient" in detail) == ("fail", True)
    status, detail, _ = cuda_fit("12.8", _host("535.104.05", "12.2"), _matrix(floor12="540"))
    assert (status, "floor 540" in detail) == ("fail", True)


def test_kernel_fit_ptx_needs_a_driver_that_can_jit_it() -> None:
    build = FrameworkBuild(name="torch", version="2.7.0", cuda="12.8", archs=("sm_80", "compute_80"))
    assert kernel_fit(build, _host("580.159.04", "13.0", cc="9.0"))[0] == "warn"
    status, detail = kernel_fit(build, _host("535.104.05", "12.2", cc="9.0"))
    assert status == "fail" and "too old to JIT CUDA 12.8 PTX" in detail


def test_probe_framework_reads_the_child_json() -> None:
    build = probe_framework("torch", run=FakeRunner({(PY, "-c", "*"): ok(TORCH_CU130)}), python=PY)
    assert (build.version, build.cuda, build.error) == ("2.11.0+cu130", "13.0", None)
    assert build.archs == CU130_ARCHS


def test_probe_framework_crash_and_timeout_become_errors() -> None:
    crash = CommandResult(returncode=1, stdout="", stderr="Traceback ...\nImportError: libcudart.so.13")
    build = probe_framework("torch", run=FakeRunner({(PY, "-c", "*"): crash}), python=PY)
    assert build.error == "probe exited 1: ImportError: libcudart.so.13"
    hang = CommandResult(returncode=124, stdout="", stderr="timed out after 120 s")
    assert probe_framework("jax", run=FakeRunner({(PY, "-c", "*"): hang}), python=PY).error == (
        "probe exited 124: timed out after 120 s"
    )


# --------------------------------------------------------------------------- verdicts


def test_h200_without_docker_is_a_warn_with_devices_mode(tmp_path: Path) -> None:
    report = run_doctor(_inputs(tmp_path))
    assert report.verdict == "warn"
    assert _check(report, "driver") == ("ok", "580.159.04, CUDA 13.0 (via nvml)")
    assert _check(report, "gpu0")[0] == "ok"
    assert _check(report, "docker")[0] == "warn"
    assert _check(report, "gpu access")[0] == "ok"
    assert _check(report, "torch kernels") == ("ok", "gpu0 (cc 9.0): SASS sm_90")
    assert _check(report, "torch cuda")[0] == "ok"
    assert [m.name for m in report.access_modes if m.available] == ["devices"]
    assert exit_error(report) is None


DOCKER_26_CDI = DockerState(
    reachable=True,
    detail="Docker 26.1.5 (overlay2)",
    runtimes=("runc",),
    cdi_spec_dirs=("/etc/cdi", "/var/run/cdi"),
    server_version="26.1.5",
)
DOCKER_20 = DockerState(
    reachable=True, detail="Docker 20.10.24 (overlay2)", runtimes=("runc",), server_version="20.10.24"
)


def _write_cdi_spec(root: Path) -> None:
    """The spec `envbuilder gpu cdi-spec` writes for the doctor fakes' host, at /etc/cdi/nvidia.yaml."""
    from envbuilder.host.cdi import build_cdi_spec, write_cdi_spec
    from envbuilder.host.driver_files import DriverFiles, GpuNode

    files = DriverFiles(
        driver="580.159.04",
        gpus=(GpuNode(index=0, uuid=FakeGpu().uuid, minor=0, path="/dev/nvidia0"),),
        control_nodes=("/dev/nvidiactl", "/dev/nvidia-uvm"),
        libraries=(),
        programs=(("nvidia-smi", "/usr/local/nvidia/lib64/libcuda.so.1"),),
        ipc=(),
        firmware=(),
    )
    write_cdi_spec(build_cdi_spec(files, machine="x86_64"), root / "etc/cdi/nvidia.yaml")


def test_cdi_check_says_whether_the_daemon_reads_specs_and_which_exist(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, docker=DOCKER_26_CDI)
    assert _check(run_doctor(inputs), "cdi") == (
        "warn",
        "the daemon reads CDI specs from /etc/cdi, /var/run/cdi; no CDI spec defines nvidia.com/gpu",
    )
    _write_cdi_spec(inputs.root)
    report = run_doctor(inputs)
    assert _check(report, "cdi") == (
        "ok",
        "the daemon reads CDI specs from /etc/cdi, /var/run/cdi; /etc/cdi/nvidia.yaml defines "
        f"nvidia.com/gpu=0,{FakeGpu().uuid},all",
    )
    assert [m.name for m in report.access_modes if m.available] == ["cdi", "devices"]


def test_cdi_check_names_an_old_daemon_and_the_fix(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, docker=DOCKER_20)
    _write_cdi_spec(inputs.root)
    report = run_doctor(inputs)
    status, detail = _check(report, "cdi")
    assert status == "warn" and detail.startswith("Docker 20.10.24 reads no CDI specs")
    fix = next(c.fix for c in report.checks if c.name == "cdi")
    assert fix is not None and '{"features": {"cdi": true}}' in fix and "cdi-spec" not in fix
    bare = run_doctor(_inputs(tmp_path / "bare", docker=DOCKER_20))
    fix = next(c.fix for c in bare.checks if c.name == "cdi")
    assert (
        fix is not None
        and "daemon.json" in fix
        and "envbuilder gpu cdi-spec --out /etc/cdi/nvidia.yaml" in fix
    )


def test_cdi_check_warns_about_a_stale_spec(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, docker=DOCKER_26_CDI)
    _write_cdi_spec(inputs.root)
    (inputs.root / "dev/nvidia0").unlink()
    (inputs.root / "dev/nvidia1").touch()  # the devices mode still has a GPU node to offer
    report = run_doctor(inputs)
    status, detail = _check(report, "cdi")
    assert status == "warn" and "/etc/cdi/nvidia.yaml is stale: /dev/nvidia0 missing" in detail
    fix = next(c.fix for c in report.checks if c.name == "cdi")
    assert fix == "regenerate it as root: envbuilder gpu cdi-spec --out /etc/cdi/nvidia.yaml"


def test_cdi_check_is_ok_beside_a_toolkit_runtime(tmp_path: Path) -> None:
    status, detail = _check(run_doctor(_inputs(tmp_path, docker=DOCKER_NVIDIA)), "cdi")
    assert status == "ok" and "no CDI spec defines nvidia.com/gpu" in detail


def test_rtx3090_on_535_with_cu128_torch_warns_about_mvc(tmp_path: Path) -> None:
    inputs = _inputs(
        tmp_path, nvml=FakeNvml(init_error="Driver Not Loaded"), run=smi_runner("rtx3090"),
        torch=data("torch-cu128-nogpu.json"), docker=DOCKER_NVIDIA,
    )  # fmt: skip
    report = run_doctor(inputs)
    assert report.host.source == "nvidia-smi"
    assert _check(report, "torch cuda")[0] == "warn"
    assert _check(report, "torch kernels")[1] == "gpu0 (cc 8.6): SASS sm_86"
    assert _check(report, "nvidia runtime") == ("ok", "nvidia runtime registered")
    assert _check(report, "gpu0 vram") == ("warn", "1 process(es) hold 1402 MiB: pid 2207 python3 (1402 MiB)")
    assert report.verdict == "warn"


def test_gtx1080_with_a_cu130_wheel_fails_with_exit_6(tmp_path: Path) -> None:
    report = run_doctor(
        _inputs(tmp_path, gpus=(FakeGpu(name="NVIDIA GeForce GTX 1080", cc=(6, 1), brand=5),))
    )
    assert _check(report, "torch kernels") == ("fail", "gpu0 (cc 6.1): no kernel image for this GPU")
    error = exit_error(report)
    assert isinstance(error, DoctorFailedError) and error.exit_code == 6
    assert error.message == "1 check(s) failed: torch kernels"


def test_no_gpu_still_runs_the_container_checks_and_exits_5(tmp_path: Path) -> None:
    report = run_doctor(
        _inputs(tmp_path, nvml=FakeNvml(init_error="NVML Shared Library Not Found"), devices=False)
    )
    assert report.verdict == "no-gpu"
    assert _check(report, "driver")[0] == "fail"
    assert {"docker", "nvidia runtime", "toolkit tools", "gpu access"} <= {c.name for c in report.checks}
    assert _check(report, "torch")[0] == "ok"  # reported, not judged: no GPU to judge it on
    error = exit_error(report)
    assert isinstance(error, NoGpuError) and error.exit_code == 5
    assert error.message == "no NVIDIA GPU found on this machine (no NVIDIA driver is loaded)"


def test_driver_without_queryable_gpu_is_no_gpu(tmp_path: Path) -> None:
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(data("proc-version-580.txt"))
    inputs = replace(
        _inputs(tmp_path, devices=False), nvml=FakeNvml(init_error="Driver/library version mismatch")
    )
    report = run_doctor(inputs)
    assert _check(report, "gpus")[0] == "fail"
    error = exit_error(report)
    assert error is not None and "driver 580.159.04, but no GPU" in error.message


def test_gpu_without_any_access_mode_fails(tmp_path: Path) -> None:
    report = run_doctor(_inputs(tmp_path, devices=False))
    status, detail = _check(report, "gpu access")
    assert status == "fail" and detail.startswith("offered: none; not toolkit: Docker is not reachable")
    assert report.verdict == "fail"


def test_cpu_only_torch_and_broken_import_warn(tmp_path: Path) -> None:
    assert _check(run_doctor(_inputs(tmp_path, torch=data("torch-cpu.json"))), "torch")[0] == "warn"
    broken = json.dumps({"error": "OSError: libcudnn.so.9: cannot open shared object file"})
    status, detail = _check(run_doctor(_inputs(tmp_path, torch=broken)), "torch")
    assert (status, detail) == (
        "warn",
        "import failed: OSError: libcudnn.so.9: cannot open shared object file",
    )


def test_matrix_that_does_not_load_is_a_warn(tmp_path: Path) -> None:
    inputs = replace(
        _inputs(tmp_path), matrix=lambda: "cuda.yaml:12 majors[0] field 'mvc_min_driver': missing"
    )
    assert _check(run_doctor(inputs), "matrix")[0] == "warn"


def test_hot_gpu_and_unknown_cc_warn(tmp_path: Path) -> None:
    report = run_doctor(_inputs(tmp_path, gpus=(FakeGpu(temp_c=91),), torch=None))
    assert _check(report, "gpu0")[0] == "warn"
    assert _check(report, "frameworks")[0] == "ok"


def test_json_document_is_stable(tmp_path: Path) -> None:
    doc = json.loads(run_doctor(_inputs(tmp_path)).to_json())
    assert set(doc) == {
        "schema_version",
        "host",
        "checks",
        "access_modes",
        "frameworks",
        "collectives",
        "verdict",
    }
    assert doc["collectives"] is None  # one GPU: nothing to link
    assert doc["schema_version"] == 1
    assert doc["host"]["gpus"][0]["cc"] == "9.0"
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in doc["checks"])
    assert [m["name"] for m in doc["access_modes"]] == ["toolkit", "cdi", "devices"]
    keys = {
        "name",
        "available",
        "detail",
        "devices",
        "lib_dir",
        "driver_libs",
        "programs",
        "cdi_specs",
        "docker_args",
    }
    assert all(set(m) == keys for m in doc["access_modes"])
    assert all(m["docker_args"] == [] for m in doc["access_modes"] if not m["available"])
    assert all(m["docker_args"][:1] == ["--device"] for m in doc["access_modes"] if m["name"] == "devices")


def test_two_h200s_get_interconnect_shm_and_nccl_checks(tmp_path: Path) -> None:
    """The 2-GPU H200 machine as it answered on 2026-11-30 (`nvidia-smi topo -m` recorded there)."""
    runner = FakeRunner({("nvidia-smi", "topo", "-m"): ok(data("smi-topo-h200x2.txt"))})
    inputs = _inputs(tmp_path, gpus=(FakeGpu(), FakeGpu(uuid="GPU-2")), run=runner)
    (inputs.root / "dev" / "shm").mkdir(parents=True)
    env = {"NCCL_NVLS_ENABLE": "0", "NCCL_VERSION": "2.28.3-1", "NVSHMEM_DISABLE_NVLS": "1", "HOME": "/root"}
    report = run_doctor(replace(inputs, env=env))
    assert _check(report, "interconnect") == ("ok", "NVLink between every pair: gpu0-gpu1 NV18")
    assert _check(report, "shm")[0] == "ok"
    status, detail = _check(report, "nccl settings")
    assert status == "ok" and detail.startswith("NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 (certify and run")
    doc = json.loads(report.to_json())
    assert doc["collectives"]["topology"]["links"]["GPU0"]["GPU1"] == "NV18"
    assert "NCCL_VERSION" not in doc["collectives"]["settings"]


def test_collective_checks_warn_on_what_slows_or_hangs_nccl() -> None:
    pcie = {"gpus": ["GPU0", "GPU1"], "links": {"GPU0": {"GPU1": "PHB"}, "GPU1": {"GPU0": "PHB"}}}
    facts = collectives.CollectiveFacts(
        gpu_count=2, topology=pcie, topology_error=None, shm_mib=64, settings={"NCCL_P2P_DISABLE": "1"}
    )
    rows = {name: (status, detail) for name, status, detail, _fix in collectives.checks(facts)}
    assert rows["interconnect"] == (
        "ok",
        "PCIe only (gpu0-gpu1 PHB): all-reduce runs at PCIe speed, far below NVLink",
    )
    assert rows["shm"][0] == "warn" and rows["shm"][1].startswith("/dev/shm is 64 MiB (< 1024)")
    assert rows["nccl settings"] == (
        "warn",
        "NCCL_P2P_DISABLE=1: NCCL avoids that transport (slower collectives)",
    )
    blind = replace(facts, topology=None, topology_error="nvidia-smi: not found", shm_mib=None, settings={})
    rows = {name: (status, detail) for name, status, detail, _fix in collectives.checks(blind)}
    assert rows["interconnect"] == ("warn", "`nvidia-smi topo -m` did not answer (nvidia-smi: not found)")
    assert "shm" not in rows and rows["nccl settings"] == ("ok", "none set: NCCL's defaults")


def test_human_report_is_aligned_with_fixes_under_warnings(tmp_path: Path) -> None:
    report = run_doctor(_inputs(tmp_path))
    lines = format_report(report).splitlines()
    assert lines[0] == "host: 1 GPU(s), driver 580.159.04, CUDA 13.0 (via nvml)"
    detail_at = 6 + max(len(c.name) for c in report.checks) + 2  # "warn  " + "name:" padded + " "
    rows = [line for line in lines if line[:5].rstrip() in ("ok", "warn", "fail", "")]
    rows = [line for line in rows if line.strip() and not line.startswith(("gpu access modes", "verdict"))]
    assert len(rows) > len(report.checks)  # checks plus their fix lines
    assert all(line[detail_at - 1] == " " and line[detail_at] != " " for line in rows)
    docker = next(i for i, line in enumerate(lines) if line.startswith("warn  docker:"))
    assert lines[docker + 1].split()[0] == "fix:"
    assert lines[-2:] == ["gpu access modes: devices", "verdict: warn"]


# --------------------------------------------------------------------------- docker probe


def test_probe_docker_without_the_sdk_is_a_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "docker", None)  # as on the GPU machine: no docker package
    for name in [m for m in sys.modules if m == "envbuilder.engine" or m.startswith("envbuilder.engine.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(envbuilder, "engine", raising=False)
    state = probe_docker()
    assert not state.reachable
    assert state.detail.startswith("the docker Python SDK is not installed")


def test_probe_docker_unreachable_daemon_is_a_state(monkeypatch: pytest.MonkeyPatch) -> None:
    from envbuilder import engine

    def unreachable(_self: engine.DockerEngine) -> engine.DaemonInfo:
        raise DockerUnavailableError("cannot reach the Docker daemon: connection refused", hint="start it")

    monkeypatch.setattr(engine.DockerEngine, "daemon_info", unreachable)
    state = probe_docker()
    assert state == DockerState(
        reachable=False, detail="cannot reach the Docker daemon: connection refused", fix="start it"
    )


def test_probe_docker_reads_runtimes_and_cdi_dirs(monkeypatch: pytest.MonkeyPatch) -> None:
    from envbuilder import engine

    info = engine.DaemonInfo(
        server_version="26.1.5",
        runtimes=("nvidia", "runc"),
        default_runtime="runc",
        cdi_spec_dirs=("/etc/cdi", "/var/run/cdi"),
        storage_driver="overlay2",
    )
    monkeypatch.setattr(engine.DockerEngine, "daemon_info", lambda _self: info)
    state = probe_docker()
    assert (state.reachable, state.runtimes, state.cdi_spec_dirs) == (
        True,
        ("nvidia", "runc"),
        ("/etc/cdi", "/var/run/cdi"),
    )
    assert state.detail == "Docker 26.1.5 (overlay2), runtimes: nvidia, runc"


# --------------------------------------------------------------------------- CLI


def test_cli_ok_host_exits_0(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["doctor"], obj=_inputs(tmp_path, docker=DOCKER_NVIDIA))
    assert result.exit_code == 0, result.output
    assert "ok    gpu0:" in result.stdout
    assert "gpu access modes: toolkit, devices" in result.stdout


def test_cli_failed_check_exits_6(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, gpus=(FakeGpu(cc=(6, 1)),))
    result = CliRunner().invoke(cli, ["doctor"], obj=inputs)
    assert result.exit_code == 6
    assert "envbuilder: error: 1 check(s) failed: torch kernels" in result.stderr
    assert "fail  torch kernels:" in result.stdout


def test_cli_json_without_gpu_exits_5_and_still_prints_the_document(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, nvml=FakeNvml(init_error="NVML Shared Library Not Found"), devices=False)
    result = CliRunner().invoke(cli, ["doctor", "--json"], obj=inputs)
    assert result.exit_code == 5
    assert json.loads(result.stdout)["verdict"] == "no-gpu"
    assert "envbuilder: error: no NVIDIA GPU found on this machine" in result.stderr


def _real_doctor(*args: str) -> subprocess.CompletedProcess[str]:
    if probe_host().gpus:
        pytest.skip("this machine has a GPU: tests/gpu/test_doctor_gpu.py covers it")
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/envbuilder-test.sock"}
    return subprocess.run(
        [sys.executable, "-m", "envbuilder", "doctor", *args],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env, check=False,
    )  # fmt: skip


@pytest.mark.process
def test_real_doctor_on_this_gpu_less_machine_exits_5_plainly() -> None:
    done = _real_doctor()
    assert done.returncode == 5
    assert "fail  driver:" in done.stdout
    assert "envbuilder: error: no NVIDIA GPU found on this machine" in done.stderr
    assert "hint: " in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.process
def test_doctor_without_the_docker_sdk_reports_it_instead_of_crashing() -> None:
    """Found on the 2-GPU H200 machine (2026-11-30), which has no docker SDK: the CLI imported the
    engine, the engine imported docker, and `doctor` died with a traceback before checking anything."""
    code = (
        "import sys; sys.modules['docker'] = None; sys.argv = ['envbuilder', 'doctor', '--json']\n"
        "from envbuilder.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO, check=False
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 5)  # 5: no GPU on this machine
    docker = next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "docker")
    assert docker["status"] == "warn"
    assert docker["detail"].startswith("the docker Python SDK is not installed")
    assert docker["fix"].startswith("pip install docker")


@pytest.mark.process
def test_real_doctor_json_on_this_gpu_less_machine() -> None:
    done = _real_doctor("--json", "--python", sys.executable)  # the venv has torch: the real probe runs
    assert done.returncode == 5
    doc = json.loads(done.stdout)
    assert (doc["verdict"], doc["host"]["source"], doc["host"]["gpus"]) == ("no-gpu", "none", [])
    if importlib.util.find_spec("torch") is not None:  # the real child probe script ran
        (torch,) = [f for f in doc["frameworks"] if f["name"] == "torch"]
        assert torch["error"] is None
        assert torch["version"] == importlib.metadata.version("torch")


# --------------------------------------------------------------------------- whose Python


def _python(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "python3"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return exe


def test_the_users_python_is_the_first_outside_envbuilders_own_environment(tmp_path: Path) -> None:
    """Issue 26 item 9: doctor reported the torch of envbuilder's own venv (a test dependency)
    as the user's; it now asks the first python3 on PATH outside that environment."""
    own = tmp_path / "venv"
    _python(own / "bin")
    user = _python(tmp_path / "usr" / "bin")
    path = os.pathsep.join([str(own / "bin"), str(tmp_path / "nothing"), str(user.parent)])
    assert user_python(path, own_prefix=str(own)) == str(user)
    assert user_python(str(own / "bin"), own_prefix=str(own)) == sys.executable  # no other: its own


def test_doctor_asks_the_chosen_python_which_frameworks_it_has(tmp_path: Path) -> None:
    runner = FakeRunner({(PY, "-c", "*"): ok('["jax"]\n')})
    assert frameworks_in(PY, run=runner) == frozenset({"jax"})
    assert frameworks_in("/nowhere/python3", run=runner) == frozenset()  # 127: none
    inputs = replace(_inputs(tmp_path, run=runner, torch=None), installed=None)
    report = run_doctor(inputs)
    asked = [c for c in runner.calls if c[:2] == (PY, "-c")]
    assert asked[0][3:] == ("torch", "tensorflow", "jax")
    assert [b.name for b in report.frameworks] == ["jax"]
