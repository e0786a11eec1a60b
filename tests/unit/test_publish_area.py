"""The publish area's rules (benchmarks/mutants.py, area "publish"), one row per condition:
`push` (what it pushes, keys and signs: every local certificate of the image and only those),
attaching certificates to a pushed image, the in-toto statements and their reading back, image
metadata labels, and image references (registry, port, tag, digest, Docker Hub's names).
Offline: the registry is tests/unit/fake_registry.py (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert_doc
from fake_engine import FakeEngine
from fake_registry import fake_registry, push_image
from render_cases import TORCH_BUNDLED_CU130, TORCH_CPU
from securesystemslib.signer import CryptoSigner

from envbuilder.attest.envelope import MEDIA_TYPE
from envbuilder.attest.keys import find_key, generate_key, load_signer
from envbuilder.attest.publish import Attached, attach_certificates, image_subject
from envbuilder.attest.push import push_image as push_attested
from envbuilder.attest.statement import (
    CERTIFICATE,
    CONFIG_MEDIA_TYPES,
    STATEMENT_TYPE,
    TEST_RESULT,
    ImageSubject,
    covers_digest,
    encode,
    parse_statement,
    result_predicate,
    statement,
)
from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.engine.credentials import Credentials
from envbuilder.errors import CertificateRefusedError, RegistryAuthError, RegistryError, UsageError
from envbuilder.hashing import sha256_hex
from envbuilder.image.metadata import (
    LABEL_ARCHS,
    LABEL_CERTIFY,
    LABEL_HARNESS,
    LABEL_LOCK_HASH,
    LABEL_MIN_DRIVER,
    LABEL_STACK,
    archs_label,
    image_env,
    read_metadata,
)
from envbuilder.imageref import check_registry, check_tag
from envbuilder.registry import Descriptor, Reference, RegistryClient, parse_reference
from envbuilder.registry.client import OCI_INDEX, OCI_MANIFEST


def anonymous(_registry: str) -> Credentials | None:
    return None


def client(host: str) -> RegistryClient:
    return RegistryClient(host, credentials=anonymous, backoff=0, retries=1)


def local_cert(image_id: str, issued_at: str) -> Certificate:
    return Certificate(cert_doc("certified-cpu-only", gpus=(), image_id=image_id, issued_at=issued_at))


# --------------------------------------------------------------------------- push


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENVBUILDER_KEY_PASSPHRASE", raising=False)
    return tmp_path


def test_push_attest_signs_keys_and_reports_every_certificate_of_the_image(data_dir: Path) -> None:
    """Two local certificates of the image: both are keyed by the digest, both attached (two
    statements each), and the outcome lists all four attestations (not the first only)."""
    generate_key("ci")
    with fake_registry() as (host, _state):
        digest, image_id = push_image(client(host), "team/train", "1")
        info = ImageInfo(id=image_id, tags=(), repo_digests=())
        eng = FakeEngine(images={f"{host}/team/train:1": info, image_id: info}, push_digest=digest)
        store = CertStore(data_dir / "s.sqlite")
        ids = {store.add(local_cert(image_id, f"2026-12-0{d}T00:00:00Z")) for d in (1, 2)}
        said: list[str] = []
        out = push_attested(
            f"{host}/team/train:1", attest=True, engine=eng, store=store, client=client, say=said.append
        )
    assert said[:2] == [
        f"push: signing with key ci ({find_key('ci').keyid[:12]})",
        f"push: {host}/team/train:1",
    ]
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == [("push", f"{host}/team/train:1")]  # no retag
    assert set(out.certificates) == ids
    assert {a.certificate for a in out.attached} == ids and len(out.attached) == 4
    doc = out.to_dict()
    assert len(doc["attestations"]) == 4
    assert {a["certificate"] for a in doc["attestations"]} == ids
    assert {r.id for r in store.list(image=digest)} == ids  # each keyed by the manifest digest


def test_push_of_an_image_not_here_or_to_a_digest_is_refused_before_anything_leaves(data_dir: Path) -> None:
    image_id = "sha256:" + "ab" * 32
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    eng = FakeEngine(images={"reg.lan/team/train:1": info, image_id: info})
    store = CertStore(data_dir / "s.sqlite")
    with pytest.raises(UsageError, match="not found locally"):
        push_attested("reg.lan/team/other:1", engine=eng, store=store)
    with pytest.raises(UsageError, match="cannot push to a digest"):
        push_attested(
            "reg.lan/team/train:1", to="reg.lan/team/train@sha256:" + "12" * 32, engine=eng, store=store
        )
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == []


def test_push_to_another_name_tags_the_image_so_first(data_dir: Path) -> None:
    image_id = "sha256:" + "ab" * 32
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    eng = FakeEngine(images={"reg.lan/team/train:1": info, image_id: info}, push_digest="sha256:" + "12" * 32)
    said: list[str] = []
    out = push_attested(
        "reg.lan/team/train:1",
        to="reg.lan/team/train:2",
        engine=eng,
        store=CertStore(data_dir / "s.sqlite"),
        say=said.append,
    )
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == [
        ("tag", (image_id, "reg.lan/team/train:2")),
        ("push", "reg.lan/team/train:2"),
    ]
    assert said == ["push: reg.lan/team/train:2"]
    assert out.to_dict() == {
        "reference": "reg.lan/team/train@sha256:" + "12" * 32,
        "repository": "reg.lan/team/train",
        "digest": "sha256:" + "12" * 32,
        "image_id": image_id,
        "certificates": [],
        "attestations": [],
    }


def test_push_attest_asks_the_registry_for_push_access_before_pushing(data_dir: Path) -> None:
    """An anonymous client may pull from this registry but not push: --attest finds out before
    the image is pushed (it asked for pull access only, the refusal came after the push)."""
    generate_key("ci")
    image_id = "sha256:" + "ab" * 32
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    with fake_registry(auth="bearer") as (host, _state):
        eng = FakeEngine(images={f"{host}/team/train:1": info, image_id: info})
        store = CertStore(data_dir / "s.sqlite")
        store.add(local_cert(image_id, "2026-12-01T00:00:00Z"))
        with pytest.raises(RegistryAuthError):
            push_attested(f"{host}/team/train:1", attest=True, engine=eng, store=store, client=client)
    assert [c for c in eng.calls if c[0] in ("tag", "push")] == []


@pytest.mark.parametrize(
    "other_id",
    ["sha256:" + "ab" * 31 + "02", "sha256:" + "ab" * 31 + "0100"],
    ids=["same-12-digits", "extends-the-id"],
)
def test_push_keys_only_certificates_of_that_very_image(data_dir: Path, other_id: str) -> None:
    """A certificate of another image whose ID shares the first 12 hex digits, or starts with
    this image's whole ID, found because it was once keyed by a digest equal to this image's ID,
    is not this image's certificate."""
    image_id = "sha256:" + "ab" * 31 + "01"
    info = ImageInfo(id=image_id, tags=(), repo_digests=())
    eng = FakeEngine(images={"reg.lan/team/train:1": info, image_id: info}, push_digest="sha256:" + "12" * 32)
    store = CertStore(data_dir / "s.sqlite")
    foreign = store.add(local_cert(other_id, "2026-12-01T00:00:00Z"))
    store.record_digest([foreign], "reg.lan/team/train", image_id)
    assert [r.id for r in store.list(image=image_id)] == [foreign]  # what the store's lookup finds
    out = push_attested("reg.lan/team/train:1", engine=eng, store=store)
    assert out.certificates == ()


