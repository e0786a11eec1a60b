"""Each condition of the host's verdict (certify/verdict.py: refusal, host_verdict) pinned by a
pair: an input that breaks only that condition is refused (or failed) with its own reason, and
the honest input at the condition's edge is accepted. Removing a condition fails the first test
of its pair; inverting it (or moving its edge) fails the second (issue 23, item 14)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from fake_engine import cpu_stack
from render_cases import TORCH_BUNDLED_CU130

from envbuilder.certify.observe import Observation
from envbuilder.certify.verdict import (
    CLOCK_SLACK_S,
    CPU_SHARE_MIN,
    REFUSED,
    RunFacts,
    claimed_seconds,
    host_verdict,
)
from envbuilder.harness import HARNESS_VERSION
from envbuilder.harness.digest import tree_digest
from envbuilder.resources import harness_dir

NONCE = "c" * 32
SHA = tree_digest(harness_dir())
SEEN = Observation(source="nvml", samples=3, busy=("GPU-1",))
# The GPU path's own steps (harness/plan.py), written out: a step dropped from GPU_ONLY_STEPS must
# fail the tests that take each of them.
GPU_STEPS = ("cuda_smoke", "batch_ramp", "telemetry_overhead")


def step(name: str, status: str = "pass", seconds: float = 4.0) -> dict[str, Any]:
    reason = "" if status == "pass" else f"{name}: {status}"
    return {"kind": "step", "name": name, "status": status, "reason": reason, "seconds": seconds} | {
        "metrics": {}
    }


def cpu_result() -> dict[str, Any]:
    """An honest CPU-path result: 10 s of steps, for torch, with this run's nonce."""
    return {
        "kind": "result",
        "schema_version": 1,
        "harness_version": HARNESS_VERSION,
        "harness_sha256": SHA,
        "mode": "cpu",
        "gpu_path": False,
        "started": "2026-12-04T00:00:00Z",
        "finished": "2026-12-04T00:00:10Z",
        "wall_seconds": 10.0,
        "options": {"nonce": NONCE, "framework": "torch", "cpu_only": True},
        "steps": [
            step("host", seconds=1.0),
            step("kernel_inventory", seconds=1.0),
            step("cpu_check", seconds=2.0),
            step("cuda_smoke", "skip", 0.0),
            step("train_cpu_rn18w16_fp32_bs32", seconds=6.0),
        ],
        "thresholds": {},
        "gates": [],
        "verdict": "certified-cpu-only",
        "verdict_reason": "CPU path passed; this is NOT a GPU certification",
        "telemetry": {},
        "host": {},
    }


def gpu_result() -> dict[str, Any]:
    doc = cpu_result()
    doc.update(mode="full", gpu_path=True, verdict="certified", verdict_reason="3 checks passed on the GPU")
    doc["options"] = {"nonce": NONCE, "framework": "torch"}
    doc["steps"][3] = step("cuda_smoke")
    return doc


def cpu_facts(**changes: Any) -> RunFacts:
    base: dict[str, Any] = {
        "nonce": NONCE,
        "harness_sha256": SHA,
        "exit_code": 0,
        "access": "none",
        "stack": cpu_stack(),
        "observation": None,
        "framework": "torch",
        "container_seconds": 12.0,
        "cpu_seconds": 9.0,
    }
    return RunFacts(**{**base, **changes})


def gpu_facts(**changes: Any) -> RunFacts:
    return cpu_facts(**{"access": "toolkit", "stack": TORCH_BUNDLED_CU130, "observation": SEEN, **changes})


def refused(doc: dict[str, Any], facts: RunFacts, why: str) -> None:
    verdict, reason = host_verdict(doc, facts)
    assert verdict == "failed" and reason.startswith(REFUSED) and why in reason, reason


def test_the_honest_results_pass_on_each_path() -> None:
    assert host_verdict(cpu_result(), cpu_facts())[0] == "certified-cpu-only"
    assert host_verdict(gpu_result(), gpu_facts())[0] == "certified"


# ------------------------------------------------------------------ shape


@pytest.mark.parametrize(
    "field",
    ["harness_sha256", "gpu_path", "options", "steps", "verdict", "harness_version", "mode", "gates"],
)
@pytest.mark.parametrize("path", ["cpu", "gpu"])
def test_a_result_missing_a_field_the_host_checks_is_refused_not_a_crash(field: str, path: str) -> None:
    doc = cpu_result() if path == "cpu" else gpu_result()
    del doc[field]
    refused(doc, cpu_facts() if path == "cpu" else gpu_facts(), f"missing {field!r}")


