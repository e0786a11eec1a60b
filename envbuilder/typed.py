"""Typed loading of JSON documents that come from outside (lock files, certificates): one small
field-type schema, checked once at the boundary, so that no consumer past the loader meets a
wrong type (issue 18: a lock's `companions` as a list, `sass: [null]`, a report of a sealed
certificate with a string where a number was, 255 crashes across 22 code sites).

A schema is built from `STR`, `TEXT` (non-empty), `INT`, `POSITIVE`, `NUM`, `BOOL`, `ANY` and
`opt`, `list_of`, `map_of`, `obj`.
`check_document` first checks what every JSON value must be (integers within 64 bits, finite
numbers, strings that encode as UTF-8: no lone surrogates), then the schema. Errors name the field
(a dotted path) and the type expected, never the value (it may be huge, or a secret).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Larger integers are no count, size or version of ours, and overflow float() and SQLite
# (issue 18: a 5000-digit integer).
MAX_INT = 2**63
_UNSAID = object()


def ascii_int(text: object) -> int | None:
    """A count, ID, PID or exit code as a program prints it: ASCII digits only, below MAX_INT; else
    None. Not `str.isdigit()` then `int()`: "²".isdigit() holds and int("²") raises ValueError
    (a traceback from one odd cell of nvidia-smi, sacct or podman), and int() reads "٣" as 3."""
    if not isinstance(text, str) or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value < MAX_INT else None


class WrongType(ValueError):
    """A field of the wrong type; `path` is dotted ("harness.steps[3].seconds"), "" the top."""

    def __init__(self, path: str, expected: str, got: object = _UNSAID) -> None:
        self.path = path or "<top>"
        self.expected = expected
        what = "" if got is _UNSAID else f", got {_kind(got)}"
        super().__init__(f"field {self.path!r}: expected {expected}{what}")


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return "null" if value is None else type(value).__name__


class Shape:
    """The type a field must have."""

    def describe(self) -> str:
        return "any JSON value"

    def check(self, value: object, path: str) -> None:
        """Raise WrongType when `value` (at `path`) does not have this shape; ANY takes all."""


@dataclass(frozen=True, slots=True)
class _Scalar(Shape):
    types: tuple[type, ...]
    name: str
    nonempty: bool = False
    minimum: int | None = None  # numbers: the smallest allowed

    def describe(self) -> str:
        return self.name

    def check(self, value: object, path: str) -> None:
        if (isinstance(value, bool) and bool not in self.types) or not isinstance(value, self.types):
            raise WrongType(path, self.name, value)
        if (self.nonempty and not value) or (self.minimum is not None and value < self.minimum):  # type: ignore[operator]
            raise WrongType(path, self.name, value)


@dataclass(frozen=True, slots=True)
class _Optional(Shape):
    inner: Shape

    def describe(self) -> str:
        return f"{self.inner.describe()} or null"

    def check(self, value: object, path: str) -> None:
        if value is not None:
            self.inner.check(value, path)


@dataclass(frozen=True, slots=True)
class _List(Shape):
    item: Shape

    def describe(self) -> str:
        return f"a list of ({self.item.describe()})"

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, list | tuple):
            raise WrongType(path, self.describe(), value)
        for i, item in enumerate(value):
            self.item.check(item, f"{path}[{i}]")


@dataclass(frozen=True, slots=True)
class _Object(Shape):
    fields: Mapping[str, Shape]
    required: frozenset[str] = field(default_factory=frozenset)
    others: Shape = field(default_factory=Shape)

    def describe(self) -> str:
        return "an object"

    def check(self, value: object, path: str) -> None:
        if not isinstance(value, Mapping):
            raise WrongType(path, "an object", value)
        missing = sorted(self.required - value.keys())
        if missing:
            raise WrongType(_join(path, missing[0]), f"{self.fields[missing[0]].describe()} (it is missing)")
        for key, item in value.items():
            self.fields.get(key, self.others).check(item, _join(path, str(key)))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


ANY = Shape()
STR = _Scalar((str,), "a string")
TEXT = _Scalar((str,), "a non-empty string", nonempty=True)
INT = _Scalar((int,), "an integer")
POSITIVE = _Scalar((int,), "a positive integer", minimum=1)
NONNEGATIVE = _Scalar((int,), "a non-negative integer", minimum=0)
NUM = _Scalar((int, float), "a number")
BOOL = _Scalar((bool,), "a boolean")


def opt(shape: Shape) -> Shape:
    """The shape, or null."""
    return _Optional(shape)


def list_of(item: Shape) -> Shape:
    return _List(item)


def map_of(value: Shape) -> Shape:
    """An object with any keys, each value of this shape."""
    return _Object({}, frozenset(), value)


def obj(
    fields: Mapping[str, Shape] | None = None, *, required: tuple[str, ...] = (), others: Shape | None = None
) -> Shape:
    """An object whose named fields (when present) have these shapes; `required` ones must be
    present. Other keys have the shape `others`: by default any JSON (a newer writer may add
    some)."""
    return _Object(dict(fields or {}), frozenset(required), others or ANY)


def check_json(value: object, path: str = "") -> None:
    """What any value of a loaded document must be: integers within 64 bits, finite numbers
    (json.loads accepts NaN and Infinity), text that encodes as UTF-8 (JSON's \\ud800 escape
    gives a lone surrogate that no file, SQLite row or terminal takes). Iterative: the loaders
    bound the depth, callers of this need not. Raises WrongType."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int):
            if not -MAX_INT <= v <= MAX_INT:
                raise WrongType(p, "an integer within 64 bits")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise WrongType(p, "a finite number")
        elif isinstance(v, str):
            _check_text(v, p)
        elif isinstance(v, Mapping):
            for k, item in v.items():
                if not isinstance(k, str):
                    raise WrongType(p, "an object with text keys")
                _check_text(k, p)
                stack.append((item, _join(p, k)))
        elif isinstance(v, list | tuple):
            stack.extend((item, f"{p}[{i}]") for i, item in enumerate(v))
        else:
            raise WrongType(p, "a JSON value", v)


def _check_text(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WrongType(path, "text without lone surrogates (\\ud800-\\udfff)") from None


def check_document(value: object, shape: Shape, path: str = "") -> None:
    """check_json, then the schema. Raises WrongType naming the first bad field."""
    check_json(value, path)
    shape.check(value, path)


def as_json_object(value: object) -> dict[str, Any]:
    """A loaded document's top level as a dict. Raises WrongType when it is not an object."""
    if not isinstance(value, dict):
        raise WrongType("", "a JSON object", value)
    return value
