"""Parse BuildKit's progress output into build events (current step, total, cached).

Pure text processing, no Docker: the engine package feeds it the CLI's lines; the CLI renders the events.
Two formats. `plain` (moby/buildkit `util/progress/progressui/printer.go`, the only one Docker 20.10's
client has): each vertex is `#N NAME`, then `#N 1.23 log text`, and ends with `#N DONE 1.2s`,
`#N CACHED` or `#N ERROR: ...`; a vertex's header is printed again when its output resumes, and
a vertex shared by two bake targets is printed under each target's name and finished once per
target. `rawjson` (buildx 0.13+): one JSON SolveStatus per message, whose `vertexes` list names a
target's whole graph before it runs. Dockerfile steps are named `[PREFIX k/n] INSTR ...`, PREFIX
being the stage (`stage-0`, `base`), for bake the target first (`a`, `a base`), or absent.

One numbering (issue 13): a step's counter is its Dockerfile position k over the largest n seen
for its prefix (rawjson knows it before the first step ends), and each vertex ends once: the
first DONE/CACHED/ERROR is the event, a repeat under another name or a second CACHED is not.
"""

from __future__ import annotations

import base64
import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from envbuilder.errors import LOG_TAIL_LINES

EventKind = Literal["start", "log", "done", "cached", "error"]
EndState = Literal["done", "cached", "error"]
ProgressFormat = Literal["plain", "rawjson"]

_VERTEX = re.compile(r"^#(?P<num>\d+) (?P<rest>.*)$")
# The name of the event the engine sends while it loads an exported image (DockerEngine._load).
LOAD_VERTEX = "loading the image into the engine's daemon"
_STEP = re.compile(r"^\[(?:(?P<prefix>[^\]]*?) )?(?P<k>\d+)/(?P<n>\d+)\] (?P<instr>.*)$")
# A log chunk without a final newline runs into the vertex's next line: `#8 0.520 x#8 DONE 0.5s`
_GLUED = re.compile(
    r"^(?P<log>#(?P<num>\d+) .*?)(?P<end>#(?P=num) (?:DONE \d+(?:\.\d+)?s|CACHED|ERROR\b.*))$"
)
_NAMED = re.compile(r"^\[[^\]]*\] ")  # a vertex header printed again: `[...] NAME`
_DEFAULT_STAGE = "stage-0"  # BuildKit's name of a single-stage Dockerfile's only stage
_MAX_JSON_LINES = 20_000  # one rawjson message never runs longer; past it the buffer is dropped
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
    total: int | None  # the step's group's step count (ProgressParser._count)
    seconds: float | None = None  # for done
    text: str = ""  # the log line (log) or the error text (error)
    group: str = ""  # the target or stage the counter counts in; "" for a single-stage build

    @property
    def is_step(self) -> bool:
        """True for Dockerfile instructions (not BuildKit's internal work)."""
        return self.index is not None

    @property
    def is_export(self) -> bool:
        """BuildKit's export of the image (`exporting to image`, `exporting to docker image
        format`) or the engine's load of it (LOAD_VERTEX): after the last step, and the longest
        part of a reproducible build (rewriting a 1 GB image's file times: about 100 s)."""
        return self.index is None and self.name.startswith(("exporting to ", LOAD_VERTEX))

    @property
    def is_shown(self) -> bool:
        """What a progress display shows a line for: a Dockerfile step or the export."""
        return self.is_step or self.is_export

    @property
    def counter(self) -> str:
        """`[k/n]`, or `[GROUP k/n]` when the build has several (bake targets, named stages);
        `[image]` for the export."""
        return "[image]" if self.is_export else format_counter(self.group, self.index, self.total)


@dataclass(slots=True, kw_only=True)
class StepRecord:
    """What became of one vertex by the end of the build."""

    vertex: int
    name: str
    index: int | None
    total: int | None
    state: Literal["running", "done", "cached", "error"] = "running"
    seconds: float | None = None
    group: str = ""
    aliases: tuple[str, ...] = ()  # the names it was printed under too (a vertex bake targets share)


