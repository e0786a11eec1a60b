"""The BuildKit plain-progress parser, on output recorded from real builds (tests/data/buildkit)."""

from __future__ import annotations

from fake_engine import sample

from envbuilder.engine.progress import LOG_TAIL_LINES, BuildEvent, ProgressParser, step_instruction


def parse(name: str) -> tuple[ProgressParser, list[BuildEvent]]:
    parser = ProgressParser()
    events = [e for line in sample(name) for e in parser.feed(line)]
    return parser, events


def test_cold_build_runs_every_step_and_times_it() -> None:
    parser, events = parse("cold")
    steps = parser.dockerfile_steps()
    assert [(s.index, s.total) for s in steps] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert steps[1].state == "cached"  # the venv layer was already built
    pip = steps[3]
    assert pip.state == "done" and pip.seconds == 18.5
    assert step_instruction(pip.name).startswith("RUN --mount=type=cache")
    logs = [e.text for e in events if e.kind == "log" and e.index == 4]
    assert logs[0] == "Looking in links: /wheelhouse"
    assert any(t.startswith("Successfully installed") for t in logs)
    assert parser.failed_step() is None


def test_warm_build_reports_every_step_cached() -> None:
    parser, events = parse("warm")
    assert [s.state for s in parser.dockerfile_steps()[1:]] == ["cached"] * 3
    cached = [e.index for e in events if e.kind == "cached"]
    assert cached == [2, 3, 4]
    assert not [e for e in events if e.kind == "log" and e.is_step]  # nothing ran, nothing printed


def test_internal_vertices_are_not_steps() -> None:
    parser, events = parse("cold")
    internal = [e for e in events if e.kind == "start" and not e.is_step]
    names = [e.name for e in internal]
    assert "[internal] load build definition from Dockerfile" in names
    assert "exporting to image" in names
    assert all(r.index is None for r in parser.steps.values() if r.name.startswith("[internal]"))


def test_failed_build_names_the_step_and_keeps_the_pip_error() -> None:
    parser, events = parse("failed")
    failed = parser.failed_step()
    assert failed is not None and (failed.index, failed.total) == (4, 4)
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1 and "exit code: 1" in errors[0].text
    tail = list(parser.tail)
    assert any("No matching distribution found for no-such-package-envbuilder" in t for t in tail)
    assert tail[-1].startswith("executor failed running")


def test_tail_keeps_only_the_last_lines() -> None:
    parser = ProgressParser()
    for i in range(100):
        parser.feed(f"#9 {i}.000 line {i}\n")
    assert len(parser.tail) == LOG_TAIL_LINES
    assert parser.tail[-1] == "#9 99.000 line 99"


def test_single_stage_buildx_names_and_unknown_lines() -> None:
    parser = ProgressParser()
    assert parser.feed("#5 [2/7] RUN pip install x\n")[0].index == 2
    assert parser.feed("#5 0.1 hello\n")[0].text == "hello"
    assert parser.feed("some prose the CLI prints\n") == []
    assert parser.feed("#5 DONE 2s\n")[0].seconds == 2.0
    assert step_instruction("[internal] load .dockerignore") == "[internal] load .dockerignore"
