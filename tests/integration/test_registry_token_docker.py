"""envbuilder's registry client against a real docker-registry (distribution 2.8) that asks for
bearer tokens: the registry verifies each token's ES256 signature and x5c chain against its
root certificate, as behind Docker Hub or Harbor. The token server is this test's own (a few
lines of JWT); the registry and its checks are the real ones. Attestations pushed through
tokens verify; a wrong password is exit 14; an anonymous token cannot push."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import secrets
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import unavailable
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

from envbuilder.attest import TrustedKey, TrustPolicy, attach_certificates, fetch_verified
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.certify.certificate import build_certificate
from envbuilder.engine.credentials import Credentials
from envbuilder.errors import RegistryAuthError
from envbuilder.registry import RegistryClient, parse_reference

pytestmark = pytest.mark.docker

USER, PASSWORD = "alice", "token-test"
SERVICE, ISSUER = "envbuilder-test-registry", "envbuilder-test-issuer"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenIssuer:
    """A root certificate and the ES256 JWTs distribution's token auth accepts."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envbuilder test token issuer")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def token(self, subject: str, access: list[dict[str, Any]]) -> str:
        der = self.cert.public_bytes(serialization.Encoding.DER)
        header = {"typ": "JWT", "alg": "ES256", "x5c": [base64.b64encode(der).decode()]}
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": subject, "aud": SERVICE, "exp": now + 300, "nbf": now - 10,
                  "iat": now, "jti": secrets.token_hex(8), "access": access}  # fmt: skip
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def _token_server(issuer: TokenIssuer) -> tuple[ThreadingHTTPServer, list[str]]:
    granted: list[str] = []
    good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            auth = self.headers.get("Authorization")
            if auth is not None and auth != good:
                self.send_response(401)
                self.end_headers()
                return
            access = []
            for scope in parse_qs(urlparse(self.path).query).get("scope", []):
                kind, name, actions = scope.split(":")
                allowed = actions.split(",") if auth else ["pull"]  # anonymous: pull only
                access.append({"type": kind, "name": name, "actions": allowed})
                granted.append(f"{'alice' if auth else 'anonymous'} {kind}:{name}:{','.join(allowed)}")
            body = json.dumps(
                {"token": issuer.token(USER if auth else "", access), "expires_in": 300}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, granted


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def token_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """A docker-registry on a free port with token auth, and the log of scopes granted."""
    work = tmp_path_factory.mktemp("token-registry")
    issuer = TokenIssuer()
    (work / "root.crt").write_bytes(issuer.pem())
    server, granted = _token_server(issuer)
    port = _free_port()
    (work / "config.yml").write_text(
        "version: 0.1\nlog: {level: warn}\n"
        f"storage:\n  filesystem: {{rootdirectory: {work / 'data'}}}\n"
        f'http: {{addr: "127.0.0.1:{port}"}}\n'
        "auth:\n  token:\n"
        f"    realm: http://127.0.0.1:{server.server_address[1]}/token\n"
        f"    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {work / 'root.crt'}\n"
    )
    try:
        proc = subprocess.Popen(
            ["docker-registry", "serve", str(work / "config.yml")],
            stdout=subprocess.DEVNULL,
            stderr=(work / "registry.log").open("wb"),
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        server.shutdown()
        unavailable("docker-registry is not installed")
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
            except urllib.error.HTTPError as exc:
                if exc.code == 401:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            unavailable(
                f"the token-auth registry did not start: {(work / 'registry.log').read_text()[-500:]}"
            )
        yield f"127.0.0.1:{port}", granted
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        if proc.poll() is None:
            proc.kill()
        server.shutdown()


def _alice(_registry: str) -> Credentials | None:
    return Credentials(username=USER, password=PASSWORD)


def test_attestations_through_bearer_tokens(token_registry: tuple[str, list[str]], tmp_path: Path) -> None:
    host, granted = token_registry
    reg = RegistryClient(host, credentials=_alice)
    config = json.dumps(
        {"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": []}}
    )
    cfg = reg.push_blob("team/train", config.encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": cfg.to_dict(), "layers": []}  # fmt: skip
    digest, _ = reg.put_manifest("team/train", "1", json.dumps(manifest).encode(), str(manifest["mediaType"]))
    assert "alice repository:team/train:pull,push" in granted

    signer = load_signer(generate_key("ci", directory=tmp_path))
    cert = build_certificate(
        image={"id": cfg.digest, "ref": f"{host}/team/train:1", "stack": None, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": None, "gpus": [], "gpu_access": "none"},
        run={}, harness={"steps": []}, thresholds={}, verdict="certified-cpu-only", verdict_reason="test",
    )  # fmt: skip
    ref = parse_reference(f"{host}/team/train:1")
    attached = attach_certificates(
        reg, ref, digest=digest, image_id=cfg.digest, certificates=[cert], signer=signer
    )
    assert len(attached) == 2

    # an anonymous reader gets a pull token from the same server, and verifies
    policy = TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key),))
    report = fetch_verified(
        ref, policy=policy, client=lambda h: RegistryClient(h, credentials=lambda _r: None)
    )
    assert [c.id for c in report.certificates] == [cert.id] and report.via.startswith("fallback tag")
    assert "anonymous repository:team/train:pull" in granted

    wrong = RegistryClient(host, credentials=lambda _r: Credentials(username=USER, password="wrong"))
    with pytest.raises(
        RegistryAuthError, match=r"token server of .* refused the Docker config's credentials"
    ) as info:
        wrong.get_manifest("team/train", "1")
    assert info.value.exit_code == 14
    anonymous = RegistryClient(host, credentials=lambda _r: None)
    with pytest.raises(
        RegistryAuthError, match=r"wants credentials for POST .* and the Docker config has none"
    ):
        anonymous.push_blob("team/train", b"not allowed", "application/octet-stream")
