"""host: the NVML -> nvidia-smi -> /proc probe and the GPU access modes, against recorded outputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_host import (
    MIB,
    SMI_QUERY_ARGV,
    FakeGpu,
    FakeNvml,
    FakeRunner,
    broken_smi_runner,
    data,
    driver_tree,
    gpu_root,
    ok,
    smi_runner,
)

from envbuilder.host import (
    AccessMode,
    HostReport,
    Which,
    cuda_version_from_int,
    find_libcuda,
    probe_host,
    probe_nvidia_smi,
    probe_nvml,
    probe_proc,
    run_command,
)
from envbuilder.runtime.docker import CONTAINER_LIB_DIR, DockerRuntime, gpu_access_modes

NO_NVML = FakeNvml(init_error="NVML Shared Library Not Found")
# devices mode sets these as the Container Toolkit would (doctor shows them with the mode's flags)
NVIDIA_ENV = ("-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "-e", "NVIDIA_VISIBLE_DEVICES=all")


def mode_docker_args(mode: AccessMode) -> list[str]:
    """doctor --json's access_modes[].docker_args: the Docker runtime's flags of the mode."""
    return list(DockerRuntime().mode_flags(mode))


def _no_which(_name: str) -> str | None:
    return None


def _proc_root(tmp_path: Path, sample: str) -> Path:
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(data(sample))
    return tmp_path


# --------------------------------------------------------------------------- NVML


def test_nvml_h200_reads_every_field(tmp_path: Path) -> None:
    nvml = FakeNvml([FakeGpu()])
    report = probe_host(nvml=nvml, run=FakeRunner(), root=tmp_path)
    assert (report.source, report.driver, report.cuda_driver) == ("nvml", "580.159.04", "13.0")
    (gpu,) = report.gpus
    assert (gpu.name, gpu.cc, gpu.brand) == ("NVIDIA H200", "9.0", "nvidia")
    assert gpu.uuid == "GPU-3f1c9e0a-7b2d-4c5e-9a81-0d6f2b4e8c17"
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.temperature_c) == (0, 143771, 31)
    assert (gpu.power_draw_w, gpu.power_limit_w) == (76.54, 700.0)
    assert gpu.processes == ()
    assert report.attempts == ()
    assert nvml.shutdowns == 1


def test_nvml_processes_compute_and_graphics_with_names(tmp_path: Path) -> None:
    (tmp_path / "proc/4242").mkdir(parents=True)
    (tmp_path / "proc/4242/comm").write_text("python3\n")
    gpu = FakeGpu(compute=[(4242, 8000 * MIB)], graphics=[(1312, None)])
    report = probe_nvml(FakeNvml([gpu]), root=tmp_path)
    assert isinstance(report, HostReport)
    procs = {(p.pid, p.kind, p.used_mib, p.name) for p in report.gpus[0].processes or ()}
    assert procs == {(4242, "compute", 8000, "python3"), (1312, "graphics", None, None)}


def test_nvml_unsupported_field_is_none_and_bytes_are_decoded(tmp_path: Path) -> None:
    nvml = FakeNvml([FakeGpu(power_mw=None, brand=5)], driver=b"535.104.05", cuda=12020)
    report = probe_nvml(nvml, root=tmp_path)
    assert isinstance(report, HostReport)
    assert (report.driver, report.cuda_driver) == ("535.104.05", "12.2")
    assert report.gpus[0].power_draw_w is None
    assert report.gpus[0].power_limit_w == 700.0
    assert report.gpus[0].brand == "geforce"


@pytest.mark.parametrize(
    ("brand", "name"), [(2, "tesla"), (12, "quadrortx"), (13, "nvidiartx"), (6, "titan"), (99, "unknown")]
)
def test_nvml_brand_maps_to_toolkit_names(tmp_path: Path, brand: int, name: str) -> None:
    report = probe_nvml(FakeNvml([FakeGpu(brand=brand)]), root=tmp_path)
    assert isinstance(report, HostReport)
    assert report.gpus[0].brand == name


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (13000, "13.0"),
        (12020, "12.2"),
        (11080, "11.8"),
        (12090, "12.9"),
        (12100, "12.10"),  # NVML's 1000 * major + 10 * minor: a two-digit minor (set X's X04)
        (13110, "13.11"),
    ],
)
def test_cuda_version_from_int(value: int, text: str) -> None:
    assert cuda_version_from_int(value) == text


def test_to_host_gives_the_resolver_view(tmp_path: Path) -> None:
    host = probe_host(
        nvml=FakeNvml([FakeGpu(), FakeGpu(name="NVIDIA H100 80GB HBM3")]), root=tmp_path
    ).to_host()
    assert host.driver == "580.159.04"
    assert host.source == "nvml"
    assert [(g.name, g.cc, g.brand, g.memory_total_mib) for g in host.gpus] == [
        ("NVIDIA H200", "9.0", "nvidia", 143771),
        ("NVIDIA H100 80GB HBM3", "9.0", "nvidia", 143771),
    ]


# --------------------------------------------------------------------------- nvidia-smi


def test_falls_back_to_nvidia_smi_when_nvml_is_missing(tmp_path: Path) -> None:
    report = probe_host(nvml=NO_NVML, run=smi_runner("h200"), root=tmp_path)
    assert (report.source, report.driver, report.cuda_driver) == ("nvidia-smi", "580.159.04", "13.0")
    assert report.gpus[0].cc == "9.0"
    assert report.gpus[0].power_draw_w == 76.54
    assert report.attempts == ("NVML: NVML Shared Library Not Found",)


def test_nvidia_smi_rtx3090_on_535_with_a_process() -> None:
    report = probe_nvidia_smi(smi_runner("rtx3090"))
    assert isinstance(report, HostReport)
    assert (report.driver, report.cuda_driver) == ("535.104.05", "12.2")
    (gpu,) = report.gpus
    assert (gpu.name, gpu.cc, gpu.brand) == ("NVIDIA GeForce RTX 3090", "8.6", None)
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.temperature_c) == (1843, 24576, 48)
    assert [(p.pid, p.name, p.used_mib) for p in gpu.processes or ()] == [(2207, "python3", 1402)]


def test_nvidia_smi_two_gpus_keeps_processes_on_their_gpu() -> None:
    report = probe_nvidia_smi(smi_runner("2gpu"))
    assert isinstance(report, HostReport)
    assert [g.index for g in report.gpus] == [0, 1]
    assert report.gpus[0].processes == ()
    assert [p.pid for p in report.gpus[1].processes or ()] == [48213]
    assert report.gpus[1].memory_used_mib == 81920


def test_nvidia_smi_not_available_values_become_none() -> None:
    line = "NVIDIA A100-SXM4-40GB, GPU-0c1d, 8.0, 535.104.05, 0, 40960, [N/A], [N/A], [Not Supported]\n"
    report = probe_nvidia_smi(FakeRunner({SMI_QUERY_ARGV: ok(line)}))
    assert isinstance(report, HostReport)
    gpu = report.gpus[0]
    assert (gpu.temperature_c, gpu.power_draw_w, gpu.power_limit_w) == (None, None, None)
    assert report.cuda_driver is None  # the header command was not there


def test_nvidia_smi_failure_is_reported_not_raised() -> None:
    said = probe_nvidia_smi(broken_smi_runner())
    assert said == (
        "nvidia-smi: exit 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
        "driver. Make sure that the latest NVIDIA driver is installed and running."
    )


def test_nvidia_smi_unexpected_output_is_refused() -> None:
    said = probe_nvidia_smi(FakeRunner({SMI_QUERY_ARGV: ok("No devices were found\n")}))
    assert isinstance(said, str) and "unexpected --query-gpu output" in said


# --------------------------------------------------------------------------- /proc and nothing


def test_broken_nvidia_smi_falls_back_to_proc(tmp_path: Path) -> None:
    report = probe_host(
        nvml=NO_NVML, run=broken_smi_runner(), root=_proc_root(tmp_path, "proc-version-580.txt")
    )
    assert (report.source, report.driver, report.gpus) == ("proc", "580.159.04", ())
    assert len(report.attempts) == 2
    assert "couldn't communicate with the NVIDIA driver" in report.attempts[1]


def test_proc_open_kernel_module_format(tmp_path: Path) -> None:
    report = probe_proc(_proc_root(tmp_path, "proc-version-open-535.txt"))
    assert isinstance(report, HostReport)
    assert report.driver == "535.104.05"


def test_sys_module_version_when_proc_is_absent(tmp_path: Path) -> None:
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("580.159.04\n")
    report = probe_proc(tmp_path)
    assert isinstance(report, HostReport)
    assert report.driver == "580.159.04"


def test_a_two_part_driver_version_in_sys_module_is_a_driver(tmp_path: Path) -> None:
    # NVIDIA numbers some Linux drivers X.Y (470.86, 550.135): /sys/module/nvidia/version says so.
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("470.86\n")
    report = probe_proc(tmp_path)
    assert isinstance(report, HostReport) and report.driver == "470.86"


def test_no_driver_anywhere_is_a_report_not_an_exception(tmp_path: Path) -> None:
    report = probe_host(nvml=NO_NVML, run=FakeRunner(), root=tmp_path)
    assert (report.source, report.driver, report.cuda_driver, report.gpus) == ("none", None, None, ())
    assert report.attempts[1] == "nvidia-smi: exit 127: nvidia-smi: not found"
    assert report.attempts[2].startswith("/proc/driver/nvidia/version")
    assert report.to_host().driver is None


def test_nvml_with_no_gpus_falls_through_to_nvidia_smi(tmp_path: Path) -> None:
    report = probe_host(nvml=FakeNvml([]), run=smi_runner("rtx3090"), root=tmp_path)
    assert report.source == "nvidia-smi"
    assert report.attempts == ("nvml: no GPU listed",)


def test_run_command_never_raises() -> None:
    assert run_command([sys.executable, "-c", "print('hi')"], 30).stdout == "hi\n"
    assert run_command(["envbuilder-no-such-program"], 5).returncode == 127
    slow = run_command([sys.executable, "-c", "import time; time.sleep(5)"], 0.2)
    assert (slow.returncode, slow.stderr) == (124, "timed out after 0.2 s")


# --------------------------------------------------------------------------- access modes

LDCONFIG = FakeRunner({("ldconfig", "-p"): ok(data("ldconfig-p.txt"))})


def _which_ldconfig(name: str) -> str | None:
    return "ldconfig" if name == "ldconfig" else None


def test_devices_mode_finds_nodes_and_the_64bit_libcuda(tmp_path: Path) -> None:
    root = gpu_root(tmp_path, gpus=11)
    modes = gpu_access_modes(docker_reachable=False, run=LDCONFIG, which=_which_ldconfig, env={}, root=root)
    assert [m.name for m in modes] == ["toolkit", "cdi", "devices"]
    devices = modes[2]
    assert devices.available
    assert devices.devices[:3] == ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2")
    assert devices.devices[10:] == ("/dev/nvidia10", "/dev/nvidiactl", "/dev/nvidia-uvm")
    assert devices.lib_dir == "/usr/local/nvidia/lib64"  # not the i386 entry listed first
    assert "libcuda.so.1" in devices.driver_libs and "libz.so.1" not in devices.driver_libs
    args = tuple(mode_docker_args(devices))
    assert args[:2] == ("--device", "/dev/nvidia0")
    assert args[-8:] == (
        "-v",
        "/usr/local/nvidia/lib64:/usr/local/nvidia/lib64:ro",
        "-e",
        "LD_LIBRARY_PATH=/usr/local/nvidia/lib64",
        *NVIDIA_ENV,
    )
    assert not modes[0].available and "Docker is not reachable" in modes[0].detail


def test_devices_mode_mounts_the_hosts_nvidia_smi_at_usr_bin(tmp_path: Path) -> None:
    """As the Container Toolkit does (issue 13): the ELF binary, not the H200 machine's wrapper
    script in /usr/bin, which execs a path the container lacks."""
    tree = driver_tree(tmp_path)
    devices = gpu_access_modes(
        docker_reachable=True,
        run=tree.ldconfig,
        which=_which_ldconfig,
        env={"PATH": "/usr/bin"},
        root=tree.root,
    )[2]
    assert devices.available and "nvidia-smi" in devices.detail
    assert devices.programs == (("nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi"),)
    args = mode_docker_args(devices)
    assert args[-8:-6] == ["-v", "/usr/local/nvidia/bin/nvidia-smi:/usr/bin/nvidia-smi:ro"]
    assert args[-6:] == ["-e", "LD_LIBRARY_PATH=/usr/local/nvidia/lib64", *NVIDIA_ENV]
    assert devices.to_dict()["programs"] == ["/usr/local/nvidia/bin/nvidia-smi"]


def test_devices_mode_needs_nvidia_uvm(tmp_path: Path) -> None:
    root = gpu_root(tmp_path, uvm=False)
    devices = gpu_access_modes(docker_reachable=True, run=LDCONFIG, which=_which_ldconfig, env={}, root=root)[
        2
    ]
    assert not devices.available
    assert devices.detail == "missing /dev/nvidia-uvm"


def test_libcuda_from_ld_library_path_when_not_in_the_cache(tmp_path: Path) -> None:
    root = gpu_root(tmp_path, lib_dir="/opt/driver/lib")
    env = {"LD_LIBRARY_PATH": "/nowhere:/opt/driver/lib"}
    assert find_libcuda(run=FakeRunner(), which=_which_ldconfig, env=env, root=root) == "/opt/driver/lib"
    assert find_libcuda(run=FakeRunner(), which=_no_which, env={}, root=root) is None


def test_system_lib_dir_is_never_mounted_whole(tmp_path: Path) -> None:
    root = gpu_root(tmp_path, lib_dir="/usr/lib/x86_64-linux-gnu")
    cache = "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
    run = FakeRunner({("ldconfig", "-p"): ok(cache)})
    devices = gpu_access_modes(docker_reachable=True, run=run, which=_which_ldconfig, env={}, root=root)[2]
    args = tuple(mode_docker_args(devices))
    assert "/usr/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:ro" not in args
    assert f"/usr/lib/x86_64-linux-gnu/libcuda.so.1:{CONTAINER_LIB_DIR}/libcuda.so.1:ro" in args
    assert args[-5] == f"LD_LIBRARY_PATH={CONTAINER_LIB_DIR}"


def test_toolkit_mode_from_runtime_or_cli(tmp_path: Path) -> None:
    def cli(name: str) -> str | None:
        return "/usr/bin/nvidia-container-cli" if name == "nvidia-container-cli" else None

    def toolkit(reachable: bool, runtimes: tuple[str, ...], which: Which) -> AccessMode:
        modes = gpu_access_modes(
            docker_reachable=reachable,
            runtimes=runtimes,
            which=which,
            run=FakeRunner(),
            env={},
            root=tmp_path,
        )
        return modes[0]

    by_runtime = toolkit(True, ("nvidia", "runc"), _no_which)
    assert by_runtime.available and mode_docker_args(by_runtime) == ["--gpus", "all"]
    assert toolkit(True, (), cli).available
    assert not toolkit(False, (), cli).available


def test_cdi_mode_needs_a_spec_and_a_daemon_that_reads_specs(tmp_path: Path) -> None:
    (tmp_path / "etc/cdi").mkdir(parents=True)
    (tmp_path / "etc/cdi/nvidia.yaml").write_text(data("cdi-nvidia.yaml"))
    (tmp_path / "etc/cdi/other.yaml").write_text("kind: vendor.com/fpga\n")

    def cdi_mode(daemon_dirs: tuple[str, ...]) -> AccessMode:
        modes = gpu_access_modes(
            docker_reachable=True,
            cdi_spec_dirs=daemon_dirs,
            run=FakeRunner(),
            which=_no_which,
            env={},
            root=tmp_path,
        )
        return modes[1]

    cdi = cdi_mode(("/etc/cdi", "/var/run/cdi"))
    assert cdi.available and cdi.cdi_specs == ("/etc/cdi/nvidia.yaml",)
    assert mode_docker_args(cdi) == ["--device", "nvidia.com/gpu=all"]
    off = cdi_mode(())
    assert not off.available and "CDISpecDirs" in off.detail
    assert off.cdi_specs == ("/etc/cdi/nvidia.yaml",)


def test_access_mode_json_lists_args_only_when_available(tmp_path: Path) -> None:
    modes = gpu_access_modes(
        docker_reachable=False, run=LDCONFIG, which=_which_ldconfig, env={}, root=gpu_root(tmp_path)
    )
    args = [mode_docker_args(m) for m in modes]  # doctor --json's access_modes[].docker_args
    assert args[:2] == [[], []]
    assert args[2][:2] == ["--device", "/dev/nvidia0"]
