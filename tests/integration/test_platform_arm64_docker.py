"""A real linux/arm64 image from `envbuilder build --platform`, on this x86_64 machine: BuildKit
runs the arm64 steps under QEMU (Debian's qemu-user-static, registered by scripts/arm64-base.sh,
which also makes the arm64 Debian base). A small CPU spec: the framework comes from the base's
own environment (--base-venv: a torch 2.13.0 stand-in, no wheel downloaded or run), so what is
proven is the platform axis: the stack resolved for arm64, the Dockerfile's FROM --platform, the
image's architecture, the aarch64 package lock, and the machine a container of it reports."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import envbuilder_cli, unavailable, write_spec

from envbuilder.engine import DockerEngine
from envbuilder.image.lock import read_lock

pytestmark = pytest.mark.docker

ARM64_BASE = os.environ.get("ENVBUILDER_TEST_ARM64_BASE", "envbuilder-test/debian-arm64:bookworm")
VENV = "/opt/torch/.venv"
# the 20.10 client builds with DOCKER_BUILDKIT=1 (the CLI first on PATH may have no buildx)
DOCKER20 = os.environ.get("ENVBUILDER_TEST_DOCKER20", "/usr/bin/docker")
# A torch 2.13.0 distribution the base's venv holds (a stand-in: metadata and a module, no wheel)
STUB = (
    f"python3 -m venv {VENV} && d=$({VENV}/bin/python -c "
    "'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])') && "
    'mkdir -p "$d/torch" "$d/torch-2.13.0.dist-info" && '
    "printf 'Metadata-Version: 2.1\\nName: torch\\nVersion: 2.13.0\\n' "
    '> "$d/torch-2.13.0.dist-info/METADATA" && '
    "printf 'torch/__init__.py,,\\n' > \"$d/torch-2.13.0.dist-info/RECORD\" && "
    'echo \'__version__ = "2.13.0"\' > "$d/torch/__init__.py"'
)


@pytest.fixture(scope="module")
def arm64_base(engine: DockerEngine, run_id: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The arm64 Debian base with the stand-in torch in its own venv, built under QEMU."""
    if not Path("/proc/sys/fs/binfmt_misc/qemu-aarch64").exists():
        unavailable("no qemu-aarch64 binfmt handler (run scripts/arm64-base.sh as root)")
    if engine.inspect_image(ARM64_BASE) is None:
        unavailable(f"arm64 base image {ARM64_BASE} is missing (run scripts/arm64-base.sh as root)")
    ctx = tmp_path_factory.mktemp("arm64-base")
    (ctx / "Dockerfile").write_text(f"FROM {ARM64_BASE}\nRUN {STUB}\n", encoding="utf-8")
    tag = f"envbuilder-it/arm64-torch-base:{run_id}"
    done = subprocess.run(
        [DOCKER20, "build", "-q", "--platform", "linux/arm64", "-t", tag, str(ctx)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "DOCKER_BUILDKIT": "1"}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    try:
        yield tag
    finally:
        engine.remove_image(tag, force=True)


def test_build_for_linux_arm64_makes_an_arm64_image_with_the_aarch64_lock(
    engine: DockerEngine, arm64_base: str, run_id: str, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path / "images", "arm64-it")
    tag = f"envbuilder-it/arm64:{run_id}"
    lock_out = tmp_path / "lock.json"
    done = envbuilder_cli(
        "build", str(spec.path), "--cpu", "--platform", "aarch64", "--base-image", arm64_base,
        "--base-venv", VENV, "--network", "none", "--tag", tag, "--lock-out", str(lock_out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "-arm64" in done.stdout  # the stack id names the platform
    info = subprocess.run(
        ["docker", "image", "inspect", tag], capture_output=True, text=True, check=True, timeout=60
    )
    (image,) = json.loads(info.stdout)
    assert image["Architecture"] == "arm64"
    label = json.loads(image["Config"]["Labels"]["io.envbuilder.stack"])
    assert label["platform"] == "linux/arm64" and label["id"].endswith("-arm64")
    lock = read_lock(lock_out)
    assert lock.stack.platform == "linux/arm64"
    assert [p.platform for p in lock.packages] == ["aarch64"]
    assert lock.resolution["request"]["platform"] == "linux/arm64"
    machine = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "uname", tag, "-m"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert machine.stdout.strip() == "aarch64", machine.stderr
