"""Shared pytest options: `--update-golden` rewrites expected renders instead of comparing."""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite tests/golden/* and images/*.Dockerfile from the current templates.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with --update-golden."""
    return bool(request.config.getoption("--update-golden"))


# --------------------------------------------------------------------------- Docker guard
# Unit tests must not touch Docker (design.md, Tests; cibuildwheel's `mock_protection`): any
# docker SDK client or docker CLI process started from a test not marked `docker`/`gpu` fails it.


class DockerTouchedError(AssertionError):
    """A unit test tried to reach Docker; use a FakeEngine (tests/unit/fake_engine.py)."""


def _is_docker_argv(args: object) -> bool:
    import os
    from pathlib import Path

    if isinstance(args, str | bytes | os.PathLike):
        words = os.fsdecode(args).split()
        first = words[0] if words else ""
    elif isinstance(args, list | tuple) and args:
        first = os.fsdecode(args[0])
    else:
        return False
    return Path(first).name in {"docker", "dockerd", "docker-registry", "buildctl"}


@pytest.fixture(autouse=True)
def _no_docker_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a unit test that touches Docker; docker/gpu-marked tests are left alone."""
    if request.node.get_closest_marker("docker") or request.node.get_closest_marker("gpu"):
        return
    import subprocess

    import docker

    def refuse(*args: object, **kwargs: object) -> None:
        raise DockerTouchedError("unit test touched the Docker SDK; use a FakeEngine")

    monkeypatch.setattr(docker, "from_env", refuse)
    monkeypatch.setattr(docker, "DockerClient", refuse)
    monkeypatch.setattr(docker.APIClient, "__init__", refuse)
    real_init: Any = subprocess.Popen.__init__

    def guarded_init(self: Any, args: object, *a: object, **kw: object) -> None:
        if _is_docker_argv(args):
            raise DockerTouchedError(f"unit test ran the docker CLI ({args!r}); use a FakeEngine")
        real_init(self, args, *a, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded_init)
