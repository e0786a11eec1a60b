"""The project's own smoke command (a spec's `certify.smoke`) as a certification step: run in the
image after the harness, in a container of its own with the harness's GPU access, and recorded by
the host as the `project_smoke` step (its exit code and time by the host's clock, the last lines
of its output bounded and made printable). docs/certify.md says why it is not a harness step.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from envbuilder.certify.gpu_access import training_container
from envbuilder.engine import ContainerSpec, ImageInfo, RunResult
from envbuilder.image.spec import ProjectSmoke
from envbuilder.runtime import AccessChoice, Runtime
from envbuilder.tables import printable

STEP = "project_smoke"
TAIL_LINES = 20  # of stdout and of stderr, each
TAIL_LINE_CHARS = 300
REASON_CHARS = 200
TIMED_OUT = 124  # engine.run's exit code for a container killed at its time limit
# The engine's own line on a kill (engine/docker_engine.py): the command did not print it.
_ENGINE_LINE = "envbuilder: container killed after "
SMOKE_ENV = {"PYTHONUNBUFFERED": "1"}  # its output arrives in order, as it is printed


def output_tail(text: str, lines: int = TAIL_LINES) -> list[str]:
    """The last `lines` non-blank lines of `text`, each at most TAIL_LINE_CHARS characters and
    `printable` (no line can move a terminal's cursor or add a row where it is shown)."""
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith(_ENGINE_LINE)]
    out = []
    for line in kept[-lines:]:
        shown = printable(line.rstrip())
        out.append(shown if len(shown) <= TAIL_LINE_CHARS else shown[: TAIL_LINE_CHARS - 3] + "...")
    return out


def smoke_step(smoke: ProjectSmoke, res: RunResult, seconds: float, docker_args: list[str]) -> dict[str, Any]:
    """The `project_smoke` step record of a finished run (the harness's step shape: name, status,
    reason, seconds, metrics). It fails on a non-zero exit, naming the exit code (or the timeout)
    and the command's last line of output."""
    stdout, stderr = output_tail(res.stdout), output_tail(res.stderr)
    timed_out = res.exit_code == TIMED_OUT and _ENGINE_LINE in res.stderr
    if res.exit_code == 0:
        status, reason = "pass", ""
    else:
        last = (stderr or stdout or ["(no output)"])[-1]
        why = f"timed out after {smoke.timeout_s} s (killed)" if timed_out else f"exited {res.exit_code}"
        reason = f"{shlex.join(smoke.command)}: {why}: {last}"
        status = "fail"
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 3] + "..."
        reason = printable(reason)
    return {
        "kind": "step",
        "name": STEP,
        "status": status,
        "reason": reason,
        "seconds": round(seconds, 3),
        "metrics": {
            "command": list(smoke.command),
            "exit_code": res.exit_code,
            "timeout_s": smoke.timeout_s,
            "timed_out": timed_out,
            "stdout_tail": stdout,
            "stderr_tail": stderr,
            "docker_args": docker_args,
            "source": "host",  # run and timed by the host, not reported by the image
        },
    }


def smoke_container(
    image: ImageInfo,
    choice: AccessChoice,
    smoke: ProjectSmoke,
    *,
    mem_total: int | None = None,
    without_memlock: bool = False,
    runtime: Runtime | None = None,
    jit_cache: str | None = None,
) -> ContainerSpec:
    """The container the smoke command runs in: a training container as the harness's is
    (gpu_access.training_container: the same GPU access, shared memory, ulimits, no network, the
    host's collective settings), but with no mount of the host's (neither the harness nor its io
    folder); the image's own user, workdir and entrypoint. `without_memlock`: the runtime refused
    the memlock ulimit for the harness (drop_refused_memlock), so it goes here too. `jit_cache`:
    whose CUDA JIT cache volume of the image it mounts ("certify": the harness's), or none."""
    spec = training_container(
        image,
        choice,
        smoke.command,
        runtime=runtime,
        env=SMOKE_ENV,
        mem_total=mem_total,
        jit_cache=jit_cache,
    )
    spec = replace(spec, purpose="certify")
    return spec.without_ulimit("memlock") if without_memlock else spec


def run_project_smoke(
    rt: Runtime, smoke: ProjectSmoke, spec: ContainerSpec, *, say: Callable[[str], None]
) -> dict[str, Any]:
    """Run `smoke` in `spec` (smoke_container) until it exits or its timeout kills it; its stderr
    lines go to `say` as they come. Returns the step record (smoke_step).

    Raises DockerUnavailableError (the daemon went away), UsageError (it refused the container).
    """
    say(f"certify: {STEP}: {printable(shlex.join(smoke.command))} (timeout {smoke.timeout_s} s)")
    started = time.monotonic()
    res = rt.run(spec, on_stderr=lambda line: say(f"[{STEP}] {printable(line)}"), timeout_s=smoke.timeout_s)
    step = smoke_step(smoke, res, time.monotonic() - started, rt.argv(spec))
    outcome = "pass" if step["status"] == "pass" else f"FAIL: {step['reason']}"
    say(f"certify: {STEP}: {outcome} ({step['seconds']:.1f} s)")
    return step
