"""DSSE envelopes: sign an in-toto statement, and verify one against a trust policy, naming the
reason when it is refused. Signing and verifying are securesystemslib's (dsse.Envelope).

The checks, in order, each with its reason: the envelope parses (`malformed`), carries a
signature (`unsigned`), by a key the policy trusts for this repository (`untrusted-key`), that
verifies over the payload (`bad-signature`: payload or signature edited); the statement names the
image being verified (`subject-mismatch`: an attestation replayed onto another image); its
certificate is intact (`tampered`) and for the subject's image (`certificate-mismatch`); it was
not issued in the future beyond CLOCK_SKEW_S (`future-issued`); and it is not older than the
policy's max_age (`expired`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import FormatError, UnverifiedSignatureError
from securesystemslib.signer import Signer

from envbuilder.attest.policy import TrustPolicy
from envbuilder.attest.statement import (
    CERTIFICATE,
    PAYLOAD_TYPE,
    STATEMENT_MAX_BYTES,
    encode,
    parse_statement,
)
from envbuilder.bounded import load_json
from envbuilder.certify.certificate import Certificate, issued_in_future, parse_timestamp, verify_certificate
from envbuilder.errors import CertificateRefusedError
from envbuilder.hashing import sha256_digest

# An envelope is its statement in base64 (4/3 of it) and a few signatures.
ENVELOPE_MAX_BYTES = STATEMENT_MAX_BYTES * 4 // 3 + 64 * 1024

MEDIA_TYPE = "application/vnd.dsse.envelope.v1+json"
REASONS = (
    "malformed",
    "unsigned",
    "untrusted-key",
    "bad-signature",
    "subject-mismatch",
    "tampered",
    "certificate-mismatch",
    "future-issued",  # issued_at later than this host's clock plus CLOCK_SKEW_S
    "expired",
    "unavailable",  # listed as a referrer, but its manifest or envelope cannot be read
)


def sign_statement(doc: dict[str, Any], signer: Signer) -> bytes:
    """The DSSE envelope (JSON bytes) of an in-toto statement signed by `signer`."""
    env = Envelope(payload=encode(doc), payload_type=PAYLOAD_TYPE, signatures={})
    env.sign(signer)
    return json.dumps(env.to_dict(), sort_keys=True).encode("ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verified:
    """An attestation whose signature, subject and certificate all hold."""

    predicate_type: str
    predicate: dict[str, Any]
    keyid: str
    key_name: str
    envelope_digest: str
    subject_digests: tuple[str, ...]
    certificate: Certificate | None  # for the certificate predicate
    envelope: bytes  # exactly as verified, to be cached and verified again
    subject_names: tuple[str, ...] = ()  # the repositories the statement names

    def to_dict(self) -> dict[str, Any]:
        return {
            "predicate_type": self.predicate_type,
            "keyid": self.keyid,
            "key": self.key_name,
            "envelope": self.envelope_digest,
            "subject": list(self.subject_digests),
            "certificate": self.certificate.id if self.certificate else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """An attestation that does not hold, and why (`reason` is one of REASONS)."""

    reason: str
    message: str
    envelope_digest: str
    keyids: tuple[str, ...] = field(default=())
    predicate_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "message": self.message,
            "envelope": self.envelope_digest,
            "keyids": list(self.keyids),
            "predicate_type": self.predicate_type,
        }


def verify_envelope(
    raw: bytes,
    *,
    repository: str | None,
    digest: str | None,
    policy: TrustPolicy,
    now: datetime | None = None,
) -> Verified | Refused:
    """Verify one DSSE envelope for the image `digest` (its registry manifest digest, or its
    image ID) in `repository`. For an envelope given as a file (`certs import`), `repository` and
    `digest` are None: the key must then be trusted for a repository the statement names, and
    the certificate be for one of its subjects. Never raises: every failure is a Refused with
    its reason."""
    where = sha256_digest(raw)

    def refuse(reason: str, message: str, keyids: Sequence[str] = (), ptype: str | None = None) -> Refused:
        return Refused(
            reason=reason, message=message, envelope_digest=where, keyids=tuple(keyids), predicate_type=ptype
        )

    try:  # bounded: an envelope nested 200,000 deep or holding a 5,000-digit number is malformed
        doc = load_json(raw, max_bytes=ENVELOPE_MAX_BYTES)
        env = Envelope.from_dict(copy.deepcopy(doc))  # from_dict rewrites the dict it is given
    except (ValueError, KeyError, TypeError, AttributeError, FormatError, RecursionError) as exc:
        return refuse("malformed", f"not a DSSE envelope ({type(exc).__name__}: {_first_line(exc)})")
    if not all(isinstance(k, str) for k in env.signatures):  # from_dict takes any JSON as a keyid
        return refuse("malformed", "a signature's keyid is not a string")
    if env.payload_type != PAYLOAD_TYPE:
        return refuse("malformed", f"payloadType is {env.payload_type!r}, not {PAYLOAD_TYPE!r}")
    keyids = list(env.signatures)
    if not keyids:
        return refuse("unsigned", "the attestation carries no signature (stripped, or never signed)")
    trusted = {k.keyid: k for k in (policy.keys if repository is None else policy.keys_for(repository))}
    candidates = [trusted[k] for k in keyids if k in trusted]
    if not candidates:
        shown = ", ".join(k[:12] for k in keyids)
        return refuse(
            "untrusted-key",
            f"signed by key {shown}, which the trust policy ({policy.describe()}) does not trust for "
            f"{repository or 'any repository'}",
            keyids,
        )
    signer = None
    pae = env.pae()
    for key in candidates:
        try:
            key.key.verify_signature(env.signatures[key.keyid], pae)
        except UnverifiedSignatureError:
            continue
        signer = key
        break
    if signer is None:
        return refuse(
            "bad-signature",
            f"the signature of key {candidates[0].name} ({candidates[0].keyid[:12]}) does not verify: "
            "the payload or the signature was changed after signing",
            keyids,
        )
    try:
        parsed = parse_statement(env.payload)
    except (ValueError, RecursionError) as exc:
        return refuse("malformed", f"signed, but {exc}", keyids)
    ptype = parsed.predicate_type
    if repository is None and not any(
        k.keyid == signer.keyid for name in parsed.subject_names for k in policy.keys_for(name)
    ):
        return refuse(
            "untrusted-key",
            f"signed by key {signer.name} ({signer.keyid[:12]}), which the trust policy "
            f"({policy.describe()}) does not trust for {', '.join(parsed.subject_names) or 'its subject'}",
            keyids,
            ptype,
        )
    if digest is not None and digest not in parsed.subject_digests:
        return refuse(
            "subject-mismatch",
            f"the attestation is for {', '.join(parsed.subject_names)} @ {parsed.subject_digests[0]}, "
            f"not for {repository} @ {digest} (an attestation copied from another image)",
            keyids,
            ptype,
        )
    cert: Certificate | None = None
    if ptype == CERTIFICATE:
        try:
            cert = Certificate.from_data(parsed.predicate.get("certificate"), "the signed certificate")
        except CertificateRefusedError as exc:
            return refuse("malformed", f"the certificate predicate: {exc.message}", keyids, ptype)
        problems = verify_certificate(cert)
        if problems:
            return refuse(
                "tampered",
                "the signed certificate fails its own check: " + "; ".join(problems),
                keyids,
                ptype,
            )
        image_id = cert.image.id
        if image_id not in parsed.subject_digests:
            return refuse(
                "certificate-mismatch",
                f"the signed certificate is for image {image_id[:19]}, which is not the statement's subject",
                keyids,
                ptype,
            )
        future = issued_in_future(cert.issued_at, now)
        if future is not None:
            return refuse("future-issued", f"the signed certificate's {future}", keyids, ptype)
        if policy.max_age_s is not None:
            issued = parse_timestamp(cert.issued_at)
            age = ((now or datetime.now(timezone.utc)) - issued).total_seconds() if issued else None
            if age is None or age > policy.max_age_s:
                return refuse(
                    "expired",
                    f"the certificate was issued {cert.issued_at}, "
                    + (f"{_human(age)} ago" if age is not None else "at an unreadable time")
                    + f"; the policy's max_age is {_human(policy.max_age_s)}",
                    keyids,
                    ptype,
                )
    return Verified(
        predicate_type=ptype,
        predicate=dict(parsed.predicate),
        keyid=signer.keyid,
        key_name=signer.name,
        envelope_digest=where,
        subject_digests=parsed.subject_digests,
        certificate=cert,
        envelope=raw,
        subject_names=parsed.subject_names,
    )


def _first_line(exc: BaseException) -> str:
    """An exception's message cut to one short line (a parser may quote the document)."""
    text = str(exc).split("\n", 1)[0]
    return text if len(text) <= 200 else text[:197] + "..."


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"
