"""The container spec: one typed value for what to run and with what, built by certify and run and
turned into the Docker call by the engine alone (SDK arguments, or `docker create` flags).

`docker_flags` is its one rendering as docker CLI flags: what `envbuilder run` hands `docker
create`, and what certificates record as the `docker run` equivalent (`docker_run_argv`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

# A fully qualified CDI device name, `vendor/class=name` (CDI spec, "Fully-qualified device name";
# https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md).
_VOLUME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # Docker's rule for volume names
_CDI_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9_-]*=[A-Za-z0-9][A-Za-z0-9_.:-]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    """A bind mount of a host path."""

    source: str  # absolute host path
    target: str  # absolute container path
    read_only: bool = False

    def __post_init__(self) -> None:
        if not (self.source.startswith("/") and self.target.startswith("/")):
            raise ValueError(f"bind mount paths must be absolute: {self.source!r} -> {self.target!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Volume:
    """A named volume of the engine (docker/podman `--mount type=volume`): created empty on first
    use, kept across containers. Mounted over a folder the image has, it starts with that folder's
    owner and content (both engines copy them in), so the image's own user can write to it."""

    name: str
    target: str  # absolute container path

    def __post_init__(self) -> None:
        if not _VOLUME_NAME.match(self.name):
            raise ValueError(
                f"{self.name!r} is not a volume name (letters, digits, _.-; a letter or digit first)"
            )
        if not self.target.startswith("/"):
            raise ValueError(f"volume target must be absolute: {self.target!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Ulimit:
    name: str  # memlock, stack, nofile, ...
    soft: int  # -1: unlimited
    hard: int


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuRequest:
    """A device request served by the NVIDIA Container Toolkit: Docker's `--gpus`. No ids and
    count -1 is `--gpus all`."""

    count: int = -1
    device_ids: tuple[str, ...] = ()  # GPU indexes or UUIDs; when given, count is ignored
    capabilities: tuple[str, ...] = ("gpu",)

    def cli_value(self) -> str:
        """The value of docker's --gpus. The CLI reads it as CSV, so a list of several devices is
        quoted (`--gpus '"device=0,2"'`, as Docker's documentation writes it)."""
        if len(self.device_ids) > 1:
            return '"device=' + ",".join(self.device_ids) + '"'
        if self.device_ids:
            return "device=" + self.device_ids[0]
        return "all" if self.count < 0 else str(self.count)


@dataclass(frozen=True, slots=True, kw_only=True)
class PortBinding:
    """A published port: docker's `-p [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/PROTO]`."""

    container_port: int
    protocol: str = "tcp"  # tcp | udp | sctp
    host_port: int | None = None  # None: the daemon picks a free one
    host_ip: str | None = None  # None: every address

    def cli_value(self) -> str:
        port = f"{self.container_port}/{self.protocol}"
        host_port = str(self.host_port) if self.host_port is not None else ""
        if self.host_ip is None:
            return f"{host_port}:{port}" if host_port else port
        ip = f"[{self.host_ip}]" if ":" in self.host_ip else self.host_ip
        return f"{ip}:{host_port}:{port}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerSpec:
    """Everything a container is created with. Frozen (env and labels are read-only mappings);
    derive a variant with dataclasses.replace."""

    image: str  # reference or ID
    command: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] | None = None  # None: the image's own
    env: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[str, ...] = ()  # host device nodes, given at the same path (rwm)
    cdi_devices: tuple[str, ...] = ()  # fully qualified CDI names, e.g. nvidia.com/gpu=all
    gpus: GpuRequest | None = None  # the Container Toolkit's device request
    gpu_flags: tuple[str, ...] = ()  # a command-line runtime's own GPU flags (Apptainer's --nv)
    mounts: tuple[Mount, ...] = ()
    volumes: tuple[Volume, ...] = ()  # named volumes (the image runtimes only: runtime/base.py)
    ulimits: tuple[Ulimit, ...] = ()
    shm_size: int | None = None  # bytes; None: the daemon's default (or the host's with ipc=host)
    network: str | None = "none"  # None: the daemon's default network
    ports: tuple[PortBinding, ...] = ()  # published ports (needs a network other than none/host)
    ipc: str | None = None  # private | shareable | host; None: the daemon's default
    user: str | None = None
    workdir: str | None = None
    name: str | None = None  # None: the engine names it envbuilder-<purpose>-<random>
    purpose: str = "job"  # what it is for (certify, run, pip-freeze, ...): its name and label say it
    labels: Mapping[str, str] = field(default_factory=dict)
    security_opt: tuple[str, ...] = ()  # docker --security-opt values, e.g. seccomp=unconfined
    interactive: bool = False  # keep stdin open (attached runs)
    tty: bool = False  # allocate a terminal (attached runs)

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "labels", MappingProxyType(dict(self.labels)))
        for name in self.cdi_devices:
            if not _CDI_NAME.match(name):
                raise ValueError(f"{name!r} is not a fully qualified CDI device name (vendor/class=name)")
        for path in self.devices:
            if not path.startswith("/"):
                raise ValueError(f"device {path!r} is not an absolute host path")

    def without_ulimit(self, name: str) -> ContainerSpec:
        """This spec without the ulimit `name` (the daemon's default applies)."""
        return replace(self, ulimits=tuple(u for u in self.ulimits if u.name != name))


def docker_flags(spec: ContainerSpec) -> list[str]:
    """The docker CLI flags (`docker create`/`docker run`) that create this container, without the
    image and command. Environment and labels are sorted, so the same spec gives the same line."""
    argv: list[str] = []
    if spec.name:
        argv += ["--name", spec.name]
    for k, v in sorted(spec.labels.items()):
        argv += ["--label", f"{k}={v}"]
    argv += ["--interactive"] if spec.interactive else []
    argv += ["--tty"] if spec.tty else []
    argv += ["--workdir", spec.workdir] if spec.workdir else []
    argv += ["--ipc", spec.ipc] if spec.ipc else []
    argv += ["--user", spec.user] if spec.user else []
    argv += ["--network", spec.network] if spec.network else []
    for p in spec.ports:
        argv += ["-p", p.cli_value()]
    argv += ["--shm-size", str(spec.shm_size)] if spec.shm_size else []
    for opt in spec.security_opt:
        argv += ["--security-opt", opt]
    for u in spec.ulimits:
        argv += ["--ulimit", f"{u.name}={u.soft}:{u.hard}"]
    if spec.gpus is not None:
        argv += ["--gpus", spec.gpus.cli_value()]
    for d in (*spec.devices, *spec.cdi_devices):
        argv += ["--device", d]
    for m in spec.mounts:
        argv += ["-v", f"{m.source}:{m.target}" + (":ro" if m.read_only else "")]
    for vol in spec.volumes:
        argv += ["--mount", f"type=volume,source={vol.name},target={vol.target}"]
    for k, v in sorted(spec.env.items()):
        argv += ["-e", f"{k}={v}"]
    if spec.entrypoint is not None:
        argv += ["--entrypoint", spec.entrypoint[0] if spec.entrypoint else ""]
    return argv


def docker_arguments(spec: ContainerSpec) -> list[str]:
    """The image and what it runs, after the flags: the entrypoint's remaining words (the CLI's
    --entrypoint takes one), then the command."""
    rest = list(spec.entrypoint[1:]) if spec.entrypoint else []
    return [spec.image, *rest, *spec.command]


def docker_run_argv(spec: ContainerSpec) -> list[str]:
    """The equivalent `docker run --rm` command line (recorded in certificates, shown to users)."""
    return ["docker", "run", "--rm", *docker_flags(spec), *docker_arguments(spec)]
