"""The NVIDIA driver's files on this host, as a container needs them: device nodes (control nodes and
one per GPU), the user-space libraries the loader finds (`ldconfig -p`), the driver's programs
(nvidia-smi and its kin), its IPC sockets and GSP firmware.

The choice of files follows what `nvidia-ctk cdi generate` mounts (NVIDIA/nvidia-container-toolkit,
pkg/nvcdi/driver-nvml.go): every library in the ldconfig cache whose file ends in `.so.<driver
version>`, the programs nvidia-smi, nvidia-debugdump, nvidia-persistenced and the MPS pair, the
persistenced/fabricmanager sockets and MPS pipe folder, and `nvidia/<version>/gsp*.bin`. Read here,
turned into a CDI spec by cdi.py and into `docker run` mounts by access.py.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envbuilder.host.probe import HostReport, Runner, Which, run_command
from envbuilder.typed import ascii_int

CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
PROGRAMS = (
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
)
# Where a container finds the programs: on every image's PATH (the Container Toolkit uses /usr/bin).
CONTAINER_BIN_DIR = "/usr/bin"
IPC_PATHS = (
    "/var/run/nvidia-persistenced/socket",
    "/var/run/nvidia-fabricmanager/socket",
    "/tmp/nvidia-mps",
)
FIRMWARE_DIRS = ("/lib/firmware/updates", "/lib/firmware")
_PROGRAM_DIRS = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/nvidia/bin")
# `ldconfig -p` marks each entry with its ABI; the 64-bit one of this machine's architecture.
_ABI_FLAG = {"x86_64": "x86-64", "aarch64": "AArch64"}
_ENTRY_RE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$")
_MINOR_RE = re.compile(r"^Device Minor:\s*(\d+)\s*$", re.MULTILINE)
_UUID_RE = re.compile(r"^GPU UUID:\s*(\S+)\s*$", re.MULTILINE)
_ELF_MAGIC = b"\x7fELF"


@dataclass(frozen=True, slots=True, kw_only=True)
class LdEntry:
    """One line of `ldconfig -p`: the name the loader looks up, its ABI flags, the path it maps to."""

    name: str
    flags: str
    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverLibrary:
    """A driver library file and every name the loader knows it by (its SONAME, the `.so` link)."""

    path: str  # the real file on the host, e.g. /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
    names: tuple[str, ...]  # file names to offer in a container: libcuda.so.580.159.04, libcuda.so.1, ...


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuNode:
    """One GPU's device node: /dev/nvidia<minor>, with the NVML/CUDA index and UUID it belongs to."""

    index: int
    uuid: str | None
    minor: int
    path: str  # /dev/nvidia<minor>


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverFiles:
    """Everything of the driver a GPU container needs, found on this host (paths as on the host)."""

    driver: str
    gpus: tuple[GpuNode, ...]
    control_nodes: tuple[str, ...]  # /dev/nvidiactl, /dev/nvidia-uvm, ...
    libraries: tuple[DriverLibrary, ...]
    programs: tuple[tuple[str, str], ...]  # (name, host path of the ELF binary)
    ipc: tuple[str, ...]
    firmware: tuple[str, ...]
    notes: tuple[str, ...] = ()  # what was assumed or left out, for the user


def abi_flag(machine: str | None = None) -> str:
    """The `ldconfig -p` ABI flag of this machine's 64-bit libraries (x86-64, AArch64)."""
    m = machine or platform.machine()
    return _ABI_FLAG.get(m, m)


def multiarch_lib_dir(machine: str | None = None) -> str:
    """The Debian/Ubuntu library folder of this architecture (/usr/lib/x86_64-linux-gnu): on the
    loader's built-in search path, so a library put there is found without an ldconfig cache."""
    return f"/usr/lib/{machine or platform.machine()}-linux-gnu"


