"""Which containers are envbuilder's, and which of those a crashed run left behind.

Every container the engine creates carries OWNER_LABEL (lifecycle.owner_mark: host, pid and
start time of the envbuilder process), DATA_LABEL (data_mark: which data folder's envbuilder made
it) and PURPOSE_LABEL, and a name `envbuilder-PURPOSE-XXXXXXXX`. A container of this data folder
whose owner no longer runs on this host is a leftover (the run was SIGKILLed, or the daemon went
away mid-command): `leftovers` picks them, the engine's janitor removes them. Another data folder's
containers (another user on a shared Docker daemon, or the same user's other envbuilder setup)
are never this janitor's: their own envbuilder removes and records them, in their own log.

A container may also carry the line its owner meant to write when it ended (RECORD_LABEL) and the
JSONL log it goes to (LOG_LABEL): `envbuilder run` does, so a run whose client was SIGKILLed is
still recorded, by the janitor that removes its container (`orphan_record`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envbuilder.lifecycle import owner_alive, owner_mark
from envbuilder.resources import user_data_dir

OWNER_LABEL = "io.envbuilder.owner"
PURPOSE_LABEL = "io.envbuilder.purpose"
DATA_LABEL = "io.envbuilder.data"  # data_mark() of the data folder whose envbuilder made it
LOG_LABEL = "io.envbuilder.log"  # the JSONL file the container's run is recorded in
RECORD_LABEL = "io.envbuilder.record"  # that run's record (a JSON object), finished by whoever ends it
ORPHANED = "orphaned"  # the outcome the janitor records: the client went away, the container stayed
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
    if not _PURPOSE_RE.fullmatch(purpose):  # not match: `$` also matches before a final newline
        raise ValueError(f"container purpose {purpose!r} is not a short lower-case word")
    return f"envbuilder-{purpose}-{secrets.token_hex(4)}"


def data_mark(data_dir: Path | None = None) -> str:
    """The identity of an envbuilder data folder (`data_dir`, else ENVBUILDER_DATA_DIR's or the
    default): 16 hex digits of the SHA-256 of its resolved path. Two users' folders differ; one
    folder reached through a symlink is the same folder."""
    path = os.path.realpath(data_dir if data_dir is not None else user_data_dir())
    return hashlib.sha256(os.fsencode(path)).hexdigest()[:16]


def owner_labels(purpose: str, labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels a new container gets: its own, then the owner mark, the data folder's mark and
    the purpose."""
    return {**dict(labels or {}), OWNER_LABEL: owner_mark(), DATA_LABEL: data_mark(), PURPOSE_LABEL: purpose}


def leftovers(
    containers: Iterable[OwnedContainer],
    alive: Callable[[str], bool | None] = owner_alive,
    *,
    data: str | None = None,
) -> list[OwnedContainer]:
    """The containers of data folder `data` (default: this one's data_mark) whose owner process is
    gone from this host. Never those of a live owner, of another host, with a malformed mark, of
    another data folder, or without a data mark (made before containers carried one: whose they
    are cannot be told)."""
    data = data_mark() if data is None else data
    return [
        c
        for c in containers
        if c.labels.get(DATA_LABEL) == data and alive(c.labels.get(OWNER_LABEL, "")) is False
    ]


def log_is_ours(log: Path, data_dir: Path | None = None) -> bool:
    """Is `log` a file directly in this data folder (`data_dir`, else the user's)? The janitor
    writes an orphan's line only there: the path comes from a container label, which anyone who
    can reach the daemon can set."""
    folder = data_dir if data_dir is not None else user_data_dir()
    return os.path.realpath(Path(log).parent) == os.path.realpath(folder)


def record_labels(log: Path, record: Mapping[str, Any]) -> dict[str, str]:
    """The labels that let a janitor finish a run's log line if its owner dies (a SIGKILL)."""
    return {LOG_LABEL: str(log), RECORD_LABEL: json.dumps(dict(record), sort_keys=True, allow_nan=False)}


def orphan_record(
    c: OwnedContainer, state: Mapping[str, Any], *, now: datetime | None = None
) -> tuple[Path, dict[str, Any]] | None:
    """The log line for a leftover that carries a record (record_labels), as the janitor that
    removes it writes it: outcome `orphaned`, the job's exit code when it had ended (else 137:
    the removal kills it), its seconds from Docker's StartedAt to FinishedAt (or now), and the
    container's status. None when the container carries no (readable) record."""
    log, raw = c.labels.get(LOG_LABEL), c.labels.get(RECORD_LABEL)
    if not log or not raw:
        return None
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):  # a label nested past the interpreter's stack
        return None
    if not isinstance(record, dict):
        return None
    ended = c.status == "exited"
    started = _docker_time(state.get("StartedAt"))
    finished = _docker_time(state.get("FinishedAt")) if ended else now or datetime.now(timezone.utc)
    seconds = round((finished - started).total_seconds(), 3) if started and finished else None
    exit_code = state.get("ExitCode")  # an int; a true, 3.0 or "3" is no exit code (137 then)
    code = exit_code if ended and isinstance(exit_code, int) and not isinstance(exit_code, bool) else 137
    return Path(log), {
        **record,
        "outcome": ORPHANED,
        "exit_code": code,
        "seconds": seconds if seconds is None or seconds >= 0 else None,
        "container_status": c.status,
        "recorded_by": "janitor",
    }


_DOCKER_TIME_RE = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?(Z|[+-][0-9]{2}:[0-9]{2})?",
    re.ASCII,
)


def _docker_time(text: object) -> datetime | None:
    """Docker's RFC 3339 time with nanoseconds (`2026-12-01T16:00:00.123456789Z`), in UTC; an
    offset is honoured (an engine may write the host's own zone: Podman's compatible API,
    podman#10267; testcontainers-java#3055 met `+02:00`), none read as UTC. None for the zero
    time (never started) or anything unreadable."""
    if not isinstance(text, str) or text.startswith("0001-"):
        return None
    m = _DOCKER_TIME_RE.fullmatch(text)
    if m is None:
        return None
    head, frac, zone = m.groups()
    offset = "+00:00" if zone in (None, "Z") else zone
    try:
        when = datetime.fromisoformat(head + (f".{frac[:6]}" if frac else "") + offset)
        return when.astimezone(timezone.utc)
    except (ValueError, OverflowError):  # February 30; 9999-12-31T23:00:00-05:00 is past year 9999 in UTC
        return None
