"""Reading matrix YAML: mappings that remember their line, a location for error messages, and
typed field readers that refuse unquoted versions. Every problem names file, line, row, field."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from envbuilder.errors import MatrixError, UsageError
from envbuilder.matrix.model import Compiler, KernelSet
from envbuilder.versions import parse_cc, parse_driver, parse_version

SCHEMA_VERSION = 1
_INT_KEYS = frozenset(
    {"schema_version", "major", "mvc_max_branch", "first_branch", "last_branch", "branches", "sets"}
)
T = TypeVar("T")


# --------------------------------------------------------------------------- YAML with lines


class _LineDict(dict[str, Any]):
    line: int = 0


@functools.cache
def _loader() -> Any:
    """A safe YAML loader whose mappings remember their line: libyaml's CSafeLoader when PyYAML
    was built with it (about 7x faster to parse matrices/), else the pure-Python SafeLoader.
    Imported here, not at module level: a command served from the compiled matrix never needs it."""
    import yaml

    base = getattr(yaml, "CSafeLoader", None) if yaml.__with_libyaml__ else None

    class _Loader(base or yaml.SafeLoader):  # type: ignore[misc]
        pass

    def construct_mapping(loader: Any, node: Any) -> _LineDict:
        d = _LineDict({str(k): v for k, v in loader.construct_mapping(node, deep=True).items()})
        d.line = node.start_mark.line + 1
        return d

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return _Loader


class Ctx:
    """Where we are in a file, for error messages: 'cuda.yaml:42 releases[3] field min_driver'."""

    def __init__(self, file: str, where: str = "", line: int = 0) -> None:
        self.file, self.where, self.line = file, where, line

    def at(self, where: str, row: Any = None) -> Ctx:
        line = getattr(row, "line", 0) or self.line
        return Ctx(self.file, f"{self.where} {where}".strip(), line)

    def fail(self, field: str | None, problem: str) -> MatrixError:
        loc = f"{self.file}:{self.line}" if self.line else self.file
        row = f" {self.where}" if self.where else ""
        fld = f" field '{field}'" if field else ""
        return MatrixError(
            f"{loc}{row}{fld}: {problem}",
            hint="fix the matrix file (see matrices/README.md), then run `envbuilder matrix check`",
            file=self.file,
            line=self.line or None,
            field=f"{self.where} {field}".strip() if field else self.where or None,
        )


def read_file(path: Path) -> tuple[_LineDict, Ctx]:
    ctx = Ctx(path.name if path.parent.name != "frameworks" else f"frameworks/{path.name}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ctx.fail(None, f"cannot read: {exc.strerror}") from exc
    import yaml

    try:
        data = yaml.load(text, Loader=_loader())  # a SafeLoader / CSafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise ctx.fail(None, f"not valid YAML{line}: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(data, dict):
        raise ctx.fail(None, "expected a mapping at the top level")
    _check_scalars(data, ctx, key="")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ctx.fail("schema_version", f"expected {SCHEMA_VERSION}, got {data.get('schema_version')!r}")
    for key in ("source", "reviewed"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise ctx.fail(key, "missing (every matrix file names its source and review date)")
    return _LineDict(data), ctx


def _check_scalars(node: Any, ctx: Ctx, key: str) -> None:
    """Versions must be quoted strings: refuse floats anywhere and ints outside integer fields."""
    if isinstance(node, dict):
        for k, v in node.items():
            _check_scalars(v, ctx.at("", node) if isinstance(v, dict) else ctx, str(k))
    elif isinstance(node, list):
        for item in node:
            _check_scalars(item, ctx.at("", item) if isinstance(item, dict) else ctx, key)
    elif isinstance(node, bool) or node is None:
        return
    elif isinstance(node, float):
        raise ctx.fail(
            key, f"unquoted number {node!r}: write versions as quoted strings ('12.10', not 12.10)"
        )
    elif isinstance(node, int) and key not in _INT_KEYS:
        raise ctx.fail(key, f"unquoted number {node!r}: write versions as quoted strings")


# --------------------------------------------------------------------------- field readers


def get_field(row: dict[str, Any], key: str, ctx: Ctx, kind: type[T], *, optional: bool = False) -> T:
    if key not in row or row[key] is None:
        if optional:
            return None  # type: ignore[return-value]
        raise ctx.fail(key, "missing")
    value = row[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):  # YAML's yes is no number
        raise ctx.fail(key, f"expected {kind.__name__}, got {type(value).__name__} {value!r}")
    return value


def branch_field(row: dict[str, Any], key: str, ctx: Ctx) -> int | None:
    """An optional driver branch (580): a positive whole number."""
    value = get_field(row, key, ctx, int, optional=True)
    if value is not None and value <= 0:
        raise ctx.fail(key, f"expected a driver branch like 580, got {value!r}")
    return value


def checked_field(ctx: Ctx, field: str, value: str, parse: Callable[[str], object]) -> str:
    try:
        parse(value)
    except UsageError as exc:
        raise ctx.fail(field, exc.message) from exc
    return value


def version_field(row: dict[str, Any], key: str, ctx: Ctx, *, optional: bool = False) -> str:
    value = get_field(row, key, ctx, str, optional=optional)
    return value if value is None else checked_field(ctx, key, value, parse_version)


def driver_field(row: dict[str, Any], key: str, ctx: Ctx, *, optional: bool = False) -> str:
    value = get_field(row, key, ctx, str, optional=optional)
    return value if value is None else checked_field(ctx, key, value, parse_driver)


def cc_list(row: dict[str, Any], key: str, ctx: Ctx) -> tuple[str, ...]:
    values = get_field(row, key, ctx, list)
    for v in values:
        if not isinstance(v, str):
            raise ctx.fail(key, f"compute capability {v!r} must be a quoted string")
        checked_field(ctx, key, v, parse_cc)
    if len(set(values)) != len(values):
        raise ctx.fail(key, "duplicate compute capability in list")
    return tuple(sorted(values, key=parse_cc))


def rows(data: dict[str, Any], key: str, ctx: Ctx) -> list[_LineDict]:
    items = get_field(data, key, ctx, list)
    for i, row in enumerate(items):
        if not isinstance(row, dict):
            raise ctx.at(f"{key}[{i}]").fail(None, "expected a mapping")
    return items


def require_unique(items: Iterable[tuple[str, Ctx]], what: str) -> None:
    seen: dict[str, Ctx] = {}
    for value, ctx in items:
        if value in seen:
            raise ctx.fail(None, f"duplicate {what} {value!r} (also at line {seen[value].line})")
        seen[value] = ctx


def kernel_sets_field(row: dict[str, Any], c: Ctx) -> tuple[KernelSet, ...]:
    """A row's `kernel_sets` (generated: the wheel's fatbins grouped by SASS and PTX lists)."""
    out = []
    for i, ks in enumerate(get_field(row, "kernel_sets", c, list, optional=True) or ()):
        kc = c.at(f"kernel_sets[{i}]", ks)
        if not isinstance(ks, dict):
            raise kc.fail(None, "each kernel set is a mapping with sass, ptx and sets")
        sets = get_field(ks, "sets", kc, int)
        if sets < 1:
            raise kc.fail("sets", f"a count of kernel sets is at least 1, got {sets}")
        out.append(KernelSet(sass=cc_list(ks, "sass", kc), ptx=cc_list(ks, "ptx", kc), sets=sets))
    return tuple(out)


def compiler_field(row: dict[str, Any], c: Ctx) -> Compiler | None:
    """A row's `compiler` (generated: the XLA compiler's targets and the ptxas requirement)."""
    comp = get_field(row, "compiler", c, dict, optional=True)
    if comp is None:
        return None
    cc = c.at("compiler", comp)
    runs = get_field(comp, "runs", cc, str)
    if runs not in ("always", "on-request"):
        raise cc.fail("runs", f"expected 'always' or 'on-request', got {runs!r}")
    ptxas = get_field(comp, "ptxas", cc, str, optional=True)
    if ptxas is not None:
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            Requirement(ptxas)
        except InvalidRequirement as exc:
            raise cc.fail("ptxas", f"not a requirement: {ptxas!r}") from exc
    return Compiler(runs=runs, targets=cc_list(comp, "targets", cc), ptxas=ptxas)
