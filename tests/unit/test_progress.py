"""The BuildKit plain-progress parser, on output recorded from real builds (tests/data/buildkit)."""

from __future__ import annotations

import io
import re

import pytest
from fake_engine import DATA, sample

from envbuilder.cli.progress_view import BuildProgress, ProgressView
from envbuilder.engine.buildkit import _build_failure
from envbuilder.engine.progress import (
    LOAD_VERTEX,
    BuildEvent,
    ProgressFormat,
    ProgressParser,
    step_instruction,
)
from envbuilder.errors import LOG_TAIL_LINES


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


# ---------------------------------------------------------------- one numbering (issue 13 item 4)
# Recorded on this machine (2026-12-01): tests/data/buildkit/bake-*.{plain,rawjson} are buildx
# 0.13.1 baking two targets from one local base, a (6 steps) and b (7 steps), which share their
# FROM and their first RUN; envbuilder-warm.plain is Docker 20.10's client building a real
# envbuilder image (torch 2.13.0 CPU, every step but FROM cached).
def parse_file(name: str, fmt: ProgressFormat) -> tuple[ProgressParser, list[BuildEvent]]:
    parser = ProgressParser(fmt=fmt)
    lines = (DATA / name).read_text().splitlines(keepends=True)
    return parser, [e for line in lines for e in parser.feed(line)]


def ended(events: list[BuildEvent]) -> list[BuildEvent]:
    return [e for e in events if e.is_step and e.kind in ("done", "cached", "error")]


def test_a_real_envbuilder_build_numbers_each_step_once_out_of_seven() -> None:
    _, events = parse_file("envbuilder-warm.plain", "plain")
    steps = ended(events)
    assert sorted(e.counter for e in steps) == [f"[{k}/7]" for k in range(1, 8)]
    assert [e.kind for e in steps if e.index == 1] == ["done"]  # FROM a local image: DONE 0.0s
    assert {e.kind for e in steps if e.index != 1} == {"cached"}
    assert not [e for e in events if e.kind == "log" and e.is_step]


def test_plain_bake_ends_a_shared_vertex_once_and_keeps_its_other_names() -> None:
    """Plain progress prints vertex #9 (the RUN both targets share) under b's name, then under
    a's, CACHED each time: one event, the second name an alias, not a log line."""
    parser, events = parse_file("bake-warm.plain", "plain")
    steps = ended(events)
    assert len(steps) == len({e.vertex for e in steps}) == 11  # 6 + 7 steps, 2 of them shared
    shared = parser.steps[9]
    assert shared.name.startswith("[b 2/7] RUN echo shared-step") and shared.state == "cached"
    assert shared.aliases == ("[a 2/7] RUN echo shared-step && sleep 1",)
    assert not [e for e in events if e.kind == "log" and e.text.startswith("[")]


def test_rawjson_bake_counts_each_target_over_its_own_steps_from_the_first_line() -> None:
    """Plain names a's shared steps `[a 1/7]` (b's total); rawjson lists each target's whole graph
    first, so every counter of a target has the same, right total, and each step ends once."""
    parser, events = parse_file("bake-warm.rawjson", "rawjson")
    steps = ended(events)
    assert len(steps) == len({e.vertex for e in steps}) == 11
    assert {e.group: e.total for e in steps} == {"a": 6, "b": 7}
    assert all(e.total == parser.totals[e.group] for e in events if e.is_step)
    assert sorted(e.counter for e in steps if e.group == "a") == [f"[a {k}/6]" for k in range(1, 7)]
    assert sorted(e.counter for e in steps if e.group == "b") == [f"[b {k}/7]" for k in range(3, 8)]
    by_state = {e.index: e.kind for e in steps if e.group == "a"}
    assert by_state[2] == "cached" and by_state[3] == "cached"


