"""The one progress renderer of every long command (build, up, certify, lock, wheelhouse, fleet
build), on stderr: what runs now, for how long, and what it last said.

On a terminal, a live line (rich's status spinner) cut to the terminal's width, with finished
steps and messages printed above it. Piped or in CI, plain lines: one per finished step or message
and a `still running` line after every HEARTBEAT_S seconds without output, so a long step (a 63 s
torch install) is never silent. BuildKit's output is parsed in engine/progress.py; this module
only shows its events (BuildProgress) and the named steps of `up` (StepProgress).
"""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

from envbuilder.engine.progress import BuildEvent, describe_step, finished_step
from envbuilder.tables import printable

HEARTBEAT_S = 10.0
PIPED_STEP_WIDTH = 160  # a finished step's instruction in a log: one line, shortened at a word
_LAST_WIDTH = 80  # the last message a heartbeat quotes


def one_line(text: str) -> str:
    """White space collapsed and control characters shown, not obeyed (an image writes these)."""
    return printable(" ".join(text.split()))


class ProgressView:
    """What runs now (`begin`), what it says (`message`, `note`) and lines that stay (`line`).

    `width` fixes the terminal's width (tests); `clock` is time.monotonic unless a test hands in a
    fake one; `ticker=False` leaves `tick()` to the caller (tests), else a thread calls it each second.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        *,
        tty: bool | None = None,
        width: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        heartbeat_s: float = HEARTBEAT_S,
        ticker: bool = True,
    ) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock
        self.heartbeat_s = heartbeat_s
        self.started = clock()
        self._width = width
        self._lock = threading.RLock()
        self._head: str | None = None  # what runs now, e.g. "[3/7] RUN uv pip install ... (framework)"
        self._since = 0.0
        self._last_output = self.started
        self._last_message = ""
        self._console: Any = None  # rich.console.Console on a terminal
        self._status: Any = None  # rich.status.Status while something runs
        self._ticker = ticker
        # The ticker wakes every _period; a heartbeat is due _slack early, so none is written late.
        self._period = 1.0 if self.tty else min(0.25, heartbeat_s / 4)
        self._slack = self._period if ticker else 0.0
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ what runs
    def begin(self, head: str, since: float | None = None) -> None:
        """`head` runs now (since `since`, default now): the live line, the heartbeat's subject."""
        with self._lock:
            self._head, self._since = head, self.clock() if since is None else since
            self._last_message = ""
            if self.tty:
                self._show_live()
        self._start_ticker()

    def current(self) -> tuple[str, float] | None:
        """(head, since) of what runs now."""
        with self._lock:
            return (self._head, self._since) if self._head is not None else None

    def idle(self) -> None:
        """Nothing runs: no live line, no heartbeat."""
        with self._lock:
            self._head = None
            self._stop_live()

    def seconds(self) -> float:
        """How long what runs now has run (0 when nothing runs)."""
        with self._lock:
            return self.clock() - self._since if self._head is not None else 0.0

    def elapsed(self) -> float:
        return self.clock() - self.started

    # ------------------------------------------------------------------ output
    def line(self, text: str, *, crop: bool = False) -> None:
        """A line that stays (above the live line on a terminal); `crop` keeps it to one row."""
        with self._lock:
            if self.tty:
                from rich.text import Text

                if crop:
                    self.console().print(Text(text), no_wrap=True, overflow="ellipsis", crop=True)
                else:
                    self.console().print(Text(text))
            else:
                self.stream.write(text + "\n")
                self.stream.flush()
            self._last_output = self.clock()

    def message(self, text: str, *, indent: str = "  ", collapse: bool = True) -> None:
        """A message of what runs now (or a free line): printed, and quoted by the live line and
        the heartbeat. `collapse` makes it one line (white space collapsed); else each of its
        lines is printed as it is, control characters shown, not obeyed."""
        parts = [one_line(text)] if collapse else [printable(p) for p in text.rstrip("\n").split("\n")]
        with self._lock:
            self._last_message = one_line(text)
            for part in parts:
                self.line(f"{indent}{part}")
            if self.tty:
                self._show_live()

    def note(self, text: str) -> None:
        """What runs now said something worth the live line but not a line of its own (a build
        step's log): shown live on a terminal, quoted by the next heartbeat when piped."""
        with self._lock:
            self._last_message = one_line(text)
            if self.tty:
                self._show_live()

    def say(self, message: str) -> None:
        """A command's own message, as `say` prints it: each line as it is, no indent."""
        self.message(message, indent="", collapse=False)

    def tick(self) -> None:
        """The clock on the live line; piped, a `still running` line when nothing was printed for
        heartbeat_s while something runs."""
        with self._lock:
            if self._head is None:
                return
            now = self.clock()
            if self.tty:
                self._show_live()
            elif now - self._last_output >= self.heartbeat_s - self._slack:
                last = (
                    f" (last: {textwrap.shorten(self._last_message, _LAST_WIDTH, placeholder=' ...')})"
                    if self._last_message
                    else ""
                )
                self.line(f"{self._head} still running, {now - self._since:.0f}s{last}")

    def close(self) -> None:
        """Stop the ticker and the live line (what was printed stays)."""
        if self._stop is not None:
            self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        self._stop = None
        self.idle()

    # ------------------------------------------------------------------ terminal
    def console(self) -> Any:
        """The rich Console this view writes to (a terminal only), made on first use."""
        if self._console is None:
            from rich.console import Console  # only on a terminal

            self._console = Console(
                file=self.stream, width=self._width, force_terminal=True, highlight=False, markup=False
            )
        return self._console

    def live_text(self) -> str:
        """The live line: how long what runs has run, what it is and its last message, cut to the
        terminal's width (the spinner and its space take two columns)."""
        took = self.clock() - self._since
        text = f"{took:3.0f}s {self._head}"  # the seconds first: a long head is cut at its end
        if self._last_message:
            text += f"  {self._last_message}"
        return fit(text, self.console().width - 2)

    def _show_live(self) -> None:
        from rich.text import Text

        if self._head is None:
            return
        shown = Text(self.live_text(), no_wrap=True, overflow="ellipsis")  # a Text: no markup read
        if self._status is None:
            self._status = self.console().status(shown)
            self._status.start()
        else:
            self._status.update(shown)

    def _stop_live(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _start_ticker(self) -> None:
        if not self._ticker or self._thread is not None:
            return
        self._stop = stop = threading.Event()

        def run() -> None:
            while not stop.wait(self._period):
                self.tick()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()


def fit(text: str, width: int) -> str:
    """`text` in at most `width` columns, cut at the end with an ellipsis (wide characters count
    two, as the terminal shows them)."""
    from rich.cells import cell_len, set_cell_size

    width = max(width, 4)
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, width - 1) + "…"


