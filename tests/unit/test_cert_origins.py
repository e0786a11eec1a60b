"""Where `run`'s certificates come from and which it trusts (run/certificates.py and the origin,
import and trust decisions it calls: attest/envelope.py verify_envelope, attest/policy.py,
attest/imported.py, certify/store.py's import, certify/certificate.py's time and ID checks):
the conditions the automatic mutants (benchmarks/mutants.py --auto certs, 2026-12-05) found no
test for on main. Everything is written inside tmp_path."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert_doc
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import FormatError
from securesystemslib.signer import CryptoSigner, SSlibKey

from envbuilder.attest import TrustedKey, TrustPolicy
from envbuilder.attest import envelope as envelope_module
from envbuilder.attest.discovery import AttestationReport, newest_first
from envbuilder.attest.envelope import Refused, Verified, sign_statement, verify_envelope
from envbuilder.attest.imported import import_certificate, is_envelope
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.statement import CERTIFICATE, ImageSubject, certificate_statements
from envbuilder.certify import store as store_module
from envbuilder.certify.certificate import (
    CLOCK_SKEW_S,
    Certificate,
    issued_in_future,
    seal,
    verify_certificate,
)
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.errors import CertificateRefusedError, RegistryError, StoreError
from envbuilder.registry import Reference
from envbuilder.run.certificates import certificate_finder, registry_reference
from envbuilder.run.coverage import RefusedError

DIGEST = "sha256:" + "11" * 32
OTHER_DIGEST = "sha256:" + "22" * 32
IMAGE_ID = "sha256:" + "ee" * 32


def info(*repo_digests: str) -> ImageInfo:
    return ImageInfo(id=IMAGE_ID, tags=(), repo_digests=repo_digests)


# --------------------------------------------------------------------------- registry_reference


@pytest.mark.parametrize(
    "before",
    [
        (f"other.example/team/train@{OTHER_DIGEST}",),  # another repository first
        ("not a reference@@", f"reg.example/team/other@{OTHER_DIGEST}"),  # an unparsable one first
    ],
)
def test_the_repo_digest_of_the_named_repository_is_found_wherever_it_is_listed(
    before: tuple[str, ...],
) -> None:
    found = registry_reference("reg.example/team/train:1", info(*before, f"reg.example/team/train@{DIGEST}"))
    assert found is not None and found[0].name == "reg.example/team/train" and found[1] == DIGEST


def test_only_the_named_repositorys_digest_is_taken_when_several_are_listed() -> None:
    both = info(f"reg.example/team/train@{DIGEST}", f"other.example/team/train@{OTHER_DIGEST}")
    found = registry_reference("other.example/team/train:2", both)
    assert found is not None and found[1] == OTHER_DIGEST


@pytest.mark.parametrize("named", ["ubuntu:22.04", "docker.io/library/ubuntu:22.04", "library/ubuntu"])
def test_a_docker_hub_repo_digest_is_matched_by_its_full_name(named: str) -> None:
    """Docker lists a Hub image's RepoDigest by its short name (`ubuntu@sha256:...`); every
    spelling of the reference names that repository."""
    found = registry_reference(named, info(f"ubuntu@{DIGEST}"))
    assert found is not None and found[0].name == "docker.io/library/ubuntu" and found[1] == DIGEST


# --------------------------------------------------------------------------- certificate_finder


def key(tmp_path: Path, name: str) -> CryptoSigner:
    return load_signer(generate_key(name, directory=tmp_path / name))


def trusting(*signers: CryptoSigner) -> TrustPolicy:
    return TrustPolicy(keys=tuple(TrustedKey(name=f"k{i}", key=s.public_key) for i, s in enumerate(signers)))


def offline_asking(asked: list[str]) -> Any:
    """A registry fetch that notes the digest it is asked for and fails as an offline one does."""

    def fetch(ref: Reference, *, policy: TrustPolicy, digest: str) -> Any:
        asked.append(digest)
        raise RegistryError("offline")

    return fetch


def cpu_cert(image_id: str = IMAGE_ID, **over: Any) -> Certificate:
    return Certificate(cert_doc("certified-cpu-only", gpus=(), image_id=image_id, **over))


def test_the_fetch_given_is_the_one_asked(tmp_path: Path) -> None:
    asked: list[tuple[Reference, str]] = []

    def fetch(ref: Reference, *, policy: TrustPolicy, digest: str) -> Any:
        asked.append((ref, digest))
        raise RegistryError("offline")

    find = certificate_finder(
        "reg.example/team/train:1", store=CertStore(tmp_path / "s.sqlite"), policy=trusting, fetch=fetch
    )
    with pytest.raises(RefusedError) as refused:
        find(info(f"reg.example/team/train@{DIGEST}"))
    assert [r.reason for r in refused.value.refusals] == ["unavailable"]
    assert [(ref.name, digest) for ref, digest in asked] == [("reg.example/team/train", DIGEST)]


def test_a_certificate_whose_image_id_extends_this_images_is_not_this_images(tmp_path: Path) -> None:
    """The store lists certificates by image ID, reference or digest; a certificate certified
    under this image's ID as its reference but for a longer (another) ID is not one of them."""
    store = CertStore(tmp_path / "s.sqlite")
    doc = cert_doc("certified-cpu-only", gpus=(), image_id=IMAGE_ID + "00")
    longer = Certificate(seal({**doc, "image": {**doc["image"], "ref": IMAGE_ID}}))
    store.add(longer)
    assert [r.id for r in store.list(image=IMAGE_ID)] == [longer.id]  # listed by its reference
    find = certificate_finder(IMAGE_ID, store=store, policy=trusting)
    assert find(info()) == []


