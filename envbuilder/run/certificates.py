"""Where `run` gets an image's certificates: the local store (certified here), else imported ones
(a signed envelope verified again against today's trust policy; an unsigned file only with
--trust-imported), else signed attestations cached from the registry the user's reference names
(verified again, for that repository), else that registry (fetched, verified, cached).
Attestations that fail are refusals with their reason (untrusted-key, bad-signature, unsigned,
subject-mismatch, future-issued, expired, ...). A reference that names no registry the image was
pushed to or pulled from (a local tag, an image ID) is never looked up in one (hostile-inputs D16)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.errors import RegistryError, UsageError
from envbuilder.registry import Reference, parse_reference
from envbuilder.run.coverage import Refusal, RefusedError

if TYPE_CHECKING:  # attest (and the crypto it loads) only when a signature is checked: a local
    # certificate needs neither (a node's `run` and `check`: the H200 machine has no cryptography)
    from envbuilder.attest import AttestationReport, Refused, TrustPolicy, Verified

Say = Callable[[str], None]
Fetch = Callable[..., "AttestationReport"]

_HINTS = {
    "untrusted-key": "trust the signer's public key (envbuilder keys import KEY.pub, or --key/--trust), "
    "or certify the image here",
    "subject-mismatch": "that attestation belongs to another image: certify this one (envbuilder certify "
    "IMAGE --push)",
    "expired": "re-certify and push again (envbuilder certify IMAGE --push), or relax max_age",
    "future-issued": "check this host's clock; a certificate issued in the future is never trusted",
    "imported-unsigned": "pass --trust-imported to use it, or import the signed attestation instead "
    "(envbuilder certs import ENVELOPE), or certify the image here",
    "unsigned": "push it again with a signature: envbuilder push IMAGE --attest",
    "unavailable": "check the registry, then run again",
}
_DEFAULT_HINT = "do not trust this attestation; re-certify the image: envbuilder certify IMAGE --push"


def registry_reference(image: str, info: ImageInfo) -> tuple[Reference, str] | None:
    """The registry reference and manifest digest of the image as it is here: the RepoDigest of
    the repository `image` names (set by push and pull). None when `image` names none of them
    (a local tag or an image ID: the user did not point at a registry, so none is asked, even
    when the image was pushed or pulled under another name), or the image never went through one."""
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
    return None


def attestation_refusal(refused: Refused, ref: Reference) -> Refusal:
    return Refusal(
        reason=refused.reason,
        message=f"attestation {refused.envelope_digest[:19]} in {ref.name}: {refused.message}",
        hint=_HINTS.get(refused.reason, _DEFAULT_HINT),
    )


def certificate_finder(
    reference: str,
    *,
    store: CertStore,
    policy: Callable[[], TrustPolicy],
    fetch: Fetch | None = None,
    say: Say = lambda _line: None,
    trust_imported: bool = False,
) -> Callable[[ImageInfo], list[Certificate]]:
    """The find_certificate of `run`: local certificates for the image ID, newest first; else
    the imported ones that hold (signed: verified again; unsigned: only with `trust_imported`);
    else the cached or fetched attestations of the registry digest that `reference` (the name
    the user gave the image: a tag, a digest reference, an ID) names. Raises RefusedError (exit
    12) when nothing holds but something was there (attestations, imported certificates, a
    registry digest under another name), naming each reason; the trust policy is read only when
    needed (SigningKeyError when it is broken)."""

    def find(info: ImageInfo) -> list[Certificate]:
        rows = [r for r in store.list(image=info.id) if r.image_id == info.id]
        local = [store.get(r.id) for r in rows if r.origin == "local"]
        if local:
            return local
        imported, refusals = _imported(
            [r.id for r in rows if r.origin == "imported"], info, store, policy, trust_imported, say
        )
        if imported:
            return imported
        where = registry_reference(reference, info)
        if where is None:
            if refusals:
                raise RefusedError(refusals)
            if info.repo_digests:
                raise RefusedError([_elsewhere(reference, info)])
            return []
        if fetch is None:
            from envbuilder.attest import fetch_verified as fetch_now
        else:
            fetch_now = fetch
        try:
            return _from_registry(*where, store=store, trust=policy(), fetch=fetch_now, say=say, info=info)
        except RefusedError as exc:
            raise RefusedError([*refusals, *exc.refusals]) from exc

    return find


def _imported(
    ids: list[str],
    info: ImageInfo,
    store: CertStore,
    policy: Callable[[], TrustPolicy],
    trust_imported: bool,
    say: Say,
) -> tuple[list[Certificate], list[Refusal]]:
    """The imported certificates of the image that hold, and why the others do not."""
    usable: list[Certificate] = []
    refusals: list[Refusal] = []
    read: list[TrustPolicy] = []  # the policy, read once and only when an envelope needs it
    for cid in ids:
        envelopes = store.envelopes(cid)
        if envelopes:
            from envbuilder.attest import Refused, Verified
            from envbuilder.attest.envelope import verify_envelope

            if not read:
                read.append(policy())
            trust = read[0]
            outcomes = [
                verify_envelope(e.envelope, repository=e.repository, digest=info.id, policy=trust)
                for e in envelopes
            ]
            good = [o for o in outcomes if isinstance(o, Verified) and o.certificate is not None]
            if good and good[0].certificate is not None:
                signer = good[0].key_name
                say(f"envbuilder: imported certificate {cid[:12]} signed by {signer}, verified again")
                usable.append(good[0].certificate)
            else:
                refusals += [
                    Refusal(
                        reason=o.reason,
                        message=f"imported attestation {o.envelope_digest[:19]}: {o.message}",
                        hint=_HINTS.get(o.reason, _DEFAULT_HINT),
                    )
                    for o in outcomes
                    if isinstance(o, Refused)
                ]
        elif trust_imported:
            say(f"envbuilder: warning: using imported certificate {cid[:12]}, unsigned (--trust-imported)")
            usable.append(store.get(cid))
        else:
            refusals.append(
                Refusal(
                    reason="imported-unsigned",
                    message=f"certificate {cid[:12]} was imported from a file and carries no signature "
                    "(its hashes prove it is intact, not who made it)",
                    hint=_HINTS["imported-unsigned"],
                )
            )
    return _newest_first(usable), refusals


def _newest_first(certs: list[Certificate]) -> list[Certificate]:
    """attest.discovery.newest_first, loaded only when there is something to order."""
    if len(certs) < 2:
        return certs
    from envbuilder.attest.discovery import newest_first

    return newest_first(certs)


def _elsewhere(image: str, info: ImageInfo) -> Refusal:
    """No certificate here, and `image` names no registry; say where the image's attestations
    could be looked up instead."""
    shown = ", ".join(info.repo_digests[:2])
    return Refusal(
        reason="no-certificate",
        message=f"no certificate for image {info.id[:19]} here, and {image} names no registry: the "
        f"attestations of {shown} are not looked up for it",
        hint=f"run it by its registry reference (envbuilder run {info.repo_digests[0]}), or certify it "
        "here: envbuilder certify IMAGE",
    )


def _from_registry(
    ref: Reference,
    digest: str,
    *,
    store: CertStore,
    trust: TrustPolicy,
    fetch: Fetch,
    say: Say,
    info: ImageInfo,
) -> list[Certificate]:
    """The cached attestations of `digest`, verified again for `ref`'s repository (the trust
    policy's scope is the repository the user named, not the one the attestation was cached
    from); else those fetched from `ref`'s registry, cached. Raises RefusedError."""
    from envbuilder.attest import Verified
    from envbuilder.attest.envelope import verify_envelope

    cached: list[Verified] = []
    for att in store.attestations(digest):
        outcome = verify_envelope(att.envelope, repository=ref.name, digest=digest, policy=trust)
        if isinstance(outcome, Verified) and outcome.certificate is not None:
            cached.append(outcome)
    if cached:
        say(f"envbuilder: {len(cached)} cached attestation(s) of {ref.name}@{digest[:19]} verified again")
        return _newest_first([v.certificate for v in cached if v.certificate is not None])
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
