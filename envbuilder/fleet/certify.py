"""A fleet run's certificates signed and attached to the image in its registry
(attest.attach_certificates, as `push --attest` does), whichever scheduler ran the jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from securesystemslib.signer import Signer

from envbuilder.attest import Attached, attach_certificates
from envbuilder.certify.certificate import Certificate
from envbuilder.fleet.image import FleetImage
from envbuilder.registry import RegistryClient

Say = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Attestation:
    attached: tuple[Attached, ...] = ()
    skipped: str | None = None  # why nothing was attached

    def to_dict(self) -> dict[str, Any]:
        return {"attached": [a.to_dict() for a in self.attached], "skipped": self.skipped}


def attest_certificates(
    image: FleetImage,
    certs: Sequence[Certificate],
    signer: Signer | None,
    *,
    client: Callable[[str], RegistryClient] = RegistryClient,
    say: Say = lambda _l: None,
) -> Attestation:
    """Sign the certificates and attach them to the image's manifest in its registry (what was
    attached before is not attached again). Nothing to attach to for a local-only image. Raises
    CertificateRefusedError (the manifest holds another image), RegistryError and subclasses."""
    if not certs:
        return Attestation(skipped="no certificate came back")
    if image.registry is None or image.digest is None:
        return Attestation(
            skipped=f"{image.ref} is in no registry: certificates kept here only "
            "(push it with `envbuilder push IMAGE --attest` to publish them)"
        )
    if signer is None:
        return Attestation(skipped="not signed (--no-attest): certificates kept here only")
    attached = attach_certificates(
        client(image.registry.registry),
        image.registry,
        digest=image.digest,
        image_id=image.info.id,
        certificates=list(certs),
        signer=signer,
        say=say,
    )
    return Attestation(attached=tuple(attached))
