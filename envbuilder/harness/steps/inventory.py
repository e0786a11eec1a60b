"""The kernel_inventory step: per CUDA library of the installed frameworks (and the nvidia-* wheels
and system CUDA they load), the SASS and PTX, with its ISA, it carries (inventory.py). It fails
when a GPU of this host has no kernel it can run in a framework's own library, naming it (in a
library of the nvidia-* wheels or a system CUDA: a warning, inventory.FRAMEWORK_OWNERS). Whether the
driver can JIT a PTX-only path is judged by `envbuilder certify`, which has the PTX ISA table.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import inventory
from ..record import Recorder, StepFailed

if TYPE_CHECKING:
    from typing import TypeAlias  # novermin (type checkers only)

Scan: TypeAlias = "Callable[[], dict[str, Any]]"


def scan_now() -> dict[str, Any]:
    return inventory.scan(inventory.package_dirs() + inventory.system_dirs())


def start_scan() -> Scan:
    """The inventory's reading (of the libraries: seconds, most of it disk on a machine that just
    started) begun in a thread now, beside the host step; the returned call waits for it. The
    step then judges it where it always did, before any GPU use. A scan that raised is redone
    inside the step, so its failure is recorded there as before."""
    box: dict[str, Any] = {}

    def work() -> None:
        with contextlib.suppress(Exception):  # the step scans again and records what goes wrong
            box["inv"] = scan_now()

    t = threading.Thread(target=work, name="kernel-inventory", daemon=True)
    t.start()

    def result() -> dict[str, Any]:
        t.join()
        return box["inv"] if "inv" in box else scan_now()

    return result


def kernel_inventory_step(rec: Recorder, host: dict[str, Any], scan: Scan = scan_now) -> None:
    """`scan`: the inventory (start_scan's, begun earlier; by default read now)."""
    with rec.step("kernel_inventory") as st:
        inv = scan()
        st.metrics.update(inv)
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
