"""The only package that talks to Docker (ruff bans `import docker` elsewhere).

Everything it returns is an envbuilder dataclass; docker-py objects never leak out.
images.py: the daemon, images and BuildKit builds. containers.py: running containers.
"""

from envbuilder.engine.containers import ContainerRun, run_attached, run_container, ulimit_refusal
from envbuilder.engine.images import (
    BUILD_NETWORKS,
    BuildKitCli,
    BuildResult,
    BuildSecret,
    DaemonInfo,
    DockerEngine,
    ImageInfo,
    RunResult,
    daemon_info,
    find_buildkit_cli,
)

__all__ = [
    "BUILD_NETWORKS",
    "BuildKitCli",
    "BuildResult",
    "BuildSecret",
    "ContainerRun",
    "DaemonInfo",
    "DockerEngine",
    "ImageInfo",
    "RunResult",
    "daemon_info",
    "find_buildkit_cli",
    "run_attached",
    "run_container",
    "ulimit_refusal",
]
