"""Every condition of certify's decisions on evidence, one table row per condition flipped (issue 23:
set T caught 2 of 6 planted slips in certify's evidence; what survived was a check narrowed to the
first record, the wrong record or key, a bound moved by one, a type let through, a missing field
defaulted so that a check is skipped). The decisions:

- certify/verdict.py: refusal (the result's shape, harness version and payload digest, nonce,
  framework, GPU claims on the CPU path, the host's clock and cgroup CPU time, the verdict re-derived
  from the steps, the host's GPU watch) and host_verdict (GPUs given but the CPU path ran, the exit
  status, the project's smoke command);
- certify/observe.py: which GPUs showed work (per GPU by UUID, per process, against the baseline
  taken before the run), the watch's samples and throttle, a node's recorded observation;
- certify/kernels.py: which kernel of which library runs on which GPU (each GPU, each library, the
  owner, the PTX JIT floor against the driver), the matrix row against the inventory, and when
  judge_kernels judges at all.

Each row flips one condition of an input the decision accepts (the base of each table), on the
record the slip would miss: the second or third GPU, library or step, the records in another order,
IDs that share a prefix, a field missing, null, of another type or at its edge on both sides.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import pytest
from fake_engine import cpu_stack
from render_cases import TORCH_BUNDLED_CU130
from test_certify import a100_host
from test_verdict_conditions import (
    GPU_STEPS,
    NONCE,
    SHA,
    cpu_facts,
    cpu_result,
    gpu_facts,
    gpu_result,
    step,
)

from envbuilder.certify.kernels import (
    KernelVerdict,
    disagreements,
    inventory_of,
    judge_inventory,
    judge_kernels,
)
from envbuilder.certify.observe import MEMORY_RISE_MIB, GpuWatch, Observation
from envbuilder.certify.verdict import CLOCK_SLACK_S, CPU_SHARE_MIN, REFUSED, RunFacts, host_verdict
from envbuilder.harness import HARNESS_VERSION
from envbuilder.host import GpuInfo, GpuProcess, HostReport
from envbuilder.host.probe import Source
from envbuilder.matrix import load_matrix

Doc = dict[str, Any]
T = TypeVar("T")
Change = Callable[[Doc], Any]


def refused_for(doc: Doc, facts: RunFacts) -> str:
    verdict, reason = host_verdict(doc, facts)
    assert verdict == "failed" and reason.startswith(REFUSED), (verdict, reason)
    return reason


def accepted(doc: Doc, facts: RunFacts) -> str:
    verdict, reason = host_verdict(doc, facts)
    assert verdict != "failed", reason
    return verdict


def on(path: str) -> tuple[Doc, RunFacts]:
    """The honest result and facts of a path: both are accepted."""
    return (cpu_result(), cpu_facts()) if path == "cpu" else (gpu_result(), gpu_facts())


PATHS = pytest.mark.parametrize("path", ["cpu", "gpu"])


def test_the_bases_of_the_tables_are_accepted() -> None:
    assert accepted(*on("cpu")) == "certified-cpu-only"
    assert accepted(*on("gpu")) == "certified"


# =========================================================================== verdict: the shape


def _set(key: str, value: Any) -> Change:
    return lambda d: d.__setitem__(key, value)


def _step_set(i: int, key: str, value: Any) -> Change:
    return lambda d: d["steps"][i].__setitem__(key, value)


def _step_del(i: int, key: str) -> Change:
    return lambda d: d["steps"][i].pop(key)


MALFORMED = [
    pytest.param(_set("harness_sha256", None), id="harness_sha256-null"),
    pytest.param(_set("harness_sha256", 0), id="harness_sha256-int"),
    pytest.param(_set("harness_version", None), id="harness_version-null"),
    pytest.param(_set("harness_version", 1), id="harness_version-int"),
    pytest.param(_set("gpu_path", None), id="gpu_path-null"),
    pytest.param(_set("gpu_path", 1), id="gpu_path-int-1"),
    pytest.param(_set("gpu_path", "true"), id="gpu_path-string"),
    pytest.param(_set("options", None), id="options-null"),
    pytest.param(_set("options", [["nonce", NONCE]]), id="options-list-of-pairs"),
    pytest.param(_set("options", f"nonce={NONCE}"), id="options-string"),
    pytest.param(_set("steps", None), id="steps-null"),
    pytest.param(_set("steps", "host cpu_check"), id="steps-string"),
    pytest.param(_set("steps", {"host": {"status": "pass"}}), id="steps-mapping"),
    pytest.param(_set("gates", None), id="gates-null"),
    pytest.param(_set("gates", "none"), id="gates-string"),
    pytest.param(_set("verdict", None), id="verdict-null"),
    pytest.param(_set("verdict", "Certified"), id="verdict-capitalised"),
    pytest.param(_set("verdict", "certified "), id="verdict-trailing-space"),
    pytest.param(_set("verdict", "pass"), id="verdict-unknown"),
    pytest.param(_set("mode", "FULL"), id="mode-capitalised"),
    pytest.param(_set("mode", None), id="mode-null"),
    # a bad step anywhere, not only the first
    pytest.param(_step_del(1, "name"), id="step2-name-missing"),
    pytest.param(_step_del(4, "status"), id="step5-status-missing"),
    pytest.param(_step_del(2, "seconds"), id="step3-seconds-missing"),
    pytest.param(_step_del(4, "metrics"), id="step5-metrics-missing"),
    pytest.param(_step_set(4, "seconds", "6.0"), id="step5-seconds-string"),
    pytest.param(_step_set(2, "seconds", None), id="step3-seconds-null"),
    pytest.param(_step_set(4, "status", "passed"), id="step5-status-unknown"),
    pytest.param(_step_set(4, "status", "warn"), id="step5-status-warn-is-no-step-status"),
    pytest.param(_step_set(4, "name", None), id="step5-name-null"),
    pytest.param(_step_set(4, "name", "host"), id="step5-duplicates-step1"),
    pytest.param(lambda d: d["steps"][4].update(status="skip", reason=""), id="step5-skip-without-reason"),
    pytest.param(lambda d: d["steps"][4].update(status="fail", reason=""), id="step5-fail-without-reason"),
    pytest.param(_step_set(2, "kind", "result"), id="step3-kind-wrong"),
    pytest.param(lambda d: d["steps"].append("cpu_check"), id="step-string"),
    pytest.param(
        lambda d: d["gates"].extend([{"name": "g", "status": "pass"}, {"name": "h"}]),
        id="gate2-status-missing",
    ),
    pytest.param(lambda d: d["gates"].append({"name": "g", "status": "passed"}), id="gate-status-unknown"),
    pytest.param(_set("wall_seconds", float("nan")), id="wall-nan-not-strict-json"),
    pytest.param(_step_set(4, "seconds", float("inf")), id="step5-seconds-inf"),
    pytest.param(_set("kind", "step"), id="kind-wrong"),
]


@PATHS
@pytest.mark.parametrize("change", MALFORMED)
def test_a_malformed_result_is_refused_before_any_field_is_believed(path: str, change: Change) -> None:
    doc, facts = on(path)
    change(doc)
    assert "the harness result is malformed" in refused_for(doc, facts)


# =========================================================================== verdict: which harness


@PATHS
@pytest.mark.parametrize(
    "version",
    [
        pytest.param(HARNESS_VERSION + ".1", id="extended"),
        pytest.param(HARNESS_VERSION[:-1], id="cut"),
        pytest.param("v" + HARNESS_VERSION, id="v-prefix"),
        pytest.param(HARNESS_VERSION + " ", id="trailing-space"),
        pytest.param(" " + HARNESS_VERSION, id="leading-space"),
        pytest.param("", id="empty"),
        pytest.param("0.0.0", id="older"),
    ],
)
def test_a_result_of_another_harness_version_is_refused(path: str, version: str) -> None:
    doc, facts = on(path)
    doc["harness_version"] = version
    assert "the result names harness" in refused_for(doc, facts)


HEX = SHA.removeprefix("sha256:")


@PATHS
@pytest.mark.parametrize(
    "digest",
    [
        pytest.param("", id="empty"),
        pytest.param(HEX, id="hex-without-prefix"),
        pytest.param("sha256:" + HEX.upper(), id="hex-upper-case"),
        pytest.param(SHA.upper(), id="all-upper-case"),
        pytest.param("sha512:" + HEX, id="another-algorithm"),
        pytest.param(SHA + " ", id="trailing-space"),
        pytest.param(" " + SHA, id="leading-space"),
        pytest.param(SHA + "\n", id="trailing-newline"),
        pytest.param(SHA[:-1] + ("0" if SHA[-1] != "0" else "1"), id="last-hex-digit"),
        pytest.param("sha256:" + "0" * 64, id="another-digest"),
    ],
)
def test_a_result_of_another_payload_is_refused(path: str, digest: str) -> None:
    doc, facts = on(path)
    doc["harness_sha256"] = digest
    assert "payload digest differs" in refused_for(doc, facts)


def test_the_digest_is_compared_with_the_one_certify_mounted_not_a_fixed_one() -> None:
    other = "sha256:" + "a" * 64
    doc = cpu_result()
    doc["harness_sha256"] = other
    assert accepted(doc, cpu_facts(harness_sha256=other)) == "certified-cpu-only"
    assert "payload digest differs" in refused_for(cpu_result(), cpu_facts(harness_sha256=other))


# =========================================================================== verdict: which run


def _options(**over: Any) -> Change:
    def change(d: Doc) -> None:
        d["options"] = {**d["options"], **over}

    return change


def _drop_nonce(d: Doc) -> None:
    del d["options"]["nonce"]


def _nonce_at_top(d: Doc) -> None:
    del d["options"]["nonce"]
    d["nonce"] = NONCE


def _nonce_nested(d: Doc) -> None:
    d["options"]["nonce"] = {"nonce": NONCE}


@PATHS
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_drop_nonce, id="missing"),
        pytest.param(_options(nonce=None), id="null"),
        pytest.param(_options(nonce=""), id="empty"),
        pytest.param(_options(nonce=NONCE.upper()), id="upper-case"),
        pytest.param(_options(nonce=" " + NONCE), id="leading-space"),
        pytest.param(_options(nonce=NONCE + "\n"), id="trailing-newline"),
        pytest.param(_options(nonce=[NONCE]), id="in-a-list"),
        pytest.param(_nonce_nested, id="nested-mapping"),
        pytest.param(_nonce_at_top, id="at-the-top-level-not-in-options"),
        pytest.param(_options(nonce=NONCE[:16]), id="first-half"),
        pytest.param(_options(nonce=NONCE[16:]), id="second-half"),
        pytest.param(_options(nonce=NONCE * 2), id="twice"),
    ],
)
def test_a_result_without_exactly_this_runs_nonce_is_refused(path: str, change: Change) -> None:
    doc, facts = on(path)
    change(doc)
    assert "this run's nonce" in refused_for(doc, facts)


def test_the_nonce_is_compared_with_this_runs_not_a_fixed_one() -> None:
    doc = cpu_result()
    doc["options"]["nonce"] = "e" * 32
    assert accepted(doc, cpu_facts(nonce="e" * 32)) == "certified-cpu-only"
    assert "this run's nonce" in refused_for(cpu_result(), cpu_facts(nonce="e" * 32))


# =========================================================================== verdict: the framework


@PATHS
@pytest.mark.parametrize(
    "told",
    [
        pytest.param(None, id="null"),
        pytest.param("", id="empty"),
        pytest.param("Torch", id="capitalised"),
        pytest.param("torch ", id="trailing-space"),
        pytest.param("tor", id="prefix"),
        pytest.param("torchvision", id="extended"),
        pytest.param("jax", id="jax"),
        pytest.param("tensorflow", id="tensorflow"),
        pytest.param(["torch"], id="in-a-list"),
    ],
)
def test_a_passing_result_for_another_framework_is_refused(path: str, told: Any) -> None:
    doc, facts = on(path)
    doc["options"]["framework"] = told
    assert "the result certifies" in refused_for(doc, facts)


@PATHS
def test_a_passing_result_that_names_no_framework_key_is_refused(path: str) -> None:
    doc, facts = on(path)
    del doc["options"]["framework"]
    assert "the result certifies 'None'" in refused_for(doc, facts)


@pytest.mark.parametrize(
    ("framework", "stack", "expected"),
    [
        pytest.param("jax", cpu_stack(), "jax", id="certify-names-jax-over-a-torch-stack"),
        pytest.param(None, cpu_stack(), "torch", id="the-stacks-when-certify-names-none"),
        pytest.param(None, cpu_stack(framework="jax"), "jax", id="a-jax-stack"),
        pytest.param("tensorflow", None, "tensorflow", id="certify-names-it-without-a-stack"),
    ],
)
def test_the_expected_framework_is_certifys_else_the_stacks(
    framework: str | None, stack: Any, expected: str
) -> None:
    facts = cpu_facts(framework=framework, stack=stack)
    for told in ("torch", "jax", "tensorflow"):
        doc = cpu_result()
        doc["options"]["framework"] = told
        doc["steps"].append(step(f"{told}_smoke", seconds=0.5))
        if told == expected:
            assert accepted(doc, facts) == "certified-cpu-only"
        else:
            assert f"but the image's stack names {expected!r}" in refused_for(doc, facts), told


ALL_STEPS = ("host", "kernel_inventory", "cpu_check", "cuda_smoke", "train_cpu_rn18w16_fp32_bs32")


def only_ran(*ran: str, extra: tuple[str, ...] = ()) -> Doc:
    """The honest CPU result in which only the steps `ran` ran (the others skipped)."""
    doc = cpu_result()
    doc["steps"] = [
        step(name, seconds=1.0) if name in ran else step(name, "skip", 0.0) for name in (*ALL_STEPS, *extra)
    ]
    return doc


@pytest.mark.parametrize(
    ("ran", "extra"),
    [
        pytest.param(("host", "kernel_inventory"), (), id="host-and-inventory-only"),
        pytest.param(("kernel_inventory",), (), id="inventory-only"),
        pytest.param(("host", "kernel_inventory", "jax_smoke"), ("jax_smoke",), id="jax-smoke-only"),
        pytest.param(("tensorflow_smoke",), ("tensorflow_smoke",), id="tensorflow-smoke-only"),
        pytest.param(("kernel_inventory",), ("torch_smoke",), id="own-smoke-skipped-last"),
        pytest.param(
            ("kernel_inventory", "jax_smoke", "tensorflow_smoke"),
            ("jax_smoke", "tensorflow_smoke"),
            id="both-other-smokes",
        ),
    ],
)
def test_a_passing_result_in_which_no_step_of_its_framework_ran_is_refused(
    ran: tuple[str, ...], extra: tuple[str, ...]
) -> None:
    doc = only_ran(*ran, extra=extra)
    assert "no step of the result ran torch" in refused_for(doc, cpu_facts(cpu_seconds=None))


@pytest.mark.parametrize(
    ("ran", "extra"),
    [
        pytest.param(("cpu_check",), (), id="cpu_check"),
        pytest.param(("train_cpu_rn18w16_fp32_bs32",), (), id="the-last-step"),
        pytest.param(("torch_smoke",), ("torch_smoke",), id="own-smoke"),
        pytest.param(("torch_smoke",), ("jax_smoke", "torch_smoke"), id="own-smoke-after-another-skipped"),
        pytest.param(("host", "kernel_inventory", "cpu_check"), (), id="with-the-framework-free-steps"),
    ],
)
def test_one_step_of_its_framework_that_ran_is_enough(ran: tuple[str, ...], extra: tuple[str, ...]) -> None:
    assert accepted(only_ran(*ran, extra=extra), cpu_facts(cpu_seconds=None)) == "certified-cpu-only"


def test_the_framework_checks_hold_for_each_passing_verdict_and_not_a_failed_one() -> None:
    for path in ("cpu", "gpu"):  # both passing verdicts are judged
        doc, facts = on(path)
        doc["options"]["framework"] = "jax"
        refused_for(doc, facts)
    failed = only_ran("host", "kernel_inventory")  # no torch step ran, but it says failed
    failed["steps"][2] = step("cpu_check", "fail", 1.0)
    failed["options"]["framework"] = "jax"
    failed.update(verdict="failed", verdict_reason="failed steps: cpu_check")
    assert host_verdict(failed, cpu_facts()) == ("failed", "failed steps: cpu_check")


# =========================================================================== verdict: GPU claims, CPU path


def _gpu_step_at(name: str, status: str, index: int) -> Change:
    def change(d: Doc) -> None:
        d["steps"] = [s for s in d["steps"] if s["name"] != name]
        d["steps"].insert(index, step(name, status, 0.5))

    return change


CPU_PATH_GPU_CLAIMS = [
    pytest.param(_set("gpu_path", True), id="gpu_path-true"),
    pytest.param(_set("mode", "full"), id="mode-full"),
    pytest.param(_set("verdict", "certified"), id="verdict-certified"),
    *(
        pytest.param(_gpu_step_at(name, status, index), id=f"{name}-{status}-at-{index}")
        for name in GPU_STEPS
        for status in ("pass", "fail")
        for index in (0, 2, 5)
    ),
]


@pytest.mark.parametrize("change", CPU_PATH_GPU_CLAIMS)
def test_a_cpu_run_whose_result_claims_any_gpu_work_is_refused(change: Change) -> None:
    doc = cpu_result()
    change(doc)
    assert "claims the GPU path" in refused_for(doc, cpu_facts())


def test_a_second_gpu_step_that_ran_after_one_that_skipped_is_a_gpu_claim() -> None:
    doc = cpu_result()  # cuda_smoke skipped (the 4th step), then batch_ramp and telemetry ran
    doc["steps"] += [step("batch_ramp", "skip", 0.0), step("telemetry_overhead", seconds=0.2)]
    assert "claims the GPU path" in refused_for(doc, cpu_facts())
    doc["steps"][-1] = step("telemetry_overhead", "skip", 0.0)
    assert accepted(doc, cpu_facts()) == "certified-cpu-only"


@pytest.mark.parametrize("access", ["toolkit", "cdi", "devices", "nvidia", "apptainer"])
def test_only_the_cpu_access_makes_gpu_claims_a_refusal(access: str) -> None:
    assert accepted(gpu_result(), gpu_facts(access=access)) == "certified"


def test_a_quick_cpu_run_is_no_gpu_claim() -> None:
    doc = cpu_result()
    doc["mode"] = "quick"  # harness/plan.py: --quick on the CPU path is mode quick, gpu_path false
    assert accepted(doc, cpu_facts()) == "certified-cpu-only"


# =========================================================================== verdict: the host's clock


@PATHS
@pytest.mark.parametrize(
    ("edit", "wall"),
    [
        pytest.param({}, None, id="the-steps-sum"),
        pytest.param({"wall_seconds": 30.0}, 30.0, id="a-longer-wall-time"),
        pytest.param({"wall_seconds": 30}, 30.0, id="an-int-wall-time"),
        pytest.param({"wall_seconds": 4.0}, None, id="a-shorter-wall-time"),
        pytest.param({"wall_seconds": "30"}, None, id="a-string-wall-time-is-no-number"),
        pytest.param({"wall_seconds": None}, None, id="a-null-wall-time"),
        pytest.param({"wall_seconds": False}, None, id="a-boolean-wall-time"),
    ],
)
def test_the_claimed_seconds_are_held_to_the_containers_at_the_edge(
    path: str, edit: dict[str, Any], wall: float | None
) -> None:
    doc, facts = on(path)
    doc.update(edit)
    claimed = wall if wall is not None else sum(s["seconds"] for s in doc["steps"] if s["status"] != "skip")
    edge = claimed - CLOCK_SLACK_S
    enough = max(CPU_SHARE_MIN * claimed, 9.0)
    assert accepted(doc, replace(facts, container_seconds=edge, cpu_seconds=enough))
    reason = refused_for(doc, replace(facts, container_seconds=edge - 0.01, cpu_seconds=enough))
    assert f"steps took {claimed:.1f} s" in reason and "by the host's clock" in reason


@PATHS
def test_every_step_that_ran_counts_not_only_the_first_or_the_longest(path: str) -> None:
    doc, facts = on(path)
    doc["wall_seconds"] = 0.0
    # 1 + 1 + 2 + 6 (the skipped step's seconds, if any, do not count)
    total = sum(s["seconds"] for s in doc["steps"] if s["status"] != "skip")
    assert accepted(doc, replace(facts, container_seconds=total - CLOCK_SLACK_S))
    refused_for(doc, replace(facts, container_seconds=total - CLOCK_SLACK_S - 0.01))


def test_a_skipped_steps_seconds_are_no_claim() -> None:
    doc = cpu_result()
    doc["steps"][3] = step("cuda_smoke", "skip", 500.0)
    assert accepted(doc, cpu_facts(container_seconds=12.0)) == "certified-cpu-only"


@pytest.mark.parametrize(
    ("container", "ok"),
    [
        pytest.param(None, True, id="unmeasured"),
        pytest.param(0.0, False, id="zero-is-a-measure"),
        pytest.param(8.0, True, id="edge"),
        pytest.param(7.99, False, id="below-the-edge"),
        pytest.param(1e9, True, id="long"),
    ],
)
def test_the_container_seconds_edge(container: float | None, ok: bool) -> None:
    facts = cpu_facts(container_seconds=container)
    assert (host_verdict(cpu_result(), facts)[0] != "failed") is ok


# =========================================================================== verdict: the cgroup's CPU time


@pytest.mark.parametrize(
    ("edit", "claimed"),
    [
        pytest.param({}, 10.0, id="the-steps-sum"),
        pytest.param({"wall_seconds": 40.0}, 40.0, id="a-longer-wall-time"),
    ],
)
def test_the_cpu_floor_is_a_share_of_all_the_claimed_seconds(edit: dict[str, Any], claimed: float) -> None:
    doc = cpu_result()
    doc.update(edit)
    need = CPU_SHARE_MIN * claimed
    assert accepted(doc, cpu_facts(container_seconds=claimed, cpu_seconds=need))
    reason = refused_for(doc, cpu_facts(container_seconds=claimed, cpu_seconds=need - 0.01))
    assert f"at least {need:.2f} s expected" in reason


@pytest.mark.parametrize(
    ("cpu", "ok"),
    [
        pytest.param(None, True, id="unmeasured"),
        pytest.param(0.0, False, id="zero-is-a-measure"),
        pytest.param(0.02, False, id="the-d3-replay"),
        pytest.param(0.99, False, id="below-the-edge"),
        pytest.param(1.0, True, id="edge"),
        pytest.param(1e3, True, id="plenty"),
    ],
)
def test_the_cpu_seconds_edge(cpu: float | None, ok: bool) -> None:
    assert (host_verdict(cpu_result(), cpu_facts(cpu_seconds=cpu))[0] != "failed") is ok


def test_the_cpu_floor_does_not_hold_a_gpu_result() -> None:
    assert accepted(gpu_result(), gpu_facts(cpu_seconds=0.0)) == "certified"


# =========================================================================== verdict: the verdict re-derived


def _fail_step(i: int) -> Change:
    return lambda d: d["steps"].__setitem__(i, step(d["steps"][i]["name"], "fail", d["steps"][i]["seconds"]))


def _gates(*statuses: str) -> Change:
    return lambda d: d.__setitem__("gates", [{"name": f"g{i}", "status": s} for i, s in enumerate(statuses)])


@PATHS
@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_fail_step(0), id="first-step-failed"),
        pytest.param(_fail_step(2), id="third-step-failed"),
        pytest.param(_fail_step(4), id="last-step-failed"),
        pytest.param(_gates("fail"), id="one-gate-failed"),
        pytest.param(_gates("pass", "pass", "fail"), id="third-gate-failed"),
        pytest.param(_gates("skip", "fail"), id="second-gate-failed-after-a-skip"),
    ],
)
def test_a_passing_verdict_over_a_failure_is_refused(path: str, change: Change) -> None:
    doc, facts = on(path)
    change(doc)
    assert "does not follow from its step records" in refused_for(doc, facts)


@PATHS
@pytest.mark.parametrize("statuses", [("pass",), ("warn", "skip"), ("pass", "warn", "skip")])
def test_gates_that_did_not_fail_keep_the_verdict(path: str, statuses: tuple[str, ...]) -> None:
    doc, facts = on(path)
    _gates(*statuses)(doc)
    assert accepted(doc, facts)


def test_the_verdict_must_match_the_path_the_result_says_it_ran() -> None:
    cpu_claims_gpu = gpu_result()
    cpu_claims_gpu["gpu_path"] = False  # the steps ran on the CPU: certified-cpu-only, not certified
    assert "('certified-cpu-only')" in refused_for(cpu_claims_gpu, gpu_facts())
    understated = gpu_result()
    understated["verdict"] = "certified-cpu-only"
    assert "('certified')" in refused_for(understated, gpu_facts())


def test_a_passing_verdict_with_only_the_host_step_run_is_refused() -> None:
    doc = only_ran("host")
    facts = cpu_facts(framework=None, stack=None)  # no framework expected: the steps decide
    assert "('failed')" in refused_for(doc, facts)
    assert accepted(only_ran("host", "kernel_inventory"), facts) == "certified-cpu-only"


def test_a_quick_gpu_result_is_certified() -> None:
    doc = gpu_result()
    doc["mode"] = "quick"
    assert accepted(doc, gpu_facts()) == "certified"


# =========================================================================== verdict: the host's GPU watch


@pytest.mark.parametrize(
    ("observation", "ok"),
    [
        pytest.param(None, True, id="no-watch"),
        pytest.param(Observation("nvml", 0, ()), True, id="no-sample"),
        pytest.param(Observation("nvml", 1, ()), False, id="one-idle-sample"),
        pytest.param(Observation("nvml", 40, ()), False, id="many-idle-samples"),
        pytest.param(Observation("nvidia-smi", 3, ()), False, id="nvidia-smi-idle"),
        pytest.param(Observation("the node's nvml", 3, ()), False, id="a-nodes-idle"),
        pytest.param(Observation("none", 3, ()), False, id="source-none-but-sampled"),
        pytest.param(Observation("nvml", 1, ("GPU-1",)), True, id="one-busy"),
        pytest.param(Observation("nvml", 3, ("GPU-3",)), True, id="only-the-third-gpu-busy"),
        pytest.param(Observation("nvml", 3, ("0",)), True, id="busy-by-index"),
    ],
)
def test_a_gpu_verdict_is_held_to_what_the_host_watched(observation: Observation | None, ok: bool) -> None:
    verdict, reason = host_verdict(gpu_result(), gpu_facts(observation=observation))
    if ok:
        assert verdict == "certified", reason
    else:
        assert verdict == "failed" and "saw none on the container's GPUs" in reason, reason


@pytest.mark.parametrize("verdict", ["certified-cpu-only", "failed"])
def test_only_a_certified_verdict_is_held_to_the_watch(verdict: str) -> None:
    idle = Observation("nvml", 3, ())
    doc = cpu_result()
    if verdict == "failed":
        doc["steps"][4] = step("train_cpu_rn18w16_fp32_bs32", "fail", 6.0)
        doc.update(verdict="failed", verdict_reason="failed steps: train_cpu_rn18w16_fp32_bs32")
    facts = cpu_facts(access="toolkit", observation=idle)  # a CPU stack given the GPUs
    assert host_verdict(doc, facts)[0] == verdict


# =========================================================================== host_verdict's own conditions


@pytest.mark.parametrize(
    ("access", "stack", "fails"),
    [
        pytest.param("toolkit", TORCH_BUNDLED_CU130, True, id="cuda-stack-toolkit"),
        pytest.param("cdi", TORCH_BUNDLED_CU130, True, id="cuda-stack-cdi"),
        pytest.param("devices", TORCH_BUNDLED_CU130, True, id="cuda-stack-devices"),
        pytest.param("none", TORCH_BUNDLED_CU130, False, id="cuda-stack-cpu-path"),
        pytest.param("toolkit", cpu_stack(), False, id="cpu-stack-toolkit"),
        pytest.param("toolkit", None, False, id="no-stack-toolkit"),
    ],
)
def test_a_cuda_stack_that_ran_only_on_the_cpu_with_the_gpus_given_fails(
    access: str, stack: Any, fails: bool
) -> None:
    verdict, reason = host_verdict(cpu_result(), cpu_facts(access=access, stack=stack))
    if fails:
        assert verdict == "failed" and f"got the GPUs ({access})" in reason and not reason.startswith(REFUSED)
    else:
        assert verdict == "certified-cpu-only", reason


def seeing(count: Any, hidden: str | None = "0", path: str = "gpu") -> Doc:
    """The honest result of `path` whose host record says torch saw `count` GPUs (missing: no
    torch record), with the image's CUDA_VISIBLE_DEVICES."""
    doc = gpu_result() if path == "gpu" else cpu_result()
    torch = {} if count == "missing" else {"device_count": count}
    doc["host"] = {"torch": torch, "cuda_visible_devices": hidden}
    return doc


