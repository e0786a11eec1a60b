"""The compiled form of the matrix: the checked `Matrix` as JSON in the user's cache folder, keyed
by a hash of every matrices/ file and of the code that reads them, so a command skips parsing and
checking the YAML (most of `envbuilder resolve`'s time) until one of them changes.

A cache entry is only ever what `load_matrix` built from the same bytes with the same code; it is
written atomically, and one that cannot be read or decoded is ignored (and rebuilt), never trusted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from envbuilder import resources
from envbuilder.matrix.model import Matrix

_FORMAT = 1  # bump when the JSON layout below changes
# The code that decides what a Matrix holds: the matrix package and the version rules it applies.
_CODE = (Path(__file__).parent, Path(__file__).parent.parent / "versions.py")


def matrix_key(directory: Path) -> str:
    """sha256 over every YAML file under `directory` (relative name and bytes) and the loader's
    source: a different key whenever a fact or the code that reads it changes. Raises OSError."""
    h = hashlib.sha256(f"envbuilder-matrix-{_FORMAT}".encode())
    sources = sorted(p for code in _CODE for p in ([code] if code.is_file() else code.glob("*.py")))
    for path in sources:
        h.update(b"\0code\0" + path.name.encode() + b"\0" + path.read_bytes())
    for path in sorted(directory.rglob("*.yaml")):
        h.update(b"\0yaml\0" + path.relative_to(directory).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def cache_file(key: str) -> Path:
    return resources.cache_dir() / "matrix" / f"{key[:32]}.json"


def read_compiled(path: Path, key: str) -> Matrix | None:
    """The Matrix stored at `path` for `key`, or None when there is none or it cannot be used
    (unreadable, truncated, another key, or a shape the current code does not have)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("key") != key:
            return None
        matrix = _decode(Matrix, doc["matrix"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return matrix if isinstance(matrix, Matrix) else None


def write_compiled(path: Path, key: str, matrix: Matrix) -> None:
    """Store `matrix` for `key` (atomically) and drop older entries. Best effort: a cache folder
    that cannot be written only means the next command parses the YAML again."""
    from envbuilder.atomic import write_text_atomic  # only a miss writes (tempfile is slow to import)

    text = json.dumps({"key": key, "matrix": dataclasses.asdict(matrix)}, separators=(",", ":"))
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
        for old in path.parent.glob("*.json"):
            if old.name != path.name:
                old.unlink(missing_ok=True)


# --------------------------------------------------------------------------- JSON -> dataclasses


def _decode(tp: Any, value: Any) -> Any:
    """Rebuild a value of type `tp` from its JSON form: frozen dataclasses from objects, tuples
    from lists, every scalar's type checked. Raises TypeError/KeyError/ValueError on a mismatch."""
    return _decoder(tp)(value)


@functools.cache
def _decoder(tp: Any) -> Callable[[Any], Any]:
    """One decoding function per type, built once from the type hints (decoding is then a few
    calls per value: about 10x faster than inspecting the type for every value)."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        parts = [(f.name, _decoder(hints[f.name])) for f in dataclasses.fields(tp)]
        cls = tp

        def record(value: Any) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"{cls.__name__}: expected an object")
            return cls(**{name: dec(value[name]) for name, dec in parts})

        return record
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])
        return lambda value: tuple(item(v) for v in _list(value))
    if origin is tuple:
        items = [_decoder(a) for a in args]
        return lambda value: tuple(dec(v) for dec, v in zip(items, _list(value), strict=True))
    if origin in (Union, types.UnionType):
        (inner,) = (_decoder(a) for a in args if a is not type(None))  # only X | None is used
        return lambda value: None if value is None else inner(value)
    if origin is Literal:
        return lambda value: value if value in args else _refuse(value, tp)
    if tp in (str, int, bool):
        return lambda value: value if type(value) is tp else _refuse(value, tp)
    raise TypeError(f"no JSON form for {tp!r}")  # a new field type: teach _decoder, bump _FORMAT


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def _refuse(value: Any, tp: Any) -> Any:
    raise TypeError(f"cannot decode {value!r} as {tp}")
