"""What an image says about itself, read back in one place: the io.envbuilder.* labels that
render.py writes (the keys live here, for the writer and the reader) as one typed value, and the
image's environment. certify and run read images only through `read_metadata`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envbuilder.bounded import load_json
from envbuilder.engine import ImageInfo
from envbuilder.errors import SpecError
from envbuilder.image.spec import CertifySettings, parse_certify_settings
from envbuilder.resolve.model import Stack

LABEL_STACK = "io.envbuilder.stack"  # Stack.to_dict() as canonical JSON
LABEL_MIN_DRIVER = "io.envbuilder.min-driver"  # "580.65.06", or "none" for a CPU stack
LABEL_ARCHS = "io.envbuilder.archs"  # "sm_90,...,compute_120", or "none"
LABEL_LOCK_HASH = "io.envbuilder.lock-hash"  # image.lock.lock_hash of the stack and the spec
LABEL_CERTIFY = "io.envbuilder.certify"  # the spec's certify settings as canonical JSON
LABEL_HARNESS = "io.envbuilder.harness"  # where the harness lies inside the image
LABEL_JIT_CACHE = "io.envbuilder.cuda-jit-cache"  # JIT_CACHE_DIR: the image has it, owned by its user
NONE = "none"  # the label value for "not applicable"
# The folder an envbuilder image has for the CUDA driver's JIT cache, owned by the image's user
# (templates/_user.j2), so that a named volume mounted over it starts writable by that user
# (certify/jit_cache.py). The image does not set CUDA_CACHE_PATH: only a container that mounts the
# volume points the driver at it; elsewhere the driver's default (~/.nv/ComputeCache) applies.
JIT_CACHE_DIR = "/var/cache/envbuilder/cuda-jit"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageMetadata:
    """An image's envbuilder labels and environment. A label that is absent reads as None (an
    image envbuilder did not build has none); one that is present but unreadable as None too,
    with the reason in `problems`."""

    stack: Stack | None = None
    stack_record: Mapping[str, Any] | None = None  # the stack label as written: certificate evidence
    min_driver: str | None = None
    archs: tuple[str, ...] = ()  # sm_XY / compute_XY, as the label lists them
    lock_hash: str | None = None
    certify: CertifySettings | None = None
    harness: str | None = None
    jit_cache: str | None = None  # JIT_CACHE_DIR when the image declares it (no other value is used)
    env: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def framework(self) -> str | None:
        """The stack's framework (torch, tensorflow, jax), if the image names one."""
        return self.stack.framework if self.stack is not None else None


def archs_label(stack: Stack) -> str:
    """The io.envbuilder.archs value of a stack: its SASS then its PTX targets."""
    sass = [f"sm_{cc.replace('.', '')}" for cc in stack.sass]
    ptx = [f"compute_{cc.replace('.', '')}" for cc in stack.ptx]
    return ",".join(sass + ptx) or NONE


def image_env(info: ImageInfo) -> dict[str, str]:
    """The image's ENV as a mapping (a later KEY= wins, as in Docker)."""
    return dict(item.split("=", 1) for item in info.env if "=" in item)


def read_metadata(info: ImageInfo) -> ImageMetadata:
    """The image's labels and environment as one typed value. Never raises: what cannot be read
    is None, and `problems` says why."""
    labels, problems = info.labels, list[str]()
    record = _json_label(labels, LABEL_STACK, problems)
    stack = None
    if isinstance(record, dict) and "unparsed" not in record:
        try:
            stack = Stack.from_dict(record)
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"label {LABEL_STACK} is not a stack ({type(exc).__name__}: {exc})")
    certify = None
    raw_certify = _json_label(labels, LABEL_CERTIFY, problems)
    if raw_certify is not None and "unparsed" not in raw_certify:
        try:
            certify = parse_certify_settings(raw_certify, f"label {LABEL_CERTIFY}")
        except SpecError as exc:
            problems.append(exc.message)
    archs = labels.get(LABEL_ARCHS, NONE)
    jit_cache = _text(labels.get(LABEL_JIT_CACHE))
    if jit_cache is not None and jit_cache != JIT_CACHE_DIR:
        problems.append(
            f"label {LABEL_JIT_CACHE} is {jit_cache!r}, not {JIT_CACHE_DIR}: no JIT cache is mounted"
        )
        jit_cache = None
    return ImageMetadata(
        stack=stack,
        stack_record=record,
        min_driver=_text(labels.get(LABEL_MIN_DRIVER)),
        archs=tuple(a for a in archs.split(",") if a) if archs != NONE else (),
        lock_hash=_text(labels.get(LABEL_LOCK_HASH)),
        certify=certify,
        harness=_text(labels.get(LABEL_HARNESS)),
        jit_cache=jit_cache,
        env=image_env(info),
        problems=tuple(problems),
    )


def _text(value: str | None) -> str | None:
    return value if value and value != NONE else None


def _json_label(labels: Mapping[str, str], key: str, problems: list[str]) -> dict[str, Any] | None:
    """A JSON label as a dict; {"unparsed": text} when it is not a JSON object (kept as evidence).
    Read within envbuilder.bounded's limits: an image (a foreign one too) chooses its labels."""
    raw = labels.get(key)
    if raw is None:
        return None
    try:
        value = load_json(raw)
    except ValueError as exc:  # JSONDecodeError, bounded.TooLarge (size, depth)
        problems.append(f"label {key} is not JSON ({exc})")
        return {"unparsed": raw}
    if not isinstance(value, dict):
        problems.append(f"label {key} is not a JSON object")
        return {"unparsed": raw}
    return value
