"""The kernel_inventory step: per CUDA library of the installed frameworks (and the nvidia-* wheels
and system CUDA they load), the SASS and PTX, with its ISA, it carries (inventory.py). It fails
when a GPU of this host has no kernel it can run in a framework's own library, naming it (in a
library of the nvidia-* wheels or a system CUDA: a warning, inventory.FRAMEWORK_OWNERS). Whether the
driver can JIT a PTX-only path is judged by `envbuilder certify`, which has the PTX ISA table.
"""

from __future__ import annotations

from typing import Any

from .. import inventory
from ..record import Recorder, StepFailed


def kernel_inventory_step(rec: Recorder, host: dict[str, Any]) -> None:
    with rec.step("kernel_inventory") as st:
        inv = inventory.scan(inventory.package_dirs() + inventory.system_dirs())
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