class BuildProgress:
    """BuildKit's events (engine/progress.py) on a ProgressView: the running step on the live line,
    one line per finished step (`[3/7] done 32.0s (t=40s) RUN uv pip install ... (framework)`),
    and while a step runs the view's heartbeat names it. Several steps may run at once: the
    live line shows the one that started last. `label` is put before each counter (`up` says
    `Dockerfile 3/7` inside its own `[4/6] build` step); between steps the view returns to what
    ran before the build (up's step), else to `[build]`."""

    def __init__(self, view: ProgressView, *, label: str = "", indent: str = "") -> None:
        self.view = view
        self.label = label
        self.indent = indent
        self._outer = view.current()
        self._running: dict[int, tuple[str, float]] = {}
        if self._outer is None:
            view.begin("[build]")
            self._outer = view.current()
        # inside up's step, the live line and the heartbeat name both: `[4/6] build: Dockerfile 3/7 ...`
        self._within = f"{self._outer[0]}: " if label and self._outer is not None else ""

    def say(self, message: str) -> None:
        """A message of the build (the lock, the load, a push): a line as it is, then quoted live."""
        self.view.message(message, indent=self.indent, collapse=False)

    def counter(self, event: BuildEvent) -> str:
        head = event.counter
        if not self.label:
            return head
        return f"{self.label}{head.strip('[]')}" if event.is_step else head.strip("[]")

    def __call__(self, event: BuildEvent) -> None:
        if not event.is_shown:
            return
        if event.kind == "start":
            head = f"{self._within}{self.counter(event)} {describe_step(event.name)}"
            self._running[event.vertex] = (head, self.view.clock())
            self.view.begin(head)
        elif event.kind == "log":
            if event.vertex in self._running:
                self.view.note(event.text)
        elif (ended := finished_step(event, PIPED_STEP_WIDTH)) is not None:
            self._running.pop(event.vertex, None)
            state, _instr = ended
            took = f" (t={self.view.elapsed():.0f}s)"
            text = f"{self.counter(event)} {state}{took} {describe_step(event.name)}"
            self.view.line(self.indent + (text if self.view.tty else _shorten(text)), crop=True)
            self._resume()

    def _resume(self) -> None:
        """What the live line shows after a step ended: the step started last among those still
        running, else what ran before the build."""
        if self._running:
            head, since = list(self._running.values())[-1]
            self.view.begin(head, since)
        elif self._outer is not None:
            self.view.begin(*self._outer)
        else:
            self.view.idle()

    def finish(self) -> None:
        """The build ended: the view as it was before it (up's step goes on; alone, idle)."""
        self._running.clear()
        if self._outer is not None and self._outer[0] != "[build]":
            self.view.begin(*self._outer)
        else:
            self.view.close()