@dataclass(slots=True)
class ProgressParser:
    """Feed it lines (`feed`); it returns events and keeps each vertex's state and a log tail.
    `fmt` is the client's `--progress` format: `plain`, or `rawjson` (buildx)."""

    fmt: ProgressFormat = "plain"
    steps: dict[int, StepRecord] = field(default_factory=dict)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_TAIL_LINES))
    totals: dict[str, int] = field(default_factory=dict)  # group -> the largest n seen
    _digests: dict[str, int] = field(default_factory=dict)  # rawjson: vertex digest -> number
    _pending: list[str] = field(default_factory=list)  # rawjson: lines of the message being read

    def feed(self, raw: str) -> list[BuildEvent]:
        """Parse one line of progress output. Never raises: unknown lines go to the tail."""
        line = raw.rstrip("\r\n")
        if self.fmt == "rawjson":
            return self._feed_json(line)
        glued = _GLUED.match(line)
        if glued:
            return self.feed(glued["log"]) + self.feed(glued["end"])
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
            rec = self._register(num, rest)
            return [self._event("start", rec)]
        return self._update(rec, rest)

    def _register(self, num: int, name: str) -> StepRecord:
        rec = _new_record(num, name)
        self.steps[num] = rec
        self._count(rec.group, rec.index, rec.total)
        return rec

    def _count(self, group: str, index: int | None, total: int | None) -> None:
        """A group's total: the largest n its names print (plain: one build, one definition); for
        rawjson, the largest k. A vertex bake targets share is printed under each target's prefix
        with the numbering of whichever definition BuildKit loaded first (`[a 2/5]` for a 4-step
        a, in some runs), so its n may be the other target's; its k, its place in a chain both
        definitions hold, is right in both, and rawjson lists each target's whole graph (its last
        step, k = n) before any step runs."""
        seen = index if self.fmt == "rawjson" else total
        if seen is not None and seen > self.totals.get(group, 0):
            self.totals[group] = seen

    def _update(self, rec: StepRecord, rest: str) -> list[BuildEvent]:
        if _DIGEST.match(rest):
            return []
        if rest == "CACHED":
            return self._finish(rec, "cached", None)
        done = _DONE.match(rest)
        if done:
            return self._finish(rec, "done", float(done["secs"]))
        if rest.startswith("ERROR"):
            return self._finish(rec, "error", None, rest.partition(":")[2].strip() or rest)
        log = _LOG.match(rest)
        if log is None and (rest == rec.name or _NAMED.match(rest)):
            self._alias(rec, rest)  # the header again, or the vertex under another target's name
            return []
        return [self._event("log", rec, text=log["text"] if log else rest)]

    def _alias(self, rec: StepRecord, name: str) -> None:
        if name != rec.name and name not in rec.aliases:
            rec.aliases += (name,)
            other = _STEP.match(name)
            if other:
                self._count(_group(other["prefix"]), int(other["k"]), int(other["n"]))

    def _finish(
        self,
        rec: StepRecord,
        state: Literal["done", "cached", "error"],
        seconds: float | None,
        text: str = "",
    ) -> list[BuildEvent]:
        """The vertex's first ending is its event; a later one (a second target's CACHED for a
        vertex they share, DONE after CACHED) changes nothing and prints nothing."""
        if rec.state != "running":
            return []
        rec.state = state
        rec.seconds = seconds
        return [self._event(rec.state, rec, seconds=seconds, text=text)]

    def _event(
        self, kind: EventKind, rec: StepRecord, *, seconds: float | None = None, text: str = ""
    ) -> BuildEvent:
        return BuildEvent(
            kind=kind,
            vertex=rec.vertex,
            name=rec.name,
            index=rec.index,
            total=self.totals.get(rec.group, rec.total) if rec.index is not None else None,
            seconds=seconds,
            text=text,
            group=rec.group,
        )

    # ------------------------------------------------------------------ rawjson

    def _feed_json(self, line: str) -> list[BuildEvent]:
        """buildx's rawjson prints each message as indented JSON starting with `{` and ending with
        `}` at column 0; anything else outside a message (buildx's own errors) goes to the tail."""
        if not self._pending and not line.startswith("{"):
            if line.strip():
                self.tail.append(line)
            return []
        self._pending.append(line)
        if line != "}" and len(self._pending) < _MAX_JSON_LINES:
            return []
        text, self._pending = "\n".join(self._pending), []
        try:
            doc = json.loads(text)
        except ValueError:
            self.tail.append(text[-500:])
            return []
        return self._status(doc) if isinstance(doc, dict) else []

    def _status(self, doc: dict[str, object]) -> list[BuildEvent]:
        events: list[BuildEvent] = []
        vertexes = [v for v in _list(doc.get("vertexes")) if isinstance(v.get("digest"), str)]
        fresh = {str(v["digest"]) for v in vertexes} - self._digests.keys()
        for v in vertexes:  # the whole list first: a target's totals are known before its steps end
            if str(v["digest"]) in fresh and str(v["digest"]) not in self._digests:
                num = len(self._digests) + 1
                self._digests[str(v["digest"])] = num
                self._register(num, str(v.get("name") or v["digest"]))
        for v in vertexes:
            digest = str(v["digest"])
            rec = self.steps[self._digests[digest]]
            if digest not in fresh:
                self._alias(rec, str(v.get("name") or rec.name))
            events += self._vertex_state(rec, v, started_now=digest in fresh)
        for entry in _list(doc.get("logs")):
            owner = self.steps.get(self._digests.get(str(entry.get("vertex")), -1))
            for text in _decode(entry.get("data")).splitlines():
                if text.strip():
                    self.tail.append(text)
                    if owner is not None:
                        events.append(self._event("log", owner, text=text))
        return events

    def _vertex_state(self, rec: StepRecord, v: dict[str, object], *, started_now: bool) -> list[BuildEvent]:
        if v.get("error"):
            self.tail.append(f"ERROR: {v['error']}")
            return self._finish(rec, "error", None, str(v["error"]))
        if v.get("cached") and v.get("completed"):
            return self._finish(rec, "cached", None)
        if v.get("completed"):
            return self._finish(rec, "done", _seconds(v.get("started"), v.get("completed")))
        if started_now and v.get("started"):
            return [self._event("start", rec)]
        return []

    # ------------------------------------------------------------------ summaries

    def dockerfile_steps(self) -> list[StepRecord]:
        """The Dockerfile instructions seen, in step order (internal vertices left out)."""
        recs = [r for r in self.steps.values() if r.index is not None]
        return sorted(recs, key=lambda r: (r.group, r.index or 0, r.vertex))

    def counter(self, rec: StepRecord) -> str:
        """The step's counter as the events gave it (`[k/n]`, `[GROUP k/n]`)."""
        return format_counter(rec.group, rec.index, self.totals.get(rec.group, rec.total))

    def failed_step(self) -> StepRecord | None:
        """The first vertex that ended in ERROR, if any."""
        return next((r for r in self.steps.values() if r.state == "error"), None)