@pytest.mark.parametrize(
    ("name", "foreign"),
    [("bake-shared-named-by-a.rawjson", "[b 2/4]"), ("bake-shared-named-by-b.rawjson", "[a 2/5]")],
)
def test_rawjson_counts_a_shared_step_by_its_place_not_by_the_other_targets_total(
    name: str, foreign: str
) -> None:
    """Recorded 2026-12-01, buildx 0.13.1, a (4 steps) and b (5) sharing FROM and a RUN: BuildKit
    names the shared vertices with the numbering of whichever definition it loaded first, under
    both prefixes (`[b 2/4]` in one run, `[a 2/5]` in another; the integration test failed on the
    second in CI). Each target's counters still count over its own steps."""
    parser, events = parse_file(name, "rawjson")
    shared_run = next(r for r in parser.steps.values() if "RUN echo shared" in r.name)
    assert any(
        n.startswith(foreign) for n in (shared_run.name, *shared_run.aliases)
    )  # the recording shows it
    steps = ended(events)
    assert len(steps) == len({e.vertex for e in steps}) == 7
    assert {e.group: e.total for e in steps} == {"a": 4, "b": 5}
    assert all(e.total == {"a": 4, "b": 5}[e.group] for e in events if e.is_step)


def test_rawjson_cold_bake_times_the_steps_and_decodes_their_logs() -> None:
    parser, events = parse_file("bake-cold.rawjson", "rawjson")
    steps = ended(events)
    assert {e.kind for e in steps if e.index and e.index > 1} == {"done"}  # --no-cache
    run = next(e for e in steps if e.name.startswith("[a 3/6] RUN echo a-only"))
    assert run.seconds is not None and 0 < run.seconds < 60
    assert [e.text for e in events if e.kind == "log" and e.vertex == run.vertex] == ["a-only"]
    assert "a-only" in parser.tail


def test_rawjson_failure_names_the_step_and_its_error() -> None:
    parser, events = parse_file("bake-failed.rawjson", "rawjson")
    (error,) = [e for e in ended(events) if e.kind == "error"]
    assert error.counter == "[a 3/6]" and error.text.endswith("exit code: 3")
    failure = _build_failure(1, parser)
    assert "docker build failed (exit 1) at step a 3/6: RUN echo a-only && exit 3" in failure.message
    assert any(ln.startswith("ERROR: failed to solve: executor failed running") for ln in failure.log)


def test_the_display_prints_each_step_once_with_its_counter() -> None:
    _, events = parse_file("bake-warm.rawjson", "rawjson")
    out = io.StringIO()
    display = BuildProgress(ProgressView(out, tty=False, ticker=False))
    for e in events:
        display(e)
    lines = out.getvalue().splitlines()
    assert len(lines) == 11 and all(re.match(r"^\[(a [1-6]/6|b [3-7]/7)\] (CACHED|done)", ln) for ln in lines)
    assert len({ln.split("]")[0] for ln in lines}) == 11


def test_a_log_without_a_final_newline_does_not_swallow_the_steps_end() -> None:
    """Recorded: `RUN cat /f` of a file without a newline printed `#8 0.520 x#8 DONE 0.5s`."""
    _, events = parse_file("no-newline.plain", "plain")
    assert sorted(e.counter for e in ended(events)) == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    assert [e.text for e in events if e.kind == "log" and e.index == 4] == ["x"]


def test_the_display_says_when_the_image_is_exported_and_loaded() -> None:
    """After the last step: BuildKit's export (a reproducible build rewrites every file time there,
    about 100 s for a 1 GB image on 2 cores) and the engine's load of it each end with a line."""
    parser = ProgressParser()
    events = [e for line in sample("cold") for e in parser.feed(line)]
    events += [
        BuildEvent(kind="start", vertex=0, name=LOAD_VERTEX, index=None, total=None),
        BuildEvent(kind="done", vertex=0, name=LOAD_VERTEX, index=None, total=None, seconds=20.8),
    ]
    out = io.StringIO()
    display = BuildProgress(ProgressView(out, tty=False, ticker=False))
    for e in events:
        display(e)
    lines = out.getvalue().splitlines()
    assert re.match(r"^\[image\] done [0-9.]+s \(t=\d+s\) exporting to image$", lines[-2])
    assert re.match(
        r"^\[image\] done 20\.8s \(t=\d+s\) loading the image into the engine's daemon$", lines[-1]
    )
    assert all(ln.startswith("[") and "/4]" in ln for ln in lines[:-2])
    assert not any("exporting layers" in ln for ln in lines)  # its log lines stay in the tail
