"""Canonical JSON and the sha256 digests taken over it: the one form that every hash in envbuilder
covers (the lock hash and its image label, the stack label, certificate content and sections).

Canonical means sorted keys, no whitespace, ASCII only and no NaN or infinity (they are not JSON:
`json.loads` of another tool would refuse them, and NaN != NaN would make a hash unverifiable).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

SHA256_PREFIX = "sha256:"


def canonical_json(value: object) -> str:
    """The canonical JSON text of `value`. Raises ValueError for NaN/inf, TypeError for a value
    JSON cannot hold."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def sha256_text(text: str) -> str:
    """Hex sha256 of a text's UTF-8 bytes (a rendered Dockerfile)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_hex(value: object) -> str:
    """Hex sha256 of canonical_json(value). Raises what canonical_json raises."""
    return sha256_text(canonical_json(value))


def sha256_of(value: object) -> str:
    """`sha256:<hex>` of canonical_json(value), the form certificates store. Raises what
    canonical_json raises."""
    return SHA256_PREFIX + sha256_hex(value)


def sha256_digest(data: bytes) -> str:
    """`sha256:<hex>` of raw bytes: an OCI content digest (manifests, blobs, DSSE envelopes)."""
    return SHA256_PREFIX + hashlib.sha256(data).hexdigest()


def sha256_file_hex(path: Path) -> str:
    """Hex sha256 of a file's bytes, read 1 MiB at a time (an exported SIF or squashfs file,
    gigabytes; a wheel, whose lock row and index entry carry bare hex). Raises OSError."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    """`sha256:<hex>` of a file's bytes (sha256_file_hex). Raises OSError."""
    return SHA256_PREFIX + sha256_file_hex(path)