def ldconfig_entries(
    *, run: Runner = run_command, which: Which = shutil.which, root: Path = Path("/")
) -> tuple[LdEntry, ...]:
    """The ldconfig cache as `ldconfig -p` lists it (empty when there is no ldconfig). Never raises."""
    ldconfig = which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if (root / p[1:]).exists()), None
    )
    if not ldconfig:
        return ()
    res = run([ldconfig, "-p"], 10.0)
    out = []
    for line in res.stdout.splitlines() if res.returncode == 0 else ():
        m = _ENTRY_RE.match(line)
        if m:
            out.append(LdEntry(name=m.group(1), flags=m.group(2), path=m.group(3)))
    return tuple(out)


def _host_path(root: Path, path: str) -> Path:
    return root / path.lstrip("/")


def _real(root: Path, path: str) -> str | None:
    """`path` with every symlink resolved inside `root`, as an absolute host path; None if absent."""
    current = path
    for _ in range(40):
        full = _host_path(root, current)
        if full.is_symlink():
            target = str(full.readlink())
            current = target if target.startswith("/") else str(Path(current).parent / target)
            current = os.path.normpath(current)
            continue
        return current if full.exists() else None
    return None


def driver_libraries(
    entries: Sequence[LdEntry], driver: str, *, root: Path, flag: str
) -> tuple[DriverLibrary, ...]:
    """The driver's own libraries: 64-bit cache entries whose file ends in `.so.<driver>` (the
    version-suffix rule of nvidia-ctk), each with the names the cache lists for it plus its
    unversioned `.so` name (what `-lcuda` links against, e.g. Triton's launcher)."""
    by_file: dict[str, list[str]] = {}
    suffix = f".so.{driver}"
    for e in entries:
        if flag not in e.flags.split(","):
            continue
        real = _real(root, e.path)
        if real is None or not real.endswith(suffix):
            continue
        names = by_file.setdefault(real, [Path(real).name])
        names.append(e.name)
    libs = []
    for real, names in sorted(by_file.items()):
        stem = Path(real).name[: -len(suffix)] + ".so"
        libs.append(DriverLibrary(path=real, names=tuple(sorted({*names, stem}))))
    return tuple(libs)


def is_elf(path: Path) -> bool:
    """Whether `path` is an ELF binary (a wrapper script is not: it may exec a path the container
    lacks, as the H200 test machine's /usr/bin/nvidia-smi does)."""
    try:
        with path.open("rb") as fh:
            return fh.read(4) == _ELF_MAGIC
    except OSError:
        return False


def find_programs(
    names: Sequence[str] = PROGRAMS,
    *,
    env: Mapping[str, str] = os.environ,
    lib_dir: str | None = None,
    root: Path = Path("/"),
) -> tuple[tuple[str, str], ...]:
    """(name, host path) of each driver program found as an ELF binary: on PATH, in the usual
    folders, or in the `bin` folder beside the driver's library folder (/usr/local/nvidia/bin).
    Symlinks are resolved, so the mount carries the binary itself. Never raises."""
    dirs = [d for d in env.get("PATH", "").split(":") if d.startswith("/")]
    dirs += list(_PROGRAM_DIRS)
    if lib_dir:
        dirs.append(str(Path(lib_dir).parent / "bin"))
    found = []
    for name in names:
        for d in dict.fromkeys(dirs):
            real = _real(root, f"{d.rstrip('/')}/{name}")
            if real is not None and is_elf(_host_path(root, real)):
                found.append((name, real))
                break
    return tuple(found)


def gpu_minors(root: Path = Path("/")) -> dict[str, int]:
    """GPU UUID -> device minor, from /proc/driver/nvidia/gpus/*/information (what NVML's
    nvmlDeviceGetMinorNumber reports). Empty when the folder is not readable."""
    out: dict[str, int] = {}
    folder = root / "proc/driver/nvidia/gpus"
    for info in sorted(folder.glob("*/information")) if folder.is_dir() else ():
        try:
            text = info.read_text(errors="replace")
        except OSError:
            continue
        uuid, minor = _UUID_RE.search(text), _MINOR_RE.search(text)
        if uuid and minor:
            out[uuid.group(1)] = int(minor.group(1))
    return out


