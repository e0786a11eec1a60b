"""The verdict is decided on the host, never taken from the container.

What the container printed is evidence, not a verdict: an image can replace the harness, or the
`python3` that runs it. So the host refuses a result that is malformed, that names another
harness (version, payload digest) or another run (the nonce certify handed in), that certifies
another framework than the image's stack (or --framework) names or ran none of its steps, that
claims GPU work on a CPU run, that claims a GPU certification the host's own NVML never saw, or
that claims more work than the host saw the container do: longer than the container ran, or (the
CPU path) more than its cgroup's CPU time can account for; and it re-derives the verdict from
the result's step records with the harness's own rule (harness/result.py decide_verdict), so a
"certified" line over failed steps stays failed. docs/certify.md states the threat model: what
each check stops, and what none does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envbuilder import frameworks
from envbuilder.certify.certificate import VERDICTS
from envbuilder.certify.observe import Observation
from envbuilder.harness import HARNESS_VERSION
from envbuilder.harness.record import SKIP, Step
from envbuilder.harness.result import decide_verdict
from envbuilder.harness.schema import validate_result
from envbuilder.resolve.model import Stack

REFUSED = "refused: "  # the verdict_reason of a result the host does not accept
GPU_ONLY_STEPS = ("cuda_smoke", "batch_ramp", "telemetry_overhead")  # plan.py: the GPU path's steps
# Steps that pass without any framework in the image (plan.py): they cannot carry a verdict alone.
FRAMEWORK_FREE_STEPS = ("host", "kernel_inventory")
# The host's own measure of the work. The harness's steps run one after the other inside
# the container's run, so their seconds cannot exceed the container's time by more than the two
# clocks' slack; and on the CPU path they compute on the CPU, so its cgroup must show CPU time for
# them. Honest quick CPU runs on the loaded 2-core machine used 0.5-1.1 CPU seconds per claimed
# second (docs/certify.md); a result replayed by a `python3` that sleeps used 0.02 s in all. The
# floor sits 5-10x below the first and, for the shortest claim seen (0.9 s), 4x above the second.
CLOCK_SLACK_S = 2.0
CPU_SHARE_MIN = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFacts:
    """What the host knows of the run independently of the container."""

    nonce: str  # handed to the harness on its command line
    harness_sha256: str  # digest of the payload certify mounted (harness/digest.py)
    exit_code: int
    access: str  # how the GPUs got in (a mode, or the runtime that handed them in); "none": CPU path
    stack: Stack | None
    observation: Observation | None  # None: the host has no GPU to watch (or a CPU run)
    framework: str | None = None  # what certify told the harness to certify for (else the stack's)
    container_seconds: float | None = None  # how long the container ran, by the host's clock
    cpu_seconds: float | None = None  # CPU time of the container's cgroup, read by the host (engine)
    # The project's own smoke command's step (certify/smoke.py), run and recorded by the host
    # after the harness; None: the image's spec asks for none.
    project_smoke: Mapping[str, Any] | None = None
    # How many GPUs the container was given (certify hands in every GPU the probe lists); None:
    # not known here (a fleet job's node judged its own run), or the CPU path.
    gpus_given: int | None = None

    @property
    def expected_framework(self) -> str | None:
        """The framework the image must run: the one certify named, else its stack's."""
        return self.framework or (self.stack.framework if self.stack is not None else None)


def _steps(result: Mapping[str, Any]) -> list[Step]:
    return [
        Step(
            name=s["name"],
            status=s["status"],
            reason=s["reason"],
            seconds=float(s["seconds"]),
            metrics=s["metrics"],
        )
        for s in result["steps"]
    ]


def refusal(result: Mapping[str, Any], facts: RunFacts) -> str | None:
    """Why the host does not accept `result` as this run's evidence, or None."""
    problems = validate_result(dict(result))
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"the harness result is malformed: {problems[0][:200]}{more}"
    if result["harness_version"] != HARNESS_VERSION:
        return (
            f"the result names harness {str(result['harness_version'])[:40]!r}, certify ran {HARNESS_VERSION}"
        )
    if result.get("harness_sha256") != facts.harness_sha256:
        return "the result does not come from the harness certify mounted (payload digest differs)"
    options = result.get("options")
    if not isinstance(options, Mapping) or options.get("nonce") != facts.nonce:
        return "the result does not carry this run's nonce (a result made elsewhere, or replayed)"
    why = _framework_refusal(result, facts.expected_framework)
    if why is not None:
        return why
    cpu_run = facts.access == "none"
    if cpu_run:
        ran = [s["name"] for s in result["steps"] if s["name"] in GPU_ONLY_STEPS and s["status"] != SKIP]
        gpu_claims = (
            result["gpu_path"] is not False or result["mode"] == "full" or result["verdict"] == "certified"
        )
        if gpu_claims or ran:
            return "the container had no GPU (the CPU path) but the result claims the GPU path"
    why = _work_refusal(result, facts)
    if why is not None:
        return why
    derived, _ = decide_verdict(
        _steps(result), result["gates"], mode=str(result["mode"]), gpu_path=result.get("gpu_path") is True
    )
    if result["verdict"] != derived:
        return (
            f"the result's verdict {result['verdict']!r} does not follow from its step records ({derived!r})"
        )
    obs = facts.observation
    if result["verdict"] == "certified" and obs is not None and obs.samples and not obs.saw_gpu_work:
        return (
            f"the result claims GPU work, but the host's {obs.source} saw none on the container's GPUs "
            f"in {obs.samples} samples"
        )
    return None


