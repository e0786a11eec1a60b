"""`envbuilder certify` for real: build the bundled torch CPU image from the local Debian base and
wheelhouse, certify it on the CPU path, store, verify, and catch an edited copy.

The CPU path of the harness takes about a minute on two cores (its own budget is 100 s).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.certify.certificate import verify_certificate
from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def cpu_image(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    """The bundled torch 2.13.0 CPU image, built by the real CLI and tagged."""
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
