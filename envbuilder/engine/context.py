"""Which files of a project folder a Docker build would see: its `.dockerignore`, matched by the
Docker SDK's own implementation of Docker's rules (docker.utils.build.PatternMatcher, the port
of moby's patternmatcher), so `context:` copies exactly what `docker build DIR` would send, less
envbuilder's own outputs (OWN_OUTPUTS): a lock that a build rewrites with the image ID, a
wheelhouse or a report page in the project would change the image on every rebuild."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from envbuilder.errors import DockerUnavailableError

# What envbuilder writes into a project folder, in .dockerignore syntax (docs/project.md). They
# come before the user's own patterns, so that a `!PATTERN` there can still take one back.
OWN_OUTPUTS = (
    "**/*.lock.json",  # `lock` and `build` write SPEC.lock.json; a build records the image ID in it
    "**/*.whl",  # a wheelhouse (`envbuilder wheelhouse LOCK wheels`): installed from the lock
    "**/.*.whl.*.part",  # a wheel being downloaded into one
    "**/envbuilder-report-*.html",  # `report`'s default page, in the current folder
    "**/envbuilder-compare-*.html",  # `report --compare`'s
    "build/*/lock.json",  # `up`'s --out default, build/NAME/
    "build/*/certificate.json",
    "build/*/report.html",
    "**/*.sif",  # `export --sif/--sqsh FILE` and the sidecar it writes beside it
    "**/*.sqsh",
    "**/*.envbuilder.json",
)


def dockerignore_patterns(root: Path) -> list[str]:
    """The patterns of root/.dockerignore, read as the Docker SDK reads them (blank lines and
    `#` comments dropped, whitespace stripped); [] when there is none."""
    path = root / ".dockerignore"
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def included_paths(root: Path, outputs: Iterable[Path] = ()) -> list[str]:
    """Every file, folder and symlink under `root` that a build's context holds, as sorted paths
    relative to `root`: what `docker build root` would send (its .dockerignore), less
    OWN_OUTPUTS (which the user's `!PATTERN` can take back) and less each of `outputs` (files or
    folders this build writes or reads, e.g. its --lock-out or --wheelhouse) that lies under
    `root`. A folder left empty by these exclusions alone (a wheelhouse, `up`'s build/NAME/) is
    left out too; an empty folder of the user's is kept. Raises DockerUnavailableError when the
    SDK is missing."""
    try:
        from docker.utils.build import PatternMatcher
    except ImportError as exc:
        raise DockerUnavailableError(
            f"the docker Python SDK is not installed ({exc})",
            hint="pip install docker (envbuilder depends on it)",
        ) from None

    users = dockerignore_patterns(root)
    sent = sorted(str(p) for p in PatternMatcher(users).walk(str(root)))
    kept = {str(p) for p in PatternMatcher([*OWN_OUTPUTS, *users]).walk(str(root))}
    named = _under(root, outputs)
    kept = {rel for rel in kept if not any(rel == n or rel.startswith(f"{n}/") for n in named)}
    return _without_emptied_folders(root, sent, kept)


def _under(root: Path, paths: Iterable[Path]) -> list[str]:
    """Those of `paths` that lie under `root` (not root itself), relative to it."""
    resolved = root.resolve()
    out = []
    for path in paths:
        try:
            rel = Path(path).resolve().relative_to(resolved)
        except ValueError:
            continue  # outside the project: not in its context anyway
        if rel.parts:
            out.append(rel.as_posix())
    return out


def _without_emptied_folders(root: Path, sent: list[str], kept: set[str]) -> list[str]:
    """`sent` filtered to `kept`, less each real folder that had entries in `sent` and has none
    left in `kept` (deepest first: a folder that held only such folders goes too)."""

    def count(paths: Iterable[str]) -> dict[str, int]:
        n: dict[str, int] = {}
        for rel in paths:
            parent = rel.rpartition("/")[0] if "/" in rel else ""
            n[parent] = n.get(parent, 0) + 1
        return n

    had, has = count(sent), count(kept)
    for rel in sorted(kept, key=lambda r: r.count("/"), reverse=True):
        if had.get(rel, 0) and not has.get(rel, 0) and not (root / rel).is_symlink():
            kept.discard(rel)
            parent = rel.rpartition("/")[0] if "/" in rel else ""
            has[parent] -= 1
    return [rel for rel in sent if rel in kept]
