"""The lock file (`*.lock.json`): the resolved stack, the spec, every Python package pinned to
one wheel and its sha256 (per platform), and what a build produced.

Written atomically (temp file in the same directory, fsync, os.replace), so a crash or Ctrl-C
leaves the previous file intact. `lock_hash` covers only what changes the image (stack, spec,
packages), never the host probe or timestamps, so images built from the same inputs carry the
same hash.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.bounded import load_json, read_text_bounded
from envbuilder.errors import LockError, SpecError
from envbuilder.hashing import sha256_hex
from envbuilder.host.model import Host
from envbuilder.image.packages import PackageLock, package_lock_from_dict
from envbuilder.image.sources import INDEX_URL_RE
from envbuilder.image.validate import IMAGE_REF_RE
from envbuilder.resolve.model import Request, Resolution, Stack
from envbuilder.typed import (
    ANY,
    INT,
    NONNEGATIVE,
    STR,
    TEXT,
    WrongType,
    as_json_object,
    check_document,
    list_of,
    map_of,
    obj,
    opt,
)

LOCK_SCHEMA_VERSION = 2
_HINT = "regenerate it with `envbuilder lock SPEC` (or `envbuilder resolve --lock FILE`)"


@dataclass(frozen=True, slots=True, kw_only=True)
class InstalledDist:
    """One installed distribution as the image holds it (envbuilder/harness/installed.py reads
    it): `record_sha256` is the digest of its RECORD rows minus what installers write
    themselves, so the same wheel gives the same digest whichever installer put it there."""

    name: str
    version: str
    record_sha256: str | None  # None: no RECORD (a distribution not installed from a wheel)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "record_sha256": self.record_sha256}


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildRecord:
    """What `envbuilder build` produced; enough to rebuild the same image later."""

    image_id: str
    base_image: str  # the reference the Dockerfile used (FROM)
    base_image_digest: str | None  # name@sha256:... when known; a local image's ID otherwise
    dockerfile_sha256: str
    packages: tuple[str, ...]  # name==version of every distribution in the image, sorted
    tags: tuple[str, ...]
    pushed: tuple[str, ...] = ()  # registry/name@sha256:... of pushes
    built_at: str | None = None  # informational, never hashed
    installed: tuple[InstalledDist, ...] = ()  # what certify's drift check compares against
    platform: str | None = None  # which package lock was installed
    # A reproducible build's SOURCE_DATE_EPOCH (its file times); None: built with build-time ones
    source_date_epoch: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "image_id": self.image_id,
            "base_image": self.base_image,
            "base_image_digest": self.base_image_digest,
            "dockerfile_sha256": self.dockerfile_sha256,
            "packages": list(self.packages),
            "tags": list(self.tags),
            "pushed": list(self.pushed),
            "built_at": self.built_at,
            "installed": [d.to_dict() for d in self.installed],
            "platform": self.platform,
            "source_date_epoch": self.source_date_epoch,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LockFile:
    resolution: dict[str, Any]  # Resolution.to_dict() as written (host, rejections: provenance)
    stack: Stack
    spec: dict[str, Any] | None  # ImageSpec.to_dict() (`resolve --lock` writes one from the request)
    spec_path: str | None = None  # where the spec was read (the Dockerfile header names it)
    build: BuildRecord | None = None
    packages: tuple[PackageLock, ...] = ()  # one per platform; () until locked
    spec_dir: str | None = None  # the spec's folder, relative to the lock file's (its paths start there)

    @property
    def hash(self) -> str:
        return lock_hash(self.stack, self.spec, self.packages)

    def package_lock(self, platform: str | None) -> PackageLock | None:
        return next((p for p in self.packages if p.platform == platform), None)

    @property
    def host(self) -> Host:
        """The host the stack was resolved for (parse_lock checked it reads)."""
        return Host.from_dict(self.resolution["host"])

    def with_build(self, build: BuildRecord) -> LockFile:
        return replace(self, build=build)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": LOCK_SCHEMA_VERSION,
            "lock_hash": self.hash,
            "resolution": self.resolution,
            "stack": self.stack.to_dict(),
            "spec": self.spec,
            "spec_path": self.spec_path,
            "packages": [p.to_dict() for p in self.packages],
            "spec_dir": self.spec_dir,
            "build": self.build.to_dict() if self.build else None,
        }


def lock_hash(stack: Stack, spec: Mapping[str, Any] | None, packages: Sequence[PackageLock] = ()) -> str:
    """sha256 (hex) of what decides the image: the stack, the spec (ImageSpec.to_dict()) and the
    package locks (every platform's), not the host or the build. The lock file records it and
    render writes it as the image's io.envbuilder.lock-hash label."""
    doc: dict[str, Any] = {"spec": spec, "stack": stack.to_dict()}
    if packages:
        doc["packages"] = [p.to_dict() for p in packages]
    return sha256_hex(doc)


def lock_from_resolution(resolution: Resolution, spec: dict[str, Any] | None = None) -> LockFile:
    """A lock for a resolution that found a stack; without a spec, one made from the request
    (spec_from_request), so the lock can be built. Raises SpecError when it found no stack."""
    if resolution.stack is None:
        raise SpecError("cannot lock a resolution without a stack", hint="resolve must succeed first")
    if spec is None:
        spec = spec_from_request(resolution.request, resolution.stack)
    return LockFile(resolution=resolution.to_dict(), stack=resolution.stack, spec=spec)


def spec_from_request(request: Request, stack: Stack) -> dict[str, Any]:
    """The image spec a `resolve` request stands for: the framework, exactly the resolved
    version, its Python and strategy, everything else at the spec defaults."""
    return {
        "name": f"{stack.framework}-{stack.variant}".lower(),
        "description": f"envbuilder resolve: {stack.framework} {stack.version} ({stack.variant})",
        "framework": f"{stack.framework}=={stack.version}",
        "python": stack.python,
        "strategy": stack.strategy,
        "flavor": "devel" if request.flavor == "devel" and stack.strategy == "system-cuda" else "runtime",
    }


def spec_dir_for(base_dir: str, lock_path: Path) -> str:
    """The spec's folder relative to where the lock file goes (the pair can move together)."""
    return os.path.relpath(Path(base_dir).resolve(), Path(lock_path).resolve().parent)


def spec_base_dir(lock: LockFile, lock_path: Path) -> Path:
    """Where the relative paths of a lock's spec start."""
    return Path(lock_path).parent / (lock.spec_dir or ".")


def write_resolution_lock(path: Path, resolution: Resolution) -> None:
    """`resolve --lock`: write a lock with the stack and its spec, no packages or build yet.
    Raises SpecError, OSError."""
    write_lock(path, lock_from_resolution(resolution))


def lock_json(lock: LockFile) -> str:
    """The lock file's text (what write_lock writes)."""
    return json.dumps(lock.to_dict(), indent=2, sort_keys=True) + "\n"


def write_lock(path: Path, lock: LockFile) -> None:
    """Write atomically: a reader sees the old file or the new one, never half of either.

    Raises OSError when the directory is not writable (the old file is then untouched).
    """
    write_text_atomic(Path(path), lock_json(lock))


# The lock document's field types (parse_lock checks them once, so nothing past it meets a wrong
# type); the stack and host have theirs beside their dataclasses (STACK_SHAPE, HOST_SHAPE).
_MAYBE_STR = opt(STR)
_BUILD_SHAPE = obj(
    {
        **dict.fromkeys(("image_id", "base_image", "dockerfile_sha256"), TEXT),
        **dict.fromkeys(("base_image_digest", "built_at", "platform"), opt(TEXT)),
        **dict.fromkeys(("packages", "tags", "pushed"), list_of(STR)),
        "source_date_epoch": opt(NONNEGATIVE),
        "installed": list_of(
            obj({"name": STR, "version": STR, "record_sha256": _MAYBE_STR}, required=("name", "version"))
        ),
    },
    required=("image_id", "base_image", "dockerfile_sha256"),
)
_LOCK_SHAPE = obj(
    {
        "schema_version": INT,
        "lock_hash": _MAYBE_STR,
        "resolution": obj({"host": ANY}, required=("host",)),
        "stack": ANY,  # STACK_SHAPE, checked by Stack.from_dict
        "spec": opt(map_of(ANY)),
        "spec_path": _MAYBE_STR,
        "spec_dir": _MAYBE_STR,
        "packages": list_of(ANY),  # package_lock_from_dict checks each
        "build": opt(_BUILD_SHAPE),
    },
    required=("schema_version", "resolution"),
)


def read_lock(path: Path) -> LockFile:
    """Read and check a lock file (bounded: envbuilder.bounded). Raises SpecError naming the
    file and the bad field."""
    try:
        raw = load_json(read_text_bounded(path))  # a FIFO or /dev/zero: refused unread
    except OSError as exc:
        raise SpecError(
            f"{path}: cannot read lock file: {exc.strerror}", hint=_HINT, file=str(path)
        ) from None
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"{path}: not valid JSON: {exc}", hint=_HINT, file=str(path), line=exc.lineno
        ) from None
    except ValueError as exc:  # TooLarge, UnicodeDecodeError, an integer past int's digit limit
        raise SpecError(f"{path}: not a lock file: {_short(exc)}", hint=_HINT, file=str(path)) from None
    return parse_lock(raw, str(path))


