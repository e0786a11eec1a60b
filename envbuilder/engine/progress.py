"""Parse BuildKit's `--progress=plain` output into build events (current step, total, cached).

Pure text processing, no Docker: the engine package feeds it the CLI's lines; the CLI renders the events.
The format (moby/buildkit `util/progress/progressui/printer.go`): each vertex is `#N NAME`, then
`#N 1.23 log text`, and ends with `#N DONE 1.2s`, `#N CACHED` or `#N ERROR: ...`. Dockerfile steps
are named `[stage k/n] INSTR ...` (or `[k/n] ...` for single-stage builds with newer buildx).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

LOG_TAIL_LINES = 40

EventKind = Literal["start", "log", "done", "cached", "error"]

_VERTEX = re.compile(r"^#(?P<num>\d+) (?P<rest>.*)$")
_STEP = re.compile(r"^\[(?:(?P<stage>[^\]\s]+) )?(?P<k>\d+)/(?P<n>\d+)\] (?P<instr>.*)$")
_DONE = re.compile(r"^DONE (?P<secs>\d+(?:\.\d+)?)s$")
_LOG = re.compile(r"^(?P<t>\d+\.\d+) (?P<text>.*)$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildEvent:
    """One thing that happened in a build, as the progress display needs it."""

    kind: EventKind
    vertex: int  # BuildKit's #N
    name: str  # "[stage-0 4/6] RUN pip install ..." or "[internal] load build context"
    index: int | None  # k of `[stage k/n]`; None for internal vertices
    total: int | None  # n of `[stage k/n]`
    seconds: float | None = None  # for done
    text: str = ""  # the log line (log) or the error text (error)

    @property
    def is_step(self) -> bool:
        """True for Dockerfile instructions (not BuildKit's internal work)."""
        return self.index is not None


@dataclass(slots=True, kw_only=True)
class StepRecord:
    """What became of one vertex by the end of the build."""

    vertex: int
    name: str
    index: int | None
    total: int | None
    state: Literal["running", "done", "cached", "error"] = "running"
    seconds: float | None = None


@dataclass(slots=True)
class ProgressParser:
    """Feed it lines (`feed`); it returns events and keeps each vertex's state and a log tail."""

    steps: dict[int, StepRecord] = field(default_factory=dict)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_TAIL_LINES))

    def feed(self, raw: str) -> list[BuildEvent]:
        """Parse one line of plain progress output. Never raises: unknown lines go to the tail."""
        line = raw.rstrip("\r\n")
        if line.strip():
            self.tail.append(line)
        m = _VERTEX.match(line)
        if not m:
            return []
        num, rest = int(m["num"]), m["rest"]
        rec = self.steps.get(num)
        if rec is None:
            if _DIGEST.match(rest):  # the vertex's digest line precedes nothing useful
                return []
            rec = _new_record(num, rest)
            self.steps[num] = rec
            return [self._event("start", rec)]
        return self._update(rec, rest)

    def _update(self, rec: StepRecord, rest: str) -> list[BuildEvent]:
        if _DIGEST.match(rest):
            return []
        if rest == "CACHED":
            rec.state = "cached"
            return [self._event("cached", rec)]
        done = _DONE.match(rest)
        if done:
            rec.state = "done"
            rec.seconds = float(done["secs"])
            return [self._event("done", rec, seconds=rec.seconds)]
        if rest.startswith("ERROR"):
            rec.state = "error"
            return [self._event("error", rec, text=rest.partition(":")[2].strip() or rest)]
        log = _LOG.match(rest)
        text = log["text"] if log else rest
        return [self._event("log", rec, text=text)]

    @staticmethod
    def _event(
        kind: EventKind, rec: StepRecord, *, seconds: float | None = None, text: str = ""
    ) -> BuildEvent:
        return BuildEvent(
            kind=kind,
            vertex=rec.vertex,
            name=rec.name,
            index=rec.index,
            total=rec.total,
            seconds=seconds,
            text=text,
        )

    # ------------------------------------------------------------------ summaries

    def dockerfile_steps(self) -> list[StepRecord]:
        """The Dockerfile instructions seen, in step order (internal vertices left out)."""
        recs = [r for r in self.steps.values() if r.index is not None]
        return sorted(recs, key=lambda r: (r.index or 0, r.vertex))

    def failed_step(self) -> StepRecord | None:
        """The first vertex that ended in ERROR, if any."""
        return next((r for r in self.steps.values() if r.state == "error"), None)


def _new_record(num: int, name: str) -> StepRecord:
    step = _STEP.match(name)
    if step:
        return StepRecord(vertex=num, name=name, index=int(step["k"]), total=int(step["n"]))
    return StepRecord(vertex=num, name=name, index=None, total=None)


def finished_step(event: BuildEvent, width: int) -> tuple[str, str] | None:
    """(`CACHED 0.1s` / `done 32.0s` / `FAILED`, the instruction shortened at a word to `width`)
    for a Dockerfile step that ended; None for any other event."""
    if not event.is_step or event.kind not in ("cached", "done", "error"):
        return None
    import textwrap

    took = f" {event.seconds:.1f}s" if event.seconds is not None else ""
    state = {"cached": "CACHED", "done": "done", "error": "FAILED"}[event.kind]
    instr = textwrap.shorten(step_instruction(event.name), width, placeholder=" ...")
    return f"{state}{took}", instr


def step_instruction(name: str) -> str:
    """`[stage-0 4/6] RUN pip install x` -> `RUN pip install x` (the name itself otherwise)."""
    m = _STEP.match(name)
    return m["instr"] if m else name