def _framework_refusal(result: Mapping[str, Any], expected: str | None) -> str | None:
    """A passing result for another framework than the image's, or one in which none of the
    framework's steps ran (an image with its framework deleted: issue 23, D2)."""
    if expected is None or result["verdict"] == "failed":
        return None
    told = result["options"].get("framework")
    if told != expected:
        return f"the result certifies {str(told)[:40]!r}, but the image's stack names {expected!r}"
    others = {fw.HARNESS.smoke_step for fw in frameworks.ALL_FRAMEWORK_MODULES if expected != fw.NAME}
    ran = [
        s["name"]
        for s in result["steps"]
        if s["status"] != SKIP and s["name"] not in FRAMEWORK_FREE_STEPS and s["name"] not in others
    ]
    if not ran:
        return f"no step of the result ran {expected}, which the image's stack names (all skipped)"
    return None


def claimed_seconds(result: Mapping[str, Any]) -> float:
    """The work a result claims, in seconds: its steps that ran, or its own wall time if longer."""
    steps = sum(float(s["seconds"]) for s in result["steps"] if s["status"] != SKIP)
    wall = result.get("wall_seconds")
    return max(steps, float(wall) if isinstance(wall, int | float) and not isinstance(wall, bool) else 0.0)


def _work_refusal(result: Mapping[str, Any], facts: RunFacts) -> str | None:
    """A passing result that claims more work than the host saw the container do (issue 23, D3:
    an image whose `python3` replays a recorded result with this run's nonce): more seconds than
    the container ran (any path: the harness records its steps one after the other), or, on the
    CPU path, less CPU time than its steps imply (on the GPU path the host's NVML view is the
    evidence, and how little host CPU a GPU step may use is not measured). The CPU path is the
    result's (gpu_path false) as well as the host's (access none): a CPU stack given the GPUs
    runs it too, and no GPU watch holds a certified-cpu-only verdict."""
    if result["verdict"] == "failed":
        return None
    claimed = claimed_seconds(result)
    ran = facts.container_seconds
    if ran is not None and claimed > ran + CLOCK_SLACK_S:
        return (
            f"the result's steps took {claimed:.1f} s, but the container ran {ran:.1f} s by the host's "
            "clock: a result not computed in this run (replayed)"
        )
    need = CPU_SHARE_MIN * claimed
    # The CPU path is the result's, whatever the access: a CPU stack (or an image with no stack
    # label) given the GPUs runs it too, and no GPU watch holds its verdict. (On --gpu-access none
    # a result that says gpu_path true was refused before: refusal's GPU claims.)
    if result["gpu_path"] is not True and facts.cpu_seconds is not None and facts.cpu_seconds < need:
        return (
            f"the result's steps took {claimed:.1f} s of CPU-path work, but the container's cgroup "
            f"used {facts.cpu_seconds:.2f} s of CPU (read by the host; at least {need:.2f} s "
            "expected): a result not computed in this run (replayed)"
        )
    return None


def host_verdict(result: Mapping[str, Any], facts: RunFacts) -> tuple[str, str]:
    """The certificate's verdict and reason: refused results fail; otherwise the harness's verdict
    made stricter (a GPU stack that ran only on the CPU although the container got the GPUs fails,
    so does a GPU run that saw fewer GPUs than it was given (gpus_unseen), a non-zero exit after a
    passing result fails, and so does the project's own smoke command
    when it did not pass: the user's code counts as much as the stack)."""
    why = refusal(result, facts)
    if why is not None:
        return "failed", REFUSED + why
    verdict, reason = str(result["verdict"]), str(result["verdict_reason"])
    assert verdict in VERDICTS  # validate_result checked it
    stack = facts.stack
    if verdict == "certified-cpu-only" and facts.access != "none" and stack is not None and stack.cuda:
        return "failed", (
            f"the container got the GPUs ({facts.access}) but the {stack.id} stack "
            "only ran on the CPU: the framework does not see the GPU inside this image"
        )
    unseen = gpus_unseen(result, facts)
    if verdict != "failed" and unseen is not None:
        return "failed", unseen
    if verdict != "failed" and facts.exit_code != 0:
        return "failed", f"harness exited {facts.exit_code} after a {verdict} result"
    smoke = facts.project_smoke
    if verdict != "failed" and smoke is not None and smoke.get("status") != "pass":
        return "failed", f"the project's smoke command failed: {smoke.get('reason') or 'no reason recorded'}"
    return verdict, reason


def gpus_unseen(result: Mapping[str, Any], facts: RunFacts) -> str | None:
    """Why a GPU run saw fewer GPUs than the container was given, or None: the host record's torch
    device_count (harness/hostinfo.py) below `facts.gpus_given`. An image whose ENV sets
    CUDA_VISIBLE_DEVICES runs its steps (and the multi_gpu all-reduce) on the GPUs it shows itself
    only, while the certificate would name every GPU of the host, and `check` fails it on such a
    node. Not judged without a count (a JAX or TensorFlow certification records none; torch
    without CUDA is the CPU path, judged by host_verdict), nor on the CPU path."""
    given = facts.gpus_given
    if not given or result.get("gpu_path") is not True:  # (a GPU claim on the CPU path: refused)
        return None
    host = result.get("host")
    torch = host.get("torch") if isinstance(host, Mapping) else None
    seen = torch.get("device_count") if isinstance(torch, Mapping) else None
    if not isinstance(seen, int) or isinstance(seen, bool) or seen >= given:
        return None
    hidden = host.get("cuda_visible_devices") if isinstance(host, Mapping) else None
    where = f" (CUDA_VISIBLE_DEVICES={hidden} in the image)" if isinstance(hidden, str) else ""
    return (
        f"the image saw {max(seen, 0)} of {given} GPUs handed in{where}: its steps ran on those only; "
        "remove CUDA_VISIBLE_DEVICES (or NVIDIA_VISIBLE_DEVICES) from the image's ENV and certify again"
    )
