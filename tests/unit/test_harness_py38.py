"""The harness runs in the image's own Python, 3.8 included (matrices/base_images.yaml: ubuntu20.04,
python:3.8-slim-bookworm); the host side needs 3.10+. Two checks that the payload stays 3.8-clean:
vermin (the field's minimum-version detector) for the standard library and syntax it uses, and an
AST walk for what vermin lets pass: builtin or collections.abc generics subscripted where Python
evaluates them (a module-level alias such as `X = tuple[int, str]` raises TypeError on 3.8)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "envbuilder" / "harness"
GENERICS = {"tuple", "list", "dict", "set", "frozenset", "type"}
VERMIN_ARGS = ("--target=3.8-", "--violations", "--no-tips")
ABC = {"Callable", "Iterable", "Iterator", "Mapping", "MutableMapping", "Sequence", "Generator", "Set"}


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (not evaluated under `from __future__ import
    annotations`) or an `if TYPE_CHECKING:` block (never run)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            roots += node.body
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if node.returns is not None:
                roots.append(node.returns)
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            args += [a for a in (node.args.vararg, node.args.kwarg) if a is not None]
            roots += [a.annotation for a in args if a.annotation is not None]
    return {id(n) for root in roots for n in ast.walk(root)}


def _evaluated_generics(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _annotation_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript) or id(node) in skip:
            continue
        base = node.value
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
        if name in GENERICS or name in ABC:
            found.append(f"{path.relative_to(HARNESS.parent)}:{node.lineno}: {name}[...] is evaluated")
    return found


def test_every_annotated_harness_module_defers_its_annotations() -> None:
    missing = []
    for p in sorted(HARNESS.rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        if _annotation_nodes(ast.parse(text)) and "from __future__ import annotations" not in text:
            missing.append(str(p.relative_to(HARNESS.parent)))
    assert missing == []


def test_no_harness_module_evaluates_a_generic_alias() -> None:
    found = [hit for p in sorted(HARNESS.rglob("*.py")) for hit in _evaluated_generics(p)]
    assert found == []


def test_the_harness_needs_nothing_newer_than_python_3_8() -> None:
    pytest.importorskip("vermin")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, vermin; sys.exit(vermin.main())", *VERMIN_ARGS, str(HARNESS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
