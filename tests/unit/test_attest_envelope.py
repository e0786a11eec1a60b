"""Statements and DSSE envelopes, offline: a signed certificate verifies, and each forgery is
refused with its own reason (malformed, unsigned, untrusted key, bad signature, subject
mismatch, tampered certificate, certificate for another image, expired)."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cert_factory import IMAGE_ID, OTHER_ID
from cert_factory import cert_doc as cert
from securesystemslib.signer import CryptoSigner

from envbuilder.attest.envelope import Refused, Verified, sign_statement, verify_envelope
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.policy import TrustedKey, TrustPolicy
from envbuilder.attest.statement import (
    CERTIFICATE,
    STATEMENT_MAX_BYTES,
    TEST_RESULT,
    ImageSubject,
    certificate_statements,
    encode,
    result_predicate,
    statement,
)
from envbuilder.certify.certificate import Certificate, build_certificate, seal

REPO = "reg.example/team/train"
MANIFEST = "sha256:" + "11" * 32
SUBJECT = ImageSubject(repository=REPO, manifest_digest=MANIFEST, image_id=IMAGE_ID)


@pytest.fixture(scope="module")
def signer(tmp_path_factory: pytest.TempPathFactory) -> CryptoSigner:
    return load_signer(generate_key("ci", directory=tmp_path_factory.mktemp("keys")))


@pytest.fixture(scope="module")
def policy(signer: CryptoSigner) -> TrustPolicy:
    return TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key),), source="test policy")


def _signed(
    signer: CryptoSigner, certificate: dict[str, Any] | None = None, subject: ImageSubject = SUBJECT
) -> bytes:
    doc = certificate_statements(Certificate(certificate or cert()), subject)[0]
    return sign_statement(doc, signer)


def _verify(raw: bytes, policy: TrustPolicy, digest: str = MANIFEST, **kw: Any) -> Verified | Refused:
    return verify_envelope(raw, repository=REPO, digest=digest, policy=policy, **kw)


def _edit_payload(raw: bytes, edit: Any) -> bytes:
    env = json.loads(raw)
    doc = json.loads(base64.b64decode(env["payload"]))
    edit(doc)
    env["payload"] = base64.b64encode(json.dumps(doc).encode()).decode()
    return json.dumps(env).encode()


def test_statements_name_manifest_and_config_digests() -> None:
    c = Certificate(cert())
    cert_stmt, result_stmt = certificate_statements(c, SUBJECT)
    assert cert_stmt["_type"] == "https://in-toto.io/Statement/v1"
    assert [s["digest"]["sha256"] for s in cert_stmt["subject"]] == ["11" * 32, "ab" * 32]
    assert cert_stmt["predicateType"] == CERTIFICATE and cert_stmt["predicate"]["certificate"] == c.to_dict()
    assert result_stmt["predicateType"] == TEST_RESULT and result_stmt["predicate"]["result"] == "PASSED"


def test_test_result_predicate_from_steps_and_gates() -> None:
    body = cert()
    body_doc = {k: v for k, v in body.items() if k not in ("content_hash", "section_hashes")}
    body_doc["harness"] = {
        "steps": [
            {"name": "cpu_check", "status": "pass"},
            {"name": "cuda_smoke", "status": "skip"},
            {"name": "train", "status": "fail"},
        ],
        "gates": [{"name": "throughput", "status": "warn"}],
    }
    failed = build_certificate(**{k: body_doc[k] for k in ("image", "host", "run", "harness", "thresholds")},
                               verdict="failed", verdict_reason="failed steps: train")  # fmt: skip
    pred = result_predicate(failed)
    assert pred["result"] == "FAILED"
    assert (pred["passedTests"], pred["warnedTests"], pred["failedTests"]) == (
        ["cpu_check"],
        ["gate:throughput"],
        ["train"],
    )
    assert pred["configuration"][0]["digest"]["sha256"] == failed.id
    assert result_predicate(Certificate(cert("certified-cpu-only")))["result"] == "WARNED"


def test_a_failed_certificate_is_a_failed_test_result_whatever_its_steps_say() -> None:
    # The host fails a result whose steps all passed (a refused result, a non-zero exit, the
    # project's smoke command): the certificate's verdict decides, never the steps' statuses.
    body = {k: v for k, v in cert().items() if k not in ("content_hash", "section_hashes")}
    body["harness"] = {"steps": [{"name": "cpu_check", "status": "pass"}], "gates": []}
    sections = {k: body[k] for k in ("image", "host", "run", "harness", "thresholds")}
    failed = build_certificate(**sections, verdict="failed", verdict_reason="harness exited 1 after a pass")
    pred = result_predicate(failed)
    assert (pred["result"], pred["passedTests"], pred["failedTests"]) == ("FAILED", ["cpu_check"], [])


def test_signed_certificate_verifies(signer: CryptoSigner, policy: TrustPolicy) -> None:
    out = _verify(_signed(signer), policy)
    assert isinstance(out, Verified), out
    assert out.keyid == signer.public_key.keyid and out.key_name == "ci"
    assert out.certificate is not None and out.certificate.image.id == IMAGE_ID
    result = sign_statement(certificate_statements(Certificate(cert()), SUBJECT)[1], signer)
    assert isinstance(_verify(result, policy), Verified)


def test_forgery_payload_edited_is_bad_signature(signer: CryptoSigner, policy: TrustPolicy) -> None:
    def promote(doc: dict[str, Any]) -> None:
        doc["predicate"]["certificate"]["verdict"] = "certified"
        doc["predicate"]["certificate"]["host"]["driver"] = "999.0"

    out = _verify(_edit_payload(_signed(signer, cert("failed")), promote), policy)
    assert isinstance(out, Refused) and out.reason == "bad-signature"
    assert "changed after signing" in out.message


def test_forgery_untrusted_key(signer: CryptoSigner, policy: TrustPolicy, tmp_path: Path) -> None:
    attacker = load_signer(generate_key("attacker", directory=tmp_path))
    out = _verify(_signed(attacker), policy)
    assert isinstance(out, Refused) and out.reason == "untrusted-key"
    assert attacker.public_key.keyid[:12] in out.message and "test policy" in out.message


def test_key_trusted_only_for_other_repositories(signer: CryptoSigner) -> None:
    scoped = TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key, repositories=("other/*",)),))
    out = _verify(_signed(signer), scoped)
    assert isinstance(out, Refused) and out.reason == "untrusted-key" and REPO in out.message


def test_forgery_signature_stripped(signer: CryptoSigner, policy: TrustPolicy) -> None:
    env = json.loads(_signed(signer))
    env["signatures"] = []
    out = _verify(json.dumps(env).encode(), policy)
    assert isinstance(out, Refused) and out.reason == "unsigned"


def test_forgery_copied_to_another_image(signer: CryptoSigner, policy: TrustPolicy) -> None:
    out = _verify(_signed(signer), policy, digest="sha256:" + "22" * 32)
    assert isinstance(out, Refused) and out.reason == "subject-mismatch"
    assert "copied from another image" in out.message


def test_forgery_subject_swapped_breaks_the_signature(signer: CryptoSigner, policy: TrustPolicy) -> None:
    other = "22" * 32

    def swap(doc: dict[str, Any]) -> None:
        doc["subject"][0]["digest"]["sha256"] = other

    out = _verify(_edit_payload(_signed(signer), swap), policy, digest="sha256:" + other)
    assert isinstance(out, Refused) and out.reason == "bad-signature"


def test_trusted_signer_of_a_tampered_certificate_is_refused(
    signer: CryptoSigner, policy: TrustPolicy
) -> None:
    body = cert()
    body["verdict"] = "certified-cpu-only"  # edited after sealing, then signed
    out = _verify(_signed(signer, body), policy)
    assert isinstance(out, Refused) and out.reason == "tampered" and "changed: verdict" in out.message


def test_certificate_for_another_image_than_the_subject(signer: CryptoSigner, policy: TrustPolicy) -> None:
    wrong = ImageSubject(repository=REPO, manifest_digest=MANIFEST, image_id=OTHER_ID)
    out = _verify(_signed(signer, subject=wrong), policy)
    assert isinstance(out, Refused) and out.reason == "certificate-mismatch"


def test_expired_under_max_age(signer: CryptoSigner, policy: TrustPolicy) -> None:
    raw = _signed(signer, cert(issued_at="2026-01-01T00:00:00Z"))
    strict = policy.with_max_age(30 * 86400)
    now = datetime(2026, 1, 20, tzinfo=timezone.utc)
    assert isinstance(_verify(raw, strict, now=now), Verified)
    out = _verify(raw, strict, now=now + timedelta(days=20))
    assert isinstance(out, Refused) and out.reason == "expired"
    assert "39.0d ago" in out.message and "max_age is 30.0d" in out.message


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"{}",
        json.dumps({"payload": "e30=", "payloadType": "text/plain", "signatures": []}).encode(),
        # securesystemslib's from_dict raised AttributeError on a payload that is no string
        json.dumps({"payloadType": 1, "payload": [], "signatures": "x"}).encode(),
    ],
)
def test_malformed_envelopes(raw: bytes, policy: TrustPolicy) -> None:
    out = _verify(raw, policy)
    assert isinstance(out, Refused) and out.reason == "malformed"


@pytest.mark.parametrize(
    "payload_type",
    ["application/vnd.in-toto+json; x", "application/vnd.in-toto+jsonl", "application/vnd.in-toto.other"],
)
def test_a_signed_envelope_of_another_payload_type_is_malformed(
    signer: CryptoSigner, policy: TrustPolicy, payload_type: str
) -> None:
    """Set U's survivor U32: the payloadType must be in-toto's exactly. A trusted key's signature
    over the very statement under a type that merely begins like it (signed for another purpose)
    is not read as a statement."""
    from securesystemslib.dsse import Envelope

    doc = certificate_statements(Certificate(cert()), SUBJECT)[0]
    env = Envelope(payload=encode(doc), payload_type=payload_type, signatures={})
    env.sign(signer)  # a valid signature: PAE covers this payloadType
    out = _verify(json.dumps(env.to_dict()).encode(), policy)
    assert isinstance(out, Refused) and out.reason == "malformed", out
    assert payload_type in out.message
    assert isinstance(_verify(_signed(signer), policy), Verified)  # the same statement, in-toto's type


def test_signed_non_statement_is_malformed(signer: CryptoSigner, policy: TrustPolicy) -> None:
    doc = statement(SUBJECT, CERTIFICATE, {"certificate": cert()})
    doc["_type"] = "https://example.com/not-in-toto"
    out = _verify(sign_statement(doc, signer), policy)
    assert (
        isinstance(out, Refused) and out.reason == "malformed" and "not an in-toto Statement" in out.message
    )


def test_future_issued_is_refused_with_or_without_max_age(signer: CryptoSigner, policy: TrustPolicy) -> None:
    """hostile-inputs D10: a trusted key's certificate issued in 2099 never expired under max_age."""
    now = datetime(2026, 12, 4, tzinfo=timezone.utc)
    far = _signed(signer, cert(issued_at="2099-01-01T00:00:00Z"))
    for p in (policy, policy.with_max_age(86400)):
        out = _verify(far, p, now=now)
        assert isinstance(out, Refused) and out.reason == "future-issued", out
        assert "2099-01-01T00:00:00Z lies in the future" in out.message
    within = _signed(signer, cert(issued_at="2026-12-04T00:04:59Z"))  # inside the 5 minutes of skew
    assert isinstance(_verify(within, policy.with_max_age(86400), now=now), Verified)
    beyond = _signed(signer, cert(issued_at="2026-12-04T00:05:01Z"))
    out = _verify(beyond, policy, now=now)
    assert isinstance(out, Refused) and out.reason == "future-issued"


