"""The certificate document: schema, content hash, host fingerprint, tamper detection."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from envbuilder.certify.certificate import (
    SCHEMA_VERSION,
    Certificate,
    build_certificate,
    host_fingerprint,
    verify_certificate,
)
from envbuilder.errors import CertificateRefusedError
from envbuilder.hashing import canonical_json

IMAGE_ID = "sha256:" + "cd" * 32
GPUS = [
    {"name": "NVIDIA H200", "uuid": "GPU-b", "cc": "9.0"},
    {"name": "NVIDIA H200", "uuid": "GPU-a", "cc": "9.0"},
]


def make(verdict: str = "certified", **over: Any) -> Certificate:
    kw: dict[str, Any] = {
        "image": {"id": IMAGE_ID, "ref": "img:1", "stack": {"id": "s", "cuda": "13.0"}, "lock_hash": None},
        "host": {"fingerprint": host_fingerprint("580.159.04", GPUS), "driver": "580.159.04", "gpus": GPUS,
                 "gpu_access": "devices"},
        "run": {"quick": False},
        "harness": {"kind": "result", "verdict": verdict, "steps": [{"name": "host", "status": "pass"}]},
        "thresholds": {"defaults": {"loss_drop_min": 0.2}},
        "verdict": verdict,
        "verdict_reason": "ok",
        "issued_at": "2026-11-30T00:00:00Z",
    }  # fmt: skip
    kw.update(over)
    return build_certificate(**kw)


def test_schema_and_content_hash_is_sha256_of_canonical_json_without_it() -> None:
    cert = make()
    doc = dict(cert.data)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == "envbuilder-certificate"
    assert {"image", "host", "harness", "thresholds", "verdict", "issued_at", "envbuilder_version"} <= set(
        doc
    )
    body = {k: v for k, v in doc.items() if k != "content_hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    assert doc["content_hash"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert cert.id == doc["content_hash"].removeprefix("sha256:")
    assert verify_certificate(cert) == [] and verify_certificate(cert, image_id=IMAGE_ID) == []


def test_round_trip_through_json_keeps_the_hash() -> None:
    cert = make()
    again = Certificate.from_json(cert.to_json(indent=2))
    assert verify_certificate(again) == [] and again.id == cert.id
    assert canonical_json(again.to_dict()) == canonical_json(cert.to_dict())


def test_fingerprint_ignores_gpu_order_and_changes_with_driver_or_gpu() -> None:
    fp = host_fingerprint("580.159.04", GPUS)
    assert fp == host_fingerprint("580.159.04", list(reversed(GPUS)))
    assert fp != host_fingerprint("580.160.01", GPUS)
    assert fp != host_fingerprint("580.159.04", GPUS[:1])
    assert host_fingerprint(None, []) == host_fingerprint(None, [])


@pytest.mark.parametrize(
    ("edit", "section"),
    [
        (lambda d: d["image"].update(id="sha256:" + "00" * 32), "image"),
        (lambda d: d.update(verdict="certified-cpu-only"), "verdict"),
        (lambda d: d["harness"]["steps"][0].update(status="fail"), "harness"),
        (lambda d: d["thresholds"]["defaults"].update(loss_drop_min=0.0), "thresholds"),
        (lambda d: d["host"]["gpus"].pop(), "host"),
    ],
)
def test_each_edit_is_detected_and_its_section_named(edit: Any, section: str) -> None:
    doc = copy.deepcopy(make().to_dict())
    edit(doc)
    problems = verify_certificate(doc)
    assert len(problems) == 1
    assert problems[0].startswith("content hash mismatch") and f"changed: {section}" in problems[0]


def test_edit_with_section_hash_also_rewritten_is_still_caught() -> None:
    from envbuilder.hashing import sha256_of

    doc = make().to_dict()
    doc["verdict"] = "failed"
    doc["section_hashes"]["verdict"] = sha256_of("failed")
    assert "content hash mismatch" in verify_certificate(doc)[0]
    del doc["section_hashes"]
    problems = verify_certificate(doc)
    assert any("cannot be named" in p for p in problems) and any("missing fields" in p for p in problems)


def test_moved_to_another_image_is_named() -> None:
    cert = make()
    assert verify_certificate(cert, image_id="sha256:" + "ee" * 32) == [
        f"certificate is for image {'cd' * 6}, not {'ee' * 6}"
    ]
    assert verify_certificate(cert, image_id="cd" * 6) == []  # a 12-digit short ID is fine


def test_wrong_kind_schema_and_verdict_are_reported() -> None:
    doc = make().to_dict()
    doc.update(kind="other", schema_version=2, verdict="great")
    problems = " | ".join(verify_certificate(doc))
    assert "kind" in problems and "schema_version 2" in problems and "verdict 'great'" in problems


def test_bad_input_is_refused() -> None:
    with pytest.raises(CertificateRefusedError, match="unknown verdict"):
        make(verdict="maybe")
    with pytest.raises(CertificateRefusedError, match="not strict JSON"):
        make(run={"x": float("nan")})
    with pytest.raises(CertificateRefusedError, match="not valid JSON"):
        Certificate.from_json("{nope")
    with pytest.raises(CertificateRefusedError, match="not a JSON object"):
        Certificate.from_json("[]")


def test_the_typed_view_reads_every_section() -> None:
    c = make()
    assert c.image.id == IMAGE_ID and c.image.ref == "img:1" and c.image.stack is not None
    assert c.image.stack.id == "s" and c.image.stack.cuda == "13.0" and c.image.stack.sass == ()
    assert [g.uuid for g in c.host.gpus] == ["GPU-b", "GPU-a"] and c.host.driver is not None
    assert c.issued_at is not None and c.verdict_reason


@pytest.mark.parametrize(
    "broken",
    [
        {"image": "not an object", "host": [1, 2], "harness": {"steps": "x", "gates": [None, 3]}},
        {
            "image": {"id": 5, "stack": {"framework": "torch", "archs": {"sass": "9.0"}}},
            "host": {"gpus": [7]},
        },
        {"harness": {"steps": [{"name": None, "seconds": True, "metrics": [], "warnings": "w"}]}},
    ],
)
def test_the_typed_view_never_raises_on_a_malformed_certificate(broken: dict[str, Any]) -> None:
    c = Certificate(broken)
    assert isinstance(c.image.id, str) and isinstance(c.host.gpus, tuple)
    for step in c.steps:
        assert step.name == "?" and step.seconds is None and step.metric("any", "path") is None
    assert all(g.name is None for g in c.gates)
    assert verify_certificate(c)  # and it is reported as broken, not believed


# --------------------------------------------------------------------------- third operator set (--ops third)


def test_an_image_id_given_short_is_matched_on_its_start_not_its_end() -> None:
    from envbuilder.certify.certificate import _same_image

    full = "sha256:" + "0123456789abcdef" * 4
    assert _same_image(full, full[:19]) and _same_image(full, full.removeprefix("sha256:")[:12])
    assert not _same_image(full, full[-12:])


# ------------------------------------------------------------------------- fourth operator set (--ops fourth)


@pytest.mark.parametrize(
    "text", ["2026-12-01T15:00:00+01:00:30", "2026-12-01T15:00:00Z:30", "2026-12-01T15:00:00+01:00:30.5"]
)
def test_a_time_that_only_begins_as_rfc_3339_is_unreadable(text: str) -> None:
    """An offset with seconds is Python's ISO format, not RFC 3339: an issued_at so written is
    no time (it sorts last and never passes max_age), not a time an hour and a half off."""
    from envbuilder.certify.certificate import newest_key, parse_timestamp

    assert parse_timestamp(text) is None and newest_key(text) == float("inf")


@pytest.mark.parametrize("image", ["not an object", ["sha256:" + "cd" * 32], None])
def test_a_certificate_whose_image_is_no_object_is_for_no_image(image: object) -> None:
    """verify_certificate never raises: a certificate whose `image` is not an object is for no
    image, and says so."""
    doc = make().to_dict()
    doc["image"] = image
    problems = verify_certificate(doc, image_id=IMAGE_ID)
    assert f"certificate is for image (none), not {'cd' * 6}" in problems


def test_a_certificate_whose_image_has_no_id_is_for_no_image() -> None:
    doc = make().to_dict()
    del doc["image"]["id"]
    problems = verify_certificate(doc, image_id=IMAGE_ID)
    assert f"certificate is for image (none), not {'cd' * 6}" in problems


# ---------------------------------------------------------------------- seventh operator set (--ops seventh)


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_out_of_range_once_in_utc_is_unreadable_not_a_crash(text: str) -> None:
    """A year-1 time east of UTC (a year-9999 one west of it) is before year 1 (after 9999) in UTC:
    datetime raises OverflowError there, not ValueError; an issued_at so written is no time
    (it was a traceback from `certs import`, `certs list` and the run's certificate choice)."""
    from envbuilder.certify.certificate import newest_key, parse_timestamp

    assert parse_timestamp(text) is None and newest_key(text) == float("inf")


def test_a_certificate_issued_out_of_range_is_refused_by_certs_import(tmp_path: Any) -> None:
    from envbuilder.attest.imported import import_certificate
    from envbuilder.certify.store import CertStore

    path = tmp_path / "cert.json"
    path.write_text(make(issued_at="0001-01-01T00:00:00+01:00").to_json())
    with pytest.raises(CertificateRefusedError, match="issued_at is not an RFC 3339 timestamp"):
        import_certificate(path, store=CertStore(tmp_path / "s.sqlite"), policy=lambda: None)  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T15:00:00.Z",  # a point with no digits
        "2026-12-01T15:00:00.1234567Z",  # a seventh digit of a second
        "202-12-01T15:00:00Z",
        "20261-12-01T15:00:00Z",
    ],
)
def test_a_timestamp_past_the_patterns_bounds_is_unreadable(text: str) -> None:
    from envbuilder.certify.certificate import parse_timestamp

    assert parse_timestamp(text) is None
    assert parse_timestamp("2026-12-01T15:00:00.123456Z") is not None  # six digits are read


