"""The harness's library readahead (harness/readahead.py): which files it hints, the cap, what it
leaves alone, and the fact it records from its thread."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from envbuilder.harness import inventory, readahead
from envbuilder.harness.record import Recorder


def _tree(tmp_path: Path) -> Path:
    lib = tmp_path / "pkg" / "lib"
    lib.mkdir(parents=True)
    (lib / "libbig.so.12").write_bytes(b"\0" * 8192)
    (lib / "libother.so").write_bytes(b"\1" * 8192)
    (lib / "libbig.so").symlink_to("libbig.so.12")  # one library, hinted once
    (lib / "libtiny.so").write_bytes(b"x" * 100)  # a stub: not a library worth reading
    (lib / "notes.txt").write_bytes(b"y" * 8192)
    os.mkfifo(lib / "libfifo.so")  # opening it for reading must not block
    return tmp_path / "pkg"


@pytest.fixture
def advised(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int, int]]:
    calls: list[tuple[int, int, int, int]] = []
    real = os.posix_fadvise

    def spy(fd: int, offset: int, length: int, advice: int) -> None:
        calls.append((os.fstat(fd).st_size, offset, length, advice))
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spy)
    return calls


def test_every_library_once_whole_and_willneed(tmp_path: Path, advised: list[Any]) -> None:
    files = readahead.library_files([("x", _tree(tmp_path))])
    assert sorted(p.name for p in files) == ["libbig.so", "libother.so"]
    res = readahead.readahead(files)
    assert res["files"] == 2 and res["bytes"] == 16384 and res["supported"] is True
    assert advised == [(8192, 0, 0, os.POSIX_FADV_WILLNEED)] * 2


def test_the_cap_stops_the_hints(tmp_path: Path, advised: list[Any]) -> None:
    res = readahead.readahead(readahead.library_files([("x", _tree(tmp_path))]), cap_bytes=10000)
    assert res["files"] == 1 and res["bytes"] == 8192 and len(advised) == 1


def test_a_fifo_or_a_missing_file_is_left_alone(tmp_path: Path, advised: list[Any]) -> None:
    root = _tree(tmp_path)
    res = readahead.readahead([root / "lib" / "libfifo.so", root / "lib" / "gone.so"])
    assert res["files"] == 0 and advised == []


def test_the_thread_records_the_fact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path)
    asked: list[Any] = []

    def dirs(names: Any) -> list[tuple[str, Path]]:
        asked.append([n for n, _ in names])
        return [("torch", root)]

    monkeypatch.setattr(inventory, "package_dirs", dirs)
    monkeypatch.setattr(inventory, "system_dirs", lambda: [])
    rec = Recorder(out=io.StringIO())
    readahead.start(rec, "jax").join(10)
    assert asked == [["jaxlib", "jax_cuda13_plugin", "jax_cuda12_plugin", "jax_plugins", "nvidia"]]
    assert rec.facts["library_readahead"]["files"] == 2
