"""The CLI of keys and verify: results on stdout, one error line and a hint on stderr, and
the exit code of each failure family (2, 12, 14, 15, 16), against an in-process registry."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from cert_factory import cert_doc as cert
from click.testing import CliRunner
from fake_registry import fake_registry, push_image

from envbuilder.attest import attach_certificates
from envbuilder.attest.envelope import sign_statement
from envbuilder.attest.keys import find_key, load_signer
from envbuilder.attest.statement import ImageSubject, certificate_statements
from envbuilder.certify.certificate import Certificate
from envbuilder.cli import cli
from envbuilder.registry import RegistryClient, parse_reference


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))  # no credentials
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    return tmp_path / "data"


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args), env=env)
    return res.exit_code, res.stdout, res.stderr


def test_keys_generate_list_export_import(data: Path, tmp_path: Path) -> None:
    code, out, _ = run("keys", "generate", "--name", "ci", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["scheme"] == "ecdsa-sha2-nistp256" and not doc["encrypted"]
    assert stat.S_IMODE(Path(doc["private_key"]).stat().st_mode) == 0o600
    code, _, err = run("keys", "generate", "--name", "ci")
    assert code == 16 and "envbuilder: error: a key named 'ci' already exists" in err and "hint:" in err
    code, out, _ = run("keys", "generate", "--name", "locked", "--type", "ed25519",
                       env={"ENVBUILDER_KEY_PASSPHRASE": "pw"})  # fmt: skip
    assert code == 0 and "passphrase" in out
    code, pem, _ = run("keys", "export-public", "ci")
    assert code == 0 and pem.startswith("-----BEGIN PUBLIC KEY-----")
    code, _, err = run("keys", "export-public")
    assert code == 16 and "none is named 'default'" in err
    (tmp_path / "theirs.pub").write_text(pem)
    code, out, _ = run(
        "keys", "import", str(tmp_path / "theirs.pub"), "--name", "lab", "--repository", "reg/*"
    )
    assert code == 0 and "for reg/*" in out
    code, out, _ = run("keys", "list", "--json")
    listed = json.loads(out)
    assert [k["name"] for k in listed["keys"]] == ["ci", "locked"]
    assert [(t["name"], t["repositories"]) for t in listed["trusted"]] == [
        ("ci", []),
        ("locked", []),
        ("lab", ["reg/*"]),
    ]
    (data / "trust.yaml").write_text("schema_version: 1\nkeys: [{name: x}]\n")
    code, _, err = run("keys", "list")
    assert code == 16 and "trust.yaml: keys[0] (x): give exactly one of public_key" in err


def test_verify_exit_codes_and_json(data: Path) -> None:
    assert run("keys", "generate", "--name", "ci")[0] == 0
    signer = load_signer(find_key("ci", data / "keys"))
    with fake_registry() as (host, _state):
        reg = RegistryClient(host, credentials=lambda _r: None)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = f"{host}/team/train:1"
        code, _, err = run("verify", ref)
        assert code == 12 and "no valid passing certificate (none attached" in err
        certificate = Certificate(
            cert("certified-cpu-only", gpus=(), image_id=image_id, issued_at="2026-01-01T00:00:00Z")
        )
        attach_certificates(reg, parse_reference(ref), digest=digest, image_id=image_id,
                            certificates=[certificate], signer=signer)  # fmt: skip
        code, out, _ = run("verify", ref)
        assert code == 0, out
        assert f"valid    {certificate.id[:12]}  certified-cpu-only" in out and "covers CPU runs only" in out
        code, out, _ = run("verify", ref, "--json")
        doc = json.loads(out)
        assert code == 0 and doc["ok"] and doc["digest"] == digest
        assert doc["certificates"][0]["signed_by"]["name"] == "ci"
        code, out, err = run("verify", ref, "--max-age", "1s")  # issued on 2026-01-01
        assert code == 12 and "[expired]" in out and "refused: expired" in err
        code, _, err = run("verify", f"{host}/team/none:1")
        assert code == 15 and "MANIFEST_UNKNOWN" in err
        code, _, err = run("verify", "Not/A/Ref")
        assert code == 2 and "is not an image reference" in err
        code, _, err = run("verify", ref, "--max-age", "soon")
        assert code == 16 and "--max-age 'soon' is not a duration" in err
    with fake_registry(auth="basic") as (host, _state):
        code, _, err = run("verify", f"{host}/team/train:1")
        assert code == 14 and "wants credentials" in err and "hint: `docker login" in err


def test_certs_import_marks_the_origin_and_verifies_a_signed_envelope(data: Path, tmp_path: Path) -> None:
    """hostile-inputs D4 and D10 at the CLI: an unsigned file is stored `imported` with a
    warning; a signed envelope is verified against the policy the options name; a certificate
    dated in the future is refused (exit 12); list and show say where each came from."""
    assert run("keys", "generate", "--name", "ci")[0] == 0
    signer = load_signer(find_key("ci", data / "keys"))
    plain = Certificate(cert("certified-cpu-only", gpus=()))
    (tmp_path / "plain.json").write_text(plain.to_json())
    code, out, err = run("certs", "import", str(tmp_path / "plain.json"))
    assert code == 0 and out.strip() == f"imported {plain.id[:12]} (unsigned)"
    assert "warning" in err and "--trust-imported" in err
    other_id = "sha256:" + "ee" * 32
    signed = Certificate(cert("certified-cpu-only", gpus=(), image_id=other_id))
    subject = ImageSubject(
        repository="reg.example/team/x", manifest_digest="sha256:" + "11" * 32, image_id=other_id
    )
    (tmp_path / "signed.json").write_bytes(sign_statement(certificate_statements(signed, subject)[0], signer))
    stranger = tmp_path / "stranger.pub"
    assert run("keys", "generate", "--name", "stranger")[0] == 0
    stranger.write_text(run("keys", "export-public", "stranger")[1])
    code, _, err = run("certs", "import", str(tmp_path / "signed.json"), "--key", str(stranger))
    assert code == 12 and "[untrusted-key]" in err and "hint:" in err
    code, out, err = run("certs", "import", str(tmp_path / "signed.json"), "--json")  # own keys trusted
    assert code == 0 and "warning" not in err
    assert json.loads(out) == {
        "id": signed.id, "origin": "imported", "signed": True,
        "signed_by": {"name": "ci", "keyid": str(signer.public_key.keyid)},
    }  # fmt: skip
    listed = {c["id"]: c["origin"] for c in json.loads(run("certs", "list", "--json")[1])}
    assert listed == {plain.id: "imported", signed.id: "imported"}
    assert "imported" in run("certs", "list")[1]
    assert (
        "origin   imported (unsigned: `run` uses it only with --trust-imported)"
        in run("certs", "show", plain.id[:8])[1]
    )
    assert (
        f"origin   imported (signed by {str(signer.public_key.keyid)[:12]}"
        in run("certs", "show", signed.id[:8])[1]
    )
    future = Certificate(cert("certified-cpu-only", gpus=(), issued_at="2099-01-01T00:00:00Z"))
    (tmp_path / "future.json").write_text(future.to_json())
    code, _, err = run("certs", "import", str(tmp_path / "future.json"))
    assert code == 12 and "future-issued" in err and "2099-01-01T00:00:00Z lies in the future" in err
    assert "--trust-imported" in run("run", "--help")[1]


def test_certs_import_of_hostile_files_is_one_error_line_and_stores_nothing(
    data: Path, tmp_path: Path
) -> None:
    """Every file is read at most 4 MiB + 1 bytes, regular files only; an envelope-shaped file
    that is no envelope is `malformed`. Exit 17 (a certificate file cannot be read, as README's
    table says), 2 (click refuses the path) or 12 (not a certificate)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # never opened for writing: reading it would hang
    cases = {
        fifo: 17,
        tmp_path: 2,  # a folder
        tmp_path / "missing.json": 17,
        tmp_path / "empty.json": 12,
        tmp_path / "binary.json": 12,
        tmp_path / "list.json": 12,
        tmp_path / "junk-envelope.json": 12,
        tmp_path / "big.json": 12,
    }
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "junk-envelope.json").write_text(
        json.dumps({"payloadType": 1, "payload": [], "signatures": "x"})
    )
    (tmp_path / "big.json").write_text(" " * (4 * 1024 * 1024) + "{}")
    for path, code in cases.items():
        got, _out, err = run("certs", "import", str(path))
        assert got == code, (path, got, err)
        assert "Traceback" not in err, (path, err)
        if path != tmp_path:  # click itself refuses a folder, with its usage line
            assert err.startswith("envbuilder: error:") and "hint:" in err, (path, err)
    assert "[malformed]" in run("certs", "import", str(tmp_path / "junk-envelope.json"))[2]
    assert json.loads(run("certs", "list", "--json")[1]) == []
