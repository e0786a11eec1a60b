"""An in-memory OCI registry on 127.0.0.1 for unit tests of envbuilder/registry (real HTTP, no
Docker): manifests, blobs, uploads, the OCI 1.1 referrers API (switchable, since Debian's
docker-registry 2.8 that the docker tests use has none), Basic or bearer-token auth, and
injected 503s to exercise the retries."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

USER, PASSWORD = "alice", "s3cret"


@dataclass
class RegistryState:
    referrers_api: bool = False
    auth: str | None = None  # None | "basic" | "bearer"
    fail_next: int = 0  # answer this many requests with 503 first
    corrupt_blobs: bool = False  # serve blobs whose bytes do not match their digest
    manifests: dict[tuple[str, str], tuple[bytes, str]] = field(
        default_factory=dict
    )  # (repo, ref) -> body, type
    blobs: dict[str, bytes] = field(default_factory=dict)
    uploads: dict[str, bytearray] = field(default_factory=dict)
    tokens: set[str] = field(default_factory=set)
    token_scopes: list[str] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    state: RegistryState
    base: str

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, code: int, err: str, msg: str) -> None:
        body = json.dumps({"errors": [{"code": err, "message": msg}]}).encode()
        self._send(code, body, {"Content-Type": "application/json"})

    def _authorized(self) -> bool:
        st = self.state
        given = self.headers.get("Authorization", "")
        if st.auth is None:
            return True
        if st.auth == "basic":
            good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if given == good:
                return True
            self._send(401, b"{}", {"WWW-Authenticate": 'Basic realm="fake"'})
            return False
        if given.startswith("Bearer ") and given[7:] in st.tokens:
            return True
        path = urlparse(self.path).path
        repo = path[4:].split("/manifests/")[0].split("/blobs/")[0].split("/referrers/")[0]
        challenge = f'Bearer realm="{self.base}/token",service="fake-registry",scope="repository:{repo}:pull"'
        self._send(401, b"{}", {"WWW-Authenticate": challenge})
        return False

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self) -> None:
        st = self.state
        url = urlparse(self.path)
        with st.lock:
            st.requests.append((self.command, url.path))
            if st.fail_next > 0:
                st.fail_next -= 1
                self._body()
                self._send(503, b"busy", {"Retry-After": "0"})
                return
        if url.path == "/token":
            self._token(url.query)
            return
        if not url.path.startswith("/v2/"):
            self._send(404)
            return
        if not self._authorized():
            return
        path = url.path[4:]
        if path == "":
            self._send(200, b"{}")
        elif "/referrers/" in path:
            repo, digest = path.split("/referrers/")
            self._referrers(repo, digest, parse_qs(url.query))
        elif "/manifests/" in path:
            repo, ref = path.split("/manifests/")
            self._manifest(repo, ref)
        elif path.endswith("/blobs/uploads/") and self.command == "POST":
            uid = secrets.token_hex(4)
            st.uploads[uid] = bytearray()
            self._send(202, headers={"Location": f"/v2/{path}{uid}?state=x"})
        elif "/blobs/uploads/" in path and self.command == "PUT":
            uid = path.rsplit("/", 1)[1]
            data = bytes(st.uploads.pop(uid, bytearray())) + self._body()
            want = parse_qs(url.query).get("digest", [""])[0]
            if _digest(data) != want:
                self._error(400, "DIGEST_INVALID", "digest mismatch")
                return
            st.blobs[want] = data
            self._send(201, headers={"Docker-Content-Digest": want})
        elif "/blobs/" in path:
            digest = path.rsplit("/", 1)[1]
            if digest not in st.blobs:
                self._error(404, "BLOB_UNKNOWN", "blob unknown")
                return
            data = st.blobs[digest] + (b" " if st.corrupt_blobs else b"")
            self._send(200, data, {"Docker-Content-Digest": digest})
        else:
            self._send(404)

    def _token(self, query: str) -> None:
        st = self.state
        auth = self.headers.get("Authorization", "")
        good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        if auth and auth != good:
            self._send(401, b"{}")
            return
        scope = parse_qs(query).get("scope", [""])[0]
        if "push" in scope and auth != good:
            self._send(401, b"{}")  # anonymous pulls only
            return
        token = secrets.token_hex(8)
        st.tokens.add(token)
        st.token_scopes.append(scope)
        self._send(200, json.dumps({"token": token, "expires_in": 300}).encode())

    def _manifest(self, repo: str, ref: str) -> None:
        st = self.state
        if self.command == "PUT":
            body = self._body()
            mt = self.headers.get("Content-Type", "")
            digest = _digest(body)
            st.manifests[(repo, digest)] = (body, mt)
            if not ref.startswith("sha256:"):
                st.manifests[(repo, ref)] = (body, mt)
            headers = {"Docker-Content-Digest": digest}
            subject = json.loads(body).get("subject")
            if st.referrers_api and subject:
                headers["OCI-Subject"] = subject["digest"]
            self._send(201, headers=headers)
            return
        if (repo, ref) not in st.manifests:
            self._error(404, "MANIFEST_UNKNOWN", f"manifest unknown: {ref}")
            return
        body, mt = st.manifests[(repo, ref)]
        self._send(200, body, {"Content-Type": mt, "Docker-Content-Digest": _digest(body)})

    def _referrers(self, repo: str, digest: str, query: dict[str, list[str]]) -> None:
        st = self.state
        if not st.referrers_api:
            self._send(404, b"404 page not found\n", {"Content-Type": "text/plain"})
            return
        wanted = query.get("artifactType", [None])[0]
        found = []
        for (r, ref), (body, mt) in sorted(st.manifests.items()):
            if r != repo or not ref.startswith("sha256:"):
                continue
            doc = json.loads(body)
            if (doc.get("subject") or {}).get("digest") != digest:
                continue
            if wanted and doc.get("artifactType") != wanted:
                continue
            desc = {
                "mediaType": mt,
                "digest": ref,
                "size": len(body),
                "artifactType": doc.get("artifactType"),
            }
            if doc.get("annotations"):
                desc["annotations"] = doc["annotations"]
            found.append(desc)
        index = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": found,
        }
        self._send(
            200, json.dumps(index).encode(), {"Content-Type": "application/vnd.oci.image.index.v1+json"}
        )

    do_GET = do_HEAD = do_PUT = do_POST = _handle


@contextmanager
def fake_registry(**options: Any) -> Iterator[tuple[str, RegistryState]]:
    """Serve a fresh registry; yields (host:port, its state)."""
    state = RegistryState(**options)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    host = f"127.0.0.1:{server.server_address[1]}"
    handler = type("Handler", (_Handler,), {"state": state, "base": f"http://{host}"})
    server.RequestHandlerClass = handler
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield host, state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def push_image(client: Any, repo: str, tag: str, *, config: bytes | None = None) -> tuple[str, str]:
    """A tiny image (config + one layer) pushed with the client; returns (manifest digest, image id)."""
    config = (
        config or json.dumps({"architecture": "amd64", "os": "linux", "n": secrets.token_hex(4)}).encode()
    )
    cfg = client.push_blob(repo, config, "application/vnd.docker.container.image.v1+json")
    layer = client.push_blob(
        repo, b"layer-" + secrets.token_bytes(8), "application/vnd.docker.image.rootfs.diff.tar.gzip"
    )
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": cfg.to_dict(),
        "layers": [layer.to_dict()],
    }
    body = json.dumps(manifest).encode()
    digest, _ = client.put_manifest(repo, tag, body, manifest["mediaType"])
    return digest, cfg.digest