def test_an_envelope_file_needs_a_key_trusted_for_the_repository_it_names(signer: CryptoSigner) -> None:
    """`certs import ENVELOPE` has no reference of its own: the statement's subject names the
    repository, and the policy's scope applies to it."""
    raw = _signed(signer)
    scoped = TrustPolicy(
        keys=(TrustedKey(name="ci", key=signer.public_key, repositories=("reg.example/team/*",)),)
    )
    out = verify_envelope(raw, repository=None, digest=None, policy=scoped)
    assert isinstance(out, Verified) and out.subject_names == (REPO,)
    elsewhere = TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key, repositories=("other/*",)),))
    out = verify_envelope(raw, repository=None, digest=None, policy=elsewhere)
    assert isinstance(out, Refused) and out.reason == "untrusted-key" and REPO in out.message


def test_an_envelope_file_whose_certificate_is_for_no_subject_of_its_statement_is_refused(
    signer: CryptoSigner, policy: TrustPolicy
) -> None:
    """`certs import ENVELOPE` gives no digest: the certificate must still be for one of the
    statement's own subjects (set P: P33)."""
    wrong = ImageSubject(repository=REPO, manifest_digest=MANIFEST, image_id=OTHER_ID)
    out = verify_envelope(_signed(signer, subject=wrong), repository=None, digest=None, policy=policy)
    assert isinstance(out, Refused) and out.reason == "certificate-mismatch"
    out = verify_envelope(_signed(signer), repository=None, digest=None, policy=policy)
    assert isinstance(out, Verified)


