"""Attestations through a registry, offline (tests/unit/fake_registry.py): attach and fetch in both
discovery modes, re-attaching adds nothing, a certificate is never signed onto another image;
`run`'s certificate finder fetches, caches, verifies the cache again under today's policy, and
refuses with each reason; `push` checks everything before it pushes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert_doc as cert
from fake_engine import FakeEngine
from fake_registry import fake_registry, push_image
from securesystemslib.signer import CryptoSigner

from envbuilder.attest import MEDIA_TYPE, TrustedKey, TrustPolicy, attach_certificates, fetch_verified
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.push import push_image as push_attested
from envbuilder.attest.statement import CERTIFICATE, TEST_RESULT
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.engine.credentials import Credentials
from envbuilder.errors import CertificateRefusedError, SigningKeyError
from envbuilder.registry import RegistryClient, parse_reference
from envbuilder.run.certificates import certificate_finder
from envbuilder.run.coverage import RefusedError


def anonymous(_registry: str) -> Credentials | None:
    return None


def client(host: str) -> RegistryClient:
    return RegistryClient(host, credentials=anonymous, backoff=0, retries=1)


@pytest.fixture
def signer(tmp_path: Path) -> CryptoSigner:
    return load_signer(generate_key("ci", directory=tmp_path / "keys"))


def trust(signer: CryptoSigner) -> TrustPolicy:
    return TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key),), source="test")


@pytest.mark.parametrize("api", [False, True], ids=["fallback-tag", "referrers-api"])
def test_attach_then_fetch_verified(signer: CryptoSigner, api: bool) -> None:
    with fake_registry(referrers_api=api) as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        ref = parse_reference(f"{host}/team/train:1")
        first = attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        assert [a.new for a in first] == [True, True]
        again = attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        assert [a.new for a in again] == [False, False]  # the same certificate, predicate and key
        assert len(reg.referrers("team/train", digest, artifact_type=MEDIA_TYPE).descriptors) == 2
        report = fetch_verified(f"{host}/team/train:1", policy=trust(signer), client=client)
        assert report.digest == digest and report.refused == ()
        assert [c.id for c in report.certificates] == [certificate.id]
        assert {v.predicate_type for v in report.verified} == {CERTIFICATE, TEST_RESULT}


def test_never_signs_a_certificate_onto_another_image(signer: CryptoSigner) -> None:
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        other = Certificate(cert(image_id="sha256:" + "cd" * 32))
        with pytest.raises(
            CertificateRefusedError, match="refusing to sign a certificate onto another image"
        ):
            attach_certificates(
                reg, ref, digest=digest, image_id=other.image.id, certificates=[other], signer=signer
            )
        with pytest.raises(CertificateRefusedError, match="is for image"):
            attach_certificates(
                reg, ref, digest=digest, image_id=image_id, certificates=[other], signer=signer
            )


def _info(host: str, digest: str, image_id: str) -> ImageInfo:
    return ImageInfo(
        id=image_id, tags=(f"{host}/team/train:1",), repo_digests=(f"{host}/team/train@{digest}",)
    )


def test_finder_fetches_caches_and_verifies_the_cache_again(signer: CryptoSigner, tmp_path: Path) -> None:
    store = CertStore(tmp_path / "b.sqlite")  # "machine B": nothing local
    lines: list[str] = []
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        ref = parse_reference(f"{host}/team/train:1")
        attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        policy = trust(signer)
        find = certificate_finder(
            f"{host}/team/train:1",
            store=store,
            policy=lambda: policy,
            fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
            say=lines.append,
        )
        got = find(_info(host, digest, image_id))
        assert [c.content_hash for c in got] == [certificate.content_hash]
        assert "cached in the store" in lines[-1]
        assert [r.origin for r in store.list(image=digest)] == ["attestation"]
    # the registry is gone: the cache is verified again, offline
    assert [c.content_hash for c in find(_info(host, digest, image_id))] == [certificate.content_hash]
    assert "verified again" in lines[-1]
    # the key is no longer trusted: the cache does not hold, and the registry cannot be reached
    policy = TrustPolicy(keys=(), source="emptied policy")
    with pytest.raises(RefusedError) as info:
        find(_info(host, digest, image_id))
    assert [r.reason for r in info.value.refusals] == ["unavailable"]
    assert info.value.exit_code == 12


def test_finder_refuses_each_attestation_with_its_reason(signer: CryptoSigner, tmp_path: Path) -> None:
    attacker = load_signer(generate_key("attacker", directory=tmp_path / "other"))
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        forged = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[forged], signer=attacker
        )
        find = certificate_finder(
            f"{host}/team/train:1",
            store=CertStore(tmp_path / "b.sqlite"),
            policy=lambda: trust(signer),
            fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
        )
        with pytest.raises(RefusedError, match=r"\[untrusted-key\]") as info:
            find(_info(host, digest, image_id))
        assert {r.reason for r in info.value.refusals} == {"untrusted-key"}
        bare_digest, bare_id = push_image(reg, "team/train", "2")
        with pytest.raises(RefusedError, match="has no attestations") as none:
            find(_info(host, bare_digest, bare_id))
        assert none.value.refusals[0].reason == "no-certificate"


def test_finder_without_registry_digest_finds_nothing(tmp_path: Path) -> None:
    find = certificate_finder(
        "team/train:1", store=CertStore(tmp_path / "s.sqlite"), policy=lambda: trust_none()
    )
    assert find(ImageInfo(id="sha256:" + "ee" * 32, tags=("team/train:1",), repo_digests=())) == []


def trust_none() -> TrustPolicy:
    return TrustPolicy(keys=())


def test_push_checks_everything_before_pushing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    image_id = "sha256:" + "ab" * 32
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    eng = FakeEngine(images={"reg.lan/team/train:1": info, image_id: info}, push_digest="sha256:" + "12" * 32)
    store = CertStore(tmp_path / "s.sqlite")
    kw: dict[str, Any] = {"engine": eng, "store": store}
    with pytest.raises(CertificateRefusedError, match="no certificate for image"):
        push_attested("reg.lan/team/train:1", attest=True, **kw)
    store.add(Certificate(cert(image_id=image_id)))
    with pytest.raises(SigningKeyError, match="no signing key"):
        push_attested("reg.lan/team/train:1", attest=True, **kw)
    generate_key("ci", passphrase=b"pw")
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    with pytest.raises(SigningKeyError, match="no passphrase was given"):
        push_attested("reg.lan/team/train:1", attest=True, **kw)
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == []  # nothing left the machine
    out = push_attested("reg.lan/team/train:1", to="reg.lan/team/train:2", **kw)  # no --attest
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == [
        ("tag", (image_id, "reg.lan/team/train:2")),
        ("push", "reg.lan/team/train:2"),
    ]
    assert out.reference == f"reg.lan/team/train@{eng.push_digest}"
    assert [r.image_id for r in store.list(image=eng.push_digest)] == [image_id]  # keyed by the digest
