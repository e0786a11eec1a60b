"""The driver check at start-up in a real image built by `envbuilder build`: the entrypoint refuses
a too-old driver whether plain `docker run` or `envbuilder run` starts the container, and starts the
command on a new enough one. This GPU-less machine stands in a driver through the file the check
reads (ENVBUILDER_DRIVER_VERSION_FILE) and a GPU stack's floor through the variable it reads
(ENVBUILDER_MIN_DRIVER; a CPU image sets none)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker

HELLO = "print('hello from envbuilder')"


@pytest.fixture(scope="module")
def image(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    work = tmp_path_factory.mktemp("entrypoint-it")
    spec = write_spec(work / "images", "entrypoint-it")
    tag = f"envbuilder-it/entrypoint:{run_id}"
    res = envbuilder_cli(
        "build", str(spec.path), "--cpu", "--base-image", base_image, "--wheelhouse", str(wheelhouse),
        "--tag", tag, "--lock-out", str(work / "lock.json"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    cleanup_refs.append(tag)
    return tag


def test_the_image_refuses_a_too_old_driver_whatever_starts_it(
    image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    for name, driver in (("old", "535.104.05"), ("new", "580.159.04")):
        (tmp_path / name).write_text(
            f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Thu Oct 30 2025\n"
        )
    tmp_path.chmod(0o755)

    def fake(name: str) -> list[str]:
        return [
            "-v", f"{tmp_path / name}:/fake/version:ro", "-e", "ENVBUILDER_DRIVER_VERSION_FILE=/fake/version",
            "-e", "ENVBUILDER_MIN_DRIVER=580.65.06",
        ]  # fmt: skip

    plain = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", *fake("old"), image, "python3", "-c", HELLO],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert plain.returncode == 78, plain.stderr[-2000:]
    assert "hello" not in plain.stdout
    assert plain.stderr.startswith(
        "envbuilder: error: this image needs NVIDIA driver >= 580.65.06, but the host's driver is 535.104.05"
    )
    # `envbuilder run` (forced past the missing certificate) passes the refusal's exit code on.
    via_run = envbuilder_cli("run", "--force", image, *fake("old"), "--", "python3", "-c", HELLO)
    assert via_run.returncode == 78 and "hello" not in via_run.stdout, via_run.stderr[-2000:]
    assert "hint: upgrade the host's driver to >= 580.65.06" in via_run.stderr
    ok = envbuilder_cli("run", "--force", image, *fake("new"), "--", "python3", "-c", HELLO)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert ok.stdout.strip().splitlines()[-1] == "hello from envbuilder"
    # With no command the image starts a shell (a new ENTRYPOINT clears the base's CMD).
    shell = subprocess.run(
        ["docker", "run", "--rm", "-i", "--network", "none", image], input="echo from-bash $BASH_VERSION\n",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert shell.returncode == 0 and shell.stdout.startswith("from-bash 5."), shell.stderr[-2000:]
