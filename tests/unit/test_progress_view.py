"""The one progress renderer (cli/progress_view.py) on recorded BuildKit outputs: on a terminal of
80 and 120 columns every row fits (the fixed 100-column line piled up in 80, issue 26 item 4),
piped one line per finished step, each step said by what it does (never RUN's mount
boilerplate), and a heartbeat at least every 10 s while a step runs (a fake clock)."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from fake_engine import DATA, cpu_package_lock

from envbuilder.cli.progress_view import BuildProgress, ProgressView, StepProgress, fit, task_progress
from envbuilder.engine.progress import BuildEvent, ProgressParser, describe_step

RECORDINGS = [
    ("envbuilder-warm.plain", "plain"),
    ("cold.log", "plain"),
    ("failed.log", "plain"),
    ("bake-warm.rawjson", "rawjson"),
    ("bake-cold.rawjson", "rawjson"),
]
_CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def events_of(name: str, fmt: str) -> list[BuildEvent]:
    parser = ProgressParser(fmt=fmt)  # type: ignore[arg-type]
    return [e for line in (DATA / name).read_text().splitlines() for e in parser.feed(line)]


def rows(terminal_output: str) -> list[str]:
    """What a terminal shows, row by row: escape sequences out, split at \\r and \\n."""
    return [r for r in re.split(r"[\r\n]", _CSI.sub("", terminal_output)) if r.strip()]


def render(name: str, fmt: str, *, tty: bool, width: int | None = None) -> str:
    out = io.StringIO()
    clock = FakeClock()
    view = ProgressView(out, tty=tty, width=width, clock=clock, ticker=False)
    progress = BuildProgress(view)
    for event in events_of(name, fmt):
        clock.now += 0.5
        progress(event)
        view.tick()
    progress.finish()
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(("name", "fmt"), RECORDINGS)
def test_on_a_terminal_every_row_fits_its_width(name: str, fmt: str, width: int) -> None:
    from rich.cells import cell_len

    shown = rows(render(name, fmt, tty=True, width=width))
    assert shown and max(cell_len(r) for r in shown) <= width, max(shown, key=cell_len)
    assert not any("--mount=" in r for r in shown)
    ended = [e for e in events_of(name, fmt) if e.is_shown and e.kind in ("done", "cached", "error")]
    for e in ended:  # each finished step has its row, starting with its counter
        assert any(r.startswith(f"{e.counter} ") for r in shown), e.counter


def test_the_framework_install_is_said_by_what_it_does() -> None:
    shown = rows(render("envbuilder-warm.plain", "plain", tty=True, width=80))
    (row,) = [r for r in shown if r.startswith("[3/7] ")]
    assert row == "[3/7] CACHED (t=8s) RUN uv pip install ... (framework)"


@pytest.mark.parametrize(("name", "fmt"), RECORDINGS)
def test_piped_one_plain_line_per_finished_step(name: str, fmt: str) -> None:
    text = render(name, fmt, tty=False)
    assert "\x1b" not in text and "\r" not in text
    lines = text.splitlines()
    ended = [e for e in events_of(name, fmt) if e.is_shown and e.kind in ("done", "cached", "error")]
    assert len(lines) == len(ended)
    assert [ln.split(" ")[0] for ln in lines] == [e.counter.split(" ")[0] for e in ended]
    assert not any("--mount=" in ln for ln in lines)


def test_piped_a_63_s_step_has_a_heartbeat_at_least_every_10_s() -> None:
    """The issue's case: a 63 s step printed nothing between its start and its end."""
    out, clock = io.StringIO(), FakeClock()
    view = ProgressView(out, tty=False, clock=clock, ticker=False)
    progress = BuildProgress(view)
    name = (
        "[stage-0 3/7] RUN --mount=type=cache,target=/root/.cache/uv --mount=type=bind,source=lock/framework,"
        "target=/tmp/envbuilder-lock SOURCE_DATE_EPOCH=0 /tmp/envbuilder-tools/uv pip install --python "
        "/opt/venv/bin/python --require-hashes -r /tmp/envbuilder-lock/requirements.txt"
    )
    step = {"vertex": 7, "name": name, "index": 3, "total": 7}
    written: list[float] = []
    progress(BuildEvent(kind="start", **step))  # type: ignore[arg-type]
    for second in range(1, 64):
        clock.now += 1
        if second == 5:
            progress(BuildEvent(kind="log", text="Prepared 10 packages in 4.1s", **step))  # type: ignore[arg-type]
        before = out.getvalue().count("\n")
        view.tick()
        if out.getvalue().count("\n") > before:
            written.append(second)
    progress(BuildEvent(kind="done", seconds=63.0, **step))  # type: ignore[arg-type]
    written.append(64)
    lines = out.getvalue().splitlines()
    assert len(written) >= 6 and max(b - a for a, b in zip([0, *written], written, strict=False)) <= 10
    assert lines[0] == (
        "[3/7] RUN uv pip install ... (framework) still running, 10s (last: Prepared 10 packages in 4.1s)"
    )
    assert lines[-1] == "[3/7] done 63.0s (t=63s) RUN uv pip install ... (framework)"
    assert not any("--mount" in ln for ln in lines)