@pytest.mark.parametrize(
    ("doc", "given", "words"),
    [
        pytest.param(seeing(1), 8, "saw 1 of 8 GPUs handed in (CUDA_VISIBLE_DEVICES=0 in the image)",
                     id="env-hides-seven"),
        pytest.param(seeing(7, None), 8, "the image saw 7 of 8 GPUs handed in: ", id="one-short-unsaid"),
        pytest.param(seeing(0), 2, "saw 0 of 2", id="saw-none"),
        pytest.param(seeing(1), 2, "saw 1 of 2", id="one-of-two"),
        pytest.param(seeing(8), 8, None, id="all-seen"),
        pytest.param(seeing(9), 8, None, id="saw-more"),
        pytest.param(seeing(1), 1, None, id="one-of-one"),
        pytest.param(seeing(1), None, None, id="given-unknown"),
        pytest.param(seeing(1), 0, None, id="none-listed"),
        pytest.param(seeing("missing"), 8, None, id="no-count-not-judged"),
        pytest.param(seeing(True), 8, None, id="count-bool-not-a-count"),
        pytest.param(seeing("1"), 8, None, id="count-text-not-a-count"),
        pytest.param(seeing(1.0), 8, None, id="count-float-not-a-count"),
        pytest.param({**gpu_result(), "host": {"torch": "1"}}, 8, None, id="torch-record-not-an-object"),
    ],
)  # fmt: skip
def test_a_gpu_run_must_see_every_gpu_it_was_given(doc: Doc, given: int | None, words: str | None) -> None:
    verdict, reason = host_verdict(doc, gpu_facts(gpus_given=given))
    if words is None:
        assert verdict == "certified", reason
    else:
        assert verdict == "failed" and words in reason and not reason.startswith(REFUSED), reason
        assert "CUDA_VISIBLE_DEVICES" in reason and "NVIDIA_VISIBLE_DEVICES" in reason


