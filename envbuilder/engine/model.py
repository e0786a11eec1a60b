"""What the engine returns: envbuilder dataclasses, never docker-py objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from envbuilder.engine.progress import StepRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonInfo:
    server_version: str
    runtimes: tuple[str, ...]  # registered OCI runtimes, e.g. ("runc", "nvidia")
    default_runtime: str
    cdi_spec_dirs: tuple[str, ...]  # where the daemon looks for CDI specs (empty: CDI off)
    storage_driver: str
    id: str = ""  # the daemon's own ID (`docker info` ID): which daemon a tag lives in


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    repo_digests: tuple[str, ...]  # name@sha256:... (empty for a never-pushed/pulled image)
    labels: Mapping[str, str] = field(default_factory=dict)
    env: tuple[str, ...] = ()
    size: int = 0  # bytes, as `docker images` reports

    def named_as(self, ref: str) -> ImageInfo:
        """This image with the tag `ref` names (as typed, or with its implied `:latest`) first among
        its tags: messages then name the image as the user did, not by another tag that shares its
        ID (reproducible builds give two specs that render alike one image ID). Unchanged when
        `ref` is an ID, a digest reference or not one of its tags."""
        tail = ref.rsplit("/", 1)[-1]
        wanted = (ref,) if ":" in tail or "@" in tail else (ref, f"{ref}:latest")
        first = next((t for t in self.tags if t in wanted), None)
        if first is None or self.tags[0] == first:
            return self
        return replace(self, tags=(first, *(t for t in self.tags if t != first)))


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildSecret:
    """A BuildKit secret: `RUN --mount=type=secret,id=ID` sees the file's content, no layer does."""

    id: str
    src: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildResult:
    image_id: str
    seconds: float
    steps: tuple[StepRecord, ...]  # Dockerfile instructions in order, with cached/done state
    log_tail: tuple[str, ...]

    @property
    def cached_steps(self) -> int:
        return sum(1 for s in self.steps if s.state == "cached")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """A finished container: its exit code (124: killed at its time limit), whole stdout and
    stderr, and the CPU time its cgroup had used at the engine's last reading while it ran
    (`cpu_seconds`, from `cpu_samples` readings; None: never read), what the host saw of its
    work without asking the container."""

    exit_code: int
    stdout: str
    stderr: str
    cpu_seconds: float | None = None
    cpu_samples: int = 0


def cpu_reading(value: object) -> int | None:
    """One reading of a container cgroup's CPU time, as every runtime's meter counts it (Docker's
    CpuMeter, Podman's _CpuMeter): nanoseconds as an int >= 0, 0 included (a cgroup that has used no
    CPU yet is a measure: skipped, one that read 0 throughout would leave cpu_seconds None, which
    holds no CPU floor in certify's verdict); anything else (None, a bool, a negative, a float,
    text) is no reading."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachedRun:
    """A container that ran in the foreground: its exit code, the tail of its output as the daemon
    logged it (stdout and stderr interleaved; empty unless asked for, or when the daemon keeps no
    log), and whether the kernel's OOM killer ended it (host memory, not GPU memory)."""

    exit_code: int
    output: str = ""
    oom_killed: bool = False
