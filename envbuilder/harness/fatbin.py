"""What a CUDA library carries: the SASS cubins and PTX (with its ISA version) in the fatbins of an
ELF shared object. Stdlib only: the harness scans the image with it, and envbuilder (matrix
refresh, doctor) imports this same module, so there is one reader.

Layout (observed in real wheels, checked against NVIDIA's cuobjdump in tests/unit/test_fatbin.py):
a fatbin is magic 0xBA55ED50, u16 version, u16 header size, u64 payload size; entries follow, each
with u16 kind (1 = PTX, 2 = ELF cubin), u32 header size, u64 payload size, u32 compressed size
(at 16), the PTX ISA as u16 minor / u16 major (at 24 / 26, PTX entries), the sm number (u32 at
28), u64 flags (at 40: 0x2000 LZ4-compressed, 0x8000 zstd-compressed) and u64 uncompressed size
(at 56). Fatbins live in the `.nv_fatbin` section (`__nv_relfatbin` for relocatable code). Some
libraries also keep fatbins in their data sections and load them themselves (cuModuleLoadData):
cuFFT 12 for CUDA 13 holds 18,227 in `.data` and none, or one sm_75 cubin, in `.nv_fatbin`
(nvidia-cufft 12.5.0.14 read here, and the H200 machine's copy, 2026-12-01). cuobjdump lists only
the sections; scan_file counts both, and says how many entries were embedded.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FATBIN_MAGIC = 0xBA55ED50
_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
_FATBIN_HEADER = struct.Struct("<IHHQ")
_ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQQQ")  # the first 64 bytes of an entry header
KIND_PTX, KIND_ELF = 1, 2
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000
_VERSION_LINE = re.compile(rb"^[ \t]*\.version[ \t]+(\d+\.\d+)", re.MULTILINE)
_PTX_HEAD = 4096  # bytes of decompressed PTX read for its `.version` line (it is near the top)
_SECTIONS = (b".nv_fatbin", b"__nv_relfatbin")
_DATA_SECTIONS = (b".data", b".rodata", b".ldata", b".lrodata", b".data.rel.ro")


class FatbinError(ValueError):
    """The bytes are not a well-formed ELF or fatbin where one was expected."""


@dataclass(frozen=True)
class Entry:
    """One fatbin entry: SASS (a cubin) or PTX for one sm, with the PTX ISA where it is PTX."""

    kind: str  # "sass" | "ptx"
    sm: int  # 90 for sm_90 / compute_90
    isa: str | None = None  # PTX ISA "9.0"; None for SASS or when it could not be read
    isa_source: str | None = None  # ".version" (decompressed text) | "header" | None
    compression: str | None = None  # "zstd" | "lz4" | None

    @property
    def name(self) -> str:
        return f"{'sm' if self.kind == 'sass' else 'compute'}_{self.sm}"


@dataclass(frozen=True)
class Kernels:
    """What one library carries: its SASS sms and its PTX sms with their ISA versions."""

    sass: tuple[int, ...] = ()
    ptx: tuple[tuple[int, str | None], ...] = ()  # (sm, ISA) sorted; ISA None: unread
    entries: int = 0
    notes: tuple[str, ...] = field(default=())
    embedded: int = 0  # of `entries`, those in fatbins kept in the library's data sections

    def to_dict(self) -> dict[str, Any]:
        return {
            "sass": [f"sm_{s}" for s in self.sass],
            "ptx": [{"arch": f"compute_{s}", "isa": isa} for s, isa in self.ptx],
            "entries": self.entries,
            "embedded": self.embedded,
            "notes": list(self.notes),
        }


# --------------------------------------------------------------------------- decompression


def lz4_block_decompress(src: bytes | bytearray | memoryview, limit: int) -> bytes:
    """Decode an LZ4 block (the format of lz4's block API) until `limit` bytes are out or the input
    ends. Pure Python: the harness has no lz4 module. Raises FatbinError on a malformed block."""
    out = bytearray()
    i, n = 0, len(src)
    try:
        while i < n and len(out) < limit:
            token = src[i]
            length, i = _lz4_length(src, i + 1, token >> 4)
            out += src[i : i + length]
            i += length
            if i >= n:
                break
            offset = src[i] | (src[i + 1] << 8)
            i += 2
            if offset == 0 or offset > len(out):
                raise FatbinError("LZ4 block: bad match offset")
            match, i = _lz4_length(src, i, token & 15)
            match += 4
            start = len(out) - offset
            for k in range(match):  # byte by byte: a match may overlap what it writes
                out.append(out[start + k])
    except IndexError as exc:
        raise FatbinError("LZ4 block ends in the middle of a sequence") from exc
    return bytes(out[:limit])


def _lz4_length(src: bytes | bytearray | memoryview, i: int, nibble: int) -> tuple[int, int]:
    """An LZ4 length: the token's nibble, extended by bytes while they are 255 (nibble 15)."""
    length = nibble
    if nibble == 15:
        while True:
            b = src[i]
            i += 1
            length += b
            if b != 255:
                break
    return length, i


def _zstd_decoder() -> Callable[[bytes, int], bytes] | None:
    """A zstd decoder from whatever this Python has: compression.zstd (3.14+), zstandard, or
    backports.zstd; None when there is none (the ISA then comes from the entry header)."""
    for name in ("compression.zstd", "backports.zstd"):
        try:
            mod = __import__(name, fromlist=["ZstdDecompressor"])
        except ImportError:
            continue

        def head(data: bytes, limit: int, _mod: Any = mod) -> bytes:
            return bytes(_mod.ZstdDecompressor().decompress(data, max_length=limit))

        return head
    try:
        import zstandard
    except ImportError:
        return None

    def head_zstandard(data: bytes, limit: int) -> bytes:
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            return bytes(reader.read(limit))

    return head_zstandard


_ZSTD = _zstd_decoder()
ZSTD_DECODER = _ZSTD.__qualname__.rsplit(".", 1)[-1] if _ZSTD is not None else None  # what read zstd PTX


def _ptx_head(payload: bytes | bytearray, flags: int, compressed: int) -> tuple[bytes | None, str | None]:
    """The first bytes of a PTX entry's text, and the compression it used; None when unreadable."""
    if flags & FLAG_ZSTD:
        if _ZSTD is None:
            return None, "zstd"
        try:
            return _ZSTD(bytes(payload[:compressed]), _PTX_HEAD), "zstd"
        except Exception:  # a decoder's own error type; the ISA then comes from the header
            return None, "zstd"
    if flags & FLAG_LZ4:
        try:
            return lz4_block_decompress(payload[:compressed], _PTX_HEAD), "lz4"
        except FatbinError:
            return None, "lz4"
    return bytes(payload[:_PTX_HEAD]), None


def ptx_isa(text: bytes) -> str | None:
    """The ISA of PTX text from its `.version X.Y` directive."""
    m = _VERSION_LINE.search(text)
    return m.group(1).decode() if m else None


# --------------------------------------------------------------------------- fatbins


Buffer = bytes | bytearray | mmap.mmap


def read_fatbin(data: Buffer, offset: int = 0, *, strict: bool = False) -> tuple[list[Entry], int]:
    """The entries of the fatbin at `offset`, and the offset just past it. Raises FatbinError when
    no well-formed fatbin starts there. `strict` (for data sections, where a magic may be chance
    bytes): version 1, a 16-byte header, and only PTX and cubin entries of a plausible sm."""
    if len(data) < offset + _FATBIN_HEADER.size:
        raise FatbinError(f"truncated fatbin header at {offset}")
    magic, _version, header_size, size = _FATBIN_HEADER.unpack_from(data, offset)
    if magic != FATBIN_MAGIC or header_size < _FATBIN_HEADER.size:
        raise FatbinError(f"no fatbin at {offset}")
    if strict and (_version != 1 or header_size != _FATBIN_HEADER.size or size == 0):
        raise FatbinError(f"no fatbin at {offset}")
    pos, end = offset + header_size, offset + header_size + size
    if end > len(data):
        raise FatbinError(f"fatbin at {offset} runs past the end of its data")
    entries = []
    while pos + _ENTRY_HEADER.size <= end:
        (kind, _u, hsize, psize, csize, _u2, isa_minor, isa_major, sm, _no, _nl, flags, _z, _usize) = (
            _ENTRY_HEADER.unpack_from(data, pos)
        )
        if hsize < _ENTRY_HEADER.size or pos + hsize + psize > end:
            raise FatbinError(f"malformed fatbin entry at {pos}")
        if strict and (kind not in (KIND_ELF, KIND_PTX) or not 10 <= sm < 1000):
            raise FatbinError(f"malformed fatbin entry at {pos}")
        if kind == KIND_ELF:
            entries.append(Entry("sass", sm))
        elif kind == KIND_PTX and strict and isa_major:
            # Thousands of embedded PTX entries (cuFFT): their header's ISA, not decompressed.
            entries.append(Entry("ptx", sm, f"{isa_major}.{isa_minor}", "header"))
        elif kind == KIND_PTX:
            comp = csize if (flags & (FLAG_LZ4 | FLAG_ZSTD)) and 0 < csize <= psize else psize
            start = pos + hsize
            head, compression = _ptx_head(data[start : start + min(comp, 1 << 24)], flags, comp)
            isa = ptx_isa(head) if head is not None else None
            header_isa = f"{isa_major}.{isa_minor}" if isa_major else None
            if isa is not None:
                entries.append(Entry("ptx", sm, isa, ".version", compression))
            else:
                entries.append(Entry("ptx", sm, header_isa, "header" if header_isa else None, compression))
        pos += hsize + psize
    return entries, end


def iter_fatbins(
    data: Buffer, start: int = 0, end: int | None = None, *, strict: bool = False
) -> Iterator[list[Entry]]:
    """Every fatbin in data[start:end] (a section, or a whole file that has no section headers):
    each magic found in turn, parsed; bytes that only look like a magic are skipped."""
    stop = len(data) if end is None else end
    pos = start
    while True:
        found = data.find(_MAGIC_BYTES, pos, stop)
        if found < 0:
            return
        try:
            entries, pos = read_fatbin(data, found, strict=strict)
        except FatbinError:
            pos = found + 4
            continue
        yield entries


def elf_sections(data: Buffer, names: tuple[bytes, ...] = _SECTIONS) -> list[tuple[bytes, int, int]]:
    """(name, offset, size) of the named sections of a 64-bit little-endian ELF. Raises
    FatbinError when `data` is not one."""
    if data[:4] != b"\x7fELF":
        raise FatbinError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise FatbinError("not a 64-bit little-endian ELF")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shnum == 0 or shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        return []
    sec = struct.Struct("<IIQQQQ")
    str_off = sec.unpack_from(data, shoff + shstrndx * shentsize)[4]
    found = []
    for i in range(shnum):
        name_off, sh_type, _flags, _addr, off, size = sec.unpack_from(data, shoff + i * shentsize)
        start = str_off + name_off
        name = bytes(data[start : start + 64]).split(b"\0", 1)[0]
        if name in names and sh_type != 8 and off + size <= len(data):  # 8 = SHT_NOBITS
            found.append((name, off, size))
    return found


def elf_entries(data: Buffer) -> list[Entry]:
    """Every fatbin entry of one ELF shared object: the executable fatbins of `.nv_fatbin`, else
    the relocatable ones (what cuobjdump lists by default). Raises FatbinError for a non-ELF."""
    sections = elf_sections(data)
    chosen = [s for s in sections if s[0] == b".nv_fatbin"] or sections
    entries: list[Entry] = []
    for _name, off, size in chosen:
        for fb in iter_fatbins(data, off, off + size):
            entries += fb
    return entries


def embedded_entries(data: Buffer) -> list[Entry]:
    """The entries of the fatbins an ELF shared object keeps in its data sections, which it loads
    itself (cuFFT); well-formed ones only (read_fatbin strict)."""
    entries: list[Entry] = []
    for _name, off, size in elf_sections(data, _DATA_SECTIONS):
        for fb in iter_fatbins(data, off, off + size, strict=True):
            entries += fb
    return entries


def elf_fatbins(data: Buffer) -> tuple[list[list[Entry]], list[list[Entry]]]:
    """Every fatbin of one ELF shared object, one entry list each (one kernel set: the kernels of
    one compilation unit, which the CUDA runtime loads as one module): those of its fatbin sections
    (as elf_entries chooses them) and those kept in its data sections (as embedded_entries)."""
    sections = elf_sections(data)
    chosen = [s for s in sections if s[0] == b".nv_fatbin"] or sections
    own = [fb for _n, off, size in chosen for fb in iter_fatbins(data, off, off + size)]
    kept = [
        fb
        for _n, off, size in elf_sections(data, _DATA_SECTIONS)
        for fb in iter_fatbins(data, off, off + size, strict=True)
    ]
    return own, kept


def scan_elf(data: Buffer) -> Kernels:
    """The kernels of one ELF shared object: its fatbin sections' and its data sections' entries."""
    return summarize(elf_entries(data), embedded_entries(data))


def summarize(entries: list[Entry], embedded: list[Entry] | None = None) -> Kernels:
    embedded = embedded or []
    section, entries = entries, [*entries, *embedded]
    sass = tuple(sorted({e.sm for e in entries if e.kind == "sass"}))
    ptx: dict[int, set[str | None]] = {}
    for e in entries:
        if e.kind == "ptx":
            ptx.setdefault(e.sm, set()).add(e.isa)
    notes = []
    unread = [e for e in entries if e.kind == "ptx" and e.isa is None]
    if unread:
        notes.append(f"{len(unread)} PTX entries whose ISA could not be read")
    by_header = [e for e in section if e.kind == "ptx" and e.isa_source == "header"]
    if by_header:
        notes.append(
            f"ISA of {len(by_header)} PTX entries from the fatbin header (no decoder for their compression)"
        )
    # One ISA per PTX sm: the newest, which decides the driver it needs.
    pairs = tuple(
        (sm, max((i for i in isas if i), key=_isa_key, default=None)) for sm, isas in sorted(ptx.items())
    )
    if embedded:
        notes.append(
            f"{len(embedded)} entries in fatbins the library keeps in its data sections and loads itself"
            " (their PTX ISA from the fatbin header)"
        )
    return Kernels(sass=sass, ptx=pairs, entries=len(entries), notes=tuple(notes), embedded=len(embedded))


def _isa_key(isa: str) -> tuple[int, ...]:
    return tuple(int(p) for p in isa.split("."))


def file_entries(path: str | Path) -> list[Entry]:
    """elf_entries of the shared object at `path`, memory-mapped (a 1 GB library is not read into
    memory). Raises FatbinError for a non-ELF or empty file, OSError when it cannot be read."""
    with Path(path).open("rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise FatbinError("empty file") from None
        with mm:
            return elf_entries(mm)


def scan_file(path: str | Path) -> Kernels:
    """scan_elf of the shared object at `path`, memory-mapped. Raises as file_entries does."""
    with Path(path).open("rb") as fh:
        try:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise FatbinError("empty file") from None
        with mm:
            return scan_elf(mm)