def test_the_cpu_path_and_a_failed_run_are_not_judged_on_the_gpus_seen() -> None:
    assert host_verdict(seeing(1, path="cpu"), cpu_facts(gpus_given=8))[0] == "certified-cpu-only"
    failed = seeing(1)
    failed["steps"][3] = step("cuda_smoke", "fail")
    failed.update(verdict="failed", verdict_reason="failed steps: cuda_smoke")
    assert host_verdict(failed, gpu_facts(gpus_given=8)) == ("failed", "failed steps: cuda_smoke")


@PATHS
@pytest.mark.parametrize("code", [1, 2, 124, 137, 255, -1, -15])
def test_any_non_zero_exit_after_a_passing_result_fails(path: str, code: int) -> None:
    doc, facts = on(path)
    assert host_verdict(doc, replace(facts, exit_code=code)) == (
        "failed",
        f"harness exited {code} after a {doc['verdict']} result",
    )


@PATHS
@pytest.mark.parametrize(
    "smoke",
    [
        pytest.param({"status": "fail", "reason": "boom"}, id="fail"),
        pytest.param({"status": "skip", "reason": "skipped"}, id="skip"),
        pytest.param({"status": "PASS", "reason": ""}, id="upper-case-pass"),
        pytest.param({"status": "pass ", "reason": ""}, id="pass-with-a-space"),
        pytest.param({"status": "passed", "reason": ""}, id="passed"),
        pytest.param({"status": True, "reason": ""}, id="status-true"),
        pytest.param({"status": None, "reason": ""}, id="status-null"),
        pytest.param({"reason": "no status"}, id="status-missing"),
        pytest.param({}, id="empty-record"),
    ],
)
def test_a_project_smoke_that_did_not_say_pass_fails(path: str, smoke: dict[str, Any]) -> None:
    doc, facts = on(path)
    verdict, reason = host_verdict(doc, replace(facts, project_smoke=smoke))
    assert verdict == "failed" and reason.startswith("the project's smoke command failed: "), reason
    assert reason.endswith(smoke.get("reason") or "no reason recorded")


@PATHS
def test_a_passing_project_smoke_and_none_keep_the_verdict(path: str) -> None:
    doc, facts = on(path)
    assert accepted(doc, replace(facts, project_smoke={"status": "pass", "reason": ""})) == doc["verdict"]
    assert accepted(doc, replace(facts, project_smoke=None)) == doc["verdict"]


def test_a_failed_result_keeps_its_own_reason_over_exit_and_smoke() -> None:
    doc = cpu_result()
    doc["steps"][4] = step("train_cpu_rn18w16_fp32_bs32", "fail", 6.0)
    doc.update(verdict="failed", verdict_reason="failed steps: train_cpu_rn18w16_fp32_bs32")
    facts = cpu_facts(exit_code=1, project_smoke={"status": "fail", "reason": "boom"})
    assert host_verdict(doc, facts) == ("failed", "failed steps: train_cpu_rn18w16_fp32_bs32")