@pytest.mark.parametrize(
    ("field", "value"), [("harness_sha256", None), ("gpu_path", "false"), ("gpu_path", 0)]
)
def test_a_field_of_the_wrong_type_is_refused(field: str, value: Any) -> None:
    doc = cpu_result()
    doc[field] = value
    refused(doc, cpu_facts(), "malformed")


# ------------------------------------------------------------------ which harness, which run


def test_another_harness_version_is_refused() -> None:
    refused({**cpu_result(), "harness_version": HARNESS_VERSION + ".1"}, cpu_facts(), "names harness")


def test_another_payload_digest_is_refused() -> None:
    refused({**cpu_result(), "harness_sha256": "sha256:" + "0" * 64}, cpu_facts(), "payload digest differs")


@pytest.mark.parametrize("options", [{"nonce": "d" * 32, "framework": "torch"}, {"framework": "torch"}])
def test_another_runs_nonce_is_refused(options: dict[str, Any]) -> None:
    refused({**cpu_result(), "options": options}, cpu_facts(), "nonce")


# ------------------------------------------------------------------ the framework (D2)


def test_a_result_for_another_framework_than_the_stack_names_is_refused() -> None:
    doc = cpu_result()
    doc["options"]["framework"] = "jax"
    refused(doc, cpu_facts(), "the result certifies 'jax', but the image's stack names 'torch'")
    # nothing named by certify: the stack's own framework is expected
    refused(doc, cpu_facts(framework=None), "stack names 'torch'")
    # with neither, no framework is expected
    assert host_verdict(doc, cpu_facts(framework=None, stack=None))[0] == "certified-cpu-only"


def test_a_passing_result_whose_framework_steps_were_all_skipped_is_refused() -> None:
    doc = cpu_result()
    for s in doc["steps"][2:]:
        s.update(status="skip", reason="torch is not installed", seconds=0.0)
    doc["steps"].append(step("jax_smoke"))  # another framework's smoke is not the image's framework
    refused(doc, cpu_facts(cpu_seconds=None), "no step of the result ran torch")


def test_the_images_own_framework_smoke_counts_as_its_framework_having_run() -> None:
    doc = cpu_result()
    for s in doc["steps"][2:]:
        s.update(status="skip", reason="time budget", seconds=0.0)
    doc["steps"].append(step("torch_smoke"))  # torch's own smoke step: torch ran
    assert host_verdict(doc, cpu_facts(cpu_seconds=None))[0] == "certified-cpu-only"


def test_one_framework_step_that_ran_is_enough_and_a_failed_result_keeps_its_own_reason() -> None:
    doc = cpu_result()
    doc["steps"][4].update(status="skip", reason="time budget", seconds=0.0)
    assert host_verdict(doc, cpu_facts())[0] == "certified-cpu-only"  # cpu_check ran
    failed = cpu_result()
    failed["steps"][2:] = [step("cpu_check", "fail", 0.1)]
    failed.update(verdict="failed", verdict_reason="failed steps: cpu_check")
    assert host_verdict(failed, cpu_facts()) == ("failed", "failed steps: cpu_check")


# ------------------------------------------------------------------ GPU claims on the CPU path


@pytest.mark.parametrize(
    ("change", "what"),
    [({"gpu_path": True}, "gpu_path"), ({"mode": "full"}, "mode"), ({"verdict": "certified"}, "verdict")],
)
def test_a_cpu_run_whose_result_claims_the_gpu_path_is_refused(change: dict[str, Any], what: str) -> None:
    refused({**cpu_result(), **change}, cpu_facts(), "claims the GPU path")


@pytest.mark.parametrize("name", GPU_STEPS)
def test_a_cpu_run_with_a_gpu_step_that_ran_is_refused_and_one_that_skipped_is_not(name: str) -> None:
    doc = cpu_result()
    doc["steps"] = [s for s in doc["steps"] if s["name"] != name] + [step(name, seconds=0.0)]
    refused(doc, cpu_facts(), "claims the GPU path")
    doc["steps"][-1] = step(name, "skip", 0.0)
    assert host_verdict(doc, cpu_facts())[0] == "certified-cpu-only"


# ------------------------------------------------------------------ the host's measure of the work (D3)


