"""Where `run` looks for certificates, with the real daemon and the local registry (hostile-inputs
D4 and D16): an image pushed with a signed attestation under a registry name, and run by a local
tag that shares its ID, is not looked up in that registry; a cached attestation verified for the
repository it was pushed to does not hold for another repository its key is not trusted for; an
unsigned certificate given to `certs import` is used only with --trust-imported.

The image is the local base with one label (no RUN step: built in a second); its certificate is
made here, sealed with the real code, and stored on "machine A" through CertStore.add, so that
`push --attest` signs it as it would sign one that `certify` made.
"""

from __future__ import annotations

import io
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from conftest import envbuilder_cli

from envbuilder.certify.certificate import Certificate, build_certificate, seal
from envbuilder.certify.store import CertStore
from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return envbuilder_cli(*args, env={"ENVBUILDER_DATA_DIR": str(data)})


def cpu_certificate(image_id: str, ref: str) -> Certificate:
    return build_certificate(
        image={"id": image_id, "ref": ref, "stack": None, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": None, "gpus": [], "gpu_access": "none"},
        run={},
        harness={"steps": [], "verdict": "certified-cpu-only"},
        thresholds={},
        verdict="certified-cpu-only",
        verdict_reason="made by the test",
    )


@dataclass(frozen=True)
class Pushed:
    local: str  # a local tag, no registry
    remote: str  # registry/name:tag it was pushed to, with a signed attestation
    outside: str  # the same image pushed to another repository, no attestation
    image_id: str
    data_a: Path


@pytest.fixture(scope="module")
def pushed(
    engine: DockerEngine,
    base_image: str,
    registry: str,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Pushed:
    local = f"h4-trust-local/img:{run_id}"
    dockerfile = f"FROM {base_image}\nLABEL envbuilder-test-run={run_id}\n".encode()
    client = docker.from_env(timeout=120)
    image, _logs = client.images.build(fileobj=io.BytesIO(dockerfile), tag=local, rm=True)
    cleanup_refs.append(local)
    image_id = str(image.id)
    data = tmp_path_factory.mktemp("trust-a") / "data"
    assert cli(data, "keys", "generate", "--name", "ci").returncode == 0
    CertStore(data / "certs.sqlite").add(cpu_certificate(image_id, local))
    remote = f"{registry}/h4-trust/img:{run_id}"
    res = cli(data, "push", local, "--to", remote, "--attest")
    cleanup_refs.append(remote)
    assert res.returncode == 0, res.stderr[-3000:]
    outside = f"{registry}/h4-trust-outside/img:{run_id}"
    engine.tag(image_id, outside)
    cleanup_refs.append(outside)
    engine.push(outside)
    return Pushed(local=local, remote=remote, outside=outside, image_id=image_id, data_a=data)


def machine_b(tmp_path: Path, a: Pushed, registry: str) -> Path:
    """A data dir that trusts machine A's key for machine A's repositories only."""
    data = tmp_path / "b"
    res = cli(data, "keys", "import", str(a.data_a / "keys" / "ci.pub"), "--name", "a",
              "--repository", f"{registry}/h4-trust/*")  # fmt: skip
    assert res.returncode == 0, res.stderr
    return data


def test_a_local_tag_is_not_looked_up_in_the_registry_the_image_was_pushed_to(
    pushed: Pushed, registry: str, tmp_path: Path
) -> None:
    data = machine_b(tmp_path, pushed, registry)
    refused = cli(data, "run", pushed.local, "--gpu-access", "none", "--", "true")
    assert refused.returncode == 12, refused.stderr[-3000:]
    assert "fetching" not in refused.stderr and "names no registry" in refused.stderr
    assert f"(envbuilder run {registry}/h4-trust" in refused.stderr  # the hint names a RepoDigest
    ran = cli(data, "run", pushed.remote, "--gpu-access", "none", "--", "true")
    assert ran.returncode == 0 and "verified from fallback tag" in ran.stderr, ran.stderr[-3000:]
    again = cli(data, "run", pushed.local, "--gpu-access", "none", "--", "true")  # the cache holds one now
    assert again.returncode == 12 and "verified again" not in again.stderr, again.stderr[-3000:]


def test_a_cached_attestation_does_not_hold_for_a_repository_its_key_is_not_trusted_for(
    pushed: Pushed, registry: str, tmp_path: Path
) -> None:
    data = machine_b(tmp_path, pushed, registry)
    assert cli(data, "run", pushed.remote, "--gpu-access", "none", "--", "true").returncode == 0
    listed = json.loads(cli(data, "certs", "list", "--json").stdout)
    assert [c["origin"] for c in listed] == ["attestation"]
    outside = cli(data, "run", pushed.outside, "--gpu-access", "none", "--", "true")
    assert outside.returncode == 12, outside.stderr[-3000:]
    assert "verified again" not in outside.stderr and "[no-certificate]" in outside.stderr


def test_an_unsigned_imported_certificate_needs_trust_imported(pushed: Pushed, tmp_path: Path) -> None:
    """hostile-inputs D4: a certificate re-pointed at this image and re-sealed, then imported."""
    doc = dict(cpu_certificate("sha256:" + "ab" * 32, "other/img:1").to_dict())
    doc["image"] = {**doc["image"], "id": pushed.image_id}
    forged = tmp_path / "forged.json"
    forged.write_text(
        json.dumps(seal({k: v for k, v in doc.items() if k not in ("content_hash", "section_hashes")}))
    )
    data = tmp_path / "c"
    imported = cli(data, "certs", "import", str(forged))
    assert imported.returncode == 0 and "not signed" in imported.stderr, imported.stderr
    refused = cli(data, "run", pushed.local, "--gpu-access", "none", "--", "true")
    assert refused.returncode == 12 and "[imported-unsigned]" in refused.stderr, refused.stderr[-3000:]
    assert "--trust-imported" in refused.stderr
    ran = cli(data, "run", "--trust-imported", pushed.local, "--gpu-access", "none", "--", "true")
    assert ran.returncode == 0 and "unsigned (--trust-imported)" in ran.stderr, ran.stderr[-3000:]