# =========================================================================== observe: which GPU showed work


def gpu(uuid: str | None, index: int = 0, mem: int | None = 100, pids: tuple[int, ...] = ()) -> GpuInfo:
    base = a100_host().gpus[0]
    procs = tuple(GpuProcess(pid=p, used_mib=10, kind="compute") for p in pids)
    return replace(base, uuid=uuid, index=index, memory_used_mib=mem, processes=procs)


def report(*gpus: GpuInfo, source: Source = "nvml") -> HostReport:
    return replace(a100_host(), source=source, gpus=gpus)


def scripted(*answers: T | Exception) -> Callable[[], T]:
    """A reader (a probe, a cgroup's CPU time) that gives `answers` in turn, raising those that are
    exceptions (a failed read)."""
    queue = list(answers)

    def probe() -> T:
        got = queue.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    return probe


def watched(*reports: HostReport) -> Observation:
    """What a watch saw: the first report is the baseline, each further one a sample."""
    queue = list(reports)
    watch = GpuWatch(lambda: queue.pop(0), interval_s=0.0)
    watch.start()
    while queue:
        watch.tick()
    return watch.stop()


THREE = (gpu("GPU-1", 0), gpu("GPU-2", 1), gpu("GPU-3", 2))
RISE = MEMORY_RISE_MIB


@pytest.mark.parametrize(
    ("baseline", "sample", "busy"),
    [
        pytest.param(THREE, THREE, (), id="idle"),
        pytest.param(
            THREE,
            (THREE[0], THREE[1], replace(THREE[2], processes=gpu("x", pids=(9,)).processes)),
            ("GPU-3",),
            id="a-new-process-on-the-third",
        ),
        pytest.param(
            THREE,
            (THREE[0], replace(THREE[1], memory_used_mib=100 + RISE), THREE[2]),
            ("GPU-2",),
            id="memory-rise-on-the-second",
        ),
        pytest.param(
            THREE,
            (THREE[0], replace(THREE[1], memory_used_mib=100 + RISE - 1), THREE[2]),
            (),
            id="memory-one-below-the-rise-on-the-second",
        ),
        pytest.param(
            THREE,
            (THREE[0], THREE[1], replace(THREE[2], memory_used_mib=100 + RISE)),
            ("GPU-3",),
            id="memory-rise-on-the-third",
        ),
        pytest.param(
            (gpu("GPU-1", 0, mem=8000), gpu("GPU-2", 1, mem=100)),
            (gpu("GPU-2", 1, mem=100), gpu("GPU-1", 0, mem=8000)),
            (),
            id="another-order-same-memory",
        ),
        pytest.param(
            (gpu("GPU-1", 0, mem=8000), gpu("GPU-2", 1, mem=100)),
            (gpu("GPU-2", 1, mem=100 + RISE), gpu("GPU-1", 0, mem=8000)),
            ("GPU-2",),
            id="another-order-rise-on-the-one-listed-first",
        ),
        pytest.param(
            (gpu("GPU-1", 0, pids=(7,)), gpu("GPU-2", 1)),
            (gpu("GPU-1", 1, pids=(7,)), gpu("GPU-2", 0)),
            (),
            id="indexes-renumbered-uuids-kept",
        ),
        pytest.param(
            (gpu("GPU-1", 0, mem=8000), gpu("GPU-10", 1, mem=100)),
            (gpu("GPU-1", 0, mem=8000), gpu("GPU-10", 1, mem=100 + RISE)),
            ("GPU-10",),
            id="uuids-sharing-a-prefix",
        ),
        pytest.param(
            (gpu("GPU-10", 0, mem=100), gpu("GPU-1", 1, mem=8000)),
            (gpu("GPU-10", 0, mem=100), gpu("GPU-1", 1, mem=8000 + RISE)),
            ("GPU-1",),
            id="uuids-sharing-a-prefix-the-shorter-last",
        ),
        pytest.param(
            (gpu(None, 0, pids=(7,)), gpu(None, 1)),
            (gpu(None, 0, pids=(7,)), gpu(None, 1, pids=(8,))),
            ("1",),
            id="no-uuid-keyed-by-index",
        ),
        pytest.param((gpu("GPU-1", mem=8000),), (gpu("GPU-1", mem=100),), (), id="memory-freed"),
        pytest.param(
            (gpu("GPU-1", mem=100),), (gpu("GPU-1", mem=None),), (), id="memory-unread-in-the-sample"
        ),
        pytest.param((gpu("GPU-1", pids=(7,)),), (gpu("GPU-1"),), (), id="a-process-gone"),
        pytest.param((gpu("GPU-1", pids=(7, 8)),), (gpu("GPU-1", pids=(8, 7)),), (), id="the-same-processes"),
        pytest.param(
            (gpu("GPU-1", pids=(7,)),), (gpu("GPU-1", pids=(7, 9)),), ("GPU-1",), id="one-new-of-two"
        ),
        pytest.param(
            (gpu("GPU-1", pids=(7,)),), (gpu("GPU-1", pids=(9, 7)),), ("GPU-1",), id="new-listed-first"
        ),
        # A GPU whose baseline is unknown shows no work: memory another tenant already held there
        # (or all of it, counted from 0) is not the container's, and neither is a process that may
        # have run there before (NVML names host pids, never the container: the watch cannot tell).
        pytest.param(
            (gpu("GPU-1"),),
            (gpu("GPU-1"), gpu("GPU-2", 1, pids=(9,))),
            (),
            id="a-gpu-not-in-the-baseline-a-process",
        ),
        pytest.param(
            (gpu("GPU-1"),),
            (gpu("GPU-1"), gpu("GPU-2", 1, mem=40_000)),
            (),
            id="a-gpu-not-in-the-baseline-memory",
        ),
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1)),
            (gpu("GPU-1", 0), gpu("GPU-2", 1), gpu("GPU-3", 2, pids=(9,)), gpu("GPU-4", 3, pids=(10,))),
            (),
            id="the-third-and-fourth-not-in-the-baseline",
        ),
        pytest.param(
            (gpu("GPU-1"),),
            (gpu("GPU-1", mem=100 + RISE), gpu("GPU-2", 1, pids=(9,))),
            ("GPU-1",),
            id="a-gpu-not-in-the-baseline-and-work-on-one-that-is",
        ),
        pytest.param(
            (gpu("GPU-1", mem=None),), (gpu("GPU-1", mem=40_000),), (), id="memory-unread-in-the-baseline"
        ),
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1, mem=None)),
            (gpu("GPU-1", 0), gpu("GPU-2", 1, mem=RISE)),
            (),
            id="memory-unread-in-the-second-baseline",
        ),
        pytest.param(
            (gpu("GPU-1", mem=None),),
            (gpu("GPU-1", mem=40_000, pids=(9,)),),
            ("GPU-1",),
            id="memory-unread-in-the-baseline-but-a-new-process",
        ),
        pytest.param(
            (gpu(None, 0),),
            (gpu("GPU-1", 0, mem=100 + RISE, pids=(9,)),),
            (),
            id="a-uuid-unread-in-the-baseline-is-another-key",
        ),
        # A process is new only if no GPU's baseline listed it: one that ran before the container
        # (another tenant's) and turns up on another GPU is not the container's work (issue 23).
        pytest.param(
            (gpu("GPU-1", 0, pids=(7,)), gpu("GPU-2", 1)),
            (gpu("GPU-1", 0), gpu("GPU-2", 1, pids=(7,))),
            (),
            id="a-process-of-the-baseline-moved-to-another-gpu",
        ),
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1), gpu("GPU-3", 2, pids=(7,))),
            (gpu("GPU-1", 0, pids=(7,)), gpu("GPU-2", 1, pids=(7,)), gpu("GPU-3", 2, pids=(7,))),
            (),
            id="a-process-of-the-third-baseline-spread-to-every-gpu",
        ),
        pytest.param(
            (gpu("GPU-1", 0, pids=(7,)), gpu("GPU-2", 1, pids=(8,))),
            (gpu("GPU-1", 0, pids=(8,)), gpu("GPU-2", 1, pids=(7, 9))),
            ("GPU-2",),
            id="processes-swapped-and-one-new",
        ),
    ],
)
def test_the_gpus_that_showed_work(
    baseline: tuple[GpuInfo, ...], sample: tuple[GpuInfo, ...], busy: tuple[str, ...]
) -> None:
    seen = watched(report(*baseline), report(*sample))
    assert seen.busy == busy and seen.samples == 1 and seen.saw_gpu_work is bool(busy)


def test_the_rise_is_against_the_baseline_not_the_last_sample() -> None:
    half = RISE // 2 + 1
    steps = [report(gpu("GPU-1", mem=100 + n * half)) for n in range(3)]  # +129, then +258 in all
    assert watched(*steps).busy == ("GPU-1",)


def test_a_process_seen_in_one_sample_only_still_showed_work() -> None:
    seen = watched(report(gpu("GPU-1")), report(gpu("GPU-1", pids=(9,))), report(gpu("GPU-1")))
    assert seen.busy == ("GPU-1",) and seen.samples == 2


def test_the_busy_gpus_of_every_sample_add_up_sorted() -> None:
    base = (gpu("GPU-b", 0), gpu("GPU-a", 1), gpu("GPU-c", 2))
    first = (gpu("GPU-b", 0), gpu("GPU-a", 1), gpu("GPU-c", 2, pids=(9,)))
    second = (gpu("GPU-b", 0, pids=(10,)), gpu("GPU-a", 1), gpu("GPU-c", 2))
    seen = watched(report(*base), report(*first), report(*second))
    assert seen.busy == ("GPU-b", "GPU-c") and seen.samples == 2


def test_the_source_is_the_baselines_and_a_failed_baseline_takes_no_sample() -> None:
    assert (
        watched(report(gpu("GPU-1"), source="nvidia-smi"), report(gpu("GPU-1", pids=(9,)))).source
        == "nvidia-smi"
    )
    probe = scripted(RuntimeError("no NVML"), report(gpu("GPU-1", pids=(9,))))
    watch = GpuWatch(probe, interval_s=0.0)
    watch.start()
    watch.tick()
    seen = watch.stop()
    assert (seen.source, seen.samples, seen.busy) == ("none", 0, ()) and "no NVML" in seen.detail


def test_a_baseline_that_lists_no_gpu_is_no_baseline() -> None:
    """Like a failed baseline (above): nothing to compare with, so no sample is taken and the
    detail says why (before, each GPU's memory was counted from 0 MiB: any GPU with 256 MiB in use,
    another tenant's, showed work)."""
    queue = [report(source="proc"), report(gpu("GPU-1", mem=40_000, pids=(9,)))]
    watch = GpuWatch(lambda: queue.pop(0), interval_s=0.0)
    watch.start()
    watch.tick()
    seen = watch.stop()
    assert (seen.source, seen.samples, seen.busy) == ("none", 0, ())
    assert "the baseline (proc) listed no GPU" in seen.detail


