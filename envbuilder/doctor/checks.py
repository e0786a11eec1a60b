"""`envbuilder doctor`: probes the host, Docker and the current Python's frameworks, and turns what
it finds into one ok/warn/fail check each, with the fix for every warn and fail.

`assess_host` is pure (facts in, checks out); `run_doctor` gathers the facts through injectable probes.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from envbuilder.certify.kernels import judge_inventory
from envbuilder.errors import DoctorFailedError, EnvbuilderError, NoGpuError
from envbuilder.host import (
    AccessMode,
    GpuInfo,
    HostReport,
    Runner,
    Which,
    collectives,
    probe_host,
    run_command,
)
from envbuilder.host.cdi import SpecCheck, check_spec_file, describe_missing
from envbuilder.host.collectives import CollectiveFacts
from envbuilder.host.frameworks import (
    FRAMEWORKS,
    FrameworkBuild,
    Status,
    cuda_fit,
    frameworks_in,
    kernel_fit,
    probe_framework,
    probe_inventory,
    user_python,
)
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import platform_of_machine
from envbuilder.runtime import get as get_runtime
from envbuilder.runtime.docker import gpu_access_modes
from envbuilder.versions import major_minor

Verdict = Literal["ok", "warn", "fail", "no-gpu"]
TOOLKIT_URL = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
DRIVER_URL = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"
HOT_C = 85  # a GPU this hot at rest will throttle under load
_FIX_TOOLKIT = f"install the NVIDIA Container Toolkit: {TOOLKIT_URL}, or use --gpu-access devices"
_FIX_NO_ACCESS = (
    f"install the NVIDIA Container Toolkit ({TOOLKIT_URL}), or make /dev/nvidia* and "
    "libcuda.so.1 (ldconfig) available for --gpu-access devices"
)
_FIX_NO_DRIVER = (
    f"install the NVIDIA driver ({DRIVER_URL}); to plan for another machine: "
    "`envbuilder resolve --driver VERSION --gpu NAME`"
)
_FIX_NO_GPU = (
    "check that libnvidia-ml.so.1 and nvidia-smi match the loaded kernel module (reboot after a "
    "driver update) and that /dev/nvidia* is readable"
)
_CDI_SPEC_CMD = "envbuilder gpu cdi-spec --out {path}"
_FIX_CDI_SPEC = "write one as root: " + _CDI_SPEC_CMD.format(path="/etc/cdi/nvidia.yaml")
_FIX_CDI_DAEMON = (
    'Docker 25+ reads CDI specs with {"features": {"cdi": true}} in /etc/docker/daemon.json '
    "(restart dockerd after the change)"
)
_FIX_VRAM = "stop them or use another GPU (CUDA_VISIBLE_DEVICES): they skew benchmarks and can cause OOM"


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True, slots=True, kw_only=True)
class DockerState:
    reachable: bool
    detail: str  # server version and storage driver, or why the daemon did not answer
    fix: str | None = None
    runtimes: tuple[str, ...] = ()
    cdi_spec_dirs: tuple[str, ...] = ()
    server_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorReport:
    host: HostReport
    checks: tuple[Check, ...]
    access_modes: tuple[AccessMode, ...]
    frameworks: tuple[FrameworkBuild, ...]
    verdict: Verdict
    collectives: CollectiveFacts | None = None  # hosts with 2+ GPUs

    def to_dict(self) -> dict[str, Any]:
        """The stable `doctor --json` document (schema_version 1)."""
        return {
            "schema_version": 1,
            "host": self.host.to_dict(),
            "checks": [c.to_dict() for c in self.checks],
            "access_modes": [
                {**m.to_dict(), "docker_args": list(get_runtime("docker").mode_flags(m))}
                for m in self.access_modes
            ],
            "frameworks": [f.to_dict() for f in self.frameworks],
            "collectives": self.collectives.to_dict() if self.collectives else None,
            "verdict": self.verdict,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


# --------------------------------------------------------------------------- gathering facts


def probe_docker() -> DockerState:
    """Ask the daemon through envbuilder.engine, imported here so doctor runs without the docker SDK.
    Never raises: a missing SDK or an unreachable daemon is a state, not an error."""
    try:
        from envbuilder import engine  # noqa: F401 (the SDK's absence is said here)
    except ImportError as exc:
        return DockerState(
            reachable=False,
            detail=f"the docker Python SDK is not installed ({exc})",
            fix="pip install docker",
        )
    try:
        info = get_runtime("docker").engine().daemon_info()
    except EnvbuilderError as exc:
        return DockerState(reachable=False, detail=exc.message, fix=exc.hint)
    except Exception as exc:  # a daemon that answers with an API error: report it, don't crash
        return DockerState(reachable=False, detail=f"the daemon answered with an error: {exc}")
    return DockerState(
        reachable=True,
        detail=f"Docker {info.server_version} ({info.storage_driver}), runtimes: {', '.join(info.runtimes)}",
        runtimes=info.runtimes,
        cdi_spec_dirs=info.cdi_spec_dirs,
        server_version=info.server_version,
    )


def load_matrix_or_reason() -> Matrix | str:
    """The loaded matrix, or why it could not be loaded (doctor then lacks the MVC floors).
    Never raises for a missing or broken matrix."""
    try:
        module = importlib.import_module("envbuilder.matrix")
        matrix: Matrix = module.load_matrix()
    except ImportError as exc:
        return f"envbuilder.matrix is not available ({exc})"
    except EnvbuilderError as exc:
        return exc.message
    return matrix


def _quiet(_message: str) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorInputs:
    """Where doctor gets its facts; the defaults probe this machine. Tests pass fakes."""

    nvml: Any = None  # None: import pynvml
    run: Runner = run_command
    root: Path = Path("/")
    which: Which = shutil.which
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    docker: Callable[[], DockerState] = probe_docker
    python: str = field(default_factory=user_python)  # the user's, not envbuilder's own venv
    installed: Callable[[str], bool] | None = None  # None: ask `python` (frameworks_in)
    matrix: Callable[[], Matrix | str] = load_matrix_or_reason
    progress: Callable[[str], None] = _quiet
    inventory: Callable[[Runner, str], dict[str, Any] | str] | None = None  # None: probe_inventory


def run_doctor(inputs: DoctorInputs | None = None) -> DoctorReport:
    """Gather every fact and assess it (assess_host). Never raises for what it finds: see `exit_error`."""
    i = inputs or DoctorInputs()
    i.progress("probing GPUs and driver (NVML, nvidia-smi, /proc)")
    host = probe_host(nvml=i.nvml, run=i.run, root=i.root)
    i.progress("asking the Docker daemon")
    docker = i.docker()
    modes = gpu_access_modes(
        docker_reachable=docker.reachable,
        runtimes=docker.runtimes,
        cdi_spec_dirs=docker.cdi_spec_dirs,
        run=i.run,
        which=i.which,
        env=i.env,
        root=i.root,
    )
    tools = {t: i.which(t) for t in ("nvidia-container-cli", "nvidia-ctk")}
    specs = next((m.cdi_specs for m in modes if m.name == "cdi"), ())
    spec_checks = tuple(check_spec_file(s, i.root) for s in specs)
    builds = []
    installed = i.installed
    if installed is None:
        found = frameworks_in(i.python, run=i.run)
        installed = found.__contains__
    for name in FRAMEWORKS:
        if installed(name):
            i.progress(f"importing {name} in {i.python}")
            builds.append(probe_framework(name, run=i.run, python=i.python))
    matrix = i.matrix() if (host.gpus and any(b.cuda for b in builds)) or host.wsl else None
    inventory: dict[str, Any] | str | None = None
    if host.gpus and any(b.cuda for b in builds):
        i.progress(f"reading the CUDA libraries' kernels (fatbins) of {i.python}'s frameworks")
        probe = i.inventory or (lambda run, python: probe_inventory(run=run, python=python))
        inventory = probe(i.run, i.python)
    multi = None
    if len(host.gpus) >= 2:
        i.progress("reading the GPU interconnect (nvidia-smi topo -m), /dev/shm and NCCL settings")
        multi = collectives.gather(len(host.gpus), run=i.run, root=i.root, env=i.env)
    return assess_host(
        host=host,
        docker=docker,
        tools=tools,
        modes=modes,
        frameworks=tuple(builds),
        matrix=matrix,
        python=i.python,
        multi=multi,
        cdi_specs=spec_checks,
        inventory=inventory,
    )


# --------------------------------------------------------------------------- checks (pure)


def _gpu_checks(g: GpuInfo) -> list[Check]:
    facts = [f"cc {g.cc or '?'}"]
    if g.memory_total_mib is not None:
        used = "?" if g.memory_used_mib is None else g.memory_used_mib
        facts.append(f"{used}/{g.memory_total_mib} MiB used")
    if g.temperature_c is not None:
        facts.append(f"{g.temperature_c} C")
    if g.power_draw_w is not None:
        limit = "" if g.power_limit_w is None else f"/{g.power_limit_w:.0f}"
        facts.append(f"{g.power_draw_w:.0f}{limit} W")
    facts.append(g.uuid or "no UUID")
    fix = None
    if not g.cc:
        fix = "give the compute capability yourself: `envbuilder resolve --cc X.Y`"
    elif (g.temperature_c or 0) >= HOT_C:
        fix = "the GPU is hot at rest: check its cooling before training (it will throttle)"
    name = f"gpu{g.index}"
    out = [Check(name=name, status="warn" if fix else "ok", detail=f"{g.name}, {', '.join(facts)}", fix=fix)]
    if g.processes is None:  # unread: not "no process" (host/probe.py)
        return [*out, Check(name=f"{name} vram", status="warn", detail="its processes could not be listed")]
    if not g.processes:
        return [*out, Check(name=f"{name} vram", status="ok", detail="no process holds VRAM")]
    total = sum(p.used_mib or 0 for p in g.processes)
    who = ", ".join(
        f"pid {p.pid} {p.name or '?'} ({'?' if p.used_mib is None else p.used_mib} MiB)" for p in g.processes
    )
    detail = f"{len(g.processes)} process(es) hold {total} MiB: {who}"
    return [*out, Check(name=f"{name} vram", status="warn", detail=detail, fix=_FIX_VRAM)]


def _platform_checks(host: HostReport) -> list[Check]:
    """The machine's platform, as resolve and build take it by default (envbuilder/platforms.py);
    none when the report has no machine (a report recorded before the probe read it)."""
    if host.machine is None:
        return []
    platform = platform_of_machine(host.machine)
    if platform is None:
        detail = f"{host.machine}: envbuilder has facts for linux/amd64 and linux/arm64 only"
        fix = "resolve and build for a supported platform with --platform linux/amd64|linux/arm64"
        return [Check(name="platform", status="warn", detail=detail, fix=fix)]
    return [Check(name="platform", status="ok", detail=f"{platform} (machine {host.machine})")]


def _host_checks(host: HostReport) -> list[Check]:
    tried = "; ".join(host.attempts) or "nothing answered"
    if host.driver is None:
        detail = f"no NVIDIA driver found ({tried})"
        return [Check(name="driver", status="fail", detail=detail, fix=_FIX_NO_DRIVER)]
    cuda = f", CUDA {host.cuda_driver}" if host.cuda_driver else ""
    out = [Check(name="driver", status="ok", detail=f"{host.driver}{cuda} (via {host.source})")]
    if not host.gpus:
        detail = f"driver {host.driver} is loaded but no GPU could be queried ({tried})"
        out.append(Check(name="gpus", status="fail", detail=detail, fix=_FIX_NO_GPU))
    for g in host.gpus:
        out += _gpu_checks(g)
    return out


def _wsl_check(host: HostReport, matrix: Matrix | None) -> Check:
    """WSL2: the driver probed is the Windows driver; the Linux driver it counts as and what WSL2
    lacks (cuda.yaml `wsl`), so the checks above and `resolve` read the same."""
    from envbuilder.resolve.wsl import windows_driver  # lazy: only WSL2 hosts need it

    said = [f"WSL2 ({host.wsl})"]
    if host.driver is not None and matrix is not None:
        got = windows_driver(matrix, host.driver)
        if got is not None:
            said.append(
                f"driver {host.driver} is the Windows driver: CUDA {major_minor(got.release.version)} "
                f"({got.how}), checked as the Linux driver {got.linux} by resolve"
            )
    if matrix is not None:
        said += [f"{limit.lacks}: {limit.detail}" for limit in matrix.cuda.wsl_limits]
    return Check(name="wsl2", status="ok", detail="; ".join(said))


def _container_checks(
    docker: DockerState, tools: Mapping[str, str | None], modes: tuple[AccessMode, ...]
) -> list[Check]:
    fix = None if docker.reachable else f"{docker.fix or 'start Docker'} (build and certify need it)"
    out = [Check(name="docker", status="ok" if docker.reachable else "warn", detail=docker.detail, fix=fix)]
    specs = next((m.cdi_specs for m in modes if m.name == "cdi"), ())
    if "nvidia" in docker.runtimes or specs:
        said = ["nvidia runtime registered"] if "nvidia" in docker.runtimes else []
        specs_said = [f"CDI spec {s}" for s in specs]
        out.append(Check(name="nvidia runtime", status="ok", detail=", ".join(said + specs_said)))
    else:
        unknown = "" if docker.reachable else " (Docker not reachable: its runtimes are unknown)"
        detail = f"no nvidia runtime registered and no CDI spec for nvidia.com/gpu{unknown}"
        out.append(Check(name="nvidia runtime", status="warn", detail=detail, fix=_FIX_TOOLKIT))
    found = [f"{t} at {p}" for t, p in tools.items() if p]
    out.append(
        Check(
            name="toolkit tools",
            status="ok" if found else "warn",
            detail=", ".join(found) or "neither nvidia-container-cli nor nvidia-ctk is on PATH",
            fix=None if found else _FIX_TOOLKIT,
        )
    )
    offered = [m.name for m in modes if m.available]
    why_not = "; ".join(f"{m.name}: {m.detail}" for m in modes if not m.available)
    detail = f"offered: {', '.join(offered) or 'none'}" + (f"; not {why_not}" if why_not else "")
    status: Status = "ok" if offered else "fail"
    out.append(
        Check(name="gpu access", status=status, detail=detail, fix=None if offered else _FIX_NO_ACCESS)
    )
    return out


def _cdi_check(docker: DockerState, specs: tuple[SpecCheck, ...], modes: tuple[AccessMode, ...]) -> Check:
    """Whether the daemon reads CDI specs, which specs define nvidia.com/gpu, and whether the
    files they name still exist (a driver update leaves a spec naming the old libraries). A warn
    only where CDI is not usable and no toolkit runtime stands in, or a spec is stale."""
    if not docker.reachable:
        reads, reads_ok = "Docker is not reachable: whether it reads CDI specs is unknown", False
    elif docker.cdi_spec_dirs:
        reads, reads_ok = f"the daemon reads CDI specs from {', '.join(docker.cdi_spec_dirs)}", True
    else:
        version = f"Docker {docker.server_version}" if docker.server_version else "the daemon"
        reads, reads_ok = f"{version} reads no CDI specs (CDISpecDirs empty: CDI off, or Docker < 25)", False
    said = [reads]
    stale = [s for s in specs if s.missing or s.error]
    for s in specs:
        if s.error:
            said.append(f"{s.path}: {s.error}")
        elif s.missing:
            said.append(f"{s.path} is stale: {describe_missing(s.missing)} missing")
        else:
            said.append(f"{s.path} defines nvidia.com/gpu={','.join(s.devices)}")
    if not specs:
        said.append("no CDI spec defines nvidia.com/gpu")
    detail = "; ".join(said)
    if stale:
        fix = "regenerate it as root: " + _CDI_SPEC_CMD.format(path=stale[0].path)
        return Check(name="cdi", status="warn", detail=detail, fix=fix)
    toolkit = any(m.name == "toolkit" and m.available for m in modes)
    if (reads_ok and specs) or toolkit:
        return Check(name="cdi", status="ok", detail=detail)
    fixes = [] if reads_ok or not docker.reachable else [_FIX_CDI_DAEMON]
    fixes += [] if specs else [_FIX_CDI_SPEC]
    fixes = fixes or ["start Docker 25+ with CDI enabled"]
    return Check(name="cdi", status="warn", detail=detail, fix="; then ".join(fixes))


def _framework_checks(b: FrameworkBuild, host: HostReport, matrix: Matrix | None) -> list[Check]:
    resolve = f"`envbuilder resolve --framework {b.name}`"
    if b.error or not b.version:
        fix = f"repair {b.name} in this Python, or ignore this if you do not use it here"
        return [Check(name=b.name, status="warn", detail=f"import failed: {b.error}", fix=fix)]
    if not b.cuda:
        detail = f"{b.version} is a CPU-only build: it will not use the GPU"
        return [Check(name=b.name, status="warn", detail=detail, fix=f"install a CUDA build: {resolve}")]
    archs = " ".join(b.archs) or "not introspectable"
    out = [Check(name=b.name, status="ok", detail=f"{b.version}, CUDA {b.cuda}, archs: {archs}")]
    status, detail, cuda_fix = cuda_fit(b.cuda, host, matrix)
    out.append(Check(name=f"{b.name} cuda", status=status, detail=detail, fix=cuda_fix))
    if b.archs:
        status, detail = kernel_fit(b, host)
        fix = f"install a {b.name} build with kernels for this GPU: {resolve}"
        out.append(Check(name=f"{b.name} kernels", status=status, detail=detail, fix=fix))
    return out


def _inventory_check(inventory: Mapping[str, Any] | str, host: HostReport, matrix: Matrix | None) -> Check:
    """The frameworks' CUDA libraries, read from their fatbins, against each GPU and this driver."""
    name = "kernel inventory"
    if isinstance(inventory, str) or matrix is None:
        why = inventory if isinstance(inventory, str) else "the matrix did not load"
        return Check(name=name, status="warn", detail=f"not read: {why}", fix=None)
    gpus = [(g.name, g.cc or "") for g in host.gpus]  # an unread cc: judge_inventory warns (as certify)
    verdict = judge_inventory(matrix, inventory, gpus, host.driver)
    libs = inventory.get("libraries") or []
    said = f"{len(libs)} CUDA libraries with device code read in {inventory.get('seconds', '?')} s"
    if verdict.failures:
        more = f" (+{len(verdict.failures) - 3} more)" if len(verdict.failures) > 3 else ""
        return Check(
            name=name,
            status="fail",
            detail=f"{said}: " + "; ".join(verdict.failures[:3]) + more,
            fix="install builds with kernels for this GPU and driver: `envbuilder resolve`",
        )
    if verdict.warnings:
        return Check(name=name, status="warn", detail=f"{said}: " + "; ".join(verdict.warnings[:3]), fix=None)
    return Check(name=name, status="ok", detail=f"{said}: every GPU has a kernel it runs in each", fix=None)


