"""The certificate document: its schema, the host fingerprint, the content hash and tamper checks.

A certificate binds one image (by ID) to one host (by fingerprint) and keeps the harness's
evidence. `content_hash` is sha256 over the canonical JSON of everything else, and
`section_hashes` holds one hash per top-level section, so an edit is detected AND named. This is
integrity, not authenticity: whoever recomputes every hash can forge one (docs/certify.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from envbuilder import __version__
from envbuilder.bounded import load_json
from envbuilder.certify.record import (
    CERTIFICATE_SHAPE,
    CertifiedHost,
    CertifiedImage,
    GateRecord,
    StepRecord,
    items,
    section,
    text,
)
from envbuilder.errors import CertificateRefusedError
from envbuilder.hashing import SHA256_PREFIX, sha256_of
from envbuilder.typed import WrongType, check_document

SCHEMA_VERSION = 1
_REFUSED_HINT = (
    "it is damaged or not an envbuilder certificate: re-certify the image (envbuilder certify IMAGE)"
)
KIND = "envbuilder-certificate"
VERDICTS = ("certified", "certified-cpu-only", "failed")
# Top-level sections, in schema order. `content_hash` and `section_hashes` are not sections.
SECTIONS = (
    "schema_version",
    "kind",
    "image",
    "host",
    "run",
    "harness",
    "thresholds",
    "verdict",
    "verdict_reason",
    "issued_at",
    "envbuilder_version",
)


def host_fingerprint(driver: str | None, gpus: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of the sorted GPU UUIDs, models and compute capabilities, and the driver version:
    the same machine with the same driver and GPUs always gives the same fingerprint."""
    doc = {
        "driver": driver,
        "uuids": sorted(str(g.get("uuid") or "") for g in gpus),
        "models": sorted(str(g.get("name") or "") for g in gpus),
        "ccs": sorted(str(g.get("cc") or "") for g in gpus),
    }
    return sha256_of(doc)


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


_TIMESTAMP_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)


