"""Progress of a command made of named steps, on stderr: `[k/N] name` with elapsed times.

On a terminal, a live line (rich's status spinner) with the step, its elapsed time and the latest
message. Piped or in CI, plain lines: one when a step starts, one when it ends (with its
seconds), each message of the step as it comes, and a `still running` line after every
HEARTBEAT_S seconds without output, so a long step (a 35 s torch install) is never silent.
The counter N is fixed when the command starts, and each step keeps its number.
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from envbuilder.tables import printable

HEARTBEAT_S = 10.0


class StepProgress:
    """`with progress.step("build"): ...` for each of `names`, in order; `progress.say(msg)` inside."""

    def __init__(
        self,
        names: tuple[str, ...],
        *,
        stream: IO[str] | None = None,
        tty: bool | None = None,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.names = names
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.heartbeat_s = heartbeat_s
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._current: str | None = None
        self._step_started = 0.0
        self._last_output = 0.0
        self._last_message = ""
        self._status: Any = None  # rich.status.Status on a terminal
        self._console: Any = None

    def head(self, name: str) -> str:
        return f"[{self.names.index(name) + 1}/{len(self.names)}] {name}"

    @contextmanager
    def step(self, name: str) -> Iterator[StepProgress]:
        """Run one step: its start and end are printed (FAILED when it raises)."""
        if name not in self.names:
            raise ValueError(f"unknown step {name!r}")
        with self._lock:
            self._current, self._step_started, self._last_message = name, time.monotonic(), ""
        stop = threading.Event()
        if self.tty:
            self._start_live(name)
        else:
            self._line(f"{self.head(name)} ...")
        ticker = threading.Thread(target=self._tick, args=(stop,), daemon=True)
        ticker.start()
        ok = False
        try:
            yield self
            ok = True
        finally:
            stop.set()
            ticker.join()
            took = time.monotonic() - self._step_started
            self._stop_live()
            state = "done" if ok else "FAILED"
            self._line(f"{self.head(name)} {state} {took:.1f}s (t={self.elapsed():.0f}s)")
            with self._lock:
                self._current = None

    def say(self, message: str) -> None:
        """A message of the current step (or a free line between steps)."""
        text = printable(" ".join(message.split()))  # the image's harness writes these
        self._last_message = text
        if self.tty and self._status is not None:
            self._console.print(f"  {text}", markup=False, highlight=False)
            self._update_live(text)
            self._last_output = time.monotonic()
        else:
            self._line(f"  {text}")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    # ------------------------------------------------------------------ plain lines
    def _line(self, text: str) -> None:
        with self._lock:
            if self._console is not None:
                self._console.print(text, markup=False, highlight=False)
            else:
                self.stream.write(text + "\n")
                self.stream.flush()
            self._last_output = time.monotonic()

    def _tick(self, stop: threading.Event) -> None:
        """Every second: the live line's clock on a terminal; else a `still running` line when
        nothing was printed for heartbeat_s."""
        while not stop.wait(min(1.0, self.heartbeat_s / 2)):
            now, current = time.monotonic(), self._current
            if current is None:
                continue
            if self.tty:
                self._update_live(self._last_message)
            elif now - self._last_output >= self.heartbeat_s:
                last = (
                    f" (last: {textwrap.shorten(self._last_message, 80, placeholder=' ...')})"
                    if self._last_message
                    else ""
                )
                self._line(f"{self.head(current)} still running, {now - self._step_started:.0f}s{last}")

    # ------------------------------------------------------------------ terminal
    def _start_live(self, name: str) -> None:
        from rich.console import Console  # only on a terminal
        from rich.text import Text

        if self._console is None:
            self._console = Console(file=self.stream, highlight=False)
        self._status = self._console.status(Text(self.head(name)))
        self._status.start()

    def _update_live(self, text: str) -> None:
        if self._status is not None and self._current is not None:
            from rich.text import Text

            took = time.monotonic() - self._step_started
            line = f"{self.head(self._current)} {took:.0f}s  {textwrap.shorten(text, 80, placeholder=' ...')}"
            self._status.update(Text(line))  # a Text: rich reads no markup in it ([link=...], [blink])

    def _stop_live(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
