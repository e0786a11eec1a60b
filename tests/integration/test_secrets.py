"""Build secrets never land in a layer: a private HTTPS index that demands a token, reached with
the token (--pip-index-url-file) and its CA (--ca-bundle) as BuildKit secrets; then every byte of
`docker save` (layer tars included) is searched for both."""

from __future__ import annotations

import base64
import gzip
import http.server
import io
import ipaddress
import json
import secrets
import ssl
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker
USER = "envbuilder"


def _gateway() -> str:
    """The docker0 bridge address: where build containers reach this host."""
    config = docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"][0]
    if config.get("Gateway"):
        return str(config["Gateway"])
    return str(ipaddress.ip_network(config["Subnet"])[1])  # the daemon gives docker0 the first


def _index_tree(wheelhouse: Path, root: Path) -> None:
    """A PEP 503 simple index (directory listings are enough for pip)."""
    for wheel in wheelhouse.glob("*.whl"):
        project = wheel.name.split("-")[0].lower().replace("_", "-").replace(".", "-")
        (root / project).mkdir(parents=True, exist_ok=True)
        (root / project / wheel.name).symlink_to(wheel)


@pytest.fixture(scope="module")
def private_index(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Iterator[dict[str, str]]:
    work = tmp_path_factory.mktemp("index")
    host = _gateway()
    token = secrets.token_urlsafe(24)

    # A CA and a server certificate it signs (rustls, in uv, refuses a CA used as the server's).
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=work)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=envbuilder-test-ca",
        "-keyout",
        "ca-key.pem",
        "-out",
        "ca.pem",
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=envbuilder-test-index",
        "-keyout",
        "key.pem",
        "-out",
        "server.csr",
    )
    (work / "ext.cnf").write_text(f"subjectAltName=IP:{host}\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
            "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem")  # fmt: skip
    _index_tree(wheelhouse, work / "simple")
    expected = "Basic " + base64.b64encode(f"{USER}:{token}".encode()).decode()
    hits: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kw: object) -> None:
            super().__init__(*args, directory=str(work), **kw)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="index"')
                self.end_headers()
                return
            hits.append(self.path)
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(work / "server.pem", work / "key.pem")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"https://{USER}:{token}@{host}:{server.server_address[1]}/simple/"
    (work / "index-url").write_text(url + "\n")
    try:
        yield {"token": token, "url_file": str(work / "index-url"), "ca": str(work / "ca.pem"), "hits": hits}  # type: ignore[dict-item]
    finally:
        server.shutdown()


def _scan(blob: bytes, needles: list[bytes], where: str, found: list[str]) -> None:
    """Search every file inside blob: tars (layers) are opened and gzip is undone, recursively;
    anything else is searched byte for byte."""
    if blob[:2] == b"\x1f\x8b":
        blob = gzip.decompress(blob)
    try:
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            for m in tar.getmembers():
                found += [f"{where}/{m.name}: name" for n in needles if n in m.name.encode()]
                f = tar.extractfile(m) if m.isfile() else None
                if f is not None:
                    _scan(f.read(), needles, f"{where}/{m.name}", found)
        return
    except tarfile.TarError:
        pass
    found += [f"{where}: {n[:8]!r}..." for n in needles if n in blob]


def test_secrets_are_used_by_the_build_but_absent_from_every_layer(
    private_index: dict[str, str], engine: DockerEngine, base_image: str, tmp_path: Path,
    run_id: str, cleanup_refs: list[str],
) -> None:  # fmt: skip
    spec = write_spec(tmp_path, f"it-secret-{run_id}")
    proc = envbuilder_cli(
        "build", str(spec.path), "--cpu", "--base-image", base_image,
        "--ca-bundle", private_index["ca"], "--pip-index-url-file", private_index["url_file"],
        "--lock-out", str(tmp_path / "lock.json"), "--json", "--no-cache",  # so pip really runs
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert any("torch-2.13.0" in h for h in private_index["hits"]), "pip did not use the index"
    # The lock names the mirror by its secret, never by its URL (issue 23 item 5, D15).
    written = (tmp_path / "lock.json").read_text()
    assert private_index["token"] not in written and "<secret:pip_index_url>" in written
    (locked,) = json.loads(written)["packages"]
    assert locked["default_index"] == locked["framework_index"] == "<secret:pip_index_url>"
    assert all(u.startswith("<secret:pip_index_url>/") for p in locked["packages"] for u in p["urls"])
    assert private_index["token"] not in proc.stdout + proc.stderr
    image = json.loads(proc.stdout)["tags"][0]
    cleanup_refs.append(image)
    tar = engine.save(image, tmp_path / "image.tar")
    ca_body = Path(private_index["ca"]).read_text().splitlines()[1].encode()  # a base64 line of the CA
    needles = [private_index["token"].encode(), ca_body]
    blob = tar.read_bytes()
    found = [f"raw docker save: {n[:8]!r}..." for n in needles if n in blob]
    _scan(blob, needles, "docker save", found)
    assert found == [], f"secret material found in the image: {found}"
    # The control: the scanner does find what is there (the torch wheel's RECORD names it).
    control: list[str] = []
    _scan(blob, [b"torch/__init__.py"], "docker save", control)
    assert control
