"""The verdict is decided on the host (certify/verdict.py, certify/observe.py): a result the
container made up is refused, whatever it claims; the host's own NVML view gates a GPU verdict."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from test_certify import IMAGE, a100_host, certify, engine, harness_result

from envbuilder.certify.observe import GpuWatch, Observation
from envbuilder.certify.verdict import REFUSED, RunFacts, host_verdict
from envbuilder.engine import ImageInfo
from envbuilder.harness.digest import tree_digest
from envbuilder.host import GpuProcess, HostReport
from envbuilder.resources import harness_dir

NONCE = "n" * 32
SHA = tree_digest(harness_dir())
SEEN = Observation(source="nvml", samples=3, busy=("GPU-1",))
IDLE = Observation(source="nvml", samples=3, busy=())


def facts(access: str = "toolkit", observation: Observation | None = SEEN, exit_code: int = 0) -> RunFacts:
    return RunFacts(
        nonce=NONCE,
        harness_sha256=SHA,
        exit_code=exit_code,
        access=access,
        stack=None,
        observation=observation,
    )


def result(verdict: str = "certified", **changes: Any) -> dict[str, Any]:
    doc = harness_result(verdict)
    doc["options"] = {"nonce": NONCE}
    doc.update(changes)
    return doc


def test_an_honest_gpu_result_the_host_saw_is_certified() -> None:
    assert host_verdict(result(), facts()) == ("certified", "harness says certified")
    assert host_verdict(result("certified-cpu-only"), facts("none", None))[0] == "certified-cpu-only"


STUB = {"kind": "result", "verdict": "certified"}  # what issue 18's stub image printed


@pytest.mark.parametrize(
    ("doc", "access", "why"),
    [
        (STUB, "none", "malformed"),
        (STUB, "toolkit", "malformed"),
        (result(options={"nonce": "replayed"}), "toolkit", "nonce"),
        (result(options={}), "toolkit", "nonce"),
        (result(harness_sha256="sha256:" + "0" * 64), "toolkit", "payload digest"),
        (result(harness_sha256=""), "toolkit", "payload digest"),  # set T's T30: none is no match
        (result(harness_version="9.9.9"), "toolkit", "names harness"),
        (result(), "none", "claims the GPU path"),
        (result("certified-cpu-only", steps=[*result()["steps"]]), "none", "claims the GPU path"),
        (result("certified-cpu-only", gpu_path=True), "none", "claims the GPU path"),
        (result(steps=[*result("failed")["steps"]]), "toolkit", "does not follow from its step records"),
        (result(gates=[{"name": "tuned_rn50_eager", "status": "fail"}]), "toolkit", "does not follow"),
    ],
)
def test_a_made_up_result_is_refused(doc: dict[str, Any], access: str, why: str) -> None:
    verdict, reason = host_verdict(doc, facts(access, None if access == "none" else SEEN))
    assert verdict == "failed" and reason.startswith(REFUSED) and why in reason, reason


def test_a_gpu_verdict_the_hosts_nvml_never_saw_is_refused() -> None:
    verdict, reason = host_verdict(result(), facts(observation=IDLE))
    assert verdict == "failed" and "host's nvml saw none" in reason
    # no sample fell inside the run (too short to watch): the step records decide alone
    assert host_verdict(result(), facts(observation=replace(IDLE, samples=0)))[0] == "certified"
    # set T's T33: a watch through nvidia-smi (no NVML), or a node's own, holds as much as NVML's
    for source in ("nvidia-smi", "node nvml"):
        verdict, reason = host_verdict(result(), facts(observation=replace(IDLE, source=source)))
        assert verdict == "failed" and f"host's {source} saw none" in reason, reason


def test_a_recorded_observation_whose_busy_gpus_is_no_list_shows_no_work() -> None:
    """Set T's T28: a node's record whose busy_gpus is a string (or a mapping) is no list of GPUs:
    read item by item, any text would show GPU work."""
    for busy in ("GPU-1", {"GPU-1": True}, 1):
        seen = Observation.from_json({"source": "nvml", "samples": 3, "busy_gpus": busy}, seen_by="node")
        assert seen is not None and seen.busy == () and not seen.saw_gpu_work, busy
    listed = Observation.from_json({"source": "nvml", "samples": 3, "busy_gpus": ["GPU-1"]}, seen_by="node")
    assert listed is not None and listed.busy == ("GPU-1",)


def _gpu_report(processes: tuple[GpuProcess, ...] = (), used: int | None = 100) -> HostReport:
    host = a100_host()
    return replace(host, gpus=(replace(host.gpus[0], processes=processes, memory_used_mib=used),))


def test_the_watch_sees_a_new_process_or_memory_rising_and_survives_a_broken_probe() -> None:
    reports = [_gpu_report(), _gpu_report(used=180), _gpu_report(used=100 + 256)]
    watch = GpuWatch(lambda: reports.pop(0), interval_s=0.0)
    watch.start()
    watch.tick()
    assert watch.stop() == Observation(source="nvml", samples=1, busy=())
    watch.tick()
    assert watch.stop().busy == ("GPU-1",)
    # Memory another process held before the run is the baseline, not the container's work.
    held = [_gpu_report(used=8000), _gpu_report(used=8000 + 255), _gpu_report(used=8000 + 256)]
    watch = GpuWatch(lambda: held.pop(0), interval_s=0.0)
    watch.start()
    watch.tick()
    assert not watch.stop().saw_gpu_work
    watch.tick()
    assert watch.stop().busy == ("GPU-1",)
    old = GpuProcess(pid=7, used_mib=10, kind="compute")
    seq = [_gpu_report((old,)), _gpu_report((old,)), _gpu_report((old, replace(old, pid=8)))]
    watch = GpuWatch(lambda: seq.pop(0), interval_s=0.0)
    watch.start()
    watch.tick()
    assert not watch.stop().saw_gpu_work  # the process that was there before is not the container's
    watch.tick()
    assert watch.stop().saw_gpu_work

    def broken() -> HostReport:
        raise RuntimeError("NVML went away")

    watch = GpuWatch(broken)
    watch.start()
    watch.tick()
    obs = watch.stop()
    assert obs.samples == 0 and "NVML went away" in obs.detail


def test_a_probe_that_lists_no_gpu_is_no_sample() -> None:
    # A read that lists no GPU saw nothing of the container's GPUs: counted as a sample, a GPU
    # verdict would be refused as "saw none in N samples" (set S's S32 counted it)
    empty = replace(_gpu_report(), gpus=())
    reports = [_gpu_report(), empty, empty]
    watch = GpuWatch(lambda: reports.pop(0), interval_s=0.0)
    watch.start()
    watch.tick()
    watch.tick()
    assert watch.stop() == Observation(source="nvml", samples=0, busy=())
    assert host_verdict(result(), facts(observation=watch.stop()))[0] == "certified"


def test_certify_runs_the_hosts_harness_even_when_the_image_has_its_own() -> None:
    eng = engine()  # IMAGE's label says /opt/envbuilder/harness
    cert, _ = certify(eng)
    argv = eng.runs[0].command
    assert argv[1] == "/opt/envbuilder-host/harness/run.py"
    (mount,) = [m for m in eng.runs[0].mounts if m.target == "/opt/envbuilder-host/harness"]
    assert mount.read_only and mount.source == str(harness_dir())
    assert len(argv[argv.index("--nonce") + 1]) == 32
    assert cert.data["run"]["harness_source"] == "host" and cert.data["run"]["harness_sha256"] == SHA
    assert cert.data["run"]["host_observation"]["busy_gpus"] == ["GPU-1"]
    assert cert.verdict == "certified"


def test_certify_refuses_the_stub_and_a_gpu_run_the_host_saw_idle() -> None:
    cpu = ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels={})
    cert, lines = certify(engine(cpu, result=dict(STUB)), gpu_access="none")
    assert cert.verdict == "failed"
    assert cert.data["verdict_reason"].startswith(REFUSED + "the harness result is")
    assert any(x.startswith("certify: refused:") for x in lines)
    idle, _ = certify(engine(), observe=a100_host)  # NVML lists no process, no memory: idle GPU
    assert idle.verdict == "failed" and "saw none on the container's GPUs" in idle.data["verdict_reason"]
    assert json.dumps(idle.data["run"]["host_observation"])  # recorded in the certificate


def test_the_watch_samples_every_line_until_it_has_seen_work() -> None:
    """`certify --quick` on the H200 (2026-12-05): the GPU was used for about a second between
    two harness lines; with a 2 s throttle from the first sample on, no sample fell on it and an
    honest certification was refused. Until work is seen every line samples; after, the throttle."""
    now = [0.0]
    reports = [_gpu_report(), _gpu_report(), _gpu_report(used=100 + 256), _gpu_report(used=100 + 256)]
    watch = GpuWatch(lambda: reports.pop(0), interval_s=2.0, clock=lambda: now[0])
    watch.start()
    watch.tick()  # t=0: idle
    now[0] = 0.5
    watch.tick()  # t=0.5, within the interval: sampled all the same, the GPU is busy now
    assert watch.stop().saw_gpu_work and watch.stop().samples == 2
    now[0] = 1.0
    watch.tick()  # work seen: throttled again
    assert watch.stop().samples == 2 and len(reports) == 1
