"""`matrix check` re-derives the generated rows with the current reader: a committed row
(tests/data/rederive/tensorflow.yaml) against what the reader reads of a committed fixture wheel
(real TensorFlow 2.21.0 kernel sets, tests/data/fatbin/SOURCES.yaml), incrementally from the scan
cache, and names every field that differs."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from envbuilder.cli import cli
from envbuilder.harness import fatbin
from envbuilder.matrix import load_matrix, refresh
from envbuilder.matrix.index import Wheelhouse
from envbuilder.matrix.rederive import check_generated
from envbuilder.resources import matrices_dir

DATA = Path(__file__).resolve().parents[1] / "data" / "rederive"
KNOWN_CC = {a.cc for a in load_matrix().gpus.archs}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A matrix folder with the bundled refresh.yaml and the committed fixture row."""
    dest = tmp_path / "m"
    (dest / "generated").mkdir(parents=True)
    shutil.copy(matrices_dir() / "refresh.yaml", dest / "refresh.yaml")
    shutil.copy(DATA / "tensorflow.yaml", dest / "generated" / "tensorflow.yaml")
    return dest


def _edit(folder: Path, **fields: object) -> None:
    path = folder / "generated" / "tensorflow.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["releases"][0]["variants"][0].update(fields)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_the_committed_fixture_row_is_what_the_reader_reads(folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    got = check_generated(
        folder, KNOWN_CC, cache, index=Wheelhouse(DATA / "wheels"), frameworks=["tensorflow"]
    )
    assert got.differences == [], got.differences
    assert (got.rows, got.checked, got.read, got.from_cache) == (1, 1, 1, 0)
    # warm: nothing is read again
    again = check_generated(folder, KNOWN_CC, cache, frameworks=["tensorflow"])
    assert (again.checked, again.read, again.from_cache, again.differences) == (1, 0, 1, [])


def test_a_stale_ptx_isa_and_coverage_are_named(folder: Path, tmp_path: Path) -> None:
    # what the committed TensorFlow rows said before the reader read the embedded fatbins
    _edit(
        folder,
        ptx_isa="8.3",
        kernel_sets=[{"sass": ["6.0", "7.0", "8.0", "8.9", "9.0"], "ptx": ["9.0"], "sets": 3}],
    )
    got = check_generated(folder, KNOWN_CC, tmp_path / "c", index=Wheelhouse(DATA / "wheels"))
    assert got.checked == 1
    assert "tensorflow 2.21.0 cuda12: ptx_isa: committed '8.3', the reader reads '8.5'" in got.differences
    assert any(d.startswith("tensorflow 2.21.0 cuda12: kernel_sets: committed") for d in got.differences)
    assert len(got.differences) == 2