def test_claimed_work_is_the_steps_that_ran_or_the_wall_time_if_longer() -> None:
    doc = cpu_result()
    doc["steps"][3]["seconds"] = 3.0  # a skipped step's seconds do not count
    assert claimed_seconds(doc) == 10.0  # 1 + 1 + 2 + 6
    doc["steps"][2] = step("cpu_check", "warn", 2.0)  # a step that warned ran all the same
    assert claimed_seconds(doc) == 10.0
    doc["wall_seconds"] = 30.0
    assert claimed_seconds(doc) == 30.0
    doc["wall_seconds"] = True  # not a number
    assert claimed_seconds(doc) == 10.0


def test_steps_longer_than_the_container_ran_are_refused_at_the_edge() -> None:
    edge = 10.0 - CLOCK_SLACK_S
    assert host_verdict(cpu_result(), cpu_facts(container_seconds=edge))[0] == "certified-cpu-only"
    refused(cpu_result(), cpu_facts(container_seconds=edge - 0.01), "but the container ran")


def test_less_cpu_time_than_the_steps_imply_is_refused_at_the_edge() -> None:
    need = CPU_SHARE_MIN * 10.0
    assert host_verdict(cpu_result(), cpu_facts(cpu_seconds=need))[0] == "certified-cpu-only"
    refused(cpu_result(), cpu_facts(cpu_seconds=need - 0.01), "the container's cgroup used")
    # the D3 replay: a 16 s plan that used 0.1 s of CPU
    doc = cpu_result()
    doc["steps"][-1]["seconds"] = 12.0
    refused(doc, cpu_facts(container_seconds=20.0, cpu_seconds=0.1), "used 0.10 s of CPU")


def test_unmeasured_work_is_no_refusal_and_a_failed_result_is_not_judged_on_it() -> None:
    doc = cpu_result()
    assert host_verdict(doc, cpu_facts(container_seconds=None, cpu_seconds=None))[0] == "certified-cpu-only"
    failed = copy.deepcopy(doc)
    failed["steps"][-1] = step("train_cpu_rn18w16_fp32_bs32", "fail", 6.0)
    failed.update(verdict="failed", verdict_reason="failed steps: train_cpu_rn18w16_fp32_bs32")
    assert host_verdict(failed, cpu_facts(cpu_seconds=0.0))[1] == "failed steps: train_cpu_rn18w16_fp32_bs32"


def test_the_clock_holds_on_every_path_and_the_cpu_floor_on_the_cpu_path() -> None:
    # On the GPU path the host's NVML view is the evidence; the CPU floor does not apply there.
    assert host_verdict(gpu_result(), gpu_facts(cpu_seconds=0.0))[0] == "certified"
    edge = claimed_seconds(gpu_result()) - CLOCK_SLACK_S
    assert host_verdict(gpu_result(), gpu_facts(container_seconds=edge))[0] == "certified"
    refused(gpu_result(), gpu_facts(container_seconds=edge - 0.01), "but the container ran")


# ------------------------------------------------------------------ the verdict follows from the steps


def test_a_passing_verdict_over_a_failed_step_or_gate_is_refused() -> None:
    doc = cpu_result()
    doc["steps"][4] = step("train_cpu_rn18w16_fp32_bs32", "fail")
    refused(doc, cpu_facts(), "does not follow from its step records")
    gated = gpu_result()
    gated["gates"] = [{"name": "tuned_rn50_eager", "status": "fail", "reason": "below"}]
    refused(gated, gpu_facts(), "does not follow")
    warned = gpu_result()
    warned["gates"] = [{"name": "tuned_rn50_eager", "status": "warn", "reason": "unconfirmed"}]
    assert host_verdict(warned, gpu_facts())[0] == "certified"


# ------------------------------------------------------------------ the host's NVML view


def test_a_gpu_verdict_the_host_saw_no_work_for_is_refused_unless_it_took_no_sample() -> None:
    idle = Observation(source="nvml", samples=2, busy=())
    refused(gpu_result(), gpu_facts(observation=idle), "saw none on the container's GPUs in 2 samples")
    assert host_verdict(gpu_result(), gpu_facts(observation=Observation("nvml", 0, ())))[0] == "certified"
    assert host_verdict(gpu_result(), gpu_facts(observation=None))[0] == "certified"


# ------------------------------------------------------------------ host_verdict's own conditions


def test_a_cuda_stack_that_ran_only_on_the_cpu_with_the_gpus_given_fails() -> None:
    doc = cpu_result()  # the harness found no GPU although the container got them
    verdict, reason = host_verdict(doc, gpu_facts(observation=None))
    assert verdict == "failed" and "only ran on the CPU" in reason and not reason.startswith(REFUSED)
    # the CPU path itself, or a CPU stack, or no stack: certified-cpu-only stands
    assert host_verdict(doc, cpu_facts(stack=TORCH_BUNDLED_CU130))[0] == "certified-cpu-only"
    assert host_verdict(doc, gpu_facts(observation=None, stack=cpu_stack()))[0] == "certified-cpu-only"
    assert host_verdict(doc, gpu_facts(observation=None, stack=None))[0] == "certified-cpu-only"