def _short(exc: Exception) -> str:
    """An exception's message without the document it quotes (UnicodeDecodeError's bytes)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    return str(exc).split("\n", 1)[0][:200]


def parse_lock(raw: object, where: str = "<lock>") -> LockFile:
    """Validate a parsed lock document: every field's type (_LOCK_SHAPE, STACK_SHAPE,
    HOST_SHAPE, the package locks'), then what ties them together. Raises SpecError naming
    `where` and the field."""

    def fail(field: str, why: str) -> SpecError:
        return SpecError(f"{where}: field {field!r}: {why}", hint=_HINT, file=where, field=field)

    try:
        doc = as_json_object(raw)
        check_document(doc, _LOCK_SHAPE)
    except WrongType as exc:
        raise fail(exc.path, f"expected {exc.expected}") from None
    if doc["schema_version"] != LOCK_SCHEMA_VERSION:
        raise fail("schema_version", f"expected {LOCK_SCHEMA_VERSION}, got {doc['schema_version']}")
    resolution = doc["resolution"]
    try:
        Host.from_dict(resolution["host"])
    except WrongType as exc:
        raise fail(f"resolution.host.{exc.path}".removesuffix(".<top>"), f"expected {exc.expected}") from None
    stack_raw = doc.get("stack", resolution.get("stack"))
    try:
        stack = Stack.from_dict(as_json_object(stack_raw))
    except WrongType as exc:
        raise fail(f"stack.{exc.path}".removesuffix(".<top>"), f"expected {exc.expected}") from None
    if stack.index_url is not None and not INDEX_URL_RE.fullmatch(stack.index_url):
        # the framework index a re-lock (`envbuilder lock LOCK`) resolves from: the package lock's rule
        raise fail("stack.index_url", f"{stack.index_url[:80]!r} refused (an https:// index URL or null)")
    spec_dir = doc.get("spec_dir")
    if spec_dir is not None and Path(spec_dir).is_absolute():
        raise fail("spec_dir", "expected a relative path or null")
    try:
        packages = tuple(
            package_lock_from_dict(p, f"{where}: packages[{i}]")
            for i, p in enumerate(doc.get("packages", []))
        )
    except LockError as exc:
        raise SpecError(exc.message, hint=exc.hint or _HINT) from None
    platforms = [p.platform for p in packages]
    if len(set(platforms)) != len(platforms):
        raise fail("packages", "two package locks for one platform")
    build = doc.get("build")
    if build is not None:
        _check_build(build, fail)
    lock = LockFile(
        resolution=resolution,
        stack=stack,
        spec=doc.get("spec"),
        spec_path=doc.get("spec_path"),
        build=_build_record(build) if build is not None else None,
        packages=packages,
        spec_dir=spec_dir,
    )
    recorded = doc.get("lock_hash")
    if recorded is not None and recorded != lock.hash:
        raise fail("lock_hash", f"{recorded} does not match the stack and spec ({lock.hash}): edited?")
    return lock


_IMAGE_ID_RE = re.compile(r"sha256:[0-9a-f]{64}")
_HEX_RE = re.compile(r"[0-9a-f]{64}")


def _check_build(raw: Mapping[str, Any], fail: Callable[[str, str], SpecError]) -> None:
    """The build record's values that reach a command or the Dockerfile again (a rebuild's FROM
    and the base it pulls and inspects): image references and digests, nothing else."""

    def refused(field: str, value: object, why: str) -> SpecError:
        text = repr(value)
        return fail(f"build.{field}", f"{text if len(text) <= 80 else text[:77] + '...'} refused ({why})")

    if not IMAGE_REF_RE.fullmatch(raw["base_image"]):
        raise refused("base_image", raw["base_image"], "a Docker image reference")
    digest = raw.get("base_image_digest")
    # what build.py's _pin_base records: the base pinned by its registry digest, or its image ID;
    # a reference without a digest (`evil/base:latest`) pins nothing and is no digest
    if digest is not None and not (
        ("@sha256:" in digest and IMAGE_REF_RE.fullmatch(digest)) or _IMAGE_ID_RE.fullmatch(digest)
    ):
        raise refused("base_image_digest", digest, "NAME@sha256:DIGEST or an image ID")
    if not _IMAGE_ID_RE.fullmatch(raw["image_id"]):
        raise refused("image_id", raw["image_id"], "an image ID sha256:HEX")
    if not _HEX_RE.fullmatch(raw["dockerfile_sha256"]):
        raise refused("dockerfile_sha256", raw["dockerfile_sha256"], "64 lower-case hex digits")


def _build_record(raw: Mapping[str, Any]) -> BuildRecord:
    """A BuildRecord from a `build` section _BUILD_SHAPE has checked."""
    return BuildRecord(
        installed=tuple(
            InstalledDist(name=d["name"], version=d["version"], record_sha256=d.get("record_sha256"))
            for d in raw.get("installed", [])
        ),
        platform=raw.get("platform"),
        image_id=raw["image_id"],
        base_image=raw["base_image"],
        base_image_digest=raw.get("base_image_digest"),
        dockerfile_sha256=raw["dockerfile_sha256"],
        packages=tuple(raw.get("packages", [])),
        tags=tuple(raw.get("tags", [])),
        pushed=tuple(raw.get("pushed", [])),
        built_at=raw.get("built_at"),
        source_date_epoch=raw.get("source_date_epoch"),
    )
