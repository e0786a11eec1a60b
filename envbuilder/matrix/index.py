"""Package indexes `matrix refresh` reads: PyPI's JSON API (default), any PEP 503 simple index, or a
local wheelhouse folder. Each gives the same thing: a project's files (name, where, sha256, size).

torch's cuXYZ builds live on download.pytorch.org's own index, which the development machines
cannot reach: `--index-url https://download.pytorch.org/whl/cu130` works where it is reachable.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Protocol

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envbuilder.errors import PackageIndexError
from envbuilder.hashing import sha256_file_hex

PYPI_JSON = "https://pypi.org/pypi"
TIMEOUT_S = 60.0
USER_AGENT = "envbuilder-matrix-refresh"


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFile:
    """One file of a project on an index."""

    filename: str
    url: str  # https://... or file:///...
    sha256: str | None
    size: int | None = None
    requires_python: str | None = None
    yanked: bool = False

    @property
    def version(self) -> Version | None:
        """The version in a wheel's file name; None for sdists and odd names."""
        try:
            return parse_wheel_filename(self.filename)[1]
        except (InvalidWheelFilename, InvalidVersion):
            return None


class PackageIndex(Protocol):
    """Where `matrix refresh` learns which files a project has."""

    location: str

    def files(self, project: str) -> list[IndexFile]:
        """Every file of `project` (empty when the index has no such project). Raises
        PackageIndexError when the index cannot be read."""
        ...


def _open(url: str, what: str) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "*/*"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            data: bytes = resp.read()
            return data
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise FileNotFoundError(url) from exc
        raise PackageIndexError(
            f"{what}: {url} answered HTTP {exc.code}", hint="check --index-url, or retry later"
        ) from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PackageIndexError(
            f"{what}: cannot reach {url} ({reason})",
            hint="check the network and --index-url; a local folder of wheels works offline (--wheelhouse)",
        ) from exc


class PypiJsonIndex:
    """PyPI's JSON API: GET {base}/{project}/json lists every release's files with sha256."""

    def __init__(self, base: str = PYPI_JSON) -> None:
        self.location = base.rstrip("/")

    def files(self, project: str) -> list[IndexFile]:
        url = f"{self.location}/{canonicalize_name(project)}/json"
        try:
            doc = json.loads(_open(url, f"reading {project} from the index"))
        except FileNotFoundError:
            return []
        except json.JSONDecodeError as exc:
            raise PackageIndexError(f"{url} did not answer JSON: {exc}") from exc
        out = []
        for files in (doc.get("releases") or {}).values():
            for f in files:
                out.append(
                    IndexFile(
                        filename=str(f["filename"]),
                        url=urllib.parse.urljoin(url, str(f["url"])),  # mirrors give relative URLs
                        sha256=(f.get("digests") or {}).get("sha256"),
                        size=f.get("size"),
                        requires_python=f.get("requires_python"),
                        yanked=bool(f.get("yanked", False)),
                    )
                )
        return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            d = dict(attrs)
            if d.get("href"):
                self.links.append((str(d["href"]), d))


class SimpleIndex:
    """A PEP 503 simple index ({base}/{project}/ lists <a href="...#sha256=..."> links), as pip's
    --index-url takes; torch's download.pytorch.org/whl/cuXYZ is one."""

    def __init__(self, base: str) -> None:
        self.location = base.rstrip("/")

    def files(self, project: str) -> list[IndexFile]:
        url = f"{self.location}/{canonicalize_name(project)}/"
        try:
            html = _open(url, f"reading {project} from the index").decode("utf-8", "replace")
        except FileNotFoundError:
            return []
        parser = _Links()
        parser.feed(html)
        out = []
        for href, attrs in parser.links:
            full = urllib.parse.urljoin(url, href)
            path, _, fragment = full.partition("#")
            sha = fragment[len("sha256=") :] if fragment.startswith("sha256=") else None
            out.append(
                IndexFile(
                    filename=urllib.parse.unquote(path.rsplit("/", 1)[-1]),
                    url=path,
                    sha256=sha,
                    requires_python=attrs.get("data-requires-python"),
                    yanked="data-yanked" in attrs,
                )
            )
        return out


class Wheelhouse:
    """A local folder of wheels (pip download -d DIR): offline, sha256 computed from the files."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.location = str(self.folder)
        if not self.folder.is_dir():
            raise PackageIndexError(
                f"wheelhouse {self.folder} is not a folder", hint="pass a folder of .whl files"
            )

    def files(self, project: str) -> list[IndexFile]:
        want = canonicalize_name(project)
        out = []
        for path in sorted(self.folder.glob("*.whl")):
            try:
                name = parse_wheel_filename(path.name)[0]
            except (InvalidWheelFilename, InvalidVersion):
                continue
            if name == want:
                out.append(
                    IndexFile(
                        filename=path.name,
                        url=path.resolve().as_uri(),
                        sha256=sha256_file_hex(path),
                        size=path.stat().st_size,
                    )
                )
        return out


def open_index(index_url: str | None, wheelhouse: Path | None) -> PackageIndex:
    """The index the options name: a wheelhouse folder, a simple index URL (or a JSON API URL
    ending in /pypi), else PyPI's JSON API."""
    if wheelhouse is not None:
        return Wheelhouse(wheelhouse)
    if index_url is None:
        return PypiJsonIndex()
    if re.search(r"/pypi/?$", index_url):
        return PypiJsonIndex(index_url)
    return SimpleIndex(index_url)


def releases(files: list[IndexFile]) -> Iterator[tuple[Version, list[IndexFile]]]:
    """Files grouped by the version in their wheel name, final releases only, oldest first; yanked
    files and sdists left out."""
    by_version: dict[Version, list[IndexFile]] = {}
    for f in files:
        v = f.version
        if v is None or f.yanked or v.is_prerelease or v.is_devrelease:
            continue
        by_version.setdefault(v, []).append(f)
    for v in sorted(by_version):
        yield v, by_version[v]
