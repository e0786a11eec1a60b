"""Shared pytest fixtures: `--update-golden`, the guard keeping unit tests off Docker, and what the
docker-marked tests need (daemon, BuildKit client, base image, wheelhouse, registries)."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import HealthCheck, settings

from envbuilder.engine import DockerEngine, find_buildkit_cli
from envbuilder.errors import EnvbuilderError


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


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The compiled matrix (and anything else envbuilder caches) goes to a folder of this test
    session, never the user's ~/.cache; subprocesses of the tests inherit it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path_factory.mktemp("envbuilder-cache")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _private_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's envbuilder folder (certificates, run log, build locks and commit journals) is a
    folder of this test session: parallel test runs never wait on each other's build locks.
    Tests that need their own set ENVBUILDER_DATA_DIR themselves."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVBUILDER_DATA_DIR", str(tmp_path_factory.mktemp("envbuilder-data")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _private_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The system temp folder (TMPDIR, tempfile.gettempdir()) is one of this test session: the
    code's sweep of dead processes' temp folders (lifecycle.sweep_temp_dirs, run by the lock, the
    engine's janitor and render) never reaches the machine's /tmp, where another run's build keeps
    its context. A mutated sweep run by benchmarks/mutants.py removed a CI build's folder
    mid-build on 2026-12-05 ("open /tmp/envbuilder-build-.../.tmp-metadata.json: no such file")."""
    import tempfile

    private = tmp_path_factory.mktemp("tmp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(private))
        mp.setattr(tempfile, "tempdir", str(private))
        yield


@pytest.fixture(autouse=True)
def _fresh_daemon_memos() -> None:
    """Each test meets its daemon for the first time: what an earlier test's engine answered to
    the memlock probe (certify/gpu_access.py, remembered a day per daemon ID) is forgotten."""
    import shutil

    from envbuilder.resources import user_data_dir

    shutil.rmtree(user_data_dir() / "daemons", ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _private_lock_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The machine-wide folder of build locks (image/commit.py shared_locks_dir, /tmp/envbuilder-locks
    for users) is one of this test session: parallel test runs never wait on each other's locks
    of a tag like `me/x:1`. Tests of the sharing itself point two data folders at one folder."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVBUILDER_LOCK_DIR", str(tmp_path_factory.mktemp("envbuilder-locks")))
        yield


@pytest.fixture(autouse=True)
def _uv_offline_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests are offline: uv (the default Python's wheel check, image/python_pick.py) reads
    no index unless a test gives it find-links; tests marked docker/network/wheel/gpu keep uv's
    network."""
    if not any(
        request.node.get_closest_marker(m) for m in ("docker", "podman", "network", "wheel", "gpu", "harness")
    ):
        monkeypatch.setenv("UV_OFFLINE", "1")


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
    return Path(first).name in {"docker", "dockerd", "docker-registry", "buildctl", "podman"}


@pytest.fixture(autouse=True)
def _no_docker_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a unit test that touches Docker (or Podman); docker/podman/gpu-marked tests are left alone."""
    if any(request.node.get_closest_marker(m) for m in ("docker", "podman", "gpu")):
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


# --------------------------------------------------------------------------- docker-marked tests
# What the docker-marked tests need: a real daemon, a BuildKit client, the local base image, the
# wheelhouse and the local registries that `make services` (scripts/services.sh) provides. When one
# is missing the test is skipped, except with ENVBUILDER_REQUIRE_DOCKER=1 (.ci/run sets it): then it
# fails, because a docker test that skips in CI hides a missing install step. (These live here, not
# in tests/integration/conftest.py, so that `from conftest import ...` names one module for mypy.)

BASE_IMAGE = os.environ.get("ENVBUILDER_TEST_BASE", "envbuilder-test/debian:bookworm")
STATE = Path(os.environ.get("ENVBUILDER_TEST_STATE", "/var/cache/envbuilder-test"))
REGISTRY = "127.0.0.1:5000"
REGISTRY_AUTH = "127.0.0.1:5001"
REGISTRY_USER, REGISTRY_PASSWORD = "envbuilder", "envbuilder-test"  # scripts/services.sh
TORCH = "torch==2.13.0"


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail when ENVBUILDER_REQUIRE_DOCKER=1 (CI)."""
    if os.environ.get("ENVBUILDER_REQUIRE_DOCKER") == "1":
        pytest.fail(f"{reason} (ENVBUILDER_REQUIRE_DOCKER=1: a skipped docker test is a failure)")
    pytest.skip(f"{reason}; run `make services` as root")


@pytest.fixture(scope="session")
def engine() -> DockerEngine:
    """The real engine, with the daemon up and a BuildKit-capable CLI."""
    try:
        cli = find_buildkit_cli()
        eng = DockerEngine(cli)
        eng.ping()
    except EnvbuilderError as exc:
        unavailable(f"Docker is not usable: {exc.message}")
    return eng


@pytest.fixture(scope="session")
def base_image(engine: DockerEngine) -> str:
    if engine.inspect_image(BASE_IMAGE) is None:
        unavailable(f"base image {BASE_IMAGE} is missing")
    return BASE_IMAGE


@pytest.fixture(scope="session")
def wheelhouse() -> Path:
    path = STATE / "wheelhouse"
    if not list(path.glob("torch-2.13.0*.whl")) or not list(path.glob("sympy-*.whl")):
        unavailable(f"wheelhouse {path} lacks torch 2.13.0 and its dependencies")
    return path


def _registry_status(address: str) -> int | None:
    try:
        with urllib.request.urlopen(f"http://{address}/v2/", timeout=3) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


@pytest.fixture(scope="session")
def registry() -> str:
    if _registry_status(REGISTRY) != 200:
        unavailable(f"no open registry on {REGISTRY}")
    return REGISTRY


@pytest.fixture(scope="session")
def registry_auth() -> str:
    if _registry_status(REGISTRY_AUTH) != 401:
        unavailable(f"no htpasswd registry on {REGISTRY_AUTH}")
    return REGISTRY_AUTH


@dataclass(frozen=True)
class Docker26:
    """The Docker 26 daemon with CDI that scripts/services.sh starts beside the system one."""

    sock: Path  # its API socket (DOCKER_HOST=unix://...)
    cli: Path  # its own docker CLI (26.1, which turns --device nvidia.com/gpu=... into CDI requests)
    cdi_dir: Path  # the folder its daemon.json names in cdi-spec-dirs


@pytest.fixture(scope="session")
def docker26() -> Docker26:
    d26 = STATE / "docker26"
    found = Docker26(sock=d26 / "docker.sock", cli=d26 / "root/usr/bin/docker", cdi_dir=d26 / "cdi")
    if not found.cli.is_file() or not found.sock.is_socket():
        unavailable(f"no Docker 26 with CDI at {found.sock}")
    probe = subprocess.run(
        [str(found.cli), "-H", f"unix://{found.sock}", "info", "--format", "{{json .CDISpecDirs}}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    if probe.returncode != 0 or str(found.cdi_dir) not in probe.stdout:
        unavailable(f"Docker 26 at {found.sock} does not answer with CDI on: {probe.stderr.strip()[:200]}")
    return found


# The buildx plugin scripts/buildx.sh unpacks (run on its own as `docker-buildx`).
BUILDX = STATE / "buildx" / "root" / "usr" / "libexec" / "docker" / "cli-plugins" / "docker-buildx"


@pytest.fixture(scope="session")
def containerd_builder(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment that has buildx build on the Docker 26 with the containerd image store
    (scripts/services.sh): a builder whose exporter rewrites file times. A docker context of its
    own, in a config folder of its own; the system daemon stays the engine."""
    sock = STATE / "docker26-containerd" / "docker.sock"
    cli = STATE / "docker26" / "root" / "usr" / "bin" / "docker"
    if not BUILDX.is_file() or not cli.is_file() or not sock.is_socket():
        unavailable(f"no buildx at {BUILDX} or no Docker 26 with the containerd image store at {sock}")
    config = tmp_path_factory.mktemp("docker-config")
    proc = subprocess.run(
        [str(cli), "--config", str(config), "context", "create", "envbuilder-containerd",
         "--docker", f"host=unix://{sock}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        unavailable(f"cannot make a docker context for {sock}: {proc.stderr.strip()[:200]}")
    context = {"DOCKER_CONFIG": str(config), "DOCKER_CONTEXT": "envbuilder-containerd"}
    return {**context, "ENVBUILDER_BUILDX": str(BUILDX)}


@dataclass(frozen=True)
class SpecFile:
    name: str
    path: Path


@pytest.fixture(scope="session")
def run_id() -> Iterator[str]:
    """Unique per session, so names and tags of one run never collide with another's. At the end,
    every image tag that carries it is removed: the run's builds are about 1 GB apiece, and a tag
    left behind keeps its layers from `docker builder prune` (here, with 37 tags of earlier runs
    left, a prune freed 3.9 GB; after removing them, 24 GB)."""
    rid = secrets.token_hex(3)
    started = time.time()
    yield rid
    remove_tags_with(rid, dangling_since=started)


def remove_tags_with(text: str, *, dangling_since: float | None = None) -> None:
    """Remove the system daemon's image tags that contain text and, with dangling_since, the
    untagged images made since then: a rebuild under a fixed tag (envbuilder/run-it:...) or a
    refused build leaves its image without a tag, 70 of 1 GB were counted here after a day of runs
    (no daemon: nothing to do; what a run beside this one left untagged in the meantime goes too,
    unless a container uses it)."""
    import docker
    import requests

    try:
        client = docker.from_env(timeout=60)
        tags = [t for image in client.images.list() for t in image.tags if text in t]
        for tag in tags:
            with contextlib.suppress(docker.errors.NotFound):
                client.images.remove(tag, force=True)
        if dangling_since is None:
            return
        for image in client.images.list(filters={"dangling": True}):
            created = datetime.fromisoformat(image.attrs["Created"][:19]).replace(tzinfo=timezone.utc)
            if created.timestamp() >= dangling_since:
                with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                    client.images.remove(image.attrs["Id"])
    except (docker.errors.DockerException, requests.RequestException):
        return


def write_spec(directory: Path, name: str, *, requirements: tuple[str, ...] = ()) -> SpecFile:
    """An images/NAME.yaml asking for torch 2.13.0 on Python 3.11 (the local base's Python)."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [
        "schema_version: 1",
        f"name: {name}",
        "description: envbuilder integration test image",
        f'framework: "{TORCH}"',
        'python: "3.11"',
        "strategy: bundled",
    ]
    if requirements:
        lines.append("requirements:")
        lines += [f'  - "{r}"' for r in requirements]
    path = directory / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return SpecFile(name=name, path=path)


def envbuilder_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real CLI (`python -m envbuilder`) as a user would, output captured; `env` is added
    to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "envbuilder", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **env} if env else None,
    )


@pytest.fixture(scope="session")
def cleanup_refs(engine: DockerEngine) -> Iterator[list[str]]:
    """Image references to remove at the end of the session (tags only; layers stay cached)."""
    refs: list[str] = []
    yield refs
    for ref in reversed(refs):
        with contextlib.suppress(EnvbuilderError):
            engine.remove_image(ref, force=True)


@pytest.fixture(scope="session")
def cpu_image(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    """The bundled torch 2.13.0 CPU image, built by the real CLI and tagged (certify and the
    hardening tests use it)."""
    work = tmp_path_factory.mktemp("certify-build")
    spec = write_spec(work / "images", "certify-it")
    tag = f"envbuilder-it/certify:{run_id}"
    res = envbuilder_cli(
        "build", str(spec.path), "--cpu", "--base-image", base_image, "--wheelhouse", str(wheelhouse),
        "--tag", tag, "--lock-out", str(work / "lock.json"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    cleanup_refs.append(tag)
    return tag


# --------------------------------------------------------------------------- hypothesis budgets
# tests/unit/test_fuzz_*.py: `ci`, the default, keeps the unit suite to seconds and is seeded (a
# CI failure reproduces); `fuzz` (`make fuzz`: HYPOTHESIS_PROFILE=fuzz) runs FUZZ_EXAMPLES (10,000)
# inputs per loader (shared among its tests). Neither keeps an example database in the checkout.
_HYPOTHESIS = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
settings.register_profile("ci", max_examples=25, derandomize=True, **_HYPOTHESIS)  # type: ignore[arg-type]
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "10000")),
    **_HYPOTHESIS,  # type: ignore[arg-type]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
