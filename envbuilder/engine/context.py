"""Which files of a project folder a Docker build would see: its `.dockerignore`, matched by the
Docker SDK's own implementation of Docker's rules (docker.utils.build.PatternMatcher, the port
of moby's patternmatcher), so `context:` copies exactly what `docker build DIR` would send."""

from __future__ import annotations

from pathlib import Path

from envbuilder.errors import DockerUnavailableError


def dockerignore_patterns(root: Path) -> list[str]:
    """The patterns of root/.dockerignore, read as the Docker SDK reads them (blank lines and
    `#` comments dropped, whitespace stripped); [] when there is none."""
    path = root / ".dockerignore"
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def included_paths(root: Path) -> list[str]:
    """Every file, folder and symlink under `root` that `.dockerignore` does not exclude, as
    sorted paths relative to `root`. Raises DockerUnavailableError when the SDK is missing."""
    try:
        from docker.utils.build import PatternMatcher
    except ImportError as exc:
        raise DockerUnavailableError(
            f"the docker Python SDK is not installed ({exc})",
            hint="pip install docker (envbuilder depends on it)",
        ) from None

    matcher = PatternMatcher(dockerignore_patterns(root))
    return sorted(str(p) for p in matcher.walk(str(root)))
