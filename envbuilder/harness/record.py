"""The evidence log of one certification: step records (each printed as one JSON line on stdout as
it finishes) and the facts the steps establish. Prose goes to stderr (log()), never to stdout.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TextIO

PASS, FAIL, SKIP = "pass", "fail", "skip"
STATUSES = (PASS, FAIL, SKIP)


def log(msg: str) -> None:
    """Progress prose: stderr only."""
    print(f"[harness] {msg}", file=sys.stderr, flush=True)


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class StepFailed(Exception):
    """A check inside a step did not hold; the message is the step's reason."""


class StepSkipped(Exception):
    """The step cannot apply here (no GPU, framework absent, budget spent); message = reason."""


@dataclass
class Step:
    """One step's record. Mutable while its block runs (metrics and warnings fill in), then kept
    as it was when emitted."""

    name: str
    status: str = PASS
    reason: str = ""
    seconds: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "step",
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "metrics": clean_json(self.metrics),
            "warnings": list(self.warnings),
        }


def clean_json(value: Any) -> Any:
    """Make a value strict-JSON safe: NaN/inf become strings, tuples lists, keys strings."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return repr(value)
        return round(value, 6)
    if isinstance(value, dict):
        return {str(k): clean_json(v) for k, v in value.items()}
    # isinstance with tuples, not `list | tuple`: images may carry a Python older than 3.10.
    if isinstance(value, (list, tuple)):
        return [clean_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


class Recorder:
    """Collects steps (printing each as one JSON line as it finishes) and facts."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.steps: list[Step] = []
        self.facts: dict[str, Any] = {}
        self.current = ""  # the step running now (the watchdog names it)
        # Serialises stdout lines: the watchdog thread may print the result mid-run.
        self.lock = threading.RLock()
        self._out = out if out is not None else sys.stdout

    def emit(self, step: Step) -> Step:
        with self.lock:
            self.steps.append(step)
            print(json.dumps(step.to_json(), allow_nan=False), file=self._out, flush=True)
        mark = {"pass": "ok  ", "fail": "FAIL", "skip": "skip"}[step.status]
        extra = f": {step.reason}" if step.reason else ""
        log(f"{mark} {step.name} ({step.seconds:.1f}s){extra}")
        return step

    @contextmanager
    def step(self, name: str) -> Iterator[Step]:
        """Run a block as a step: StepFailed/StepSkipped set its status, any other exception
        becomes a failed step with the exception as reason (never a crash)."""
        st = Step(name=name)
        self.current = name
        log(f"---- {name}")
        t0 = time.perf_counter()
        try:
            yield st
        except StepSkipped as e:
            st.status, st.reason = SKIP, str(e)
        except StepFailed as e:
            st.status, st.reason = FAIL, str(e)
        except Exception as e:  # every failure becomes a record, never a crash
            st.status, st.reason = FAIL, f"{type(e).__name__}: {e}"
            st.metrics.setdefault("traceback", traceback.format_exc(limit=6)[-2000:])
        st.seconds = time.perf_counter() - t0
        self.current = ""
        self.emit(st)

    def skip(self, name: str, reason: str) -> Step:
        return self.emit(Step(name=name, status=SKIP, reason=reason))

    def fail(self, name: str, reason: str) -> Step:
        return self.emit(Step(name=name, status=FAIL, reason=reason))

    def last(self) -> Step:
        """The step emitted last (the one a `with rec.step(...)` block just recorded)."""
        return self.steps[-1]

    def fact(self, **facts: Any) -> None:
        """Record facts of the run (precision used, largest batch, ...): the result's `facts`."""
        with self.lock:
            self.facts.update(facts)

    def snapshot(self) -> tuple[tuple[Step, ...], dict[str, Any]]:
        """The steps and facts so far (the watchdog may take one while a step runs)."""
        with self.lock:
            return tuple(self.steps), dict(self.facts)