def assess_host(
    *,
    host: HostReport,
    docker: DockerState,
    tools: Mapping[str, str | None],
    modes: tuple[AccessMode, ...],
    frameworks: tuple[FrameworkBuild, ...],
    matrix: Matrix | str | None,
    python: str,
    multi: CollectiveFacts | None = None,
    cdi_specs: tuple[SpecCheck, ...] = (),
    inventory: Mapping[str, Any] | str | None = None,
) -> DoctorReport:
    """Turn gathered facts into checks and a verdict. Pure; never raises. `matrix` is the loaded
    matrix, the reason it did not load, or None when nothing needed it; `multi` the collective
    facts of a host with 2+ GPUs; `cdi_specs` the CDI specs for nvidia.com/gpu, as read back;
    `inventory` the kernel inventory of the frameworks' CUDA libraries (harness/inventory.py) or
    why there is none."""
    checks = [*_platform_checks(host), *_host_checks(host), *_container_checks(docker, tools, modes)]
    checks.append(_cdi_check(docker, cdi_specs, modes))
    if multi is not None:
        rows = collectives.checks(multi)
        checks += [Check(name=n, status=s, detail=d, fix=f) for n, s, d, f in rows]
    if isinstance(matrix, str):
        fix = "run `envbuilder matrix check` to see what is wrong"
        checks.append(Check(name="matrix", status="warn", detail=f"not loaded: {matrix}", fix=fix))
    loaded = matrix if isinstance(matrix, Matrix) else None
    if host.wsl is not None:
        checks.insert(1, _wsl_check(host, loaded))
    for b in frameworks:
        if host.gpus:
            checks += _framework_checks(b, host, loaded)
        else:
            said = f"{b.version}, CUDA {b.cuda or 'none'}" if b.version else f"import failed: {b.error}"
            checks.append(Check(name=b.name, status="ok", detail=f"{said} (no GPU to check it on)"))
    if host.gpus and inventory is not None:
        checks.append(_inventory_check(inventory, host, loaded))
    if not frameworks:
        detail = f"none of {', '.join(FRAMEWORKS)} is importable in {python}"
        checks.append(Check(name="frameworks", status="ok", detail=detail))
    statuses = {c.status for c in checks}
    verdict: Verdict = "no-gpu" if not host.gpus else "fail" if "fail" in statuses else "ok"
    if verdict == "ok" and "warn" in statuses:
        verdict = "warn"
    return DoctorReport(
        host=host,
        checks=tuple(checks),
        access_modes=modes,
        frameworks=frameworks,
        verdict=verdict,
        collectives=multi,
    )


