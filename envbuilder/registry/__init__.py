"""A small OCI distribution client (envbuilder's own, over HTTP): references, Docker-config
credentials and bearer tokens, manifests, blobs, and OCI 1.1 referrers with the fallback tag
scheme. Errors: RegistryError (13), RegistryAuthError (14), RegistryNotFoundError (15)."""

from envbuilder.registry.client import (
    DOCKER_MANIFEST,
    OCI_INDEX,
    OCI_MANIFEST,
    Descriptor,
    Manifest,
    Referrers,
    RegistryClient,
    fallback_tag,
)
from envbuilder.registry.reference import Reference, parse_reference

__all__ = [
    "DOCKER_MANIFEST",
    "OCI_INDEX",
    "OCI_MANIFEST",
    "Descriptor",
    "Manifest",
    "Reference",
    "Referrers",
    "RegistryClient",
    "fallback_tag",
    "parse_reference",
]
