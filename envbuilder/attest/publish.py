"""Sign an image's certificates and attach them to it in its registry (OCI 1.1 artifacts whose
subject is the image manifest, artifactType application/vnd.dsse.envelope.v1+json)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from securesystemslib.signer import Signer

from envbuilder.attest.envelope import MEDIA_TYPE, sign_statement
from envbuilder.attest.statement import CONFIG_MEDIA_TYPES, ImageSubject, certificate_statements
from envbuilder.certify.certificate import Certificate, utc_now
from envbuilder.errors import CertificateRefusedError, RegistryError
from envbuilder.registry import Descriptor, Reference, RegistryClient

ANNOTATION_CERT = "io.envbuilder.certificate"
ANNOTATION_VERDICT = "io.envbuilder.verdict"
ANNOTATION_KEYID = "io.envbuilder.keyid"
ANNOTATION_PREDICATE = "in-toto.io/predicate-type"
ANNOTATION_CREATED = "org.opencontainers.image.created"


@dataclass(frozen=True, slots=True, kw_only=True)
class Attached:
    certificate: str  # certificate id
    predicate_type: str
    descriptor: Descriptor
    new: bool  # False: the same certificate, predicate and key were attached before

    def to_dict(self) -> dict[str, Any]:
        return {
            "certificate": self.certificate,
            "predicate_type": self.predicate_type,
            "digest": self.descriptor.digest,
            "new": self.new,
        }


def image_subject(
    reg: RegistryClient, ref: Reference, digest: str, image_id: str
) -> tuple[ImageSubject, Descriptor]:
    """Read the pushed manifest and check that its config is the local image: a signature never
    binds a certificate to a manifest of another image. Raises CertificateRefusedError (the
    manifest's config is another image, or it is an index), RegistryError."""
    manifest = reg.get_manifest(ref.repository, digest)
    doc = manifest.json()
    config = doc.get("config")
    if not isinstance(config, dict):
        raise CertificateRefusedError(
            f"{ref.name}@{digest} is {manifest.media_type or 'not an image manifest'}; only a "
            "single-platform image manifest can carry envbuilder attestations",
            hint="push one platform's image (envbuilder builds one)",
        )
    if config.get("digest") != image_id:
        raise CertificateRefusedError(
            f"{ref.name}@{digest[:19]} has config {str(config.get('digest'))[:19]}, but the certified "
            f"image is {image_id[:19]}: refusing to sign a certificate onto another image",
            hint="push the certified image itself (envbuilder push IMAGE), then attest",
        )
    media = str(config.get("mediaType") or CONFIG_MEDIA_TYPES[1])
    subject = ImageSubject(
        repository=ref.name,
        manifest_digest=digest,
        image_id=image_id,
        manifest_media_type=manifest.media_type,
        config_media_type=media,
    )
    return subject, manifest.descriptor


def attach_certificates(
    reg: RegistryClient,
    ref: Reference,
    *,
    digest: str,
    image_id: str,
    certificates: Sequence[Certificate],
    signer: Signer,
    say: Callable[[str], None] = lambda _line: None,
) -> list[Attached]:
    """Sign each certificate's two statements and attach them to `digest` in `ref`'s repository.
    What was attached before (same certificate, predicate type and key) is not attached again.
    Raises CertificateRefusedError (a certificate for another image, or see image_subject),
    RegistryError and its subclasses."""
    subject, manifest_desc = image_subject(reg, ref, digest, image_id)
    keyid = str(signer.public_key.keyid)
    existing = {
        (
            d.annotations.get(ANNOTATION_CERT),
            d.annotations.get(ANNOTATION_PREDICATE),
            d.annotations.get(ANNOTATION_KEYID),
        ): d
        for d in reg.referrers(ref.repository, digest, artifact_type=MEDIA_TYPE).descriptors
    }
    out: list[Attached] = []
    for cert in certificates:
        if cert.image.id != image_id:
            raise CertificateRefusedError(
                f"certificate {cert.id[:12]} is for image {cert.image.id}, not {image_id}"
            )
        for doc in certificate_statements(cert, subject):
            ptype = str(doc["predicateType"])
            before = existing.get((cert.id, ptype, keyid))
            if before is not None:
                out.append(Attached(certificate=cert.id, predicate_type=ptype, descriptor=before, new=False))
                continue
            envelope = sign_statement(doc, signer)
            try:
                desc = reg.attach(
                    ref.repository,
                    manifest_desc,
                    artifact_type=MEDIA_TYPE,
                    blob=envelope,
                    annotations={
                        ANNOTATION_CREATED: utc_now(),
                        ANNOTATION_CERT: cert.id,
                        ANNOTATION_VERDICT: cert.verdict,
                        ANNOTATION_PREDICATE: ptype,
                        ANNOTATION_KEYID: keyid,
                    },
                )
            except RegistryError as exc:
                exc.message = f"attaching the attestation of certificate {cert.id[:12]} failed: {exc.message}"
                raise
            say(f"attest: {_short_type(ptype)} of certificate {cert.id[:12]} -> {desc.digest[:19]}")
            out.append(Attached(certificate=cert.id, predicate_type=ptype, descriptor=desc, new=True))
    return out


def _short_type(predicate_type: str) -> str:
    """`https://in-toto.io/attestation/test-result/v0.1` -> `test-result/v0.1`."""
    parts = predicate_type.replace(":", "/").split("/")
    return "/".join(parts[-2:])
