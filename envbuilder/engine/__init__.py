"""The only package that talks to Docker (ruff bans `import docker` elsewhere).

interface.py: `Engine`, the one interface build, certify and run use. docker_engine.py: DockerEngine,
its real implementation. container.py: ContainerSpec, the typed container that certify and run
build and the engine alone turns into the Docker call. buildkit.py: BuildKit builds through the
docker CLI. model.py: what the engine returns (envbuilder dataclasses; docker-py objects never leak
out). progress.py: BuildKit's plain progress, parsed.
"""

from envbuilder.engine.buildkit import BUILD_NETWORKS, BuildKitCli, find_buildkit_cli
from envbuilder.engine.container import (
    ContainerSpec,
    GpuRequest,
    Mount,
    PortBinding,
    Ulimit,
    Volume,
    docker_run_argv,
)
from envbuilder.engine.docker_engine import DockerEngine
from envbuilder.engine.interface import Engine
from envbuilder.engine.model import AttachedRun, BuildResult, BuildSecret, DaemonInfo, ImageInfo, RunResult

__all__ = [
    "BUILD_NETWORKS",
    "AttachedRun",
    "BuildKitCli",
    "BuildResult",
    "BuildSecret",
    "ContainerSpec",
    "DaemonInfo",
    "DockerEngine",
    "Engine",
    "GpuRequest",
    "ImageInfo",
    "Mount",
    "PortBinding",
    "RunResult",
    "Ulimit",
    "Volume",
    "docker_run_argv",
    "find_buildkit_cli",
]
