"""A small OCI distribution client over HTTP: manifests, blobs, and referrers (OCI 1.1).

Referrers are found through `GET /v2/<name>/referrers/<digest>` where the registry has it, else
through the spec's fallback tag `sha256-<hex>`, an image index of the referrers that the pushing
client keeps up to date (Debian's docker-registry 2.8 answers the API with 404). Every digest is
checked against the bytes received. Connection errors and 429/5xx answers are retried with
backoff (urllib3's Retry, honouring Retry-After). Credentials come from the Docker config.
Spec: https://github.com/opencontainers/distribution-spec/blob/v1.1.0/spec.md
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from envbuilder.bounded import load_json
from envbuilder.engine.credentials import Credentials, registry_credentials
from envbuilder.errors import RegistryAuthError, RegistryError, RegistryNotFoundError
from envbuilder.hashing import sha256_digest
from envbuilder.registry.auth import TokenCache, basic_header, fetch_token, parse_challenge, read_head
from envbuilder.registry.reference import Reference
from envbuilder.typed import ascii_int

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES = (OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST)
EMPTY_JSON = "application/vnd.oci.empty.v1+json"  # the config of an artifact without one
EMPTY_BLOB = b"{}"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024  # the spec's recommended manifest limit
MAX_BLOB_BYTES = 32 * 1024 * 1024  # what an attestation may weigh; more is refused unread
ERROR_BODY_BYTES = 64 * 1024  # of an error answer, only this much is read for its message
INSECURE_ENV = "ENVBUILDER_INSECURE_REGISTRIES"  # comma list of hosts spoken to over plain HTTP
RETRY_STATUS = (429, 500, 502, 503, 504)

CredentialSource = Callable[[str], Credentials | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Descriptor:
    """An OCI content descriptor."""

    media_type: str
    digest: str
    size: int
    artifact_type: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": self.size}
        if self.artifact_type:
            doc["artifactType"] = self.artifact_type
        if self.annotations:
            doc["annotations"] = dict(self.annotations)
        return doc

    @classmethod
    def from_dict(cls, doc: Any, where: str) -> Descriptor:
        """Raises RegistryError for a descriptor that breaks the spec."""
        if not isinstance(doc, Mapping):
            raise RegistryError(f"{where}: a descriptor is not an object")
        digest, size, mt = doc.get("digest"), doc.get("size"), doc.get("mediaType")
        if not isinstance(digest, str) or not digest.startswith("sha256:") or not isinstance(size, int):
            raise RegistryError(f"{where}: a descriptor lacks a sha256 digest or a size")
        notes = doc.get("annotations")
        return cls(
            media_type=str(mt or ""),
            digest=digest,
            size=size,
            artifact_type=str(doc["artifactType"]) if doc.get("artifactType") else None,
            annotations={str(k): str(v) for k, v in notes.items()} if isinstance(notes, Mapping) else {},
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    body: bytes
    media_type: str
    digest: str

    def json(self) -> dict[str, Any]:
        """Raises RegistryError when the body is not a JSON object (read within
        envbuilder.bounded's limits: a manifest nested 200,000 deep is malformed, not a crash)."""
        try:
            doc = load_json(self.body, max_bytes=MAX_MANIFEST_BYTES)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, bounded.TooLarge
            raise RegistryError(f"manifest {self.digest} is not JSON: {_short(exc)}") from None
        if not isinstance(doc, dict):
            raise RegistryError(f"manifest {self.digest} is not a JSON object")
        return doc

    @property
    def descriptor(self) -> Descriptor:
        return Descriptor(media_type=self.media_type, digest=self.digest, size=len(self.body))


@dataclass(frozen=True, slots=True, kw_only=True)
class Referrers:
    descriptors: tuple[Descriptor, ...]
    via: str  # "referrers API" | "fallback tag sha256-<hex>" (the spec's tag schema)


def fallback_tag(digest: str) -> str:
    """The OCI 1.1 referrers tag schema: `<alg>-<hex>`, the hex cut at 64 characters."""
    alg, _, hexpart = digest.partition(":")
    return f"{alg}-{hexpart[:64]}"


def is_insecure(host: str, env: Mapping[str, str] | None = None) -> bool:
    """Loopback registries speak plain HTTP (as the Docker daemon allows by default), and so do
    the hosts listed in ENVBUILDER_INSECURE_REGISTRIES; every other one HTTPS."""
    listed = (env if env is not None else os.environ).get(INSECURE_ENV, "")
    if host in {h.strip() for h in listed.split(",") if h.strip()}:
        return True
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.endswith("]") or "]:" in host else host
    name = name.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class RegistryClient:
    """One registry (host[:port]). Methods raise RegistryError (13: unreachable, refused, or a
    broken answer), RegistryAuthError (14: credentials missing or refused), RegistryNotFoundError
    (15: no such repository, tag or digest)."""

    def __init__(
        self,
        registry: str,
        *,
        credentials: CredentialSource = registry_credentials,
        insecure: bool | None = None,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.3,
        session: requests.Session | None = None,
    ) -> None:
        self.registry = registry
        api_host = Reference(registry=registry, repository="x").api_host
        scheme = "http" if (is_insecure(registry) if insecure is None else insecure) else "https"
        self.base = f"{scheme}://{api_host}"
        self.timeout = timeout
        self._credentials = credentials
        self._creds: Credentials | None = None
        self._creds_loaded = False
        self._basic = False  # the registry asked for Basic: send it every time
        self._tokens = TokenCache()
        self._challenge: Any = None
        self.session = session or requests.Session()
        retry = Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            backoff_factor=backoff,
            status_forcelist=RETRY_STATUS,
            allowed_methods=None,  # every method: uploads and manifest PUTs are idempotent by digest
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        adapter = HTTPAdapter(max_retries=retry)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers["User-Agent"] = "envbuilder (OCI distribution client)"

    # ------------------------------------------------------------------ transport

    def _creds_for(self) -> Credentials | None:
        if not self._creds_loaded:
            self._creds = self._credentials(self.registry)
            self._creds_loaded = True
        return self._creds

    def _auth_header(self, scope: str) -> dict[str, str]:
        creds = self._creds_for() if self._basic else None
        if self._basic and creds is not None:
            return {"Authorization": basic_header(creds)}
        if self._challenge is not None:
            key = (self._challenge.params.get("realm", ""), self._challenge.params.get("service", ""), scope)
            token = self._tokens.get(key)
            if token is None:
                token, expires = fetch_token(
                    self.session,
                    self._challenge,
                    scope,
                    self._creds_for(),
                    registry=self.registry,
                    timeout=self.timeout,
                )
                self._tokens.put(key, token, expires)
            return {"Authorization": f"Bearer {token}"}
        return {}

    def request(
        self,
        method: str,
        url: str,
        *,
        repo: str,
        push: bool = False,
        expected: Iterable[int] = (200,),
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        params: Mapping[str, str] | None = None,
        stream: bool = False,
    ) -> requests.Response:
        """One authenticated request (`url` relative to /v2/ or absolute). With `stream` the body
        is left unread, for _read_capped to read within its limit. Raises as the class says."""
        full = url if url.startswith(("http://", "https://")) else f"{self.base}/v2/{url}"
        scope = f"repository:{repo}:{'pull,push' if push else 'pull'}"
        ok = set(expected)
        for attempt in (1, 2):
            hdrs = {**(headers or {}), **self._auth_header(scope)}
            try:
                resp = self.session.request(
                    method,
                    full,
                    headers=hdrs,
                    data=data,
                    params=params,
                    timeout=self.timeout,
                    allow_redirects=True,
                    stream=stream,
                )
            except requests.RequestException as exc:
                raise RegistryError(
                    f"cannot reach the registry {self.registry} ({method} {full}): {_short(exc)}",
                    hint="check the address and that the registry is up; a plain-HTTP registry that is "
                    f"not on this machine must be listed in {INSECURE_ENV}",
                ) from exc
            if resp.status_code != 401 or attempt == 2:
                break
            resp.close()
            challenge = parse_challenge(resp.headers.get("WWW-Authenticate", ""))
            if challenge is None:
                break
            if challenge.scheme == "basic":
                if self._creds_for() is None:
                    raise _auth_error(self.registry, method, full, None)
                self._basic = True
            elif challenge.scheme == "bearer":
                self._challenge = challenge
            else:
                break
        if resp.status_code in (401, 403):
            raise _auth_error(self.registry, method, full, self._creds_for(), resp.status_code)
        if resp.status_code in ok:
            return resp
        detail = _error_detail(resp)
        if resp.status_code == 404:
            raise RegistryNotFoundError(
                f"{self.registry} has no {url.split('?')[0]} ({detail or 'HTTP 404'})",
                hint="check the repository, tag or digest (`envbuilder push` puts an image there)",
            )
        raise RegistryError(
            f"{method} {full} on {self.registry} failed: HTTP {resp.status_code} {detail}".rstrip()
        )

    def check_access(self, repo: str, *, push: bool = False) -> None:
        """Authenticate for `repo` (pull, or pull and push) without changing anything: the
        credentials are refused here, before any upload. Raises as the class says."""
        self.request("GET", "", repo=repo, push=push)

    # ------------------------------------------------------------------ manifests

    def get_manifest(self, repo: str, ref: str, *, accept: Iterable[str] = MANIFEST_TYPES) -> Manifest:
        """The manifest `ref` (tag or digest), its digest checked. Raises as the class says."""
        resp = self.request(
            "GET", f"{repo}/manifests/{ref}", repo=repo, headers={"Accept": ", ".join(accept)}, stream=True
        )
        body = _read_capped(resp, MAX_MANIFEST_BYTES, f"manifest {repo}:{ref}")
        digest = sha256_digest(body)
        claimed = resp.headers.get("Docker-Content-Digest")
        if (ref.startswith("sha256:") and digest != ref) or (claimed and claimed != digest):
            raise RegistryError(
                f"{self.registry} sent manifest {repo}:{ref} whose bytes hash to {digest}, not "
                f"{ref if ref.startswith('sha256:') else claimed} (corrupted or tampered in transit)"
            )
        media_type = resp.headers.get("Content-Type", "").split(";")[0].strip()
        if not media_type or media_type == "application/json":
            media_type = _media_type_field(body, f"manifest {repo}:{ref}")
        return Manifest(body=body, media_type=media_type, digest=digest)

    def resolve(self, ref: Reference) -> Manifest:
        """The manifest a reference names (tag or digest). Raises as the class says."""
        return self.get_manifest(ref.repository, ref.ref)

    def put_manifest(self, repo: str, ref: str, body: bytes, media_type: str) -> tuple[str, str | None]:
        """Upload a manifest under `ref` (tag or its own digest); return (digest, the OCI-Subject
        header: set when the registry indexed its subject for the referrers API)."""
        resp = self.request(
            "PUT",
            f"{repo}/manifests/{ref}",
            repo=repo,
            push=True,
            expected=(201, 200),
            headers={"Content-Type": media_type},
            data=body,
        )
        digest = sha256_digest(body)
        claimed = resp.headers.get("Docker-Content-Digest")
        if claimed and claimed != digest:
            raise RegistryError(f"{self.registry} stored manifest {repo}:{ref} as {claimed}, not {digest}")
        return digest, resp.headers.get("OCI-Subject")

    # ------------------------------------------------------------------ blobs

    def blob_exists(self, repo: str, digest: str) -> bool:
        resp = self.request("HEAD", f"{repo}/blobs/{digest}", repo=repo, expected=(200, 404))
        return resp.status_code == 200

    def push_blob(self, repo: str, data: bytes, media_type: str) -> Descriptor:
        """Upload a blob (monolithically: POST then PUT ?digest=) unless it is there already."""
        digest = sha256_digest(data)
        desc = Descriptor(media_type=media_type, digest=digest, size=len(data))
        if self.blob_exists(repo, digest):
            return desc
        start = self.request("POST", f"{repo}/blobs/uploads/", repo=repo, push=True, expected=(202,))
        location = start.headers.get("Location")
        if not location:
            raise RegistryError(f"{self.registry} started an upload to {repo} without a Location")
        location = urljoin(self.base + "/", location)
        sep = "&" if "?" in location else "?"
        self.request(
            "PUT",
            f"{location}{sep}digest={digest}",
            repo=repo,
            push=True,
            expected=(201, 204),
            headers={"Content-Type": "application/octet-stream"},
            data=data,
        )
        return desc

    def get_blob(self, repo: str, digest: str, *, max_bytes: int = MAX_BLOB_BYTES) -> bytes:
        """A blob's bytes, checked against its digest. Raises as the class says."""
        resp = self.request("GET", f"{repo}/blobs/{digest}", repo=repo, stream=True)
        data = _read_capped(resp, max_bytes, f"blob {digest[:19]} in {repo}")
        if sha256_digest(data) != digest:
            raise RegistryError(f"blob {digest} from {self.registry}/{repo} does not match its digest")
        return data

    # ------------------------------------------------------------------ referrers (OCI 1.1)

    def referrers(self, repo: str, digest: str, *, artifact_type: str | None = None) -> Referrers:
        """The manifests whose `subject` is `digest`: the referrers API, else the fallback tag.
        Raises as the class says (a missing fallback tag is no referrers, not an error)."""
        params = {"artifactType": artifact_type} if artifact_type else None
        resp = self.request(
            "GET",
            f"{repo}/referrers/{digest}",
            repo=repo,
            expected=(200, 404, 400, 405),
            headers={"Accept": OCI_INDEX},
            params=params,
            stream=True,
        )
        content_type = resp.headers.get("Content-Type", "").split(";")[0].strip()
        if resp.status_code == 200 and content_type == OCI_INDEX:
            body = _read_capped(resp, MAX_MANIFEST_BYTES, f"referrers of {digest[:19]}")
            found = _index_descriptors(body, f"referrers of {repo}@{digest[:19]}")
            via = "referrers API"
        else:
            try:
                index = self.get_manifest(repo, fallback_tag(digest), accept=(OCI_INDEX,))
            except RegistryNotFoundError:
                return Referrers(descriptors=(), via=f"fallback tag {fallback_tag(digest)} (none)")
            found = _index_descriptors(index.body, f"{repo}:{fallback_tag(digest)}")
            via = f"fallback tag {fallback_tag(digest)}"
        if artifact_type:
            found = [d for d in found if d.artifact_type == artifact_type]
        return Referrers(descriptors=tuple(found), via=via)

    def attach(
        self,
        repo: str,
        subject: Descriptor,
        *,
        artifact_type: str,
        blob: bytes,
        annotations: Mapping[str, str] | None = None,
        layer_media_type: str | None = None,
    ) -> Descriptor:
        """Push `blob` as an OCI 1.1 artifact (image manifest, empty config, one layer of
        `layer_media_type`, default `artifact_type`) whose subject is `subject`, and make it
        discoverable: where the registry did not confirm it indexed the subject (no OCI-Subject
        header), add it to the fallback tag's index. Returns the artifact manifest's descriptor."""
        config = self.push_blob(repo, EMPTY_BLOB, EMPTY_JSON)
        layer = self.push_blob(repo, blob, layer_media_type or artifact_type)
        notes = dict(annotations or {})
        manifest: dict[str, Any] = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "artifactType": artifact_type,
            "config": config.to_dict(),
            "layers": [layer.to_dict()],
            "subject": Descriptor(
                media_type=subject.media_type, digest=subject.digest, size=subject.size
            ).to_dict(),
        }
        if notes:
            manifest["annotations"] = notes
        body = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        digest, indexed = self.put_manifest(repo, sha256_digest(body), body, OCI_MANIFEST)
        desc = Descriptor(
            media_type=OCI_MANIFEST,
            digest=digest,
            size=len(body),
            artifact_type=artifact_type,
            annotations=notes,
        )
        if indexed != subject.digest:
            self._add_to_fallback_index(repo, subject.digest, desc)
        return desc

    def _add_to_fallback_index(self, repo: str, subject: str, desc: Descriptor) -> None:
        """Read-modify-write the fallback tag's index (the spec's client-maintained scheme; two
        writers at the same instant can lose one entry, which a re-push restores)."""
        tag = fallback_tag(subject)
        try:
            current = self.get_manifest(repo, tag, accept=(OCI_INDEX,))
            entries = list(_index_descriptors(current.body, f"{repo}:{tag}"))
        except RegistryNotFoundError:
            entries = []
        if any(e.digest == desc.digest for e in entries):
            return
        index = {
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": [e.to_dict() for e in [*entries, desc]],
        }
        body = json.dumps(index, sort_keys=True, separators=(",", ":")).encode()
        self.put_manifest(repo, tag, body, OCI_INDEX)