def test_a_non_zero_exit_after_a_passing_result_fails() -> None:
    verdict, reason = host_verdict(cpu_result(), cpu_facts(exit_code=1))
    assert (verdict, reason) == ("failed", "harness exited 1 after a certified-cpu-only result")
    failed = cpu_result()
    failed["steps"][4] = step("train_cpu_rn18w16_fp32_bs32", "fail")
    failed.update(verdict="failed", verdict_reason="failed steps: train_cpu_rn18w16_fp32_bs32")
    assert host_verdict(failed, cpu_facts(exit_code=1))[1] == "failed steps: train_cpu_rn18w16_fp32_bs32"


# ------------------------------------------------------------------ set G's survivors (h13, blind mutants)


def test_a_nonce_that_shares_a_long_prefix_with_this_runs_is_another_run() -> None:
    twin = NONCE[:-1] + "d"  # the same first 31 characters
    refused({**cpu_result(), "options": {"nonce": twin, "framework": "torch"}}, cpu_facts(), "nonce")
    assert host_verdict(cpu_result(), cpu_facts())[0] == "certified-cpu-only"


def test_zero_cpu_seconds_is_a_measure_not_an_unknown() -> None:
    refused(cpu_result(), cpu_facts(cpu_seconds=0.0), "used 0.00 s of CPU")
    assert host_verdict(cpu_result(), cpu_facts(cpu_seconds=None))[0] == "certified-cpu-only"


@pytest.mark.parametrize("code", [-9, 137, 1])
def test_a_harness_killed_by_a_signal_after_a_passing_result_fails(code: int) -> None:
    verdict, reason = host_verdict(gpu_result(), gpu_facts(exit_code=code))
    assert (verdict, reason) == ("failed", f"harness exited {code} after a certified result")
    assert host_verdict(gpu_result(), gpu_facts(exit_code=0))[0] == "certified"


@pytest.mark.parametrize("status", ["fail", "error", "skip", None])
def test_a_project_smoke_that_did_not_pass_fails_whatever_it_says(status: str | None) -> None:
    smoke = {"name": "project_smoke", "status": status, "reason": f"smoke: {status}"}
    verdict, reason = host_verdict(gpu_result(), gpu_facts(project_smoke=smoke))
    assert verdict == "failed" and reason.startswith("the project's smoke command failed"), reason
    passed = {**smoke, "status": "pass", "reason": ""}
    assert host_verdict(gpu_result(), gpu_facts(project_smoke=passed))[0] == "certified"


# ------------------------------------------------------------------ set H's survivors (h13, blind mutants)


@pytest.mark.parametrize("status", ["fail"])
@pytest.mark.parametrize("name", GPU_STEPS)
def test_a_cpu_run_with_a_gpu_step_that_ran_and_failed_still_claims_the_gpu_path(
    name: str, status: str
) -> None:
    doc = cpu_result()
    doc["steps"] = [s for s in doc["steps"] if s["name"] != name] + [step(name, status, 0.0)]
    refused(doc, cpu_facts(), "claims the GPU path")


@pytest.mark.parametrize("options", [{"nonce": NONCE}, {"nonce": NONCE, "framework": None}])
def test_a_passing_result_that_names_no_framework_is_refused(options: dict[str, Any]) -> None:
    refused({**cpu_result(), "options": {**options, "cpu_only": True}}, cpu_facts(), "certifies 'None'")
    refused({**gpu_result(), "options": options}, gpu_facts(), "certifies 'None'")
    named = {**cpu_result(), "options": {**options, "framework": "torch", "cpu_only": True}}
    assert host_verdict(named, cpu_facts())[0] == "certified-cpu-only"


def test_the_cpu_floor_is_a_tenth_of_the_claimed_seconds() -> None:
    """Set I's survivor I09 (h13): the documented floor (0.1 CPU s per claimed s), not a lower one."""
    assert CPU_SHARE_MIN == 0.1
    refused(cpu_result(), cpu_facts(cpu_seconds=0.5), "used 0.50 s of CPU")  # 5% of 10 s
    assert host_verdict(cpu_result(), cpu_facts(cpu_seconds=1.0))[0] == "certified-cpu-only"


