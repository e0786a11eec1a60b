"""The engine interface: what build, certify and run need from a container engine. DockerEngine
(docker_engine.py) is the real one; unit tests use tests/unit/fake_engine.py's FakeEngine."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from envbuilder.engine.buildkit import BuildKitCli
from envbuilder.engine.container import ContainerSpec, Ulimit
from envbuilder.engine.model import AttachedRun, BuildResult, BuildSecret, DaemonInfo, ImageInfo, RunResult
from envbuilder.engine.progress import BuildEvent


class Engine(Protocol):
    """Every method raises DockerUnavailableError when the daemon cannot be reached."""

    # ------------------------------------------------------------------ daemon
    def ping(self) -> None: ...

    def daemon_info(self) -> DaemonInfo: ...

    # ------------------------------------------------------------------ builds
    def buildkit_cli(self) -> BuildKitCli:
        """The BuildKit-capable docker CLI. Raises BuildKitMissingError."""
        ...

    def build(
        self,
        context: Path,
        dockerfile: Path,
        *,
        secrets: Sequence[BuildSecret] = (),
        build_args: Mapping[str, str] | None = None,
        build_contexts: Mapping[str, Path] | None = None,
        no_cache: bool = False,
        network: str | None = None,
        on_event: Callable[[BuildEvent], None] | None = None,
        source_date_epoch: int | None = None,
    ) -> BuildResult:
        """An untagged image; with `source_date_epoch`, built reproducibly (the same inputs, the same
        image ID). Raises BuildKitMissingError, BuildFailedError; Ctrl-C stops it."""
        ...

    def prune_build_cache(self) -> int:
        """Drop all build cache; bytes reclaimed."""
        ...

    # ------------------------------------------------------------------ images
    def inspect_image(self, ref: str) -> ImageInfo | None:
        """The local image `ref` (name, name@digest or ID), or None."""
        ...

    def list_images(self, repository: str) -> tuple[ImageInfo, ...]:
        """The local images tagged in `repository` (name without a tag)."""
        ...

    def tag(self, image: str, ref: str) -> None: ...

    def remove_image(self, ref: str, *, force: bool = False) -> bool:
        """False when it was not there."""
        ...

    def push(self, ref: str) -> str:
        """The pushed manifest's digest (sha256:...). Raises RegistryError."""
        ...

    def pull(self, ref: str) -> ImageInfo:
        """Raises RegistryError."""
        ...

    def save(self, ref: str, dest: Path) -> Path:
        """`docker save` into the tar file `dest`."""
        ...

    # ------------------------------------------------------------------ containers
    def run(
        self,
        spec: ContainerSpec,
        *,
        on_stderr: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Run to the end and collect its output; stderr lines go to `on_stderr` as they come.
        Removed in every case; killed after `timeout_s` (exit code 124). A non-zero exit is
        returned, not raised; a container the daemon refuses raises DockerUnavailableError."""
        ...

    def run_attached(
        self, spec: ContainerSpec, *, stop_timeout_s: float = 10.0, output_lines: int = 0
    ) -> AttachedRun:
        """Run in the foreground with this process's terminal (stdin when spec.interactive); its
        exit code, and the last `output_lines` lines of its output as the daemon logged them (read
        before the container is removed). Ctrl-C reaches it as SIGINT (stopped after
        `stop_timeout_s`), then re-raised. Removed in every case. Raises DockerUnavailableError
        when it could not be started."""
        ...

    def container_pids(self, name: str) -> tuple[int, ...]:
        """The host PIDs of the processes of the running container `name` (what `docker top`
        lists); empty when it is not (or no longer) running."""
        ...

    def ulimit_refusal(self, image: str, ulimits: Sequence[Ulimit]) -> str | None:
        """The runtime's refusal of these ulimits (rootless or nested Docker cannot raise
        RLIMIT_MEMLOCK), or None when it accepts them."""
        ...
