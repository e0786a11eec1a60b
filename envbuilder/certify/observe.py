"""What the host itself sees of the GPUs while a certification runs: NVML (or nvidia-smi) probed
from the host side, outside the container, so an image cannot make it up.

`GpuWatch` takes a baseline before the container starts, samples while it runs, and says whether
any of the GPUs the container got showed work: a compute process that no GPU had before (in the
baseline), or memory in use above the baseline. certify refuses a GPU verdict that the host never saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envbuilder.host import HostReport

MEMORY_RISE_MIB = 256  # above the baseline: a framework's CUDA context alone takes more
INTERVAL_S = 2.0


@dataclass(frozen=True, slots=True)
class Observation:
    """What the host saw: samples taken during the run, and the GPUs (by UUID) that showed work."""

    source: str  # nvml | nvidia-smi | none
    samples: int
    busy: tuple[str, ...]  # UUIDs (or indexes) of the GPUs that showed work
    detail: str = ""

    @property
    def saw_gpu_work(self) -> bool:
        return bool(self.busy)

    @classmethod
    def from_json(cls, doc: object, *, seen_by: str) -> Observation | None:
        """An observation recorded elsewhere (a node's own certify), its source prefixed with who
        made it (`seen_by`); None when there is none."""
        if not isinstance(doc, dict) or not isinstance(doc.get("samples"), int):
            return None
        busy = doc.get("busy_gpus")
        return cls(
            source=f"{seen_by} {doc.get('source')}",
            samples=doc["samples"],
            # a GPU is named by text (_key): an entry that is not (null, "", a mapping) names none
            busy=tuple(b for b in busy if isinstance(b, str) and b) if isinstance(busy, list) else (),
            detail=str(doc.get("detail") or ""),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "samples": self.samples,
            "busy_gpus": list(self.busy),
            "detail": self.detail,
        }


def not_observed(where: str) -> Observation:
    """What a host that did not start the container records: it saw nothing, and says why (a
    remote node's GPUs are out of its reach; the node's own view is the harness's host record)."""
    return Observation(
        source="none",
        samples=0,
        busy=(),
        detail=f"{where}: not observed by the submitting host (its GPUs are out of reach); the node's "
        "own view is the harness's host record (NVML inside the job)",
    )


def _key(g: Any) -> str:
    return str(g.uuid or g.index)


def _old_pids(baseline: HostReport) -> set[int] | None:
    """The pids of every GPU's baseline process list. A process is new only if no GPU's baseline
    listed it: one that ran before the container started (another tenant's) and turns up on another
    GPU is not the container's work. So one GPU's list unread (an NVML error) leaves every process
    unknown: None, and no process counts as new on any GPU (memory still does)."""
    if any(g.processes is None for g in baseline.gpus):
        return None
    return {p.pid for g in baseline.gpus for p in g.processes or ()}


def _busy(baseline: HostReport, sample: HostReport) -> set[str]:
    before = {_key(g): g for g in baseline.gpus}
    old_pids = _old_pids(baseline)
    busy: set[str] = set()
    for g in sample.gpus:
        old = before.get(_key(g))
        # A GPU the baseline did not list shows no work: whatever ran there before the container
        # (another tenant's memory, a process only there) is unknown, and NVML names a process by
        # its host pid, never by container, so the watch cannot tell the container's own from it.
        if old is None:
            continue
        if old_pids is not None and any(p.pid not in old_pids for p in g.processes or ()):
            busy.add(_key(g))
        # Memory only against a baseline reading: from 0 MiB, memory in use before would count.
        if (
            old.memory_used_mib is not None
            and g.memory_used_mib is not None
            and g.memory_used_mib - old.memory_used_mib >= MEMORY_RISE_MIB
        ):
            busy.add(_key(g))
    return busy


def _uncounted(baseline: HostReport, sample: HostReport) -> tuple[set[str], set[str], set[str]]:
    """The sample's GPUs the baseline did not list, those whose baseline memory is unread, and
    those whose baseline process list is unread: work there is not counted (_busy, _old_pids), and
    the observation's detail says so."""
    before = {_key(g): g for g in baseline.gpus}
    missing = {_key(g) for g in sample.gpus if _key(g) not in before}
    unread = {k for k, g in before.items() if g.memory_used_mib is None}
    unlisted = {k for k, g in before.items() if g.processes is None}
    return missing, unread, unlisted


class GpuWatch:
    """`start` takes the baseline; `tick` samples (on every line until work is seen, then at most
    every `interval_s`: certify calls it on each line the harness prints, so samples fall while
    steps run); `stop` says what was seen. A probe that breaks is noted in the detail, never raised."""

    def __init__(
        self,
        probe: Callable[[], HostReport],
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._probe, self._interval, self._clock = probe, interval_s, clock
        self._baseline: HostReport | None = None
        self._last = 0.0
        self._samples = 0
        self._busy: set[str] = set()
        self._missing: set[str] = set()  # GPUs sampled that the baseline did not list
        self._unread: set[str] = set()  # GPUs whose baseline memory is unread
        self._unlisted: set[str] = set()  # GPUs whose baseline process list is unread
        self._error = ""

    def _read(self) -> HostReport | None:
        try:
            return self._probe()
        except Exception as exc:  # the watch must never stop a certification
            self._error = f"{type(exc).__name__}: {str(exc)[:200]}"
            return None

    def start(self) -> None:
        baseline = self._read()
        if baseline is not None and not baseline.gpus:  # nothing to compare with: no baseline
            self._error = f"the baseline ({baseline.source}) listed no GPU: no sample taken"
            baseline = None
        self._baseline = baseline

    def tick(self) -> None:
        # Until the GPUs have shown work, every line is sampled: `certify --quick` uses the GPU
        # for about a second between two lines, which a 2 s throttle skipped (no sample saw it,
        # and an honest quick certification on the H200 was refused, 2026-12-05). Once work was
        # seen, samples are throttled again (a line per batch would probe NVML for nothing).
        throttled = self._busy and self._clock() - self._last < self._interval
        if self._baseline is None or throttled:
            return
        self._last = self._clock()
        report = self._read()
        if report is not None and report.gpus:
            self._samples += 1
            self._busy |= _busy(self._baseline, report)
            missing, unread, unlisted = _uncounted(self._baseline, report)
            self._missing |= missing
            self._unread |= unread
            self._unlisted |= unlisted

    def stop(self) -> Observation:
        source = self._baseline.source if self._baseline is not None else "none"
        notes = [self._error] if self._error else []
        if self._missing:
            notes.append(f"no baseline for {', '.join(sorted(self._missing))}: their work is not counted")
        if self._unread:
            notes.append(
                f"no baseline memory reading for {', '.join(sorted(self._unread))}: its memory is not counted"
            )
        if self._unlisted:
            notes.append(
                f"no baseline process list for {', '.join(sorted(self._unlisted))}: no process is counted "
                "as new on any GPU"
            )
        return Observation(
            source=source, samples=self._samples, busy=tuple(sorted(self._busy)), detail="; ".join(notes)
        )