@pytest.mark.parametrize("text", ["2026-12-01T15:00:00", "2026-12-01T15:00:00.5", "2026-12-01T15:00:00+0100"])
def test_a_timestamp_without_its_zone_is_unreadable(text: str) -> None:
    """Without Z or an offset the time would be read in this host's own zone (set P: P20)."""
    from envbuilder.certify.certificate import parse_timestamp

    assert parse_timestamp(text) is None
    assert parse_timestamp(text[:19] + "Z") is not None


@pytest.mark.parametrize("issued_at", [20261201, 2026.12, ["2026-12-01T15:00:00Z"]])
def test_an_issued_at_that_is_no_string_is_no_time(issued_at: object) -> None:
    from envbuilder.certify.certificate import parse_timestamp

    assert parse_timestamp(issued_at) is None


@pytest.mark.parametrize("image_id", [5, 0, None, False])
def test_a_certificate_whose_image_id_is_no_string_is_for_that_image_not_a_crash(image_id: object) -> None:
    """verify_certificate never raises: an image ID that is a number is shown as it is, and an
    empty one (null, false, 0 read as none) as (none)."""
    doc = make().to_dict()
    doc["image"]["id"] = image_id
    shown = str(image_id) if image_id else "(none)"
    assert f"certificate is for image {shown}, not {'cd' * 6}" in verify_certificate(doc, image_id=IMAGE_ID)
