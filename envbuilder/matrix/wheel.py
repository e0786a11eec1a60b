"""Reading only what is needed of a wheel where it lies: its zip directory, METADATA and RECORD,
and single members, through HTTP range requests (PyPI's file host answers them: 206 Partial
Content) or from a local file. A server that ignores ranges gets the whole wheel downloaded once.

Every member extracted is checked against its CRC-32 (zip) and its sha256 (the wheel's RECORD).
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import struct
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.parser import HeaderParser
from pathlib import Path
from typing import IO

from envbuilder.errors import PackageIndexError
from envbuilder.matrix.index import TIMEOUT_S, USER_AGENT

_CHUNK = 1 << 20


@dataclass(slots=True)
class Transfer:
    """Bytes moved for one wheel: what `refresh` reports against the wheel's size."""

    fetched: int = 0
    requests: int = 0
    ranges: bool = True  # False: the server ignored Range and the whole file came


class _RemoteFile(io.RawIOBase):
    """A seekable, read-only file over HTTP range requests."""

    def __init__(self, url: str, size: int, transfer: Transfer) -> None:
        super().__init__()
        self.url, self.size, self.pos, self.transfer = url, size, 0, transfer

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buf: memoryview) -> int:  # type: ignore[override]
        n = min(len(buf), self.size - self.pos)
        if n <= 0:
            return 0
        data = _get(self.url, self.pos, self.pos + n - 1, self.transfer)
        buf[: len(data)] = data
        self.pos += len(data)
        return len(data)


def _request(url: str, first: int | None = None, last: int | None = None) -> urllib.request.Request:
    headers = {"User-Agent": USER_AGENT}
    if first is not None:
        headers["Range"] = f"bytes={first}-{'' if last is None else last}"
    return urllib.request.Request(url, headers=headers)


def _fail(url: str, exc: Exception) -> PackageIndexError:
    reason = getattr(exc, "reason", None) or getattr(exc, "code", None) or exc
    return PackageIndexError(
        f"cannot read {url} ({reason})", hint="retry; a local folder of wheels works offline (--wheelhouse)"
    )


def _get(url: str, first: int, last: int, transfer: Transfer) -> bytes:
    try:
        with urllib.request.urlopen(_request(url, first, last), timeout=TIMEOUT_S) as resp:
            if resp.status != 206:
                raise PackageIndexError(f"{url} stopped answering range requests (HTTP {resp.status})")
            data: bytes = resp.read()
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise _fail(url, exc) from exc
    transfer.fetched += len(data)
    transfer.requests += 1
    return data


