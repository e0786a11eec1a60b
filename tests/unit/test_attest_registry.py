"""Attestations through a registry, offline (tests/unit/fake_registry.py): attach and fetch in both
discovery modes, re-attaching adds nothing, a certificate is never signed onto another image;
`run`'s certificate finder fetches, caches, verifies the cache again under today's policy, and
refuses with each reason; `push` checks everything before it pushes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert_doc as cert
from fake_engine import FakeEngine
from fake_registry import fake_registry, push_image
from securesystemslib.signer import CryptoSigner

from envbuilder.attest import MEDIA_TYPE, TrustedKey, TrustPolicy, attach_certificates, fetch_verified
from envbuilder.attest.envelope import sign_statement
from envbuilder.attest.imported import import_certificate
from envbuilder.attest.keys import generate_key, load_signer
from envbuilder.attest.push import push_image as push_attested
from envbuilder.attest.statement import CERTIFICATE, TEST_RESULT, ImageSubject, certificate_statements
from envbuilder.certify.certificate import Certificate, seal
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.engine.credentials import Credentials
from envbuilder.errors import CertificateRefusedError, SigningKeyError
from envbuilder.registry import RegistryClient, parse_reference
from envbuilder.run.certificates import certificate_finder
from envbuilder.run.coverage import RefusedError


def anonymous(_registry: str) -> Credentials | None:
    return None


def client(host: str) -> RegistryClient:
    return RegistryClient(host, credentials=anonymous, backoff=0, retries=1)


@pytest.fixture
def signer(tmp_path: Path) -> CryptoSigner:
    return load_signer(generate_key("ci", directory=tmp_path / "keys"))


def trust(signer: CryptoSigner) -> TrustPolicy:
    return TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key),), source="test")


@pytest.mark.parametrize("api", [False, True], ids=["fallback-tag", "referrers-api"])
def test_attach_then_fetch_verified(signer: CryptoSigner, api: bool) -> None:
    with fake_registry(referrers_api=api) as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        ref = parse_reference(f"{host}/team/train:1")
        first = attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        assert [a.new for a in first] == [True, True]
        again = attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer
        )
        assert [a.new for a in again] == [False, False]  # the same certificate, predicate and key
        assert len(reg.referrers("team/train", digest, artifact_type=MEDIA_TYPE).descriptors) == 2
        report = fetch_verified(f"{host}/team/train:1", policy=trust(signer), client=client)
        assert report.digest == digest and report.refused == ()
        assert [c.id for c in report.certificates] == [certificate.id]
        assert {v.predicate_type for v in report.verified} == {CERTIFICATE, TEST_RESULT}


def test_never_signs_a_certificate_onto_another_image(signer: CryptoSigner) -> None:
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        other = Certificate(cert(image_id="sha256:" + "cd" * 32))
        with pytest.raises(
            CertificateRefusedError, match="refusing to sign a certificate onto another image"
        ):
            attach_certificates(
                reg, ref, digest=digest, image_id=other.image.id, certificates=[other], signer=signer
            )
        with pytest.raises(CertificateRefusedError, match="is for image"):
            attach_certificates(
                reg, ref, digest=digest, image_id=image_id, certificates=[other], signer=signer
            )
        # An image ID that shares the short ID (its first 12 digits) is another image all the same.
        twin = image_id[:19] + ("0" if image_id[19] != "0" else "1") + image_id[20:]
        alike = Certificate(cert(image_id=twin))
        with pytest.raises(CertificateRefusedError, match="is for image"):
            attach_certificates(
                reg, ref, digest=digest, image_id=image_id, certificates=[alike], signer=signer
            )


def test_a_signed_statement_names_the_registry_and_repository_a_scoped_key_is_trusted_for(
    signer: CryptoSigner,
) -> None:
    # A policy's patterns name registry/repository (docs/trust.md): the statement's subjects must
    # name the same, or a key trusted for this registry's team/* holds for nothing it signed.
    with fake_registry() as (host, _state):
        reg = client(host)
        *_, certificate = _attached(reg, host, signer)
        scoped = TrustPolicy(
            keys=(TrustedKey(name="ci", key=signer.public_key, repositories=(f"{host}/team/*",)),), source="t"
        )
        report = fetch_verified(f"{host}/team/train:1", policy=scoped, client=client)
        assert report.refused == () and [c.id for c in report.certificates] == [certificate.id]
        assert {name for v in report.verified for name in v.subject_names} == {f"{host}/team/train"}


def test_the_digest_given_is_verified_against_even_for_a_reference_with_a_digest(
    signer: CryptoSigner,
) -> None:
    """fetch_verified's `digest` is the image actually pulled: it wins over a digest the reference
    names (a tag moved, or the pull resolved to another platform's manifest)."""
    with fake_registry() as (host, _state):
        reg = client(host)
        named = {}
        for tag in ("1", "2"):
            digest, image_id = push_image(reg, "team/train", tag)
            certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
            attach_certificates(
                reg,
                parse_reference(f"{host}/team/train:{tag}"),
                digest=digest,
                image_id=image_id,
                certificates=[certificate],
                signer=signer,
            )
            named[tag] = (digest, certificate.id)
        report = fetch_verified(
            f"{host}/team/train@{named['1'][0]}", policy=trust(signer), digest=named["2"][0], client=client
        )
        assert report.digest == named["2"][0]
        assert [c.id for c in report.certificates] == [named["2"][1]]


def _attached(reg: RegistryClient, host: str, signer: CryptoSigner) -> tuple[str, str, Any, Certificate]:
    """team/train:1 pushed to the fake registry with its CPU certificate attached, signed by
    `signer`: (manifest digest, image ID, reference, certificate)."""
    digest, image_id = push_image(reg, "team/train", "1")
    certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
    ref = parse_reference(f"{host}/team/train:1")
    attach_certificates(reg, ref, digest=digest, image_id=image_id, certificates=[certificate], signer=signer)
    return digest, image_id, ref, certificate


def hostile(*, rewrite: Callable[[list[Any]], Any] | None = None, blob: bytes | None = None) -> Any:
    """A `client` for fetch_verified: the fake registry's, with each manifest's layers replaced by
    `rewrite(layers)` (a hostile registry's referrers) and/or `blob` served as every referrer's
    envelope (a statement signed elsewhere and pushed beside the image by whoever can push)."""

    class Hostile:
        def __init__(self, reg: RegistryClient) -> None:
            self.reg = reg

        def __getattr__(self, name: str) -> Any:
            return getattr(self.reg, name)

        def get_manifest(self, *a: Any, **kw: Any) -> Any:
            got = self.reg.get_manifest(*a, **kw)
            if rewrite is None:
                return got
            doc = got.json()
            doc["layers"] = rewrite(doc["layers"])
            return type("Got", (), {"json": lambda _self: doc})()

        def get_blob(self, *a: Any, **kw: Any) -> bytes:
            return self.reg.get_blob(*a, **kw) if blob is None else blob

    return lambda host: Hostile(client(host))


def extra_layer(layers: list[Any]) -> list[Any]:
    return [*layers, {**layers[0], "mediaType": "application/octet-stream"}]


def test_a_statement_is_verified_for_the_repository_and_digest_it_was_fetched_for(
    signer: CryptoSigner,
) -> None:
    """A key trusted for team/other only signs a statement about team/other (at this image's
    digest) and pushes it beside team/train's image: fetched for team/train it is refused, though
    its signature holds for the repository it names. And a statement about another digest of
    team/train is refused for this one (an attestation copied from another image)."""
    with fake_registry() as (host, _state):
        digest, image_id, ref, certificate = _attached(client(host), host, signer)
        other_repo = ImageSubject(repository=f"{host}/team/other", manifest_digest=digest, image_id=image_id)
        raw = sign_statement(certificate_statements(certificate, other_repo)[0], signer)
        scoped = TrustPolicy(
            keys=(TrustedKey(name="ci", key=signer.public_key, repositories=(f"{host}/team/other",)),)
        )
        report = fetch_verified(ref, policy=scoped, client=hostile(blob=raw))
        assert report.verified == () and {r.reason for r in report.refused} == {"untrusted-key"}
        other_digest = "sha256:" + "77" * 32
        copied = ImageSubject(repository=ref.name, manifest_digest=other_digest, image_id=image_id)
        raw = sign_statement(certificate_statements(certificate, copied)[0], signer)
        report = fetch_verified(ref, policy=trust(signer), client=hostile(blob=raw))
        assert report.verified == () and {r.reason for r in report.refused} == {"subject-mismatch"}


def test_a_referrer_of_more_than_one_layer_is_refused_as_malformed(signer: CryptoSigner) -> None:
    """A referrer is one DSSE envelope layer: a manifest with another layer beside it is no
    attestation of ours, whatever its first layer holds."""

    with fake_registry() as (host, _state):
        reg = client(host)
        _digest, _image_id, ref, _certificate = _attached(reg, host, signer)
        assert len(fetch_verified(ref, policy=trust(signer), client=client).verified) == 2  # as attached
        report = fetch_verified(ref, policy=trust(signer), client=hostile(rewrite=extra_layer))
        assert report.verified == () and len(report.refused) == 2
        assert {r.reason for r in report.refused} == {"malformed"}
        assert all("not one DSSE envelope layer" in r.message for r in report.refused)


def _info(host: str, digest: str, image_id: str) -> ImageInfo:
    return ImageInfo(
        id=image_id, tags=(f"{host}/team/train:1",), repo_digests=(f"{host}/team/train@{digest}",)
    )


def test_finder_fetches_caches_and_verifies_the_cache_again(signer: CryptoSigner, tmp_path: Path) -> None:
    store = CertStore(tmp_path / "b.sqlite")  # "machine B": nothing local
    lines: list[str] = []
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id, _ref, certificate = _attached(reg, host, signer)
        policy = trust(signer)
        find = certificate_finder(
            f"{host}/team/train:1",
            store=store,
            policy=lambda: policy,
            fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
            say=lines.append,
        )
        got = find(_info(host, digest, image_id))
        assert [c.content_hash for c in got] == [certificate.content_hash]
        assert "cached in the store" in lines[-1]
        assert [r.origin for r in store.list(image=digest)] == ["attestation"]
    # the registry is gone: the cache is verified again, offline
    assert [c.content_hash for c in find(_info(host, digest, image_id))] == [certificate.content_hash]
    assert "verified again" in lines[-1]
    # the key is no longer trusted: the cache does not hold, and the registry cannot be reached
    policy = TrustPolicy(keys=(), source="emptied policy")
    with pytest.raises(RefusedError) as info:
        find(_info(host, digest, image_id))
    assert [r.reason for r in info.value.refusals] == ["unavailable"]
    assert info.value.exit_code == 12


def test_finder_refuses_each_attestation_with_its_reason(signer: CryptoSigner, tmp_path: Path) -> None:
    attacker = load_signer(generate_key("attacker", directory=tmp_path / "other"))
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        forged = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        attach_certificates(
            reg, ref, digest=digest, image_id=image_id, certificates=[forged], signer=attacker
        )
        find = certificate_finder(
            f"{host}/team/train:1",
            store=CertStore(tmp_path / "b.sqlite"),
            policy=lambda: trust(signer),
            fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
        )
        with pytest.raises(RefusedError, match=r"\[untrusted-key\]") as info:
            find(_info(host, digest, image_id))
        assert {r.reason for r in info.value.refusals} == {"untrusted-key"}
        bare_digest, bare_id = push_image(reg, "team/train", "2")
        with pytest.raises(RefusedError, match="has no attestations") as none:
            find(_info(host, bare_digest, bare_id))
        assert none.value.refusals[0].reason == "no-certificate"


def test_finder_without_registry_digest_finds_nothing(tmp_path: Path) -> None:
    find = certificate_finder(
        "team/train:1", store=CertStore(tmp_path / "s.sqlite"), policy=lambda: trust_none()
    )
    assert find(ImageInfo(id="sha256:" + "ee" * 32, tags=("team/train:1",), repo_digests=())) == []


def trust_none() -> TrustPolicy:
    return TrustPolicy(keys=())


def test_push_checks_everything_before_pushing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    image_id = "sha256:" + "ab" * 32
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    eng = FakeEngine(images={"reg.lan/team/train:1": info, image_id: info}, push_digest="sha256:" + "12" * 32)
    store = CertStore(tmp_path / "s.sqlite")
    kw: dict[str, Any] = {"engine": eng, "store": store}
    with pytest.raises(CertificateRefusedError, match="no certificate for image"):
        push_attested("reg.lan/team/train:1", attest=True, **kw)
    store.add(Certificate(cert(image_id=image_id)))
    with pytest.raises(SigningKeyError, match="no signing key"):
        push_attested("reg.lan/team/train:1", attest=True, **kw)
    generate_key("ci", passphrase=b"pw")
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    with pytest.raises(SigningKeyError, match="no passphrase was given"):
        push_attested("reg.lan/team/train:1", attest=True, **kw)
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == []  # nothing left the machine
    out = push_attested("reg.lan/team/train:1", to="reg.lan/team/train:2", **kw)  # no --attest
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == [
        ("tag", (image_id, "reg.lan/team/train:2")),
        ("push", "reg.lan/team/train:2"),
    ]
    assert out.reference == f"reg.lan/team/train@{eng.push_digest}"
    assert [r.image_id for r in store.list(image=eng.push_digest)] == [image_id]  # keyed by the digest


def test_a_cached_attestation_holds_only_for_a_repository_its_key_is_trusted_for(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    """hostile-inputs D16: an attestation cached while running repo A was accepted for repo B
    (same digest), although the policy trusts the key for A only."""
    store = CertStore(tmp_path / "b.sqlite")
    lines: list[str] = []
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id, _ref, certificate = _attached(reg, host, signer)
        scoped = TrustPolicy(
            keys=(TrustedKey(name="ci", key=signer.public_key, repositories=(f"{host}/team/*",)),)
        )
        policy = scoped

        def finder(image: str) -> Any:
            return certificate_finder(
                image,
                store=store,
                policy=lambda: policy,
                fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
                say=lines.append,
            )

        assert [c.id for c in finder(f"{host}/team/train:1")(_info(host, digest, image_id))] == [
            certificate.id
        ]
        outside = ImageInfo(
            id=image_id, tags=(f"{host}/outside/train:1",), repo_digests=(f"{host}/outside/train@{digest}",)
        )
        lines.clear()
        with pytest.raises(RefusedError) as refused:
            finder(f"{host}/outside/train:1")(outside)
        assert not [line for line in lines if "verified again" in line]
        assert [r.reason for r in refused.value.refusals] == ["no-certificate"]  # outside has none attached
        policy = TrustPolicy(keys=(TrustedKey(name="ci", key=signer.public_key),))  # now trusted everywhere
        assert [c.id for c in finder(f"{host}/outside/train:1")(outside)] == [certificate.id]
        assert "cached attestation(s) of " + f"{host}/outside/train" in lines[-1]


def test_a_local_tag_or_id_is_never_looked_up_in_a_registry(signer: CryptoSigner, tmp_path: Path) -> None:
    """hostile-inputs D16: `run envbuilder-test/debian:bookworm` fetched attestations from a registry
    the user never named, because the image (same ID) had been pushed there under another name."""
    store = CertStore(tmp_path / "b.sqlite")
    with fake_registry() as (host, state):
        reg = client(host)
        digest, image_id, _ref, certificate = _attached(reg, host, signer)
        info = ImageInfo(
            id=image_id,
            tags=("envbuilder-test/debian:bookworm", f"{host}/team/train:1"),
            repo_digests=(f"{host}/team/train@{digest}",),
        )
        asked = len(state.requests)
        for image in ("envbuilder-test/debian:bookworm", image_id, image_id[7:19]):
            find = certificate_finder(
                image,
                store=store,
                policy=lambda: trust(signer),
                fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
            )
            with pytest.raises(RefusedError) as refused:
                find(info)
            assert [r.reason for r in refused.value.refusals] == ["no-certificate"]
            assert f"envbuilder run {host}/team/train@{digest}" in str(refused.value.hint)
        assert len(state.requests) == asked  # the registry was not asked
        by_reference = certificate_finder(
            f"{host}/team/train:1",
            store=store,
            policy=lambda: trust(signer),
            fetch=lambda *a, **kw: fetch_verified(*a, client=client, **kw),
        )
        assert [c.id for c in by_reference(info)] == [certificate.id]


def _forged(tmp_path: Path, image_id: str) -> Path:
    """hostile-inputs D4: a real certificate pointed at another image and re-sealed."""
    doc = cert("certified-cpu-only", gpus=())
    doc["image"]["id"] = image_id
    for key in ("content_hash", "section_hashes"):
        doc.pop(key)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(seal(doc)))
    return path


def test_an_unsigned_imported_certificate_is_used_only_with_trust_imported(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    image_id = "sha256:" + "ee" * 32
    info = ImageInfo(id=image_id, tags=("hostile/injected:1",), repo_digests=())
    store = CertStore(tmp_path / "s.sqlite")
    done = import_certificate(_forged(tmp_path, image_id), store=store, policy=lambda: trust_none())
    assert done.signed_by is None and store.origin_of(done.id) == "imported"
    find = certificate_finder("hostile/injected:1", store=store, policy=lambda: trust(signer))
    with pytest.raises(RefusedError) as refused:
        find(info)
    assert [r.reason for r in refused.value.refusals] == ["imported-unsigned"]
    assert "--trust-imported" in str(refused.value.hint) and refused.value.exit_code == 12
    lines: list[str] = []
    trusting = certificate_finder(
        "hostile/injected:1", store=store, policy=lambda: trust(signer), trust_imported=True, say=lines.append
    )
    assert [c.id for c in trusting(info)] == [done.id]
    assert "unsigned (--trust-imported)" in lines[-1]


def test_a_signed_imported_certificate_is_verified_at_import_and_at_each_use(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    image_id = "sha256:" + "ee" * 32
    info = ImageInfo(id=image_id, tags=("train:1",), repo_digests=())  # `docker load`ed: no registry
    subject = ImageSubject(
        repository="reg.example/team/train", manifest_digest="sha256:" + "11" * 32, image_id=image_id
    )
    certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
    cert_statement, result_statement = certificate_statements(certificate, subject)
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(cert_statement, signer))
    store = CertStore(tmp_path / "s.sqlite")
    attacker = load_signer(generate_key("attacker", directory=tmp_path / "other"))
    with pytest.raises(CertificateRefusedError, match=r"\[untrusted-key\]"):
        import_certificate(
            path,
            store=store,
            policy=lambda: TrustPolicy(keys=(TrustedKey(name="a", key=attacker.public_key),)),
        )
    assert store.list() == []
    done = import_certificate(path, store=store, policy=lambda: trust(signer))
    assert done.signed_by is not None and done.signed_by.key_name == "ci"
    assert store.origin_of(done.id) == "imported" and len(store.envelopes(done.id)) == 1
    policy = trust(signer)
    find = certificate_finder("train:1", store=store, policy=lambda: policy)
    assert [c.id for c in find(info)] == [certificate.id]  # no --trust-imported needed
    policy = trust_none()  # the key was removed from the policy: refused at the next use
    with pytest.raises(RefusedError) as refused:
        find(info)
    assert [r.reason for r in refused.value.refusals] == ["untrusted-key"]
    result = tmp_path / "result.json"
    result.write_bytes(sign_statement(result_statement, signer))
    with pytest.raises(CertificateRefusedError, match="not a certificate"):
        import_certificate(result, store=CertStore(tmp_path / "t.sqlite"), policy=lambda: trust(signer))


def test_a_signed_certificate_from_2099_is_refused_at_import(signer: CryptoSigner, tmp_path: Path) -> None:
    """hostile-inputs D10, on the import path (a max_age never expires it)."""
    image_id = "sha256:" + "ee" * 32
    subject = ImageSubject(
        repository="reg.example/team/train", manifest_digest="sha256:" + "11" * 32, image_id=image_id
    )
    future = Certificate(
        cert("certified-cpu-only", gpus=(), image_id=image_id, issued_at="2099-01-01T00:00:00Z")
    )
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(certificate_statements(future, subject)[0], signer))
    store = CertStore(tmp_path / "s.sqlite")
    with pytest.raises(CertificateRefusedError, match=r"\[future-issued\]"):
        import_certificate(path, store=store, policy=lambda: trust(signer).with_max_age(86400))
    assert store.list() == []


def test_trust_imported_never_overrides_a_signature_that_no_longer_holds(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    """Set G's survivor G13 (h13): --trust-imported is for unsigned files; a signed imported
    certificate whose key left the trust policy stays refused with it."""
    image_id = "sha256:" + "ee" * 32
    info = ImageInfo(id=image_id, tags=("train:1",), repo_digests=())
    subject = ImageSubject(
        repository="reg.example/team/train", manifest_digest="sha256:" + "11" * 32, image_id=image_id
    )
    certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
    path = tmp_path / "signed.json"
    path.write_bytes(sign_statement(certificate_statements(certificate, subject)[0], signer))
    store = CertStore(tmp_path / "s.sqlite")
    import_certificate(path, store=store, policy=lambda: trust(signer))
    trusting = certificate_finder("train:1", store=store, policy=trust_none, trust_imported=True)
    with pytest.raises(RefusedError) as refused:
        trusting(info)
    assert [r.reason for r in refused.value.refusals] == ["untrusted-key"]
    still = certificate_finder("train:1", store=store, policy=lambda: trust(signer), trust_imported=True)
    assert [c.id for c in still(info)] == [certificate.id]


# --------------------------------------------------------------------------- set H's survivors (h13)


def _unsigned(tmp_path: Path, store: CertStore, image_id: str, issued_at: str) -> str:
    path = tmp_path / f"{issued_at[:10]}.json"
    path.write_text(json.dumps(cert("certified-cpu-only", gpus=(), image_id=image_id, issued_at=issued_at)))
    return import_certificate(path, store=store, policy=lambda: trust_none()).id


@pytest.mark.parametrize("older_first", [True, False])
def test_imported_certificates_come_newest_first_whatever_the_store_order(
    tmp_path: Path, older_first: bool
) -> None:
    image_id = "sha256:" + "ee" * 32
    store = CertStore(tmp_path / "s.sqlite")
    dates = ["2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"]
    ids = {d: _unsigned(tmp_path, store, image_id, d) for d in (dates if older_first else dates[::-1])}
    find = certificate_finder("train:1", store=store, policy=trust_none, trust_imported=True)
    got = find(ImageInfo(id=image_id, tags=("train:1",), repo_digests=()))
    assert [c.id for c in got] == [ids[dates[1]], ids[dates[0]]]


def test_the_imported_refusals_are_kept_when_the_registry_refuses_too(tmp_path: Path) -> None:
    from envbuilder.errors import RegistryError

    image_id = "sha256:" + "ee" * 32
    store = CertStore(tmp_path / "s.sqlite")
    _unsigned(tmp_path, store, image_id, "2026-12-01T00:00:00Z")

    def down(*_a: Any, **_kw: Any) -> Any:
        raise RegistryError("connection refused")

    info = ImageInfo(id=image_id, tags=(), repo_digests=("reg.example/team/train@sha256:" + "11" * 32,))
    find = certificate_finder("reg.example/team/train:1", store=store, policy=trust_none, fetch=down)
    with pytest.raises(RefusedError) as refused:
        find(info)
    assert [r.reason for r in refused.value.refusals] == ["imported-unsigned", "unavailable"]


def test_a_name_that_is_no_reference_asks_no_registry() -> None:
    from envbuilder.run.certificates import registry_reference

    digest = "sha256:" + "11" * 32
    info = ImageInfo(id="sha256:" + "ee" * 32, tags=(), repo_digests=(f"reg.example/team/train@{digest}",))
    assert registry_reference("Team/Train:1", info) is None  # upper case: no reference, no error


@pytest.mark.parametrize("named", ["reg.example/other/train:1", "other.example/team/train:1", "train:1"])
def test_a_registry_digest_is_used_only_for_the_repository_named(named: str) -> None:
    from envbuilder.run.certificates import registry_reference

    digest = "sha256:" + "11" * 32
    info = ImageInfo(id="sha256:" + "ee" * 32, tags=(), repo_digests=(f"reg.example/team/train@{digest}",))
    assert registry_reference(named, info) is None
    found = registry_reference("reg.example/team/train:1", info)
    assert found is not None and found[0].name == "reg.example/team/train" and found[1] == digest


def test_an_imported_envelope_holds_only_for_the_image_it_was_signed_for(
    signer: CryptoSigner, tmp_path: Path
) -> None:
    """Each use verifies an imported envelope again for the image being run: an envelope of
    another image kept under this certificate (a store edited, rows mixed up) is refused, never
    its certificate handed to run as this image's."""
    ours, theirs = "sha256:" + "ee" * 32, "sha256:" + "dd" * 32
    store = CertStore(tmp_path / "s.sqlite")
    envelopes = {}
    for image_id, manifest in ((ours, "11"), (theirs, "22")):
        subject = ImageSubject(
            repository="reg.example/team/train", manifest_digest="sha256:" + manifest * 32, image_id=image_id
        )
        certificate = Certificate(cert("certified-cpu-only", gpus=(), image_id=image_id))
        path = tmp_path / f"{manifest}.json"
        path.write_bytes(sign_statement(certificate_statements(certificate, subject)[0], signer))
        envelopes[image_id] = path.read_text()
        if image_id == ours:
            done = import_certificate(path, store=store, policy=lambda: trust(signer))
    info = ImageInfo(id=ours, tags=("train:1",), repo_digests=())
    find = certificate_finder("train:1", store=store, policy=lambda: trust(signer))
    assert [c.image.id for c in find(info)] == [ours]
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE attestations SET envelope = ? WHERE cert_id = ?", (envelopes[theirs], done.id))
    with pytest.raises(RefusedError) as refused:
        find(info)
    assert [r.reason for r in refused.value.refusals] == ["subject-mismatch"]


# --------------------------------------------------------------------------- --auto attest (2026-12-06)


def test_a_reference_by_digest_is_verified_against_that_digest_without_asking_for_its_manifest(
    signer: CryptoSigner,
) -> None:
    with fake_registry() as (host, state):
        reg = client(host)
        digest, _image_id, _ref, certificate = _attached(reg, host, signer)
        del state.requests[:]
        report = fetch_verified(f"{host}/team/train@{digest}", policy=trust(signer), client=client)
        assert report.digest == digest and [c.id for c in report.certificates] == [certificate.id]
        assert ("GET", f"/v2/team/train/manifests/{digest}") not in state.requests


@pytest.mark.parametrize(
    "odd",
    [
        lambda _ls: None,
        lambda ls: {"0": ls[0]},
        lambda _ls: "x",
        lambda ls: [{**ls[0], "mediaType": "text/plain"}],
        lambda ls: [ls],
    ],
    ids=["missing", "an-object", "a-string", "another-media-type", "a-list-in-a-list"],
)
def test_a_referrer_that_is_not_one_dsse_layer_is_refused_as_malformed(
    signer: CryptoSigner, odd: Any
) -> None:
    """Layers that are no list (never read as one), or one layer of another media type (never
    verified, even where its blob is an envelope): `malformed`."""

    with fake_registry() as (host, _state):
        _digest, _image_id, ref, _certificate = _attached(client(host), host, signer)
        report = fetch_verified(ref, policy=trust(signer), client=hostile(rewrite=odd))
        assert report.verified == () and {r.reason for r in report.refused} == {"malformed"}


def test_the_signer_of_a_certificate_is_the_one_that_signed_that_certificate() -> None:
    """verify and `fleet` name each certificate's signer: the attestation of that certificate
    (its whole ID), past an attestation of no certificate and another's of a like ID."""
    from envbuilder.attest.discovery import AttestationReport
    from envbuilder.attest.envelope import Verified

    first = Certificate(cert("certified-cpu-only", gpus=()))
    like = Certificate({**first.data, "content_hash": "sha256:" + first.id[:12] + "0" * 52})
    assert like.id != first.id and like.id[:12] == first.id[:12]

    def signed(c: Certificate | None, key: str) -> Verified:
        return Verified(
            predicate_type=CERTIFICATE if c is not None else TEST_RESULT,
            predicate={},
            keyid=key,
            key_name=key,
            envelope_digest="sha256:" + "e" * 64,
            subject_digests=(),
            certificate=c,
            envelope=b"",
        )

    report = AttestationReport(
        reference="reg.example/team/train:1",
        repository="reg.example/team/train",
        digest="sha256:" + "d" * 64,
        via="referrers",
        verified=(signed(None, "tests"), signed(first, "ci"), signed(like, "release")),
        refused=(),
    )
    assert report.signer_of(like).key_name == "release"
    assert report.signer_of(first).key_name == "ci"


@pytest.mark.parametrize("api", [False, True], ids=["fallback-tag", "referrers-api"])
def test_another_kind_of_artifact_attached_to_the_image_is_neither_verified_nor_refused(
    signer: CryptoSigner, api: bool
) -> None:
    """An SBOM (or any artifact of another type) beside the attestations is not one: only DSSE
    envelopes are asked for, so it is no `malformed` refusal."""
    with fake_registry(referrers_api=api) as (host, _state):
        reg = client(host)
        digest, _image_id, ref, _certificate = _attached(reg, host, signer)
        image = reg.resolve(ref).descriptor
        reg.attach("team/train", image, artifact_type="application/spdx+json", blob=b"{}")
        report = fetch_verified(ref, policy=trust(signer), client=client)
        assert len(report.verified) == 2 and report.refused == () and report.digest == digest


def test_each_referrer_is_asked_for_as_an_oci_manifest(signer: CryptoSigner) -> None:
    """A referrer is an OCI image manifest (one DSSE layer): it is asked for as that alone."""
    from envbuilder.registry import OCI_MANIFEST

    asked: list[Any] = []

    class Recording:
        def __init__(self, reg: RegistryClient) -> None:
            self.reg = reg

        def __getattr__(self, name: str) -> Any:
            return getattr(self.reg, name)

        def get_manifest(self, repo: str, ref: str, **kw: Any) -> Any:
            asked.append((ref, kw.get("accept")))
            return self.reg.get_manifest(repo, ref, **kw)

    with fake_registry() as (host, _state):
        reg = client(host)
        digest, _image_id, ref, _certificate = _attached(reg, host, signer)
        referrers = {
            d.digest for d in reg.referrers("team/train", digest, artifact_type=MEDIA_TYPE).descriptors
        }
        report = fetch_verified(ref, policy=trust(signer), client=lambda h: Recording(client(h)))  # type: ignore[arg-type,return-value]
    assert len(report.verified) == len(referrers) == 2
    assert [a for r, a in asked if r in referrers] == [(OCI_MANIFEST,)] * 2


def test_the_registrys_certificates_are_judged_by_the_clock_given(signer: CryptoSigner) -> None:
    from datetime import datetime, timezone

    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        later = Certificate(
            cert("certified-cpu-only", gpus=(), image_id=image_id, issued_at="2099-01-01T00:00:00Z")
        )
        ref = parse_reference(f"{host}/team/train:1")
        attach_certificates(reg, ref, digest=digest, image_id=image_id, certificates=[later], signer=signer)
        after = fetch_verified(
            ref, policy=trust(signer), client=client, now=datetime(2099, 1, 2, tzinfo=timezone.utc)
        )
        assert [c.id for c in after.certificates] == [later.id]
        before = fetch_verified(
            ref, policy=trust(signer), client=client, now=datetime(2098, 12, 1, tzinfo=timezone.utc)
        )
        assert before.certificates == [] and "future-issued" in {r.reason for r in before.refused}


def test_a_layer_whose_digest_is_no_string_is_refused_even_where_the_registry_serves_it(
    signer: CryptoSigner,
) -> None:
    """A hostile registry's referrer names its layer's digest as null and serves bytes at
    /blobs/None: a refusal (the bytes do not hash to "None"), never a crash."""

    with fake_registry() as (host, state):
        _digest, _image_id, ref, _certificate = _attached(client(host), host, signer)
        state.blobs["None"] = b"{}"
        report = fetch_verified(
            ref, policy=trust(signer), client=hostile(rewrite=lambda layers: [{**layers[0], "digest": None}])
        )
        assert report.verified == () and {r.reason for r in report.refused} == {"unavailable"}


# --------------------------------------------------------------------- --auto attest, eighth set (2026-12-06)


@pytest.mark.parametrize("api", [False, True], ids=["fallback-tag", "referrers-api"])
def test_a_report_names_the_reference_how_its_referrers_were_found_and_each_refused_one(
    signer: CryptoSigner, api: bool
) -> None:
    """`verify` prints the report's reference and `via`, and names each refusal by its referrer's
    digest (`verify --json` and `fleet` too): a malformed referrer and an unreadable one alike."""
    from envbuilder.registry.client import fallback_tag

    with fake_registry(referrers_api=api) as (host, _state):
        reg = client(host)
        digest, _image_id, ref, _certificate = _attached(reg, host, signer)
        found = reg.referrers("team/train", digest, artifact_type=MEDIA_TYPE)
        referrers = {d.digest for d in found.descriptors}
        report = fetch_verified(f"{host}/team/train:1", policy=trust(signer), client=client)
        assert report.reference == f"{host}/team/train:1"
        assert report.via == ("referrers API" if api else f"fallback tag {fallback_tag(digest)}")
        malformed = fetch_verified(ref, policy=trust(signer), client=hostile(rewrite=extra_layer))
        assert {r.envelope_digest for r in malformed.refused} == referrers and len(referrers) == 2
        gone = "sha256:" + "0" * 64  # a layer the registry does not hold
        unreadable = fetch_verified(
            ref, policy=trust(signer), client=hostile(rewrite=lambda layers: [{**layers[0], "digest": gone}])
        )
        assert {r.reason for r in unreadable.refused} == {"unavailable"}
        assert {r.envelope_digest for r in unreadable.refused} == referrers


def test_push_attest_signs_only_local_certificates_never_an_imported_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An imported certificate is another party's word: push --attest never signs it with your
    key (blind V33 listed every origin). With only an imported one, there is nothing to attest."""
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    generate_key("ci")  # a key that would sign: only the origin stops it
    image_id = "sha256:" + "ee" * 32
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    eng = FakeEngine(images={"reg.lan/team/train:1": info, image_id: info}, push_digest="sha256:" + "12" * 32)
    store = CertStore(tmp_path / "s.sqlite")
    done = import_certificate(_forged(tmp_path, image_id), store=store, policy=lambda: trust_none())
    assert store.origin_of(done.id) == "imported"

    def no_registry(host: str) -> RegistryClient:
        raise AssertionError(f"registry {host} contacted to attest an imported certificate")

    with pytest.raises(CertificateRefusedError, match="no certificate for image"):
        push_attested("reg.lan/team/train:1", attest=True, engine=eng, store=store, client=no_registry)
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == []  # nothing left the machine
