"""certify runs the project's own smoke command (a spec's certify.smoke) after the harness, as the
`project_smoke` step: the spec field and its label, the container it runs in, the step record
(pass, fail, timeout, bounded output) and the host's verdict counting it. FakeEngine, no Docker."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from fake_engine import FakeEngine
from test_certify import IMAGE, Harness, certify, harness_result, mode
from test_verdict import facts, result

from envbuilder.certify.certificate import Certificate, build_certificate, verify_certificate
from envbuilder.certify.foreign import certificate_refusal, seal_foreign_run
from envbuilder.certify.record import StepRecord
from envbuilder.certify.smoke import TAIL_LINE_CHARS, TAIL_LINES, output_tail
from envbuilder.certify.verdict import host_verdict
from envbuilder.cli.certify_cmd import key_metric
from envbuilder.engine import ContainerSpec, ImageInfo, RunResult
from envbuilder.errors import CertificateRefusedError, SpecError
from envbuilder.hashing import canonical_json
from envbuilder.image.metadata import read_metadata
from envbuilder.image.spec import ProjectSmoke, parse_certify_settings, parse_spec
from envbuilder.report.model import build_report

SMOKE = ["python", "-c", "import demo; demo.main(['--steps', '1'])"]
BASE: dict[str, Any] = {"name": "demo", "framework": "torch==2.13.*"}


def labelled(smoke: object) -> ImageInfo:
    """IMAGE with a certify label that asks for `smoke`."""
    label = json.dumps({"level": "default", "thresholds": {}, "smoke": smoke})
    return ImageInfo(
        id=IMAGE.id, tags=(), repo_digests=(), labels={**IMAGE.labels, "io.envbuilder.certify": label}
    )


@dataclass
class Project:
    """A FakeEngine job: the harness (Harness) for its container, the project's command for the
    other; `exit_code`, `stdout`, `stderr` are what the project's command does."""

    exit_code: int = 0
    stdout: str = "one step: loss 2.3\n"
    stderr: str = ""
    harness: Harness = field(default_factory=Harness)

    def __call__(self, spec: ContainerSpec, on_stderr: Callable[[str], None] | None) -> RunResult:
        if any(m.target == "/envbuilder-io" for m in spec.mounts):
            return self.harness(spec, on_stderr)
        for line in self.stderr.splitlines():
            if on_stderr:
                on_stderr(line)
        return RunResult(exit_code=self.exit_code, stdout=self.stdout, stderr=self.stderr)


def project_engine(smoke: object = SMOKE, **kw: Any) -> FakeEngine:
    image = labelled(smoke)
    harness = kw.pop("harness", Harness())
    return FakeEngine(images={"img:1": image, image.id: image}, job=Project(harness=harness, **kw))


def project(eng: FakeEngine) -> Project:
    assert isinstance(eng.job, Project)
    return eng.job


# ------------------------------------------------------------------ the spec field and its label


def test_the_smoke_field_in_each_form_and_its_label_round_trip() -> None:
    as_list = parse_spec({**BASE, "certify": {"smoke": SMOKE}}, "spec.yaml", base_dir=Path("/x"))
    as_text = parse_spec(
        {**BASE, "certify": {"smoke": "python -m demo.smoke"}}, "spec.yaml", base_dir=Path("/x")
    )
    as_map = parse_spec(
        {**BASE, "certify": {"smoke": {"command": SMOKE, "timeout_s": 60}}}, "spec.yaml", base_dir=Path("/x")
    )
    assert as_list.certify.smoke == ProjectSmoke(command=tuple(SMOKE), timeout_s=300)
    assert as_text.certify.smoke == ProjectSmoke(command=("python", "-m", "demo.smoke"))
    assert as_map.certify.smoke == ProjectSmoke(command=tuple(SMOKE), timeout_s=60)
    # the image's label (render.py: canonical JSON of to_dict) reads back as the same settings
    label = canonical_json(as_map.certify.to_dict())
    assert parse_certify_settings(json.loads(label), "label") == as_map.certify
    meta = read_metadata(ImageInfo(id="x", tags=(), repo_digests=(), labels={"io.envbuilder.certify": label}))
    assert meta.certify == as_map.certify and meta.problems == ()
    # a lock embeds to_dict and parse_spec reads it back
    again = parse_spec(as_map.to_dict(), "lock", base_dir=Path("/x"))
    assert again.certify == as_map.certify


