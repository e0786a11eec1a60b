"""Where `run` gets an image's certificates: the local store (certified here), else signed
attestations cached from a registry (verified again against today's trust policy), else the
image's registry (fetched, verified, cached). Attestations that fail are refusals with their
reason (untrusted-key, bad-signature, unsigned, subject-mismatch, expired, ...)."""

from __future__ import annotations

from collections.abc import Callable

from envbuilder.attest import AttestationReport, Refused, TrustPolicy, Verified, fetch_verified
from envbuilder.attest.discovery import newest_first
from envbuilder.attest.envelope import verify_envelope
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.errors import RegistryError, UsageError
from envbuilder.registry import Reference, parse_reference
from envbuilder.run.coverage import Refusal, RefusedError

Say = Callable[[str], None]
Fetch = Callable[..., AttestationReport]

_HINTS = {
    "untrusted-key": "trust the signer's public key (envbuilder keys import KEY.pub, or --key/--trust), "
    "or certify the image here",
    "subject-mismatch": "that attestation belongs to another image: certify this one (envbuilder certify "
    "IMAGE --push)",
    "expired": "re-certify and push again (envbuilder certify IMAGE --push), or relax max_age",
    "unsigned": "push it again with a signature: envbuilder push IMAGE --attest",
    "unavailable": "check the registry, then run again",
}
_DEFAULT_HINT = "do not trust this attestation; re-certify the image: envbuilder certify IMAGE --push"


def registry_reference(image: str, info: ImageInfo) -> tuple[Reference, str] | None:
    """The registry reference and manifest digest of the image as it is here: the RepoDigest of
    the repository `image` names (set by push and pull), else the first RepoDigest; None for an
    image that never went through a registry."""
    try:
        wanted = parse_reference(image).name
    except UsageError:
        wanted = None
    digests = []
    for item in info.repo_digests:
        name, _, digest = item.partition("@")
        try:
            ref = parse_reference(item)
        except UsageError:
            continue
        digests.append((ref, digest, ref.name == wanted or name == wanted))
    for ref, digest, match in digests:
        if match:
            return ref, digest
    return (digests[0][0], digests[0][1]) if digests else None


def attestation_refusal(refused: Refused, ref: Reference) -> Refusal:
    return Refusal(
        reason=refused.reason,
        message=f"attestation {refused.envelope_digest[:19]} in {ref.name}: {refused.message}",
        hint=_HINTS.get(refused.reason, _DEFAULT_HINT),
    )


def certificate_finder(
    image: str,
    *,
    store: CertStore,
    policy: Callable[[], TrustPolicy],
    fetch: Fetch = fetch_verified,
    say: Say = lambda _line: None,
) -> Callable[[ImageInfo], list[Certificate]]:
    """The find_certificate of `run`: local certificates for the image ID, newest first; else
    the cached or fetched attestations of its registry digest. Raises RefusedError (exit 12)
    when the image has attestations and none holds, naming each one's reason; the trust policy
    is read only then (SigningKeyError when it is broken)."""

    def find(info: ImageInfo) -> list[Certificate]:
        local = [r for r in store.list(image=info.id, origin="local") if r.image_id == info.id]
        if local:
            return [store.get(r.id) for r in local]
        where = registry_reference(image, info)
        if where is None:
            return []
        ref, digest = where
        trust = policy()
        cached: list[Verified] = []
        for att in store.attestations(digest):
            outcome = verify_envelope(att.envelope, repository=att.repository, digest=digest, policy=trust)
            if isinstance(outcome, Verified) and outcome.certificate is not None:
                cached.append(outcome)
        if cached:
            say(f"envbuilder: {len(cached)} cached attestation(s) of {ref.name}@{digest[:19]} verified again")
            return newest_first(v.certificate for v in cached if v.certificate is not None)
        say(f"envbuilder: no local certificate; fetching the attestations of {ref.name}@{digest[:19]}")
        try:
            report = fetch(ref, policy=trust, digest=digest)
        except RegistryError as exc:
            raise RefusedError(
                [
                    Refusal(
                        reason="unavailable",
                        message=f"no local certificate, and the attestations of {ref} cannot be fetched: "
                        f"{exc.message}",
                        hint=_HINTS["unavailable"],
                    )
                ]
            ) from exc
        verified = [(v, v.certificate) for v in report.verified if v.certificate is not None]
        for v, cert in verified:
            store.add_attested(
                cert,
                envelope=v.envelope,
                envelope_digest=v.envelope_digest,
                repository=report.repository,
                manifest_digest=digest,
                keyid=v.keyid,
            )
        if verified:
            say(
                f"envbuilder: {len(verified)} certificate(s) verified from {report.via} "
                f"(signed by {', '.join(sorted({v.key_name for v, _ in verified}))}); cached in the store"
            )
            return list(report.certificates)
        if report.refused:
            raise RefusedError([attestation_refusal(r, ref) for r in report.refused])
        raise RefusedError(
            [
                Refusal(
                    reason="no-certificate",
                    message=f"no certificate for image {info.id} here, and {ref.name}@{digest[:19]} has no "
                    f"attestations ({report.via})",
                    hint="certify it and push the attestation: envbuilder certify IMAGE --push",
                )
            ]
        )

    return find
