"""benchmarks/mutants.py's second operator set (`--auto AREA --ops new`, issue 23): the one-line
bugs it plants in a small module of known code, and what it leaves alone (messages, annotations,
tuples whose length their use fixes), and the first set's IDs unchanged by it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]

MODULE = '''\
from envbuilder.image import secrets

REQUIRED = ("name", "version", "sha256")
HINT = "see {ref}"


def check(doc, text, key, problems):
    """A docstring: call(x) here is no code."""
    shown: tuple[str, str] = ("a", "b")
    value = redact(text)
    clean = text.strip()
    safe = secrets.redact(text, key)
    need(doc, "harness_sha256", str, "result")
    for field in ("started", "finished"):
        need(doc, field, str, "result")
    order = compare(text, key)
    first, second = text, key
    problems.append(f"{redact(text)} missing")
    raise ValueError("no", hint=HINT.format(ref=describe(doc)))
    return value, str(clean), len(safe), order, first, second, shown
'''


@pytest.fixture(scope="module")
def mutants() -> ModuleType:
    path = REPO / "benchmarks" / "mutants.py"
    spec = importlib.util.spec_from_file_location("mutants_under_test", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def area(mutants: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "envbuilder").mkdir()
    (tmp_path / "envbuilder" / "m.py").write_text(MODULE)
    monkeypatch.setattr(mutants, "ROOT", tmp_path)
    target = mutants.Target("m.py", ("check",), ("test_x.py",), constants=("REQUIRED",))
    monkeypatch.setitem(mutants.AREAS, "t", ("T", (target,)))
    return "t"


def changes(mutants: ModuleType, area: str, ops: str) -> set[tuple[str, str]]:
    return {(mu.old.strip(), mu.new.strip()) for mu in mutants.auto_mutants(area, ops)}


def test_a_dropped_call_leaves_its_argument_or_its_value(mutants: ModuleType, area: str) -> None:
    got = changes(mutants, area, "new")
    assert ("value = redact(text)", "value = text") in got
    assert ("clean = text.strip()", "clean = text") in got
    assert ("safe = secrets.redact(text, key)", "safe = text") in got  # a module's function
    # Builtins that convert (str, len) are no transform a test must look for.
    assert not any("str(clean)" in old and "str(clean)" not in new for old, new in got)
    assert not any("len(safe)" in old and "len(safe)" not in new for old, new in got)


def test_a_dropped_call_statement_a_removed_item_and_a_swap(mutants: ModuleType, area: str) -> None:
    got = changes(mutants, area, "new")
    assert ('need(doc, "harness_sha256", str, "result")', "pass") in got
    assert ('for field in ("started", "finished"):', 'for field in ("finished",):') in got
    assert ('for field in ("started", "finished"):', 'for field in ("started",):') in got
    assert ("order = compare(text, key)", "order = compare(key, text)") in got
    assert ('REQUIRED = ("name", "version", "sha256")', 'REQUIRED = ("name", "sha256")') in got
    # Swaps only of two non-constants: need(doc, "harness_sha256", ...) swaps doc and str alone.
    swaps = {new for old, new in got if old == 'need(doc, "harness_sha256", str, "result")'}
    assert swaps == {"pass", 'need(str, "harness_sha256", doc, "result")'}


def test_messages_annotations_and_fixed_tuples_are_left_alone(mutants: ModuleType, area: str) -> None:
    got = changes(mutants, area, "new")
    olds = {old for old, _ in got}
    assert not any("describe" in old and "describe" not in new for old, new in got)  # a hint's text
    assert 'shown: tuple[str, str] = ("a", "b")' in olds  # its literal, not its annotation
    assert not any(new.startswith("shown: tuple[str]") for _, new in got)
    assert "first, second = text, key" not in olds  # an unpacked tuple: its length is fixed
    assert not any("return" in old and "value, " not in new for old, new in got)
    # The redaction inside an f-string is no mutant (nothing in an f-string is); the statement is.
    assert ('problems.append(f"{redact(text)} missing")', "pass") in got
    assert not any("call(x)" in old for old in olds)  # the docstring


def test_the_first_sets_ids_stay_and_the_second_is_numbered_apart(mutants: ModuleType, area: str) -> None:
    old = mutants.auto_mutants(area, "old")
    new = mutants.auto_mutants(area, "new")
    both = mutants.auto_mutants(area, "all")
    assert old and new
    assert both == old + new
    assert [mu.id for mu in new] == [f"TN{i:03d}" for i in range(1, len(new) + 1)]
    assert all(not mu.id.startswith("TN") for mu in old)
    assert mutants.auto_mutants(area, "new") == new  # deterministic
