"""Cut the fatbin sections out of a real shared object into a minimal, valid ELF64 file (ELF header,
the sections' bytes unchanged, a section-name table and section headers), so tests can carry the
device code of a 500 MB library in a few kilobytes. cuobjdump reads the slices as it reads the
originals (tests/unit/test_fatbin.py checks that it does).

    python tests/data/fatbin/slice_elf.py LIB.so OUT.so
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

KEEP = (b".nv_fatbin", b"__nv_relfatbin")


def slice_elf(data: bytes) -> bytes:
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sec = struct.Struct("<IIQQQQIIQQ")
    headers = [sec.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    str_off = headers[shstrndx][4]

    def name(h: tuple[int, ...]) -> bytes:
        start = str_off + h[0]
        return data[start : data.index(b"\0", start)]

    # What cuobjdump lists by default: the executable fatbin, else the relocatable one.
    kept = [h for h in headers if name(h) == KEEP[0]] or [h for h in headers if name(h) == KEEP[1]]
    out = bytearray(data[:64])  # the original ELF header, patched below
    names = bytearray(b"\0")
    new_headers: list[bytes] = [b"\0" * 64]
    for h in kept:
        while len(out) % 8:
            out += b"\0"
        offset = len(out)
        out += data[h[4] : h[4] + h[5]]
        name_off = len(names)
        names += name(h) + b"\0"
        new_headers.append(sec.pack(name_off, h[1], h[2], h[3], offset, h[5], 0, 0, h[8], h[9]))
    name_off = len(names)
    names += b".shstrtab\0"
    strtab_offset = len(out)
    out += names
    new_headers.append(sec.pack(name_off, 3, 0, 0, strtab_offset, len(names), 0, 0, 1, 0))
    while len(out) % 8:
        out += b"\0"
    new_shoff = len(out)
    for packed in new_headers:
        out += packed
    struct.pack_into("<Q", out, 0x20, 0)  # e_phoff: no program headers
    struct.pack_into("<Q", out, 0x28, new_shoff)
    struct.pack_into("<HHHH", out, 0x36, 0, 0, 64, len(new_headers))  # phentsize, phnum, shentsize, shnum
    struct.pack_into("<H", out, 0x3E, len(new_headers) - 1)  # shstrndx
    return bytes(out)


if __name__ == "__main__":
    Path(sys.argv[2]).write_bytes(slice_elf(Path(sys.argv[1]).read_bytes()))
