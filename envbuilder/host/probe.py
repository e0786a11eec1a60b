"""GPUs and driver of this machine: NVML, then nvidia-smi, then /proc/driver/nvidia/version; and
whether it is WSL2, where the driver these print is the Windows driver (resolve/wsl.py maps it).

Each probe takes its inputs (NVML module, command runner, filesystem root) as arguments, so tests
feed it recorded outputs. Nothing here raises for a missing GPU or driver.
"""

from __future__ import annotations

import importlib
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from envbuilder.host.model import Host, HostGpu
from envbuilder.platforms import platform_of_machine
from envbuilder.typed import ascii_int

Source = Literal["nvml", "nvidia-smi", "proc", "none"]
Which = Callable[[str], str | None]

# nvmlBrandType_t -> the brand names the Container Toolkit matches in NVIDIA_REQUIRE_CUDA
# (libnvidia-container: brand=tesla, nvidia, quadro, quadrortx, nvidiartx, geforce, titan, ...).
NVML_BRANDS: dict[int, str] = {
    0: "unknown",
    1: "quadro",
    2: "tesla",
    3: "nvs",
    4: "grid",
    5: "geforce",
    6: "titan",
    7: "vapps",
    8: "vpc",
    9: "vcs",
    10: "vws",
    11: "cloudgaming",
    12: "quadrortx",
    13: "nvidiartx",
    14: "nvidia",
    15: "geforcertx",
    16: "titanrtx",
}
SMI_QUERY = (
    "name,uuid,compute_cap,driver_version,memory.used,memory.total,temperature.gpu,power.draw,power.limit"
)
SMI_TIMEOUT_S = 20.0
_MIB = 1024 * 1024
_NVML_PROCS = (
    ("compute", "nvmlDeviceGetComputeRunningProcesses"),
    ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    returncode: int  # 127: not found, 124: timed out
    stdout: str
    stderr: str


Runner = Callable[[Sequence[str], float], CommandResult]


def run_command(argv: Sequence[str], timeout: float) -> CommandResult:
    """Run argv without a shell; a missing program or a timeout becomes a CommandResult, never an
    exception."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return CommandResult(returncode=127, stdout="", stderr=f"{argv[0]}: not found")
    except subprocess.TimeoutExpired:
        return CommandResult(returncode=124, stdout="", stderr=f"timed out after {timeout:g} s")
    except OSError as exc:
        return CommandResult(returncode=126, stdout="", stderr=str(exc))
    return CommandResult(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuProcess:
    pid: int
    used_mib: int | None
    kind: str  # compute | graphics
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuInfo:
    index: int
    name: str
    uuid: str | None
    cc: str | None  # "9.0"
    brand: str | None  # Container Toolkit brand name; None when the source cannot tell
    memory_used_mib: int | None = None
    memory_total_mib: int | None = None
    temperature_c: int | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    # None: unread (NVML failed to list them, nvidia-smi's compute-apps query failed), never ()
    # for it: certify's GPU watch would take a process that ran before the run for a new one
    processes: tuple[GpuProcess, ...] | None = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class HostReport:
    source: Source  # which probe answered
    driver: str | None  # None: no NVIDIA driver found
    cuda_driver: str | None  # newest CUDA the driver supports, "13.0"
    gpus: tuple[GpuInfo, ...] = ()
    attempts: tuple[str, ...] = ()  # what each probe that did not answer said, in order
    wsl: str | None = None  # WSL2: what showed it ("/proc/version says microsoft-standard-WSL2")
    machine: str | None = None  # the CPU architecture, as `uname -m` prints it (platform.machine())

    def to_host(self) -> Host:
        """The resolver's view of this host."""
        gpus = tuple(
            HostGpu(
                name=g.name, cc=g.cc or "", brand=g.brand, uuid=g.uuid, memory_total_mib=g.memory_total_mib
            )
            for g in self.gpus
        )
        platform = platform_of_machine(self.machine) if self.machine else None
        return Host(driver=self.driver, gpus=gpus, source=self.source, platform=platform)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "driver": self.driver,
            "cuda_driver": self.cuda_driver,
            "gpus": [g.to_dict() for g in self.gpus],
            "attempts": list(self.attempts),
            "wsl": self.wsl,
            "machine": self.machine,
        }