# --------------------------------------------------------------------------- attach


@pytest.fixture
def signer(tmp_path: Path) -> CryptoSigner:
    return load_signer(generate_key("ci", directory=tmp_path / "keys"))


def put_image(reg: RegistryClient, repo: str, tag: str, config_media_type: str | None) -> tuple[str, str]:
    """An image whose manifest's config descriptor has this mediaType (None: the field is
    absent); returns (manifest digest, image id)."""
    cfg = reg.push_blob(repo, json.dumps({"os": "linux", "tag": tag}).encode(), CONFIG_MEDIA_TYPES[0])
    config = cfg.to_dict()
    if config_media_type is None:
        del config["mediaType"]
    else:
        config["mediaType"] = config_media_type
    body = json.dumps(
        {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": []}
    ).encode()
    digest, _ = reg.put_manifest(repo, tag, body, OCI_MANIFEST)
    return digest, cfg.digest


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (CONFIG_MEDIA_TYPES[0], CONFIG_MEDIA_TYPES[0]),  # OCI config: named as it is
        (CONFIG_MEDIA_TYPES[1], CONFIG_MEDIA_TYPES[1]),
        (None, CONFIG_MEDIA_TYPES[1]),  # no mediaType: Docker's config type
        ("", CONFIG_MEDIA_TYPES[1]),
    ],
)
def test_the_subject_names_the_config_media_type_the_manifest_gives(written: str | None, read: str) -> None:
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = put_image(reg, "team/train", "1", written)
        ref = parse_reference(f"{host}/team/train:1")
        subject, desc = image_subject(reg, ref, digest, image_id)
    assert subject.config_media_type == read
    assert (subject.repository, subject.manifest_digest, subject.image_id) == (ref.name, digest, image_id)
    assert subject.manifest_media_type == OCI_MANIFEST and desc.digest == digest