def test_piped_a_silent_lock_before_the_steps_has_a_heartbeat_too() -> None:
    """`build` locks first (16 s silent in the measured build): the build's own heartbeat."""
    out, clock = io.StringIO(), FakeClock()
    view = ProgressView(out, tty=False, clock=clock, ticker=False)
    progress = BuildProgress(view)
    progress.say("locking torch 2.13.0 for x86_64, Python 3.11 (uv 0.13.9)")
    clock.now += 12
    view.tick()
    assert out.getvalue().splitlines()[-1] == (
        "[build] still running, 12s (last: locking torch 2.13.0 for x86_64, Python 3.11 (uv 0.13.9))"
    )


def test_up_shows_the_dockerfile_steps_inside_its_build_step_and_returns_to_it() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = StepProgress(("build",), stream=out, tty=False, clock=clock, ticker=False)
    with progress.step("build"):
        events = progress.build_events()
        for e in events_of("cold.log", "plain"):
            events(e)
        events(BuildEvent(kind="start", vertex=99, name="[stage-0 5/5] RUN sleep 60", index=5, total=5))
        clock.now += 10
        progress.view.tick()
        events.finish()
        clock.now += 10
        progress.view.tick()
    lines = out.getvalue().splitlines()
    assert "  Dockerfile 4/4 done 18.5s (t=0s) RUN pip install torch==2.13.0 ..." not in lines  # a chain
    assert any(
        ln.startswith("  Dockerfile 4/4 done 18.5s (t=0s) RUN test -f /run/secrets/ca") for ln in lines
    )
    assert lines[-3] == "[1/1] build: Dockerfile 5/5 RUN sleep 60 still running, 10s"
    assert lines[-2] == "[1/1] build still running, 20s"
    assert re.fullmatch(r"\[1/1\] build done 20\.0s \(t=20s\)", lines[-1])


@pytest.mark.parametrize("width", [80, 120])
def test_a_task_and_ups_steps_on_a_terminal_keep_every_row_to_the_width(width: int) -> None:
    from rich.cells import cell_len

    out = io.StringIO()
    with task_progress("certify", out, tty=True, width=width) as view:
        view.say("x" * 300)
        view.note("training step 12/100 " + "y" * 200)
        view.tick()
    shown = rows(out.getvalue())
    assert any("yyyy" in r for r in shown)  # the live line was drawn
    assert max(cell_len(r) for r in shown) <= width
    out = io.StringIO()
    progress = StepProgress(("doctor", "build"), stream=out, tty=True, width=width, ticker=False)
    with progress.step("build"):
        progress.say("a long message " * 20)
        events = progress.build_events()
        for e in events_of("envbuilder-warm.plain", "plain"):
            events(e)
            progress.view.tick()
        events.finish()
    shown = rows(out.getvalue())
    assert max(cell_len(r) for r in shown) <= width
    framework = [r for r in shown if r.startswith("  Dockerfile 3/7 CACHED")]
    assert framework and all(r.endswith("RUN uv pip install ... (framework)") for r in framework)


