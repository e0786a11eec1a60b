"""`push`: push a local image to its registry, key its certificates by the manifest digest, and
(with attest) sign and attach them. Everything that can refuse (no certificate, no key, wrong
passphrase, a malformed reference) is checked before anything is pushed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envbuilder.attest.keys import Passphrase, find_key, load_signer
from envbuilder.attest.publish import Attached, attach_certificates
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore
from envbuilder.engine import Engine
from envbuilder.errors import CertificateRefusedError, UsageError
from envbuilder.registry import RegistryClient, parse_reference

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class PushOutcome:
    reference: str  # registry/name@sha256:...
    repository: str
    digest: str
    image_id: str
    certificates: tuple[str, ...]  # ids keyed by the digest
    attached: tuple[Attached, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "repository": self.repository,
            "digest": self.digest,
            "image_id": self.image_id,
            "certificates": list(self.certificates),
            "attestations": [a.to_dict() for a in self.attached],
        }


def push_image(
    image: str,
    *,
    engine: Engine,
    store: CertStore,
    to: str | None = None,
    attest: bool = False,
    key_name: str | None = None,
    passphrase: Passphrase | None = None,
    client: Callable[[str], RegistryClient] = RegistryClient,
    say: Say = lambda _line: None,
) -> PushOutcome:
    """Push `image` (as `to` when given: it is tagged so first). With `attest`, every local
    certificate of the image is signed with the key and attached. Raises UsageError (no such
    local image, malformed reference), CertificateRefusedError (attest, but no certificate),
    SigningKeyError (no key, wrong passphrase), DockerUnavailableError, RegistryError and its
    subclasses (13/14/15)."""
    info = engine.inspect_image(image)
    if info is None:
        raise UsageError(f"image {image!r} not found locally", hint="build it first: envbuilder build SPEC")
    dest = to or image
    ref = parse_reference(dest)
    if ref.digest:
        raise UsageError(f"cannot push to a digest ({dest})", hint="give a tag: REGISTRY/NAME:TAG")
    rows = [r for r in store.list(image=info.id, origin="local") if r.image_id == info.id]
    certs: list[Certificate] = [store.get(r.id) for r in rows]
    signer = None
    if attest:
        if not certs:
            raise CertificateRefusedError(
                f"no certificate for image {info.id} ({image}) to attest",
                hint=f"certify it first: envbuilder certify {image} (or push without --attest)",
            )
        key = find_key(key_name)
        signer = load_signer(key, passphrase)
        client(ref.registry).check_access(ref.repository, push=True)
        say(f"push: signing with key {key.name} ({key.keyid[:12]})")
    if dest != image:
        engine.tag(info.id, dest)
    say(f"push: {dest}")
    digest = engine.push(dest)
    store.record_digest([c.id for c in certs], ref.name, digest)
    attached: list[Attached] = []
    if signer is not None:
        attached = attach_certificates(
            client(ref.registry),
            ref,
            digest=digest,
            image_id=info.id,
            certificates=certs,
            signer=signer,
            say=say,
        )
    return PushOutcome(
        reference=f"{ref.name}@{digest}",
        repository=ref.name,
        digest=digest,
        image_id=info.id,
        certificates=tuple(c.id for c in certs),
        attached=tuple(attached),
    )
