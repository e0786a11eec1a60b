"""Fakes for host and doctor tests: an NVML module object, a command runner answering from recorded
outputs under tests/data/host, and a filesystem root with /dev/nvidia* nodes and driver libraries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from envbuilder.host import SMI_QUERY, CommandResult

DATA = Path(__file__).resolve().parent.parent / "data" / "host"
MIB = 1024 * 1024


def data(name: str) -> str:
    return (DATA / name).read_text()


class FakeNVMLError(Exception):
    """Stands in for pynvml.NVMLError: str() is NVML's error string."""


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-3f1c9e0a-7b2d-4c5e-9a81-0d6f2b4e8c17"
    cc: tuple[int, int] = (9, 0)
    brand: int = 14  # NVML_BRAND_NVIDIA
    used_mib: int = 0
    total_mib: int = 143771
    temp_c: int = 31
    power_mw: int | None = 76540  # None: NVML says Not Supported
    limit_mw: int = 700000
    compute: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, bytes)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)


class FakeNvml:
    """The slice of the pynvml module that host.probe_nvml calls, answering for `gpus`."""

    NVMLError = FakeNVMLError

    def __init__(
        self,
        gpus: Sequence[FakeGpu] = (),
        *,
        driver: str | bytes = "580.159.04",
        cuda: int = 13000,
        init_error: str | None = None,
    ) -> None:
        self.gpus = list(gpus)
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.init_error:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        return self.gpus[i]

    def nvmlDeviceGetName(self, g: FakeGpu) -> str:
        return g.name

    def nvmlDeviceGetUUID(self, g: FakeGpu) -> str:
        return g.uuid

    def nvmlDeviceGetCudaComputeCapability(self, g: FakeGpu) -> tuple[int, int]:
        return g.cc

    def nvmlDeviceGetBrand(self, g: FakeGpu) -> int:
        return g.brand

    def nvmlDeviceGetMemoryInfo(self, g: FakeGpu) -> Any:
        return SimpleNamespace(used=g.used_mib * MIB, total=g.total_mib * MIB)

    def nvmlDeviceGetTemperature(self, g: FakeGpu, sensor: int) -> int:
        assert sensor == 0  # NVML_TEMPERATURE_GPU
        return g.temp_c

    def nvmlDeviceGetPowerUsage(self, g: FakeGpu) -> int:
        if g.power_mw is None:
            raise FakeNVMLError("Not Supported")
        return g.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, g: FakeGpu) -> int:
        return g.limit_mw

    def nvmlDeviceGetComputeRunningProcesses(self, g: FakeGpu) -> list[Any]:
        return [SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in g.compute]

    def nvmlDeviceGetGraphicsRunningProcesses(self, g: FakeGpu) -> list[Any]:
        return [SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in g.graphics]


SMI_FMT = "--format=csv,noheader,nounits"
SMI_QUERY_ARGV = ("nvidia-smi", f"--query-gpu={SMI_QUERY}", SMI_FMT)
SMI_APPS_ARGV = (
    "nvidia-smi",
    "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
    SMI_FMT,
)


class FakeRunner:
    """Answers commands from a table of argv -> CommandResult; anything else is 'not found' (127),
    as on a machine without that program. A key may be an argv prefix ending in '*'."""

    def __init__(self, table: dict[tuple[str, ...], CommandResult] | None = None) -> None:
        self.table = dict(table or {})
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> CommandResult:
        assert timeout > 0, "every subprocess call needs a timeout"
        key = tuple(argv)
        self.calls.append(key)
        for k, result in self.table.items():
            if k == key or (k[-1] == "*" and key[: len(k) - 1] == k[:-1]):
                return result
        return CommandResult(returncode=127, stdout="", stderr=f"{argv[0]}: not found")


def ok(stdout: str) -> CommandResult:
    return CommandResult(returncode=0, stdout=stdout, stderr="")


def smi_runner(machine: str) -> FakeRunner:
    """nvidia-smi as it answers on `machine` (h200, rtx3090, 2gpu) from recorded outputs."""
    return FakeRunner(
        {
            SMI_QUERY_ARGV: ok(data(f"smi-{machine}-query.csv")),
            ("nvidia-smi",): ok(data(f"smi-{machine}-header.txt")),
            SMI_APPS_ARGV: ok(data(f"smi-{machine}-apps.csv")),
        }
    )


def broken_smi_runner() -> FakeRunner:
    """nvidia-smi installed but the driver is not loaded: exit 9 with its real message."""
    broken = CommandResult(returncode=9, stdout=data("smi-broken.txt"), stderr="")
    return FakeRunner({SMI_QUERY_ARGV: broken, ("nvidia-smi",): broken})


def gpu_root(tmp: Path, *, gpus: int = 1, uvm: bool = True, lib_dir: str = "/usr/local/nvidia/lib64") -> Path:
    """A filesystem root with /dev/nvidia0..N-1, nvidiactl (and nvidia-uvm), and the driver's
    libraries in lib_dir."""
    dev = tmp / "dev"
    dev.mkdir(parents=True, exist_ok=True)
    names = [f"nvidia{i}" for i in range(gpus)] + ["nvidiactl"] + (["nvidia-uvm"] if uvm else [])
    for name in names:
        (dev / name).touch()
    libs = tmp / lib_dir.lstrip("/")
    libs.mkdir(parents=True, exist_ok=True)
    for lib in (
        "libcuda.so.1",
        "libcuda.so.580.159.04",
        "libnvidia-ml.so.1",
        "libnvidia-ptxjitcompiler.so.1",
        "libz.so.1",
    ):
        (libs / lib).touch()
    return tmp