@pytest.mark.parametrize(
    ("baseline", "sample", "said"),
    [
        pytest.param((gpu("GPU-1"),), (gpu("GPU-1"),), "", id="every-gpu-in-the-baseline"),
        pytest.param(
            (gpu("GPU-1"),),
            (gpu("GPU-3", 2), gpu("GPU-1"), gpu("GPU-2", 1)),
            "no baseline for GPU-2, GPU-3: their work is not counted",
            id="gpus-not-in-the-baseline",
        ),
        pytest.param(
            (gpu("GPU-1", mem=None), gpu("GPU-2", 1)),
            (gpu("GPU-1"), gpu("GPU-2", 1)),
            "no baseline memory reading for GPU-1: its memory is not counted",
            id="memory-unread-in-the-baseline",
        ),
    ],
)
def test_the_detail_names_the_gpus_whose_work_is_not_counted(
    baseline: tuple[GpuInfo, ...], sample: tuple[GpuInfo, ...], said: str
) -> None:
    assert watched(report(*baseline), report(*sample)).detail == said


def test_a_sample_that_fails_is_no_sample_and_the_next_one_counts() -> None:
    probe = scripted(report(gpu("GPU-1")), OSError("NVML busy"), report(gpu("GPU-1", pids=(9,))))
    watch = GpuWatch(probe, interval_s=0.0)
    watch.start()
    watch.tick()
    assert watch.stop().samples == 0
    watch.tick()
    seen = watch.stop()
    assert seen.samples == 1 and seen.busy == ("GPU-1",) and "NVML busy" in seen.detail


@pytest.mark.parametrize(
    ("elapsed", "sampled"),
    [
        pytest.param(1.99, False, id="inside-the-interval"),
        pytest.param(2.0, True, id="at-the-interval"),
        pytest.param(5.0, True, id="past-it"),
    ],
)
def test_once_work_was_seen_the_watch_samples_at_most_every_interval(elapsed: float, sampled: bool) -> None:
    now = [10.0]
    queue = [report(gpu("GPU-1")), report(gpu("GPU-1", pids=(9,))), report(gpu("GPU-1", 1, pids=(9,)))]
    watch = GpuWatch(lambda: queue.pop(0), interval_s=2.0, clock=lambda: now[0])
    watch.start()
    watch.tick()  # t=10: busy
    now[0] = 10.0 + elapsed
    watch.tick()
    assert watch.stop().samples == (2 if sampled else 1)


def test_until_work_is_seen_every_tick_samples_whatever_the_clock() -> None:
    queue = [report(gpu("GPU-1"))] * 4 + [report(gpu("GPU-1", pids=(9,)))]
    watch = GpuWatch(lambda: queue.pop(0), interval_s=60.0, clock=lambda: 0.0)
    watch.start()
    for _ in range(4):
        watch.tick()
    seen = watch.stop()
    assert seen.samples == 4 and seen.busy == ("GPU-1",)


# =========================================================================== observe: a node's record


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(None, None, id="none"),
        pytest.param([], None, id="a-list"),
        pytest.param({"source": "nvml", "busy_gpus": ["GPU-1"]}, None, id="samples-missing"),
        pytest.param({"source": "nvml", "samples": None, "busy_gpus": []}, None, id="samples-null"),
        pytest.param({"source": "nvml", "samples": "3", "busy_gpus": []}, None, id="samples-string"),
        pytest.param({"source": "nvml", "samples": 3.0, "busy_gpus": []}, None, id="samples-float"),
        pytest.param(
            {"source": "nvml", "samples": 3, "busy_gpus": ["GPU-2", "GPU-1"]},
            Observation("node nvml", 3, ("GPU-2", "GPU-1")),
            id="busy-list-kept-in-order",
        ),
        pytest.param(
            {"source": "nvml", "samples": 3, "busy_gpus": "GPU-1"},
            Observation("node nvml", 3, ()),
            id="busy-string",
        ),
        pytest.param({"source": "nvml", "samples": 3}, Observation("node nvml", 3, ()), id="busy-missing"),
        pytest.param(
            {"source": "nvml", "samples": 0, "busy_gpus": [], "detail": None},
            Observation("node nvml", 0, ()),
            id="detail-null",
        ),
        pytest.param(
            {"source": "nvidia-smi", "samples": 2, "busy_gpus": [], "detail": "x"},
            Observation("node nvidia-smi", 2, (), "x"),
            id="source-and-detail-kept",
        ),
    ],
)
def test_a_recorded_observation_is_read_field_by_field(doc: Any, expected: Observation | None) -> None:
    assert Observation.from_json(doc, seen_by="node") == expected


def test_an_observation_survives_its_own_record() -> None:
    seen = Observation("nvml", 5, ("GPU-1", "GPU-3"), "probe failed once")
    assert Observation.from_json(seen.to_json(), seen_by="node") == replace(seen, source="node nvml")


# =========================================================================== kernels: each GPU, each library


H100 = ("NVIDIA H100 80GB HBM3", "9.0")
A100 = ("NVIDIA A100-SXM4-80GB", "8.0")
GTX1080 = ("NVIDIA GeForce GTX 1080", "6.1")
RTX5090 = ("NVIDIA GeForce RTX 5090", "12.0")
NEW_DRIVER = "580.159.04"


def lib(name: str, sass: list[str], ptx: list[dict[str, Any]] | None = None, owner: Any = "torch") -> Doc:
    return {"library": name, "owner": owner, "sass": sass, "ptx": ptx or []}


def inv(*libs: Any) -> Doc:
    return {"libraries": list(libs)}


def judge(inventory: Doc, gpus: list[tuple[str, str]], driver: str | None = NEW_DRIVER) -> KernelVerdict:
    return judge_inventory(load_matrix(), inventory, gpus, driver)


@pytest.mark.parametrize(
    ("gpus", "bad"),
    [
        pytest.param([H100, A100, GTX1080], "NVIDIA GeForce GTX 1080", id="the-third-gpu"),
        pytest.param([GTX1080, H100, A100], "NVIDIA GeForce GTX 1080", id="the-first-gpu"),
        pytest.param([A100, GTX1080], "NVIDIA GeForce GTX 1080", id="the-second-gpu"),
        pytest.param([H100, ("NVIDIA B200", "10.0")], "NVIDIA B200", id="a-newer-major"),
    ],
)
def test_every_gpu_is_judged_not_only_the_first(gpus: list[tuple[str, str]], bad: str) -> None:
    v = judge(inv(lib("libtorch_cuda.so", ["sm_80", "sm_90"])), gpus)
    assert len(v.failures) == 1 and f"has no kernel for {bad}" in v.failures[0], v.failures
    assert len(v.covered) == len(gpus) - 1


@pytest.mark.parametrize("position", [0, 1, 2])
def test_every_library_is_judged_not_only_the_first(position: int) -> None:
    libs = [lib("liba.so", ["sm_90"]), lib("libb.so", ["sm_80", "sm_90"]), lib("libc.so", ["sm_90"])]
    libs[position] = lib("libbad.so", ["sm_75"])
    v = judge(inv(*libs), [H100])
    assert v.failures == (
        "libbad.so has no kernel for NVIDIA H100 80GB HBM3 (sm_90): SASS for 7.5 and PTX for none",
    )
    assert len(v.covered) == 2


@pytest.mark.parametrize(
    ("owner", "fails"),
    [
        pytest.param("torch", True, id="torch"),
        pytest.param("jax", True, id="jax"),
        pytest.param("tensorflow", True, id="tensorflow"),
        pytest.param("nvidia", False, id="nvidia"),
        pytest.param("system", False, id="system"),
        pytest.param(None, False, id="none"),
        pytest.param("Torch", False, id="capitalised"),
    ],
)
def test_an_uncovered_library_fails_only_when_the_framework_owns_it(owner: Any, fails: bool) -> None:
    v = judge(inv(lib("libx.so", ["sm_75"], owner=owner)), [H100])
    if fails:
        assert len(v.failures) == 1 and v.warnings == ()
    else:
        assert (
            v.failures == () and len(v.warnings) == 1 and "not the framework's own library" in v.warnings[0]
        )


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param("a string", id="string"),
        pytest.param(None, id="null"),
        pytest.param(["libx.so"], id="list"),
        pytest.param(lib("libx.so", []), id="no-device-code"),
        pytest.param(lib("libx.so", ["sm_9", "compute_x", "9"]), id="no-readable-arch"),
    ],
)
def test_an_entry_without_readable_device_code_is_not_judged_and_the_others_are(entry: Any) -> None:
    v = judge(inv(entry, lib("libbad.so", ["sm_75"])), [H100])
    assert len(v.failures) == 1 and v.failures[0].startswith("libbad.so"), v.failures
    assert v.covered == ()


@pytest.mark.parametrize("libraries", [None, "libtorch_cuda.so", {"library": "libtorch_cuda.so"}])
def test_an_inventory_whose_libraries_are_no_list_judges_nothing(libraries: Any) -> None:
    assert judge({"libraries": libraries}, [H100]) == KernelVerdict(failures=(), warnings=(), covered=())


# --------------------------------------------------------------------------- the PTX JIT floor

# PTX ISA 8.3 came with CUDA 12.3, whose toolkit driver is 545.23.06 (matrices/ptx_isa.yaml, cuda.yaml).
FLOOR = "545.23.06"
PTX90 = {"arch": "compute_90", "isa": "8.3"}


@pytest.mark.parametrize(
    ("driver", "fails"),
    [
        pytest.param(FLOOR, False, id="at-the-floor"),
        pytest.param("545.23.07", False, id="just-above"),
        pytest.param("545.23.05", True, id="just-below"),
        pytest.param("545.100.01", False, id="newer-minor-sorting-first-as-text"),
        pytest.param("545.3", True, id="older-minor-sorting-last-as-text"),
        pytest.param("535.104.05", True, id="older-branch"),
        pytest.param(None, False, id="driver-unknown"),
    ],
)
def test_ptx_is_held_to_the_driver_at_the_floor(driver: str | None, fails: bool) -> None:
    v = judge(inv(lib("libx.so", [], [PTX90])), [RTX5090], driver)
    assert "libx.so: compute_90 on NVIDIA GeForce RTX 5090" in v.covered
    if fails:
        assert v.failures == (
            f"libx.so runs on NVIDIA GeForce RTX 5090 (sm_120) only through PTX compute_90 of ISA 8.3 "
            f"(CUDA 12.3): driver {driver} < {FLOOR} cannot JIT-compile it",
        )
    else:
        assert v.failures == (), v.failures


@pytest.mark.parametrize(
    ("gpus", "bad"),
    [
        pytest.param([H100, RTX5090], "RTX 5090", id="second-gpu-on-ptx"),
        pytest.param([RTX5090, H100], "RTX 5090", id="first-gpu-on-ptx"),
    ],
)
def test_the_jit_floor_holds_for_each_gpu_that_runs_ptx(gpus: list[tuple[str, str]], bad: str) -> None:
    v = judge(inv(lib("libx.so", ["sm_90"], [PTX90])), gpus, "535.104.05")  # sm_90 for the H100
    assert len(v.failures) == 1 and bad in v.failures[0] and "compute_90 of ISA 8.3" in v.failures[0]


def test_sass_for_the_gpu_is_taken_over_ptx_the_driver_cannot_jit() -> None:
    v = judge(inv(lib("libx.so", ["sm_90"], [{"arch": "compute_90", "isa": "9.1"}])), [H100], "535.104.05")
    assert v.failures == () and v.covered == ("libx.so: sm_90 on NVIDIA H100 80GB HBM3",)


