"""Certificates that travel, for real: "machine A" (one data dir) certifies a CPU image and
pushes it with signed attestations to the local docker-registry (no referrers API: the fallback
tag scheme); "machine B" (another data dir, the image removed locally) runs it by reference and
succeeds; six forgeries are refused with their reason (exit 12) by `verify` and by `run`:
payload edited, re-signed with an untrusted key, subject swapped, attestation copied to another
image, signature stripped, expired under max_age. The htpasswd registry takes a push with the
Docker config's credentials and refuses an anonymous one (exit 14).

Why this module takes minutes, not seconds: one real build (cached layers), one quick
certification, and one pull of the image after it is removed from "machine B".
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REGISTRY_PASSWORD, REGISTRY_USER, envbuilder_cli

from envbuilder.attest import MEDIA_TYPE
from envbuilder.attest.envelope import sign_statement
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.publish import ANNOTATION_PREDICATE
from envbuilder.attest.statement import CERTIFICATE
from envbuilder.certify.certificate import seal
from envbuilder.engine import DockerEngine
from envbuilder.engine.credentials import Credentials
from envbuilder.registry import Descriptor, RegistryClient, parse_reference

pytestmark = pytest.mark.docker


def cli(data: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI as a user on the machine whose data dir is `data` runs it."""
    return envbuilder_cli(*args, env={"ENVBUILDER_DATA_DIR": str(data), **(env or {})})


def anonymous(_registry: str) -> Credentials | None:
    return None


@dataclass(frozen=True)
class Certified:
    ref: str  # registry/name:tag, as machine A pushed it
    digest: str  # its manifest digest
    image_id: str
    data_a: Path
    public_key: Path


