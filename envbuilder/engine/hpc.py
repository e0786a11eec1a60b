"""Exported images for the container runtimes that run files (runtime/apptainer.py: a SIF,
runtime/enroot.py: a squashfs): `export_image` turns a Docker image into the file the runtime's
own conversion writes, complete or not at all, with a sidecar.

Each exported file gets a sidecar FILE.envbuilder.json with the Docker image it came from (ID,
labels, environment) and the file's own sha256: `run --runtime apptainer|enroot FILE` reads it to
apply the same certificate checks as for the Docker image, on a node that has no Docker.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envbuilder.atomic import check_output_path, write_text_atomic
from envbuilder.bounded import load_json, read_bounded
from envbuilder.engine.interface import Engine
from envbuilder.engine.model import ImageInfo
from envbuilder.errors import ContainerRuntimeError, UsageError, log_tail
from envbuilder.hashing import sha256_file

Format = str  # the exported file's format: a file runtime's `runs` (sif, sqsh, ...)
SIDECAR_SUFFIX = ".envbuilder.json"
SIDECAR_KIND = "envbuilder-export"
EXPORT_TIMEOUT_S = 3600.0


# --------------------------------------------------------------------------- export


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """How a runtime's program is run: a binary on this host, or (Apptainer only) inside a Docker
    image that carries it."""

    name: str  # the runtime's program: apptainer, enroot, ...
    path: str | None = None  # the binary
    image: str | None = None  # a Docker image with the binary in it

    def describe(self) -> str:
        return self.path or f"{self.name} in the Docker image {self.image}"


def find_tool(
    name: str, *, path: str | None = None, image: str | None = None, hint: str | None = None
) -> Tool:
    """The runtime's program: `path`, else `image` (a Docker image that has it), else the one on
    PATH. Raises ContainerRuntimeError (with `hint`: how to get it) when there is none."""
    if image:
        return Tool(name=name, image=image)
    found = path or shutil.which(name)
    if found and Path(found).is_file():
        return Tool(name=name, path=found)
    raise ContainerRuntimeError(
        f"no {name} here" + (f" ({path} is not a file)" if path else " (not on PATH)"), hint=hint
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Exported:
    path: Path
    sidecar: Path
    format: Format
    size: int
    sha256: str
    seconds: float
    tool: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "sidecar": str(self.sidecar),
            "format": self.format,
            "size_bytes": self.size,
            "sha256": self.sha256,
            "seconds": round(self.seconds, 2),
            "tool": self.tool,
        }


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


Run = Callable[[Sequence[str], float], "subprocess.CompletedProcess[str]"]


def run_tool(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run an export tool's command line to its end, its output captured. Raises
    ContainerRuntimeError (timed out, cannot start)."""
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ContainerRuntimeError(f"`{' '.join(argv[:3])} ...` timed out after {timeout:g} s") from exc
    except OSError as exc:
        raise ContainerRuntimeError(f"cannot run {argv[0]}: {exc}") from exc


Convert = Callable[[ImageInfo, Path, Path], None]  # (the image, the file to write, a work folder)


