"""The kernel inventory: per CUDA library of the installed frameworks (torch, tensorflow, the jax
CUDA plugins, the nvidia-* wheels they pull, a system CUDA), the SASS and PTX (with its ISA) it
carries, read from its fatbins (fatbin.py). Stdlib only: it runs in the image and on the host.
Packages are located without importing them, so a broken framework is still inventoried.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from . import fatbin
from .frameworks import FRAMEWORKS
from .kernels import Target, kernel_for, parse_target, target_name

# Top-level packages whose folders hold CUDA libraries, and what each belongs to.
PACKAGES = (
    *((folder, name) for name, fw in FRAMEWORKS.items() for folder in fw.kernel_packages),  # frameworks.py
    ("nvidia", "nvidia"),  # cuDNN, cuBLAS, NCCL ... wheels
)
# A framework's own library without a kernel for the GPU fails certification; a library of the
# nvidia-* wheels or a system CUDA is only warned about: the wheels ship more libraries than a
# framework loads (libcufftw.so.12 of the torch 2.11 cu130 stack carries one sm_75 cubin and is
# not loaded by torch), and the framework's GPU steps prove the ones it uses.
FRAMEWORK_OWNERS = frozenset(FRAMEWORKS)
SYSTEM_CUDA = ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
DEFAULT_BUDGET_S = 60.0


def package_dirs(names: Iterable[tuple[str, str]] = PACKAGES) -> list[tuple[str, Path]]:
    """(owner, folder) of each installed package in `names`, found by import machinery without
    importing it (namespace packages such as nvidia/ included)."""
    out = []
    for module, owner in names:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        for loc in spec.submodule_search_locations or ():
            out.append((owner, Path(loc)))
    return out


def system_dirs() -> list[tuple[str, Path]]:
    return [("system-cuda", Path(d)) for d in SYSTEM_CUDA if Path(d).is_dir()]


def _libraries(root: Path) -> Iterator[Path]:
    seen: set[tuple[int, int]] = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in sorted(files):
            if not (name.endswith(".so") or ".so." in name):
                continue
            path = Path(dirpath) / name
            try:
                st = path.stat()
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)  # libfoo.so.12 and its symlinks are one library
            if key in seen or st.st_size < 4096:
                continue
            seen.add(key)
            yield path


def scan(roots: list[tuple[str, Path]], budget_s: float = DEFAULT_BUDGET_S) -> dict[str, Any]:
    """The inventory of every library under `roots` that carries device code. Never raises: a
    library that cannot be read is listed under `errors`; a scan past `budget_s` stops and says so."""
    t0 = time.monotonic()
    libraries: list[dict[str, Any]] = []
    errors: list[str] = []
    scanned = 0
    truncated = False
    for owner, root in roots:
        for path in _libraries(root):
            if time.monotonic() - t0 > budget_s:
                truncated = True
                break
            scanned += 1
            try:
                kernels = fatbin.scan_file(path)
            except fatbin.FatbinError:
                continue  # not an ELF shared object (a linker script, a stub)
            except OSError as e:
                errors.append(f"{path}: {e.strerror or e}")
                continue
            if not kernels.entries:
                continue
            rel = path.relative_to(root.parent) if root.parent in path.parents else path
            size = path.stat().st_size
            libraries.append({"library": str(rel), "owner": owner, "bytes": size, **kernels.to_dict()})
    return {
        "libraries": libraries,
        "libraries_scanned": scanned,
        "seconds": round(time.monotonic() - t0, 2),
        "truncated": truncated,
        "errors": errors,
        "zstd_decoder": fatbin._ZSTD is not None,
    }


def targets_of(library: dict[str, Any]) -> list[Target]:
    names = list(library.get("sass") or ()) + [p["arch"] for p in library.get("ptx") or ()]
    return [t for t in (parse_target(n) for n in names) if t is not None]


def uncovered(
    inventory: dict[str, Any], cc: tuple[int, int], owners: Iterable[str] | None = None
) -> list[str]:
    """Libraries (of `owners`, default all) with device code none of which runs on compute
    capability `cc` (the arch rule of kernels.py): '<library>: SASS sm_75 sm_80, PTX none'."""
    keep = None if owners is None else set(owners)
    bad = []
    for lib in inventory.get("libraries") or ():
        if keep is not None and lib.get("owner") not in keep:
            continue
        targets = targets_of(lib)
        if targets and kernel_for(cc, targets) is None:
            ptx = " ".join(p["arch"] for p in lib.get("ptx") or ()) or "none"
            sass = " ".join(lib.get("sass") or ()) or "none"
            bad.append(f"{lib['library']}: SASS {sass}, PTX {ptx}")
    return bad


def how_covered(inventory: dict[str, Any], cc: tuple[int, int]) -> dict[str, str]:
    """library -> the kernel that runs on `cc` ('sm_90', 'compute_120'), for the libraries covered."""
    out = {}
    for lib in inventory.get("libraries") or ():
        got = kernel_for(cc, targets_of(lib))
        if got is not None:
            out[str(lib["library"])] = target_name(got)
    return out
