"""The Docker runtime: the Docker daemon through engine/DockerEngine, and Docker's GPU access
modes, in `auto` order:

- toolkit: the NVIDIA Container Toolkit's device request (`--gpus all`, or the selected GPUs);
- cdi: the CDI devices nvidia.com/gpu=all (or =INDEX each) that a CDI spec defines;
- devices: the /dev/nvidia* nodes, the driver's libraries (read-only, on LD_LIBRARY_PATH) and its
  programs (nvidia-smi, ...), mounted as the Container Toolkit would, with no toolkit at all.

Which of them this host offers is `gpu_access_modes` here (from host/'s facts: the nvidia runtime,
CDI specs, device nodes, the driver's libraries); what each hands a container is `grant`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from envbuilder.engine.container import ContainerSpec, GpuRequest, Mount, docker_flags, docker_run_argv
from envbuilder.engine.interface import Engine
from envbuilder.engine.model import DaemonInfo
from envbuilder.errors import EnvbuilderError
from envbuilder.host.access import CDI_DIRS, AccessMode, find_cdi_specs, find_libcuda
from envbuilder.host.driver_files import CONTAINER_BIN_DIR, find_programs
from envbuilder.host.probe import Runner, Which, run_command
from envbuilder.runtime.base import Availability, GpuGrant, ImageStoreRuntime
from envbuilder.runtime.gpu_selection import GpuSelection
from envbuilder.typed import ascii_int

CDI_KIND = "nvidia.com/gpu"
CDI_ALL_GPUS = f"{CDI_KIND}=all"
# devices mode: the driver's libraries go here, mounted over nothing in the container, so they never
# shadow the image's own libraries (unless their host folder can be mounted whole at its own path).
CONTAINER_LIB_DIR = "/usr/local/nvidia/lib64"
_GPU_NODE = re.compile(r"^/dev/nvidia[0-9]+$")
_SYSTEM_LIB_RE = re.compile(r"^/(usr/)?lib(32|64)?(/[a-z0-9_]+-linux-gnu[a-z]*)?/?$")
_DRIVER_LIB_RE = re.compile(r"^lib(cuda|nvidia-[a-z0-9-]+|cudadebugger|nvcuvid)\.so(\.[\d.]+)?$")


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
        (p for p in dev.glob("nvidia[0-9]*") if ascii_int(p.name[6:]) is not None),
        key=lambda p: int(p.name[6:]),
    )
    extras = [dev / n for n in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")]
    nodes = tuple(f"/dev/{p.name}" for p in [*numbered, *extras] if p.exists())
    missing = [n for n in ("/dev/nvidiactl", "/dev/nvidia-uvm") if n not in nodes]
    missing += [] if numbered else ["/dev/nvidia0"]
    lib_dir = find_libcuda(run=run, which=which, env=env, root=root)
    libs: tuple[str, ...] = ()
    if lib_dir:
        folder = root / lib_dir.lstrip("/")
        libs = tuple(sorted(p.name for p in folder.glob("lib*.so*") if _DRIVER_LIB_RE.fullmatch(p.name)))
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


def daemon_modes(daemon: DaemonInfo) -> tuple[AccessMode, ...]:
    """The access modes this host offers with this daemon (gpu_access_modes)."""
    return gpu_access_modes(
        docker_reachable=True, runtimes=daemon.runtimes, cdi_spec_dirs=daemon.cdi_spec_dirs
    )


def docker_grant(mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
    """What a Docker mode hands a container: every GPU, or only those of `selection` (`--gpus`).
    toolkit: `--gpus all` (or the selected UUIDs/indexes, which the Toolkit turns into
    NVIDIA_VISIBLE_DEVICES); cdi: the nvidia.com/gpu=all device (or nvidia.com/gpu=INDEX each,
    the names nvidia-ctk and `envbuilder gpu cdi-spec` both write); devices: every /dev/nvidia*
    node (or the control nodes and the selected GPUs' /dev/nvidiaN only), the driver's library
    folder, read-only, on LD_LIBRARY_PATH, and the driver's programs (nvidia-smi, ...) read-only
    at /usr/bin, as the Container Toolkit mounts them, with NVIDIA_VISIBLE_DEVICES and
    NVIDIA_DRIVER_CAPABILITIES set as it would. A library folder that is a system folder (e.g.
    /usr/lib/x86_64-linux-gnu) is not mounted whole, which would shadow the image's libc: each
    driver library is mounted into CONTAINER_LIB_DIR instead. Raises NoGpuError (devices mode: a
    selected GPU without a device node)."""
    if mode.name == "toolkit":
        return GpuGrant(gpus=GpuRequest(device_ids=selection.ids) if selection else GpuRequest())
    if mode.name == "cdi":
        names = tuple(f"{CDI_KIND}={i}" for i in selection.indexes) if selection else (CDI_ALL_GPUS,)
        return GpuGrant(cdi_devices=names)
    devices = mode.devices
    if selection is not None:  # the control nodes, and the selected GPUs' nodes only
        devices = (*(d for d in devices if not _GPU_NODE.match(d)), *selection.node_paths())
    programs = tuple(
        Mount(source=host, target=f"{CONTAINER_BIN_DIR}/{name}", read_only=True)
        for name, host in mode.programs
    )
    # As the Container Toolkit would set them (the image's CUDA reads them).
    visible = {
        "NVIDIA_VISIBLE_DEVICES": ",".join(selection.ids) if selection else "all",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
    }
    if not mode.lib_dir:
        return GpuGrant(devices=devices, mounts=programs, env=visible)
    if not _SYSTEM_LIB_RE.fullmatch(mode.lib_dir):
        mounts: tuple[Mount, ...] = (Mount(source=mode.lib_dir, target=mode.lib_dir, read_only=True),)
        lib_path = mode.lib_dir
    else:
        mounts = tuple(
            Mount(source=f"{mode.lib_dir}/{lib}", target=f"{CONTAINER_LIB_DIR}/{lib}", read_only=True)
            for lib in mode.driver_libs
        )
        lib_path = CONTAINER_LIB_DIR
    return GpuGrant(
        devices=devices, mounts=(*mounts, *programs), env={"LD_LIBRARY_PATH": lib_path, **visible}
    )


def grant_docker_flags(grant: GpuGrant) -> tuple[str, ...]:
    """The `docker run` flags of a grant alone (what `doctor` shows for each mode)."""
    bare = ContainerSpec(
        image="-",
        network=None,
        gpus=grant.gpus,
        devices=grant.devices,
        cdi_devices=grant.cdi_devices,
        mounts=grant.mounts,
        env=grant.env,
    )
    return tuple(docker_flags(bare))


class DockerRuntime(ImageStoreRuntime):
    """Docker: images in the daemon's store; GPUs through toolkit, cdi or devices."""

    name = "docker"
    modes: tuple[str, ...] = ("toolkit", "cdi", "devices")
    runs = "image"
    store = "the daemon's store"

    def __init__(self, engine: Engine | None = None) -> None:
        self._engine = engine

    def engine(self) -> Engine:
        if self._engine is None:
            import envbuilder.engine  # its DockerEngine, looked up when first needed (tests replace it)

            self._engine = envbuilder.engine.DockerEngine()
        return self._engine

    def available(self) -> Availability:
        try:
            info = self.engine().daemon_info()
        except EnvbuilderError as exc:
            return Availability(ok=False, reason=exc.message)
        return Availability(ok=True, reason=f"Docker {info.server_version}")

    def probe_modes(self) -> tuple[AccessMode, ...]:
        try:
            daemon = self.engine().daemon_info()
        except EnvbuilderError:
            return gpu_access_modes(docker_reachable=False)
        return daemon_modes(daemon)

    def grant(self, mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
        return docker_grant(mode, selection)

    def mode_flags(self, mode: AccessMode) -> tuple[str, ...]:
        return grant_docker_flags(docker_grant(mode)) if mode.available else ()

    def argv(self, spec: ContainerSpec) -> list[str]:
        return docker_run_argv(spec)
