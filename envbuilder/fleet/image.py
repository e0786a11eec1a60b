"""The image a fleet works on, as its nodes will get it: its ID, labels and environment, read from
the local daemon, or from its registry (manifest, then config) on a submit host that does not hold
it; and the registry reference and manifest digest the nodes pull and the attestations name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envbuilder.bounded import load_json
from envbuilder.engine import Engine, ImageInfo
from envbuilder.errors import RegistryError, UsageError
from envbuilder.registry import Reference, RegistryClient, parse_reference
from envbuilder.registry.reference import DOCKER_HUB

Client = Callable[[str], RegistryClient]


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetImage:
    ref: str  # as the user wrote it
    info: ImageInfo
    registry: Reference | None = None  # where nodes pull it from; None: a local-only image
    digest: str | None = None  # its manifest digest there
    source: str = "daemon"  # daemon | registry

    @property
    def pull_ref(self) -> str:
        """What a node pulls: registry/name@sha256:... when known, else the reference as given."""
        if self.registry is not None and self.digest:
            return f"{self.registry.name}@{self.digest}"
        return self.ref

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "id": self.info.id,
            "registry": str(self.registry) if self.registry else None,
            "digest": self.digest,
            "source": self.source,
        }


def registry_reference(text: str) -> Reference | None:
    """The reference when `text` names a registry (its first component has a '.' or ':', or is
    localhost, or docker.io is written out); None for a local name like envbuilder/train:TAG."""
    try:
        ref = parse_reference(text)
    except UsageError:
        return None
    written = text.startswith(("docker.io/", "index.docker.io/"))
    return ref if ref.registry != DOCKER_HUB or written else None


def pyxis_image(text: str) -> str:
    """An image reference in pyxis/enroot's syntax: REGISTRY#NAME:TAG (Docker Hub: NAME:TAG);
    a squashfs path is left as it is. Raises UsageError for a malformed reference."""
    if text.startswith(("/", "./")) or text.endswith(".sqsh"):
        return text
    ref = parse_reference(text)
    name = ref.repository.removeprefix("library/") if ref.registry == DOCKER_HUB else ref.repository
    at = f"@{ref.digest}" if ref.digest else f":{ref.tag}"
    return (f"{ref.registry}#" if ref.registry != DOCKER_HUB else "") + name + at


def _repo_digest(info: ImageInfo, ref: Reference) -> str | None:
    for item in info.repo_digests:
        name, _, digest = item.partition("@")
        if name == ref.name or name == f"{ref.registry}/{ref.repository}":
            return digest
    return None


def read_registry_image(ref: Reference, client: Client = RegistryClient) -> tuple[ImageInfo, str]:
    """(the image as its config describes it, its manifest digest) from the registry alone.
    Raises RegistryError (an index, or a config that is not JSON), RegistryAuthError,
    RegistryNotFoundError."""
    reg = client(ref.registry)
    manifest = reg.resolve(ref)
    config = manifest.json().get("config")
    if not isinstance(config, dict) or not isinstance(config.get("digest"), str):
        raise RegistryError(
            f"{ref} is {manifest.media_type or 'not an image manifest'}: a fleet takes one platform's image",
            hint="push the single-platform image envbuilder built (envbuilder push IMAGE)",
        )
    try:
        doc = load_json(reg.get_blob(ref.repository, str(config["digest"])))  # bounded: a registry's answer
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, bounded.TooLarge
        raise RegistryError(f"the config of {ref} is not JSON: {str(exc)[:200]}") from None
    cfg = doc.get("config") if isinstance(doc, dict) else None
    cfg = cfg if isinstance(cfg, dict) else {}
    labels = cfg.get("Labels")
    labels = labels if isinstance(labels, dict) else {}
    env = cfg.get("Env")
    env = env if isinstance(env, list) else []
    digest = manifest.descriptor.digest
    info = ImageInfo(
        id=str(config["digest"]),
        tags=(str(ref),),
        repo_digests=(f"{ref.name}@{digest}",),
        labels={str(k): str(v) for k, v in labels.items()},
        env=tuple(str(e) for e in env),
    )
    return info, digest


def locate_image(text: str, *, engine: Engine | None, client: Client = RegistryClient) -> FleetImage:
    """The image `text` names: the local one when the daemon has it (with its registry digest when
    it was pushed or pulled), else the registry's. Raises UsageError (a local name the daemon does
    not have, or no daemon), RegistryError and its subclasses."""
    ref = registry_reference(text)
    info = engine.inspect_image(text) if engine is not None else None
    if info is not None:
        digest = _repo_digest(info, ref) if ref is not None else None
        return FleetImage(ref=text, info=info, registry=ref, digest=digest or (ref.digest if ref else None))
    if ref is None:
        raise UsageError(
            f"image {text!r} not found locally, and it names no registry",
            hint="build it here, or give REGISTRY/NAME:TAG so the nodes can pull it",
        )
    info, digest = read_registry_image(ref, client)
    return FleetImage(ref=text, info=info, registry=ref, digest=digest, source="registry")