@pytest.mark.parametrize(
    ("ptx", "warned"),
    [
        pytest.param([{"arch": "compute_90", "isa": None}], "could not be read", id="isa-null"),
        pytest.param([{"arch": "compute_90", "isa": ""}], "could not be read", id="isa-empty"),
        pytest.param([{"arch": "compute_90"}], "could not be read", id="isa-missing"),
        pytest.param(
            [{"arch": "compute_90", "isa": "99.0"}], "ISA 99.0 is not in ptx_isa.yaml", id="isa-unknown"
        ),
        pytest.param(
            [{"arch": "compute_90", "isa": None}, {"arch": "compute_80", "isa": "7.0"}],
            "could not be read",
            id="another-archs-isa-is-not-this-ones",
        ),
    ],
)
def test_ptx_whose_isa_is_unknown_is_a_warning_not_a_pass(ptx: list[dict[str, Any]], warned: str) -> None:
    v = judge(inv(lib("libx.so", [], ptx)), [H100], "535.104.05")
    assert v.failures == () and len(v.warnings) == 1 and warned in v.warnings[0], v.warnings
    assert "only through PTX compute_90" in v.warnings[0]


def test_the_newest_ptx_that_runs_is_the_one_judged() -> None:
    ptx = [{"arch": "compute_90", "isa": "8.3"}, {"arch": "compute_80", "isa": "7.0"}]  # newest listed first
    v = judge(inv(lib("libx.so", [], ptx)), [H100], "535.104.05")
    assert v.covered == ("libx.so: compute_90 on NVIDIA H100 80GB HBM3",) and len(v.failures) == 1
    older = judge(inv(lib("libx.so", [], ptx)), [A100], "535.104.05")  # compute_90 cannot run on 8.0
    assert older.covered == ("libx.so: compute_80 on NVIDIA A100-SXM4-80GB",) and older.failures == ()


# --------------------------------------------------------------------------- the matrix row against the image


@pytest.mark.parametrize(
    ("sass", "ptx", "libs", "said"),
    [
        pytest.param(["8.0", "9.0"], [], [lib("a.so", ["sm_80", "sm_90"])], False, id="same"),
        pytest.param(
            ["9.0", "8.0"],
            [],
            [lib("a.so", ["sm_90"]), lib("b.so", ["sm_80"])],
            False,
            id="union-of-libraries",
        ),
        pytest.param(["8.0", "9.0"], [], [lib("a.so", ["sm_80"])], True, id="sass-missing"),
        pytest.param(["8.0"], [], [lib("a.so", ["sm_80", "sm_90"])], True, id="sass-extra"),
        pytest.param(["8.0"], ["9.0"], [lib("a.so", ["sm_80"])], True, id="ptx-missing"),
        pytest.param(["8.0"], [], [lib("a.so", ["sm_80"], [PTX90])], True, id="ptx-extra"),
        pytest.param(["8.0"], ["9.0"], [lib("a.so", ["sm_80"], [PTX90])], False, id="same-with-ptx"),
        pytest.param(["9.0"], ["8.0"], [lib("a.so", ["sm_80"], [PTX90])], True, id="sass-and-ptx-swapped"),
        pytest.param(
            ["8.0"],
            [],
            [lib("a.so", ["sm_80"]), lib("b.so", ["sm_90"], owner="nvidia")],
            False,
            id="another-owners-library-ignored",
        ),
        pytest.param(
            ["8.0"],
            [],
            [lib("b.so", ["sm_90"], owner="nvidia"), lib("a.so", ["sm_80"])],
            False,
            id="another-owners-library-listed-first",
        ),
        pytest.param(["8.0"], [], [lib("a.so", ["sm_90"], owner="jax")], False, id="no-library-of-the-owner"),
        pytest.param(
            ["8.0"], [], [lib("a.so", ["sm_80"]), lib("b.so", ["sm_86"])], True, id="second-library-differs"
        ),
    ],
)
def test_the_matrix_row_and_the_owners_libraries_are_compared_as_sets(
    sass: list[str], ptx: list[str], libs: list[Doc], said: bool
) -> None:
    lines = disagreements(sass, ptx, "row", inv(*libs), "torch")
    assert bool(lines) is said, lines


def test_a_disagreement_names_at_most_three_libraries() -> None:
    libs = [lib(f"l{i}.so", ["sm_80"]) for i in range(4)]
    (line,) = disagreements(["9.0"], [], "row", inv(*libs), "torch")
    assert "(l0.so, l1.so, l2.so ...)" in line and "SASS 9.0 and PTX none" in line
    (three,) = disagreements(["9.0"], [], "row", inv(*libs[:3]), "torch")
    assert "(l0.so, l1.so, l2.so) carry SASS 8.0" in three


# --------------------------------------------------------------------------- judge_kernels: when it judges


def with_inventory(libraries: list[Doc], at: int = 1) -> Doc:
    doc = gpu_result()
    doc["steps"][at] = step("kernel_inventory", seconds=1.0) | {"metrics": {"libraries": libraries}}
    return doc


CUDA_STACK = {
    "cuda": "13.0",
    "archs": {"sass": ["9.0"], "ptx": []},
    "framework": {"name": "torch", "version": "2.11.0", "variant": "cu130"},
}


@pytest.mark.parametrize(
    ("access", "gpus", "judged"),
    [
        pytest.param("toolkit", [H100], True, id="gpu-run"),
        pytest.param("cdi", [A100, H100], True, id="second-gpu"),
        pytest.param("none", [H100], False, id="cpu-path"),
        pytest.param("toolkit", [], False, id="no-gpu-listed"),
    ],
)
def test_the_inventory_is_judged_on_a_gpu_run_only(
    access: str, gpus: list[tuple[str, str]], judged: bool
) -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_75"])])
    v = judge_kernels(doc, gpus=gpus, driver=NEW_DRIVER, access=access, stack=None)
    assert bool(v.failures) is judged and len(v.failures) == (len(gpus) if judged else 0)


@pytest.mark.parametrize("at", [0, 1, 4])
def test_the_inventory_is_read_from_its_step_wherever_it_is(at: int) -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_75"])], at=at)
    assert inventory_of(doc) == {"libraries": [lib("libtorch_cuda.so", ["sm_75"])]}
    v = judge_kernels(doc, gpus=[H100], driver=NEW_DRIVER, access="toolkit", stack=None)
    assert len(v.failures) == 1


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d["steps"][1].update(name="kernel_inventory_x"), id="another-step-name"),
        pytest.param(lambda d: d["steps"][1].update(metrics=None), id="metrics-null"),
        pytest.param(
            lambda d: d["steps"][1].update(metrics={"libraries": "libtorch_cuda.so"}), id="libraries-string"
        ),
        pytest.param(lambda d: d["steps"][1].update(metrics={}), id="libraries-missing"),
        pytest.param(lambda d: d.update(steps=None), id="steps-null"),
    ],
)
def test_no_readable_inventory_judges_nothing(change: Change) -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_75"])])
    change(doc)
    assert inventory_of(doc) is None
    v = judge_kernels(doc, gpus=[H100], driver=NEW_DRIVER, access="toolkit", stack=CUDA_STACK)
    assert v == KernelVerdict(failures=(), warnings=(), covered=())


def test_the_first_readable_inventory_step_is_the_one() -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_90"])])
    doc["steps"].insert(0, step("kernel_inventory") | {"metrics": {"libraries": None}})
    doc["steps"].append(step("kernel_inventory") | {"metrics": {"libraries": [lib("bad.so", ["sm_75"])]}})
    assert inventory_of(doc) == {"libraries": [lib("libtorch_cuda.so", ["sm_90"])]}


@pytest.mark.parametrize(
    ("stack", "warned"),
    [
        pytest.param(CUDA_STACK, True, id="cuda-stack"),
        pytest.param({**CUDA_STACK, "cuda": None}, False, id="cpu-stack"),
        pytest.param({**CUDA_STACK, "cuda": ""}, False, id="cuda-empty"),
        pytest.param(None, False, id="no-stack"),
        pytest.param("torch cu130", False, id="stack-not-a-mapping"),
    ],
)
def test_the_matrix_row_is_compared_for_a_cuda_stack_on_any_path(stack: Any, warned: bool) -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_80"])])
    for access in ("toolkit", "none"):
        v = judge_kernels(doc, gpus=[A100], driver=NEW_DRIVER, access=access, stack=stack)
        said = [w for w in v.warnings if w.startswith("the matrix (matrix row torch 2.11.0+cu130)")]
        assert bool(said) is warned, v.warnings
        assert v.failures == ()


def test_the_matrix_row_and_the_gpus_are_both_judged() -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_80"])])
    v = judge_kernels(doc, gpus=[A100, H100], driver=NEW_DRIVER, access="toolkit", stack=CUDA_STACK)
    assert v.warnings[0].startswith("the matrix (matrix row torch 2.11.0+cu130) says SASS 9.0")
    assert v.failures == (
        "libtorch_cuda.so has no kernel for NVIDIA H100 80GB HBM3 (sm_90): SASS for 8.0 and PTX for none",
    )
    assert v.covered == ("libtorch_cuda.so: sm_80 on NVIDIA A100-SXM4-80GB",)


def test_copy_of_the_result_is_not_changed_by_judging() -> None:
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_80"])])
    before = copy.deepcopy(doc)
    judge_kernels(doc, gpus=[A100, H100], driver=NEW_DRIVER, access="toolkit", stack=CUDA_STACK)
    host_verdict(doc, gpu_facts())
    assert doc == before


# =========================================================================== verdict: CPU floor, any access


@pytest.mark.parametrize("access", ["toolkit", "cdi", "devices"])
@pytest.mark.parametrize("stack", [cpu_stack(), None], ids=["cpu-stack", "no-stack"])
def test_a_cpu_path_result_on_a_host_that_gave_the_gpus_is_held_to_the_cpu_floor(
    access: str, stack: Any
) -> None:
    """A CPU stack (or an image with no stack label) certified on a GPU host gets the GPUs, and its
    harness runs the CPU path (gpu_path false, certified-cpu-only): its steps computed on the CPU as
    on `--gpu-access none`, and no GPU watch holds a CPU verdict. A D3 replay there (a `python3`
    that sleeps, then prints a recorded result with this run's nonce) used 0.02 s of CPU: refused
    as on the CPU path, not let through because the access mode was not `none`."""
    idle = Observation("nvml", 3, ())
    facts = cpu_facts(access=access, stack=stack, observation=idle)
    reason = refused_for(cpu_result(), replace(facts, cpu_seconds=0.02))
    assert "the container's cgroup used 0.02 s of CPU" in reason
    edge = CPU_SHARE_MIN * 10.0
    assert accepted(cpu_result(), replace(facts, cpu_seconds=edge)) == "certified-cpu-only"
    refused_for(cpu_result(), replace(facts, cpu_seconds=edge - 0.01))
    assert accepted(cpu_result(), replace(facts, cpu_seconds=None)) == "certified-cpu-only"  # unmeasured


