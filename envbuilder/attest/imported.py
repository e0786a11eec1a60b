"""`certs import FILE`: a certificate that came from elsewhere, stored with origin `imported`.

FILE is a certificate JSON (what `certs export` writes: its hashes prove integrity, not who made
it, so it is stored unsigned and `run` uses it only with --trust-imported), or a signed DSSE
envelope of the certificate statement (what `push --attest` attaches; verified against the trust
policy now and again at each use, as a cached attestation is). Either is refused when its
issued_at lies in the future beyond the allowed clock skew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from envbuilder.attest.envelope import Verified, verify_envelope
from envbuilder.attest.policy import TrustPolicy
from envbuilder.attest.statement import CERTIFICATE
from envbuilder.bounded import Refused, TooLarge, load_json, read_bounded
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore, require_importable
from envbuilder.errors import CertificateRefusedError, StoreError

_SIGNED_HINT = (
    "import the signed attestation instead (the envelope `push --attest` attached), trusting its "
    "signer's key (--key, --trust or `envbuilder keys import`)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Imported:
    """What `certs import` stored: the certificate's id, and its signer when it came signed."""

    id: str
    signed_by: Verified | None

    def to_dict(self) -> dict[str, Any]:
        signer = self.signed_by
        return {
            "id": self.id,
            "origin": "imported",
            "signed": signer is not None,
            "signed_by": {"name": signer.key_name, "keyid": signer.keyid} if signer else None,
        }


def is_envelope(doc: object) -> bool:
    """A DSSE envelope's shape (payloadType and signatures), as opposed to a certificate's."""
    return isinstance(doc, Mapping) and "payloadType" in doc and "signatures" in doc


def import_certificate(
    src: Path,
    *,
    store: CertStore,
    policy: Callable[[], TrustPolicy],
    now: datetime | None = None,
) -> Imported:
    """Verify a certificate file or a signed envelope and store it as `imported`. The trust
    policy is read only for an envelope. Raises UsageError (cannot read, not a regular file),
    StoreError (cannot store),
    CertificateRefusedError (not a certificate, tampered, issued in the future, an envelope that
    does not verify, naming the reason), SigningKeyError (the policy is broken)."""
    raw = _read(src)
    try:
        doc = load_json(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:  # never read leniently: the bytes are what was signed and hashed
        raise CertificateRefusedError(
            f"{src} is not UTF-8 text (byte {exc.start}): not a certificate",
            hint="import a certificate file (`certs export`) or a signed attestation envelope",
            file=str(src),
        ) from None
    except ValueError as exc:
        raise CertificateRefusedError(
            f"{src} is not valid JSON: {str(exc)[:200]}",
            hint="import a certificate file (`certs export`) or a signed attestation envelope",
            file=str(src),
        ) from None
    if is_envelope(doc):
        return _import_signed(src, raw, store, policy(), now)
    cert = Certificate.from_data(doc, str(src))
    require_importable(cert, str(src), now)
    return Imported(id=store.add_imported(cert), signed_by=None)


def _import_signed(
    src: Path, raw: bytes, store: CertStore, policy: TrustPolicy, now: datetime | None
) -> Imported:
    outcome = verify_envelope(raw, repository=None, digest=None, policy=policy, now=now)
    if not isinstance(outcome, Verified):
        raise CertificateRefusedError(
            f"{src}: the signed attestation is refused: {outcome.message} [{outcome.reason}]",
            hint=f"trust its signer's key for the repository it names (--key, --trust or `envbuilder keys "
            f"import`); policy {policy.describe()}",
            file=str(src),
        )
    cert = outcome.certificate
    if cert is None:
        raise CertificateRefusedError(
            f"{src}: the attestation's predicate is {outcome.predicate_type}, not a certificate "
            f"({CERTIFICATE})",
            hint="import the certificate/v1 envelope of the pair `push --attest` attaches",
            file=str(src),
        )
    require_importable(cert, str(src), now)
    names = outcome.subject_names
    covered = [n for n in names if any(k.keyid == outcome.keyid for k in policy.keys_for(n))]
    repository = (covered or [*names, ""])[0]
    manifest = next((d for d in outcome.subject_digests if d != cert.image.id), cert.image.id)
    store.add_imported(
        cert,
        envelope=outcome.envelope,
        envelope_digest=outcome.envelope_digest,
        repository=repository,
        manifest_digest=manifest,
        keyid=outcome.keyid,
    )
    return Imported(id=cert.id, signed_by=outcome)


def _read(src: Path) -> bytes:
    """At most MAX_BYTES of a regular file (bounded.read_bounded: a FIFO or a device is refused,
    never read). Raises StoreError (cannot read: exit 17, as for a certificate file anywhere),
    CertificateRefusedError (larger than any certificate)."""
    try:
        return read_bounded(src)
    except TooLarge as exc:
        raise CertificateRefusedError(
            f"{src} is {exc}: not a certificate",
            hint="import a certificate file (`certs export`) or a signed attestation envelope",
            file=str(src),
        ) from None
    except (OSError, Refused) as exc:
        said = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"it is {exc}"
        raise StoreError(f"cannot read {src}: {said}", "give a certificate file", file=str(src)) from None
