"""GPU access modes: the ways this host can hand its GPUs to a container (toolkit, cdi, devices),
and the device nodes, driver library folder and driver programs the `devices` mode mounts. The facts
only: what a container gets from each mode is its runtime's `grant` (runtime/docker.py).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envbuilder.host.driver_files import abi_flag, find_programs, ldconfig_entries
from envbuilder.host.probe import Runner, Which, run_command

ModeName = str  # a runtime's GPU access mode (runtime/: docker's toolkit, cdi, devices; ...)


CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
_DRIVER_LIB_RE = re.compile(r"^lib(cuda|nvidia-[a-z0-9-]+|cudadebugger|nvcuvid)\.so(\.[\d.]+)?$")


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessMode:
    """One way to hand GPUs to a container, and whether this host offers it."""

    name: ModeName
    available: bool
    detail: str  # what was found, or why the mode is not offered
    devices: tuple[str, ...] = ()  # devices mode: the /dev/nvidia* nodes
    lib_dir: str | None = None  # devices mode: the folder the loader finds libcuda.so.1 in
    driver_libs: tuple[str, ...] = ()  # devices mode: the driver's own libraries in lib_dir
    programs: tuple[tuple[str, str], ...] = ()  # devices mode: (name, host ELF) of nvidia-smi & co
    cdi_specs: tuple[str, ...] = ()  # cdi mode: spec files that define nvidia.com/gpu

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "available": self.available,
            "detail": self.detail,
            "devices": list(self.devices),
            "lib_dir": self.lib_dir,
            "driver_libs": list(self.driver_libs),
            "programs": [host for _, host in self.programs],
            "cdi_specs": list(self.cdi_specs),
        }


def find_libcuda(
    *,
    run: Runner = run_command,
    which: Which = shutil.which,
    env: Mapping[str, str] = os.environ,
    root: Path = Path("/"),
) -> str | None:
    """The folder libcuda.so.1 loads from, found as the loader finds it: the ldconfig cache
    (`ldconfig -p`, 64-bit entry first), then LD_LIBRARY_PATH. None when it is not found."""
    flag = abi_flag()
    hits = [
        (flag in e.flags.split(","), e.path)
        for e in ldconfig_entries(run=run, which=which, root=root)
        if e.name == "libcuda.so.1"
    ]
    if hits:
        return str(Path(sorted(hits, key=lambda h: not h[0])[0][1]).parent)
    for d in env.get("LD_LIBRARY_PATH", "").split(":"):
        if d and (root / d.lstrip("/") / "libcuda.so.1").exists():
            return d.rstrip("/") or "/"
    return None


def find_cdi_specs(dirs: Sequence[str], root: Path = Path("/")) -> tuple[str, ...]:
    """CDI spec files (*.yaml, *.yml, *.json) in `dirs` that define nvidia.com/gpu devices."""
    found: list[str] = []
    for d in dict.fromkeys(dirs):
        folder = root / d.lstrip("/")
        for f in sorted(folder.glob("*")) if folder.is_dir() else ():
            if f.suffix in (".yaml", ".yml", ".json"):
                try:
                    if "nvidia.com/gpu" in f.read_text(errors="replace"):
                        found.append(f"{d.rstrip('/')}/{f.name}")
                except OSError:
                    continue
    return tuple(found)


def gpu_access_modes(
    *,
    docker_reachable: bool,
    runtimes: Sequence[str] = (),
    cdi_spec_dirs: Sequence[str] = (),
    run: Runner = run_command,
    which: Which = shutil.which,
    env: Mapping[str, str] = os.environ,
    root: Path = Path("/"),
) -> tuple[AccessMode, ...]:
    """All three modes in preference order (toolkit, cdi, devices), each saying whether this host
    offers it. toolkit: the daemon has the nvidia runtime, or nvidia-container-cli is there and
    Docker answers. cdi: a spec defines nvidia.com/gpu and the daemon reads CDI specs. devices:
    /dev/nvidia[0-9]*, nvidiactl and nvidia-uvm exist and the loader finds libcuda.so.1 (needs
    no Docker to detect). Never raises."""
    cli = which("nvidia-container-cli")
    if "nvidia" in runtimes:
        toolkit = AccessMode(name="toolkit", available=True, detail="the daemon has the nvidia runtime")
    elif cli and docker_reachable:
        toolkit = AccessMode(name="toolkit", available=True, detail=f"{cli} with a reachable daemon")
    else:
        why = "no nvidia runtime registered" if docker_reachable else "Docker is not reachable"
        cli_said = f"at {cli}" if cli else "not found"
        toolkit = AccessMode(
            name="toolkit", available=False, detail=f"{why}; nvidia-container-cli {cli_said}"
        )
    specs = find_cdi_specs([*CDI_DIRS, *cdi_spec_dirs], root)
    cdi_ok = bool(specs) and bool(cdi_spec_dirs) and docker_reachable
    cdi_why = ("spec " + ", ".join(specs) if specs else "no CDI spec for nvidia.com/gpu") + (
        "" if cdi_spec_dirs else "; the daemon reads no CDI specs (CDISpecDirs empty or unknown)"
    )
    cdi = AccessMode(name="cdi", available=cdi_ok, detail=cdi_why, cdi_specs=specs)
    dev = root / "dev"
    numbered = sorted(
        (p for p in dev.glob("nvidia[0-9]*") if p.name[6:].isdigit()), key=lambda p: int(p.name[6:])
    )
    extras = [dev / n for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")]
    nodes = tuple(f"/dev/{p.name}" for p in [*numbered, *extras] if p.exists())
    missing = [n for n in ("/dev/nvidiactl", "/dev/nvidia-uvm") if n not in nodes]
    missing += [] if numbered else ["/dev/nvidia0"]
    lib_dir = find_libcuda(run=run, which=which, env=env, root=root)
    libs: tuple[str, ...] = ()
    if lib_dir:
        folder = root / lib_dir.lstrip("/")
        libs = tuple(sorted(p.name for p in folder.glob("lib*.so*") if _DRIVER_LIB_RE.match(p.name)))
    problems = [f"missing {', '.join(missing)}"] if missing else []
    problems += [] if lib_dir else ["libcuda.so.1 not in the ldconfig cache or LD_LIBRARY_PATH"]
    programs = find_programs(env=env, lib_dir=lib_dir, root=root)
    found = f"{len(nodes)} device nodes, driver libraries in {lib_dir}"
    found += f", {', '.join(n for n, _ in programs)}" if programs else ", no nvidia-smi binary"
    devices = AccessMode(
        name="devices",
        available=not problems,
        devices=nodes,
        lib_dir=lib_dir,
        driver_libs=libs,
        programs=programs,
        detail="; ".join(problems) or found,
    )
    return (toolkit, cdi, devices)
