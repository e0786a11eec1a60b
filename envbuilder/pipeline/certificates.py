"""The certificate lookup before an image runs (`run`, `check`): the local store, imported
certificates, else the signed attestations of the image's registry, verified against the trust
policy the user named (run/certificates.py says the order and the refusals)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envbuilder.certify.certificate import Certificate
from envbuilder.engine import ImageInfo
from envbuilder.run.launch import FindCertificate

if TYPE_CHECKING:
    from envbuilder.attest import TrustPolicy


def find_certificates(
    image: str,
    key_files: tuple[Path, ...] = (),
    trust_file: Path | None = None,
    max_age: str | None = None,
    trust_imported: bool = False,
    say: Callable[[str], None] = lambda _line: None,
) -> FindCertificate:
    """The find_certificate that `run_image`, `run_exported` and `check` are handed for `image`
    (the reference the user gave): this machine's certificate store, and the trust policy of
    `key_files`, `trust_file` and `max_age` (attest.choose_policy: DATA/trust.yaml, else your
    own keys), read only when an attestation must be verified. `say` hears what is fetched.
    The finder raises RefusedError (exit 12) and SigningKeyError (a broken policy)."""
    from envbuilder.certify.store import CertStore
    from envbuilder.run.certificates import certificate_finder

    def policy() -> TrustPolicy:  # attest and its crypto load only when a signature is checked
        from envbuilder.attest import choose_policy

        return choose_policy(keys=key_files, trust=trust_file, max_age=max_age)

    return certificate_finder(
        image,
        store=CertStore(),
        policy=policy,
        say=say,
        trust_imported=trust_imported,
    )


def find_exported_certificates(
    key_files: tuple[Path, ...] = (),
    trust_file: Path | None = None,
    max_age: str | None = None,
    trust_imported: bool = False,
    say: Callable[[str], None] = lambda _line: None,
) -> FindCertificate:
    """find_certificates for a file `envbuilder export` wrote: the Docker image its sidecar names
    is known where the file runs (run/hpc.py reads the sidecar once, checks the file's sha256 and
    hands the image in), so the lookup is made then, under the name a user would type for that
    image (its first tag, else its ID)."""
    from envbuilder.run.coverage import image_ref

    def find(info: ImageInfo) -> Sequence[Certificate]:
        return find_certificates(image_ref(info), key_files, trust_file, max_age, trust_imported, say)(info)

    return find