def test_only_scans_that_used_a_changed_reader_part_are_read_again(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    check_generated(folder, KNOWN_CC, cache, index=Wheelhouse(DATA / "wheels"))
    # the zstd decoder's logic changes: this wheel's PTX is LZ4, its scan still holds
    monkeypatch.setitem(refresh.READER, "ptx-zstd", refresh.READER["ptx-zstd"] + 1)
    kept = check_generated(folder, KNOWN_CC, cache)
    assert (kept.checked, kept.from_cache, kept.unchecked) == (1, 1, [])
    # the LZ4 reader changes: the scan is stale; not checked offline, read again with an index
    monkeypatch.setitem(refresh.READER, "ptx-lz4", refresh.READER["ptx-lz4"] + 1)
    offline = check_generated(folder, KNOWN_CC, cache)
    assert (offline.checked, offline.unchecked) == (0, ["tensorflow 2.21.0 cuda12"])
    online = check_generated(folder, KNOWN_CC, cache, index=Wheelhouse(DATA / "wheels"))
    assert (online.checked, online.read, online.differences) == (1, 1, [])


def test_cli_check_fails_on_a_differing_row_and_names_it(folder: Path, tmp_path: Path) -> None:
    matrix = tmp_path / "full"
    shutil.copytree(matrices_dir(), matrix)
    shutil.copy(folder / "generated" / "tensorflow.yaml", matrix / "generated" / "tensorflow.yaml")
    for other in ("torch", "jax"):
        (matrix / "generated" / f"{other}.yaml").unlink()
    shutil.rmtree(matrix / "generated" / "arm64", ignore_errors=True)
    cache = tmp_path / "cache"
    check_generated(matrix, KNOWN_CC, cache, index=Wheelhouse(DATA / "wheels"), frameworks=["tensorflow"])
    runner = CliRunner()
    ok = runner.invoke(cli, ["matrix", "check", "--dir", str(matrix), "--cache", str(cache)])
    assert ok.exit_code == 0, ok.output
    assert "generated rows: 1 of 1 re-derived by the current reader from 1 cached scans" in ok.stdout
    _edit(matrix, ptx_isa="8.3")
    bad = runner.invoke(cli, ["matrix", "check", "--dir", str(matrix), "--cache", str(cache)])
    assert bad.exit_code == 3, bad.output
    assert "tensorflow 2.21.0 cuda12: ptx_isa: committed '8.3', the reader reads '8.5'" in bad.stderr
    assert "hint: `envbuilder matrix refresh" in bad.stderr


def test_the_fixture_rows_compiler_and_kernel_sets_load() -> None:
    doc = yaml.safe_load((DATA / "tensorflow.yaml").read_text())
    v = doc["releases"][0]["variants"][0]
    assert v["kernel_sets"] == [
        {"sass": ["6.0", "7.0", "8.0", "8.9"], "ptx": ["9.0"], "sets": 2},
        {"sass": ["6.0", "7.0", "8.0", "8.9", "9.0"], "ptx": ["9.0"], "sets": 1},
    ]
    assert v["compiler"]["ptxas"] == "nvidia-cuda-nvcc-cu12==12.5.82" and "12.0" in v["compiler"]["targets"]


# The reader's parts (refresh.READER) are bumped by hand when their logic changes; this pins the
# reader's source to the table, so that a change to fatbin.py cannot slip past the scan cache.
FATBIN_SHA256 = "5dd97a841b88c00832b12d017ca2fb912694aae8aadb039fe01a66a595c0ccbf"
READER_AT_THAT_HASH = {
    "metadata": 1,
    "layout": 1,
    "ptx-plain": 1,
    "ptx-lz4": 1,
    "ptx-zstd": 1,
    "embedded": 1,
    "kernel-sets": 1,
    "targets": 1,
}


def test_a_change_to_the_reader_bumps_a_reader_part() -> None:
    digest = hashlib.sha256(Path(fatbin.__file__).read_bytes()).hexdigest()
    assert (digest, refresh.READER) == (FATBIN_SHA256, READER_AT_THAT_HASH), (
        "envbuilder/harness/fatbin.py changed: bump the refresh.READER part(s) whose output can change "
        "(cached scans that used them are then read again), then update FATBIN_SHA256 and "
        f"READER_AT_THAT_HASH here (sha256 now {digest})"
    )


def test_a_malformed_wheels_list_is_a_one_line_matrix_error(folder: Path, tmp_path: Path) -> None:
    from envbuilder.errors import MatrixError

    _edit(folder, wheels=[{"file": "x.whl"}])
    with pytest.raises(MatrixError) as err:
        check_generated(folder, KNOWN_CC, tmp_path / "c")
    assert "tensorflow 2.21.0 cuda12: `wheels` must list {file, sha256} mappings" in err.value.message
    assert "\n" not in err.value.message


def test_cli_check_of_a_malformed_generated_wheels_list_is_one_line(tmp_path: Path) -> None:
    matrix = tmp_path / "m"
    shutil.copytree(matrices_dir(), matrix)
    _edit(matrix, wheels=[{"file": "x.whl"}])  # the first release's variant
    res = CliRunner().invoke(cli, ["matrix", "check", "--dir", str(matrix), "--cache", str(tmp_path / "c")])
    assert res.exit_code == 3, res.output
    assert "field 'wheels': expected a list of {file, sha256} mappings" in res.stderr
    assert "Traceback" not in res.output


# --------------------------------------------------------------------------- linux/arm64 rows

ARM64 = DATA / "arm64"


@pytest.fixture
def arm64_folder(tmp_path: Path) -> Path:
    """A matrix folder with the bundled refresh.yaml and the committed linux/arm64 fixture row."""
    dest = tmp_path / "arm"
    (dest / "generated" / "arm64").mkdir(parents=True)
    shutil.copy(matrices_dir() / "refresh.yaml", dest / "refresh.yaml")
    shutil.copy(ARM64 / "jax.yaml", dest / "generated" / "arm64" / "jax.yaml")
    return dest


def test_the_committed_arm64_fixture_row_is_what_the_reader_reads(arm64_folder: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    got = check_generated(
        arm64_folder, KNOWN_CC, cache, index=Wheelhouse(ARM64 / "wheels"), frameworks=["jax"]
    )
    assert got.differences == [], got.differences
    assert (got.rows, got.checked, got.read, got.from_cache) == (1, 1, 1, 0)
    again = check_generated(arm64_folder, KNOWN_CC, cache, frameworks=["jax"])
    assert (again.checked, again.read, again.from_cache, again.differences) == (1, 0, 1, [])
    # a row that says otherwise than the aarch64 wheel is named, with its platform
    path = arm64_folder / "generated" / "arm64" / "jax.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["releases"][0]["variants"][0]["sass"] = ["8.0", "9.0", "10.0", "11.0", "12.0"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    bad = check_generated(arm64_folder, KNOWN_CC, cache, frameworks=["jax"])
    assert bad.differences == [
        "jax 0.11.2 cuda13 linux/arm64: sass: committed ['8.0', '9.0', '10.0', '11.0', '12.0'], "
        "the reader reads ['7.5', '8.0', '9.0', '10.0', '11.0', '12.0']"
    ]


def test_an_arm64_scan_made_by_a_changed_reader_part_is_read_again(
    arm64_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    check_generated(arm64_folder, KNOWN_CC, cache, index=Wheelhouse(ARM64 / "wheels"))
    monkeypatch.setitem(refresh.READER, "ptx-zstd", refresh.READER["ptx-zstd"] + 1)  # its PTX is zstd
    offline = check_generated(arm64_folder, KNOWN_CC, cache)
    assert (offline.checked, offline.unchecked) == (0, ["jax 0.11.2 cuda13 linux/arm64"])
    online = check_generated(arm64_folder, KNOWN_CC, cache, index=Wheelhouse(ARM64 / "wheels"))
    assert (online.checked, online.read, online.differences) == (1, 1, [])