@dataclass(slots=True)
class WheelReader:
    """One wheel, local or remote, opened for member reads. Use as a context manager."""

    url: str
    filename: str
    transfer: Transfer = field(default_factory=Transfer)
    _fh: IO[bytes] | None = None
    _zip: zipfile.ZipFile | None = None
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __enter__(self) -> WheelReader:
        try:
            self._fh = self._stack.enter_context(self._open())
            self._zip = self._stack.enter_context(zipfile.ZipFile(self._fh))
        except zipfile.BadZipFile as exc:
            self._stack.close()
            raise PackageIndexError(f"{self.filename} is not a valid wheel (zip): {exc}") from exc
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _open(self) -> IO[bytes]:
        if self.url.startswith("file://"):
            return Path(urllib.request.url2pathname(self.url[len("file://") :])).open("rb")
        # One request for the tail tells whether ranges work and carries the zip directory.
        try:
            with urllib.request.urlopen(_request(self.url, 0, 0), timeout=TIMEOUT_S) as resp:
                status, total = resp.status, resp.headers.get("Content-Range", "")
                if status == 206 and "/" in total:
                    size = int(total.rsplit("/", 1)[1])
                    resp.read()
                    self.transfer.requests += 1
                    raw = _RemoteFile(self.url, size, self.transfer)
                    return io.BufferedReader(raw, buffer_size=1 << 16)
                # No range support: keep the whole wheel in a temporary file, once.
                self.transfer.ranges = False
                tmp = tempfile.TemporaryFile()  # noqa: SIM115 - returned to the caller, who closes it
                for block in iter(lambda: resp.read(_CHUNK), b""):
                    tmp.write(block)
                    self.transfer.fetched += len(block)
                self.transfer.requests += 1
                tmp.seek(0)
                return tmp
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise _fail(self.url, exc) from exc

    @property
    def zip(self) -> zipfile.ZipFile:
        assert self._zip is not None, "use WheelReader as a context manager"
        return self._zip

    def names(self) -> list[str]:
        return self.zip.namelist()

    def read(self, name: str) -> bytes:
        """A small member's bytes (METADATA, RECORD). Raises PackageIndexError if absent."""
        try:
            return self.zip.read(name)
        except KeyError as exc:
            raise PackageIndexError(f"{self.filename} has no member {name}") from exc

    def dist_info(self) -> str:
        tops = {n.split("/", 1)[0] for n in self.names() if n.split("/", 1)[0].endswith(".dist-info")}
        if len(tops) != 1:
            raise PackageIndexError(f"{self.filename}: expected one .dist-info folder, found {sorted(tops)}")
        return tops.pop()

    def metadata(self) -> WheelMetadata:
        """Requires-Python and Requires-Dist of the wheel's METADATA."""
        msg = HeaderParser().parsestr(self.read(f"{self.dist_info()}/METADATA").decode("utf-8", "replace"))
        return WheelMetadata(
            name=str(msg.get("Name", "")),
            version=str(msg.get("Version", "")),
            requires_python=msg.get("Requires-Python"),
            requires_dist=tuple(str(r) for r in msg.get_all("Requires-Dist") or ()),
        )

    def record(self) -> dict[str, str]:
        """member -> its sha256 (hex) from the wheel's RECORD."""
        text = self.read(f"{self.dist_info()}/RECORD").decode("utf-8", "replace")
        out = {}
        for row in csv.reader(text.splitlines()):
            if len(row) >= 2 and row[1].startswith("sha256="):
                digest = base64.urlsafe_b64decode(row[1][len("sha256=") :] + "==")
                out[row[0]] = digest.hex()
        return out

    @contextlib.contextmanager
    def extracted(self, name: str, folder: Path) -> Iterator[Path]:
        """The member `name` decompressed into a temporary file under `folder` (deleted after),
        streamed in one request; checked against its CRC-32 and the RECORD's sha256. Raises
        PackageIndexError for a missing or corrupt member."""
        try:
            info = self.zip.getinfo(name)
        except KeyError as exc:
            raise PackageIndexError(f"{self.filename} has no member {name}") from exc
        want = self.record().get(name)
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".so")
        path = Path(tmp)
        try:
            with open(fd, "wb") as out:  # noqa: PTH123 - the descriptor from mkstemp
                crc, sha = self._stream(info, out)
            if crc != info.CRC:
                raise PackageIndexError(f"{self.filename}: {name} fails its CRC-32 check")
            if want is not None and sha != want:
                raise PackageIndexError(f"{self.filename}: {name} does not match the sha256 in RECORD")
            yield path
        finally:
            path.unlink(missing_ok=True)

    def _stream(self, info: zipfile.ZipInfo, out: IO[bytes]) -> tuple[int, str]:
        fh = self._fh
        assert fh is not None
        fh.seek(info.header_offset)
        local = fh.read(30)
        sig, *_rest = struct.unpack("<IHHHHHIIIHH", local)
        if sig != 0x04034B50:
            raise PackageIndexError(f"{self.filename}: bad local header for {info.filename}")
        name_len, extra_len = struct.unpack_from("<HH", local, 26)
        start = info.header_offset + 30 + name_len + extra_len
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise PackageIndexError(f"{self.filename}: {info.filename} uses zip method {info.compress_type}")
        inflate = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
        crc, sha = 0, hashlib.sha256()
        for block in self._blocks(start, info.compress_size):
            data = inflate.decompress(block) if inflate else block
            crc = zlib.crc32(data, crc)
            sha.update(data)
            out.write(data)
        if inflate:
            tail = inflate.flush()
            crc = zlib.crc32(tail, crc)
            sha.update(tail)
            out.write(tail)
        return crc, sha.hexdigest()

    def _blocks(self, start: int, length: int) -> Iterator[bytes]:
        """The raw bytes [start, start + length) in blocks: one streamed request when remote."""
        raw = getattr(self._fh, "raw", None)
        if isinstance(raw, _RemoteFile):
            try:
                with urllib.request.urlopen(
                    _request(self.url, start, start + length - 1), timeout=TIMEOUT_S
                ) as resp:
                    self.transfer.requests += 1
                    for block in iter(lambda: resp.read(_CHUNK), b""):
                        self.transfer.fetched += len(block)
                        yield block
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                raise _fail(self.url, exc) from exc
            return
        fh = self._fh
        assert fh is not None
        fh.seek(start)
        left = length
        while left > 0:
            block = fh.read(min(_CHUNK, left))
            if not block:
                raise PackageIndexError(f"{self.filename} is truncated")
            left -= len(block)
            yield block


@dataclass(frozen=True, slots=True, kw_only=True)
class WheelMetadata:
    name: str
    version: str
    requires_python: str | None
    requires_dist: tuple[str, ...]
