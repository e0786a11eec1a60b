"""The one canonical JSON form that every hash covers (lock hash, labels, certificates)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest

from envbuilder.hashing import (
    canonical_json,
    sha256_digest,
    sha256_file,
    sha256_file_hex,
    sha256_hex,
    sha256_of,
    sha256_text,
)


def test_canonical_json_is_sorted_compact_ascii() -> None:
    assert canonical_json({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"\\u00e9"]}'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_canonical_json_refuses_what_json_cannot_hold(bad: float) -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": bad})


def test_digests_are_over_the_canonical_text() -> None:
    doc = {"z": 1, "a": [2, 3]}
    hexdigest = hashlib.sha256(b'{"a":[2,3],"z":1}').hexdigest()
    assert sha256_hex(doc) == hexdigest == sha256_text('{"a":[2,3],"z":1}')
    assert sha256_of(doc) == "sha256:" + hexdigest


def test_sha256_file_is_the_digest_of_the_bytes_read_in_blocks(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5000  # over 1 MiB: more than one block
    path = tmp_path / "train.sif"
    path.write_bytes(data)
    assert sha256_file(path) == sha256_digest(data)
    # the bare hex a wheel's lock row and index entry carry: the same digest, no prefix
    assert (
        sha256_file_hex(path) == hashlib.sha256(data).hexdigest() == sha256_file(path).removeprefix("sha256:")
    )
    with pytest.raises(OSError):
        sha256_file(tmp_path / "missing.sif")