@pytest.fixture(scope="module")
def machine_a(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    registry: str,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Certified:
    """Machine A: a key, a build (a label with the run id makes this image ID unique to this
    session, so removing it touches nobody else's), a quick CPU certification, a push with
    attestations (`certify --push`)."""
    work = tmp_path_factory.mktemp("machine-a")
    data = work / "data"
    spec = work / "images" / "trust-it.yaml"
    spec.parent.mkdir()
    spec.write_text(
        "schema_version: 1\nname: trust-it\n"
        f"description: envbuilder attestation test image {run_id}\n"
        'framework: "torch==2.13.0"\npython: "3.11"\nstrategy: bundled\n'
    )
    ref = f"{registry}/envbuilder-it/trust:{run_id}"
    lock = str(work / "lock.json")
    built = cli(data, "build", str(spec), "--cpu", "--base-image", base_image,
                "--wheelhouse", str(wheelhouse), "--tag", ref, "--lock-out", lock)  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    cleanup_refs.append(ref)
    assert cli(data, "keys", "generate", "--name", "ci").returncode == 0
    certified = cli(data, "certify", ref, "--gpu-access", "none", "--quick", "--push")
    assert certified.returncode == 0, certified.stderr[-3000:]
    assert "pushed " in certified.stderr and "2 new attestation(s)" in certified.stderr
    info = engine.inspect_image(ref)
    assert info is not None
    digest = next(
        d.split("@")[1] for d in info.repo_digests if d.startswith(f"{registry}/envbuilder-it/trust@")
    )
    listed = json.loads(cli(data, "certs", "list", "--json").stdout)
    assert [c["manifest_digests"] for c in listed] == [[digest]]  # keyed by the manifest digest too
    return Certified(
        ref=ref, digest=digest, image_id=info.id, data_a=data, public_key=data / "keys" / "ci.pub"
    )


def machine_b(tmp_path: Path, a: Certified, name: str = "b") -> Path:
    """A fresh data dir that trusts machine A's public key (and has nothing else)."""
    data = tmp_path / name
    res = cli(data, "keys", "import", str(a.public_key), "--name", "machine-a")
    assert res.returncode == 0, res.stderr
    return data


def legit_envelope(registry: str, a: Certified) -> bytes:
    """Machine A's signed certificate envelope, as an attacker reads it from the registry."""
    reg = RegistryClient(registry, credentials=anonymous)
    repo = parse_reference(a.ref).repository
    found = reg.referrers(repo, a.digest, artifact_type=MEDIA_TYPE).descriptors
    desc = next(d for d in found if d.annotations.get(ANNOTATION_PREDICATE) == CERTIFICATE)
    layer = reg.get_manifest(repo, desc.digest).json()["layers"][0]["digest"]
    return reg.get_blob(repo, layer)


def edit_payload(raw: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    env = json.loads(raw)
    doc = json.loads(base64.b64decode(env["payload"]))
    edit(doc)
    env["payload"] = base64.b64encode(json.dumps(doc).encode()).decode()
    return json.dumps(env).encode()


def promote(doc: dict[str, Any]) -> None:
    """The attacker's edit: claim a GPU certification, and re-seal the certificate's hashes so
    that only the signature can tell."""
    body = {
        k: v
        for k, v in doc["predicate"]["certificate"].items()
        if k not in ("section_hashes", "content_hash")
    }
    body["verdict"] = "certified"
    doc["predicate"]["certificate"] = seal(body)


@dataclass
class Forger:
    """The attacker: pushes an image to a repository of its own and attaches an envelope to it."""

    engine: DockerEngine
    registry: str
    run_id: str
    cleanup_refs: list[str]

    def push(self, source: str, name: str) -> tuple[str, str]:
        ref = f"{self.registry}/envbuilder-it/{name}:{self.run_id}"
        self.engine.tag(source, ref)
        self.cleanup_refs.append(ref)
        return ref, self.engine.push(ref)

    def publish(self, source: str, name: str, envelope: bytes) -> str:
        """Push `source` (a local image) as `name` and attach `envelope`; return the reference."""
        ref, digest = self.push(source, name)
        reg = RegistryClient(self.registry, credentials=anonymous)
        repo = parse_reference(ref).repository
        subject: Descriptor = reg.get_manifest(repo, digest).descriptor
        reg.attach(repo, subject, artifact_type=MEDIA_TYPE, blob=envelope)
        return ref


@pytest.fixture
def forger(engine: DockerEngine, registry: str, run_id: str, cleanup_refs: list[str]) -> Forger:
    return Forger(engine=engine, registry=registry, run_id=run_id, cleanup_refs=cleanup_refs)


def assert_refused(data: Path, ref: str, reason: str, *extra: str) -> None:
    """`verify` and `run` both refuse, exit 12, naming the reason."""
    verified = cli(data, "verify", ref, *extra)
    assert verified.returncode == 12, verified.stdout + verified.stderr
    assert f"[{reason}]" in verified.stdout, verified.stdout
    ran = cli(data, "run", ref, "--gpu-access", "none", *extra, "--", "true")
    assert ran.returncode == 12, ran.stderr
    assert f"[{reason}]" in ran.stderr and "envbuilder: error: refusing to run" in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr + verified.stderr


# --------------------------------------------------------------------------- the six forgeries


def test_forgery_1_of_6_payload_edited(machine_a: Certified, forger: Forger, tmp_path: Path) -> None:
    forged = edit_payload(legit_envelope(forger.registry, machine_a), promote)
    ref = forger.publish(machine_a.image_id, "forged-edit", forged)
    assert_refused(machine_b(tmp_path, machine_a), ref, "bad-signature")


def test_forgery_2_of_6_resigned_with_untrusted_key(
    machine_a: Certified, forger: Forger, tmp_path: Path
) -> None:
    attacker = load_signer(generate_key("attacker", directory=tmp_path / "attacker"))
    doc = json.loads(base64.b64decode(json.loads(legit_envelope(forger.registry, machine_a))["payload"]))
    promote(doc)
    ref = forger.publish(machine_a.image_id, "forged-key", sign_statement(doc, attacker))
    assert_refused(machine_b(tmp_path, machine_a), ref, "untrusted-key")


def test_forgery_3_of_6_subject_swapped(
    machine_a: Certified, forger: Forger, base_image: str, tmp_path: Path
) -> None:
    """The statement is edited to name another image (the base image), and attached to it."""
    _, other_digest = forger.push(base_image, "forged-subject")
    other = forger.engine.inspect_image(base_image)
    assert other is not None

    def swap(doc: dict[str, Any]) -> None:
        doc["subject"][0]["digest"]["sha256"] = other_digest.removeprefix("sha256:")
        doc["subject"][1]["digest"]["sha256"] = other.id.removeprefix("sha256:")

    forged = edit_payload(legit_envelope(forger.registry, machine_a), swap)
    ref = forger.publish(base_image, "forged-subject", forged)
    assert_refused(machine_b(tmp_path, machine_a), ref, "bad-signature")


def test_forgery_4_of_6_attestation_copied_to_another_image(
    machine_a: Certified, forger: Forger, base_image: str, tmp_path: Path
) -> None:
    envelope = legit_envelope(forger.registry, machine_a)  # unchanged: a valid signature, for another image
    ref = forger.publish(base_image, "forged-copy", envelope)
    assert_refused(machine_b(tmp_path, machine_a), ref, "subject-mismatch")


def test_forgery_5_of_6_signature_stripped(machine_a: Certified, forger: Forger, tmp_path: Path) -> None:
    env = json.loads(legit_envelope(forger.registry, machine_a))
    env["signatures"] = []
    ref = forger.publish(machine_a.image_id, "forged-unsigned", json.dumps(env).encode())
    assert_refused(machine_b(tmp_path, machine_a), ref, "unsigned")


def test_forgery_6_of_6_expired_under_max_age(machine_a: Certified, tmp_path: Path) -> None:
    """The genuine attestation, under a policy whose max_age it has outlived (it is seconds old)."""
    data = machine_b(tmp_path, machine_a)
    assert_refused(data, machine_a.ref, "expired", "--max-age", "1s")
    policy = tmp_path / "strict.yaml"
    policy.write_text(
        f"schema_version: 1\nmax_age: 1s\nkeys:\n  - name: a\n    public_key: {machine_a.public_key}\n"
    )
    assert_refused(tmp_path / "c", machine_a.ref, "expired", "--trust", str(policy))


def test_untrusted_verifier_refuses_the_genuine_attestation(machine_a: Certified, tmp_path: Path) -> None:
    """A machine that trusts no key refuses even machine A's real signature (exit 12)."""
    res = cli(tmp_path / "nobody", "verify", machine_a.ref)
    assert res.returncode == 12 and "[untrusted-key]" in res.stdout, res.stdout + res.stderr


# --------------------------------------------------------------------------- machine B


def test_machine_b_runs_the_image_by_reference(
    machine_a: Certified, engine: DockerEngine, tmp_path: Path
) -> None:
    data = machine_b(tmp_path, machine_a)
    verified = cli(data, "verify", machine_a.ref, "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    doc = json.loads(verified.stdout)
    assert doc["ok"] and doc["digest"] == machine_a.digest and doc["refused"] == []
    assert doc["via"].startswith("fallback tag sha256-")  # docker-registry 2.8 has no referrers API
    assert [c["covers"]["verdict"] for c in doc["certificates"]] == ["certified-cpu-only"]
    assert doc["certificates"][0]["signed_by"]["name"] == "machine-a"

    engine.remove_image(machine_a.image_id, force=True)  # unique to this session (see machine_a)
    assert engine.inspect_image(machine_a.image_id) is None
    ran = cli(data, "run", machine_a.ref, "--gpu-access", "none", "--", "python3", "-c", "print('ran on B')")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "ran on B" in ran.stdout
    assert "pulling it" in ran.stderr and "verified from fallback tag" in ran.stderr
    pulled = engine.inspect_image(machine_a.ref)
    assert pulled is not None and pulled.id == machine_a.image_id  # the config digest survived push and pull
    stored = json.loads(cli(data, "certs", "list", "--json").stdout)
    assert [(c["origin"], c["manifest_digests"]) for c in stored] == [("attestation", [machine_a.digest])]
    again = cli(data, "run", machine_a.ref, "--gpu-access", "none", "--", "true")
    assert again.returncode == 0 and "verified again" in again.stderr, again.stderr  # from the cache


def test_push_to_the_htpasswd_registry_with_docker_config_credentials(
    machine_a: Certified,
    engine: DockerEngine,
    registry_auth: str,
    run_id: str,
    tmp_path: Path,
    cleanup_refs: list[str],
) -> None:
    """`push --attest` through Basic auth: refused anonymously (exit 14, nothing attached), then
    taken with the Docker config's credentials; `verify` reads it back with the same."""
    ref = f"{registry_auth}/envbuilder-it/trust:{run_id}"
    if engine.inspect_image(machine_a.ref) is None:  # machine B's test removed and pulled it
        engine.pull(machine_a.ref)
    anon = {"DOCKER_CONFIG": str(tmp_path / "anonymous")}
    source = machine_a.ref
    res = cli(machine_a.data_a, "push", source, "--to", ref, "--attest", env=anon)
    cleanup_refs.append(ref)
    assert res.returncode == 14 and "wants credentials" in res.stderr, res.stderr  # before any push
    auth = base64.b64encode(f"{REGISTRY_USER}:{REGISTRY_PASSWORD}".encode()).decode()
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(json.dumps({"auths": {registry_auth: {"auth": auth}}}))
    creds = {"DOCKER_CONFIG": str(tmp_path / "cfg")}
    pushed = cli(machine_a.data_a, "push", source, "--to", ref, "--attest", "--json", env=creds)
    assert pushed.returncode == 0, pushed.stderr[-3000:]
    assert [a["new"] for a in json.loads(pushed.stdout)["attestations"]] == [True, True]
    refused = cli(machine_a.data_a, "verify", ref, env=anon)
    assert refused.returncode == 14 and "wants credentials" in refused.stderr, refused.stderr
    ok = cli(machine_a.data_a, "verify", ref, env=creds)
    assert ok.returncode == 0 and "valid" in ok.stdout, ok.stdout + ok.stderr
