"""Which containers are envbuilder's, and which of those a crashed run left behind.

Every container the engine creates carries OWNER_LABEL (lifecycle.owner_mark: host, pid and
start time of the envbuilder process) and PURPOSE_LABEL, and a name `envbuilder-PURPOSE-XXXXXXXX`.
A container whose owner no longer runs on this host is a leftover (the run was SIGKILLed, or the
daemon went away mid-command): `leftovers` picks them, the engine's janitor removes them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from envbuilder.lifecycle import owner_alive, owner_mark

OWNER_LABEL = "io.envbuilder.owner"
PURPOSE_LABEL = "io.envbuilder.purpose"
_PURPOSE_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$", re.ASCII)


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnedContainer:
    """A container as the janitor sees it: its ID, name, status and labels."""

    id: str
    name: str
    status: str  # created | running | exited | ...
    labels: Mapping[str, str]


def container_name(purpose: str) -> str:
    """`envbuilder-PURPOSE-XXXXXXXX`: a name `docker ps` shows as ours. Raises ValueError for a
    purpose that is not a short lower-case word."""
    if not _PURPOSE_RE.match(purpose):
        raise ValueError(f"container purpose {purpose!r} is not a short lower-case word")
    return f"envbuilder-{purpose}-{secrets.token_hex(4)}"


def owner_labels(purpose: str, labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels a new container gets: its own, then the owner mark and the purpose."""
    return {**dict(labels or {}), OWNER_LABEL: owner_mark(), PURPOSE_LABEL: purpose}


def leftovers(
    containers: Iterable[OwnedContainer], alive: Callable[[str], bool | None] = owner_alive
) -> list[OwnedContainer]:
    """The containers whose owner process is gone from this host (never those of a live owner, of
    another host, or with a malformed mark)."""
    return [c for c in containers if alive(c.labels.get(OWNER_LABEL, "")) is False]