def export_image(
    engine: Engine, image: str, out: Path, fmt: Format, tool: Tool, convert: Convert
) -> Exported:
    """Convert the local Docker image `image` into `out` (a runtime's file format `fmt`, written
    by `convert`, the runtime's own step) and write its sidecar. Built under a temporary name
    beside `out`, renamed only when complete: a failed or interrupted export leaves no file and no
    sidecar. Raises UsageError (no such image), OutputError (the file's or its sidecar's path is
    not a regular file, a missing folder: checked before the conversion starts, nothing written),
    ContainerRuntimeError (the tool failed; its last lines quoted),
    DockerUnavailableError."""
    info = engine.inspect_image(image)
    if info is None:
        raise UsageError(f"image {image!r} not found locally", hint="build it, or `docker pull` it first")
    for path in (out, sidecar_path(out)):  # both outputs, before any step: a refused one writes nothing
        check_output_path(path)  # envbuilder.atomic's output policy: a regular file or a new one
    out = out.resolve()
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    started = time.monotonic()
    try:
        built = work / f"image.{fmt}"
        convert(info, built, work)
        if not built.is_file():
            raise ContainerRuntimeError(f"{tool.describe()} reported success but wrote no {built.name}")
        digest = sha256_file(built)
        built.replace(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - started
    side = sidecar_path(out)
    write_sidecar(side, info, image=image, fmt=fmt, sha256=digest, tool=tool.describe())
    return Exported(
        path=out,
        sidecar=side,
        format=fmt,
        size=out.stat().st_size,
        sha256=digest,
        seconds=seconds,
        tool=tool.describe(),
    )


def check_tool(res: subprocess.CompletedProcess[str], tool: Tool) -> None:
    """Raises ContainerRuntimeError (with the tool's last lines) for a failed tool run."""
    if res.returncode != 0:
        raise ContainerRuntimeError(
            f"{tool.describe()} failed (exit {res.returncode})", log=log_tail([res.stderr or res.stdout])
        )


# --------------------------------------------------------------------------- the sidecar


def write_sidecar(path: Path, info: ImageInfo, *, image: str, fmt: Format, sha256: str, tool: str) -> None:
    doc = {
        "kind": SIDECAR_KIND,
        "format": fmt,
        "sha256": sha256,
        "exported_from": image,
        "tool": tool,
        "image": {
            "id": info.id,
            "tags": list(info.tags),
            "repo_digests": list(info.repo_digests),
            "labels": dict(info.labels),
            "env": list(info.env),
        },
    }
    write_text_atomic(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportedImage:
    """A SIF or squashfs file with its sidecar, as `run --runtime` reads it."""

    path: Path
    format: Format
    sha256: str
    image: ImageInfo  # the Docker image it was exported from


def read_exported(path: Path, *, check_hash: bool = True) -> ExportedImage:
    """The exported file and the Docker image it came from (its sidecar). Raises UsageError: no
    file, no or broken sidecar, or a file whose sha256 is not the one exported (replaced since)."""
    side = sidecar_path(path)
    if not path.is_file():
        raise UsageError(f"{path} is not a file", hint="export it first: envbuilder export IMAGE --sif FILE")
    try:
        doc = load_json(read_bounded(side))  # a FIFO, a device or a huge sidecar: refused unread
        info = _sidecar_image(doc["image"])
        fmt = doc["format"]
        recorded = doc["sha256"]
        if not isinstance(recorded, str):
            raise TypeError("sha256 is not a string")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(
            f"{path} has no readable sidecar {side.name} ({exc}): which image it holds is unknown",
            hint="export it with envbuilder export IMAGE --sif/--sqsh FILE (which writes the sidecar)",
        ) from exc
    if not isinstance(fmt, str) or not fmt.isalnum() or doc.get("kind") != SIDECAR_KIND:
        raise UsageError(f"{side} is not an envbuilder export record")
    if check_hash and (now := sha256_file(path)) != recorded:
        raise UsageError(
            f"{path} is not the file envbuilder exported (sha256 {now[:19]}, its sidecar: {recorded[:19]})",
            hint="export the image again; a changed file is not the certified image",
        )
    return ExportedImage(path=path, format=fmt, sha256=recorded, image=info)


def _sidecar_image(img: Any) -> ImageInfo:
    """A sidecar's image record, each field of the type write_sidecar writes: the ID a string;
    tags, repo_digests and env lists of strings and labels an object of strings, each of these
    four missing or null when empty. Never read as something else (an ID of null as "None", a
    tag per character of a string). Raises KeyError (no ID), TypeError (a field's type)."""
    if not isinstance(img, dict):
        raise TypeError("image is not an object")
    image_id = img["id"]
    if not isinstance(image_id, str) or not image_id:
        raise TypeError("image.id is not an image ID")
    lists: dict[str, tuple[str, ...]] = {}
    for name in ("tags", "repo_digests", "env"):
        value = img.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"image.{name} is not a list of strings")
        lists[name] = tuple(value)
    labels = img.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise TypeError("image.labels is not an object of strings")
    return ImageInfo(
        id=image_id,
        tags=lists["tags"],
        repo_digests=lists["repo_digests"],
        labels=dict(labels),
        env=lists["env"],
    )


# --------------------------------------------------------------------------- a foreground run


def run_foreground(argv: Sequence[str], *, stop_timeout_s: float = 10.0) -> int:
    """Run a runtime's command with this terminal and pass its exit code back; Ctrl-C reaches it
    as SIGINT (SIGKILL after `stop_timeout_s`), then is re-raised. Raises ContainerRuntimeError
    when it cannot start."""
    try:
        proc = subprocess.Popen(list(argv), start_new_session=False)
    except OSError as exc:
        raise ContainerRuntimeError(f"cannot start {argv[0]}: {exc}") from exc
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=stop_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