def parse_timestamp(text: object) -> datetime | None:
    """An RFC 3339 timestamp (utc_now's `2026-12-01T15:00:00Z`; a fraction or an offset allowed)
    as an aware UTC datetime; None for anything else, ASCII digits only (strptime alone takes
    full-width digits, and a string compare sorts a full-width digit after every year)."""
    if not isinstance(text, str) or not _TIMESTAMP_RE.fullmatch(text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:  # month 13, February 30
        return None
    except OverflowError:  # 0001-01-01T00:00:00+01:00 is before year 1 in UTC (9999-12-31, after)
        return None


def newest_key(issued_at: object) -> float:
    """The sort key of "newest first" by the time itself (not the text: `...:00Z` sorts after
    `...:00.5Z`, and an offset moves the time); an issued_at that is no timestamp sorts last."""
    ts = parse_timestamp(issued_at)
    return -ts.timestamp() if ts is not None else float("inf")


# How far a certificate's issued_at may lie ahead of this host's clock: clocks of the machine that
# certified and of the one that checks differ (NTP keeps them within seconds; a VM resumed from a
# snapshot, minutes). Further ahead is refused (`future-issued`), else a signer could mint a
# certificate that no max_age ever expires (hostile-inputs D10).
CLOCK_SKEW_S = 300


def issued_in_future(issued_at: object, now: datetime | None = None) -> str | None:
    """Why `issued_at` cannot be accepted as issued yet: it lies more than CLOCK_SKEW_S after
    `now` (default: this host's UTC clock); None when it does not (or is no timestamp: that is
    the caller's own check)."""
    issued = parse_timestamp(issued_at)
    current = now or datetime.now(timezone.utc)
    if issued is None or (issued - current).total_seconds() <= CLOCK_SKEW_S:
        return None
    return (
        f"issued_at {issued_at} lies in the future ({current.strftime('%Y-%m-%dT%H:%M:%SZ')} here; "
        f"{CLOCK_SKEW_S // 60} minutes of clock skew are allowed)"
    )


def seal(body: Mapping[str, Any]) -> dict[str, Any]:
    """Add `section_hashes` and `content_hash` to a certificate body (its SECTIONS)."""
    doc = {k: body[k] for k in SECTIONS if k in body}
    doc["section_hashes"] = {k: sha256_of(doc[k]) for k in SECTIONS if k in doc}
    doc["content_hash"] = sha256_of(doc)
    return doc


@dataclass(frozen=True, slots=True)
class Certificate:
    """A sealed certificate document. `data` is the JSON object exactly as stored and exported."""

    data: Mapping[str, Any]

    @property
    def content_hash(self) -> str:
        return str(self.data.get("content_hash", ""))

    @property
    def id(self) -> str:
        """The hex digest of the content hash: the certificate's identity in the store."""
        return self.content_hash.removeprefix(SHA256_PREFIX)

    @property
    def verdict(self) -> str:
        return str(self.data.get("verdict", ""))

    @property
    def verdict_reason(self) -> str:
        return text(self.data.get("verdict_reason")) or ""

    @property
    def issued_at(self) -> str | None:
        return text(self.data.get("issued_at"))

    @property
    def image(self) -> CertifiedImage:
        return CertifiedImage.read(self.data.get("image"))

    @property
    def host(self) -> CertifiedHost:
        return CertifiedHost.read(self.data.get("host"))

    @property
    def harness(self) -> Mapping[str, Any]:
        """The harness's result as it reported it (telemetry, multi_gpu, notes: report/ reads those)."""
        return section(self.data.get("harness"))

    @property
    def run(self) -> Mapping[str, Any]:
        return section(self.data.get("run"))

    @property
    def thresholds(self) -> Mapping[str, Any]:
        return section(self.data.get("thresholds"))

    @property
    def steps(self) -> tuple[StepRecord, ...]:
        """The harness's steps, then the project's own smoke command's (run.project_smoke, which
        the host ran and recorded after the harness: certify/smoke.py), when the image has one."""
        smoke = self.run.get("project_smoke")
        extra = (smoke,) if isinstance(smoke, Mapping) else ()
        return tuple(StepRecord.read(s) for s in (*items(self.harness.get("steps")), *extra))

    @property
    def gates(self) -> tuple[GateRecord, ...]:
        return tuple(GateRecord.read(g) for g in items(self.harness.get("gates")))

    def to_dict(self) -> dict[str, Any]:
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.data, sort_keys=True, indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, text: str, where: str = "certificate") -> Certificate:
        """Parse a certificate within the bounded loader's limits and check every field's type
        (CERTIFICATE_SHAPE), so that no reader past this meets a wrong type. Whether it is intact
        is verify_certificate's question. Raises CertificateRefusedError (not JSON, too large or
        deep, not an object, a field of the wrong type)."""
        try:
            data = load_json(text)
        except ValueError as exc:  # JSONDecodeError, TooLarge, an integer past int's digit limit
            raise CertificateRefusedError(
                f"{where} is not valid JSON: {str(exc)[:200]}", hint=_REFUSED_HINT, file=where
            ) from None
        return cls.from_data(data, where)

    @classmethod
    def from_data(cls, data: object, where: str = "certificate") -> Certificate:
        """A parsed certificate document (a signed attestation's predicate, say), every field's
        type checked as from_json does. Raises CertificateRefusedError."""
        if not isinstance(data, dict):
            raise CertificateRefusedError(f"{where} is not a JSON object", hint=_REFUSED_HINT, file=where)
        try:
            check_document(data, CERTIFICATE_SHAPE)
        except WrongType as exc:
            raise CertificateRefusedError(
                f"{where} is not a certificate envbuilder can read: {exc}",
                hint=_REFUSED_HINT,
                file=where,
                field=exc.path,
            ) from None
        return cls(data)


def build_certificate(
    *,
    image: Mapping[str, Any],
    host: Mapping[str, Any],
    run: Mapping[str, Any],
    harness: Mapping[str, Any],
    thresholds: Mapping[str, Any],
    verdict: str,
    verdict_reason: str,
    issued_at: str | None = None,
) -> Certificate:
    """Assemble and seal a certificate. Raises CertificateRefusedError for an unknown verdict or
    a body that is not strict JSON (NaN, inf)."""
    if verdict not in VERDICTS:
        raise CertificateRefusedError(f"unknown verdict {verdict!r} (expected one of {', '.join(VERDICTS)})")
    body = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "image": dict(image),
        "host": dict(host),
        "run": dict(run),
        "harness": dict(harness),
        "thresholds": dict(thresholds),
        "verdict": verdict,
        "verdict_reason": verdict_reason,
        "issued_at": issued_at or utc_now(),
        "envbuilder_version": __version__,
    }
    try:
        return Certificate(seal(body))
    except ValueError as exc:
        raise CertificateRefusedError(f"certificate body is not strict JSON: {exc}") from exc


