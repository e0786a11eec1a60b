"""The compile lane: the tuned compiled runs prepared in child processes on the CPU cores
(workloads/pytorch/precompile.py: the model, its data and torch.compile's first step) while the
harness's own steps use the GPU. When the harness gives a child the GPU (`runner(arch)` as a
training step's run), the child runs the timed loop in the process that compiled the model and
sends the step's metrics back: nothing is traced or loaded twice. The children also fill an
Inductor cache the harness shares, for the harness's own compile when a child failed."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..record import log

if TYPE_CHECKING:
    from ..workloads.config import RunConfig

PACKAGE = __package__.rsplit(".", 1)[0] if __package__ else "envbuilder_harness"


class _Child:
    """One child process and the JSON lines it has said (read by a thread, so nothing blocks)."""

    def __init__(self, cmd: list[str], env: dict[str, str], hold: bool) -> None:
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.hold = hold
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()

    def _read(self, stream: IO[str] | None) -> None:
        for line in stream or ():
            if line.startswith("{"):
                try:
                    self.lines.put(json.loads(line))
                except ValueError:
                    continue
        self.lines.put(None)  # end of output: the child has exited (or closed stdout)

    def _drain(self, stream: IO[str] | None) -> None:
        for line in stream or ():
            self.stderr.append(line.rstrip())

    def say(self, text: str) -> bool:
        stdin = self.proc.stdin
        if stdin is None or stdin.closed:
            return False
        try:
            stdin.write(text + "\n")
            stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def next_line(self, timeout: float) -> dict[str, Any] | None:
        """The child's next JSON line; None when it exited first; TimeoutError past `timeout`."""
        try:
            return self.lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise TimeoutError from None

    def gone(self) -> str:
        self.proc.wait()
        tail = " | ".join(list(self.stderr)[-3:])
        return f"exit {self.proc.returncode}: {tail[-500:]}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()  # its stdout and stderr then end: the reader threads finish
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError, BrokenPipeError):
                self.proc.stdin.close()