def _media_type_field(body: bytes, where: str) -> str:
    """The `mediaType` a manifest names in its body (a registry that sent no Content-Type), or
    "". Raises RegistryError (not a JSON object: bounded.load_json's limits)."""
    if not body.strip():
        return ""
    try:
        doc = load_json(body, max_bytes=MAX_MANIFEST_BYTES)
    except ValueError as exc:
        raise RegistryError(f"{where} is not JSON: {_short(exc)}") from None
    return str(doc.get("mediaType") or "") if isinstance(doc, dict) else ""


def _index_descriptors(body: bytes, where: str) -> list[Descriptor]:
    """The descriptors of an image index (the referrers API's answer, a fallback tag's index),
    read within bounded.load_json's limits. Raises RegistryError."""
    try:
        doc = load_json(body, max_bytes=MAX_MANIFEST_BYTES)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, bounded.TooLarge
        raise RegistryError(f"{where} is not JSON: {_short(exc)}") from None
    manifests = doc.get("manifests") if isinstance(doc, dict) else None
    if not isinstance(manifests, list):
        raise RegistryError(f"{where} is not an image index (no manifests list)")
    return [Descriptor.from_dict(m, where) for m in manifests]


def _read_capped(resp: requests.Response, limit: int, what: str) -> bytes:
    """The body, at most `limit` bytes of it: a declared length over it is refused unread, and a
    streamed body (no length, chunked) is read only to limit+1 bytes. Raises RegistryError."""
    declared = ascii_int(resp.headers.get("Content-Length"))
    if declared is not None and declared > limit:
        resp.close()
        raise RegistryError(f"{what} is {declared:,} bytes, over the {limit:,}-byte limit")
    try:
        data = read_head(resp, limit + 1)
    except requests.RequestException as exc:
        raise RegistryError(f"{what} could not be read: {_short(exc)}") from None
    if len(data) > limit:
        raise RegistryError(f"{what} is {len(data):,} bytes, over the {limit:,}-byte limit")
    return data