def test_a_spec_without_smoke_keeps_its_canonical_form_and_hash() -> None:
    spec = parse_spec({**BASE, "certify": {"level": "quick"}}, "spec.yaml", base_dir=Path("/x"))
    assert spec.to_dict()["certify"] == {"level": "quick", "thresholds": {}}  # as before the field


@pytest.mark.parametrize(
    ("smoke", "field_name"),
    [
        ([], "certify.smoke"),
        ({"command": ["true"], "timeout_s": 3600}, "certify.smoke.timeout_s"),
        ({"command": ["true"], "timeout_s": "60"}, "certify.smoke.timeout_s"),
        ({"timeout_s": 60}, "certify.smoke.command"),
        ({"command": ["true"], "env": {}}, "certify.smoke.env"),
        (["python", "-c", "print(1)\nprint(2)"], "certify.smoke[2]"),
        ("python 'unclosed", "certify.smoke"),
    ],
)
def test_a_bad_smoke_field_is_refused_naming_the_field(smoke: object, field_name: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec({**BASE, "certify": {"smoke": smoke}}, "spec.yaml", base_dir=Path("/x"))
    assert err.value.field == field_name and f"field {field_name!r}" in err.value.message


# ------------------------------------------------------------------ certify runs it


def test_a_passing_smoke_command_is_a_step_of_the_certificate() -> None:
    eng = project_engine()
    cert, lines = certify(eng)
    assert cert.verdict == "certified" and verify_certificate(cert, image_id=IMAGE.id) == []
    step = cert.data["run"]["project_smoke"]
    assert step["status"] == "pass" and step["metrics"]["exit_code"] == 0
    assert step["metrics"]["command"] == SMOKE and step["metrics"]["timeout_s"] == 300
    assert step["metrics"]["stdout_tail"] == ["one step: loss 2.3"]
    assert [s.name for s in cert.steps][-1] == "project_smoke"  # after the harness's steps
    assert "project_smoke" not in [s["name"] for s in cert.data["harness"]["steps"]]  # not the image's claim
    assert any(line.startswith("certify: project_smoke: pass") for line in lines)
    harness_box, smoke_box = eng.runs
    # the same GPU access, shared memory, ulimits and network as the harness; none of its mounts;
    # the image's own user, workdir and entrypoint
    assert smoke_box.command == tuple(SMOKE) and smoke_box.image == IMAGE.id
    assert smoke_box.gpus == harness_box.gpus is not None
    assert smoke_box.shm_size == harness_box.shm_size and smoke_box.ulimits == harness_box.ulimits
    assert smoke_box.network == "none" and smoke_box.mounts == ()
    assert smoke_box.user is None and smoke_box.workdir is None and smoke_box.entrypoint is None
    assert smoke_box.env["PYTHONUNBUFFERED"] == "1"


def test_the_smoke_container_gets_the_harness_access_in_every_mode() -> None:
    cdi = project_engine()
    certify(cdi, access_modes=lambda _d: [mode("toolkit", False), mode("cdi"), mode("devices", False)])
    assert cdi.runs[1].cdi_devices == cdi.runs[0].cdi_devices == ("nvidia.com/gpu=all",)
    cpu = project_engine(harness=Harness(result=harness_result("certified-cpu-only")))
    cert, _ = certify(cpu, gpu_access="none")
    assert cpu.runs[1].gpus is None and cpu.runs[1].cdi_devices == () and cpu.runs[1].devices == ()
    assert cert.data["run"]["project_smoke"]["status"] == "pass"


def test_a_failing_smoke_command_fails_certification_with_its_reason() -> None:
    eng = project_engine(
        exit_code=1, stdout="", stderr="Traceback ...\nModuleNotFoundError: No module named 'demo'\n"
    )
    cert, lines = certify(eng)
    assert cert.verdict == "failed" and verify_certificate(cert) == []
    reason = cert.verdict_reason
    assert reason.startswith("the project's smoke command failed: python -c 'import demo; demo.main")
    assert "exited 1" in reason and "No module named 'demo'" in reason
    step = cert.data["run"]["project_smoke"]
    assert step["status"] == "fail" and step["metrics"]["exit_code"] == 1
    assert step["metrics"]["stderr_tail"][-1] == "ModuleNotFoundError: No module named 'demo'"
    assert "[project_smoke] ModuleNotFoundError: No module named 'demo'" in lines  # streamed
    assert cert.data["harness"]["verdict"] == "certified"  # the stack passed; the project did not


def test_a_smoke_command_that_runs_out_of_time_fails_naming_the_timeout() -> None:
    killed = "epoch 1 ...\nenvbuilder: container killed after 5 s"  # what engine.run returns
    eng = project_engine({"command": SMOKE, "timeout_s": 5}, exit_code=124, stdout="", stderr=killed)
    cert, _ = certify(eng)
    assert cert.verdict == "failed" and "timed out after 5 s (killed): epoch 1 ..." in cert.verdict_reason
    step = cert.data["run"]["project_smoke"]
    assert step["metrics"]["timed_out"] is True and step["metrics"]["stderr_tail"] == ["epoch 1 ..."]
    assert ("run", tuple(SMOKE)) in eng.calls
    # a command that exits 124 itself did not time out
    own = project_engine(exit_code=124, stdout="", stderr="gave up\n")
    cert, _ = certify(own)
    assert "exited 124: gave up" in cert.verdict_reason and "timed out" not in cert.verdict_reason


def test_the_engine_is_given_the_spec_timeout() -> None:
    seen: list[float | None] = []
    eng = project_engine({"command": SMOKE, "timeout_s": 42})
    plain_run = eng.run

    def run(spec: ContainerSpec, *, on_stderr: Any = None, timeout_s: float | None = None) -> RunResult:
        seen.append(timeout_s)
        return plain_run(spec, on_stderr=on_stderr, timeout_s=timeout_s)

    eng.run = run  # type: ignore[method-assign]
    certify(eng)
    assert seen[-1] == 42


def test_the_recorded_output_is_bounded_and_printable() -> None:
    noisy = "".join(f"line {i} \x1b[31mred\x1b[0m \u202e {'x' * 5000}\n" for i in range(5000))
    eng = project_engine(exit_code=2, stdout=noisy, stderr=noisy)
    cert, _ = certify(eng)
    step = cert.data["run"]["project_smoke"]
    for key in ("stdout_tail", "stderr_tail"):
        tail = step["metrics"][key]
        assert len(tail) == TAIL_LINES and tail[-1].startswith("line 4999 \\x1b[31mred")
        assert all(len(line) <= TAIL_LINE_CHARS and line.isprintable() for line in tail)
    assert len(cert.verdict_reason) < 300 and cert.verdict_reason.isprintable()
    assert len(cert.to_json()) < 40_000  # 10 MB of output, a few KB in the certificate
    assert output_tail("a\n\n  \nb\n") == ["a", "b"]  # blank lines are not evidence


def test_quick_runs_it_too() -> None:
    eng = project_engine(exit_code=3, stderr="boom\n")
    cert, _ = certify(eng, quick=True)
    assert "--quick" in eng.runs[0].command and eng.runs[1].command == tuple(SMOKE)
    assert cert.verdict == "failed" and "exited 3: boom" in cert.verdict_reason


def test_an_image_without_smoke_runs_the_harness_alone() -> None:
    eng = FakeEngine(images={"img:1": IMAGE, IMAGE.id: IMAGE}, job=Harness())
    cert, _ = certify(eng)
    assert len(eng.runs) == 1 and "project_smoke" not in cert.data["run"]
    assert "project_smoke" not in [s.name for s in cert.steps]


def test_a_failed_harness_keeps_its_reason_and_the_smoke_step_is_still_recorded() -> None:
    eng = project_engine(
        exit_code=1, stderr="no\n", harness=Harness(result=harness_result("failed"), exit_code=1)
    )
    cert, _ = certify(eng)
    assert cert.verdict == "failed" and cert.verdict_reason == "harness says failed"
    assert cert.data["run"]["project_smoke"]["status"] == "fail"


def test_memlock_refused_for_the_harness_is_dropped_for_the_smoke_command_too() -> None:
    eng = project_engine()
    eng.refuse_memlock = True
    cert, _ = certify(eng)
    assert [u.name for u in eng.runs[1].ulimits] == ["stack"] and cert.verdict == "certified"


# ------------------------------------------------------------------ the verdict, the readers


def _smoke_step(status: str) -> dict[str, Any]:
    reason = "" if status == "pass" else "python -m demo: exited 1: boom"
    metrics = {"command": ["python", "-m", "demo"], "exit_code": 0 if status == "pass" else 1}
    return {"name": "project_smoke", "status": status, "reason": reason, "seconds": 1.0, "metrics": metrics}


def test_the_hosts_verdict_counts_the_step() -> None:
    base = facts()
    assert host_verdict(result(), base)[0] == "certified"
    assert host_verdict(result(), replace(base, project_smoke=_smoke_step("pass")))[0] == "certified"
    verdict, reason = host_verdict(result(), replace(base, project_smoke=_smoke_step("fail")))
    assert verdict == "failed" and reason.endswith("exited 1: boom")
    cpu = host_verdict(
        result("certified-cpu-only"), replace(facts("none", None), project_smoke=_smoke_step("pass"))
    )
    assert cpu[0] == "certified-cpu-only"


def test_a_node_certificate_that_passes_over_a_failed_smoke_step_is_refused() -> None:
    def sealed(status: str) -> Certificate:
        return build_certificate(
            image={"id": IMAGE.id}, host={}, run={"project_smoke": _smoke_step(status)},
            harness=result(), thresholds={}, verdict="certified", verdict_reason="harness says certified",
        )  # fmt: skip

    assert certificate_refusal(sealed("pass"), facts()) is None
    why = certificate_refusal(sealed("fail"), facts())
    assert why is not None and "smoke command failed" in why


def test_a_node_certificate_that_claims_more_than_its_result_gives_here_is_refused() -> None:
    """Not only a failure: a node's `certified` whose own result gives `certified-cpu-only` on this
    host's facts (a class without GPUs) claims a GPU certification and is refused."""

    def sealed(verdict: str, harness: dict[str, Any]) -> Certificate:
        return build_certificate(
            image={"id": IMAGE.id}, host={}, run={}, harness=harness, thresholds={},
            verdict=verdict, verdict_reason="the node says so",
        )  # fmt: skip

    cpu = result("certified-cpu-only")
    why = certificate_refusal(sealed("certified", cpu), facts("none", None))
    assert why is not None and why.startswith(
        "it says certified, but its own result gives certified-cpu-only"
    )
    assert certificate_refusal(sealed("certified-cpu-only", cpu), facts("none", None)) is None


def test_the_summary_and_the_report_show_the_step() -> None:
    eng = project_engine()
    cert, _ = certify(eng)
    again = Certificate.from_json(cert.to_json())  # the shape check takes run.project_smoke
    assert key_metric(again.steps[-1]).startswith("exit 0: python -c 'import demo;")
    rows = build_report(again).steps
    assert rows[-1].name == "project_smoke" and rows[-1].status == "pass"
    assert key_metric(StepRecord.read(_smoke_step("fail"))).startswith("exit 1")


def test_a_certificate_whose_smoke_record_has_a_wrong_type_is_refused_at_load() -> None:
    cert, _ = certify(project_engine())
    doc = json.loads(cert.to_json())
    doc["run"]["project_smoke"]["seconds"] = "fast"
    with pytest.raises(CertificateRefusedError) as err:
        Certificate.from_data(doc)
    assert err.value.exit_code == 12 and "run.project_smoke.seconds" in err.value.message


def test_a_fleet_job_that_ran_the_harness_alone_says_the_smoke_command_did_not_run() -> None:
    image = labelled(SMOKE)
    kw: dict[str, Any] = {"image_ref": "img:1", "result": result(), "facts": facts(), "where": "node1"}
    cert = seal_foreign_run(image=image, thresholds={}, run={}, **kw)
    assert any("certify.smoke) did not run" in w for w in cert.data["run"]["warnings"])
    assert "project_smoke" not in cert.data["run"]
    plain = seal_foreign_run(image=IMAGE, thresholds={}, run={}, **kw)
    assert not any("certify.smoke" in w for w in plain.data["run"]["warnings"])
