"""What a host with two or more GPUs needs for NCCL collectives, as `envbuilder doctor` checks it:
how the GPUs are linked (`nvidia-smi topo -m`), the size of /dev/shm, and the collective settings in
the environment (`collective_env`: the ones certify and run pass into containers).

`gather` reads the host through injectable probes; `checks` is pure and returns (name, status,
detail, fix) rows, as framework.cuda_fit does. The rules are the harness's own (its multi_gpu step
checks the same things inside the image), imported so both say the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envbuilder.harness.multigpu.env import (
    classify_interconnect,
    nccl_env_warnings,
    parse_topo,
    shm_facts,
    shm_warnings,
)
from envbuilder.host import Runner
from envbuilder.host.frameworks import Status

# The host's collective-communication settings, which a container would otherwise silently drop:
# site NCCL tuning (NCCL_SOCKET_IFNAME, NCCL_IB_HCA, ...) and safety switches such as
# NCCL_NVLS_ENABLE=0 / NVSHMEM_DISABLE_NVLS=1 / TORCH_SYMM_MEM_DISABLE_MULTICAST=1, which keep NVLink
# multicast off on hosts where it must stay off. NCCL_VERSION is the image's own label, not a setting.
COLLECTIVE_ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_", "TORCH_SYMM_MEM_", "NVSHMEM_")
COLLECTIVE_ENV_SKIP = frozenset({"NCCL_VERSION"})
TOPO_TIMEOUT_S = 20.0
Row = tuple[str, Status, str, str | None]


def collective_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The host's NCCL / NVSHMEM / torch collective settings, passed into training containers."""
    return {
        k: v
        for k, v in sorted(environ.items())
        if k.startswith(COLLECTIVE_ENV_PREFIXES) and k not in COLLECTIVE_ENV_SKIP
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveFacts:
    gpu_count: int
    topology: dict[str, Any] | None  # parse_topo's {"gpus", "links"}; None when nvidia-smi did not answer
    topology_error: str | None
    shm_mib: int | None  # None when /dev/shm could not be read
    settings: dict[str, str]  # collective_env(environment)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu_count": self.gpu_count,
            "topology": self.topology,
            "topology_error": self.topology_error,
            "shm_mib": self.shm_mib,
            "settings": self.settings,
        }


def gather(gpu_count: int, *, run: Runner, root: Path, env: Mapping[str, str]) -> CollectiveFacts:
    """Read the topology, /dev/shm and the settings. Never raises."""
    res = run(["nvidia-smi", "topo", "-m"], TOPO_TIMEOUT_S)
    topo: dict[str, Any] | None = None
    error = None
    if res.returncode == 0 and res.stdout.strip():
        topo = parse_topo(res.stdout)
    else:
        error = (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}").splitlines()[0]
    shm = shm_facts(str(root / "dev" / "shm")).get("total_mib")
    return CollectiveFacts(
        gpu_count=gpu_count, topology=topo, topology_error=error, shm_mib=shm, settings=collective_env(env)
    )


def checks(f: CollectiveFacts) -> list[Row]:
    """interconnect, shm and nccl settings rows for a host with 2+ GPUs."""
    return [_interconnect(f), *_shm(f), _settings(f)]


def _interconnect(f: CollectiveFacts) -> Row:
    if f.topology is None:
        detail = f"`nvidia-smi topo -m` did not answer ({f.topology_error})"
        return ("interconnect", "warn", detail, "nvidia-smi comes with the driver: put it on PATH")
    gpus = list(range(f.gpu_count))
    kind = classify_interconnect(f.topology, gpus)
    links = f.topology.get("links", {})
    pairs = [
        f"gpu{i}-gpu{j} {links.get(f'GPU{i}', {}).get(f'GPU{j}', '?')}" for i in gpus for j in gpus if i < j
    ]
    shown = ", ".join(pairs[:6]) + (f" and {len(pairs) - 6} more pairs" if len(pairs) > 6 else "")
    if kind == "nvlink":
        return ("interconnect", "ok", f"NVLink between every pair: {shown}", None)
    if kind == "pcie":
        detail = f"PCIe only ({shown}): all-reduce runs at PCIe speed, far below NVLink"
        return ("interconnect", "ok", detail, None)
    if kind == "mixed":
        detail = f"NVLink between some pairs only ({shown}): NCCL rings cross PCIe where it is missing"
        return ("interconnect", "ok", detail, None)
    detail = f"could not read the links of every pair from `nvidia-smi topo -m` ({shown})"
    return ("interconnect", "warn", detail, "run `nvidia-smi topo -m` and check that it lists every GPU")


def _shm(f: CollectiveFacts) -> list[Row]:
    if f.shm_mib is None:
        return []
    said = shm_warnings(f.shm_mib)
    if not said:
        return [("shm", "ok", f"/dev/shm {f.shm_mib} MiB", None)]
    fix = "for native runs, enlarge /dev/shm (mount -o remount,size=8G /dev/shm); containers get their own"
    return [("shm", "warn", said[0], fix)]


def _settings(f: CollectiveFacts) -> Row:
    listed = " ".join(f"{k}={v}" for k, v in f.settings.items())
    warned = nccl_env_warnings(f.settings)
    if warned:
        fix = "unset it unless it works around a known problem on this host"
        return ("nccl settings", "warn", "; ".join(warned), fix)
    if not listed:
        return ("nccl settings", "ok", "none set: NCCL's defaults", None)
    return ("nccl settings", "ok", f"{listed} (certify and run pass these into containers)", None)