def _shorten(text: str) -> str:
    return textwrap.shorten(text, PIPED_STEP_WIDTH + 40, placeholder=" ...")


@contextmanager
def build_progress(stream: IO[str] | None = None, *, tty: bool | None = None) -> Iterator[BuildProgress]:
    """A BuildProgress on a fresh view for a command that builds (build, fleet build); closed at
    the end, whatever happens."""
    view = ProgressView(stream, tty=tty, heartbeat_s=HEARTBEAT_S)
    progress = BuildProgress(view)
    try:
        yield progress
    finally:
        progress.finish()
        view.close()


@contextmanager
def task_progress(
    name: str, stream: IO[str] | None = None, *, tty: bool | None = None, width: int | None = None
) -> Iterator[ProgressView]:
    """A command of one long task (certify, lock, wheelhouse): its messages (`view.say`) as plain
    lines, the live line on a terminal, and a heartbeat `NAME still running, 20s` when it says
    nothing for HEARTBEAT_S."""
    view = ProgressView(stream, tty=tty, width=width, heartbeat_s=HEARTBEAT_S)
    view.begin(name)
    try:
        yield view
    finally:
        view.close()


class StepProgress:
    """`with progress.step("build"): ...` for each of `names`, in order; `progress.say(msg)` inside.
    `[k/N] name` with elapsed times; N is fixed when the command starts, each step keeps its number."""

    def __init__(
        self,
        names: tuple[str, ...],
        *,
        stream: IO[str] | None = None,
        tty: bool | None = None,
        heartbeat_s: float = HEARTBEAT_S,
        width: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        ticker: bool = True,
    ) -> None:
        self.names = names
        self.view = ProgressView(
            stream, tty=tty, width=width, clock=clock, heartbeat_s=heartbeat_s, ticker=ticker
        )
        self.tty = self.view.tty

    def head(self, name: str) -> str:
        return f"[{self.names.index(name) + 1}/{len(self.names)}] {name}"

    @contextmanager
    def step(self, name: str) -> Iterator[StepProgress]:
        """Run one step: its start and end are printed (FAILED when it raises)."""
        if name not in self.names:
            raise ValueError(f"unknown step {name!r}")
        if not self.tty:
            self.view.line(f"{self.head(name)} ...")
        self.view.begin(self.head(name))
        ok = False
        try:
            yield self
            ok = True
        finally:
            took = self.view.seconds()
            self.view.close()
            state = "done" if ok else "FAILED"
            self.view.line(f"{self.head(name)} {state} {took:.1f}s (t={self.elapsed():.0f}s)")

    def say(self, message: str) -> None:
        """A message of the current step (or a free line between steps)."""
        self.view.message(message)

    def build_events(self, label: str = "Dockerfile ") -> BuildProgress:
        """BuildKit's events inside the current step, as `  Dockerfile 3/7 done 32.0s ...` lines."""
        return BuildProgress(self.view, label=label, indent="  ")

    def elapsed(self) -> float:
        return self.view.elapsed()
