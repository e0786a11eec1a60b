"""The default Python (issue 13 item 9): the newest Python for which the framework (the matrix's
wheel facts) and the spec's requirements (real uv, --only-binary :all:, offline from a find-links
folder of wheels made by wheel_factory) have wheels, and the reason said."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from wheel_factory import make_wheel

from envbuilder.cli import cli
from envbuilder.image import python_pick
from envbuilder.image.packages import LockSettings
from envbuilder.image.spec import ImageSpec, load_spec
from envbuilder.pipeline.resolution import resolve_spec


def spec_file(tmp_path: Path, *requirements: str) -> ImageSpec:
    lines = ["schema_version: 1", "name: pick", "description: default python", 'framework: "torch"']
    lines += [
        "strategy: bundled",
        *(["requirements:"] if requirements else []),
        *(f'  - "{r}"' for r in requirements),
    ]
    path = tmp_path / "images" / "pick.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return load_spec(path)


def make_wheelhouse(folder: Path) -> Path:
    """nativepkg has wheels for CPython 3.11 and 3.12 only; purepkg is pure Python."""
    folder.mkdir()
    for tag in ("cp311-cp311", "cp312-cp312"):
        make_wheel(folder, f"nativepkg-1.0-{tag}-manylinux_2_28_x86_64.whl")
    make_wheel(folder, "purepkg-1.0-py3-none-any.whl")
    return folder


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module: uv's answers for it are cached once (the session's cache dir)."""
    return make_wheelhouse(tmp_path_factory.mktemp("pick") / "wheels")


def offline(folder: Path) -> LockSettings:
    return LockSettings(no_index=True, find_links=(folder,))


def test_the_newest_python_with_wheels_for_every_requirement_is_chosen_and_why(
    tmp_path: Path, wheelhouse: Path
) -> None:
    spec = spec_file(tmp_path, "nativepkg", "purepkg")
    _, newest = resolve_spec(spec_file(tmp_path / "bare"), None, (), (), True)
    assert newest.stack is not None and newest.stack.python == "3.15"  # the framework alone allows 3.15
    _, res = resolve_spec(spec, None, (), (), True, settings=offline(wheelhouse))
    assert res.stack is not None and res.stack.python == "3.12" and res.request.python == "3.12"
    fw = f"torch {res.stack.version}"
    assert res.python_reason.startswith(f"python 3.12: newest with wheels for {fw} and nativepkg, purepkg; ")
    assert "; 3.14 lacks: nativepkg==1.0 has no wheels with a matching Python ABI tag" in res.python_reason
    assert (
        "; 3.13 lacks: nativepkg==1.0 has no wheels" in res.python_reason and "3.11" not in res.python_reason
    )
    assert res.to_dict()["python_reason"] == res.python_reason


def test_without_requirements_the_matrix_decides_and_uv_is_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(python_pick, "ask_uv", lambda *a: pytest.fail("uv asked"))
    _, res = resolve_spec(spec_file(tmp_path), None, (), (), True)
    assert res.stack is not None and res.stack.python == "3.15"
    assert (
        res.python_reason
        == f"python 3.15: newest with wheels for torch {res.stack.version} (the matrix's wheel facts)"
    )


def test_no_index_reachable_falls_back_to_the_frameworks_facts_and_says_so(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, "nativepkg")  # UV_OFFLINE (conftest) and no find-links: nothing to ask
    _, res = resolve_spec(spec, None, (), (), True)
    assert res.stack is not None and res.stack.python == "3.15"
    assert res.python_reason.startswith(f"python 3.15: newest with wheels for torch {res.stack.version} ")
    assert (
        "(the matrix's wheel facts); nativepkg not checked: uv is offline (UV_OFFLINE)" in res.python_reason
    )


def test_an_unreachable_index_is_not_taken_for_missing_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UV_OFFLINE")
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")  # uv would retry the refused connection for ~25 s
    spec = spec_file(tmp_path, "nativepkg")
    closed = LockSettings(default_index="http://127.0.0.1:9/simple")  # nothing listens on port 9
    _, res = resolve_spec(spec, None, (), (), True, settings=closed)
    assert res.stack is not None and res.stack.python == "3.15"
    assert "nativepkg not checked: no index answered" in res.python_reason


def test_each_answer_is_asked_once_then_read_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheelhouse = make_wheelhouse(tmp_path / "own-wheels")  # changed below: not the module's
    asked: list[str] = []
    real = python_pick.ask_uv

    def counting(
        lines: list[str], python: str, platform: str, settings: LockSettings
    ) -> python_pick.WheelCheck:
        asked.append(python)
        return real(lines, python, platform, settings)

    monkeypatch.setattr(python_pick, "ask_uv", counting)
    spec = spec_file(tmp_path, "nativepkg")
    first = resolve_spec(spec, None, (), (), True, settings=offline(wheelhouse))[1]
    assert asked == ["3.15", "3.14", "3.13", "3.12"]
    again = resolve_spec(spec, None, (), (), True, settings=offline(wheelhouse))[1]
    assert asked == ["3.15", "3.14", "3.13", "3.12"] and again.python_reason == first.python_reason
    make_wheel(wheelhouse, "nativepkg-1.1-cp314-cp314-manylinux_2_28_x86_64.whl")  # the folder changed
    third = resolve_spec(spec, None, (), (), True, settings=offline(wheelhouse))[1]
    assert asked[-1] == "3.14" and third.stack is not None and third.stack.python == "3.14"


def test_a_python_the_spec_names_is_kept_without_a_reason(tmp_path: Path, wheelhouse: Path) -> None:
    spec = spec_file(tmp_path, "nativepkg")
    path = Path(spec.path)
    path.write_text(path.read_text() + 'python: "3.13"\n')
    _, res = resolve_spec(load_spec(path), None, (), (), True, settings=offline(wheelhouse))
    assert res.stack is not None and res.stack.python == "3.13" and res.python_reason == ""


def test_render_says_why_that_python(tmp_path: Path, wheelhouse: Path) -> None:
    """The CLI: uv reads UV_NO_INDEX / UV_FIND_LINKS from the environment."""
    spec = spec_file(tmp_path, "nativepkg")
    env = {"UV_NO_INDEX": "1", "UV_FIND_LINKS": str(wheelhouse)}
    res = CliRunner().invoke(
        cli, ["render", str(spec.path), "--cpu", "--out", str(tmp_path / "out")], env=env
    )
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines()[0].startswith("python 3.12: newest with wheels for torch ")
    assert "; 3.14 lacks: nativepkg==1.0 has no wheels" in res.stderr
    assert "-py3.12-" in res.stdout


def test_the_requirements_wheels_are_asked_for_the_stacks_platform(tmp_path: Path, wheelhouse: Path) -> None:
    """nativepkg has x86_64 wheels only: for a linux/arm64 stack no Python has them (uv is asked
    with --python-platform aarch64-manylinux_2_28), and the reason says so."""
    spec = spec_file(tmp_path, "nativepkg")
    _, res = resolve_spec(spec, None, (), (), True, settings=offline(wheelhouse), platform="linux/arm64")
    assert res.stack is not None and res.stack.platform == "linux/arm64"
    assert "no Python has wheels for all of nativepkg" in res.python_reason, res.python_reason