def format_report(report: DoctorReport) -> str:
    """The human view: one aligned `status  name: detail` line per check, `fix:` under each warn
    and fail, then the access modes and the verdict."""
    h = report.host
    cuda = f", CUDA {h.cuda_driver}" if h.cuda_driver else ""
    lines = [f"host: {len(h.gpus)} GPU(s), driver {h.driver or 'none'}{cuda} (via {h.source})", ""]
    width = max(len(c.name) for c in report.checks) + 1
    for c in report.checks:
        lines.append(f"{c.status:<5} {c.name + ':':<{width}} {c.detail}")
        if c.fix and c.status != "ok":
            lines.append(f"{'':<5} {'fix:':<{width}} {c.fix}")
    offered = ", ".join(m.name for m in report.access_modes if m.available) or "none"
    lines += ["", f"gpu access modes: {offered}", f"verdict: {report.verdict}"]
    return "\n".join(lines)


def exit_error(report: DoctorReport) -> EnvbuilderError | None:
    """The error the CLI raises after printing the report: NoGpuError (exit 5) when no GPU could be
    queried, DoctorFailedError (exit 6) when a check failed, None when all are ok or warn."""
    if report.verdict == "no-gpu":
        driver = report.host.driver
        what = "no NVIDIA driver is loaded" if driver is None else f"driver {driver}, but no GPU"
        return NoGpuError(
            f"no NVIDIA GPU found on this machine ({what})",
            hint="doctor needs an NVIDIA GPU and its driver; to plan for another machine use "
            "`envbuilder resolve --driver VERSION --gpu NAME` (or --cc X.Y)",
        )
    failed = [c.name for c in report.checks if c.status == "fail"]
    if failed:
        return DoctorFailedError(
            f"{len(failed)} check(s) failed: {', '.join(failed)}",
            hint="each failing line above says how to fix it",
        )
    return None