def test_every_local_certificate_of_the_image_is_found_newest_first(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    older = cpu_cert(issued_at="2026-01-01T00:00:00+00:00")
    newer = cpu_cert(issued_at="2026-02-01T00:00:00+00:00")
    for c in (older, newer):
        store.add(c)
    find = certificate_finder(IMAGE_ID, store=store, policy=trusting)
    assert [c.id for c in find(info())] == [newer.id, older.id]


def test_local_certificates_stand_alone_whatever_else_is_stored_for_the_image(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    imported = cpu_cert(issued_at="2026-01-01T00:00:00+00:00")
    local = cpu_cert(issued_at="2026-02-01T00:00:00+00:00")
    store.add_imported(imported)
    store.add(local)
    find = certificate_finder(IMAGE_ID, store=store, policy=trusting, trust_imported=True)
    assert [c.id for c in find(info())] == [local.id]


def test_only_imported_certificates_are_judged_as_imported(tmp_path: Path) -> None:
    """No local certificate: the imported one is used (unsigned, --trust-imported), not the
    older attestation cached for the image beside it, though its signature holds."""
    signer = key(tmp_path, "ci")
    store = CertStore(tmp_path / "s.sqlite")
    attested = cpu_cert(issued_at="2026-01-01T00:00:00+00:00")
    imported = cpu_cert(issued_at="2026-02-01T00:00:00+00:00")
    store_attested(store, [(attested, sign_statement(statement(attested, 0), signer))])
    store.add_imported(imported)
    assert [r.origin for r in store.list(image=IMAGE_ID)] == ["imported", "attestation"]
    find = certificate_finder(IMAGE_ID, store=store, policy=lambda: trusting(signer), trust_imported=True)
    assert [c.id for c in find(info())] == [imported.id]


def test_every_unsigned_imported_certificate_is_found_with_trust_imported(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    older = cpu_cert(issued_at="2026-01-01T00:00:00+00:00")
    newer = cpu_cert(issued_at="2026-02-01T00:00:00+00:00")
    for c in (older, newer):
        store.add_imported(c)
    find = certificate_finder(IMAGE_ID, store=store, policy=trusting, trust_imported=True)
    assert [c.id for c in find(info())] == [newer.id, older.id]


def store_envelopes(store: CertStore, certificate: Certificate, envelopes: list[bytes]) -> None:
    """Keep `envelopes` for an imported certificate so that the store lists them in this order:
    the first is stored last (the newest, when the clock's second turns meanwhile) and with the
    least digest (the order within one second)."""
    for rank, raw in reversed(list(enumerate(envelopes))):
        store.add_imported(
            certificate,
            envelope=raw,
            envelope_digest="sha256:" + str(rank) * 64,
            repository="reg.example/team/train",
            manifest_digest=DIGEST,
        )
    assert [e.envelope for e in store.envelopes(certificate.id)] == envelopes


def statement(certificate: Certificate, which: int) -> dict[str, Any]:
    """The certificate statement (0) or the test-result statement (1) of a certificate."""
    subject = ImageSubject(
        repository="reg.example/team/train", manifest_digest=DIGEST, image_id=certificate.image.id
    )
    return certificate_statements(certificate, subject)[which]


def test_every_envelope_of_an_imported_certificate_is_tried(tmp_path: Path) -> None:
    """The same certificate imported twice, signed by two keys; the policy now trusts only the
    key of the envelope listed second."""
    good, gone = key(tmp_path, "good"), key(tmp_path, "gone")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    store_envelopes(store, certificate, [sign_statement(statement(certificate, 0), s) for s in (gone, good)])
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(good))
    assert [c.id for c in find(info())] == [certificate.id]


def test_each_envelope_of_an_imported_certificate_is_judged_for_its_own_repository(tmp_path: Path) -> None:
    """The same certificate imported twice, from two repositories; the key trusted only for the
    second repository signed the second envelope (the first one's repository is not the one the
    second is judged for)."""
    good, gone = key(tmp_path, "good"), key(tmp_path, "gone")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    signed = [sign_statement(statement(certificate, 0), s) for s in (gone, good)]
    repos = ["reg.example/other/train", "reg.example/team/train"]
    for rank in (1, 0):  # listed in this order (see store_envelopes)
        store.add_imported(
            certificate,
            envelope=signed[rank],
            envelope_digest="sha256:" + str(rank) * 64,
            repository=repos[rank],
            manifest_digest=DIGEST,
        )
    assert [e.repository for e in store.envelopes(certificate.id)] == repos
    policy = TrustPolicy(keys=(scoped(good, "reg.example/team/*"),))
    find = certificate_finder("train:1", store=store, policy=lambda: policy)
    assert [c.id for c in find(info())] == [certificate.id]


def test_a_verified_envelope_without_a_certificate_does_not_hide_one_with_it(tmp_path: Path) -> None:
    """The test-result statement (verified, but no certificate in it) listed before the
    certificate statement, both signed by a trusted key."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    store_envelopes(store, certificate, [sign_statement(statement(certificate, i), signer) for i in (1, 0)])
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(signer))
    assert [c.id for c in find(info())] == [certificate.id]


def test_every_refusal_of_an_imported_certificate_is_named(tmp_path: Path) -> None:
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    envelopes = [sign_statement(statement(certificate, 0), key(tmp_path, n)) for n in ("a", "b")]
    store_envelopes(store, certificate, envelopes)
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(key(tmp_path, "c")))
    with pytest.raises(RefusedError) as refused:
        find(info())
    assert [r.reason for r in refused.value.refusals] == ["untrusted-key", "untrusted-key"]


def store_attested(store: CertStore, pairs: list[tuple[Certificate, bytes]]) -> None:
    """Cache attestations of DIGEST so that the store lists them in this order (as
    store_envelopes does)."""
    for rank, (certificate, raw) in reversed(list(enumerate(pairs))):
        store.add_attested(
            certificate,
            envelope=raw,
            envelope_digest="sha256:" + str(rank) * 64,
            repository="reg.example/team/train",
            manifest_digest=DIGEST,
            keyid="k",
        )
    assert [a.envelope for a in store.attestations(DIGEST)] == [raw for _, raw in pairs]


def test_a_cached_attestation_of_another_digest_is_not_taken_for_this_one(tmp_path: Path) -> None:
    """A row cached under DIGEST whose signed statement is about another manifest of the same image
    (the store edited, or a row written under the wrong digest): verified again for the digest
    asked, it is refused and the registry is asked."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    other = ImageSubject(
        repository="reg.example/team/train", manifest_digest=OTHER_DIGEST, image_id=certificate.image.id
    )
    raw = sign_statement(certificate_statements(certificate, other)[0], signer)
    store = CertStore(tmp_path / "s.sqlite")
    store_attested(store, [(certificate, raw)])
    asked: list[str] = []

    find = certificate_finder(
        "reg.example/team/train:1", store=store, policy=lambda: trusting(signer), fetch=offline_asking(asked)
    )
    with pytest.raises(RefusedError):
        find(info(f"reg.example/team/train@{DIGEST}"))
    assert asked == [DIGEST]


@pytest.mark.parametrize(
    ("cached", "expected"),
    [
        (["older/ci", "newer/ci"], ["newer", "older"]),
        (["newer/ci", "newer/other"], ["newer"]),
        (["older/ci", "newer/ci", "newer/other"], ["newer", "older"]),
    ],
)
def test_cached_attestations_come_newest_first_and_each_certificate_once(
    tmp_path: Path, cached: list[str], expected: list[str]
) -> None:
    """Cached in another order than their issue (the older listed first), a certificate signed
    twice: run gets each certificate once, the newest first."""
    signers = {"ci": key(tmp_path, "ci"), "other": key(tmp_path, "other")}
    certs = {
        "older": cpu_cert(issued_at="2026-11-01T00:00:00Z"),
        "newer": cpu_cert(issued_at="2026-12-01T00:00:00Z"),
    }
    store = CertStore(tmp_path / "s.sqlite")
    pairs = [(certs[c], signers[k]) for c, k in (item.split("/") for item in cached)]
    store_attested(store, [(c, sign_statement(statement(c, 0), s)) for c, s in pairs])

    def offline(*_a: Any, **_kw: Any) -> Any:
        raise AssertionError("the cache holds them: no registry is asked")

    find = certificate_finder(
        "reg.example/team/train:1", store=store, policy=lambda: trusting(*signers.values()), fetch=offline
    )
    got = find(info(f"reg.example/team/train@{DIGEST}"))
    assert [c.id for c in got] == [certs[name].id for name in expected]


def test_a_cached_envelope_without_a_certificate_does_not_stand_for_one(tmp_path: Path) -> None:
    """Only the test-result statement is cached for the digest: the registry is asked."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    store_attested(store, [(certificate, sign_statement(statement(certificate, 1), signer))])
    asked: list[str] = []

    find = certificate_finder(
        "reg.example/team/train:1", store=store, policy=lambda: trusting(signer), fetch=offline_asking(asked)
    )
    with pytest.raises(RefusedError) as refused:
        find(info(f"reg.example/team/train@{DIGEST}"))
    assert [r.reason for r in refused.value.refusals] == ["unavailable"] and asked == [DIGEST]


def test_every_certificate_fetched_is_cached(tmp_path: Path) -> None:
    signer = key(tmp_path, "ci")
    policy = trusting(signer)
    certs = [cpu_cert(issued_at=f"2026-1{m}-01T00:00:00Z") for m in (1, 2)]
    verified = []
    for c in certs:
        raw = sign_statement(statement(c, 0), signer)
        outcome = verify_envelope(raw, repository="reg.example/team/train", digest=DIGEST, policy=policy)
        assert isinstance(outcome, Verified)
        verified.append(outcome)
    report = AttestationReport(
        reference="reg.example/team/train:1",
        repository="reg.example/team/train",
        digest=DIGEST,
        via="test",
        verified=tuple(verified),
        refused=(),
    )
    store = CertStore(tmp_path / "s.sqlite")
    find = certificate_finder(
        "reg.example/team/train:1", store=store, policy=lambda: policy, fetch=lambda *_a, **_kw: report
    )
    got = find(info(f"reg.example/team/train@{DIGEST}"))
    assert [c.id for c in got] == [certs[1].id, certs[0].id]
    assert sorted(a.cert_id for a in store.attestations(DIGEST)) == sorted(c.id for c in certs)
    # Each row is keyed by its envelope's digest (caching the same envelope again replaces it; a
    # row without one is never replaced) and names the key that signed it.
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        rows = set(db.execute("SELECT envelope_digest, keyid FROM attestations"))
    assert rows == {(v.envelope_digest, v.keyid) for v in verified}


def test_every_refused_attestation_of_the_registry_is_named(tmp_path: Path) -> None:
    certificate = cpu_cert()
    nobody = TrustPolicy(keys=())
    refused = []
    for name in ("a", "b"):
        raw = sign_statement(statement(certificate, 0), key(tmp_path, name))
        outcome = verify_envelope(raw, repository="reg.example/team/train", digest=DIGEST, policy=nobody)
        assert isinstance(outcome, Refused)
        refused.append(outcome)
    report = AttestationReport(
        reference="reg.example/team/train:1",
        repository="reg.example/team/train",
        digest=DIGEST,
        via="test",
        verified=(),
        refused=tuple(refused),
    )
    find = certificate_finder(
        "reg.example/team/train:1",
        store=CertStore(tmp_path / "s.sqlite"),
        policy=lambda: nobody,
        fetch=lambda *_a, **_kw: report,
    )
    with pytest.raises(RefusedError) as got:
        find(info(f"reg.example/team/train@{DIGEST}"))
    assert [r.reason for r in got.value.refusals] == ["untrusted-key", "untrusted-key"]
    # each named by its own envelope (the two differ: signed by two keys)
    assert refused[0].envelope_digest != refused[1].envelope_digest
    for r, outcome in zip(got.value.refusals, refused, strict=True):
        assert outcome.envelope_digest[:19] in r.message


# --------------------------------------------------------------------------- verify_envelope


@pytest.mark.parametrize("bad", [5, None, 1.5])
def test_any_signature_whose_keyid_is_not_a_string_makes_the_envelope_malformed(
    tmp_path: Path, bad: Any
) -> None:
    signer = key(tmp_path, "ci")
    doc = json.loads(sign_statement(statement(cpu_cert(), 0), signer))
    doc["signatures"].append({"keyid": bad, "sig": doc["signatures"][0]["sig"]})  # after a good one
    outcome = verify_envelope(
        json.dumps(doc).encode(), repository="reg.example/team/train", digest=DIGEST, policy=trusting(signer)
    )
    assert isinstance(outcome, Refused) and outcome.reason == "malformed", outcome
    assert "keyid is not a string" in outcome.message


def signed_by(certificate: Certificate, *signatures: tuple[CryptoSigner, bool]) -> bytes:
    """One envelope of the certificate statement with a signature per (signer, good): a good
    one signs the payload, a bad one is that key's signature of something else."""
    docs = []
    for signer, good in signatures:
        doc = json.loads(sign_statement(statement(certificate, 0), signer))
        if not good:
            other = json.loads(sign_statement(statement(certificate, 1), signer))
            doc["signatures"] = other["signatures"]
        docs.append(doc)
    assert len({d["payload"] for d in docs}) == 1
    return json.dumps({**docs[0], "signatures": [s for d in docs for s in d["signatures"]]}).encode()


def verify(raw: bytes, policy: TrustPolicy) -> Verified | Refused:
    return verify_envelope(raw, repository="reg.example/team/train", digest=DIGEST, policy=policy)


def test_a_signature_by_any_trusted_key_of_the_policy_holds(tmp_path: Path) -> None:
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    outcome = verify(signed_by(cpu_cert(), (b, True)), trusting(a, b))
    assert isinstance(outcome, Verified) and outcome.keyid == str(b.public_key.keyid)


def test_the_trusted_signature_counts_wherever_it_is_listed(tmp_path: Path) -> None:
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    outcome = verify(signed_by(cpu_cert(), (a, True), (b, True)), trusting(b))
    assert isinstance(outcome, Verified) and outcome.keyid == str(b.public_key.keyid)


def test_a_bad_signature_of_one_trusted_key_does_not_hide_a_good_one_of_another(tmp_path: Path) -> None:
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    outcome = verify(signed_by(cpu_cert(), (a, False), (b, True)), trusting(a, b))
    assert isinstance(outcome, Verified) and outcome.keyid == str(b.public_key.keyid)
    refused = verify(signed_by(cpu_cert(), (a, False), (b, False)), trusting(a, b))
    assert isinstance(refused, Refused) and refused.reason == "bad-signature"


def test_an_untrusted_key_refusal_names_every_signing_key(tmp_path: Path) -> None:
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    refused = verify(signed_by(cpu_cert(), (a, True), (b, True)), trusting(key(tmp_path, "c")))
    assert isinstance(refused, Refused) and refused.reason == "untrusted-key"
    for signer in (a, b):
        assert str(signer.public_key.keyid)[:12] in refused.message


def test_the_signer_named_is_the_first_trusted_key_whose_signature_holds(tmp_path: Path) -> None:
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    outcome = verify(signed_by(cpu_cert(), (a, True), (b, True)), trusting(a, b))
    assert isinstance(outcome, Verified) and outcome.keyid == str(a.public_key.keyid)


def scoped(signer: CryptoSigner, *patterns: str, keyid: str | None = None) -> TrustedKey:
    """`signer`'s public key trusted for `patterns`; `keyid`: the same key under another keyid
    (a policy entry that is not this key, whatever its key value)."""
    pub = signer.public_key
    if keyid is not None:
        pub = SSlibKey(keyid, pub.keytype, pub.scheme, pub.keyval)
    return TrustedKey(name=keyid or "scoped", key=pub, repositories=patterns)


def as_file(raw: bytes, policy: TrustPolicy) -> Verified | Refused:
    """As `certs import ENVELOPE` verifies: no repository or digest of its own."""
    return verify_envelope(raw, repository=None, digest=None, policy=policy)


def test_an_envelope_file_is_trusted_through_any_key_scoped_to_its_subject(tmp_path: Path) -> None:
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    policy = TrustPolicy(keys=(scoped(a, "reg.example/*"), scoped(b, "reg.example/*")))
    assert isinstance(as_file(signed_by(cpu_cert(), (b, True)), policy), Verified)


def test_an_envelope_file_is_trusted_through_any_of_its_subjects_names(tmp_path: Path) -> None:
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    doc = statement(certificate, 0)
    doc["subject"] = [{"name": "other.example/x", "digest": {"sha256": "33" * 32}}, *doc["subject"]]
    raw = sign_statement(doc, signer)
    assert isinstance(as_file(raw, TrustPolicy(keys=(scoped(signer, "reg.example/team/*"),))), Verified)
    refused = as_file(raw, TrustPolicy(keys=(scoped(signer, "third.example/*"),)))
    assert isinstance(refused, Refused) and refused.reason == "untrusted-key"


@pytest.mark.parametrize("twin", ["prefix", "longer"])
def test_a_key_whose_keyid_only_resembles_the_signers_gives_it_no_scope(tmp_path: Path, twin: str) -> None:
    """The signer's key is trusted for other.example only; another policy entry, trusted for
    the envelope's repository, has a keyid sharing the signer's first 12 characters (or the
    signer's keyid and more): it is not the signer's entry."""
    signer = key(tmp_path, "ci")
    keyid = str(signer.public_key.keyid)
    other = keyid[:12] + "0" * (len(keyid) - 12) if twin == "prefix" else keyid + "00"
    assert other != keyid
    policy = TrustPolicy(
        keys=(scoped(signer, "other.example/*"), scoped(signer, "reg.example/*", keyid=other))
    )
    refused = as_file(signed_by(cpu_cert(), (signer, True)), policy)
    assert isinstance(refused, Refused) and refused.reason == "untrusted-key"


def test_a_registry_attestation_is_judged_for_the_repository_named_not_its_subject(tmp_path: Path) -> None:
    """Fetched for mirror.example/team/train (the reference the user named), an attestation whose
    statement names reg.example/team/train holds when the key is trusted for the mirror."""
    signer = key(tmp_path, "ci")
    policy = TrustPolicy(keys=(scoped(signer, "mirror.example/*"),))
    raw = signed_by(cpu_cert(), (signer, True))
    outcome = verify_envelope(raw, repository="mirror.example/team/train", digest=DIGEST, policy=policy)
    assert isinstance(outcome, Verified)
    outcome = verify_envelope(raw, repository="reg.example/team/train", digest=DIGEST, policy=policy)
    assert isinstance(outcome, Refused) and outcome.reason == "untrusted-key"
    # The scope holds whether or not a digest is asked for as well.
    outcome = verify_envelope(raw, repository="reg.example/team/train", digest=None, policy=policy)
    assert isinstance(outcome, Refused) and outcome.reason == "untrusted-key"


def test_the_digest_asked_for_is_checked_with_or_without_a_repository(tmp_path: Path) -> None:
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    raw = signed_by(certificate, (signer, True))
    policy = trusting(signer)
    for repository in (None, "reg.example/team/train"):
        wrong = verify_envelope(raw, repository=repository, digest=OTHER_DIGEST, policy=policy)
        assert isinstance(wrong, Refused) and wrong.reason == "subject-mismatch", repository
        # no digest asked: the subject is not checked against one
        assert isinstance(verify_envelope(raw, repository=repository, digest=None, policy=policy), Verified)


def test_what_a_verified_envelope_carries(tmp_path: Path) -> None:
    """The envelope's own digest (the store's key for it), the statement's predicate, the key."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    raw = signed_by(certificate, (signer, True))
    policy = trusting(signer)
    outcome = verify_envelope(raw, repository="reg.example/team/train", digest=DIGEST, policy=policy)
    assert isinstance(outcome, Verified)
    assert outcome.envelope_digest == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert outcome.predicate == statement(certificate, 0)["predicate"]
    assert outcome.keyid == str(signer.public_key.keyid) and outcome.envelope == raw


def test_a_signed_certificate_issued_at_an_unreadable_time_is_expired_under_max_age(tmp_path: Path) -> None:
    signer = key(tmp_path, "ci")
    raw = signed_by(cpu_cert(issued_at="yesterday"), (signer, True))
    refused = verify(raw, trusting(signer).with_max_age(86400))
    assert isinstance(refused, Refused) and refused.reason == "expired"
    assert "issued yesterday, at an unreadable time" in refused.message


@pytest.mark.parametrize(("after", "holds"), [(0, True), (1, False)])
def test_max_age_holds_up_to_its_last_second(tmp_path: Path, after: int, holds: bool) -> None:
    signer = key(tmp_path, "ci")
    raw = signed_by(cpu_cert(issued_at="2026-12-01T00:00:00Z"), (signer, True))
    now = datetime(2026, 12, 2, tzinfo=timezone.utc) + timedelta(seconds=after)
    outcome = verify_envelope(
        raw,
        repository="reg.example/team/train",
        digest=DIGEST,
        policy=trusting(signer).with_max_age(86400),
        now=now,
    )
    assert isinstance(outcome, Verified) is holds, outcome


# --------------------------------------------------------------------------- the trust policy


def test_a_key_covers_a_repository_matching_any_of_its_patterns(tmp_path: Path) -> None:
    signer = key(tmp_path, "ci")
    entry = scoped(signer, "other.example/*", "reg.example/team/*")
    assert entry.covers("reg.example/team/train") and entry.covers("other.example/x")
    assert not entry.covers("third.example/team/train")
    assert scoped(signer).covers("anything.example/at/all")  # no pattern: every repository
    policy = TrustPolicy(keys=(scoped(key(tmp_path, "a"), "other.example/*"), entry))
    assert policy.keys_for("reg.example/team/train") == [entry]


# --------------------------------------------------------------------------- certs import ENVELOPE


def import_with_subjects(
    tmp_path: Path, subjects: list[dict[str, Any]], policy: TrustPolicy, signer: CryptoSigner
) -> tuple[CertStore, Certificate]:
    certificate = cpu_cert()
    doc = statement(certificate, 0)
    doc["subject"] = subjects
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(doc, signer))
    store = CertStore(tmp_path / "s.sqlite")
    done = import_certificate(path, store=store, policy=lambda: policy)
    assert done.id == certificate.id and store.origin_of(done.id) == "imported"
    return store, certificate


def subject(name: str, digest: str) -> dict[str, Any]:
    return {"name": name, "digest": {"sha256": digest.removeprefix("sha256:")}}


def test_an_imported_envelope_is_kept_for_the_subject_its_key_is_trusted_for(tmp_path: Path) -> None:
    """The first subject names a repository the signer is not trusted for (another entry there
    has a keyid resembling the signer's); the envelope is kept for the repository it is."""
    signer = key(tmp_path, "ci")
    keyid = str(signer.public_key.keyid)
    policy = TrustPolicy(
        keys=(
            scoped(signer, "other.example/*", keyid=keyid[:12] + "0" * (len(keyid) - 12)),
            scoped(signer, "other.example/*", keyid=keyid + "00"),
            scoped(key(tmp_path, "a"), "reg.example/*"),
            scoped(signer, "reg.example/team/*"),
        )
    )
    subjects = [
        subject("other.example/x", "sha256:" + "33" * 32),
        subject("reg.example/team/train", DIGEST),
        subject("reg.example/team/train", IMAGE_ID),
    ]
    store, certificate = import_with_subjects(tmp_path, subjects, policy, signer)
    (kept,) = store.envelopes(certificate.id)
    assert kept.repository == "reg.example/team/train"


def test_an_imported_envelope_is_kept_under_its_first_subject_that_is_not_the_image(tmp_path: Path) -> None:
    """The image's own ID listed first, then a digest that starts with the image ID: that
    digest is the manifest the envelope is kept under."""
    signer = key(tmp_path, "ci")
    longer = IMAGE_ID + "00"
    subjects = [subject("reg.example/team/train", IMAGE_ID), subject("reg.example/team/train", longer)]
    store, certificate = import_with_subjects(tmp_path, subjects, trusting(signer), signer)
    (kept,) = store.envelopes(certificate.id)
    assert kept.manifest_digest == longer
    # keyed by its envelope's digest (importing it again replaces the row), naming its key
    raw = (tmp_path / "signed.json").read_bytes()
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        rows = set(db.execute("SELECT envelope_digest, keyid FROM attestations"))
    assert rows == {("sha256:" + hashlib.sha256(raw).hexdigest(), str(signer.public_key.keyid))}


def test_newest_first_puts_a_certificate_without_issued_at_last_and_keeps_each_once() -> None:
    undated = Certificate(seal({**cert_doc("certified-cpu-only", gpus=()), "issued_at": None}))
    older = cpu_cert(issued_at="2026-11-01T00:00:00Z")
    newer = cpu_cert(issued_at="2026-12-01T00:00:00Z")
    assert undated.issued_at is None
    got = newest_first([undated, older, newer, older])
    assert [c.id for c in got] == [newer.id, older.id, undated.id]


@pytest.mark.parametrize(
    ("doc", "envelope"),
    [
        ({"payloadType": "x", "signatures": []}, True),
        ({"payloadType": "x"}, False),
        ({"signatures": []}, False),
        (["payloadType", "signatures"], False),
        ("payloadType signatures", False),
        (None, False),
    ],
)
def test_an_envelope_is_an_object_with_a_payload_type_and_signatures(doc: Any, envelope: bool) -> None:
    assert is_envelope(doc) is envelope


# --------------------------------------------------------------------------- the certificate's own checks


@pytest.mark.parametrize(("ahead", "future"), [(CLOCK_SKEW_S, False), (CLOCK_SKEW_S + 1, True)])
def test_the_clock_skew_allowed_is_exactly_clock_skew_s(ahead: int, future: bool) -> None:
    now = datetime(2026, 12, 1, tzinfo=timezone.utc)
    issued = (now + timedelta(seconds=ahead)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (issued_in_future(issued, now) is not None) is future


def test_a_field_named_like_content_hash_is_part_of_the_hashed_body() -> None:
    doc = cert_doc()
    assert verify_certificate(doc) == []
    assert verify_certificate({**doc, "content_hash_note": "added later"}) != []


@pytest.mark.parametrize("keep", [12, 20, 70])
def test_a_content_hash_that_only_begins_like_the_real_one_is_a_mismatch(keep: int) -> None:
    doc = cert_doc()
    real = doc["content_hash"]
    forged = real[:keep] + ("0" if real[keep : keep + 1] != "0" else "1") * (len(real) - keep)
    assert forged != real
    assert any("content hash mismatch" in p for p in verify_certificate({**doc, "content_hash": forged}))
    assert any("content hash mismatch" in p for p in verify_certificate({**doc, "content_hash": real[:keep]}))


@pytest.mark.parametrize(
    ("given", "same"),
    [
        (IMAGE_ID, True),
        (IMAGE_ID.removeprefix("sha256:"), True),
        (IMAGE_ID[: len("sha256:") + 12], True),  # a short ID of exactly 12 hex digits
        (IMAGE_ID[: len("sha256:") + 11], False),  # 11 are too few
        (IMAGE_ID[: len("sha256:") + 40], True),
        ("sha256:" + "ef" * 32, False),
        ("sha256:" + "ee" * 31 + "ef", False),
        ("", False),
    ],
)
def test_a_certificate_is_for_an_image_given_by_its_id_or_a_prefix_of_12_or_more(
    given: str, same: bool
) -> None:
    doc = cert_doc(image_id=IMAGE_ID)
    problems = verify_certificate(doc, image_id=given)
    assert (problems == []) is same, problems


def test_a_short_image_id_equal_to_the_certificates_is_the_same_image() -> None:
    doc = cert_doc(image_id="sha256:abc")
    assert verify_certificate(doc, image_id="abc") == []
    assert verify_certificate(doc, image_id="sha256:abd") != []


# --------------------------------------------------------------------------- the store's import and lookup


def test_importing_a_file_that_cannot_be_read_is_a_store_error(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(StoreError, match="cannot read"):
        import_certificate(tmp_path / "missing.json", store=store, policy=lambda: TrustPolicy(keys=()))
    assert store.list() == []


def test_a_database_error_while_importing_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CertStore(tmp_path / "s.sqlite")

    def broken(*_a: Any, **_kw: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store_module, "_insert", broken)
    with pytest.raises(StoreError, match="disk I/O error"):
        store.add_imported(cpu_cert())


@pytest.mark.parametrize("typed", ["sha256:", "SHA256:", "zz", "sha256:zz"])
def test_only_hex_digits_are_looked_up_as_an_image_id_prefix(tmp_path: Path, typed: str) -> None:
    """An empty or non-hex ID prefix is no prefix lookup (an empty one would match every
    certificate), even where a stored image ID is not hex."""
    store = CertStore(tmp_path / "s.sqlite")
    store.add(cpu_cert())
    store.add(cpu_cert(image_id="sha256:" + "zz" * 32))
    assert store.list(image=typed) == []
    assert [r.image_id for r in store.list(image="eeee")] == [IMAGE_ID]


@pytest.mark.parametrize("typed", [IMAGE_ID.removeprefix("sha256:"), IMAGE_ID.upper()])
def test_a_whole_image_id_however_spelled_is_no_prefix_of_a_longer_one(tmp_path: Path, typed: str) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    store.add(cpu_cert())
    store.add(cpu_cert(image_id=IMAGE_ID + "00"))
    assert [r.image_id for r in store.list(image=typed)] == [IMAGE_ID]


@pytest.mark.parametrize("issued_at", ["yesterday", "2026-12-01", "2026-13-01T00:00:00Z", None])
def test_a_certificate_file_whose_issued_at_is_no_timestamp_is_not_imported(
    tmp_path: Path, issued_at: str | None
) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(seal({**cert_doc("certified-cpu-only", gpus=()), "issued_at": issued_at})))
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(CertificateRefusedError, match="issued_at is not an RFC 3339 timestamp"):
        import_certificate(path, store=store, policy=lambda: TrustPolicy(keys=()))
    assert store.list() == []


def test_a_mismatch_says_whether_the_content_hash_was_changed_or_is_missing() -> None:
    doc = cert_doc()
    changed = verify_certificate({**doc, "content_hash": "sha256:" + "0" * 64})
    assert "content hash mismatch (tampered or corrupted; changed: content_hash or section_hashes)" in changed
    missing = verify_certificate({k: v for k, v in doc.items() if k != "content_hash"})
    assert "content hash mismatch (tampered or corrupted; content_hash is missing)" in missing
    assert issued_in_future("yesterday") is None  # no timestamp: the caller's own check


# --------------------------------------------------------------------------- the second operator set
# benchmarks/mutants.py --auto certs --ops new on main (2026-12-05).

# Newest first by the time, not the text: ...:00Z sorts after ...:00.500Z as text, and +02:00 makes
# 01:00 the day before's 23:00.
FRACTION = "2026-12-01T00:00:00.500Z"
WHOLE = "2026-12-01T00:00:00Z"
OFFSET = "2026-12-01T01:00:00+02:00"


def test_newest_first_orders_by_the_time_not_the_text() -> None:
    by_time = [cpu_cert(issued_at=t) for t in (FRACTION, WHOLE, OFFSET)]
    for given in (by_time, by_time[::-1], [by_time[1], by_time[2], by_time[0]]):
        assert [c.issued_at for c in newest_first(given)] == [FRACTION, WHOLE, OFFSET]


def test_run_takes_the_newest_imported_certificate_by_the_time_first(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    certs = [cpu_cert(issued_at=t) for t in (OFFSET, WHOLE, FRACTION)]
    for c in certs:
        store.add_imported(c)
    said: list[str] = []
    find = certificate_finder("train:1", store=store, policy=trusting, trust_imported=True, say=said.append)
    assert [c.issued_at for c in find(info())] == [FRACTION, WHOLE, OFFSET]
    assert all("unsigned (--trust-imported)" in line for line in said) and len(said) == 3


def test_run_says_which_key_signed_the_imported_certificate_it_verified_again(tmp_path: Path) -> None:
    signer = key(tmp_path, "ci")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    store_envelopes(store, certificate, [sign_statement(statement(certificate, 0), signer)])
    said: list[str] = []
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(signer), say=said.append)
    assert [c.id for c in find(info())] == [certificate.id]
    assert said == [f"envbuilder: imported certificate {certificate.id[:12]} signed by k0, verified again"]


@pytest.mark.parametrize(
    "doc",
    [
        [],  # no object: TypeError inside from_dict
        {"payload": "eA==", "payloadType": "x", "signatures": [5]},  # a signature that is no object
        {"payload": "eA==", "payloadType": "x", "signatures": "ab"},  # signatures that are no list
        {"payload": 5, "payloadType": "x", "signatures": []},  # AttributeError
    ],
)
def test_an_envelope_that_securesystemslib_cannot_read_is_malformed(doc: Any) -> None:
    outcome = verify_envelope(
        json.dumps(doc).encode(), repository=None, digest=None, policy=TrustPolicy(keys=())
    )
    assert isinstance(outcome, Refused) and outcome.reason == "malformed", outcome
    assert outcome.message.startswith("not a DSSE envelope (")


@pytest.mark.parametrize("error", [FormatError("bad signature"), RecursionError("deep")])
def test_every_error_envelope_reading_documents_is_malformed_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    """securesystemslib documents FormatError for an incorrect signature (the installed version
    raises others; any version within pyproject's range may raise it), and a RecursionError must
    never escape a verification (hostile-inputs D8)."""

    def unreadable(_data: Any) -> Any:
        raise error

    monkeypatch.setattr(Envelope, "from_dict", unreadable)
    raw = json.dumps({"payload": "eA==", "payloadType": "x", "signatures": []}).encode()
    outcome = verify_envelope(raw, repository=None, digest=None, policy=TrustPolicy(keys=()))
    assert isinstance(outcome, Refused) and outcome.reason == "malformed", outcome
    assert f"({type(error).__name__}: " in outcome.message


def test_run_says_it_fetches_the_attestations_when_it_has_no_certificate(tmp_path: Path) -> None:
    said: list[str] = []

    def fetch(ref: Reference, *, policy: TrustPolicy, digest: str) -> Any:
        raise RegistryError("offline")

    find = certificate_finder(
        "reg.example/team/train:1",
        store=CertStore(tmp_path / "s.sqlite"),
        policy=trusting,
        fetch=fetch,
        say=said.append,
    )
    with pytest.raises(RefusedError):
        find(info(f"reg.example/team/train@{DIGEST}"))
    assert said == [
        f"envbuilder: no local certificate; fetching the attestations of reg.example/team/train@{DIGEST[:19]}"
    ]


def test_a_signed_payload_whose_reading_recurses_is_malformed_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_json bounds the depth (a RecursionError is unreachable through it today); the catch
    keeps any future reader's RecursionError a refusal, as hostile-inputs D8 asks."""
    signer = key(tmp_path, "ci")
    raw = sign_statement(statement(cpu_cert(), 0), signer)

    def deep(_payload: bytes) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(envelope_module, "parse_statement", deep)
    outcome = verify(raw, trusting(signer))
    assert isinstance(outcome, Refused) and outcome.reason == "malformed", outcome
    assert outcome.message == "signed, but maximum recursion depth exceeded"


MESSAGES = {
    "file-untrusted": "signed by key ",
    "subject-mismatch": "the attestation is for ",
    "expired": "the certificate was issued ",
    "future-issued": "the signed certificate's ",
    "certificate-mismatch": "the signed certificate is for image ",
    "tampered": "the signed certificate fails its own check: ",
    "malformed": "the certificate predicate: ",
}


def signed_statement(case: str, signer: CryptoSigner) -> bytes:
    """The certificate statement, signed, with what makes `case`'s refusal."""
    issued = {"expired": "2026-01-01T00:00:00Z", "future-issued": "2099-01-01T00:00:00Z"}
    certificate = cpu_cert(issued_at=issued.get(case, "2026-12-01T00:00:00Z"))
    doc = statement(certificate, 0)
    if case == "certificate-mismatch":  # a sound certificate of another image under this subject
        doc["predicate"]["certificate"] = cpu_cert(image_id="sha256:" + "ab" * 32).to_dict()
    elif case == "tampered":  # changed after sealing
        doc["predicate"]["certificate"] = {**certificate.to_dict(), "verdict_reason": "changed"}
    elif case == "malformed":
        doc["predicate"]["certificate"] = 5
    return sign_statement(doc, signer)


@pytest.mark.parametrize("case", sorted(MESSAGES))
def test_a_refusal_after_the_signature_holds_names_the_keys_and_the_predicate_type(
    tmp_path: Path, case: str
) -> None:
    """verify --json shows each refusal's message, keyids and predicate type: the signer's, the
    statement's."""
    signer = key(tmp_path, "ci")
    raw = signed_statement(case, signer)
    if case == "file-untrusted":
        outcome = as_file(raw, TrustPolicy(keys=(scoped(signer, "third.example/*"),)))
    else:
        digest = OTHER_DIGEST if case == "subject-mismatch" else DIGEST
        policy = trusting(signer).with_max_age(86400 * 7)
        now = datetime(2026, 12, 2, tzinfo=timezone.utc)
        outcome = verify_envelope(
            raw, repository="reg.example/team/train", digest=digest, policy=policy, now=now
        )
    assert isinstance(outcome, Refused), outcome
    assert outcome.reason == ("untrusted-key" if case == "file-untrusted" else case)
    shown = outcome.to_dict()
    assert isinstance(shown["message"], str) and shown["message"].startswith(MESSAGES[case]), shown
    assert shown["keyids"] == [str(signer.public_key.keyid)]
    assert shown["predicate_type"] == CERTIFICATE


@pytest.mark.parametrize("issued_at", ["yesterday", None])
def test_a_signed_certificate_whose_issued_at_is_no_timestamp_is_not_imported(
    tmp_path: Path, issued_at: str | None
) -> None:
    """The signature holds (no max_age: verify_envelope does not read the time), but an issued_at
    that is no timestamp would sort as newest forever: refused as for an unsigned file."""
    signer = key(tmp_path, "ci")
    certificate = Certificate(seal({**cert_doc("certified-cpu-only", gpus=()), "issued_at": issued_at}))
    path = tmp_path / "c.dsse.json"
    path.write_bytes(sign_statement(statement(certificate, 0), signer))
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(CertificateRefusedError, match="issued_at is not an RFC 3339 timestamp"):
        import_certificate(path, store=store, policy=lambda: trusting(signer))
    assert store.list() == []


def test_the_store_refuses_to_import_a_tampered_certificate(tmp_path: Path) -> None:
    tampered = Certificate({**cpu_cert().to_dict(), "verdict_reason": "changed after sealing"})
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(CertificateRefusedError):
        store.add_imported(tampered, envelope=b"{}", envelope_digest="sha256:" + "0" * 64)
    assert store.list() == []


def test_an_imported_certificate_and_its_envelope_are_kept_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write transaction: the envelope's row failing leaves no certificate behind."""
    store = CertStore(tmp_path / "s.sqlite")
    monkeypatch.setattr(
        store_module, "_ADD_ATTESTATION", "INSERT INTO no_such_table VALUES (?, ?, ?, ?, ?, ?)"
    )
    with pytest.raises(StoreError, match="no_such_table"):
        store.add_imported(cpu_cert(), envelope=b"{}", envelope_digest="sha256:" + "0" * 64)
    assert store.list() == []


@pytest.mark.parametrize("typed", [" eeee", "eeee\n", f" {IMAGE_ID.removeprefix('sha256:')} "])
def test_an_image_id_pasted_with_whitespace_around_it_is_still_looked_up(tmp_path: Path, typed: str) -> None:
    store = CertStore(tmp_path / "s.sqlite")
    store.add(cpu_cert())
    assert [r.image_id for r in store.list(image=typed)] == [IMAGE_ID]


@pytest.mark.parametrize(
    ("value", "why"),
    [(float("nan"), "Out of range float values"), ({1, 2}, "Object of type set is not JSON serializable")],
)
def test_a_certificate_whose_hash_cannot_be_computed_is_not_intact(value: Any, why: str) -> None:
    """A value with no JSON form (NaN: ValueError; a set: TypeError) is a problem of its own, and
    the shape's problems found before it are kept."""
    doc = cert_doc()
    problems = verify_certificate({**doc, "thresholds": {"x": value}})
    assert len(problems) == 1 and problems[0].startswith("content hash cannot be computed: " + why)
    both = verify_certificate({**doc, "kind": 5, "thresholds": {"x": value}})
    assert both[0] == "kind is 5, not 'envbuilder-certificate'"
    assert len(both) == 2 and both[1].startswith("content hash cannot be computed: " + why)


def test_a_tampered_certificate_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**cpu_cert().to_dict(), "verdict_reason": "changed after sealing"}))
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(CertificateRefusedError) as refused:
        import_certificate(path, store=store, policy=trusting)
    assert refused.value.message.startswith(f"{path} failed verification: content hash mismatch")
    assert store.list() == []


