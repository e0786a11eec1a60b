"""Which fix a failed lock or build points to, read from the failing tool's own output (uv on
the host, uv or pip in a RUN step): one rule each, for `lock` and `build` alike."""

from __future__ import annotations

import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol


class Wheel(Protocol):  # image/packages.py's LockedPackage (which imports this module)
    @property
    def name(self) -> str: ...
    @property
    def wheel(self) -> str: ...
    @property
    def urls(self) -> tuple[str, ...]: ...


class WheelLock(Protocol):  # image/packages.py's PackageLock
    @property
    def packages(self) -> Sequence[Wheel]: ...


# What uv, pip and OpenSSL print when a certificate in the chain is not trusted: behind a
# TLS-intercepting proxy (the proxy signs every site) or with an index on a private CA.
TLS_MARKERS = (
    "certificate_verify_failed",  # pip, Python's ssl
    "self-signed certificate in certificate chain",  # OpenSSL 3
    "self signed certificate in certificate chain",  # OpenSSL 1.1
    "unable to get local issuer certificate",
    "invalid peer certificate",  # uv (rustls): "invalid peer certificate: UnknownIssuer"
    "unknownissuer",
)


def tls_hint(output: str, *, ca_given: bool = False) -> str | None:
    """The fix when `output` shows an untrusted certificate chain (TLS_MARKERS), else None."""
    text = output.lower()
    if not any(marker in text for marker in TLS_MARKERS):
        return None
    if ca_given:
        return (
            "the index's TLS certificate is signed by a CA that the --ca-bundle given does not hold: "
            "give the bundle holding the proxy's (or private) CA with --ca-bundle FILE"
        )
    return (
        "the index's TLS certificate is signed by a CA this machine does not trust (a TLS-intercepting "
        "proxy, or a private CA): give that CA's bundle with --ca-bundle FILE, e.g. "
        "--ca-bundle /etc/ssl/certs/ca-certificates.crt where the host trusts it"
    )


def local_only(lock: WheelLock) -> tuple[Wheel, ...]:
    """The packages the lock found in local folders only (`--find-links`: every URL a file://
    one): a build without a wheelhouse has nowhere to fetch them from unless an index serves
    the same file."""
    return tuple(p for p in lock.packages if p.urls and all(u.startswith("file:") for u in p.urls))


def missing_wheelhouse_hint(lock: WheelLock | None, log: Iterable[str]) -> str | None:
    """The fix when a build without --wheelhouse failed on a wheel the lock took from a local
    folder (its name in the failed build's log), else None."""
    if lock is None:
        return None
    text = "\n".join(log).lower()
    named = [p for p in local_only(lock) if p.name.lower() in text or p.wheel.lower() in text]
    if not named:
        return None
    try:
        path = urllib.request.url2pathname(urllib.parse.urlparse(named[0].urls[0]).path)
    except ValueError:  # a URL urlparse refuses ('file://[x/...': a bracket taken as an IPv6 host)
        return None
    folder = Path(path).parent
    more = f" and {len(named) - 1} more" if len(named) > 1 else ""
    return (
        f"the lock took {named[0].wheel}{more} from the local folder {folder} (--find-links), which a "
        f"build cannot reach: build with --wheelhouse {folder}, or fill one from the lock with "
        "`envbuilder wheelhouse LOCK DIR` and give --wheelhouse DIR"
    )


# What a RUN step prints when its binary is for another CPU and the Docker host cannot emulate it
# (no binfmt handler): BuildKit's runc says "exec /bin/sh: exec format error".
EMULATION_MARKER = "exec format error"


def emulation_hint(output: str, platform: str) -> str | None:
    """The fix when a step of a `platform` image could not run here (EMULATION_MARKER), else None."""
    if EMULATION_MARKER not in output.casefold():
        return None
    return (
        f"the image is for {platform} and this Docker host cannot run its binaries: register QEMU "
        "for it (Debian: apt-get install qemu-user-static binfmt-support; update-binfmts --enable "
        "qemu-aarch64; scripts/arm64-base.sh does both), or build on a machine of that platform "
        "(docs/hosts.md, 'Building for linux/arm64 on an x86_64 machine')"
    )