class CompileLane:
    """`runs`: arch -> (steps, warmup) of its tuned compiled run; `served`: the archs whose child
    runs the timed loop itself (the others only fill the Inductor cache). `amp` "auto": each child picks
    the precision as the harness does (train.default_amp). `hold`: the children import torch and
    the model code, then wait for `release()` before they touch the GPU, so the lane can start
    before the host step lists the processes on the GPU. `data`: the synthetic set's size,
    train and eval counts (the harness's dataset step, rendered again from the same seed)."""

    def __init__(
        self,
        runs: dict[str, tuple[int, int]],
        *,
        batch: int,
        amp: str,
        seed: int,
        data: tuple[int, int, int],
        hold: bool = False,
        served: tuple[str, ...] = (),
        device: str = "cuda",
        backend: str = "inductor",
        width: int = 64,
    ) -> None:
        # The harness's own torch.compile reads the same cache (Inductor reads this at compile time):
        # the image's, kept on the host, where the container was given one (certify/jit_cache.py;
        # what it held is the host record's compile_caches), else a new one for this run.
        given = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        self.cache = Path(given) if given else Path(tempfile.mkdtemp(prefix="envbuilder-inductor-"))
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(self.cache)
        # The same Inductor configuration as the harness's own compile (the cache key holds it), so
        # no TORCHINDUCTOR_* of our own; the children (and their compile workers) run niced instead.
        parent = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": _package_parent() + (os.pathsep + parent if parent else "")}
        self.started = time.monotonic()
        self.served = served
        self.children: dict[str, _Child] = {}
        self.reports: dict[str, dict[str, Any]] = {}
        for arch, (steps, warmup) in runs.items():
            cmd = [sys.executable, "-m", f"{PACKAGE}.workloads.pytorch.precompile", "--arch", arch]
            cmd += ["--batch", str(batch), "--steps", str(steps), "--warmup", str(warmup)]
            cmd += ["--amp", amp, "--seed", str(seed), "--data", ",".join(map(str, data))]
            cmd += ["--device", device, "--backend", backend, "--width", str(width)]
            cmd += ["--hold"] if hold else []
            cmd += ["--serve"] if arch in served else []
            self.children[arch] = _Child(cmd, env, hold)
        log(f"compile lane: {', '.join(runs)} compiling in child processes (cache {self.cache})")

    @property
    def procs(self) -> dict[str, subprocess.Popen[str]]:
        return {arch: c.proc for arch, c in self.children.items()}

    def release(self) -> None:
        """Let held children go on to the GPU."""
        for c in self.children.values():
            if c.hold:
                c.say("go")

    def ready(self, arch: str) -> bool:
        """Without waiting: has the child compiled (or failed)?"""
        if arch in self.reports:
            return True
        try:
            self.wait(arch, 0.0)
        except TimeoutError:
            return False
        return True

    def wait(self, arch: str, timeout: float) -> dict[str, Any]:
        """The child's compile report once it is ready, waiting at most `timeout` s (TimeoutError
        only for timeout 0: a poll); {"error": ...} when it failed or took longer (then killed)."""
        if arch in self.reports:
            return self.reports[arch]
        child = self.children.get(arch)
        if child is None:
            return {"error": f"no compile child for {arch}"}
        t0 = time.monotonic()
        try:
            line = child.next_line(timeout)
        except TimeoutError:
            if timeout <= 0:
                raise
            child.kill()
            line = {"error": f"compile child for {arch} still running after {timeout:.0f} s: killed"}
        res: dict[str, Any] = dict(line) if line is not None else {"error": child.gone()}
        res["waited_s"] = round(time.monotonic() - t0, 3)
        res["done_after_s"] = round(time.monotonic() - self.started, 3)
        res["asked_after_s"] = round(t0 - self.started, 3)  # when the harness came for it
        clock = res.pop("clock", None)
        if isinstance(clock, dict):  # the child's time.monotonic() stamps, in seconds after the start
            res["timeline_s"] = {
                k: round(v - self.started, 3) for k, v in clock.items() if isinstance(v, (int, float))
            }
        self.reports[arch] = res
        return res

    def runner(self, arch: str, meanwhile: Callable[[], object] | None = None) -> Any:
        """A training step's `run` (steps/training.py TrainRun) that runs on the ready child;
        `meanwhile`: see run()."""

        def run(
            cfg: RunConfig, data: Any, *, loss_drop_min: float, accuracy_margin: float
        ) -> tuple[dict[str, Any], list[str]]:
            return self.run(
                cfg, data, loss_drop_min=loss_drop_min, accuracy_margin=accuracy_margin, meanwhile=meanwhile
            )

        return run

    def run(
        self,
        cfg: RunConfig,
        data: Any,
        *,
        loss_drop_min: float,
        accuracy_margin: float,
        meanwhile: Callable[[], object] | None = None,
    ) -> tuple[dict[str, Any], list[str]]:
        """The timed run on the child that prepared cfg.arch (ready: wait() said so first);
        RuntimeError when it cannot, or when cfg is not the run the child prepared. The harness
        calls `meanwhile()` once the child has its order: CPU work that needs no GPU, done while
        the harness would only wait (it must not raise)."""
        child = self.children[cfg.arch]
        if cfg.arch not in self.served:
            raise RuntimeError(f"the compile child for {cfg.arch} only fills the Inductor cache")
        mine = _run_identity(cfg.to_json())
        prepared = _run_identity(self.wait(cfg.arch, 0.0).get("config") or {})
        if mine != prepared:
            raise RuntimeError(f"the compile child prepared another configuration: {prepared} != {mine}")
        order = {
            "max_seconds": cfg.max_seconds,
            "loss_drop_min": loss_drop_min,
            "accuracy_margin": accuracy_margin,
        }
        if not child.say(json.dumps(order)):
            raise RuntimeError(f"the compile child for {cfg.arch} is gone ({child.gone()})")
        if meanwhile is not None:
            meanwhile()
        try:
            line = child.next_line(max(30.0, cfg.max_seconds * 3))
        except TimeoutError:
            child.kill()
            raise RuntimeError(f"the compile child for {cfg.arch} did not finish its run: killed") from None
        if line is None or "metrics" not in line:
            why = line.get("error") if line else child.gone()
            raise RuntimeError(f"the compile child's run of {cfg.arch} failed: {why}")
        child.proc.wait()  # its GPU memory is free before the harness's next step
        metrics: dict[str, Any] = line["metrics"]
        metrics["config"] = {**cfg.to_json(), "image_size": getattr(data, "size", None)}
        metrics["ran_in"] = f"compile lane child (pid {child.proc.pid}): the process that compiled it"
        return metrics, list(line.get("problems") or [])

    def close(self) -> None:
        """Kill children still running (a skipped compiled step, the watchdog, the end)."""
        for c in self.children.values():
            c.kill()


# What must be equal between the harness's planned run and the child's (the gate's meaning).
_IDENTITY = ("arch", "width", "batch", "steps", "warmup_steps", "precision", "channels_last", "compile", "lr")


def _run_identity(config: dict[str, Any]) -> dict[str, Any]:
    return {k: config.get(k) for k in _IDENTITY}


def _package_parent() -> str:
    depth = len((__package__ or "x").split("."))
    return str(Path(__file__).resolve().parents[depth])