@pytest.mark.parametrize(
    "busy",
    [
        pytest.param([None], id="null"),
        pytest.param([""], id="empty-string"),
        pytest.param([{}], id="mapping"),
        pytest.param([[]], id="list"),
        pytest.param([False], id="false"),
        pytest.param([0], id="int"),
    ],
)
def test_a_recorded_busy_gpu_that_names_no_gpu_shows_no_work(busy: list[Any]) -> None:
    """A node's busy_gpus holds the UUIDs (or indexes) its watch saw work on, always as text
    (observe.py _key). An entry that names no GPU (null, "", a mapping) is no GPU that showed work:
    read through str() it was "None" or "", and a GPU verdict the node never saw work for stood."""
    seen = Observation.from_json({"source": "nvml", "samples": 3, "busy_gpus": busy}, seen_by="node")
    assert seen is not None and seen.busy == () and not seen.saw_gpu_work
    verdict, reason = host_verdict(gpu_result(), gpu_facts(observation=seen))
    assert verdict == "failed" and "saw none on the container's GPUs in 3 samples" in reason
    kept = Observation.from_json({"source": "nvml", "samples": 3, "busy_gpus": [*busy, "GPU-2"]}, seen_by="n")
    assert kept is not None and kept.busy == ("GPU-2",)


# =========================================================================== a failed claim, an empty read


def test_a_failed_result_that_claims_the_gpu_on_a_cpu_run_is_refused_not_taken_as_its_own() -> None:
    doc = cpu_result()
    doc["steps"][4] = step("train_cpu_rn18w16_fp32_bs32", "fail", 6.0)
    doc.update(verdict="failed", verdict_reason="failed steps: train_cpu_rn18w16_fp32_bs32", gpu_path=True)
    assert "claims the GPU path" in refused_for(doc, cpu_facts())


def test_a_read_that_lists_no_gpu_is_no_sample_between_two_that_do() -> None:
    seen = watched(report(gpu("GPU-1")), report(), report(gpu("GPU-1")), report())
    assert (seen.samples, seen.busy) == (1, ())


# =========================================================================== foreign.py: a node's run


def node_result(gpus: list[tuple[str, str]], libraries: list[Doc]) -> Doc:
    """The honest GPU result of a fleet job: its host record lists the node's GPUs (NVML inside the
    job), its kernel_inventory step the image's libraries."""
    doc = with_inventory(libraries)
    doc["host"] = {
        "driver_version": NEW_DRIVER,
        "cuda_driver_version": "13.0",
        "gpus": [{"name": n, "uuid": f"GPU-{i}", "compute_capability": cc} for i, (n, cc) in enumerate(gpus)],
    }
    return doc


def sealed_node_run(doc: Doc) -> Any:
    from test_certify import IMAGE

    from envbuilder.certify.foreign import seal_foreign_run

    facts = gpu_facts(observation=None, container_seconds=None, cpu_seconds=None)  # a fleet job's
    return seal_foreign_run(
        image=IMAGE, image_ref="img:1", result=doc, facts=facts, where="node1", thresholds={}, run={}
    )


@pytest.mark.parametrize(
    ("gpus", "fails"),
    [
        pytest.param([H100], False, id="one-covered"),
        pytest.param([H100, A100], False, id="two-covered"),
        pytest.param([H100, A100, GTX1080], True, id="the-third-uncovered"),
        pytest.param([GTX1080, H100], True, id="the-first-uncovered"),
        pytest.param([A100, GTX1080], True, id="the-second-uncovered"),
    ],
)
def test_a_node_run_is_judged_against_every_gpu_its_host_record_names(
    gpus: list[tuple[str, str]], fails: bool
) -> None:
    cert = sealed_node_run(node_result(gpus, [lib("libtorch_cuda.so", ["sm_80", "sm_90"])]))
    if fails:
        assert cert.verdict == "failed"
        assert cert.data["verdict_reason"].startswith(
            "kernel inventory: libtorch_cuda.so has no kernel for NVIDIA GeForce GTX 1080"
        )
    else:
        assert cert.verdict == "certified", cert.data["verdict_reason"]
    assert cert.data["run"]["host_observation"]["source"] == "none"  # the node's GPUs: not observed here


def test_a_node_run_on_the_cpu_path_whose_libraries_have_no_kernel_for_the_node_s_gpu_fails() -> None:
    # A CPU stack's job on a GPU node (the GPUs handed in) passes the host's verdict as
    # certified-cpu-only; its image's CUDA library with no kernel for the node's H100 fails the
    # certificate all the same, as every verdict but "failed" does (set X's X01: only "certified"
    # was failed, and a certificate naming the H100 was sealed).
    doc = cpu_result()
    doc["steps"][1] = step("kernel_inventory", seconds=1.0) | {
        "metrics": {"libraries": [lib("libtorch_cuda.so", ["sm_80"])]}
    }
    doc["host"] = node_result([H100], [])["host"]
    facts = gpu_facts(observation=None, container_seconds=None, cpu_seconds=None, stack=cpu_stack())
    from test_certify import IMAGE

    from envbuilder.certify.foreign import seal_foreign_run

    cert = seal_foreign_run(
        image=IMAGE, image_ref="img:1", result=doc, facts=facts, where="node1", thresholds={}, run={}
    )
    assert cert.verdict == "failed"
    assert cert.data["verdict_reason"] == (
        "kernel inventory: libtorch_cuda.so has no kernel for NVIDIA H100 80GB HBM3 (sm_90): "
        "SASS for 8.0 and PTX for none"
    )
    doc["steps"][1]["metrics"]["libraries"] = [lib("libtorch_cuda.so", ["sm_90"])]  # the same run, covered
    assert (
        seal_foreign_run(
            image=IMAGE, image_ref="img:1", result=doc, facts=facts, where="node1", thresholds={}, run={}
        ).verdict
        == "certified-cpu-only"
    )


@pytest.mark.parametrize(
    ("driver", "cuda_driver", "fails"),
    [
        pytest.param(NEW_DRIVER, "13.0", False, id="driver-above-the-floor"),
        pytest.param("545.23.06", "12.3", False, id="driver-at-the-floor"),
        pytest.param("535.104.05", "12.2", True, id="driver-below-the-floor"),
    ],
)
def test_a_node_run_s_ptx_is_held_to_the_node_s_driver_not_its_cuda_version(
    driver: str, cuda_driver: str, fails: bool
) -> None:
    # The RTX 5090 runs the image only through PTX of ISA 8.3, whose JIT needs driver 545.23.06:
    # judged against the driver the node's host record states, never its CUDA version (set W's
    # W03: "13.0" read as a driver is below every floor, "12.2" too, so both would fail).
    doc = node_result([RTX5090], [lib("libtorch_cuda.so", [], [PTX90])])
    doc["host"].update(driver_version=driver, cuda_driver_version=cuda_driver)
    cert = sealed_node_run(doc)
    if fails:
        assert cert.verdict == "failed"
        assert f"driver {driver} < 545.23.06 cannot JIT-compile it" in cert.data["verdict_reason"]
    else:
        assert cert.verdict == "certified", cert.data["verdict_reason"]


def node_certificate(verdict: str, harness: Doc, run: Doc | None = None) -> Any:
    from envbuilder.certify.certificate import build_certificate

    return build_certificate(
        image={"id": "sha256:" + "ab" * 32}, host={}, run=run or {}, harness=harness, thresholds={},
        verdict=verdict, verdict_reason="the node says so",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("said", "harness", "facts", "refused"),
    [
        pytest.param("certified", gpu_result(), gpu_facts(), False, id="certified-as-its-result"),
        pytest.param("certified-cpu-only", cpu_result(), cpu_facts(), False, id="cpu-only-as-its-result"),
        pytest.param("certified", cpu_result(), cpu_facts(), True, id="certified-over-a-cpu-result"),
        pytest.param("certified-cpu-only", gpu_result(), gpu_facts(), True, id="cpu-only-over-a-gpu-result"),
        pytest.param("certified", gpu_result(), gpu_facts(nonce="e" * 32), True, id="another-runs-nonce"),
        pytest.param(
            "certified",
            gpu_result(),
            gpu_facts(harness_sha256="sha256:" + "0" * 64),
            True,
            id="another-payload",
        ),
        pytest.param(
            "certified",
            gpu_result(),
            gpu_facts(observation=Observation("the node's nvml", 3, ())),
            True,
            id="the-node-saw-no-gpu-work",
        ),
        pytest.param("failed", {"kind": "stub"}, gpu_facts(), False, id="a-failed-one-claims-nothing"),
    ],
)
def test_a_node_certificate_is_re_judged_on_this_hosts_facts(
    said: str, harness: Doc, facts: RunFacts, refused: bool
) -> None:
    from envbuilder.certify.foreign import certificate_refusal

    why = certificate_refusal(node_certificate(said, harness), facts)
    assert (why is not None) is refused, why
    if refused:
        assert why is not None and why.startswith(f"it says {said}, but its own result gives ")


@pytest.mark.parametrize(
    ("smoke", "refused"),
    [
        pytest.param({"status": "pass", "reason": ""}, False, id="passed"),
        pytest.param({"status": "fail", "reason": "boom"}, True, id="failed"),
        pytest.param({"status": "PASS", "reason": ""}, True, id="upper-case-pass"),
        pytest.param({}, True, id="empty-record"),
    ],
)
def test_a_node_certificates_own_smoke_record_counts_here(smoke: Doc, refused: bool) -> None:
    from envbuilder.certify.foreign import certificate_refusal

    cert = node_certificate("certified", gpu_result(), run={"project_smoke": smoke})
    why = certificate_refusal(cert, gpu_facts())
    assert (why is not None) is refused, why
    if refused:
        assert why is not None and "the project's smoke command failed" in why


@pytest.mark.parametrize(
    ("recorded", "refused"),
    [
        pytest.param({"source": "nvml", "samples": 3, "busy_gpus": []}, True, id="idle"),
        pytest.param(
            {"source": "nvml", "samples": 3, "busy_gpus": ["GPU-2"]}, False, id="the-second-gpu-busy"
        ),
        pytest.param({"source": "nvml", "samples": 0, "busy_gpus": []}, False, id="no-sample"),
        pytest.param({"source": "nvml", "samples": 3, "busy_gpus": [None]}, True, id="a-null-gpu"),
        pytest.param({"source": "nvml", "samples": 3, "busy_gpus": "GPU-1"}, True, id="a-string"),
        pytest.param(None, False, id="none-recorded"),
    ],
)
def test_a_node_certificate_is_held_to_its_own_watch(recorded: Any, refused: bool) -> None:
    from envbuilder.certify.foreign import certificate_refusal, node_observation

    cert = node_certificate("certified", gpu_result(), run={"host_observation": recorded})
    facts = gpu_facts(observation=node_observation(cert))
    why = certificate_refusal(cert, facts)
    assert (why is not None) is refused, why
    if refused:
        assert why is not None and "the host's the node's nvml saw none" in why


# =========================================================================== the cgroup's CPU time


def _stats(usage: Any, read: str = "2026-12-04T23:00:00Z") -> Doc:
    return {"read": read, "cpu_stats": {"cpu_usage": {"total_usage": usage}}}


