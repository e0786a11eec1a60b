"""The only module that talks to Docker: the SDK for ping/inspect/run/push, the BuildKit CLI for builds.

Everything it returns is an envbuilder dataclass; docker-py objects never leak out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import docker
import docker.errors

from envbuilder.errors import DockerUnavailableError

_DAEMON_HINT = (
    "start the Docker daemon (e.g. `sudo systemctl start docker`, or `make services` in a checkout) "
    "or point DOCKER_HOST at a running one"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonInfo:
    server_version: str
    runtimes: tuple[str, ...]  # registered OCI runtimes, e.g. ("runc", "nvidia")
    default_runtime: str
    cdi_spec_dirs: tuple[str, ...]  # where the daemon looks for CDI specs (empty: CDI off)
    storage_driver: str


def _client(timeout: int = 10) -> Any:
    """A docker SDK client from the usual environment. Raises DockerUnavailableError."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerUnavailableError(
            f"cannot reach the Docker daemon: {exc}".splitlines()[0], hint=_DAEMON_HINT
        ) from exc
    return client


def daemon_info() -> DaemonInfo:
    """Ping the daemon and describe it. Raises DockerUnavailableError when it is unreachable."""
    info = _client().info()
    return DaemonInfo(
        server_version=str(info.get("ServerVersion", "")),
        runtimes=tuple(sorted((info.get("Runtimes") or {}).keys())),
        default_runtime=str(info.get("DefaultRuntime", "")),
        cdi_spec_dirs=tuple(info.get("CDISpecDirs") or ()),
        storage_driver=str(info.get("Driver", "")),
    )
