"""What this machine offers a GPU training container: its GPUs and driver (probe.py) and the ways
a container can be given those GPUs (access.py). Feeds resolve, doctor and certify.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envbuilder.host.access import (
        CDI_DIRS,
        AccessMode,
        ModeName,
        find_cdi_specs,
        find_libcuda,
    )
    from envbuilder.host.probe import (
        NVML_BRANDS,
        SMI_QUERY,
        CommandResult,
        GpuInfo,
        GpuProcess,
        HostReport,
        Runner,
        Source,
        Which,
        cuda_version_from_int,
        probe_host,
        probe_nvidia_smi,
        probe_nvml,
        probe_proc,
        run_command,
    )

# The names below are imported from their module on first use (PEP 562), so importing
# envbuilder.host.model (as resolve does) does not load the probes (subprocess, NVML, logging).
_IN_ACCESS = frozenset({"CDI_DIRS", "AccessMode", "ModeName", "find_cdi_specs", "find_libcuda"})


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "access" if name in _IN_ACCESS else "probe"
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "CDI_DIRS",
    "NVML_BRANDS",
    "SMI_QUERY",
    "AccessMode",
    "CommandResult",
    "GpuInfo",
    "GpuProcess",
    "HostReport",
    "ModeName",
    "Runner",
    "Source",
    "Which",
    "cuda_version_from_int",
    "find_cdi_specs",
    "find_libcuda",
    "probe_host",
    "probe_nvidia_smi",
    "probe_nvml",
    "probe_proc",
    "run_command",
]