@pytest.mark.parametrize(
    ("readings", "seconds", "samples"),
    [
        pytest.param([_stats(1_500_000_000)], 1.5, 1, id="nanoseconds-to-seconds"),
        pytest.param([_stats(5_000_000_000), _stats(3_000_000_000)], 5.0, 2, id="the-highest-not-the-last"),
        pytest.param([_stats(1_000_000_000), _stats(2_000_000_000)], 2.0, 2, id="the-highest-not-the-sum"),
        pytest.param([_stats(0)], 0.0, 1, id="a-zero-reading-is-a-measure"),
        pytest.param([_stats(0, read="0001-01-01T00:00:00Z")], None, 0, id="a-gone-container-is-no-reading"),
        pytest.param(
            [_stats(2_000_000_000), _stats(9_000_000_000, read="0001-01-01T00:00:00Z")],
            2.0,
            1,
            id="a-gone-containers-reading-never-counts",
        ),
        pytest.param([_stats(None), _stats("2000000000"), _stats(2.5e9)], None, 0, id="usage-not-an-int"),
        pytest.param([{"read": "2026-12-04T23:00:00Z"}], None, 0, id="no-cpu-stats"),
        pytest.param([{"read": "2026-12-04T23:00:00Z", "cpu_stats": None}], None, 0, id="cpu-stats-null"),
        pytest.param([OSError("gone"), _stats(3_000_000_000)], 3.0, 1, id="a-failed-read-then-one"),
        pytest.param([], None, 0, id="never-read"),
        pytest.param([_stats(True)], None, 0, id="usage-a-bool"),
        pytest.param([_stats(-5)], None, 0, id="usage-negative"),
        pytest.param([_stats(0), _stats(2_000_000_000)], 2.0, 2, id="a-zero-then-one"),
    ],
)
def test_the_docker_cpu_meter_reads_the_cgroups_cpu_time(
    readings: list[Any], seconds: float | None, samples: int
) -> None:
    from envbuilder.engine.docker_engine import CpuMeter

    meter = CpuMeter(scripted(*readings))
    for _ in readings:
        meter.sample()
    assert (meter.cpu_seconds, meter.samples) == (seconds, samples)


@pytest.mark.parametrize(
    ("readings", "seconds", "samples"),
    [
        pytest.param([1_500_000_000], 1.5, 1, id="nanoseconds-to-seconds"),
        pytest.param([5_000_000_000, 3_000_000_000], 5.0, 2, id="the-highest-not-the-last"),
        pytest.param([1_000_000_000, 2_000_000_000], 2.0, 2, id="the-highest-not-the-sum"),
        pytest.param([None, 3_000_000_000], 3.0, 1, id="no-reading-then-one"),
        pytest.param([None], None, 0, id="no-reading"),
        # One rule with Docker's (cpu_reading): a reading of 0 is a measure. Skipped, a cgroup that
        # read 0 throughout left cpu_seconds None, and None holds no CPU floor (verdict.py).
        pytest.param([0], 0.0, 1, id="a-zero-reading-is-a-measure"),
        pytest.param([0, 2_000_000_000], 2.0, 2, id="a-zero-then-one"),
        pytest.param([True], None, 0, id="a-bool"),
        pytest.param([-5], None, 0, id="negative"),
    ],
)
def test_the_podman_cpu_meter_reads_the_cgroups_cpu_time(
    readings: list[Any], seconds: float | None, samples: int
) -> None:
    from envbuilder.runtime.podman import _CpuMeter

    queue = list(readings)
    meter = _CpuMeter(lambda: queue.pop(0), interval_s=0.0)

    def read() -> Any:  # what `podman stats` gave, as parsed (typed int | None; a slip may not be)
        got = queue.pop(0)
        if not queue:
            meter._done.set()  # the container ended after this reading
        return got

    meter._read = read
    meter._loop()
    assert (meter.cpu_seconds, meter.samples) == (seconds, samples)


@pytest.mark.parametrize(
    ("value", "ns"),
    [
        pytest.param(0, 0, id="zero-is-a-reading"),
        pytest.param(1, 1, id="one"),
        pytest.param(9_000_000_000_000, 9_000_000_000_000, id="large"),
        pytest.param(-1, None, id="negative"),
        pytest.param(None, None, id="none"),
        pytest.param(True, None, id="true"),
        pytest.param(False, None, id="false"),
        pytest.param(1.5e9, None, id="float"),
        pytest.param("2000000000", None, id="text"),
    ],
)
def test_one_rule_for_a_cgroup_cpu_reading(value: Any, ns: int | None) -> None:
    """The rule both runtimes' meters use (Docker's CpuMeter, Podman's _CpuMeter)."""
    from envbuilder.engine.model import cpu_reading

    assert cpu_reading(value) == ns and (ns is None or type(cpu_reading(value)) is int)


# =========================================================================== kernels: an unreadable cc


@pytest.mark.parametrize("cc", ["9", "x", "", "9.0.1", "sm_90"])
def test_a_gpu_whose_compute_capability_is_unreadable_is_a_warning_and_the_others_are_judged(cc: str) -> None:
    """judge_inventory never raises (its docstring; certify, doctor and a fleet's collector call it):
    a node's host record is the job's own output, and a compute capability there of "9" raised
    UsageError out of seal_foreign_run, ending the fleet's collection of every job."""
    v = judge(inv(lib("libtorch_cuda.so", ["sm_90"])), [("NVIDIA Odd", cc), GTX1080, H100])
    assert v.warnings == (
        f"NVIDIA Odd: compute capability {cc!r} could not be read: the kernel inventory is not judged for it",
    )
    assert len(v.failures) == 1 and "has no kernel for NVIDIA GeForce GTX 1080" in v.failures[0]
    assert v.covered == ("libtorch_cuda.so: sm_90 on NVIDIA H100 80GB HBM3",)


@pytest.mark.parametrize("cc", [None, ""])
def test_doctor_says_a_gpu_whose_compute_capability_it_could_not_read_was_not_judged(cc: str | None) -> None:
    # doctor judged only the GPUs with a compute capability, and said "every GPU has a kernel it
    # runs" of a host whose second GPU it never looked at.
    from envbuilder.doctor.checks import DockerState, assess_host

    gpus = (
        GpuInfo(index=0, name=H100[0], uuid="GPU-0", cc=H100[1], brand=None),
        GpuInfo(index=1, name="NVIDIA Odd", uuid="GPU-1", cc=cc, brand=None),
    )
    host = HostReport(source="nvml", driver=NEW_DRIVER, cuda_driver="13.0", machine="x86_64", gpus=gpus)
    report = assess_host(
        host=host,
        docker=DockerState(reachable=False, detail="no daemon"),
        tools={},
        modes=(),
        frameworks=(),
        matrix=load_matrix(),
        python="3.12",
        inventory=inv(lib("libtorch_cuda.so", ["sm_90"])),
    )
    check = next(c for c in report.checks if c.name == "kernel inventory")
    assert check.status == "warn"
    assert "NVIDIA Odd: compute capability '' could not be read" in check.detail


def test_a_node_run_whose_host_record_has_an_unreadable_compute_capability_is_sealed() -> None:
    doc = node_result([H100], [lib("libtorch_cuda.so", ["sm_90"])])
    doc["host"]["gpus"].append({"name": "NVIDIA Odd", "uuid": "GPU-9", "compute_capability": "9"})
    cert = sealed_node_run(doc)
    assert cert.verdict == "certified"
    assert any("compute capability '9' could not be read" in w for w in cert.data["run"]["warnings"])


def test_an_owners_library_without_device_code_is_not_compared() -> None:
    assert disagreements(["8.0"], [], "row", inv(lib("a.so", []), lib("b.so", ["sm_80"])), "torch") == []
    assert disagreements(["8.0"], [], "row", inv(lib("a.so", [])), "torch") == []


def test_a_disagreement_lists_the_compute_capabilities_in_numeric_order() -> None:
    (line,) = disagreements(["10.0", "9.0", "12.0a"], ["12.0"], "row", inv(lib("a.so", ["sm_80"])), "torch")
    assert "says SASS 9.0, 10.0, 12.0a and PTX 12.0;" in line and "carry SASS 8.0 and PTX none" in line


def test_a_matrix_that_does_not_load_is_a_warning_not_a_pass_or_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from envbuilder.certify import kernels
    from envbuilder.errors import MatrixError

    def broken() -> Any:
        raise MatrixError("matrices/cuda.yaml: unreadable")

    monkeypatch.setattr(kernels, "load_matrix", broken)
    doc = with_inventory([lib("libtorch_cuda.so", ["sm_75"])])
    v = judge_kernels(doc, gpus=[H100], driver=NEW_DRIVER, access="toolkit", stack=CUDA_STACK)
    assert v.failures == () and v.covered == ()
    assert v.warnings[-1] == "kernel inventory not judged: matrices/cuda.yaml: unreadable"
    assert v.warnings[0].startswith("the matrix (matrix row torch 2.11.0+cu130)")  # said before the load


# =========================================================================== auto mutants missed alone


@pytest.mark.parametrize(
    "facts",
    [
        pytest.param(cpu_facts(container_seconds=0.0), id="no-container-time"),
        pytest.param(cpu_facts(cpu_seconds=0.0), id="no-cpu-time"),
    ],
)
def test_a_failed_result_is_not_judged_on_the_work_it_claims(facts: RunFacts) -> None:
    doc = cpu_result()
    doc["steps"][4] = step("train_cpu_rn18w16_fp32_bs32", "fail", 6.0)
    doc.update(verdict="failed", verdict_reason="failed steps: train_cpu_rn18w16_fp32_bs32")
    assert host_verdict(doc, facts) == ("failed", "failed steps: train_cpu_rn18w16_fp32_bs32")


@pytest.mark.parametrize(
    ("seconds", "wall", "edge"),
    [
        pytest.param([2.9, 2.9], None, 5.8, id="step-fractions-add-up"),
        pytest.param([0.5], 5.9, 5.9, id="a-wall-times-fraction"),
    ],
)
def test_claimed_seconds_keep_their_fractions(seconds: list[float], wall: float | None, edge: float) -> None:
    doc = cpu_result()
    doc["steps"] = [step("host", seconds=0.0)] + [
        step(f"cpu_check{i}", seconds=s) for i, s in enumerate(seconds)
    ]
    doc["wall_seconds"] = wall
    facts = cpu_facts(framework=None, stack=None, cpu_seconds=None)
    assert accepted(doc, replace(facts, container_seconds=edge - CLOCK_SLACK_S))
    refused_for(doc, replace(facts, container_seconds=edge - CLOCK_SLACK_S - 0.05))


def test_an_empty_expected_framework_is_one_no_result_is_for() -> None:
    refused_for(cpu_result(), cpu_facts(framework=None, stack=replace(cpu_stack(), framework="")))


@pytest.mark.parametrize(("missing", "tail"), [(1, "'started'"), (2, " (+1 more)"), (3, " (+2 more)")])
def test_a_malformed_results_reason_counts_what_it_does_not_show(missing: int, tail: str) -> None:
    doc = cpu_result()
    for key in ("started", "finished", "host")[:missing]:
        del doc[key]
    assert refused_for(doc, cpu_facts()).endswith(tail)


@pytest.mark.parametrize("wall", [True, False])
def test_a_boolean_wall_time_claims_no_second(wall: bool) -> None:
    doc = cpu_result()
    doc["steps"] = [step("host", seconds=0.25), step("cpu_check", seconds=0.25)]
    doc["wall_seconds"] = wall
    facts = cpu_facts(framework=None, stack=None, container_seconds=None)
    assert accepted(doc, replace(facts, cpu_seconds=CPU_SHARE_MIN * 0.5))  # True read as 1 s needs 0.1
    refused_for(doc, replace(facts, cpu_seconds=CPU_SHARE_MIN * 0.5 - 0.001))
