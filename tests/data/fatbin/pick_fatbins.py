"""Cut a few kernel sets of a real shared object into a minimal ELF64 file: its smallest fatbin of
`.nv_fatbin`, its two smallest fatbins kept in data sections (loaded by the library itself), both
unchanged, and each distinct NUL-terminated sm_XY name of its `.rodata` once (the target names of
its NVPTX backend). The result has the same kinds of kernel sets (full SASS; SASS without the
newest arch) and the same compiler target names as the original, in a few tens of kilobytes: the
fixture of the generated-row check (tests/unit/test_matrix_check.py).

    python tests/data/fatbin/pick_fatbins.py LIB.so OUT.so
"""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

MAGIC = struct.pack("<I", 0xBA55ED50)
_SEC = struct.Struct("<IIQQQQIIQQ")
_DATA = (b".data", b".rodata", b".ldata", b".lrodata", b".data.rel.ro")


def _sections(data: bytes) -> list[tuple[bytes, int, int]]:
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [_SEC.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    str_off = headers[shstrndx][4]
    out = []
    for h in headers:
        start = str_off + h[0]
        out.append((data[start : data.index(b"\0", start)], h[4], h[5]))
    return out


def _fatbins(data: bytes, off: int, size: int, strict: bool) -> list[bytes]:
    found, pos, end = [], off, off + size
    while (at := data.find(MAGIC, pos, end)) >= 0:
        _m, version, hsize, psize = struct.unpack_from("<IHHQ", data, at)
        ok = hsize >= 16 and at + hsize + psize <= end and (not strict or (version == 1 and hsize == 16))
        if ok and psize:
            found.append(data[at : at + hsize + psize])
            pos = at + hsize + psize
        else:
            pos = at + 4
    return found


def _elf(template: bytes, sections: list[tuple[bytes, bytes]]) -> bytes:
    out = bytearray(template[:64])
    names = bytearray(b"\0")
    headers = [b"\0" * 64]
    for name, body in sections:
        while len(out) % 8:
            out += b"\0"
        offset = len(out)
        out += body
        headers.append(_SEC.pack(len(names), 1, 2, 0, offset, len(body), 0, 0, 8, 0))
        names += name + b"\0"
    name_off = len(names)
    names += b".shstrtab\0"
    strtab = len(out)
    out += names
    headers.append(_SEC.pack(name_off, 3, 0, 0, strtab, len(names), 0, 0, 1, 0))
    while len(out) % 8:
        out += b"\0"
    shoff = len(out)
    for h in headers:
        out += h
    struct.pack_into("<Q", out, 0x20, 0)
    struct.pack_into("<Q", out, 0x28, shoff)
    struct.pack_into("<HHHH", out, 0x36, 0, 0, 64, len(headers))
    struct.pack_into("<H", out, 0x3E, len(headers) - 1)
    return bytes(out)


def pick(data: bytes) -> bytes:
    secs = _sections(data)
    own = [fb for n, o, s in secs if n == b".nv_fatbin" for fb in _fatbins(data, o, s, False)]
    kept = [fb for n, o, s in secs if n in _DATA for fb in _fatbins(data, o, s, True)]
    found: set[bytes] = set()
    for n, o, s in secs:
        if n == b".rodata":
            found |= {m.group(0) for m in re.finditer(rb"sm_\d{2,3}[af]?\0", data[o : o + s])}
    names = b"".join(sorted(found))
    body = bytearray()
    for fb in sorted(kept, key=len)[:2]:
        while len(body) % 8:
            body += b"\0"
        body += fb
    return _elf(data, [(b".nv_fatbin", min(own, key=len)), (b".rodata", bytes(body) + b"\0" + bytes(names))])


if __name__ == "__main__":
    Path(sys.argv[2]).write_bytes(pick(Path(sys.argv[1]).read_bytes()))