# (SONAME, file stem) of driver libraries as an R580 installer lays them out; each file is
# <stem>.so.<driver>, with the SONAME and an unversioned .so link (nvidia-ctk's version-suffix rule
# keeps these). libnvidia-egl-wayland carries its own version (1.1.x), so no rule may keep it.
DRIVER_LIBS = (
    ("libcuda.so.1", "libcuda"),
    ("libnvidia-ml.so.1", "libnvidia-ml"),
    ("libnvidia-ptxjitcompiler.so.1", "libnvidia-ptxjitcompiler"),
    ("libnvidia-nvvm.so.4", "libnvidia-nvvm"),
    ("libcudadebugger.so.1", "libcudadebugger"),
    ("libGLX_nvidia.so.0", "libGLX_nvidia"),
)
ELF_STUB = b"\x7fELF\x02\x01\x01" + bytes(9)  # the first bytes of an x86-64 ELF file


@dataclass
class DriverTree:
    """A fake host with an NVIDIA driver: root folder, its `ldconfig -p`, the driver version."""

    root: Path
    ldconfig: FakeRunner
    driver: str
    lib_dir: str


def driver_tree(
    tmp: Path,
    *,
    driver: str = "580.159.04",
    lib_dir: str = "/usr/local/nvidia/lib64",
    uuids: Sequence[str] = ("GPU-3f1c9e0a-7b2d-4c5e-9a81-0d6f2b4e8c17",),
    minors: Sequence[int] | None = None,
    proc_gpus: bool = True,
    smi_wrapper: bool = True,
) -> DriverTree:
    """A filesystem root laid out like the H200 test machine: /dev/nvidia<minor> per GPU with
    /proc/driver/nvidia/gpus/*/information, control nodes, the driver's libraries in `lib_dir`
    (real files + SONAME and .so symlinks, listed by a fake `ldconfig -p` together with a 32-bit
    libcuda and unrelated libraries), the ELF nvidia-smi in /usr/local/nvidia/bin behind a wrapper
    script in /usr/bin (as that machine has it), GSP firmware and the persistenced socket."""
    minors = list(minors if minors is not None else range(len(uuids)))
    dev = tmp / "dev"
    dev.mkdir(parents=True, exist_ok=True)
    for name in [f"nvidia{m}" for m in minors] + ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]:
        (dev / name).touch()
    for i, (uuid, minor) in enumerate(zip(uuids, minors, strict=True)):
        info = tmp / f"proc/driver/nvidia/gpus/0000:00:0{6 + i}.0/information"
        if proc_gpus:
            info.parent.mkdir(parents=True, exist_ok=True)
            info.write_text(
                f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 36\nGPU UUID: \t {uuid}\n"
                f"Bus Location: \t 0000:00:0{6 + i}.0\nDevice Minor: \t {minor}\nGPU Excluded:\t No\n"
            )
    libs = tmp / lib_dir.lstrip("/")
    libs.mkdir(parents=True, exist_ok=True)
    lines = []
    for soname, stem in DRIVER_LIBS:
        real = f"{stem}.so.{driver}"
        (libs / real).write_bytes(ELF_STUB)
        (libs / soname).symlink_to(real)
        (libs / f"{stem}.so").symlink_to(soname)
        lines += [
            f"\t{soname} (libc6,x86-64) => {lib_dir}/{soname}",
            f"\t{stem}.so (libc6,x86-64) => {lib_dir}/{stem}.so",
        ]
    wayland = tmp / "usr/lib/x86_64-linux-gnu/libnvidia-egl-wayland.so.1.1.13"
    wayland.parent.mkdir(parents=True, exist_ok=True)
    wayland.write_bytes(ELF_STUB)
    (wayland.parent / "libnvidia-egl-wayland.so.1").symlink_to(wayland.name)
    (wayland.parent / "libz.so.1").write_bytes(ELF_STUB)
    i386 = tmp / "usr/lib/i386-linux-gnu"
    i386.mkdir(parents=True, exist_ok=True)
    (i386 / f"libcuda.so.{driver}").write_bytes(ELF_STUB)
    (i386 / "libcuda.so.1").symlink_to(f"libcuda.so.{driver}")
    lines += [
        "\tlibz.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libz.so.1",
        "\tlibnvidia-egl-wayland.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnvidia-egl-wayland.so.1",
        "\tlibcuda.so.1 (libc6) => /usr/lib/i386-linux-gnu/libcuda.so.1",
    ]
    listing = f"{len(lines)} libs found in cache `/etc/ld.so.cache'\n" + "\n".join(lines) + "\n"
    smi = tmp / "usr/local/nvidia/bin/nvidia-smi"
    smi.parent.mkdir(parents=True, exist_ok=True)
    smi.write_bytes(ELF_STUB)
    if smi_wrapper:
        wrapper = tmp / "usr/bin/nvidia-smi"
        wrapper.parent.mkdir(parents=True, exist_ok=True)
        wrapper.write_text('#!/bin/sh\nexec /usr/local/nvidia/bin/nvidia-smi "$@"\n')
    fw = tmp / f"lib/firmware/nvidia/{driver}"
    fw.mkdir(parents=True, exist_ok=True)
    for name in ("gsp_ga10x.bin", "gsp_tu10x.bin"):
        (fw / name).write_bytes(b"fw")
    sock = tmp / "var/run/nvidia-persistenced/socket"
    sock.parent.mkdir(parents=True, exist_ok=True)
    sock.touch()
    return DriverTree(
        root=tmp,
        ldconfig=FakeRunner({("ldconfig", "-p"): ok(listing)}),
        driver=driver,
        lib_dir=lib_dir,
    )