def test_the_subject_is_only_an_image_manifest_whose_config_is_that_very_image() -> None:
    """An index has no config; a config digest that differs from the image ID after its short ID,
    or that a short ID merely starts, is another image."""
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = put_image(reg, "team/train", "1", CONFIG_MEDIA_TYPES[0])
        ref = parse_reference(f"{host}/team/train:1")
        twin = image_id[:19] + ("0" if image_id[19] != "0" else "1") + image_id[20:]
        for other in (twin, image_id[:19], "sha256:" + "cd" * 32):
            with pytest.raises(
                CertificateRefusedError, match="refusing to sign a certificate onto another image"
            ):
                image_subject(reg, ref, digest, other)
        index = json.dumps(
            {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [{"digest": digest, "size": 1}]}
        ).encode()
        index_digest, _ = reg.put_manifest("team/train", "all", index, OCI_INDEX)
        with pytest.raises(CertificateRefusedError, match="only a single-platform image manifest"):
            image_subject(reg, ref, index_digest, image_id)


def _attach(
    reg: RegistryClient,
    ref: Reference,
    digest: str,
    image_id: str,
    certs: list[Certificate],
    signer: CryptoSigner,
    said: list[str] | None = None,
) -> list[Attached]:
    return attach_certificates(
        reg,
        ref,
        digest=digest,
        image_id=image_id,
        certificates=certs,
        signer=signer,
        say=(said.append if said is not None else lambda _line: None),
    )


def test_each_certificate_is_attached_once_as_two_statements(signer: CryptoSigner) -> None:
    """Two certificates: four new attestations (a certificate and a test result each), said by
    their short predicate type; attaching them again (with one more) attaches only the new one's
    two, the others are reported as before (new=False, the same descriptor)."""
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        one, two, three = (local_cert(image_id, f"2026-12-0{d}T00:00:00Z") for d in (1, 2, 3))
        said: list[str] = []
        first = _attach(reg, ref, digest, image_id, [one, two], signer, said)
        assert [(a.certificate, a.predicate_type, a.new) for a in first] == [
            (c.id, t, True) for c in (one, two) for t in (CERTIFICATE, TEST_RESULT)
        ]
        assert [line.split(" of ")[0] for line in said] == [
            "attest: certificate/v1",
            "attest: test-result/v0.1",
        ] * 2
        again = _attach(reg, ref, digest, image_id, [one, two, three], signer)
        assert [(a.certificate, a.predicate_type, a.new) for a in again] == [
            (c.id, t, c is three) for c in (one, two, three) for t in (CERTIFICATE, TEST_RESULT)
        ]
        assert [a.descriptor.digest for a in again[:4]] == [a.descriptor.digest for a in first]
        assert len(reg.referrers("team/train", digest, artifact_type=MEDIA_TYPE).descriptors) == 6
        assert [a.to_dict()["new"] for a in again] == [False] * 4 + [True] * 2