def test_a_task_piped_says_still_running_with_its_name() -> None:
    out, clock = io.StringIO(), FakeClock()
    view = ProgressView(out, tty=False, clock=clock, ticker=False)
    view.begin("lock")
    view.say("locking torch 2.13.0\nwith uv")
    clock.now += 9.9
    view.tick()
    assert out.getvalue() == "locking torch 2.13.0\nwith uv\n"
    clock.now += 0.1
    view.tick()
    assert out.getvalue().splitlines()[-1] == "lock still running, 10s (last: locking torch 2.13.0 with uv)"
    view.idle()
    clock.now += 30
    view.tick()
    assert out.getvalue().count("still running") == 1  # nothing runs: no heartbeat


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "[stage-0 2/7] RUN SOURCE_DATE_EPOCH=0 python3.11 -m venv /opt/venv",
            "RUN python3.11 -m venv /opt/venv",
        ),
        (
            "[stage-0 4/7] RUN --mount=type=cache,target=/root/.cache/uv "
            "--mount=type=bind,source=lock/project,target=/tmp/envbuilder-lock "
            "UV_NO_INSTALLER_METADATA=1 /tmp/envbuilder-tools/uv pip install --python /opt/venv/bin/python "
            "--index framework=https://x/y --default-index https://pypi.org/simple "
            "-r /tmp/envbuilder-lock/requirements.txt",
            "RUN uv pip install ... (project)",
        ),
        (
            "[a 2/5] RUN --network=none /opt/venv/bin/pip install --no-deps numpy==2.1",
            "RUN pip install numpy==2.1 ...",
        ),
        ("[stage-0 5/7] COPY   harness /opt/envbuilder/harness", "COPY harness /opt/envbuilder/harness"),
        ("[internal] load build context", "[internal] load build context"),
        ("[stage-0 3/3] RUN X=1", "RUN X=1"),  # a lone assignment is the command
    ],
)
def test_describe_step(name: str, said: str) -> None:
    assert describe_step(name) == said


def test_fit_cuts_at_the_width_with_an_ellipsis() -> None:
    assert fit("abc", 10) == "abc"
    assert fit("a" * 20, 10) == "a" * 9 + "…"
    assert fit("界" * 10, 9) == "界" * 4 + "…"


# --------------------------------------------------------------------------- the commands use it


def test_lock_and_certify_piped_say_still_running_while_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lock` (uv, 16-48 s silent in the measured builds) and `certify` go through the renderer:
    their messages as before, and a heartbeat while they say nothing (HEARTBEAT_S made short)."""
    import time

    from click.testing import CliRunner
    from test_cli_certify import make

    import envbuilder.certify.certify
    import envbuilder.cli.progress_view
    from envbuilder.cli import cli

    monkeypatch.setattr(envbuilder.cli.progress_view, "HEARTBEAT_S", 0.3)

    def slow_lock(*_a: object, on_progress: Any, **_k: object) -> object:
        on_progress("locking torch 2.13.0")
        time.sleep(1.0)
        return cpu_package_lock()

    monkeypatch.setattr("envbuilder.cli.lock_cmd.lock_packages", slow_lock)
    spec = tmp_path / "train.yaml"
    spec.write_text('schema_version: 1\nname: train\nframework: "torch==2.13.0"\npython: "3.11"\n')
    res = CliRunner().invoke(cli, ["lock", str(spec), "--cpu"])
    assert res.exit_code == 0, res.output
    assert "locking torch 2.13.0\n" in res.output
    assert re.search(r"^lock still running, \ds \(last: locking torch 2\.13\.0\)$", res.output, re.M), (
        res.output
    )

    def slow_certify(_image: str, *, progress: Any, **_k: object) -> object:
        progress("certify: GPU access none")
        time.sleep(1.0)
        return make("certified")

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", slow_certify)
    res = CliRunner().invoke(cli, ["certify", "img:1", "--no-store"])
    assert res.exit_code == 0, res.output
    assert "certify: GPU access none\n" in res.output
    assert re.search(r"^certify still running, \ds \(last: certify: GPU access none\)$", res.output, re.M)
