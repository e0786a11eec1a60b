"""Build progress from the real clients (issue 13 item 4): Docker 20.10's plain progress for one
build, buildx's rawjson for a bake of two targets that share steps. Each step ends once, with one
counter per target whose total is that target's step count. Tiny Dockerfiles on the local base:
a few seconds; the images are removed by ID (nothing is tagged)."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import pytest
from conftest import BUILDX, unavailable

from envbuilder.engine import DockerEngine
from envbuilder.engine.buildkit import Buildx, buildkit_build, buildx_bake, find_buildkit_cli
from envbuilder.engine.progress import BuildEvent
from envbuilder.errors import EnvbuilderError

pytestmark = pytest.mark.docker


def dockerfile(folder: Path, name: str, base: str, steps: list[str]) -> Path:
    path = folder / name
    path.write_text(f"FROM {base}\n" + "".join(f"{s}\n" for s in steps))
    return path


def endings(events: list[BuildEvent]) -> list[BuildEvent]:
    return [e for e in events if e.is_step and e.kind in ("done", "cached", "error")]


def test_a_real_build_then_its_cached_rebuild_number_each_step_once(
    engine: DockerEngine, base_image: str, run_id: str, tmp_path: Path
) -> None:
    (tmp_path / "f.txt").write_text(run_id)
    df = dockerfile(tmp_path, "Dockerfile", base_image, [f"RUN echo {run_id}", "COPY f.txt /f", "RUN cat /f"])
    cli = find_buildkit_cli()
    runs: list[list[BuildEvent]] = []
    ids: list[str] = []
    try:
        for no_cache in (True, False):
            events: list[BuildEvent] = []
            ids.append(buildkit_build(cli, tmp_path, df, no_cache=no_cache, on_event=events.append).image_id)
            runs.append(events)
    finally:
        for image in ids:
            with contextlib.suppress(EnvbuilderError):
                engine.remove_image(image, force=True)
    cold, warm = (endings(r) for r in runs)
    assert (
        sorted(e.counter for e in cold)
        == sorted(e.counter for e in warm)
        == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    )
    assert [e.kind for e in cold if e.index and e.index > 1] == ["done"] * 3
    assert [e.kind for e in warm if e.index and e.index > 1] == ["cached"] * 3
    assert ids[0] == ids[1]


def test_a_real_bake_of_two_targets_sharing_steps_counts_each_over_its_own(
    engine: DockerEngine, base_image: str, run_id: str, tmp_path: Path
) -> None:
    if not BUILDX.is_file():
        unavailable(f"no docker-buildx at {BUILDX} (scripts/buildx.sh unpacks it)")
    shared = [f"RUN echo shared {run_id}"]
    dockerfile(tmp_path, "a.Dockerfile", base_image, [*shared, "RUN echo a", "WORKDIR /w"])
    dockerfile(tmp_path, "b.Dockerfile", base_image, [*shared, "RUN echo b", "WORKDIR /w", "RUN echo b2"])
    (tmp_path / "bake.hcl").write_text(
        "".join(
            f'target "{t}" {{\n  context = "{tmp_path}"\n  dockerfile = "{t}.Dockerfile"\n'
            '  output = ["type=docker"]\n}\n'
            for t in ("a", "b")
        )
    )
    buildx = Buildx(argv=(str(BUILDX),), version="test")
    events: list[BuildEvent] = []
    ids = buildx_bake(buildx, tmp_path / "bake.hcl", ["a", "b"], on_event=events.append)
    for image in ids.values():
        with contextlib.suppress(EnvbuilderError):
            engine.remove_image(image, force=True)
    steps = endings(events)
    assert len(steps) == len({e.vertex for e in steps}) == 4 + 5 - 2  # FROM and the RUN shared
    assert {e.group: e.total for e in steps} == {"a": 4, "b": 5}
    assert all(e.total == {"a": 4, "b": 5}[e.group] for e in events if e.is_step)


class _Timed:
    """A piped stderr that notes when each line arrived."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []
        self._part = ""

    def write(self, text: str) -> int:
        import time

        self._part += text
        *done, self._part = self._part.split("\n")
        self.lines += [(time.monotonic(), ln) for ln in done]
        return len(text)

    def flush(self) -> None: ...

    def isatty(self) -> bool:
        return False


def test_a_real_silent_step_piped_has_a_heartbeat_and_is_said_without_its_mounts(
    engine: DockerEngine, base_image: str, run_id: str, tmp_path: Path
) -> None:
    """Issue 26 item 4 on the real client: a 14 s step that prints nothing gets `still running`
    lines at least every 10 s (the renderer's own ticker, a real clock), and it is named by what
    it does, not by its cache mount."""
    import time

    from envbuilder.cli.progress_view import build_progress

    df = dockerfile(
        tmp_path,
        "Dockerfile",
        base_image,
        [f"RUN --mount=type=cache,target=/root/.cache/x sleep 14 && echo {run_id}"],
    )
    out = _Timed()
    started = time.monotonic()
    with build_progress(out) as progress:  # type: ignore[arg-type]
        image = buildkit_build(find_buildkit_cli(), tmp_path, df, no_cache=True, on_event=progress).image_id
    ended = time.monotonic()
    with contextlib.suppress(EnvbuilderError):
        engine.remove_image(image, force=True)
    times = [started, *(t for t, _ in out.lines), ended]
    assert max(b - a for a, b in itertools.pairwise(times)) <= 10.5, out.lines
    texts = [ln for _, ln in out.lines]
    assert any(ln.startswith(f"[2/2] RUN sleep 14 && echo {run_id} still running, ") for ln in texts), texts
    assert any(ln.startswith("[2/2] done ") and ln.endswith(f"RUN sleep 14 && echo {run_id}") for ln in texts)
    assert not any("--mount" in ln for ln in texts)