@pytest.mark.parametrize("suffix", ["00", ""], ids=["extends-the-id", "short-id"])
def test_a_certificate_of_another_image_is_never_attached(signer: CryptoSigner, suffix: str) -> None:
    with fake_registry() as (host, state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        other = local_cert(image_id + suffix if suffix else image_id[:19], "2026-12-01T00:00:00Z")
        len(state.manifests)
        with pytest.raises(CertificateRefusedError, match="is for image"):
            _attach(reg, ref, digest, image_id, [local_cert(image_id, "2026-12-02T00:00:00Z"), other], signer)
        # the first certificate's two statements, none of the other's
        assert len(reg.referrers("team/train", digest, artifact_type=MEDIA_TYPE).descriptors) == 2


class _RefusingAttach(RegistryClient):
    def attach(self, *args: Any, **kwargs: Any) -> Descriptor:
        raise RegistryError("the registry refused the upload")


def test_a_refused_attachment_says_which_certificate_it_was(signer: CryptoSigner) -> None:
    with fake_registry() as (host, _state):
        reg = client(host)
        digest, image_id = push_image(reg, "team/train", "1")
        ref = parse_reference(f"{host}/team/train:1")
        cert = local_cert(image_id, "2026-12-01T00:00:00Z")
        refusing = _RefusingAttach(host, credentials=anonymous, backoff=0, retries=1)
        with pytest.raises(
            RegistryError, match=f"attaching the attestation of certificate {cert.id[:12]} failed"
        ):
            _attach(refusing, ref, digest, image_id, [cert], signer)


# --------------------------------------------------------------------------- statements


def _certificate(
    verdict: str, steps: list[dict[str, str]], gates: list[dict[str, str]], **thresholds: Any
) -> Certificate:
    base = cert_doc(image_id="sha256:" + "ab" * 32)
    return build_certificate(
        image=base["image"],
        host=base["host"],
        run={},
        harness={"steps": steps, "gates": gates},
        thresholds=thresholds,
        verdict=verdict,
        verdict_reason="as the test says",
    )


def _steps(**statuses: str) -> list[dict[str, str]]:
    return [{"name": name, "status": status} for name, status in statuses.items()]


@pytest.mark.parametrize(
    ("verdict", "steps", "gates", "result", "passed", "warned", "failed"),
    [
        # every step and gate is listed under its status, not the first only; skipped ones nowhere
        (
            "certified",
            _steps(a="pass", b="pass", c="skip"),
            _steps(g1="pass", g2="fail"),
            "PASSED",
            ["a", "b", "gate:g1"],
            [],
            ["gate:g2"],
        ),
        ("certified", _steps(a="pass", b="warn"), [], "WARNED", ["a"], ["b"], []),  # a warned step
        ("certified", _steps(a="pass"), _steps(g1="skip", g2="warn"), "WARNED", ["a"], ["gate:g2"], []),
        ("certified-cpu-only", _steps(a="pass"), [], "WARNED", ["a"], [], []),  # no GPU certification
        ("certified-cpu-only", _steps(a="warn"), [], "WARNED", [], ["a"], []),
        ("failed", _steps(a="pass"), [], "FAILED", ["a"], [], []),  # the verdict decides
        ("failed", _steps(a="warn", b="fail"), [], "FAILED", [], ["a"], ["b"]),
    ],
)
def test_the_test_result_of_a_certificate(
    verdict: str,
    steps: list[dict[str, str]],
    gates: list[dict[str, str]],
    result: str,
    passed: list[str],
    warned: list[str],
    failed: list[str],
) -> None:
    pred = result_predicate(_certificate(verdict, steps, gates))
    assert (pred["result"], pred["passedTests"], pred["warnedTests"], pred["failedTests"]) == (
        result,
        passed,
        warned,
        failed,
    )


@pytest.mark.parametrize(
    ("thresholds", "name"),
    [
        ({"source_path": "perf/thresholds.yaml", "min_tflops": 1}, "perf/thresholds.yaml"),
        ({"min_tflops": 1}, "thresholds"),
        ({"source_path": "", "min_tflops": 1}, "thresholds"),
        ({"source_path": None}, "thresholds"),
        ({}, "thresholds"),
    ],
)
def test_the_test_result_names_the_thresholds_by_their_file(thresholds: dict[str, Any], name: str) -> None:
    cert = _certificate("certified", _steps(a="pass"), [], **thresholds)
    config = result_predicate(cert)["configuration"]
    assert config[1]["name"] == name
    assert config[1]["digest"] == {"sha256": sha256_hex(thresholds)}
    assert config[0]["digest"] == {"sha256": cert.content_hash.removeprefix("sha256:")}


MANIFEST, CONFIG = "sha256:" + "11" * 32, "sha256:" + "22" * 32


def _payload(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def _good(**over: Any) -> dict[str, Any]:
    doc = {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": "reg.lan/team/train", "digest": {"sha256": MANIFEST[7:]}},
            {"name": "reg.lan/team/train", "digest": {"sha256": CONFIG[7:]}},
        ],
        "predicateType": CERTIFICATE,
        "predicate": {"certificate": {}},
    }
    doc.update(over)
    return doc


def test_a_statement_reads_back_every_subject() -> None:
    parsed = parse_statement(_payload(_good()))
    assert parsed.subject_digests == (MANIFEST, CONFIG)
    assert parsed.subject_names == ("reg.lan/team/train",)
    assert (parsed.predicate_type, parsed.predicate) == (CERTIFICATE, {"certificate": {}})
    subject = ImageSubject(repository="reg.lan/team/train", manifest_digest=MANIFEST, image_id=CONFIG)
    made = parse_statement(encode(statement(subject, TEST_RESULT, {"result": "PASSED"})))
    assert made.subject_digests == (MANIFEST, CONFIG) and made.predicate_type == TEST_RESULT


_SUBJECT = {"name": "reg.lan/team/train", "digest": {"sha256": MANIFEST[7:]}}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{not json", "is not JSON"),
        (b"\xff\xfe", "is not JSON"),
        (_payload([_good()]), "not an in-toto Statement v1"),  # a list, not an object
        (_payload("text"), "not an in-toto Statement v1"),
        (_payload(_good(_type="https://in-toto.io/Statement/v0.1")), "not an in-toto Statement v1"),
        (_payload({k: v for k, v in _good().items() if k != "_type"}), "not an in-toto Statement v1"),
        (_payload({k: v for k, v in _good().items() if k != "subject"}), "has no subject"),
        (_payload(_good(subject=[])), "has no subject"),
        (_payload(_good(subject=_SUBJECT)), "has no subject"),  # one object, not a list
        (_payload(_good(subject="reg.lan/team/train")), "has no subject"),
        (_payload(_good(subject=[_SUBJECT, "reg.lan/x"])), "has no sha256 digest"),  # the 2nd
        (_payload(_good(subject=[_SUBJECT, {"name": "x"}])), "has no sha256 digest"),
        (_payload(_good(subject=[_SUBJECT, {"digest": None}])), "has no sha256 digest"),
        (_payload(_good(subject=[_SUBJECT, {"digest": ["sha256", "11"]}])), "has no sha256 digest"),
        (_payload(_good(subject=[_SUBJECT, {"digest": {"sha512": "11"}}])), "has no sha256 digest"),
        (_payload(_good(subject=[_SUBJECT, {"digest": {"sha256": 11}}])), "has no sha256 digest"),
        (_payload(_good(subject=[_SUBJECT, {"digest": {"sha256": None}}])), "has no sha256 digest"),
        (
            _payload({k: v for k, v in _good().items() if k != "predicateType"}),
            "no predicateType or predicate",
        ),
        (_payload(_good(predicateType=None)), "no predicateType or predicate"),
        (_payload(_good(predicateType=["x"])), "no predicateType or predicate"),
        (_payload({k: v for k, v in _good().items() if k != "predicate"}), "no predicateType or predicate"),
        (_payload(_good(predicate=None)), "no predicateType or predicate"),
        (_payload(_good(predicate=[{"certificate": {}}])), "no predicateType or predicate"),
        (_payload(_good(predicate="certificate")), "no predicateType or predicate"),
    ],
)
def test_a_payload_that_is_no_statement_is_refused_saying_why(payload: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_statement(payload)


@pytest.mark.parametrize(
    ("digests", "covered"),
    [
        ([MANIFEST], True),
        ([CONFIG], True),  # the 2nd subject
        (["sha256:" + "33" * 32, CONFIG], True),  # the 2nd digest asked for
        (["sha256:" + "33" * 32], False),
        ([MANIFEST[:19]], False),  # a prefix of a subject's digest is not it
        ([MANIFEST + "00"], False),
        ([MANIFEST[7:]], False),  # no algorithm
        ([], False),
    ],
)
def test_a_statement_covers_a_digest_only_of_one_of_its_subjects(digests: list[str], covered: bool) -> None:
    assert covers_digest(parse_statement(_payload(_good())), digests) is covered


# --------------------------------------------------------------------------- image metadata


def _image(labels: dict[str, str] | None = None, *, env: tuple[str, ...] = ()) -> ImageInfo:
    return ImageInfo(id="sha256:" + "a" * 64, tags=(), repo_digests=(), labels=labels or {}, env=env)


@pytest.mark.parametrize(
    ("sass", "ptx", "label"),
    [
        (("7.5", "9.0", "12.0"), ("12.0",), "sm_75,sm_90,sm_120,compute_120"),
        (("8.0",), ("8.0", "9.0"), "sm_80,compute_80,compute_90"),
        ((), ("9.0",), "compute_90"),
        ((), (), "none"),
    ],
)
def test_the_archs_label_lists_every_sass_then_every_ptx_target(
    sass: tuple[str, ...], ptx: tuple[str, ...], label: str
) -> None:
    stack = replace(TORCH_BUNDLED_CU130, sass=sass, ptx=ptx)
    assert archs_label(stack) == label
    meta = read_metadata(_image({LABEL_ARCHS: label}))
    assert meta.archs == tuple(a for a in label.split(",") if a != "none")


@pytest.mark.parametrize(
    ("env", "read"),
    [
        (("A=1", "B=2"), {"A": "1", "B": "2"}),  # every item, not the first only
        (("A=1", "A=2"), {"A": "2"}),  # a later KEY= wins
        (("OPTS=a=b=c",), {"OPTS": "a=b=c"}),  # only the first `=` splits
        (("EMPTY=", "BARE", "X=1"), {"EMPTY": "", "X": "1"}),  # an item without `=` is no variable
        ((), {}),
    ],
)
def test_the_image_environment_as_docker_reads_it(env: tuple[str, ...], read: dict[str, str]) -> None:
    assert image_env(_image(env=env)) == read
    assert dict(read_metadata(_image(env=env)).env) == read


@pytest.mark.parametrize(
    ("label", "read"),
    [("580.65.06", "580.65.06"), ("none", None), ("", None), (None, None)],
)
def test_a_text_label_none_or_empty_reads_as_absent(label: str | None, read: str | None) -> None:
    labels = {} if label is None else {LABEL_MIN_DRIVER: label, LABEL_LOCK_HASH: label, LABEL_HARNESS: label}
    meta = read_metadata(_image(labels))
    assert (meta.min_driver, meta.lock_hash, meta.harness) == (read, read, read)


@pytest.mark.parametrize(
    ("archs", "read"),
    [("sm_90,compute_90", ("sm_90", "compute_90")), ("sm_90,,compute_90", ("sm_90", "compute_90")),
     ("none", ()), ("", ()), (None, ())],
)  # fmt: skip
def test_the_archs_label_reads_back_whole(archs: str | None, read: tuple[str, ...]) -> None:
    assert read_metadata(_image({} if archs is None else {LABEL_ARCHS: archs})).archs == read


@pytest.mark.parametrize(
    ("stack_label", "certify_label", "problems"),
    [
        (None, None, []),  # absent: no problem
        ("{not json", None, [f"label {LABEL_STACK} is not JSON"]),  # one problem, not a stack too
        ("[1, 2]", None, [f"label {LABEL_STACK} is not a JSON object"]),
        ('"text"', None, [f"label {LABEL_STACK} is not a JSON object"]),
        (None, "{not json", [f"label {LABEL_CERTIFY} is not JSON"]),
        (None, '["quick"]', [f"label {LABEL_CERTIFY} is not a JSON object"]),
        (
            None,
            '{"level": "slow"}',
            ["label io.envbuilder.certify: field 'certify.level': value 'slow' refused: unknown level"],
        ),  # not the settings
        (None, "null", [f"label {LABEL_CERTIFY} is not a JSON object"]),
        ("null", None, [f"label {LABEL_STACK} is not a JSON object"]),
    ],
)
def test_a_label_that_cannot_be_read_is_one_problem_kept_as_evidence(
    stack_label: str | None, certify_label: str | None, problems: list[str]
) -> None:
    labels = {LABEL_STACK: stack_label, LABEL_CERTIFY: certify_label}
    meta = read_metadata(_image({k: v for k, v in labels.items() if v is not None}))
    assert [p.split(" (")[0] for p in meta.problems] == problems
    assert meta.stack is None and meta.certify is None and meta.framework is None
    assert meta.stack_record == (None if stack_label is None else {"unparsed": stack_label})


def test_labels_that_are_json_objects_are_read() -> None:
    record = TORCH_CPU.to_dict()
    meta = read_metadata(
        _image({LABEL_STACK: json.dumps(record), LABEL_CERTIFY: json.dumps({"level": "quick"})})
    )
    assert meta.problems == ()
    assert meta.stack == TORCH_CPU and meta.stack_record == record and meta.framework == TORCH_CPU.framework
    assert meta.certify is not None and meta.certify.level == "quick"


# --------------------------------------------------------------------------- references

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    "text",
    [
        "train",
        "my.image",  # a `.` without a `/` is a name, not a registry
        "my_team/train",  # `_` is no host character: a path, not a registry
        "team/train:v1",
        "team/a.b/c-d/e__f:1.0-x",
        "localhost/a",
        "localhost:5000/a/b_c:1.0-x",
        "localhost:5000/a",  # the `:` of a port is no tag's
        "127.0.0.1:5000/team/train",
        "127.0.0.1:5000/team/train:1",
        "Reg.Example.com/a",  # a registry may have capitals, a path may not
        "my-reg.example.com/t__x:_v",
        "a" * 255 + ":v1",  # 255 counts the name, not its tag
        "reg.lan/" + "a" * 247,  # 255 with the registry
    ],
)
def test_check_tag_takes_what_docker_takes(text: str) -> None:
    assert check_tag(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "train:",
        ":v1",
        "a//b",
        "-a/b",
        "Train",
        "team/Train",  # the 2nd component
        "team/train/X:1",  # the 3rd
        "reg.lan/A",
        "reg-.example:5000/a",  # a label ending in `-`
        "reg_lan.example/a",  # `_` in a registry
        "a/b:" + "v" * 129,
        "a/b:-v",
        "a/b:v 1",
        "a/b@sha256:",
        "a" * 256,
        "reg.lan/" + "a" * 248,
        "team/train:v1\n",
    ],
)
def test_check_tag_refuses_what_docker_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="is not a valid image reference"):
        check_tag(text)


