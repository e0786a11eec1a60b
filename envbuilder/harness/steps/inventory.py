"""The kernel_inventory step: per CUDA library of the installed frameworks (and the nvidia-* wheels
and system CUDA they load), the SASS and PTX, with its ISA, it carries (inventory.py). It fails
when a GPU of this host has no kernel it can run in a framework's own library, naming it (in a
library of the nvidia-* wheels or a system CUDA: a warning, inventory.FRAMEWORK_OWNERS). Whether the
driver can JIT a PTX-only path is judged by `envbuilder certify`, which has the PTX ISA table.
"""

from __future__ import annotations

import threading
from typing import Any

from .. import inventory
from ..bytecode import bytecode_warnings, package_bytecode
from ..record import Recorder, StepFailed


class InventoryScan:
    """The libraries read in a thread from the harness's start, beside the host step: on a machine
    just started most of the scan is the libraries' first read from disk (13.6 s cold against 0.9 s
    warm, JAX on an H100, 2026-12-06), while the host step mostly waits on the driver and imports.
    The step judges what it read once the host's GPUs are known (`kernel_inventory_step`). Then,
    in the same thread, whether `python_packages` carry compiled bytecode (bytecode.py)."""

    def __init__(self, python_packages: tuple[str, ...] = ()) -> None:
        self._inventory: dict[str, Any] | None = None
        self._error: BaseException | None = None
        self._python_packages = python_packages
        self.bytecode: dict[str, Any] | None = None  # None: not read (an odd package layout)
        self._thread = threading.Thread(target=self._scan, name="kernel-inventory", daemon=True)
        self._thread.start()

    def _scan(self) -> None:
        try:
            self._inventory = inventory.scan(inventory.package_dirs() + inventory.system_dirs())
        except BaseException as e:  # handed to the step, which fails with it
            self._error = e
        try:
            self.bytecode = package_bytecode(self._python_packages)
        except Exception:  # an odd package layout: the step leaves the fact out
            self.bytecode = None

    def result(self) -> dict[str, Any]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._inventory is not None
        return self._inventory


def kernel_inventory_step(rec: Recorder, host: dict[str, Any], scan: InventoryScan | None = None) -> None:
    """`scan`: the one started at the harness's start (None: read the libraries now)."""
    with rec.step("kernel_inventory") as st:
        scan = scan or InventoryScan()
        inv = scan.result()
        st.metrics.update(inv)
        if scan.bytecode is not None:
            st.metrics["bytecode"] = scan.bytecode
            st.warnings += bytecode_warnings(scan.bytecode)
        if inv["truncated"]:
            st.warnings.append(f"stopped after {inv['seconds']} s: the inventory is incomplete")
        st.warnings += [f"unreadable: {e}" for e in inv["errors"]]
        runs: dict[str, dict[str, str]] = {}
        missing = []
        for g in host.get("gpus") or ():
            cc = str(g.get("compute_capability") or "")
            if "." not in cc:
                continue
            major, minor = (int(p) for p in cc.split(".", 1))
            name = f"{g.get('name')} (sm_{major}{minor})"
            runs[name] = inventory.how_covered(inv, (major, minor))
            own = inventory.uncovered(inv, (major, minor), inventory.FRAMEWORK_OWNERS)
            missing += [f"{name}: {lib}" for lib in own]
            st.warnings += [
                f"{name}: no kernel for this GPU in {lib} (not the framework's own library: its GPU steps"
                " decide whether the framework needs it)"
                for lib in inventory.uncovered(inv, (major, minor))
                if lib not in own
            ]
        st.metrics["runs"] = runs
        if missing:
            more = f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""
            raise StepFailed("no kernel this GPU runs in " + "; ".join(missing[:3]) + more)
