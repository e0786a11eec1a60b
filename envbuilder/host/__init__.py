"""What this machine offers a GPU training container: its GPUs and driver (probe.py) and the ways
a container can be given those GPUs (access.py). Feeds resolve, doctor and certify.
"""

from envbuilder.host.access import (
    CDI_DIRS,
    CONTAINER_LIB_DIR,
    AccessMode,
    ModeName,
    find_cdi_specs,
    find_libcuda,
    gpu_access_modes,
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

__all__ = [
    "CDI_DIRS",
    "CONTAINER_LIB_DIR",
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
    "gpu_access_modes",
    "probe_host",
    "probe_nvidia_smi",
    "probe_nvml",
    "probe_proc",
    "run_command",
]