@pytest.mark.parametrize("check", [check_tag, check_registry])
@pytest.mark.parametrize(("length", "cut"), [(79, False), (80, False), (81, True)])
def test_a_refused_reference_is_shown_cut_at_80_characters(check: Any, length: int, cut: bool) -> None:
    text = "_" * length
    with pytest.raises(UsageError) as refused:
        check(text)
    shown = ascii(text[:80]) + ("..." if cut else "")
    assert f" {shown} is not a" in refused.value.message
    assert ("..." in refused.value.message) is cut


@pytest.mark.parametrize(
    "text",
    ["127.0.0.1:5000", "127.0.0.1:5000/team", "reg.lan/team/sub", "Reg.Lan:5000", "localhost", "a" * 255],
)
def test_check_registry_takes_a_host_and_a_prefix(text: str) -> None:
    assert check_registry(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "reg_lan",
        "reg-.lan",
        "127.0.0.1:5000/Team",
        "127.0.0.1:5000/team/Sub",  # the 2nd component of the prefix
        "127.0.0.1:5000/team//sub",
        "a" * 256,
        "127.0.0.1:5000/team:1",
    ],
)
def test_check_registry_refuses_what_is_no_registry(text: str) -> None:
    with pytest.raises(UsageError, match="is not a registry address"):
        check_registry(text)