# ------------------------------------------------------------------ automatic mutants (2026-12-05)
# benchmarks/mutants.py --auto verdict on main: the conditions no test above had pinned.


def test_the_framework_certify_names_wins_over_the_stacks() -> None:
    doc = cpu_result()
    doc["options"]["framework"] = "jax"
    doc["steps"][4] = step("jax_smoke", seconds=6.0)
    assert host_verdict(doc, cpu_facts(framework="jax"))[0] == "certified-cpu-only"  # stack: torch
    refused(cpu_result(), cpu_facts(framework="jax"), "the result certifies 'torch'")


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_a_malformed_result_counts_the_problems_it_does_not_show(extra: int) -> None:
    doc = cpu_result()
    for key in ("started", "finished", "host")[: extra + 1]:
        del doc[key]
    verdict, reason = host_verdict(doc, cpu_facts())
    assert verdict == "failed" and "malformed: result: missing 'started'" in reason
    assert reason.endswith(f" (+{extra} more)" if extra else "'started'")


@pytest.mark.parametrize("digest", [SHA + "0", SHA[:-1], SHA[:20] + "0" * (len(SHA) - 20)])
def test_a_payload_digest_that_extends_or_shares_a_prefix_with_the_mounted_one_differs(digest: str) -> None:
    refused({**cpu_result(), "harness_sha256": digest}, cpu_facts(), "payload digest differs")


@pytest.mark.parametrize("nonce", [NONCE + "d", NONCE[:-1]])
def test_a_nonce_that_extends_or_cuts_this_runs_is_another_run(nonce: str) -> None:
    refused({**cpu_result(), "options": {"nonce": nonce, "framework": "torch"}}, cpu_facts(), "nonce")


def test_a_failed_result_keeps_its_own_reason_whatever_framework_it_names() -> None:
    failed = cpu_result()
    failed["options"]["framework"] = "jax"
    failed["steps"][2:] = [step("cpu_check", "fail", 0.1)]
    failed.update(verdict="failed", verdict_reason="failed steps: cpu_check")
    assert host_verdict(failed, cpu_facts()) == ("failed", "failed steps: cpu_check")


def test_only_a_gpu_verdict_is_held_to_the_gpu_work_the_host_saw() -> None:
    idle = Observation(source="nvml", samples=3, busy=())
    failed = gpu_result()
    failed["steps"][2] = step("cpu_check", "fail", 0.1)
    failed.update(verdict="failed", verdict_reason="failed steps: cpu_check")
    assert host_verdict(failed, gpu_facts(observation=idle)) == ("failed", "failed steps: cpu_check")
    cpu_only = cpu_result()  # a CPU stack given the GPUs: certified for the CPU, no GPU work claimed
    assert host_verdict(cpu_only, cpu_facts(access="toolkit", observation=idle))[0] == "certified-cpu-only"


def test_a_boolean_wall_time_is_no_number_of_seconds() -> None:
    doc = cpu_result()
    doc["steps"] = [step("host", seconds=0.25), step("cpu_check", seconds=0.25)]
    assert claimed_seconds({**doc, "wall_seconds": True}) == 0.5
    assert claimed_seconds({**doc, "wall_seconds": 2}) == 2.0


# ------------------------------------------------------------------ falsy facts are facts (issue 23)


def test_a_container_that_ran_zero_seconds_cannot_account_for_any_claimed_work() -> None:
    # 0.0 s by the host's clock is a measure (nothing ran), not an unknown (None).
    refused(cpu_result(), cpu_facts(container_seconds=0.0), "but the container ran 0.0 s")
    refused(gpu_result(), gpu_facts(container_seconds=0.0), "but the container ran 0.0 s")


def test_a_stack_label_that_names_an_empty_framework_certifies_no_framework() -> None:
    # The image's stack label is input: a framework name "" is a framework no result can be for,
    # not "no framework expected" (which would let any result through unchecked).
    blank = replace(cpu_stack(), framework="")
    refused(cpu_result(), cpu_facts(framework=None, stack=blank), "the image's stack names ''")


# --------------------------------------------------------------------------- the seventh operator set


def test_a_results_own_wall_time_counts_with_its_fraction() -> None:
    """A wall time of 2.9 s claims 2.9 s, not 2 (a whole-second cut lets a replayed result claim
    up to a second less than it says)."""
    from envbuilder.certify.verdict import claimed_seconds

    assert claimed_seconds({"steps": [], "wall_seconds": 2.9}) == 2.9
    assert claimed_seconds({"steps": [{"status": "pass", "seconds": 1.25}], "wall_seconds": 1}) == 1.25
