"""The compile lane: torch.compile of the tuned runs' models in child processes on the CPU cores
(workloads/pytorch/precompile.py), while the harness's own steps use the GPU. The children fill the
Inductor cache that the harness shares with them, so the compiled steps load what they compiled;
each compiled step waits for its child first and records the cold compile's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..record import log

PACKAGE = __package__.rsplit(".", 1)[0] if __package__ else "envbuilder_harness"


class CompileLane:
    """`amp` "auto": each child picks the precision as the harness does (train.default_amp).
    `hold`: the children import torch and the model code, then wait for `release()` before they
    touch the GPU, so the lane can start before the host step lists the processes on the GPU."""

    def __init__(
        self, archs: tuple[str, ...], *, batch: int, amp: str, seed: int, hold: bool = False
    ) -> None:
        self.cache = Path(tempfile.mkdtemp(prefix="envbuilder-inductor-"))
        # The harness's own torch.compile reads the same cache (Inductor reads this at compile time).
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(self.cache)
        # The same Inductor configuration as the harness's own compile (the cache key holds it), so
        # no TORCHINDUCTOR_* of our own; the children (and their compile workers) run niced instead.
        parent = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": _package_parent() + (os.pathsep + parent if parent else "")}
        self.started = time.monotonic()
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.results: dict[str, dict[str, Any]] = {}
        for arch in archs:
            cmd = [sys.executable, "-m", f"{PACKAGE}.workloads.pytorch.precompile", "--arch", arch]
            cmd += ["--batch", str(batch), "--amp", amp, "--seed", str(seed)]
            cmd += ["--hold"] if hold else []
            self.procs[arch] = subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.PIPE if hold else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        log(f"compile lane: {', '.join(archs)} compiling in child processes (cache {self.cache})")

    def release(self) -> None:
        """Let held children go on to the GPU (a line on their stdin; communicate() closes it)."""
        for p in self.procs.values():
            if p.stdin is not None and not p.stdin.closed:
                try:
                    p.stdin.write("go\n")
                    p.stdin.flush()
                except (BrokenPipeError, ValueError):
                    pass  # the child is gone: wait() reports its error

    def wait(self, arch: str, timeout: float) -> dict[str, Any]:
        """The child's report (waiting at most `timeout` s); {"error": ...} when it failed."""
        if arch in self.results:
            return self.results[arch]
        p = self.procs.get(arch)
        if p is None:
            return {"error": f"no compile child for {arch}"}
        t0 = time.monotonic()
        try:
            out, err = p.communicate(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            res: dict[str, Any] = {
                "error": f"compile child for {arch} still running after {timeout:.0f} s: killed"
            }
        else:
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            res = json.loads(lines[-1]) if lines else {"error": f"exit {p.returncode}: {err.strip()[-500:]}"}
        res["waited_s"] = round(time.monotonic() - t0, 3)
        res["done_after_s"] = round(time.monotonic() - self.started, 3)
        self.results[arch] = res
        return res

    def close(self) -> None:
        """Kill children still running (a skipped compiled step, the watchdog)."""
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.communicate()


def _package_parent() -> str:
    depth = len((__package__ or "x").split("."))
    return str(Path(__file__).resolve().parents[depth])
