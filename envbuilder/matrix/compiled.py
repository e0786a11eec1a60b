"""The compiled form of the matrix: the checked `Matrix` as JSON in the user's cache folder, keyed
by a hash of every matrices/ file and of the code that reads them, so a command skips parsing and
checking the YAML (most of `envbuilder resolve`'s time) until one of them changes.

A cache entry is only ever what `load_matrix` built from the same bytes with the same code; it is
written atomically, and one that cannot be read or decoded is ignored (and rebuilt), never trusted.
The same form ships beside the YAML (`shipped_file`), served on the same terms.
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

_FORMAT = 2  # bump when the JSON layout below changes
# The code that decides what a Matrix holds: the matrix package, the version rules it applies and
# the framework registry (which frameworks/NAME.yaml files it reads, in what order).
_CODE = (
    Path(__file__).parent,
    Path(__file__).parent.parent / "versions.py",
    Path(__file__).parent.parent / "frameworks" / "__init__.py",
)


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


def shipped_file(directory: Path) -> Path:
    """The compiled form that ships beside the YAML (`make golden` writes it; a unit test fails
    while it is stale): a new install's first command reads it instead of parsing the YAML, which
    took that command from about 200 to 340 ms on 2026-12-05. Served only for its own key."""
    return directory / "generated" / "compiled.json"


def read_compiled(path: Path, key: str) -> Matrix | None:
    """The Matrix stored at `path` for `key`, or None when there is none or it cannot be used
    (unreadable, truncated, another key, or a shape the current code does not have)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("key") != key:
            return None
        matrix = _decoder(Matrix)(doc["matrix"], _Shared(doc["shared"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None
    return matrix if isinstance(matrix, Matrix) else None


def compiled_text(key: str, matrix: Matrix) -> str:
    """The compiled form of `matrix` for `key`: what read_compiled reads back."""
    shared: list[Any] = []
    body = _encode(matrix, _repeated(matrix), {}, shared)
    return json.dumps({"key": key, "shared": shared, "matrix": body}, separators=(",", ":"))


def write_shipped(directory: Path, matrix: Matrix) -> None:
    """Rewrite the compiled form shipped in `directory` for `matrix`, its YAML as it now is: what
    a command that changes the shipped YAML (matrix refresh, matrix installable --write) does after
    it, and `make golden`. Raises OSError."""
    from envbuilder.atomic import write_text_atomic

    write_text_atomic(shipped_file(directory), compiled_text(matrix_key(directory), matrix))


def write_compiled(path: Path, key: str, matrix: Matrix) -> None:
    """Store `matrix` for `key` (atomically) and drop older entries. Best effort: a cache folder
    that cannot be written only means the next command parses the YAML again."""
    from envbuilder.atomic import write_text_atomic  # only a miss writes (tempfile is slow to import)

    text = compiled_text(key, matrix)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
        for old in path.parent.glob("*.json"):
            if old.name != path.name:
                old.unlink(missing_ok=True)


# --------------------------------------------------------------------------- dataclasses -> JSON
# A tuple that occurs more than once (the NVIDIA_REQUIRE_CUDA exemptions of every image of one CUDA
# release, the arch lists of a toolkit's builds) is written once, in "shared", and referred to as
# {"$": index}: the file shrinks to a third (630 to 194 kB on 2026-12-01) and decoding builds each
# such tuple once.


def _repeated(root: Any) -> set[tuple[Any, ...]]:
    seen: set[tuple[Any, ...]] = set()
    again: set[tuple[Any, ...]] = set()

    def walk(value: Any) -> None:
        names = _field_names(type(value))
        if names is not None:
            for name in names:
                walk(getattr(value, name))
        elif isinstance(value, tuple) and len(value) > 1:
            if value in seen:
                again.add(value)
                return
            seen.add(value)
            for item in value:
                walk(item)

    walk(root)
    return again


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    """A dataclass's field names (None for any other type), once per class: a miss encodes
    ~16,000 values (2026-12-05), and dataclasses.fields() per value was a fifth of its time."""
    if cls not in _FIELD_NAMES:
        _FIELD_NAMES[cls] = (
            tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else None
        )
    return _FIELD_NAMES[cls]


def _encode(value: Any, repeated: set[tuple[Any, ...]], index: dict[Any, int], shared: list[Any]) -> Any:
    names = _field_names(type(value))
    if names is not None:
        return {name: _encode(getattr(value, name), repeated, index, shared) for name in names}
    if isinstance(value, tuple):
        if value not in repeated:
            return [_encode(v, repeated, index, shared) for v in value]
        if value not in index:
            index[value] = len(shared)
            shared.append(None)  # the slot first: items may be shared tuples themselves
            shared[index[value]] = [_encode(v, repeated, index, shared) for v in value]
        return {"$": index[value]}
    return value


# --------------------------------------------------------------------------- JSON -> dataclasses


class _Shared:
    """The "shared" table of one file and the tuples already built from it."""

    def __init__(self, table: list[Any]) -> None:
        self.table = table
        self.built: dict[tuple[int, Any], Any] = {}


def _decode(tp: Any, value: Any, shared: _Shared | None = None) -> Any:
    """Rebuild a value of type `tp` from its JSON form: frozen dataclasses from objects, tuples
    from lists (or shared-table references), every scalar's type checked. Raises
    TypeError/KeyError/ValueError/IndexError on a mismatch."""
    return _decoder(tp)(value, shared or _Shared([]))


Decoder = Callable[[Any, _Shared], Any]


@functools.cache
def _decoder(tp: Any) -> Decoder:
    """One decoding function per type, built once from the type hints (decoding is then a few
    calls per value, not an inspection of the type for every value)."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp)
        parts = [(f.name, _decoder(hints[f.name])) for f in dataclasses.fields(tp)]
        cls = tp

        def record(value: Any, shared: _Shared) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"{cls.__name__}: expected an object")
            return cls(**{name: dec(value[name], shared) for name, dec in parts})

        return record
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _decoder(args[0])

            def items(value: list[Any], shared: _Shared) -> tuple[Any, ...]:
                return tuple(item(v, shared) for v in value)
        else:
            each = [_decoder(a) for a in args]

            def items(value: list[Any], shared: _Shared) -> tuple[Any, ...]:
                return tuple(dec(v, shared) for dec, v in zip(each, value, strict=True))

        def sequence(value: Any, shared: _Shared) -> tuple[Any, ...]:
            if isinstance(value, dict):  # {"$": i}: built once from the shared table
                key = (value["$"], tp)
                if key not in shared.built:
                    shared.built[key] = items(_list(shared.table[value["$"]]), shared)
                return shared.built[key]  # type: ignore[no-any-return]
            return items(_list(value), shared)

        return sequence
    if origin in (Union, types.UnionType):
        (inner,) = (_decoder(a) for a in args if a is not type(None))  # only X | None is used
        return lambda value, shared: None if value is None else inner(value, shared)
    if origin is Literal:
        return lambda value, shared: value if value in args else _refuse(value, tp)
    if tp in (str, int, bool):
        return lambda value, shared: value if type(value) is tp else _refuse(value, tp)
    raise TypeError(f"no JSON form for {tp!r}")  # a new field type: teach _decoder, bump _FORMAT


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected a list, got {type(value).__name__}")
    return value


def _refuse(value: Any, tp: Any) -> Any:
    raise TypeError(f"cannot decode {value!r} as {tp}")