def _new_record(num: int, name: str) -> StepRecord:
    step = _STEP.match(name)
    if step:
        return StepRecord(
            vertex=num, name=name, index=int(step["k"]), total=int(step["n"]), group=_group(step["prefix"])
        )
    return StepRecord(vertex=num, name=name, index=None, total=None)


def format_counter(group: str, index: int | None, total: int | None) -> str:
    where = f"{group} " if group else ""
    return f"[{where}{index}/{total}]"


def _group(prefix: str | None) -> str:
    """`stage-0` (a single-stage build) and no prefix count as one unnamed group; `a stage-0`
    (bake target a) is `a`; a named stage keeps its name."""
    words = (prefix or "").split()
    if words and words[-1] == _DEFAULT_STAGE:
        words = words[:-1]
    return " ".join(words)


def _list(value: object) -> list[dict[str, object]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _decode(data: object) -> str:
    if not isinstance(data, str):
        return ""
    try:
        return base64.b64decode(data).decode("utf-8", "replace")
    except ValueError:
        return data


def _seconds(started: object, completed: object) -> float | None:
    """completed - started of two RFC 3339 timestamps with nanoseconds (Go's time format)."""
    from datetime import datetime

    def parse(value: object) -> datetime | None:
        if not isinstance(value, str):
            return None
        m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$", value)
        if not m:
            return None
        frac = (m[2] or "0")[:6].ljust(6, "0")
        zone = "+00:00" if m[3] == "Z" else m[3]
        try:
            return datetime.fromisoformat(f"{m[1]}.{frac}{zone}")
        except ValueError:
            return None

    a, b = parse(started), parse(completed)
    return round((b - a).total_seconds(), 1) if a and b else None


def finished_step(event: BuildEvent, width: int) -> tuple[str, str] | None:
    """(`CACHED 0.1s` / `done 32.0s` / `FAILED`, the instruction shortened at a word to `width`)
    for a Dockerfile step or the export that ended; None for any other event."""
    if not event.is_shown or event.kind not in ("cached", "done", "error"):
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


# RUN's own flags (`--mount=type=cache,...`, `--network=none`, `--security=...`): how a step runs,
# not what it does. A leading `NAME=value` sets the command's environment (SOURCE_DATE_EPOCH=0).
_RUN_FLAG = re.compile(r"^--(?:mount|network|security)=\S+$")
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
_LOCK_SOURCE = re.compile(r"(?:^|,)source=lock/(?P<name>[A-Za-z0-9_.-]+)(?:,|$)")
# pip's and uv's options that take a value (`--python /opt/venv/bin/python`): dropped with it.
_PIP_VALUE_OPTIONS = frozenset(
    (
        *("--python", "-p", "--link-mode", "--default-index", "--index", "--index-url", "-i"),
        *("--extra-index-url", "--index-strategy", "--find-links", "-f", "--requirement", "-r"),
        *("--constraint", "-c", "--target", "-t", "--prefix", "--cache-dir", "--root"),
        *("--only-binary", "--no-binary", "--keyring-provider"),
    )
)


def describe_step(name: str) -> str:
    """What a vertex does, for a person: `[stage-0 3/7] RUN --mount=type=cache,... --mount=type=bind,
    source=lock/framework,... SOURCE_DATE_EPOCH=0 /tmp/envbuilder-tools/uv pip install --python ...
    -r /tmp/envbuilder-lock/requirements.txt` -> `RUN uv pip install ... (framework)`. RUN's flags
    and the command's leading variables go, a program run by its path is named by its file, and
    a pip install keeps its packages (its options become `...`); the lock it installs (a bind
    mount of `lock/NAME`, as image/render.py writes it) is named at the end. Other instructions
    and BuildKit's own vertices are the name, white space collapsed."""
    instr = " ".join(step_instruction(name).split())
    keyword, _, rest = instr.partition(" ")
    if keyword != "RUN" or not rest:
        return instr
    words = rest.split(" ")
    locks = [m["name"] for w in words if _RUN_FLAG.match(w) for m in [_LOCK_SOURCE.search(w)] if m]
    while words and _RUN_FLAG.match(words[0]):
        words.pop(0)
    while len(words) > 1 and _ENV_WORD.match(words[0]):
        words.pop(0)
    if words and words[0].startswith("/"):
        words[0] = words[0].rsplit("/", 1)[-1] or words[0]
    words = _short_pip_install(words)
    said = " ".join(["RUN", *words])
    return f"{said} ({', '.join(locks)})" if locks else said


def _short_pip_install(words: list[str]) -> list[str]:
    """`uv pip install --python X --no-deps -r FILE` -> `uv pip install ...`; packages named on
    the command line stay. Only a command that is one pip install (no `&&`, `;`, `|`)."""
    at = next((i for i in range(len(words) - 1) if words[i : i + 2] == ["pip", "install"]), None)
    if at is None or at > 1 or any(w in ("&&", "||", ";", "|") or w.endswith(";") for w in words):
        return words
    kept, dropped, skip = [], False, False
    for word in words[at + 2 :]:
        if skip:
            skip = False
        elif word.startswith("-"):
            dropped = True
            skip = word in _PIP_VALUE_OPTIONS
        else:
            kept.append(word)
    return [*words[: at + 2], *kept, *(["..."] if dropped else [])]
