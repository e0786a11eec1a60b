"""The lock file (`*.lock.json`): the resolved stack, the spec, and what a build produced.

Written atomically (temp file in the same directory, fsync, os.replace), so a crash or Ctrl-C
leaves the previous file intact. `lock_hash` covers only what changes the image (stack + spec),
never the host probe or timestamps, so images built from the same inputs carry the same hash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.errors import SpecError
from envbuilder.hashing import sha256_hex
from envbuilder.host.model import Host
from envbuilder.resolve.model import Resolution, Stack

LOCK_SCHEMA_VERSION = 1
_HINT = "regenerate it with `envbuilder resolve --lock FILE` or `envbuilder build SPEC --lock-out FILE`"


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildRecord:
    """What `envbuilder build` produced; enough to rebuild the same image later."""

    image_id: str
    base_image: str  # the reference the Dockerfile used (FROM)
    base_image_digest: str | None  # name@sha256:... when known; a local image's ID otherwise
    dockerfile_sha256: str
    packages: tuple[str, ...]  # `pip freeze` inside the image, sorted
    tags: tuple[str, ...]
    pushed: tuple[str, ...] = ()  # registry/name@sha256:... of pushes
    built_at: str | None = None  # informational, never hashed

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
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LockFile:
    resolution: dict[str, Any]  # Resolution.to_dict() as written (host, rejections: provenance)
    stack: Stack
    spec: dict[str, Any] | None  # ImageSpec.to_dict(); None for a `resolve --lock` file
    spec_path: str | None = None  # where the spec was read (the Dockerfile header names it)
    build: BuildRecord | None = None

    @property
    def hash(self) -> str:
        return lock_hash(self.stack, self.spec)

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
            "build": self.build.to_dict() if self.build else None,
        }


def lock_hash(stack: Stack, spec: Mapping[str, Any] | None) -> str:
    """sha256 (hex) of what decides the image: the stack and the spec (ImageSpec.to_dict(); None
    for a `resolve --lock` file), not the host or the build. The lock file records it and render
    writes it as the image's io.envbuilder.lock-hash label."""
    return sha256_hex({"spec": spec, "stack": stack.to_dict()})


def lock_from_resolution(resolution: Resolution, spec: dict[str, Any] | None = None) -> LockFile:
    """A lock for a resolution that found a stack. Raises SpecError when it found none."""
    if resolution.stack is None:
        raise SpecError("cannot lock a resolution without a stack", hint="resolve must succeed first")
    return LockFile(resolution=resolution.to_dict(), stack=resolution.stack, spec=spec)


def write_resolution_lock(path: Path, resolution: Resolution) -> None:
    """`resolve --lock`: write a lock with the stack and no build yet. Raises SpecError, OSError."""
    write_lock(path, lock_from_resolution(resolution))


def write_lock(path: Path, lock: LockFile) -> None:
    """Write atomically: a reader sees the old file or the new one, never half of either.

    Raises OSError when the directory is not writable (the old file is then untouched).
    """
    write_text_atomic(Path(path), json.dumps(lock.to_dict(), indent=2, sort_keys=True) + "\n")


def read_lock(path: Path) -> LockFile:
    """Read and check a lock file. Raises SpecError naming the file and the bad field."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(
            f"{path}: cannot read lock file: {exc.strerror}", hint=_HINT, file=str(path)
        ) from None
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"{path}: not valid JSON: {exc}", hint=_HINT, file=str(path), line=exc.lineno
        ) from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON: {exc}", hint=_HINT, file=str(path)) from None
    return parse_lock(raw, str(path))


def parse_lock(raw: object, where: str = "<lock>") -> LockFile:
    """Validate a parsed lock document. Raises SpecError naming `where` and the field."""

    def fail(field: str, why: str) -> SpecError:
        return SpecError(f"{where}: field {field!r}: {why}", hint=_HINT, file=where, field=field)

    if not isinstance(raw, dict):
        raise fail("<top>", "expected a JSON object")
    if raw.get("schema_version") != LOCK_SCHEMA_VERSION:
        raise fail("schema_version", f"expected {LOCK_SCHEMA_VERSION}, got {raw.get('schema_version')!r}")
    resolution = raw.get("resolution")
    if not isinstance(resolution, dict):
        raise fail("resolution", "expected an object (the output of `resolve --json`)")
    try:
        Host.from_dict(resolution["host"])
    except (KeyError, TypeError, ValueError) as exc:
        raise fail("resolution.host", f"malformed ({type(exc).__name__}: {exc})") from None
    stack_raw = raw.get("stack", resolution.get("stack"))
    if not isinstance(stack_raw, dict):
        raise fail("stack", "expected an object")
    try:
        stack = Stack.from_dict(stack_raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise fail("stack", f"malformed ({type(exc).__name__}: {exc})") from None
    spec = raw.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise fail("spec", "expected an object or null")
    spec_path = raw.get("spec_path")
    if spec_path is not None and not isinstance(spec_path, str):
        raise fail("spec_path", "expected a string or null")
    build = raw.get("build")
    lock = LockFile(
        resolution=resolution,
        stack=stack,
        spec=spec,
        spec_path=spec_path,
        build=_parse_build(build, fail) if build is not None else None,
    )
    recorded = raw.get("lock_hash")
    if recorded is not None and recorded != lock.hash:
        raise fail("lock_hash", f"{recorded} does not match the stack and spec ({lock.hash}): edited?")
    return lock


def _parse_build(raw: object, fail: Any) -> BuildRecord:
    if not isinstance(raw, dict):
        raise fail("build", "expected an object or null")

    def text(key: str, optional: bool = False) -> Any:
        v = raw.get(key)
        if v is None and optional:
            return None
        if not isinstance(v, str) or not v:
            raise fail(f"build.{key}", "expected a non-empty string")
        return v

    def strings(key: str) -> tuple[str, ...]:
        v = raw.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise fail(f"build.{key}", "expected a list of strings")
        return tuple(v)

    return BuildRecord(
        image_id=text("image_id"),
        base_image=text("base_image"),
        base_image_digest=text("base_image_digest", optional=True),
        dockerfile_sha256=text("dockerfile_sha256"),
        packages=strings("packages"),
        tags=strings("tags"),
        pushed=strings("pushed"),
        built_at=text("built_at", optional=True),
    )
