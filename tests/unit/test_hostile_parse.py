"""Hostile JSON from outside (issue 23 item 8; reproducers D6, D7 of
shared/reference/hostile-inputs-2026-12-04.md): an attestation nested 200,000 deep beside valid
ones, a signed payload as deep, a registry answer as deep, and a harness that prints deep JSON or
plants a symlink or a FIFO as its result.json. Each is `malformed` (or no result), never a
RecursionError, and the valid attestations beside it are still used."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from cert_factory import cert_doc as cert
from fake_registry import fake_registry, push_image
from securesystemslib.dsse import Envelope
from securesystemslib.signer import CryptoSigner
from test_attest_registry import client, trust

from envbuilder.attest import MEDIA_TYPE, attach_certificates, fetch_verified
from envbuilder.attest.envelope import verify_envelope
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.statement import PAYLOAD_TYPE, parse_statement
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.harness_plan import parse_harness_output
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.errors import RegistryError
from envbuilder.registry import parse_reference
from envbuilder.registry.client import Manifest, _index_descriptors
from envbuilder.run.certificates import certificate_finder

DEEP = b"[" * 200_000 + b"]" * 200_000  # D6's 400 KB envelope


@pytest.fixture
def signer(tmp_path: Path) -> CryptoSigner:
    return load_signer(generate_key("ci", directory=tmp_path / "keys"))


def signed(payload: bytes, signer: CryptoSigner) -> bytes:
    env = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    env.sign(signer)
    return json.dumps(env.to_dict()).encode()


def test_a_deep_envelope_beside_valid_attestations_is_malformed_and_the_valid_ones_are_used(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "hostile/trust", "a")
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        ref = parse_reference(f"{host}/hostile/trust:a")
        attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        subject = reg.resolve(ref).descriptor
        reg.attach("hostile/trust", subject, artifact_type=MEDIA_TYPE, blob=DEEP)  # anyone who can push
        reg.attach("hostile/trust", subject, artifact_type=MEDIA_TYPE, blob=signed(DEEP, signer))  # T7b
        reg.attach(
            "hostile/trust", subject, artifact_type=MEDIA_TYPE, blob=b'{"payload": ' + b"9" * 5000 + b"}"
        )
        report = fetch_verified(f"{host}/hostile/trust:a", policy=trust(signer), client=client)
        assert [c.id for c in report.certificates] == [certificate.id]
        assert len(report.verified) == 2
        assert [r.reason for r in report.refused] == ["malformed"] * 3
        assert all(len(r.message) < 300 and "\n" not in r.message for r in report.refused)
        # `run REF`'s finder: the certificate is found and cached, the hostile referrers refused
        lines: list[str] = []
        find = certificate_finder(
            f"{host}/hostile/trust:a",
            store=CertStore(tmp_path / "b.sqlite"),
            policy=lambda: trust(signer),
            fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
            say=lines.append,
        )
        info = ImageInfo(id=image_id, tags=(), repo_digests=(f"{host}/hostile/trust@{digest}",))
        assert [c.content_hash for c in find(info)] == [certificate.content_hash]


def test_a_deep_signed_payload_and_big_numbers_are_malformed(signer: CryptoSigner) -> None:
    policy = trust(signer)
    for raw in (DEEP, signed(DEEP, signer), signed(b'{"_type": ' + b"9" * 5000 + b"}", signer), b"\xff" * 10):
        out = verify_envelope(raw, repository="r/x", digest="sha256:" + "0" * 64, policy=policy)
        assert out.reason == "malformed", out  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="the payload is not JSON: nested deeper than 64 levels"):
        parse_statement(DEEP)


def test_registry_answers_nested_200000_deep_are_registry_errors() -> None:
    with pytest.raises(RegistryError, match="is not JSON: nested deeper than 64 levels"):
        Manifest(body=DEEP, media_type="x", digest="sha256:00").json()
    with pytest.raises(RegistryError, match="is not JSON: nested deeper"):
        _index_descriptors(b'{"manifests": ' + DEEP + b"}", "index")
    with pytest.raises(RegistryError, match="is not JSON: holding a number of more than"):
        _index_descriptors(b'{"manifests": ' + b"9" * 5000 + b"}", "index")


def test_a_deep_referrer_manifest_is_refused_beside_the_valid_ones(signer: CryptoSigner) -> None:
    with fake_registry() as (host, state):
        reg = client(host)
        digest, image_id = push_image(reg, "hostile/trust", "a")
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        ref = parse_reference(f"{host}/hostile/trust:a")
        attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        # a referrer whose own manifest is 200,000 deep, listed in the fallback index
        deep_digest = _sha(DEEP)  # stored as is (the fake registry's own put would parse it)
        state.manifests[("hostile/trust", deep_digest)] = (DEEP, "application/vnd.oci.image.manifest.v1+json")
        tag = "sha256-" + digest.split(":")[1]
        index = json.loads(state.manifests[("hostile/trust", tag)][0])
        index["manifests"].append(
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": deep_digest,
                "size": len(DEEP),
                "artifactType": MEDIA_TYPE,
            }
        )
        reg.put_manifest(
            "hostile/trust", tag, json.dumps(index).encode(), "application/vnd.oci.image.index.v1+json"
        )
        report = fetch_verified(f"{host}/hostile/trust:a", policy=trust(signer), client=client)
        assert [c.id for c in report.certificates] == [certificate.id]
        assert [r.reason for r in report.refused] == ["unavailable"]
        assert "nested deeper than 64 levels" in report.refused[0].message


def _sha(data: bytes) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(data).hexdigest()


RESULT = {"kind": "result", "verdict": "certified"}


def test_harness_output_nested_100000_deep_is_no_result(tmp_path: Path) -> None:
    deep = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    assert parse_harness_output(None, "progress\n" + deep + "\n") is None  # D7: was a RecursionError
    assert parse_harness_output(None, '{"kind": "result", "n": ' + "9" * 5000 + "}") is None
    assert parse_harness_output(None, json.dumps(RESULT)) == RESULT
    (tmp_path / "result.json").write_text(deep)
    assert parse_harness_output(tmp_path, "") is None


def test_result_json_is_read_only_as_a_regular_file_the_container_did_not_plant(tmp_path: Path) -> None:
    secret = tmp_path / "host-file.json"
    secret.write_text(json.dumps(RESULT))
    io = tmp_path / "io"
    io.mkdir()
    (io / "result.json").symlink_to(secret)  # a link the container planted: not followed
    assert parse_harness_output(io, "") is None
    (io / "result.json").unlink()
    os.mkfifo(io / "result.json")  # a FIFO with no writer: refused at once, no hang
    done = threading.Event()
    got: list[object] = []

    def read() -> None:
        got.append(parse_harness_output(io, ""))
        done.set()

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    assert done.wait(10), "parse_harness_output blocked on a FIFO"
    assert got == [None]
    (io / "result.json").unlink()
    (io / "result.json").write_text(json.dumps(RESULT) + " " * (4 * 1024 * 1024))  # over the bound
    assert parse_harness_output(io, json.dumps({**RESULT, "from": "stdout"})) == {**RESULT, "from": "stdout"}
    (io / "result.json").write_text(json.dumps(RESULT))
    assert parse_harness_output(io, "") == RESULT


def test_a_keyid_that_is_not_a_string_is_malformed(signer: CryptoSigner) -> None:
    """Found by `make fuzz` (test_envelope_loader_mutated_envelopes): a signature whose keyid is
    null passed securesystemslib's from_dict and crashed the untrusted-key message (TypeError)."""
    doc = json.loads(signed(b"{}", signer))
    for keyid in (None, 7, ["x"]):
        doc["signatures"][0]["keyid"] = keyid
        out = verify_envelope(
            json.dumps(doc).encode(), repository="r/x", digest="sha256:00", policy=trust(signer)
        )
        assert out.reason == "malformed", out  # type: ignore[union-attr]


def test_verify_cli_uses_the_valid_attestation_beside_a_deep_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """D6 as the user runs it: `envbuilder verify REF` ended in a RecursionError traceback (exit 1)."""
    from click.testing import CliRunner

    from envbuilder.attest.keys import find_key
    from envbuilder.cli import cli

    data = tmp_path / "data"
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(data))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    assert CliRunner().invoke(cli, ["keys", "generate", "--name", "ci"]).exit_code == 0
    own = load_signer(find_key("ci", data / "keys"))
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "hostile/trust", "a")
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        ref = parse_reference(f"{host}/hostile/trust:a")
        attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=own
        )
        reg.attach("hostile/trust", reg.resolve(ref).descriptor, artifact_type=MEDIA_TYPE, blob=DEEP)
        res = CliRunner().invoke(cli, ["verify", str(ref)])
    assert res.exit_code == 0, res.output
    assert f"valid    {certificate.id[:12]}" in res.stdout and "[malformed]" in res.stdout
    assert "Traceback" not in res.output
