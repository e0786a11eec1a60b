"""Library readahead: on the GPU path, the framework's shared libraries (its own, the nvidia-*
wheels', a system CUDA's: several GB) are handed to the kernel's readahead at the harness's start,
from a thread, so the first certification after a machine starts does not read them from disk one
page fault at a time inside the steps that first touch them (on the H200 the first run after a
start spent 6-8 s more in kernel_inventory, cuda_smoke and the first cuDNN autotuning than the next
one: benchmarks/results/h200-2026-12-01-s3). A cache hint only: nothing is measured differently,
no step is skipped, and a file that cannot be read is left alone (the steps report it as before).
Stdlib only."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import inventory
from .record import Recorder, log

# What each framework's certification loads (inventory.PACKAGES' names, plus jaxlib's own XLA).
FRAMEWORK_PACKAGES = {
    "torch": (("torch", "torch"), ("nvidia", "nvidia")),
    "jax": (
        ("jaxlib", "jax"),
        ("jax_cuda13_plugin", "jax"),
        ("jax_cuda12_plugin", "jax"),
        ("jax_plugins", "jax"),
        ("nvidia", "nvidia"),
    ),
    "tensorflow": (("tensorflow", "tensorflow"), ("nvidia", "nvidia")),
}
CAP_BYTES = 16 * 2**30  # at most this much is hinted (the libraries of one stack are 3-8 GB)


def library_files(roots: Iterable[tuple[str, Path]]) -> list[Path]:
    """The shared libraries under roots (each once, symlinks folded), in the order given."""
    out: list[Path] = []
    for _owner, root in roots:
        out.extend(inventory.libraries(root))
    return out


def readahead(paths: Iterable[Path], cap_bytes: int = CAP_BYTES) -> dict[str, Any]:
    """POSIX_FADV_WILLNEED over each regular file until cap_bytes; never raises."""
    t0 = time.monotonic()
    files = total = 0
    advise = getattr(os, "posix_fadvise", None)
    for path in paths:
        if advise is None:
            break
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or total + st.st_size > cap_bytes:
                continue
            advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            files += 1
            total += st.st_size
        except OSError:
            continue
        finally:
            os.close(fd)
    return {
        "files": files,
        "bytes": total,
        "seconds": round(time.monotonic() - t0, 3),
        "supported": advise is not None,
    }


def start(rec: Recorder, framework: str) -> threading.Thread:
    """Hint the framework's libraries from a daemon thread; the fact library_readahead records what
    was hinted and how long issuing it took."""

    def work() -> None:
        try:
            roots = inventory.package_dirs(FRAMEWORK_PACKAGES.get(framework, FRAMEWORK_PACKAGES["torch"]))
            res = readahead(library_files(roots + inventory.system_dirs()))
        except Exception as e:  # a hint: never a failure of the run
            log(f"library readahead: {type(e).__name__}: {e}")
            return
        rec.fact(library_readahead=res)

    t = threading.Thread(target=work, name="library-readahead", daemon=True)
    t.start()
    return t