def _shape_problems(doc: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if doc.get("kind") != KIND:
        problems.append(f"kind is {doc.get('kind')!r}, not {KIND!r}")
    if doc.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema_version {doc.get('schema_version')!r} is not {SCHEMA_VERSION} (unsupported)")
    missing = [k for k in (*SECTIONS, "section_hashes", "content_hash") if k not in doc]
    if missing:
        problems.append(f"missing fields: {', '.join(missing)}")
    if "verdict" in doc and doc.get("verdict") not in VERDICTS:
        problems.append(f"verdict {doc.get('verdict')!r} is not one of {', '.join(VERDICTS)}")
    for key in ("image", "host", "harness", "thresholds", "run", "section_hashes"):
        if key in doc and not isinstance(doc[key], Mapping):
            problems.append(f"{key} is not an object")
    image = doc.get("image")
    if isinstance(image, Mapping) and not isinstance(image.get("id"), str):
        problems.append("image.id is missing")
    return problems


def changed_sections(doc: Mapping[str, Any]) -> list[str] | None:
    """Sections whose hash no longer matches `section_hashes`; None when section_hashes itself is
    unusable (then the sections cannot be named)."""
    stored = doc.get("section_hashes")
    if not isinstance(stored, Mapping):
        return None
    changed = []
    for key in sorted(set(SECTIONS) | set(stored)):
        if key not in SECTIONS:
            changed.append(key)  # a section added after sealing
            continue
        try:
            now = sha256_of(doc[key]) if key in doc else None
        except (TypeError, ValueError):
            now = "unhashable"
        if now != stored.get(key):
            changed.append(key)
    return changed


def verify_certificate(cert: Certificate | Mapping[str, Any], *, image_id: str | None = None) -> list[str]:
    """Every problem with a certificate (empty: intact). Checks the shape, recomputes the content
    hash (a mismatch names the sections that changed), and, given `image_id`, that the certificate
    is for that image (a certificate moved to another image). Never raises."""
    doc = cert.data if isinstance(cert, Certificate) else cert
    problems = _shape_problems(doc)
    body = {k: v for k, v in doc.items() if k != "content_hash"}
    try:
        recomputed = sha256_of(body)
    except (TypeError, ValueError) as exc:
        return [*problems, f"content hash cannot be computed: {exc}"]
    if recomputed != doc.get("content_hash"):
        changed = changed_sections(doc)
        if changed is None:
            what = "section_hashes is missing or altered, so the changed sections cannot be named"
        elif changed:
            what = f"changed: {', '.join(changed)}"
        elif "content_hash" in doc:
            what = "changed: content_hash or section_hashes"
        else:
            what = "content_hash is missing"
        problems.append(f"content hash mismatch (tampered or corrupted; {what})")
    if image_id is not None:
        have = str(doc["image"].get("id") or "") if isinstance(doc.get("image"), Mapping) else ""
        if not _same_image(have, image_id):
            problems.append(f"certificate is for image {_short(have)}, not {_short(image_id)}")
    return problems


def _same_image(a: str, b: str) -> bool:
    a, b = a.removeprefix("sha256:"), b.removeprefix("sha256:")
    return bool(a) and bool(b) and (a == b or (len(b) >= 12 and a.startswith(b)))


def _short(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12] or "(none)"


def require_valid(cert: Certificate, *, image_id: str | None = None, where: str = "certificate") -> None:
    """Raise CertificateRefusedError naming every problem verify_certificate finds."""
    problems = verify_certificate(cert, image_id=image_id)
    if problems:
        raise CertificateRefusedError(
            f"{where} failed verification: " + "; ".join(problems),
            hint="re-certify the image on this host: envbuilder certify IMAGE",
        )
