"""`envbuilder certify` for real: build the bundled torch CPU image from the local Debian base and
wheelhouse, certify it on the CPU path, store, verify, and catch an edited copy; the image's
entrypoint refuses a too-old driver.

The CPU path of the harness takes about a minute on two cores (its own budget is 100 s).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import envbuilder_cli

from envbuilder.certify.certificate import verify_certificate
from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker


def test_certify_cpu_image_for_real(
    cpu_image: str, engine: DockerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "store"))
    out = tmp_path / "cert.json"
    res = envbuilder_cli("certify", cpu_image, "--gpu-access", "none", "--json", "--out", str(out))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "[harness]" in res.stderr and "NOT be a GPU certification" in res.stderr  # streamed progress
    cert = json.loads(res.stdout)
    assert json.loads(out.read_text()) == cert
    assert cert["verdict"] == "certified-cpu-only"
    assert verify_certificate(cert) == []
    info = engine.inspect_image(cpu_image)
    assert info is not None and cert["image"]["id"] == info.id
    assert cert["image"]["stack"]["framework"] == {"name": "torch", "version": "2.13.0", "variant": "cpu"}
    assert cert["host"]["gpu_access"] == "none" and cert["harness"]["mode"] == "cpu"
    steps = {s["name"]: s["status"] for s in cert["harness"]["steps"]}
    assert steps["cpu_check"] == "pass" and steps["cuda_smoke"] == "skip"
    assert "--network" in cert["run"]["docker_args"] and "--cpu-only" in cert["run"]["docker_args"]

    # stored, and verifiable against the image it was made for
    listed = json.loads(envbuilder_cli("certs", "list", "--json").stdout)
    assert [c["id"] for c in listed] == [cert["content_hash"].removeprefix("sha256:")]
    cid = listed[0]["id"][:12]
    ok = envbuilder_cli("certs", "verify", cid, "--image", cpu_image)
    assert ok.returncode == 0, ok.stderr
    moved = envbuilder_cli("certs", "verify", cid, "--image", "envbuilder-test/debian:bookworm")
    assert moved.returncode == 12 and "certificate is for image" in moved.stderr

    # an edited copy fails verification and is refused on import
    exported = tmp_path / "exported.json"
    assert envbuilder_cli("certs", "export", cid, str(exported)).returncode == 0
    edited = json.loads(exported.read_text())
    edited["verdict"] = "certified"
    exported.write_text(json.dumps(edited, indent=2))
    assert any("changed: verdict" in p for p in verify_certificate(edited))
    bad = envbuilder_cli("certs", "import", str(exported))
    assert bad.returncode == 12 and "content hash mismatch" in bad.stderr


HELLO = "print('hello from envbuilder')"


def test_the_image_refuses_a_too_old_driver_whatever_starts_it(
    cpu_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver check at start-up in this real image: the GPU-less machine stands in a driver
    through the file the check reads (ENVBUILDER_DRIVER_VERSION_FILE) and a GPU stack's floor
    through the variable it reads (ENVBUILDER_MIN_DRIVER; a CPU image sets none). Refused whether
    plain `docker run` or `envbuilder run` starts it; started on a new enough driver."""
    image = cpu_image
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