def _error_detail(resp: requests.Response) -> str:
    """The distribution error body's codes and messages, else a short text."""
    try:
        body = read_head(resp, ERROR_BODY_BYTES)
    except requests.RequestException:
        return ""
    try:
        doc = load_json(body)
        errors = doc.get("errors") if isinstance(doc, dict) else None
        if isinstance(errors, list) and errors:
            return "; ".join(
                f"{e.get('code', '?')}: {e.get('message', '')}" for e in errors if isinstance(e, dict)
            )
    except ValueError:
        pass
    text = body.decode("utf-8", errors="replace").strip()
    return text.splitlines()[0][:200] if text else ""


def _auth_error(
    registry: str, method: str, url: str, creds: Credentials | None, status: int = 401
) -> RegistryAuthError:
    if creds is None:
        return RegistryAuthError(
            f"{registry} wants credentials for {method} {url.split('?')[0]} and the Docker config has none",
            hint=f"`docker login {registry}` (envbuilder reads $DOCKER_CONFIG/config.json and its helpers)",
        )
    return RegistryAuthError(
        f"{registry} refused the Docker config's credentials for {method} {url.split('?')[0]} "
        f"(HTTP {status})",
        hint=f"check them with `docker login {registry}`; a pull-only account cannot push",
    )


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 200 else text[:197] + "..."
