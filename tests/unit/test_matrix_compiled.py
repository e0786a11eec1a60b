"""The compiled matrix: the same Matrix as the YAML gives, served without parsing it, and never
trusted when it is stale, truncated, of another key or not writable; the form shipped beside the
YAML is current (`make golden` rewrites it)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import envbuilder.matrix as matrix_pkg
from envbuilder import resources
from envbuilder.matrix import compiled
from envbuilder.matrix.model import Matrix


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """An empty cache folder, no shipped compiled form and an empty in-process memo: the next
    load_matrix() is a cold one."""
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled, "shipped_file", lambda directory: tmp_path / "not-shipped.json")
    matrix_pkg._load_default.cache_clear()
    yield tmp_path / "cache" / "matrix"
    matrix_pkg._load_default.cache_clear()


def _from_yaml() -> Matrix:
    return matrix_pkg.load_matrix(compiled=False)


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> None:
        raise AssertionError(f"parsed {path} although a compiled matrix was there")

    monkeypatch.setattr(matrix_pkg, "read_file", refuse)


def test_round_trip_is_the_same_matrix(fresh: Path) -> None:
    built = matrix_pkg.load_matrix()  # a miss: built from the YAML and stored
    (entry,) = fresh.glob("*.json")
    key = compiled.matrix_key(resources.matrices_dir())
    assert json.loads(entry.read_text())["key"] == key
    again = compiled.read_compiled(entry, key)
    assert again == built == _from_yaml()
    assert isinstance(again.gpus.models, tuple) and isinstance(again.cuda.releases[0].archs, tuple)


def test_a_hit_does_not_read_the_yaml(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = matrix_pkg.load_matrix()
    matrix_pkg._load_default.cache_clear()
    _no_yaml(monkeypatch)
    assert matrix_pkg.load_matrix() == expected


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: text.replace('"key":"', '"key":"0', 1),  # another key
        lambda text: text.replace('"cc":"9.0"', '"cc":9.0', 1),  # a number where a string goes
        lambda text: text.replace('"models":[', '"modelz":[', 1),  # a shape the code does not have
        lambda text: text.replace('{"$":0}', '{"$":999999}', 1),  # a reference past the shared table
        lambda text: "not json",
    ],
)
def test_a_damaged_entry_is_ignored_and_rebuilt(fresh: Path, damage: object) -> None:
    expected = matrix_pkg.load_matrix()
    (entry,) = fresh.glob("*.json")
    assert callable(damage)
    text = entry.read_text()
    damaged = damage(text)
    assert damaged != text
    entry.write_text(damaged)
    matrix_pkg._load_default.cache_clear()
    assert matrix_pkg.load_matrix() == expected
    key = compiled.matrix_key(resources.matrices_dir())
    assert compiled.read_compiled(entry, key) == expected  # rewritten whole


def test_repeated_tuples_are_stored_once(fresh: Path) -> None:
    built = matrix_pkg.load_matrix()
    (entry,) = fresh.glob("*.json")
    doc = json.loads(entry.read_text())
    rules = {b.require_rules for b in built.base_images if b.require_rules}
    assert len(doc["shared"]) >= len(rules) > 1  # each image's exemptions are one shared entry
    again = compiled.read_compiled(entry, doc["key"])
    assert again is not None
    by_rules = [b for b in again.base_images if b.require_rules == again.base_images[0].require_rules]
    assert len(by_rules) > 1 and all(b.require_rules is by_rules[0].require_rules for b in by_rules)


def test_a_changed_fact_changes_the_key(tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(resources.matrices_dir(), copy)
    before = compiled.matrix_key(copy)
    path = copy / "gpus.yaml"
    path.write_text(path.read_text() + "\n# a comment is a change too\n")
    assert compiled.matrix_key(copy) != before
    (copy / "frameworks" / "extra.yaml").write_text("schema_version: 1\n")
    assert len({before, compiled.matrix_key(copy)}) == 2


def test_a_new_entry_replaces_older_ones(fresh: Path) -> None:
    fresh.mkdir(parents=True)
    (fresh / "0123.json").write_text("{}")
    matrix_pkg.load_matrix()
    assert [p.name for p in fresh.glob("*.json")] != ["0123.json"]
    assert len(list(fresh.glob("*.json"))) == 1


def test_an_unwritable_cache_only_costs_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(blocker))
    matrix_pkg._load_default.cache_clear()
    try:
        assert matrix_pkg.load_matrix() == _from_yaml()
    finally:
        matrix_pkg._load_default.cache_clear()
    assert blocker.read_text().startswith("a file")


def test_the_shipped_compiled_form_is_current(update_golden: bool) -> None:
    directory = resources.matrices_dir()
    key = compiled.matrix_key(directory)
    shipped = compiled.shipped_file(directory)
    if update_golden:
        compiled.write_shipped(directory, _from_yaml())
    assert compiled.read_compiled(shipped, key) == _from_yaml(), (
        f"{shipped} is not the compiled form of these matrices/ files and this code: run `make golden`"
    )


def test_a_new_install_reads_the_shipped_form(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No cache yet (a first command): the shipped form is served, no YAML is parsed and no cache
    entry is written."""
    expected = _from_yaml()
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    _no_yaml(monkeypatch)
    matrix_pkg._load_default.cache_clear()
    try:
        assert matrix_pkg.load_matrix() == expected
    finally:
        matrix_pkg._load_default.cache_clear()
    assert not (tmp_path / "cache").exists()


def test_a_stale_shipped_form_is_not_served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A matrices/ folder whose YAML changed after the shipped form was written (a fact edited,
    `make golden` not run): the YAML is read, and the edit is in the answer."""
    copy = tmp_path / "m"
    shutil.copytree(resources.matrices_dir(), copy)
    gpus = copy / "gpus.yaml"
    text = gpus.read_text()
    edited = text.replace("NVIDIA H200", "NVIDIA H2O0", 1)
    assert edited != text
    gpus.write_text(edited)
    monkeypatch.setattr(resources, "matrices_dir", lambda: copy)
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    matrix_pkg._load_default.cache_clear()
    try:
        names = {model.name for model in matrix_pkg.load_matrix().gpus.models}
    finally:
        matrix_pkg._load_default.cache_clear()
    assert "NVIDIA H2O0" in names and "NVIDIA H200" not in names


def test_decoder_refuses_a_type_it_does_not_know() -> None:
    with pytest.raises(TypeError, match="no JSON form"):
        compiled._decode(dict[str, int], {})