# --------------------------------------------------------------------------- third operator set (--ops third)


def test_a_max_age_not_given_keeps_the_policys_own_and_a_given_one_keeps_its_source() -> None:
    """`verify --max-age` absent: the policy file's own max_age stays; given: it replaces the age
    only, and messages still name the file the keys came from."""
    policy = TrustPolicy(keys=(), max_age_s=3600.0, source="team/trust.yaml")
    assert policy.with_max_age(None) == policy
    changed = policy.with_max_age(60.0)
    assert (changed.max_age_s, changed.source) == (60.0, "team/trust.yaml")
    assert changed.describe().startswith("team/trust.yaml: ")


def test_run_looks_the_registry_up_through_fetch_verified_when_given_no_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run REF` (no fetch injected) asks the registry REF names, through the one verified way in
    (attest.fetch_verified), for the attestations of the image's digest there."""
    import envbuilder.attest

    asked: list[tuple[str, str]] = []

    def fetch(ref: Reference, *, policy: TrustPolicy, digest: str) -> Any:
        asked.append((ref.name, digest))
        raise RegistryError("offline")

    monkeypatch.setattr(envbuilder.attest, "fetch_verified", fetch)
    find = certificate_finder(
        "reg.example/team/train:1", store=CertStore(tmp_path / "s.sqlite"), policy=trusting
    )
    with pytest.raises(RefusedError) as refused:
        find(info(f"reg.example/team/train@{DIGEST}"))
    assert [r.reason for r in refused.value.refusals] == ["unavailable"]
    assert asked == [("reg.example/team/train", DIGEST)]


def test_the_trust_policy_is_read_once_for_every_imported_certificate_of_an_image(tmp_path: Path) -> None:
    """Two signed imported certificates of one image: both judged by one reading of the policy
    (one decision per `run`, whatever happens to the policy file meanwhile)."""
    signer = key(tmp_path, "ci")
    store = CertStore(tmp_path / "s.sqlite")
    certificates = [cpu_cert(issued_at=f"2026-12-0{day}T00:00:00Z") for day in (1, 2)]
    for i, certificate in enumerate(certificates):
        store.add_imported(
            certificate,
            envelope=sign_statement(statement(certificate, 0), signer),
            envelope_digest="sha256:" + str(i) * 64,
            repository="reg.example/team/train",
            manifest_digest=DIGEST,
        )
    reads: list[TrustPolicy] = []

    def policy() -> TrustPolicy:
        reads.append(trusting(signer))
        return reads[-1]

    find = certificate_finder("train:1", store=store, policy=policy)
    assert {c.id for c in find(info())} == {c.id for c in certificates}
    assert len(reads) == 1


def test_the_signer_named_for_an_imported_certificate_is_its_newest_verified_envelopes(
    tmp_path: Path,
) -> None:
    """One certificate imported twice, signed by two trusted keys: `run` names the signer of the
    envelope the store lists first (the newest), and uses that certificate."""
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    store_envelopes(store, certificate, [sign_statement(statement(certificate, 0), s) for s in (b, a)])
    said: list[str] = []
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(a, b), say=said.append)
    assert [c.id for c in find(info())] == [certificate.id]
    assert said == [f"envbuilder: imported certificate {certificate.id[:12]} signed by k1, verified again"]


@pytest.mark.parametrize(("extra", "holds"), [(0, True), (1, False)])
def test_an_envelope_holds_up_to_envelope_max_bytes(tmp_path: Path, extra: int, holds: bool) -> None:
    """A registry attestation may weigh up to ENVELOPE_MAX_BYTES (a statement of
    STATEMENT_MAX_BYTES in base64, and the signatures), well past the 4 MiB of other JSON; one
    byte more is malformed, unparsed."""
    signer = key(tmp_path, "ci")
    raw = signed_by(cpu_cert(), (signer, True))
    raw += b" " * (envelope_module.ENVELOPE_MAX_BYTES - len(raw) + extra)  # JSON's own whitespace
    outcome = verify(raw, trusting(signer))
    assert isinstance(outcome, Verified) is holds, outcome
    if not holds:
        assert isinstance(outcome, Refused) and outcome.reason == "malformed"
        assert "larger than" in outcome.message


def test_a_refused_import_names_the_file_as_its_file_field(tmp_path: Path) -> None:
    """`certs import --json` and every caller see the file apart from the message: not JSON,
    an envelope that does not verify, an envelope of the test-result statement."""
    signer, stranger = key(tmp_path, "ci"), key(tmp_path, "stranger")
    certificate = cpu_cert()
    files = {
        "junk.json": b"{not json",
        "untrusted.json": sign_statement(statement(certificate, 0), stranger),
        "result.json": sign_statement(statement(certificate, 1), signer),
    }
    store = CertStore(tmp_path / "s.sqlite")
    for name, raw in files.items():
        path = tmp_path / name
        path.write_bytes(raw)
        with pytest.raises(CertificateRefusedError) as refused:
            import_certificate(path, store=store, policy=lambda: trusting(signer))
        assert refused.value.file == str(path), name
        assert refused.value.message.startswith(str(path)), name
    assert store.list() == []


def test_an_envelope_is_imported_as_of_the_clock_given(tmp_path: Path) -> None:
    """One instant judges the signed certificate's age and issue time (the policy's max_age,
    the clock skew), not the wall clock of the moment each check runs."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert(issued_at="2020-01-01T00:00:00Z")
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(statement(certificate, 0), signer))
    store = CertStore(tmp_path / "s.sqlite")
    policy = trusting(signer).with_max_age(86400)
    then = datetime(2020, 1, 1, 12, tzinfo=timezone.utc)
    assert import_certificate(path, store=store, policy=lambda: policy, now=then).id == certificate.id
    with pytest.raises(CertificateRefusedError, match=r"\[expired\]"):
        import_certificate(path, store=CertStore(tmp_path / "t.sqlite"), policy=lambda: policy)


def test_an_imported_envelope_is_kept_for_the_first_subject_its_key_is_trusted_for(tmp_path: Path) -> None:
    """Two subject names the signer is trusted for: the envelope is kept for the first listed,
    the repository the statement names first."""
    signer = key(tmp_path, "ci")
    policy = TrustPolicy(keys=(scoped(signer, "reg.example/*"),))
    subjects = [
        subject("reg.example/team/train", DIGEST),
        subject("reg.example/team/mirror", OTHER_DIGEST),
        subject("reg.example/team/train", IMAGE_ID),
    ]
    store, certificate = import_with_subjects(tmp_path, subjects, policy, signer)
    (kept,) = store.envelopes(certificate.id)
    assert kept.repository == "reg.example/team/train"


def test_every_signed_envelope_imported_for_one_certificate_is_kept(tmp_path: Path) -> None:
    """The same certificate imported as two envelopes (two signers): each is kept under its own
    digest, so that `run` still holds one when the policy drops the other signer."""
    a, b = key(tmp_path, "a"), key(tmp_path, "b")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    envelopes = [sign_statement(statement(certificate, 0), s) for s in (a, b)]
    for i, raw in enumerate(envelopes):
        (tmp_path / f"{i}.json").write_bytes(raw)
        import_certificate(tmp_path / f"{i}.json", store=store, policy=lambda: trusting(a, b))
    assert sorted(e.envelope for e in store.envelopes(certificate.id)) == sorted(envelopes)
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(a))
    assert [c.id for c in find(info())] == [certificate.id]


def test_a_certificate_file_the_store_cannot_import_names_the_file(tmp_path: Path) -> None:
    """`certs import`: a file it cannot read, and one that is no JSON, both name the path in the
    message and as the error's `file`."""
    store = CertStore(tmp_path / "s.sqlite")
    missing = tmp_path / "missing.json"
    with pytest.raises(StoreError) as cannot:
        import_certificate(missing, store=store, policy=lambda: TrustPolicy(keys=()))
    assert cannot.value.file == str(missing)
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    with pytest.raises(CertificateRefusedError) as refused:
        import_certificate(junk, store=store, policy=lambda: TrustPolicy(keys=()))
    assert refused.value.file == str(junk) and refused.value.message.startswith(f"{junk} is not valid JSON")
    assert store.list() == []


# ------------------------------------------------------------------------- fourth operator set (--ops fourth)


def test_the_refusals_of_every_imported_certificate_are_named(tmp_path: Path) -> None:
    """Three imported certificates of the image, none of which holds (two signed by keys no
    longer trusted, one unsigned): the refusal names each, not only the last one looked at."""
    store = CertStore(tmp_path / "s.sqlite")
    for day, signer in (("01", "gone"), ("02", "old")):
        signed = cpu_cert(issued_at=f"2026-12-{day}T00:00:00Z")
        store.add_imported(
            signed,
            envelope=sign_statement(statement(signed, 0), key(tmp_path, signer)),
            envelope_digest="sha256:" + day * 32,
            repository="reg.example/team/train",
            manifest_digest=DIGEST,
        )
    store.add_imported(cpu_cert(issued_at="2026-11-01T00:00:00Z"))
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(key(tmp_path, "now")))
    with pytest.raises(RefusedError) as refused:
        find(info())
    reasons = sorted(r.reason for r in refused.value.refusals)
    assert reasons == ["imported-unsigned", "untrusted-key", "untrusted-key"]


def test_a_verified_statement_without_a_certificate_is_no_refusal_of_it(tmp_path: Path) -> None:
    """The test-result statement holds (a trusted key) and the certificate statement does not
    (an untrusted key): the refusal names the certificate statement's reason, and the verified
    one is neither a refusal nor a crash."""
    trusted, other = key(tmp_path, "ci"), key(tmp_path, "other")
    certificate = cpu_cert()
    store = CertStore(tmp_path / "s.sqlite")
    envelopes = [
        sign_statement(statement(certificate, 1), trusted),
        sign_statement(statement(certificate, 0), other),
    ]
    store_envelopes(store, certificate, envelopes)
    find = certificate_finder("train:1", store=store, policy=lambda: trusting(trusted))
    with pytest.raises(RefusedError) as refused:
        find(info())
    assert [r.reason for r in refused.value.refusals] == ["untrusted-key"]


# --------------------------------------------------------------------------- bytes that are not UTF-8


def test_a_certificate_file_that_is_not_utf8_is_refused_never_read_with_replacements(tmp_path: Path) -> None:
    """A byte that is not UTF-8 where a sealed certificate holds U+FFFD (what lenient decoding
    would read it as): the file is not the certificate its hashes were computed over. The same
    document in UTF-8 imports."""
    doc = seal({**cert_doc("certified-cpu-only", gpus=()), "verdict_reason": "3 checks passed \ufffd"})
    text = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_bytes(text)
    bad.write_bytes(text.replace("\ufffd".encode(), b"\xff"))
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(CertificateRefusedError) as refused:
        import_certificate(bad, store=store, policy=lambda: TrustPolicy(keys=()))
    at = text.index("\ufffd".encode())
    assert refused.value.message == f"{bad} is not UTF-8 text (byte {at}): not a certificate"
    assert refused.value.file == str(bad) and "certs export" in (refused.value.hint or "")
    assert store.list() == []
    assert (
        import_certificate(good, store=store, policy=lambda: TrustPolicy(keys=())).id == Certificate(doc).id
    )


@pytest.mark.parametrize("origin", ["imported", "attestation"])
def test_an_envelope_that_is_not_utf8_is_not_stored(tmp_path: Path, origin: str) -> None:
    """The store keeps an envelope's text, encoded back to verify it again: bytes that would not
    come back the same are refused, and its certificate is not stored without it."""
    store = CertStore(tmp_path / "s.sqlite")
    raw = b'{"payload": "\xff"}'
    with pytest.raises(CertificateRefusedError, match=r"is not UTF-8 text \(byte 13\): not stored"):
        if origin == "imported":
            store.add_imported(cpu_cert(), envelope=raw, envelope_digest="sha256:" + "0" * 64)
        else:
            store.add_attested(
                cpu_cert(),
                envelope=raw,
                envelope_digest="sha256:" + "0" * 64,
                repository="reg.example/team/train",
                manifest_digest=DIGEST,
                keyid="k",
            )
    assert store.list() == []


# --------------------------------------------------------------------------- edges of the trust rules


def test_an_envelope_imported_for_a_subject_without_a_name_is_trusted_only_to_unscoped_keys(
    tmp_path: Path,
) -> None:
    """A statement whose subject names no repository, imported while its key was trusted for
    every repository: once the key is trusted for `reg.example/*` only, it no longer vouches for
    it (the empty name is no repository of reg.example)."""
    signer = key(tmp_path, "ci")
    nameless = [{"digest": {"sha256": IMAGE_ID.removeprefix("sha256:")}}]
    store, certificate = import_with_subjects(tmp_path, nameless, trusting(signer), signer)
    assert [
        c.id for c in certificate_finder("train:1", store=store, policy=lambda: trusting(signer))(info())
    ] == [certificate.id]
    narrowed = TrustPolicy(keys=(scoped(signer, "reg.example/*"),))
    with pytest.raises(RefusedError) as refused:
        certificate_finder("train:1", store=store, policy=lambda: narrowed)(info())
    assert [r.reason for r in refused.value.refusals] == ["untrusted-key"]


def test_a_certificate_checked_the_second_it_was_issued_is_not_expired(tmp_path: Path) -> None:
    """Age 0 (verified within the second it was issued) is younger than any max_age."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert(issued_at="2020-01-01T00:00:00Z")
    raw = sign_statement(statement(certificate, 0), signer)
    at_once = datetime(2020, 1, 1, tzinfo=timezone.utc)
    policy = trusting(signer).with_max_age(60)
    outcome = verify_envelope(
        raw, repository="reg.example/team/train", digest=DIGEST, policy=policy, now=at_once
    )
    assert isinstance(outcome, Verified) and outcome.certificate is not None
    assert outcome.certificate.id == certificate.id
    later = verify_envelope(
        raw,
        repository="reg.example/team/train",
        digest=DIGEST,
        policy=policy,
        now=at_once + timedelta(seconds=61),
    )
    assert isinstance(later, Refused) and later.reason == "expired"


# --------------------------------------------------------------------------- set L (2026-12-06)


def test_a_signed_envelope_is_imported_by_the_clock_it_is_given_in_each_of_its_checks(tmp_path: Path) -> None:
    """`certs import` at a `now` of its own (import_certificate's `now`): the envelope's checks
    and the certificate's (require_importable) judge the issued_at by that clock alike. A
    certificate issued in 2099 is imported at a `now` a day after, refused at one a day before."""
    signer = key(tmp_path, "ci")
    certificate = cpu_cert(issued_at="2099-01-01T00:00:00Z")
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(statement(certificate, 0), signer))
    store = CertStore(tmp_path / "s.sqlite")
    before = datetime(2098, 12, 31, tzinfo=timezone.utc)
    with pytest.raises(CertificateRefusedError, match=r"future-issued"):
        import_certificate(path, store=store, policy=lambda: trusting(signer), now=before)
    after = datetime(2099, 1, 2, tzinfo=timezone.utc)
    done = import_certificate(path, store=store, policy=lambda: trusting(signer), now=after)
    assert done.id == certificate.id and done.signed_by is not None


def test_an_imported_envelope_holds_only_while_its_key_is_trusted_for_the_repository_it_was_kept_under(
    tmp_path: Path,
) -> None:
    """An envelope of two subjects, imported while its key was trusted for reg.example/team/*
    (kept under reg.example/team/train). Today's policy trusts that key for other.example/* only:
    at `run` it is refused (untrusted-key), not held through its other subject's name."""
    signer = key(tmp_path, "ci")
    subjects = [
        subject("reg.example/team/train", DIGEST),
        subject("other.example/x", "sha256:" + "33" * 32),
        subject("reg.example/team/train", IMAGE_ID),
    ]
    store, certificate = import_with_subjects(
        tmp_path, subjects, TrustPolicy(keys=(scoped(signer, "reg.example/team/*"),)), signer
    )
    (kept,) = store.envelopes(certificate.id)
    assert kept.repository == "reg.example/team/train"
    same = certificate_finder(
        "train:1", store=store, policy=lambda: TrustPolicy(keys=(scoped(signer, "reg.example/*"),))
    )
    assert [c.id for c in same(info())] == [certificate.id]
    moved = TrustPolicy(keys=(scoped(signer, "other.example/*"),))
    find = certificate_finder("train:1", store=store, policy=lambda: moved)
    with pytest.raises(RefusedError) as refused:
        find(info())
    assert [r.reason for r in refused.value.refusals] == ["untrusted-key"]
