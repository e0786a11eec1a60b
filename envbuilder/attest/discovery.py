"""Reference -> verified certificates: find an image's attestations in its registry (OCI 1.1
referrers, or the fallback tag) and verify each against a trust policy. `fetch_verified` is the
one entry point; `verify`, `run` and the fleet commands all call it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from envbuilder.attest.envelope import MEDIA_TYPE, Refused, Verified, verify_envelope
from envbuilder.attest.policy import TrustPolicy
from envbuilder.certify.certificate import Certificate, newest_key
from envbuilder.errors import RegistryError
from envbuilder.registry import OCI_MANIFEST, Descriptor, Reference, RegistryClient, parse_reference


@dataclass(frozen=True, slots=True, kw_only=True)
class AttestationReport:
    """What the registry holds for one image digest, sorted into verified and refused."""

    reference: str
    repository: str  # registry/name
    digest: str  # the manifest digest verified against
    via: str  # how the referrers were found
    verified: tuple[Verified, ...]
    refused: tuple[Refused, ...]

    @property
    def certificates(self) -> list[Certificate]:
        """The verified certificates, newest first (each once, however many signatures)."""
        return newest_first(v.certificate for v in self.verified if v.certificate is not None)

    def signer_of(self, cert: Certificate) -> Verified:
        return next(v for v in self.verified if v.certificate is not None and v.certificate.id == cert.id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "repository": self.repository,
            "digest": self.digest,
            "via": self.via,
            "verified": [v.to_dict() for v in self.verified],
            "refused": [r.to_dict() for r in self.refused],
        }


def newest_first(certs: Iterable[Certificate]) -> list[Certificate]:
    """Each certificate once, the newest (issued_at, as a time: certificate.newest_key) first; ties
    and certificates without a readable issued_at (last) keep their order."""
    unique = {c.id: c for c in certs}
    return sorted(unique.values(), key=lambda c: newest_key(c.issued_at))


Client = Callable[[str], RegistryClient]


def fetch_verified(
    reference: str | Reference,
    *,
    policy: TrustPolicy,
    digest: str | None = None,
    client: Client = RegistryClient,
    now: datetime | None = None,
) -> AttestationReport:
    """Find and verify every DSSE attestation attached to `reference` (or to `digest` in its
    repository, e.g. the digest of the image actually pulled). An attestation that fails is
    Refused with its reason, never raised. Raises UsageError (malformed reference), RegistryError
    / RegistryAuthError / RegistryNotFoundError (the registry or the image itself)."""
    ref = parse_reference(reference) if isinstance(reference, str) else reference
    reg = client(ref.registry)
    target = digest or ref.digest or reg.resolve(ref).digest
    found = reg.referrers(ref.repository, target, artifact_type=MEDIA_TYPE)
    verified: list[Verified] = []
    refused: list[Refused] = []
    for desc in found.descriptors:
        outcome = _verify_referrer(reg, ref, target, desc, policy, now)
        if isinstance(outcome, Verified):
            verified.append(outcome)
        else:
            refused.append(outcome)
    return AttestationReport(
        reference=str(ref),
        repository=ref.name,
        digest=target,
        via=found.via,
        verified=tuple(verified),
        refused=tuple(refused),
    )


def _verify_referrer(
    reg: RegistryClient,
    ref: Reference,
    target: str,
    desc: Descriptor,
    policy: TrustPolicy,
    now: datetime | None,
) -> Verified | Refused:
    try:
        doc = reg.get_manifest(ref.repository, desc.digest, accept=(OCI_MANIFEST,)).json()
        layers = doc.get("layers")
        layer = layers[0] if isinstance(layers, list) and len(layers) == 1 else None
        if not isinstance(layer, dict) or layer.get("mediaType") != MEDIA_TYPE:
            return Refused(
                reason="malformed",
                message=f"referrer {desc.digest[:19]} is not one DSSE envelope layer",
                envelope_digest=desc.digest,
            )
        raw = reg.get_blob(ref.repository, str(layer.get("digest")))
    except RegistryError as exc:
        return Refused(
            reason="unavailable",
            message=f"referrer {desc.digest[:19]} cannot be read: {exc.message}",
            envelope_digest=desc.digest,
        )
    return verify_envelope(raw, repository=ref.name, digest=target, policy=policy, now=now)