@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("debian", "docker.io", "library/debian", "latest", None),
        ("my.image", "docker.io", "library/my.image", "latest", None),
        ("my_team/train", "docker.io", "my_team/train", "latest", None),
        ("team/train:1", "docker.io", "team/train", "1", None),
        ("docker.io/debian", "docker.io", "library/debian", "latest", None),
        ("index.docker.io/debian:12", "docker.io", "library/debian", "12", None),
        ("registry-1.docker.io/team/x", "docker.io", "team/x", "latest", None),
        ("localhost/a", "localhost", "a", "latest", None),
        ("localhost:5000/a:1", "localhost:5000", "a", "1", None),
        ("reg.lan/debian", "reg.lan", "debian", "latest", None),  # `library/` is Docker Hub's alone
        ("Reg.Example.com/a/b", "Reg.Example.com", "a/b", "latest", None),
        ("[::1]:5000/a", "[::1]:5000", "a", "latest", None),
        ("reg.lan/a/b@" + DIGEST, "reg.lan", "a/b", None, DIGEST),
        ("reg.lan/a/b:1@" + DIGEST, "reg.lan", "a/b", "1", DIGEST),
        ("127.0.0.1:5000/team/train:v1.0", "127.0.0.1:5000", "team/train", "v1.0", None),
        ("  team/train:1\n", "docker.io", "team/train", "1", None),
    ],
)
def test_parse_reference_reads_as_docker_reads(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "the repository"),
        ("UPPER/case", "the repository"),
        ("team/Train", "the repository"),  # the 2nd component
        ("a//b", "the repository"),
        ("reg.lan/", "the repository"),
        ("a/b@sha256:xyz", "the digest"),
        ("a/b@sha256:" + "AB" * 32, "the digest"),
        ("a/b@" + DIGEST + "0", "the digest"),
        ("a/b@", "the digest"),
        ("a:-1", "the tag"),
        ("a:" + "v" * 129, "the tag"),
        ("reg:5000/a:b:c", "the repository 'a:b'"),
        ("reg_lan:5000/a", "is not a registry host"),
        ("reg.lan:port/a", "is not a registry host"),
    ],
)
def test_parse_reference_refuses_saying_which_part(text: str, why: str) -> None:
    with pytest.raises(UsageError, match="is not an image reference") as refused:
        parse_reference(text)
    assert why in refused.value.message