def gpu_nodes(report: HostReport, root: Path = Path("/")) -> tuple[tuple[GpuNode, ...], tuple[str, ...]]:
    """Each GPU's device node (its minor from /proc/driver/nvidia/gpus by UUID, else the nodes in
    index order), and notes on what was assumed or left out. Never raises."""
    notes: list[str] = []
    return _gpu_nodes(report, root, notes), tuple(notes)


def _gpu_nodes(report: HostReport, root: Path, notes: list[str]) -> tuple[GpuNode, ...]:
    dev = root / "dev"
    numbered = sorted(n for p in dev.glob("nvidia[0-9]*") if (n := ascii_int(p.name[6:])) is not None)
    minors = gpu_minors(root)
    nodes = []
    for pos, gpu in enumerate(report.gpus):
        minor = minors.get(gpu.uuid or "")
        if minor is None and pos < len(numbered):
            minor = numbered[pos]
            notes.append(
                f"GPU {gpu.index}: no device minor in /proc/driver/nvidia/gpus; assumed "
                f"/dev/nvidia{minor} (the device nodes in index order)"
            )
        if minor is None or minor not in numbered:
            notes.append(f"GPU {gpu.index} ({gpu.name}): no /dev/nvidia node found; left out")
            continue
        nodes.append(GpuNode(index=gpu.index, uuid=gpu.uuid, minor=minor, path=f"/dev/nvidia{minor}"))
    return tuple(nodes)


def find_driver_files(
    report: HostReport,
    *,
    run: Runner = run_command,
    which: Which = shutil.which,
    env: Mapping[str, str] = os.environ,
    root: Path = Path("/"),
    machine: str | None = None,
) -> DriverFiles | str:
    """The driver's files for the GPUs in `report` (its driver version picks the libraries), or a
    string saying why there are none usable (no driver, no GPU node, no library). Never raises."""
    if report.driver is None:
        return "no NVIDIA driver found (" + ("; ".join(report.attempts) or "nothing answered") + ")"
    notes: list[str] = []
    gpus = _gpu_nodes(report, root, notes)
    if not gpus:
        why = "; ".join(notes) or "no GPU listed by NVML or nvidia-smi"
        return f"driver {report.driver}, but no GPU device node to hand in ({why})"
    control = tuple(f"/dev/{n}" for n in CONTROL_NODES if (root / "dev" / n).exists())
    missing = [n for n in ("/dev/nvidiactl", "/dev/nvidia-uvm") if n not in control]
    if missing:
        notes.append(
            f"missing {', '.join(missing)} (CUDA needs them: load nvidia-uvm, e.g. nvidia-modprobe -u -c=0)"
        )
    entries = ldconfig_entries(run=run, which=which, root=root)
    libs = driver_libraries(entries, report.driver, root=root, flag=abi_flag(machine))
    if not libs:
        return (
            f"no library in the ldconfig cache ({len(entries)} entries) ends in .so.{report.driver}: "
            "the driver's user-space libraries are not installed or not in the cache (run ldconfig)"
        )
    libcuda = next((lib.path for lib in libs if "libcuda.so.1" in lib.names), None)
    if libcuda is None:
        notes.append("libcuda.so.1 is not among the driver's libraries in the ldconfig cache")
    lib_dir = str(Path(libcuda).parent) if libcuda else None
    programs = find_programs(env=env, lib_dir=lib_dir, root=root)
    if not any(name == "nvidia-smi" for name, _ in programs):
        notes.append("nvidia-smi: no ELF binary found on PATH or beside the driver's libraries")
    ipc = tuple(p for p in IPC_PATHS if _host_path(root, p).exists())
    firmware = tuple(
        sorted(
            {
                "/" + str(f.relative_to(root))
                for d in FIRMWARE_DIRS
                for f in _host_path(root, f"{d}/nvidia/{report.driver}").glob("gsp*.bin")
            }
        )
    )
    return DriverFiles(
        driver=report.driver,
        gpus=gpus,
        control_nodes=control,
        libraries=libs,
        programs=programs,
        ipc=ipc,
        firmware=firmware,
        notes=tuple(notes),
    )