# --------------------------------------------------------------------------- probes


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def cuda_version_from_int(value: int) -> str:
    """NVML/cuDriverGetVersion integer -> "X.Y": 13000 -> "13.0", 12020 -> "12.2"."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def probe_nvml(nvml: Any, root: Path = Path("/")) -> HostReport | str:
    """Query NVML through the nvidia-ml-py module `nvml`. Returns the report, or a string saying why
    NVML did not answer. Optional fields a GPU does not support stay None."""
    nvml_error: type[BaseException] = getattr(nvml, "NVMLError", Exception)

    def opt(name: str, *args: Any) -> Any:
        try:
            return getattr(nvml, name)(*args)
        except (nvml_error, AttributeError):  # AttributeError: a function this nvidia-ml-py lacks
            return None

    try:
        nvml.nvmlInit()
    except nvml_error as exc:
        return f"NVML: {exc}"
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        cuda_int = opt("nvmlSystemGetCudaDriverVersion")
        gpus = []
        for i in range(int(nvml.nvmlDeviceGetCount())):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            cc, mem = opt("nvmlDeviceGetCudaComputeCapability", h), opt("nvmlDeviceGetMemoryInfo", h)
            brand, uuid = opt("nvmlDeviceGetBrand", h), opt("nvmlDeviceGetUUID", h)
            power, limit = opt("nvmlDeviceGetPowerUsage", h), opt("nvmlDeviceGetEnforcedPowerLimit", h)
            listed, unread = nvml_processes(nvml, h, root)
            procs = None if unread else listed  # a list NVML refused: unknown, not none
            gpus.append(
                GpuInfo(
                    index=i,
                    name=_text(nvml.nvmlDeviceGetName(h)),
                    uuid=None if uuid is None else _text(uuid),
                    cc=None if cc is None else f"{cc[0]}.{cc[1]}",
                    brand=None if brand is None else NVML_BRANDS.get(int(brand), "unknown"),
                    memory_used_mib=None if mem is None else int(mem.used) // _MIB,
                    memory_total_mib=None if mem is None else int(mem.total) // _MIB,
                    temperature_c=opt("nvmlDeviceGetTemperature", h, 0),  # 0: NVML_TEMPERATURE_GPU
                    power_draw_w=None if power is None else power / 1000.0,
                    power_limit_w=None if limit is None else limit / 1000.0,
                    processes=procs,
                )
            )
    except nvml_error as exc:
        return f"NVML: {exc}"
    finally:
        opt("nvmlShutdown")
    cuda = None if cuda_int is None else cuda_version_from_int(int(cuda_int))
    return HostReport(source="nvml", driver=driver, cuda_driver=cuda, gpus=tuple(gpus))


def nvml_processes(
    nvml: Any, handle: Any, root: Path | None = None
) -> tuple[tuple[GpuProcess, ...], tuple[str, ...]]:
    """One GPU's processes from NVML's compute and graphics lists, for every reader of them (this
    probe: doctor, certify's GPU watch; check's node health): what NVML listed, and its words for
    each list it refused ("FUNCTION: why"). A refused list leaves the GPU's processes unknown, not
    none: each caller says so. `root`: where /proc is, to name each process (None: unnamed)."""
    procs: list[GpuProcess] = []
    unread: list[str] = []
    for kind, fn in _NVML_PROCS:
        call = getattr(nvml, fn, None)
        if call is None:
            unread.append(f"{fn}: not in this nvidia-ml-py")
            continue
        try:
            listed = call(handle)
        except Exception as e:  # pynvml's NVMLError family, whatever the driver says
            unread.append(f"{fn}: {str(e) or type(e).__name__}")
            continue
        for p in listed or ():
            name = None if root is None else _comm(root, int(p.pid))
            procs.append(GpuProcess(pid=int(p.pid), kind=kind, used_mib=_mib(p), name=name))
    return tuple(procs), tuple(unread)


def _mib(proc: Any) -> int | None:
    used = getattr(proc, "usedGpuMemory", None)  # None when the driver hides it (no permission)
    return None if used is None else int(used) // _MIB


def _comm(root: Path, pid: int) -> str | None:
    try:
        return (root / "proc" / str(pid) / "comm").read_text().strip() or None
    except OSError:
        return None


def _num(field: str) -> float | None:
    """nvidia-smi csv cell -> number; '[N/A]', '[Not Supported]' and blanks -> None."""
    return float(field) if re.fullmatch(r"\d+(\.\d+)?", field) else None


def _int(field: str) -> int | None:
    value = _num(field)
    return None if value is None else int(value)


WSL_LIB = "usr/lib/wsl/lib"  # WSL2's driver libraries and nvidia-smi, mounted from Windows


def detect_wsl(root: Path = Path("/")) -> str | None:
    """What shows this is WSL2, or None: /proc/version naming Microsoft's kernel
    ("...-microsoft-standard-WSL2"), else the paravirtual GPU /dev/dxg or the driver folder
    /usr/lib/wsl/lib (NVIDIA's CUDA on WSL User Guide)."""
    try:
        version = (root / "proc/version").read_text(errors="replace")
    except OSError:
        version = ""
    if re.search(r"microsoft|WSL", version, re.IGNORECASE):
        return f"/proc/version says {version.split()[2] if len(version.split()) > 2 else 'Microsoft'}"
    for path in ("dev/dxg", WSL_LIB):
        if (root / path).exists():
            return f"/{path} exists"
    return None


def probe_nvidia_smi(run: Runner = run_command, exe: str = "nvidia-smi") -> HostReport | str:
    """Query `nvidia-smi` (csv query, header for the CUDA version, compute apps). Returns the
    report, or a string saying why nvidia-smi did not answer."""
    fmt = "--format=csv,noheader,nounits"
    res = run([exe, f"--query-gpu={SMI_QUERY}", fmt], SMI_TIMEOUT_S)
    if res.returncode != 0:
        said = (res.stdout.strip() or res.stderr.strip() or "no output").splitlines()[0]
        return f"nvidia-smi: exit {res.returncode}: {said}"
    rows = [[c.strip() for c in line.split(",")] for line in res.stdout.splitlines() if line.strip()]
    if not rows or any(len(r) != 9 for r in rows):
        return f"nvidia-smi: unexpected --query-gpu output: {res.stdout.strip()[:120]!r}"
    header = run([exe], SMI_TIMEOUT_S)
    m = re.search(r"CUDA Version:\s*(\d+\.\d+)", header.stdout)
    apps = run([exe, "--query-compute-apps=gpu_uuid,pid,process_name,used_memory", fmt], SMI_TIMEOUT_S)
    procs: dict[str, list[GpuProcess]] = {}
    listed = apps.returncode == 0  # else every GPU's processes are unread (None), not none
    unread: set[str] = set()  # GPUs with a row whose process cannot be read: unknown, not none
    for line in apps.stdout.splitlines() if listed else ():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 4:  # a row not in the asked shape: no GPU's list can be trusted
            listed = False
            break
        # the name is every cell between the pid and the memory: a process name may hold a comma
        pid, name = ascii_int(cells[1]), ", ".join(cells[2:-1]) or None
        if pid is None:  # "[N/A]" (another PID namespace, no permission): a process, not none
            unread.add(cells[0])
            continue
        proc = GpuProcess(pid=pid, name=name, used_mib=_int(cells[-1]), kind="compute")
        procs.setdefault(cells[0], []).append(proc)
    gpus = tuple(
        GpuInfo(
            index=i,
            name=r[0],
            uuid=r[1] or None,
            cc=r[2] if re.fullmatch(r"\d+\.\d+", r[2]) else None,
            brand=None,
            memory_used_mib=_int(r[4]),
            memory_total_mib=_int(r[5]),
            temperature_c=_int(r[6]),
            power_draw_w=_num(r[7]),
            power_limit_w=_num(r[8]),
            processes=tuple(procs.get(r[1], ())) if listed and r[1] not in unread else None,
        )
        for i, r in enumerate(rows)
    )
    return HostReport(
        source="nvidia-smi", driver=rows[0][3], cuda_driver=m.group(1) if m else None, gpus=gpus
    )


_NVRM_RE = re.compile(r"NVRM version:.*?\s([0-9]{3,4}\.[0-9]{1,3}(?:\.[0-9]{1,3})?)\s")


def probe_proc(root: Path = Path("/")) -> HostReport | str:
    """Read the loaded kernel module's version from /proc/driver/nvidia/version, else
    /sys/module/nvidia/version. Gives the driver only; no GPU details."""
    proc, sysmod = root / "proc/driver/nvidia/version", root / "sys/module/nvidia/version"
    try:
        m = _NVRM_RE.search(proc.read_text() + " ")
        if m:
            return HostReport(source="proc", driver=m.group(1), cuda_driver=None)
    except OSError:
        pass
    try:
        text = sysmod.read_text().strip()
        if re.fullmatch(r"[0-9]{3,4}\.[0-9]{1,3}(\.[0-9]{1,3})?", text):  # [0-9]: not any script's
            return HostReport(source="proc", driver=text, cuda_driver=None)
    except OSError:
        pass
    return "/proc/driver/nvidia/version: no NVIDIA kernel module loaded"


def probe_host(
    *, nvml: Any = None, run: Runner = run_command, root: Path = Path("/"), machine: str | None = None
) -> HostReport:
    """Probe NVML (nvml=None imports pynvml), then nvidia-smi, then /proc; the first that answers
    wins and `attempts` keeps what the others said. `machine` is the CPU architecture as `uname -m`
    prints it (None: this machine's, platform.machine()). Never raises: no driver gives a report
    with source "none", driver None and no GPUs."""
    if machine is None:
        import platform as _platform

        machine = _platform.machine() or None
    attempts: list[str] = []
    module: Any = nvml
    if module is None:
        try:
            module = importlib.import_module("pynvml")
        except ImportError as exc:
            module = f"NVML: nvidia-ml-py not importable ({exc})"
    wsl = detect_wsl(root)
    probes: list[Callable[[], HostReport | str]] = [
        lambda: module if isinstance(module, str) else probe_nvml(module, root),
        lambda: probe_nvidia_smi(run),
    ]
    if wsl is not None:  # as root, nvidia-smi is not on PATH in WSL2 ([NV-WSL] Known Limitations)
        probes.append(lambda: probe_nvidia_smi(run, str(root / WSL_LIB / "nvidia-smi")))
    for probe in probes:
        got = probe()
        if isinstance(got, HostReport) and got.gpus:
            return HostReport(
                source=got.source,
                driver=got.driver,
                cuda_driver=got.cuda_driver,
                gpus=got.gpus,
                attempts=tuple(attempts),
                wsl=wsl,
                machine=machine,
            )
        attempts.append(got if isinstance(got, str) else f"{got.source}: no GPU listed")
    got = probe_proc(root)
    if isinstance(got, HostReport):
        return HostReport(
            source="proc",
            driver=got.driver,
            cuda_driver=None,
            attempts=tuple(attempts),
            wsl=wsl,
            machine=machine,
        )
    return HostReport(
        source="none", driver=None, cuda_driver=None, attempts=(*attempts, got), wsl=wsl, machine=machine
    )