@pytest.mark.parametrize(
    ("ref", "api_host", "manifest_ref", "shown"),
    [
        (
            Reference("docker.io", "library/debian", "12"),
            "registry-1.docker.io",
            "12",
            "docker.io/library/debian:12",
        ),
        (Reference("reg.lan", "a/b", "1"), "reg.lan", "1", "reg.lan/a/b:1"),
        (Reference("reg.lan", "a/b", "1", DIGEST), "reg.lan", DIGEST, f"reg.lan/a/b:1@{DIGEST}"),
        (Reference("reg.lan", "a/b", None, DIGEST), "reg.lan", DIGEST, f"reg.lan/a/b@{DIGEST}"),
        (Reference("reg.lan:5000", "a"), "reg.lan:5000", "latest", "reg.lan:5000/a"),
    ],
)
def test_a_reference_names_its_host_and_manifest(
    ref: Reference, api_host: str, manifest_ref: str, shown: str
) -> None:
    assert (ref.api_host, ref.ref, str(ref)) == (api_host, manifest_ref, shown)
    assert ref.name == f"{ref.registry}/{ref.repository}"
    pinned = ref.with_digest("sha256:" + "cd" * 32)
    assert (pinned.digest, pinned.tag, pinned.name) == ("sha256:" + "cd" * 32, ref.tag, ref.name)
    assert ref.digest in (None, DIGEST)  # with_digest made a new reference


@pytest.mark.parametrize(
    "record",
    [
        {"id": "x"},
        {**TORCH_CPU.to_dict(), "platform": "linux/s390x"},
        {**TORCH_CPU.to_dict(), "packages": "torch"},
    ],
    ids=["missing-fields", "unknown-platform", "wrong-type"],
)
def test_a_stack_label_that_is_no_stack_is_a_problem_its_record_kept(record: dict[str, Any]) -> None:
    meta = read_metadata(_image({LABEL_STACK: json.dumps(record)}))
    assert meta.stack is None and meta.stack_record == record and meta.framework is None
    assert [p.split(" (")[0] for p in meta.problems] == [f"label {LABEL_STACK} is not a stack"]
