"""`envbuilder build --base-venv` on the real engine: a base image whose own environment already
holds the framework (as NGC images and the GPU machine's own environment do) is built on without
resolving or downloading anything for the framework, the lock records what the base holds, and a
stack the base does not provide is refused before anything is built or tagged."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.engine import ContainerSpec, DockerEngine
from envbuilder.errors import LockError
from envbuilder.image.lock import read_lock
from envbuilder.image.packages import BASE_RESOLVER

pytestmark = pytest.mark.docker

VENV = "/opt/torch/.venv"


@pytest.fixture(scope="module")
def torch_base(engine: DockerEngine, base_image: str, wheelhouse: Path, run_id: str) -> Iterator[str]:
    """The local base with torch 2.13.0+cpu installed into its own venv from the wheelhouse."""
    tag = f"envbuilder-it/torch-base:{run_id}"
    name = f"envbuilder-it-torch-base-{run_id}"
    pip = f"{VENV}/bin/pip install -q --no-index --find-links /wheelhouse torch==2.13.0"
    install = f"python3 -m venv {VENV} && {pip}"
    subprocess.run(
        ["docker", "run", "--name", name, "--network", "none", "-v", f"{wheelhouse}:/wheelhouse:ro",
         base_image, "sh", "-c", install],
        check=True, capture_output=True, timeout=900,
    )  # fmt: skip
    try:
        subprocess.run(["docker", "commit", name, tag], check=True, capture_output=True, timeout=900)
        subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True, timeout=600)
        yield tag
    finally:  # whatever failed above: no container, no tag left behind
        subprocess.run(["docker", "rm", "-f", name], check=False, capture_output=True, timeout=600)
        engine.remove_image(tag, force=True)


def build_on(base: str, spec: Path, tag: str, lock_out: Path) -> subprocess.CompletedProcess[str]:
    """`envbuilder build SPEC --base-venv` on `base`, with no network in the build."""
    return envbuilder_cli(
        "build", str(spec), "--cpu", "--base-image", base, "--base-venv", VENV,
        "--network", "none", "--tag", tag, "--lock-out", str(lock_out),
    )  # fmt: skip


def test_the_base_provides_the_framework_and_nothing_is_installed_for_it(
    engine: DockerEngine, torch_base: str, run_id: str, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path / "images", "base-venv-it")
    tag = f"envbuilder-it/base-venv:{run_id}"
    lock_out = tmp_path / "lock.json"
    res = build_on(torch_base, spec.path, tag, lock_out)
    try:
        assert res.returncode == 0, res.stderr[-3000:]
        assert "the base environment provides torch==2.13.0+cpu" in res.stderr + res.stdout
        (locked,) = read_lock(lock_out).packages
        assert locked.resolver == BASE_RESOLVER and locked.framework_index is None
        (torch,) = locked.packages
        assert (torch.name, torch.version, torch.group, torch.wheel) == ("torch", "2.13.0+cpu", "base", "")
        assert len(torch.sha256) == 64  # the digest of torch's installed RECORD in the base
        ran = engine.run(
            ContainerSpec(image=tag, command=("python", "-c", "import torch; print(torch.__version__)")),
            timeout_s=300,
        )
        assert ran.exit_code == 0 and ran.stdout.strip() == "2.13.0+cpu", ran.stderr
    finally:  # the tag asked for and the stack tag build adds (envbuilder/NAME:STACK)
        engine.remove_image(tag, force=True)
        written = read_lock(lock_out) if lock_out.exists() else None
        for ref in written.build.tags if written is not None and written.build is not None else ():
            engine.remove_image(ref, force=True)


def test_a_stack_the_base_does_not_provide_is_refused_before_building(
    engine: DockerEngine, torch_base: str, run_id: str, tmp_path: Path
) -> None:
    spec = write_spec(tmp_path / "images", "base-venv-refused")
    spec.path.write_text(
        spec.path.read_text().replace('python: "3.11"', 'python: "3.11"\ncompanions: [torchvision]')
    )
    tag = f"envbuilder-it/base-venv-refused:{run_id}"
    lock_out = tmp_path / "lock.json"
    res = build_on(torch_base, spec.path, tag, lock_out)
    assert res.returncode == LockError.exit_code, res.stderr[-2000:]
    assert "does not provide the stack's framework: torchvision is not installed" in res.stderr
    assert "hint:" in res.stderr and "Traceback" not in res.stderr
    assert not lock_out.exists()
    assert engine.inspect_image(tag) is None
