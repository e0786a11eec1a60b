"""`render` and `build` write the same Dockerfile: they share one code path to it
(image.render.render_options, then write_build_context), and this proves it file by file.

Every committed image spec goes through both commands for the reference host; every golden case
goes through run_build. The one input only build has, a base pinned to its registry digest, is
absent here (the fake engine's bases are local), so the files must be byte-identical.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_engine import FakeEngine, fake_lock_packages, make_resolution
from test_golden import CASES, GOLDEN, ROOT
from test_image_renders import REFERENCE_DRIVER, REFERENCE_GPU

from envbuilder.cli import cli
from envbuilder.image.build import BuildOptions, plan_from_spec, run_build
from envbuilder.matrix import load_matrix

SPECS = sorted((ROOT / "images").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _no_uv(monkeypatch: pytest.MonkeyPatch) -> None:
    """build locks the packages first; here without uv or an index."""
    monkeypatch.setattr("envbuilder.image.build.lock_packages", fake_lock_packages)


def without_lock_hash(dockerfile: str) -> str:
    """The file with the io.envbuilder.lock-hash value blanked: the one line a package lock changes."""
    return re.sub(r'io\.envbuilder\.lock-hash="[0-9a-f]{64}"', 'io.envbuilder.lock-hash=""', dockerfile)


HOST_ARGS = ["--driver", REFERENCE_DRIVER, "--gpu", REFERENCE_GPU]


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_render_and_build_commands_write_the_same_dockerfile(
    spec_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    rel = str(spec_file.relative_to(ROOT))
    fake = FakeEngine()
    monkeypatch.setattr("envbuilder.engine.DockerEngine", lambda: fake)
    lock = tmp_path / "x.lock.json"
    built = CliRunner().invoke(cli, ["build", rel, *HOST_ARGS, "--lock-out", str(lock), "--json"])
    assert built.exit_code == 0, built.output
    rendered = CliRunner().invoke(cli, ["render", rel, *HOST_ARGS, "--lock", str(lock), "--print"])
    assert rendered.exit_code == 0, rendered.output
    assert fake.built_dockerfiles == [rendered.stdout]
    unlocked = CliRunner().invoke(cli, ["render", rel, *HOST_ARGS, "--print"]).stdout
    assert unlocked == spec_file.with_suffix(".Dockerfile").read_text(encoding="utf-8")
    # Without the lock, only the label that hashes the package pins differs.
    assert without_lock_hash(unlocked) == without_lock_hash(rendered.stdout) != rendered.stdout
    recorded = json.loads(lock.read_text())["build"]["dockerfile_sha256"]
    assert recorded == json.loads(built.stdout)["dockerfile_sha256"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_build_writes_each_golden_dockerfile(case: str, tmp_path: Path) -> None:
    spec, stack, render = CASES[case]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for pkg in fake_lock_packages(spec, stack).packages:  # the locked wheels: the context links them
        (wheels / pkg.wheel).write_bytes(b"")
    wheelhouse = wheels if render.wheelhouse else None
    options = BuildOptions(base_image=render.base_image, wheelhouse=wheelhouse, lock_out=tmp_path / "l")
    plan = plan_from_spec(spec, make_resolution(spec, stack), options, Path(spec.path), load_matrix())
    fake = FakeEngine()
    outcome = run_build(replace(plan, render=replace(render, wheelhouse=options.wheelhouse)), options, fake)
    (built,) = fake.built_dockerfiles
    assert without_lock_hash(built) == without_lock_hash(
        (GOLDEN / f"{case}.Dockerfile").read_text(encoding="utf-8")
    )
    assert f'io.envbuilder.lock-hash="{outcome.lock.hash}"' in built
