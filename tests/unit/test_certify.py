"""certify: GPU access choice, the run arguments of each mode, thresholds, and certify_image
against a fake engine (no Docker)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from fake_engine import FakeEngine, cpu_stack
from render_cases import TORCH_BUNDLED_CU130

from envbuilder.certify.certificate import verify_certificate
from envbuilder.certify.certify import certify_image
from envbuilder.certify.gpu_access import prepare_target, shm_bytes, training_container
from envbuilder.certify.harness_plan import harness_command, load_thresholds
from envbuilder.engine import ContainerSpec, GpuRequest, ImageInfo, Mount, RunResult, Ulimit, docker_run_argv
from envbuilder.errors import CertificationFailedError, NoGpuError, UsageError
from envbuilder.harness import HARNESS_VERSION
from envbuilder.harness.digest import tree_digest
from envbuilder.host import AccessMode, CommandResult, GpuInfo, GpuProcess, HostReport
from envbuilder.resources import harness_dir
from envbuilder.runtime import choose_access
from envbuilder.runtime.docker import DockerRuntime, gpu_access_modes

DOCKER = DockerRuntime()  # its engine is never asked for in the tests that use it

LDCONFIG = """\
3 libs found in cache `/etc/ld.so.cache'
\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1
\tlibcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1
\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6
"""
GPU_STACK = TORCH_BUNDLED_CU130.to_dict()  # the io.envbuilder.stack label of a real render
CPU_STACK = cpu_stack().to_dict()


def fake_root(tmp: Path, gpus: int = 2) -> Path:
    dev = tmp / "dev"
    dev.mkdir(parents=True)
    for name in [f"nvidia{i}" for i in range(gpus)] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]:
        (dev / name).touch()
    libs = tmp / "usr/local/nvidia/lib64"
    libs.mkdir(parents=True)
    for lib in ("libcuda.so.1", "libnvidia-ml.so.1"):
        (libs / lib).touch()
    return tmp


def ldconfig_runner(argv: Sequence[str], timeout: float) -> CommandResult:
    assert argv[-1] == "-p"
    return CommandResult(returncode=0, stdout=LDCONFIG, stderr="")


def devices_mode(tmp: Path) -> AccessMode:
    modes = gpu_access_modes(
        docker_reachable=True,
        run=ldconfig_runner,
        which=lambda n: "/sbin/ldconfig" if n == "ldconfig" else None,
        env={},
        root=fake_root(tmp),
    )
    mode = modes[2]
    assert mode.name == "devices" and mode.available, mode.detail
    return mode


def mode(name: str, available: bool = True) -> AccessMode:
    return AccessMode(name=name, available=available, detail=f"{name} detail")


IMAGE = ImageInfo(
    id="sha256:" + "ab" * 32,
    tags=("img:1",),
    repo_digests=(),
    labels={
        "io.envbuilder.stack": json.dumps(GPU_STACK),
        "io.envbuilder.lock-hash": "sha256:" + "11" * 32,
        "io.envbuilder.harness": "/opt/envbuilder/harness",
        "io.envbuilder.certify": json.dumps({"level": "default", "thresholds": {"loss_drop_min": 0.3}}),
    },
    env=("PATH=/opt/venv/bin:/usr/bin", "LD_LIBRARY_PATH=/opt/own/lib"),
)


def test_the_preamble_of_certify_and_run(tmp_path: Path) -> None:
    """prepare_target: the image, the mode chosen from what the daemon offers, the host probed once;
    `none` asks for no modes; a missing image is a usage error before anything else."""
    eng = FakeEngine(images={"img:1": IMAGE}, runtimes=("nvidia", "runc"))
    asked: list[tuple[str, ...]] = []
    probed: list[int] = []

    def modes(daemon: Any) -> list[AccessMode]:
        asked.append(daemon.runtimes)
        return [mode("toolkit", "nvidia" in daemon.runtimes), mode("cdi", False)]

    def probe() -> HostReport:
        probed.append(1)
        return a100_host()

    rt = DockerRuntime(engine=eng)
    target = prepare_target(rt, "img:1", "auto", probe=probe, access_modes=modes)
    assert (target.image, target.choice.name, target.host) == (IMAGE, "toolkit", a100_host())
    assert asked == [("nvidia", "runc")] and probed == [1]
    assert prepare_target(rt, "img:1", "none", probe=probe, access_modes=modes).choice.name == "none"
    assert len(asked) == 1  # none: no mode was probed
    with pytest.raises(UsageError, match="image 'nope:1' not found locally") as err:
        prepare_target(rt, "nope:1", "auto", probe=probe, access_modes=modes)
    assert err.value.hint == "build it, or `docker pull` it first" and err.value.exit_code == 2
    assert probed == [1, 1]
    with pytest.raises(NoGpuError):
        prepare_target(rt, "img:1", "cdi", probe=probe, access_modes=modes)


# ------------------------------------------------------------------ run arguments


def run_for(choice_name: str, tmp: Path) -> ContainerSpec:
    modes = {"toolkit": mode("toolkit"), "cdi": mode("cdi"), "devices": devices_mode(tmp)}
    choice = choose_access(DOCKER, choice_name, list(modes.values()) if choice_name != "none" else [])
    return training_container(
        IMAGE, choice, ("python3", "x.py"), env={"A": "1"}, mem_total=64 * 1024**3, host_env={}
    )


def test_host_collective_settings_reach_the_container(tmp_path: Path) -> None:
    """The 2-GPU test machine sets NCCL_NVLS_ENABLE=0 (and friends) and they must stay set inside
    containers; site NCCL tuning must arrive too. NCCL_VERSION is the image's label, not a setting."""
    host = {
        "NCCL_NVLS_ENABLE": "0",
        "NVSHMEM_DISABLE_NVLS": "1",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_VERSION": "2.28.3-1",
        "HOME": "/root",
        "CUDA_VISIBLE_DEVICES": "1",
    }
    choice = choose_access(DOCKER, "devices", [devices_mode(tmp_path)])
    run = training_container(IMAGE, choice, ("python3",), env={"NCCL_SOCKET_IFNAME": "ib0"}, host_env=host)
    assert run.env["NCCL_NVLS_ENABLE"] == "0"
    assert run.env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert run.env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert run.env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1"
    assert run.env["NCCL_SOCKET_IFNAME"] == "ib0"  # an explicit -e wins over the host's
    assert "NCCL_VERSION" not in run.env and "HOME" not in run.env
    assert "CUDA_VISIBLE_DEVICES" not in run.env  # GPU selection is the access mode's business
    assert "NCCL_NVLS_ENABLE=0" in docker_run_argv(run)


def test_toolkit_mode_is_a_gpu_device_request(tmp_path: Path) -> None:
    run = run_for("toolkit", tmp_path)
    assert run.gpus == GpuRequest(count=-1, capabilities=("gpu",)) and not run.devices and not run.cdi_devices
    argv = docker_run_argv(run)
    assert argv[argv.index("--gpus") + 1] == "all"


def test_cdi_mode_is_the_nvidia_com_gpu_device(tmp_path: Path) -> None:
    run = run_for("cdi", tmp_path)
    assert run.cdi_devices == ("nvidia.com/gpu=all",) and run.gpus is None
    assert "nvidia.com/gpu=all" in docker_run_argv(run)


def test_devices_mode_from_a_fake_dev_listing_and_ldconfig(tmp_path: Path) -> None:
    run = run_for("devices", tmp_path)
    assert run.devices == (
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
    )
    lib = "/usr/local/nvidia/lib64"  # the 64-bit ldconfig entry, not the i386 one
    assert run.mounts == (Mount(source=lib, target=lib, read_only=True),)
    # the driver's folder first, the image's own LD_LIBRARY_PATH kept after it
    assert run.env["LD_LIBRARY_PATH"] == f"{lib}:/opt/own/lib"
    assert run.env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert run.env["A"] == "1" and run.gpus is None
    argv = docker_run_argv(run)
    assert f"{lib}:{lib}:ro" in argv and argv.count("--device") == 5


@pytest.mark.parametrize("name", ["toolkit", "cdi", "devices", "none"])
def test_every_mode_gets_shm_ulimits_and_no_network(name: str, tmp_path: Path) -> None:
    run = run_for(name, tmp_path)
    assert run.shm_size == 8 * 1024**3  # min(8 GiB, half of 64 GiB)
    assert Ulimit(name="memlock", soft=-1, hard=-1) in run.ulimits
    assert Ulimit(name="stack", soft=67108864, hard=67108864) in run.ulimits
    assert run.network == "none"
    argv = docker_run_argv(run)
    assert argv[3:5] == ["--network", "none"] and "memlock=-1:-1" in argv
    if name == "none":
        assert not (run.gpus or run.devices or run.cdi_devices or run.mounts)


def test_shm_is_half_the_ram_when_that_is_less_than_8_gib() -> None:
    assert shm_bytes(4 * 1024**3) == 2 * 1024**3
    assert shm_bytes(1024**4) == 8 * 1024**3


def test_harness_command_flags() -> None:
    argv = harness_command("/opt/envbuilder/harness", quick=True, cpu=True, watchdog_s=570, steps=20)
    assert argv[:2] == ("python3", "/opt/envbuilder/harness/run.py")
    assert {"--quick", "--cpu-only", "--out", "--thresholds"} <= set(argv)
    assert argv[argv.index("--watchdog-seconds") + 1] == "570" and argv[-2:] == ("--steps", "20")


def test_thresholds_overrides_apply_to_defaults_and_throughput() -> None:
    doc, warnings = load_thresholds(
        {"loss_drop_min": 0.5, "throughput.tuned_rn50_eager.min_fraction": 0.9, "throughput.nope.x": 1.0,
         "a.b": 2.0}
    )  # fmt: skip
    assert doc["defaults"]["loss_drop_min"] == 0.5
    h200 = next(g for g in doc["gpus"] if g["name"] == "NVIDIA H200")
    assert h200["throughput"]["tuned_rn50_eager"]["min_fraction"] == 0.9
    assert len(warnings) == 2 and doc["overrides"]["loss_drop_min"] == 0.5


# ------------------------------------------------------------------ certify_image


def _step(name: str, status: str = "pass") -> dict[str, Any]:
    reason = "" if status == "pass" else f"{name} {status}"
    return {"kind": "step", "name": name, "status": status, "reason": reason, "seconds": 0.1, "metrics": {}}


# What each verdict's run recorded (the host re-derives the verdict from these).
RUN_STEPS = {
    "certified": [_step("host"), _step("cuda_smoke")],
    "certified-cpu-only": [_step("host"), _step("cpu_check"), _step("cuda_smoke", "skip")],
    "failed": [_step("host"), _step("cuda_smoke", "fail")],
}


def harness_result(verdict: str = "certified", steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A result as the real harness writes it; the fake harness job adds this run's nonce."""
    gpu = verdict != "certified-cpu-only"
    return {
        "kind": "result",
        "schema_version": 1,
        "harness_version": HARNESS_VERSION,
        "harness_sha256": tree_digest(harness_dir()),
        "mode": "full" if gpu else "cpu",
        "gpu_path": gpu,
        "started": "2026-11-30T00:00:00Z",
        "finished": "2026-11-30T00:01:00Z",
        "options": {},
        "steps": [*RUN_STEPS[verdict], *(steps or [])],
        "thresholds": {},
        "gates": [],
        "verdict": verdict,
        "verdict_reason": f"harness says {verdict}",
        "telemetry": {},
        "host": {},
    }


@dataclass
class Harness:
    """The harness inside the container, as a FakeEngine job: writes `result` (or prints it)."""

    result: dict[str, Any] | None = field(default_factory=harness_result)
    exit_code: int = 0
    via_stdout: bool = False
    thresholds_seen: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, spec: ContainerSpec, on_stderr: Callable[[str], None] | None) -> RunResult:
        io = next(m.source for m in spec.mounts if m.target == "/envbuilder-io")
        self.thresholds_seen.append(json.loads((Path(io) / "thresholds.json").read_text()))
        if on_stderr:
            on_stderr("[harness] ---- host")
        stdout = ""
        options = self.result.get("options") if self.result is not None else None
        if isinstance(options, dict) and "--nonce" in spec.command:  # the real harness echoes it
            options.setdefault("nonce", spec.command[spec.command.index("--nonce") + 1])
        if isinstance(options, dict):  # and the framework it certified for (its default: torch)
            cmd = spec.command
            told = cmd[cmd.index("--framework") + 1] if "--framework" in cmd else "torch"
            options.setdefault("framework", told)
        if self.result is not None and self.via_stdout:
            stdout = '{"kind": "step"}\n' + json.dumps(self.result) + "\n"
        elif self.result is not None:
            (Path(io) / "result.json").write_text(json.dumps(self.result))
        return RunResult(exit_code=self.exit_code, stdout=stdout, stderr="[harness] boom")


def engine(image: ImageInfo = IMAGE, **harness: Any) -> FakeEngine:
    """The shared FakeEngine holding `image` as img:1, its container running a fake harness."""
    return FakeEngine(images={"img:1": image, image.id: image}, job=Harness(**harness))


def job(eng: FakeEngine) -> Harness:
    assert isinstance(eng.job, Harness)
    return eng.job


def a100_host() -> HostReport:
    gpu = GpuInfo(index=0, name="NVIDIA A100-SXM4-80GB", uuid="GPU-1", cc="8.0", brand="tesla")
    return HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(gpu,))


def busy_gpu() -> Callable[[], HostReport]:
    """The host's NVML during a run: idle at the baseline, then the container's process on GPU-1."""
    calls: list[int] = []

    def probe() -> HostReport:
        calls.append(1)
        report = a100_host()
        if len(calls) == 1:
            return report
        proc = GpuProcess(pid=4242, used_mib=1500, kind="compute", name="python3")
        return replace(report, gpus=(replace(report.gpus[0], processes=(proc,)),))

    return probe


def certify(eng: FakeEngine, **kw: Any) -> Any:
    lines: list[str] = []
    kw.setdefault("observe", busy_gpu())
    kw.setdefault("access_modes", lambda _d: [mode("toolkit"), mode("cdi", False), mode("devices", False)])
    cert = certify_image("img:1", eng=eng, probe=a100_host, progress=lines.append, mem_total=2**34, **kw)
    return cert, lines


def test_certificate_records_image_host_mode_and_harness() -> None:
    eng = engine()
    cert, lines = certify(eng)
    assert verify_certificate(cert, image_id=IMAGE.id) == []
    assert cert.verdict == "certified"
    assert cert.data["image"]["stack"] == GPU_STACK and cert.image.lock_hash == "sha256:" + "11" * 32
    assert cert.image.stack is not None and cert.image.stack.id == GPU_STACK["id"]
    assert cert.host.gpu_access == "toolkit" and cert.host.gpus[0].uuid == "GPU-1"
    assert (cert.host.fingerprint or "").startswith("sha256:")
    assert cert.data["harness"]["verdict"] == "certified"
    assert "--gpus" in cert.data["run"]["docker_args"]
    assert "[harness] ---- host" in lines and any("GPU access toolkit" in x for x in lines)
    # the image's own threshold override reached the harness
    assert job(eng).thresholds_seen[0]["defaults"]["loss_drop_min"] == 0.3


def test_certify_passes_the_hosts_nvls_switch_into_the_container(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")
    monkeypatch.setenv("NCCL_VERSION", "2.28.3-1")
    eng = engine()
    cert, lines = certify(eng)
    assert eng.runs[0].env["NCCL_NVLS_ENABLE"] == "0" and "NCCL_VERSION" not in eng.runs[0].env
    assert "NCCL_NVLS_ENABLE=0" in cert.data["run"]["docker_args"]
    assert any("collective settings go in: NCCL_NVLS_ENABLE=0" in x for x in lines)


def test_result_read_from_stdout_when_no_file() -> None:
    cert, _ = certify(engine(via_stdout=True))
    assert cert.verdict == "certified"


def test_failed_harness_gives_a_failed_certificate() -> None:
    cert, _ = certify(engine(result=harness_result("failed"), exit_code=1))
    assert cert.verdict == "failed" and cert.data["verdict_reason"] == "harness says failed"
    assert verify_certificate(cert) == []


def test_an_image_that_hides_gpus_from_itself_is_not_certified_on_them() -> None:
    """certify hands in every GPU the probe lists; an image whose ENV sets CUDA_VISIBLE_DEVICES=0
    ran its steps on one of two: failed, with the count (RunFacts.gpus_given from the probe)."""
    two = a100_host()
    two = replace(two, gpus=(*two.gpus, replace(two.gpus[0], index=1, uuid="GPU-2")))

    def run(seen: int) -> Any:
        result = harness_result()
        result["host"] = {"torch": {"device_count": seen}, "cuda_visible_devices": "0"}
        modes = [mode("toolkit"), mode("cdi", False), mode("devices", False)]
        return certify_image(
            "img:1", eng=engine(result=result), probe=lambda: two, observe=busy_gpu(),
            progress=lambda _l: None, mem_total=2**34, access_modes=lambda _d: modes,
        )  # fmt: skip

    hid = run(1)
    assert hid.verdict == "failed"
    assert (
        "the image saw 1 of 2 GPUs handed in (CUDA_VISIBLE_DEVICES=0 in the image)"
        in hid.data["verdict_reason"]
    )
    assert run(2).verdict == "certified"


def test_gpu_stack_that_only_saw_the_cpu_fails() -> None:
    cert, _ = certify(engine(result=harness_result("certified-cpu-only")))
    assert cert.verdict == "failed" and "does not see the GPU" in cert.data["verdict_reason"]


def test_cpu_stack_with_gpu_access_none_is_certified_cpu_only() -> None:
    labels = {**IMAGE.labels, "io.envbuilder.stack": json.dumps(CPU_STACK)}
    image = ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels=labels)
    eng = engine(image, result=harness_result("certified-cpu-only"))
    cert, lines = certify(eng, gpu_access="none")
    assert cert.verdict == "certified-cpu-only" and cert.host.gpu_access == "none"
    assert "--cpu-only" in eng.runs[0].command and eng.runs[0].gpus is None
    assert any("NOT be a GPU certification" in x for x in lines)


def test_nonzero_exit_after_a_passing_result_fails() -> None:
    cert, _ = certify(engine(exit_code=3))
    assert cert.verdict == "failed" and "exited 3" in cert.data["verdict_reason"]


def test_no_result_raises_exit_11_with_the_stderr_tail() -> None:
    with pytest.raises(CertificationFailedError, match=r"(?s)produced no result.*boom") as err:
        certify(engine(result=None, exit_code=137))
    assert err.value.exit_code == 11


def test_quick_and_missing_image() -> None:
    eng = engine()
    cert, _ = certify(eng, quick=True)
    assert "--quick" in eng.runs[0].command and cert.data["run"]["quick"] is True
    with pytest.raises(UsageError, match="not found"):
        certify_image("nope:1", eng=eng, probe=a100_host)


def test_memlock_refused_by_the_runtime_is_dropped_before_the_run_and_said() -> None:
    eng = engine()
    eng.refuse_memlock = True  # the fake's run fails as runc does if memlock is still asked for
    cert, lines = certify(eng)
    assert ("ulimit_probe", ("memlock",)) in eng.calls  # found out before the harness ran
    (spec,) = eng.runs
    assert [u.name for u in spec.ulimits] == ["stack"]
    warning = (
        "the container runtime refuses the memlock ulimit "
        "(error setting rlimit type 8: operation not permitted); running without it"
    )
    assert warning in cert.data["run"]["warnings"]
    assert "memlock=" not in " ".join(cert.data["run"]["docker_args"])
    assert f"certify: warning: {warning}" in lines
    assert cert.verdict == "certified"


def test_unlabelled_image_gets_the_hosts_harness_mounted() -> None:
    image = ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels={})
    eng = engine(image)
    cert, _ = certify(eng)
    assert cert.data["run"]["harness_source"] == "host"
    (mount,) = [m for m in eng.runs[0].mounts if m.target == "/opt/envbuilder-host/harness"]
    assert mount.read_only and (Path(mount.source) / "run.py").is_file()  # the package's own payload


def test_framework_for_an_unlabelled_image_reaches_the_harness() -> None:
    bare = engine(ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels={}))
    certify(bare, framework="jax")
    argv = bare.runs[0].command
    assert argv[argv.index("--framework") + 1] == "jax"
    plain = engine(ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels={}))
    certify(plain)
    assert "--framework" not in plain.runs[0].command  # the harness's own default (torch)


# ------------------------------------------------------------------ the kernel inventory


def _inventory_step(libraries: list[dict[str, Any]]) -> dict[str, Any]:
    metrics = {"libraries": libraries, "libraries_scanned": len(libraries), "seconds": 0.1, "errors": []}
    return {"kind": "step", "name": "kernel_inventory", "status": "pass", "reason": "", "seconds": 0.1,
            "metrics": metrics}  # fmt: skip


def _lib(name: str, sass: list[str], ptx: list[dict[str, Any]], owner: str = "torch") -> dict[str, Any]:
    return {"library": name, "owner": owner, "bytes": 1, "sass": sass, "ptx": ptx, "entries": 1, "notes": []}


def test_a_library_without_a_kernel_for_the_gpu_fails_the_certificate_naming_it() -> None:
    # The framework's own library fails; an nvidia-* wheel's is a warning (08d782e: the GPU steps
    # decide for those, as cuFFT 12's kernels sit outside .nv_fatbin).
    torch_lib, cudnn = "torch/lib/libtorch_cuda.so", "nvidia/cudnn/lib/libcudnn_engines.so.9"
    libs = [_lib(torch_lib, ["sm_90"], []), _lib(cudnn, ["sm_90"], [], "nvidia")]
    cert, _ = certify(engine(result=harness_result(steps=[_inventory_step(libs)])))
    assert cert.verdict == "failed"
    assert cert.data["verdict_reason"].startswith(
        f"kernel inventory: {torch_lib} has no kernel for NVIDIA A100-SXM4-80GB (sm_80)"
    )
    assert any(
        f"{cudnn} has no kernel" in w and "not the framework's own" in w for w in cert.data["run"]["warnings"]
    )


def test_a_cpu_path_certification_given_the_gpus_fails_on_a_library_without_their_kernel() -> None:
    # A CPU stack certified with the GPUs handed in passes the host's verdict as certified-cpu-only;
    # a library of the framework with no kernel for the host's A100 fails it, as every verdict but
    # "failed" (the rule foreign.py's node runs follow too: set X's X01 there).
    labels = {**IMAGE.labels, "io.envbuilder.stack": json.dumps(CPU_STACK)}
    image = ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels=labels)
    torch_lib = "torch/lib/libtorch_cuda.so"
    for sass, verdict in ((["sm_90"], "failed"), (["sm_80"], "certified-cpu-only")):
        steps = [_inventory_step([_lib(torch_lib, sass, [])])]
        cert, _ = certify(engine(image, result=harness_result("certified-cpu-only", steps=steps)))
        assert cert.host.gpu_access == "toolkit"  # the GPUs were handed in
        assert cert.verdict == verdict, cert.data["verdict_reason"]
        named = cert.data["verdict_reason"].startswith(f"kernel inventory: {torch_lib} has no kernel")
        assert named == (verdict == "failed")


def test_inventory_and_matrix_disagreeing_is_a_warning_naming_both() -> None:
    steps = [_inventory_step([_lib("torch/lib/libtorch_cuda.so", ["sm_80", "sm_90"], [])])]
    stack = {**GPU_STACK, "framework": {"name": "torch", "version": "2.11.0", "variant": "cu130"},
             "archs": {"sass": ["8.0", "9.0"], "ptx": ["9.0"]}}  # fmt: skip
    image = replace(IMAGE, labels={**IMAGE.labels, "io.envbuilder.stack": json.dumps(stack)})
    cert, lines = certify(engine(image, result=harness_result(steps=steps)))
    assert cert.verdict == "certified"
    said = [w for w in cert.data["run"]["warnings"] if w.startswith("the matrix (matrix row torch")]
    assert said == [
        "the matrix (matrix row torch 2.11.0+cu130) says SASS 8.0, 9.0 and PTX 9.0; the image's torch "
        "libraries (torch/lib/libtorch_cuda.so) carry SASS 8.0, 9.0 and PTX none"
    ]
    assert any("certify: warning: the matrix" in x for x in lines)


@dataclass
class HarnessAndCollector(Harness):
    """The harness, and the installed-set collector (harness/installed.py) for `installed`."""

    installed: tuple[str, ...] = ("filelock==4.3.1", "torch==2.13.0+cpu")

    def __call__(self, spec: ContainerSpec, on_stderr: Callable[[str], None] | None) -> RunResult:
        if spec.command[-1].endswith("/installed.py"):
            dists = [
                {"name": p.split("==")[0], "version": p.split("==")[1], "record_sha256": "f" * 64}
                for p in self.installed
            ]
            return RunResult(exit_code=0, stdout=json.dumps({"distributions": dists}) + "\n", stderr="")
        return super().__call__(spec, on_stderr)


def test_package_drift_from_the_lock_fails_certification_naming_the_package() -> None:
    """The field's report: a "torch 2.8 cu128" image that held 2.4.1+cu124. With --lock, certify
    reads the installed set in the image and a locked package at another version fails it."""
    from fake_engine import cpu_package_lock

    from envbuilder.image.lock import LockFile

    lock = LockFile(resolution={}, stack=cpu_stack(), spec=None, packages=(cpu_package_lock(),))
    good = FakeEngine(images={"img:1": IMAGE, IMAGE.id: IMAGE}, job=HarnessAndCollector())
    cert, lines = certify(good, lock=lock)
    assert cert.verdict == "certified" and cert.data["run"]["packages"]["drift"] == []
    assert [d["name"] for d in cert.data["run"]["packages"]["installed"]] == ["filelock", "torch"]
    assert any("0 drift" in line for line in lines)
    bad = FakeEngine(
        images={"img:1": IMAGE, IMAGE.id: IMAGE},
        job=HarnessAndCollector(installed=("filelock==4.3.1", "torch==2.4.1+cu124")),
    )
    cert, _ = certify(bad, lock=lock)
    assert cert.verdict == "failed"
    assert "torch: locked 2.13.0+cpu, image has 2.4.1+cu124" in cert.data["verdict_reason"]
    assert verify_certificate(cert) == []
    cert, _ = certify(engine())  # without a lock: not checked, no extra container
    assert "packages" not in cert.data["run"]
