"""Bounded parsing (envbuilder/bounded.py, issue 18 defects 3 and 4): a YAML bomb, deep nesting and
a huge file are one SpecError line, at once; the message never echoes the document."""

from __future__ import annotations

from pathlib import Path

import pytest

from envbuilder.bounded import TooLarge, load_json, load_yaml
from envbuilder.errors import SpecError
from envbuilder.image.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]


def bomb(levels: int) -> str:
    """Issue 18's 700-byte spec: nine anchors, each a list of ten aliases of the one before."""
    lines = ['a0: &a0 ["lol-secret-value"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "schema_version: 1\nname: x\nframework: torch\n" + "\n".join(lines) + f"\nenv: *a{levels}\n"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (bomb(9), "more than 200000 values once its aliases are expanded"),
        (bomb(10), "more than 200000 values once its aliases are expanded"),
        ("x: " + "[" * 1000 + "]" * 1000 + "\n", "nested deeper than 64 levels"),
        ("x: " + "{a: " * 950 + "1" + "}" * 950 + "\n", "nested deeper than 64 levels"),
        ("name: x\ndescription: " + "lol" * 100_000 + "\n", "larger than 256 KiB"),
    ],
)
def test_hostile_specs_are_one_line_at_once(text: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:  # bomb(9) took 112 s and 3.0 GB before, bomb(10) OOM
        load_spec(path)
    message = caught.value.message
    assert message == f"{path}: refused: the spec is {why}"
    assert "lol" not in message


def test_ordinary_documents_pass_and_json_is_bounded_too() -> None:
    spec = load_spec(ROOT / "images" / "pytorch-train.yaml")
    assert spec.name == "pytorch-train"
    assert load_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    assert load_json('{"a": ["[[[[", {"b": 1}]}') == {"a": ["[[[[", {"b": 1}]}
    with pytest.raises(TooLarge, match="nested deeper than 64 levels"):
        load_json("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TooLarge, match="larger than"):
        load_json(" " * 10, max_bytes=5)
