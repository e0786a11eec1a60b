"""GPU access modes as facts: `AccessMode` (one way to hand this host's GPUs to a container, and
whether this host offers it), the driver library folder (find_libcuda) and the CDI specs
(find_cdi_specs) the modes are probed from. Which modes a runtime has, how each is probed and what
each hands a container are the runtime's (runtime/docker.py `gpu_access_modes`, `grant`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envbuilder.host.driver_files import abi_flag, ldconfig_entries
from envbuilder.host.probe import Runner, Which, run_command

ModeName = str  # a runtime's GPU access mode (runtime/: docker's toolkit, cdi, devices; ...)


CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


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
