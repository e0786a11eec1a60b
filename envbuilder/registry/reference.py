"""Image references (`registry/name:tag`, `name@sha256:...`), read as the docker CLI reads them.

A first component with a '.' or ':' (or `localhost`) is the registry; otherwise it is Docker Hub
(`docker.io`, whose API host is registry-1.docker.io, and whose one-word names live under
`library/`). Grammar: https://github.com/distribution/reference/blob/main/reference.go
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from envbuilder.errors import UsageError
from envbuilder.imageref import COMPONENT_RE as _COMPONENT
from envbuilder.imageref import DIGEST_RE as _DIGEST
from envbuilder.imageref import HOST_RE as _HOST
from envbuilder.imageref import TAG_RE as _TAG

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"


@dataclass(frozen=True, slots=True)
class Reference:
    registry: str  # host[:port], as written (docker.io for Docker Hub)
    repository: str  # path inside the registry, e.g. library/debian
    tag: str | None = None
    digest: str | None = None  # sha256:<hex>

    @property
    def name(self) -> str:
        """registry/repository: what trust policies and attestation subjects name."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    @property
    def ref(self) -> str:
        """What the manifest endpoint takes: the digest when known, else the tag."""
        return self.digest or self.tag or "latest"

    def with_digest(self, digest: str) -> Reference:
        return replace(self, digest=digest)

    def __str__(self) -> str:
        text = self.name + (f":{self.tag}" if self.tag else "")
        return text + (f"@{self.digest}" if self.digest else "")


def parse_reference(text: str) -> Reference:
    """Parse an image reference. Raises UsageError for a malformed one."""
    original = text
    text = text.strip()
    digest = None
    if "@" in text:
        text, _, digest = text.partition("@")
        if not _DIGEST.fullmatch(digest):
            raise _bad(original, f"the digest {digest!r} is not sha256:<64 hex digits>")
    tag = None
    head, sep, tail = text.rpartition(":")
    if sep and "/" not in tail:
        text, tag = head, tail
        if not _TAG.fullmatch(tag):
            raise _bad(original, f"the tag {tag!r} is not valid")
    first, slash, rest = text.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
        if not _HOST.fullmatch(registry):
            raise _bad(original, f"{registry!r} is not a registry host[:port]")
    else:
        registry, path = DOCKER_HUB, text
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not path or not all(_COMPONENT.fullmatch(c) for c in path.split("/")):
        raise _bad(original, f"the repository {path!r} is not valid (lowercase, digits, . _ - and /)")
    if tag is None and digest is None:
        tag = "latest"
    return Reference(registry=registry, repository=path, tag=tag, digest=digest)


def _bad(text: str, why: str) -> UsageError:
    return UsageError(
        f"{text!r} is not an image reference: {why}",
        hint="write it as REGISTRY/NAME:TAG or REGISTRY/NAME@sha256:DIGEST, e.g. 127.0.0.1:5000/team/train:1",
    )
