"""The in-toto Statements (v1) made from one certificate, and the reading of them back.

Two statements per certification, both about the same subject (the image's registry manifest
digest, and its config digest, i.e. the local image ID, which survives push and pull):
- predicate `https://in-toto.io/attestation/test-result/v0.1`: the result PASSED/WARNED/FAILED
  and the passed/warned/failed checks, for any in-toto tool;
- predicate `urn:envbuilder:attestation:certificate:v1` (the project has no domain to name it
  with; a URN is a valid TypeURI that names without pretending to locate): the whole
  sealed certificate (stack, host fingerprint, benchmark figures, telemetry, kernel inventory),
  which `run` and `verify` use.
Specs: https://github.com/in-toto/attestation/blob/main/spec/v1/statement.md and
https://github.com/in-toto/attestation/blob/main/spec/predicates/test-result.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envbuilder.bounded import load_json
from envbuilder.certify.certificate import Certificate
from envbuilder.hashing import canonical_json, sha256_hex

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"  # the DSSE payloadType of an in-toto statement
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"
CERTIFICATE = "urn:envbuilder:attestation:certificate:v1"
PREDICATE_TYPES = (CERTIFICATE, TEST_RESULT)
# A statement carries one certificate (its loader allows bounded.MAX_BYTES) and a little more.
STATEMENT_MAX_BYTES = 8 * 1024 * 1024
CONFIG_MEDIA_TYPES = (
    "application/vnd.oci.image.config.v1+json",
    "application/vnd.docker.container.image.v1+json",
)
_DEFAULT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageSubject:
    """What a statement is about: one image in one repository."""

    repository: str  # registry/name, no tag
    manifest_digest: str  # sha256:... of the registry manifest
    image_id: str  # sha256:... of the config (docker's image ID)
    manifest_media_type: str = _DEFAULT_MANIFEST
    config_media_type: str = CONFIG_MEDIA_TYPES[1]

    def descriptors(self) -> list[dict[str, Any]]:
        return [
            {
                "name": self.repository,
                "digest": {"sha256": _hex(self.manifest_digest)},
                "mediaType": self.manifest_media_type,
            },
            {
                "name": self.repository,
                "digest": {"sha256": _hex(self.image_id)},
                "mediaType": self.config_media_type,
            },
        ]


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def result_predicate(cert: Certificate) -> dict[str, Any]:
    """The test-result predicate of a certificate: steps and gates as tests. FAILED for a failed
    certificate; WARNED when a check warned or only the CPU path ran (it is not a GPU
    certification); PASSED otherwise. Skipped steps are listed nowhere."""
    passed: list[str] = []
    warned: list[str] = []
    failed: list[str] = []
    by_status = {"pass": passed, "warn": warned, "fail": failed}
    for step in cert.steps:
        bucket = by_status.get(step.status)
        if bucket is not None:
            bucket.append(step.name)
    for gate in cert.gates:
        if (bucket := by_status.get(str(gate.status))) is not None:
            bucket.append(f"gate:{gate.name}")
    if cert.verdict == "failed":
        result = "FAILED"
    elif warned or cert.verdict == "certified-cpu-only":
        result = "WARNED"
    else:
        result = "PASSED"
    thresholds = cert.data.get("thresholds")
    return {
        "result": result,
        "configuration": [
            {
                "name": "envbuilder-certificate",
                "digest": {"sha256": _hex(cert.content_hash)},
                "annotations": {"verdict": cert.verdict, "issued_at": cert.issued_at},
            },
            {
                "name": str((thresholds or {}).get("source_path") or "thresholds")
                if isinstance(thresholds, Mapping)
                else "thresholds",
                "digest": {"sha256": sha256_hex(thresholds)},
            },
        ],
        "passedTests": passed,
        "warnedTests": warned,
        "failedTests": failed,
    }


def statement(subject: ImageSubject, predicate_type: str, predicate: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": subject.descriptors(),
        "predicateType": predicate_type,
        "predicate": dict(predicate),
    }


def certificate_statements(cert: Certificate, subject: ImageSubject) -> list[dict[str, Any]]:
    """The two statements of one certification: the certificate itself, then its test result."""
    return [
        statement(subject, CERTIFICATE, {"certificate": cert.to_dict()}),
        statement(subject, TEST_RESULT, result_predicate(cert)),
    ]


def encode(doc: Mapping[str, Any]) -> bytes:
    """A statement as the DSSE payload bytes (canonical JSON: stable, no floats reformatted)."""
    return bytes(canonical_json(doc), "ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedStatement:
    predicate_type: str
    predicate: Mapping[str, Any]
    subject_digests: tuple[str, ...]  # sha256:... of every subject
    subject_names: tuple[str, ...]


def parse_statement(payload: bytes) -> ParsedStatement:
    """Read a DSSE payload as an in-toto Statement v1, within envbuilder.bounded's limits (size,
    depth, digits). Raises ValueError naming what is wrong."""
    try:
        doc = load_json(payload, max_bytes=STATEMENT_MAX_BYTES)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, bounded.TooLarge
        raise ValueError(f"the payload is not JSON: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_TYPE:
        raise ValueError(
            f"the payload is not an in-toto Statement v1 (_type {repr(_get(doc, '_type'))[:60]})"
        )
    subjects = doc.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise ValueError("the statement has no subject")
    digests: list[str] = []
    names: list[str] = []
    for s in subjects:
        digest = s.get("digest") if isinstance(s, dict) else None
        if not isinstance(digest, dict) or not isinstance(digest.get("sha256"), str):
            raise ValueError("a subject of the statement has no sha256 digest")
        digests.append("sha256:" + digest["sha256"])
        names.append(str(s.get("name", "")))
    ptype, predicate = doc.get("predicateType"), doc.get("predicate")
    if not isinstance(ptype, str) or not isinstance(predicate, dict):
        raise ValueError("the statement has no predicateType or predicate")
    return ParsedStatement(
        predicate_type=ptype,
        predicate=predicate,
        subject_digests=tuple(digests),
        subject_names=tuple(dict.fromkeys(names)),
    )


def _get(doc: Any, key: str) -> Any:
    return doc.get(key) if isinstance(doc, dict) else None


def covers_digest(parsed: ParsedStatement, digests: Sequence[str]) -> bool:
    return any(d in parsed.subject_digests for d in digests)