def test_a_signed_certificate_without_an_image_id_is_for_no_subject(
    signer: CryptoSigner, policy: TrustPolicy
) -> None:
    """An empty image id names no image: it is not the statement's subject, from a registry or
    from a file (set S's S16 let an empty id through the certificate-mismatch check)."""
    raw = _signed(signer, cert(image_id=""))
    for out in (_verify(raw, policy), verify_envelope(raw, repository=None, digest=None, policy=policy)):
        assert isinstance(out, Refused) and out.reason == "certificate-mismatch"


def test_a_statement_near_its_size_limit_fits_its_envelope(signer: CryptoSigner, policy: TrustPolicy) -> None:
    """An envelope carries its statement in base64 (4/3 of it): the envelope's bound must leave
    room for the largest statement parse_statement accepts."""
    body = {k: v for k, v in cert().items() if k not in ("content_hash", "section_hashes")}
    body["run"] = {**body["run"], "log": "x" * (STATEMENT_MAX_BYTES * 9 // 10)}
    doc = certificate_statements(Certificate(seal(body)), SUBJECT)[0]
    assert STATEMENT_MAX_BYTES * 8 // 10 < len(encode(doc)) <= STATEMENT_MAX_BYTES
    raw = sign_statement(doc, signer)
    assert len(raw) > STATEMENT_MAX_BYTES
    got = _verify(raw, policy)
    assert isinstance(got, Verified), got


# --------------------------------------------------------------------------- set Q's survivors


def test_an_envelope_file_is_trusted_for_its_repository_by_the_key_whose_signature_holds(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    """A signature that does not verify lends its key's scope to nothing: an envelope signed by a
    key trusted only elsewhere, with a second (forged) signature under the keyid of a key trusted
    for its repository, is refused as untrusted for that repository."""
    team = load_signer(generate_key("team", directory=tmp_path / "keys"))
    raw = _signed(signer)
    env = json.loads(raw)
    (real,) = env["signatures"]
    env["signatures"] = [{"keyid": team.public_key.keyid, "sig": real["sig"]}, real]
    forged = json.dumps(env).encode()
    policy = TrustPolicy(
        keys=(
            TrustedKey(name="ci", key=signer.public_key, repositories=("other/*",)),
            TrustedKey(name="team", key=team.public_key, repositories=("reg.example/team/*",)),
        )
    )
    out = verify_envelope(forged, repository=None, digest=None, policy=policy)
    assert isinstance(out, Refused) and out.reason == "untrusted-key" and REPO in out.message


def test_an_envelope_files_signer_is_trusted_by_its_keyid_never_by_a_shared_key_name(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    """Set T's T35 matched the signer to the repository's keys by name: a key named `ci` trusted only
    elsewhere signed, and another key also named `ci` (trusted for the repository) let it in."""
    other = load_signer(generate_key("other", directory=tmp_path / "keys"))
    policy = TrustPolicy(
        keys=(
            TrustedKey(name="ci", key=signer.public_key, repositories=("other/*",)),
            TrustedKey(name="ci", key=other.public_key, repositories=("reg.example/team/*",)),
        )
    )
    out = verify_envelope(_signed(signer), repository=None, digest=None, policy=policy)
    assert isinstance(out, Refused) and out.reason == "untrusted-key" and REPO in out.message
