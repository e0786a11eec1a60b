"""The fatbin reader (envbuilder/harness/fatbin.py) against NVIDIA's cuobjdump on real device code
(tests/data/fatbin: slices of real wheels' libraries, see SOURCES.yaml): the same entries (kind
and sm, in order) and the same PTX ISA as the extracted PTX's `.version` line."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from envbuilder.harness import fatbin

DATA = Path(__file__).resolve().parents[1] / "data" / "fatbin"
SOURCES = yaml.safe_load((DATA / "SOURCES.yaml").read_text())["slices"]
SLICES = [DATA / s["file"] for s in SOURCES]


def cuobjdump() -> Path:
    """NVIDIA's cuobjdump from the nvidia-cuda-cuobjdump wheel (a dev dependency)."""
    spec = importlib.util.find_spec("nvidia")
    paths = list(spec.submodule_search_locations or []) if spec else []
    for base in paths:
        for exe in sorted(Path(base).glob("cu*/bin/cuobjdump")):
            return exe
    pytest.fail("cuobjdump is missing: `make install` installs the nvidia-cuda-cuobjdump wheel")


_LISTED = re.compile(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\d+[a-z]?)\.(cubin|ptx)$")


def cuobjdump_entries(lib: Path) -> list[tuple[str, int]]:
    """(kind, sm) of every entry cuobjdump lists, in its order."""
    out = subprocess.run(
        [str(cuobjdump()), "--list-elf", "--list-ptx", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    entries = []
    for line in out.splitlines():
        m = _LISTED.match(line.strip())
        if m:
            entries.append(("sass" if m.group(1) == "ELF" else "ptx", int(m.group(2)[3:].rstrip("af"))))
    return entries


def cuobjdump_ptx_isas(lib: Path, tmp: Path) -> list[str]:
    """The `.version` of every PTX file cuobjdump extracts (sorted)."""
    subprocess.run(
        [str(cuobjdump()), "--extract-ptx", "all", str(lib)], cwd=tmp, capture_output=True, check=True
    )
    isas = []
    for ptx in sorted(tmp.glob("*.ptx")):
        m = re.search(r"^\s*\.version\s+(\d+\.\d+)", ptx.read_text(errors="replace"), re.MULTILINE)
        assert m, f"{ptx.name} has no .version line"
        isas.append(m.group(1))
    return sorted(isas)


@pytest.mark.parametrize("lib", SLICES, ids=[s.name for s in SLICES])
def test_entries_agree_with_cuobjdump(lib: Path, tmp_path: Path) -> None:
    ours = fatbin.file_entries(lib)
    assert [(e.kind, e.sm) for e in ours] == cuobjdump_entries(lib)
    assert sorted(str(e.isa) for e in ours if e.kind == "ptx") == cuobjdump_ptx_isas(lib, tmp_path)
    assert all(e.isa_source == ".version" for e in ours if e.kind == "ptx")


def test_the_slices_hold_what_their_sources_say() -> None:
    got = {lib.name: fatbin.scan_file(lib) for lib in SLICES}
    old = got["jax_cuda12_plugin-0.4.26-_prng.so"]
    assert old.sass == (50, 60, 70, 80, 90) and old.ptx == ((90, "8.3"),)
    new = got["jax_cuda13_plugin-0.11.2-_prng.so"]
    assert new.sass == (75, 80, 90, 100, 110, 120) and new.ptx == ((120, "9.0"),)
    torch = got["torch-2.15.0-libtorch_nvshmem.so"]
    assert torch.sass == (75, 80, 86, 90, 100, 120) and torch.ptx == ()
    compressions = {e.compression for lib in SLICES for e in fatbin.file_entries(lib) if e.kind == "ptx"}
    assert compressions == {"lz4", "zstd"}


def test_without_a_zstd_decoder_the_isa_comes_from_the_entry_header(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = DATA / "jax_cuda13_plugin-0.11.2-_prng.so"
    monkeypatch.setattr(fatbin, "_ZSTD", None)
    ptx = [e for e in fatbin.file_entries(lib) if e.kind == "ptx"]
    assert [(e.isa, e.isa_source, e.compression) for e in ptx] == [("9.0", "header", "zstd")]
    assert "from the fatbin header" in fatbin.scan_file(lib).notes[0]


def test_the_header_isa_agrees_with_the_version_line_in_every_slice() -> None:
    for lib in SLICES:
        raw = lib.read_bytes()
        want = [e.isa for e in fatbin.elf_entries(raw) if e.kind == "ptx"]
        garbled = [e for e in _entries_without_decoders(raw) if e.kind == "ptx"]
        assert [e.isa for e in garbled] == want, lib.name
        assert all(e.isa_source == "header" for e in garbled), lib.name


def _entries_without_decoders(raw: bytes) -> list[fatbin.Entry]:
    """Entries read with PTX payloads garbled: the ISA must then come from the header alone."""
    buf = bytearray(raw)
    for entry_start, hsize, psize in _ptx_payloads(buf):
        buf[entry_start + hsize : entry_start + hsize + psize] = b"\xff" * psize
    return fatbin.elf_entries(bytes(buf))


def _ptx_payloads(buf: bytearray) -> Iterator[tuple[int, int, int]]:
    for _name, off, size in fatbin.elf_sections(bytes(buf)):
        pos = bytes(buf).find(fatbin._MAGIC_BYTES, off, off + size)
        while 0 <= pos < off + size:
            _m, _v, hsz, psz = fatbin._FATBIN_HEADER.unpack_from(buf, pos)
            e = pos + hsz
            while e < pos + hsz + psz:
                kind, _u, ehsz, esz = fatbin._ENTRY_HEADER.unpack_from(buf, e)[:4]
                if kind == fatbin.KIND_PTX:
                    yield e, ehsz, esz
                e += ehsz + esz
            pos = bytes(buf).find(fatbin._MAGIC_BYTES, pos + hsz + psz, off + size)


def test_lz4_block_decoding() -> None:
    assert fatbin.lz4_block_decompress(bytes([0x50]) + b"hello", 100) == b"hello"
    # token 0x13: 1 literal, then a match of 3 + 4 bytes at offset 1; then 1 literal, no match
    assert fatbin.lz4_block_decompress(bytes([0x13]) + b"a" + bytes([1, 0]) + bytes([0x10]) + b"b", 100) == (
        b"a" * 8 + b"b"
    )
    assert (
        fatbin.lz4_block_decompress(bytes([0x13]) + b"a" + bytes([1, 0]) + bytes([0x10]) + b"b", 3) == b"aaa"
    )
    with pytest.raises(fatbin.FatbinError, match="offset"):
        fatbin.lz4_block_decompress(bytes([0x10]) + b"a" + bytes([5, 0]), 100)
    with pytest.raises(fatbin.FatbinError, match="middle"):
        fatbin.lz4_block_decompress(bytes([0xF0]), 100)


def test_bad_input_is_a_fatbin_error_not_a_crash(tmp_path: Path) -> None:
    text = tmp_path / "not-elf.so"
    text.write_bytes(b"#!/bin/sh\necho hi\n")
    with pytest.raises(fatbin.FatbinError, match="not an ELF"):
        fatbin.scan_file(text)
    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(fatbin.FatbinError, match="empty"):
        fatbin.scan_file(empty)
    # a magic number with garbage behind it is skipped, not parsed
    raw = fatbin._MAGIC_BYTES + b"\x01\x00\x10\x00" + (10**9).to_bytes(8, "little") + b"\0" * 64
    assert list(fatbin.iter_fatbins(raw)) == []
    # a truncated slice: what is whole is read, the rest is not invented
    good = (DATA / "jax_cuda13_plugin-0.11.2-_prng.so").read_bytes()
    _name, off, size = fatbin.elf_sections(good)[0]
    assert list(fatbin.iter_fatbins(good[: off + size // 2], off)) == []


def test_the_reader_is_stdlib_only() -> None:
    """The harness copies this module into images: only the stdlib at module level (the zstd
    decoders are optional, imported inside a function)."""
    tree = ast.parse(Path(fatbin.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = {(n.module or "") if isinstance(n, ast.ImportFrom) else a.name for n in top for a in n.names}
    roots = {n.split(".")[0] for n in names if n}
    assert roots <= set(sys.stdlib_module_names) | {"__future__"}, roots


def _moved_to_data(raw: bytes) -> bytes:
    """The same library with its `.nv_fatbin` section renamed `.data` (in the section-name table):
    its fatbins then sit where cuFFT keeps its own, in a data section."""
    name = b"\0.nv_fatbin\0"
    at = raw.find(name)
    assert at >= 0
    return raw[:at] + b"\0.data\0" + b"x" * (len(name) - 7) + raw[at + len(name) :]


def test_fatbins_in_data_sections_count_as_embedded_kernels(tmp_path: Path) -> None:
    """cuFFT keeps its kernels in `.data` and loads them itself (libcufft.so.12 of nvidia-cufft
    12.5.0.14: no `.nv_fatbin`, 18,227 fatbins in `.data`; the H200 machine's copy: one sm_75
    cubin in `.nv_fatbin`): counted, or an H200 looks uncovered by cuFFT."""
    lib = next(p for p in SLICES if b"\0.nv_fatbin\0" in p.read_bytes())
    before = fatbin.scan_file(lib)
    moved = tmp_path / lib.name
    moved.write_bytes(_moved_to_data(lib.read_bytes()))
    assert fatbin.file_entries(moved) == []  # what cuobjdump lists: the fatbin sections only
    after = fatbin.scan_file(moved)
    assert after.sass == before.sass and [s for s, _ in after.ptx] == [s for s, _ in before.ptx]
    assert after.embedded == after.entries == before.entries > 0 and before.embedded == 0
    assert any("data sections" in n for n in after.notes) and after.to_dict()["embedded"] == after.entries


def test_chance_magic_bytes_in_data_sections_are_not_kernels() -> None:
    """A data section is not a fatbin section: a magic followed by anything but a version-1 fatbin
    of PTX/cubin entries is skipped (strict), where a fatbin section would take it."""
    header = fatbin._MAGIC_BYTES + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    entry = bytearray(64)
    entry[0:2] = (fatbin.KIND_ELF).to_bytes(2, "little")
    entry[4:8] = (64).to_bytes(4, "little")
    entry[28:32] = (90).to_bytes(4, "little")
    blob = header + (64).to_bytes(8, "little") + bytes(entry)
    assert [e.name for fb in fatbin.iter_fatbins(blob) for e in fb] == ["sm_90"]
    assert list(fatbin.iter_fatbins(blob, strict=True)) == []  # version 2
    v1 = blob[:4] + (1).to_bytes(2, "little") + blob[6:]
    assert [e.name for fb in fatbin.iter_fatbins(v1, strict=True) for e in fb] == ["sm_90"]
    bad_sm = bytearray(v1)
    bad_sm[16 + 28 : 16 + 32] = (5).to_bytes(4, "little")
    assert list(fatbin.iter_fatbins(bytes(bad_sm), strict=True)) == []
