"""`envbuilder wheelhouse`: the exact wheels of a package lock, downloaded and checked, so a build
can run with `--wheelhouse DIR --network none` on a machine that reaches no index.

Each wheel comes from the first of its locked URLs that answers (a local find-links copy, the
index it was resolved from); its sha256 must equal the lock's, or nothing is kept. Files are
written whole (temporary name, then rename); a wheel already there with the right hash is kept.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from envbuilder.errors import LockError
from envbuilder.hashing import sha256_file_hex
from envbuilder.image.packages import LockedPackage, PackageLock
from envbuilder.image.secrets import is_secret_ref
from envbuilder.image.sources import PackageIndex

CHUNK = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchedWheel:
    package: LockedPackage
    path: Path
    source: str  # the URL it came from, or "kept" when it was already there
    size: int


def fill_wheelhouse(
    lock: PackageLock,
    folder: Path,
    *,
    environ: Mapping[str, str] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> list[FetchedWheel]:
    """Put every wheel of `lock` into `folder`, each checked against its locked sha256.

    Credentials of the spec's indexes come from UV_INDEX_<NAME>_USERNAME / _PASSWORD (as for
    `uv`). Raises LockError (a hash mismatch, or no URL that answers) naming the package.
    """
    env = os.environ if environ is None else environ
    say = on_progress or (lambda _m: None)
    folder.mkdir(parents=True, exist_ok=True)
    out: list[FetchedWheel] = []
    total = len(lock.packages)
    for n, pkg in enumerate(sorted(lock.packages, key=lambda p: p.name), start=1):
        dest = folder / pkg.wheel
        if dest.is_file() and sha256_file_hex(dest) == pkg.sha256:
            out.append(FetchedWheel(package=pkg, path=dest, source="kept", size=dest.stat().st_size))
            say(f"[{n}/{total}] {pkg.wheel}: already there, sha256 ok")
            continue
        errors: list[str] = []
        for url in pkg.urls:
            if is_secret_ref(url.partition("/")[0]):  # <secret:NAME>/...: the lock keeps no such URL
                errors.append(f"{url}: a mirror given as a secret (the lock does not record it)")
                continue
            try:
                size = _fetch(url, dest, pkg, _auth_for(url, lock.indexes, env))
            except LockError:
                raise
            except (OSError, urllib.error.URLError, ValueError) as exc:
                errors.append(f"{url}: {exc}")
                continue
            out.append(FetchedWheel(package=pkg, path=dest, source=url, size=size))
            say(f"[{n}/{total}] {pkg.wheel}: {size / 1e6:,.1f} MB, sha256 ok")
            break
        else:
            raise LockError(
                f"no locked URL of {pkg.wheel} could be read: " + "; ".join(errors or ["no URL in the lock"]),
                hint="check the network or the index credentials (UV_INDEX_<NAME>_PASSWORD), "
                "or give --find-links DIR where a copy lies",
            )
    return out


def _fetch(url: str, dest: Path, pkg: LockedPackage, auth: str | None) -> int:
    parsed = urllib.parse.urlparse(url)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{pkg.wheel}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    size = 0
    try:
        with os.fdopen(fd, "wb") as out:
            if parsed.scheme == "file":
                with Path(urllib.request.url2pathname(parsed.path)).open("rb") as src:
                    size = _copy(src, out, digest)
            elif parsed.scheme in ("https", "http"):
                request = urllib.request.Request(url, headers={"User-Agent": "envbuilder"})
                if auth is not None:
                    request.add_header("Authorization", f"Basic {auth}")
                with urllib.request.urlopen(request, timeout=60) as src:
                    size = _copy(src, out, digest)
            else:
                raise ValueError(f"unsupported URL scheme {parsed.scheme!r}")
        if digest.hexdigest() != pkg.sha256:
            raise LockError(
                f"{pkg.wheel} from {url} has sha256 {digest.hexdigest()}, the lock says {pkg.sha256}",
                hint="the index serves another file under this name: do not use it; re-lock if "
                "the change is expected",
            )
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)
    return size


def _copy(src: IO[bytes], out: IO[bytes], digest: Any) -> int:
    size = 0
    while chunk := src.read(CHUNK):
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
    return size


def _auth_for(url: str, indexes: tuple[PackageIndex, ...], env: Mapping[str, str]) -> str | None:
    """Basic credentials for a URL on the host of one of the spec's indexes, from uv's variables."""
    host = urllib.parse.urlparse(url).netloc
    for index in indexes:
        if urllib.parse.urlparse(index.url).netloc != host:
            continue
        password = env.get(f"{index.env_prefix}_PASSWORD")
        if password is None:
            return None
        user = env.get(f"{index.env_prefix}_USERNAME", index.username or "__token__")
        return base64.b64encode(f"{user}:{password}".encode()).decode()
    return None
