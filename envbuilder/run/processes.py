"""The job's processes as the host sees them (`run --monitor`): each process of the container
(host PIDs from the engine) sampled from /proc every second, CPU seconds on the monitor's clock,
and the pure reading the diagnosis needs: which process is the training loop, which are its
workers (DataLoader's, tf.data's threads are inside the main process), and how busy each was."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BUSY_SHARE = 0.05  # a process using less than 5% of a core over the window is not doing the work


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessSeries:
    """One process: its parent, its name, and cumulative CPU seconds (user + system) at times t."""

    pid: int
    ppid: int
    comm: str
    t: Sequence[float] = ()
    cpu_s: Sequence[float] = ()

    def share(self, start: float, end: float) -> float | None:
        """Mean share of one core (1.0 = a full core) between the samples nearest start and end;
        None when fewer than two samples fall in the window."""
        idx = [i for i, x in enumerate(self.t) if start <= x <= end]
        if len(idx) < 2:
            return None
        a, b = idx[0], idx[-1]
        dt = self.t[b] - self.t[a]
        return (self.cpu_s[b] - self.cpu_s[a]) / dt if dt > 0 else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuView:
    """Who did the CPU work in a window: the main process (the busiest with no busy ancestor) and
    the busy processes below it (DataLoader workers and the like)."""

    main_pid: int
    main_comm: str
    main_share: float  # of one core
    workers: tuple[tuple[int, float], ...] = ()  # (pid, share of one core), busy descendants of main
    idle_children: int = 0  # descendants of main that did not work in the window

    @property
    def worker_mean(self) -> float:
        return sum(s for _, s in self.workers) / len(self.workers) if self.workers else 0.0


def cpu_view(processes: Sequence[ProcessSeries], start: float, end: float) -> CpuView | None:
    """The CpuView of [start, end]; None when no process was sampled twice in it."""
    shares = {p.pid: p.share(start, end) for p in processes}
    known = {p.pid: p for p in processes if shares[p.pid] is not None}
    if not known:
        return None

    def ancestors(pid: int) -> list[int]:
        out, seen = [], {pid}
        parent = known[pid].ppid if pid in known else None
        while parent in known and parent not in seen:
            out.append(parent)
            seen.add(parent)
            parent = known[parent].ppid
        return out

    busy = {pid for pid, p in known.items() if (shares[pid] or 0.0) >= BUSY_SHARE}
    roots = [pid for pid in busy if not any(a in busy for a in ancestors(pid))]
    pool = roots or list(known)
    main = max(pool, key=lambda pid: (shares[pid] or 0.0, -pid))
    below = [pid for pid in known if main in ancestors(pid)]
    workers = tuple(sorted((pid, float(shares[pid] or 0.0)) for pid in below if pid in busy))
    return CpuView(
        main_pid=main,
        main_comm=known[main].comm,
        main_share=float(shares[main] or 0.0),
        workers=workers,
        idle_children=len(below) - len(workers),
    )


def read_stat(pid: int, proc: Path = Path("/proc")) -> tuple[int, str, float] | None:
    """(ppid, comm, CPU seconds) of a process from /proc/PID/stat; None when it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    head, _, rest = text.rpartition(")")  # comm may hold spaces and parentheses
    fields = rest.split()
    if len(fields) < 13:
        return None
    comm = head.partition("(")[2]
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return int(fields[1]), comm, ticks / _CLOCK_TICKS


_CLOCK_TICKS = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


@dataclass
class ProcessSampler:
    """Samples the processes `pids()` lists (the container's) every `interval` s on a daemon
    thread, times from `clock` (the GPU samplers' clock, so the windows line up). A failing
    `pids()` (the container not started yet, the daemon busy) skips that sample."""

    pids: Callable[[], Sequence[int]]
    clock: Callable[[], float]
    interval: float = 1.0
    proc: Path = Path("/proc")
    max_processes: int = 256
    _series: dict[int, dict[str, Any]] = field(default_factory=dict)
    _errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="process-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval + 5)

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval):
                break

    def sample(self) -> None:
        try:
            pids = list(self.pids())
        except Exception as exc:  # the engine's error: keep the first few, go on sampling
            if len(self._errors) < 5:
                self._errors.append(str(exc)[:200])
            return
        now = round(self.clock(), 3)
        for pid in pids:
            stat = read_stat(pid, self.proc)
            if stat is None or (pid not in self._series and len(self._series) >= self.max_processes):
                continue
            ppid, comm, cpu = stat
            row = self._series.setdefault(pid, {"ppid": ppid, "comm": comm, "t": [], "cpu_s": []})
            row["t"].append(now)
            row["cpu_s"].append(round(cpu, 3))

    def series(self) -> tuple[ProcessSeries, ...]:
        return tuple(
            ProcessSeries(pid=pid, ppid=r["ppid"], comm=r["comm"], t=tuple(r["t"]), cpu_s=tuple(r["cpu_s"]))
            for pid, r in sorted(self._series.items())
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.proc),
            "interval_s": self.interval,
            "errors": list(self._errors),
            "processes": [processes_to_json(p) for p in self.series()],
        }


def processes_to_json(p: ProcessSeries) -> dict[str, Any]:
    return {"pid": p.pid, "ppid": p.ppid, "comm": p.comm, "t": list(p.t), "cpu_s": list(p.cpu_s)}


def processes_from_json(items: Sequence[Mapping[str, Any]]) -> tuple[ProcessSeries, ...]:
    """The ProcessSeries of a telemetry.json's `processes` list (recordings replay through it)."""
    return tuple(
        ProcessSeries(
            pid=int(p["pid"]),
            ppid=int(p["ppid"]),
            comm=str(p["comm"]),
            t=tuple(float(x) for x in p["t"]),
            cpu_s=tuple(float(x) for x in p["cpu_s"]),
        )
        for p in items
    )
