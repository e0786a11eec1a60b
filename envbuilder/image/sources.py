"""Where an image's Python packages and code come from: requirement files (pip's format, with
`-r` includes), a pyproject.toml, an existing uv.lock, the extra package indexes, and the project
folder copied into the image. Paths are relative to the spec's folder; nothing here resolves.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envbuilder.errors import SpecError

INDEX_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
# A URL's path: segments of unreserved characters and %-escapes, none of them `.` or `..` (also
# escaped, %2e): a client resolves those away (RFC 3986 5.2.4), so what is recorded would not be
# what is fetched. Shared by the index URLs and a spec's `source:`.
URL_PATH = r"(?:/(?!(?:\.|%2[eE]){1,2}(?:/|$))[A-Za-z0-9._~%+-]*)*"
# https:// without credentials, query or fragment; http:// only for a loopback mirror.
INDEX_URL_RE = re.compile(
    r"^(?:https://[A-Za-z0-9.-]+|http://(?:127\.0\.0\.1|localhost))(?::[0-9]{1,5})?" + URL_PATH + "$"
)
# A BuildKit secret id, also the file name under /run/secrets/ the build reads: not `.` or `..`.
SECRET_ID_RE = re.compile(r"^(?!\.\.?$)[A-Za-z0-9_.-]{1,64}$")
USERNAME_RE = re.compile(r"^[A-Za-z0-9_.@+-]{1,128}$")
# A relative path of plain segments (no `..`, no leading `/`): it names a file beside the spec.
REL_PATH_RE = re.compile(r"^(?!/)(?:[A-Za-z0-9_.+-]+/)*[A-Za-z0-9_.+-]+/?$")
EXTRA_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Options in a requirements file that would choose where packages come from: the spec's
# `indexes:` does that, once, for the lock and the build alike.
_INDEX_OPTIONS = (
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--no-index",
    "--trusted-host",
)
_INCLUDE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")
MAX_INCLUDES = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class PackageIndex:
    """An extra package index (the user's own packages). Its password or token never sits in the
    spec: `secret` names the BuildKit secret (build) and UV_INDEX_<NAME>_PASSWORD holds it (lock)."""

    name: str
    url: str
    username: str | None = None
    secret: str | None = None

    @property
    def env_prefix(self) -> str:
        """uv's credential variables for this index: UV_INDEX_<NAME>_USERNAME / _PASSWORD."""
        return "UV_INDEX_" + re.sub(r"[^A-Z0-9]", "_", self.name.upper())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "url": self.url}
        if self.username is not None:
            out["username"] = self.username
        if self.secret is not None:
            out["secret"] = self.secret
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectFile:
    """A pyproject.toml or uv.lock input, with the optional dependency groups (extras) asked for."""

    path: str
    extras: tuple[str, ...] = ()

    def to_dict(self) -> str | dict[str, Any]:
        return {"path": self.path, "extras": list(self.extras)} if self.extras else self.path


def spec_file(base_dir: Path, rel: str, field: str, where: str) -> Path:
    """`rel` beside the spec, which must exist. Raises SpecError."""
    path = base_dir / rel
    try:
        found = path.is_file()
    except OSError:  # a name the file system refuses (too long): not a file of the spec's either
        found = False
    if not found:
        raise SpecError(
            f"{where}: field {field!r}: {rel!r} is not a file (looked in {base_dir})",
            hint="paths are relative to the spec's folder",
        )
    return path


def requirement_files(path: Path, *, root: Path, where: str) -> list[Path]:
    """`path` and every file it includes (`-r`/`-c`, recursively), in reading order.

    Raises SpecError for an index option (with the hint to use `indexes:`), an include that is
    missing or outside `root` (the spec's folder), or more than MAX_INCLUDES files.
    """
    seen: list[Path] = []
    root = root.resolve()
    todo = [path.resolve()]
    while todo:
        current = todo.pop(0)
        if current in seen:
            continue
        if len(seen) >= MAX_INCLUDES:
            raise SpecError(f"{where}: more than {MAX_INCLUDES} requirement files included")
        seen.append(current)
        try:
            text = current.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(f"{where}: cannot read requirements file {current}: {exc}") from None
        for number, line in _logical_lines(text):
            words = _words(line, current, number)
            if not words:
                continue
            word = words[0]
            if word.startswith("--"):
                head, _, inline = word.partition("=")
            elif word.startswith("-"):
                head, inline = word[:2], word[2:]
            else:
                continue
            if head in _INDEX_OPTIONS:
                raise SpecError(
                    f"{current}:{number}: {head} is refused in a requirements file",
                    hint="name the index once in the spec's `indexes:` (its token as a build secret)",
                )
            if head in _INCLUDE_OPTIONS:
                target = inline or (words[1] if len(words) > 1 else "")
                included = (current.parent / target).resolve()
                if not target or not included.is_file():
                    raise SpecError(f"{current}:{number}: included file {target!r} not found")
                if root not in included.parents:
                    raise SpecError(
                        f"{current}:{number}: included file {target!r} is outside {root}",
                        hint="keep the included files beside the spec (the lock records their hashes)",
                    )
                todo.append(included)
    return seen


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """pip's reading, as (first line number, text): a trailing backslash joins lines; `#` at
    the start or after a space starts a comment."""
    out: list[tuple[int, str]] = []
    pending, start = "", 1
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        pending = ""
        out.append((start, re.sub(r"(^|\s)#.*$", "", line).strip()))
    if pending:
        out.append((start, pending.strip()))
    return out


def _words(line: str, path: Path, number: int) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise SpecError(f"{path}:{number}: cannot read the line ({exc})") from None
