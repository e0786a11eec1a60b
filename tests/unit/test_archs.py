"""The one arch-coverage rule (envbuilder/archs.py) and the harness's stdlib copy
(envbuilder/harness/kernels.py), driven by one case table (tests/data/arch_cases.yaml), and
their mutants: flipping any comparison in either copy must break a case."""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from envbuilder import archs
from envbuilder.harness import kernels
from envbuilder.host.frameworks import kernel_for as doctor_kernel_for
from envbuilder.versions import parse_cc

ROOT = Path(__file__).resolve().parents[2]
CASES: list[dict[str, Any]] = yaml.safe_load((ROOT / "tests/data/arch_cases.yaml").read_text())["cases"]
IDS = [f"{'+'.join(c['targets']) or 'none'}@{c['cc']}" for c in CASES]

# Runs one copy of the rule on one case; returns True when the copy gives the expected kernel.
Judge = Callable[[types.ModuleType, dict[str, Any]], bool]


def _judge_envbuilder(mod: types.ModuleType, case: dict[str, Any]) -> bool:
    got = mod.kernel_for(parse_cc(case["cc"]), mod.parse_targets(case["targets"]))
    want = mod.parse_target(case["kernel"]) if case["kernel"] else None
    return bool(got == want)


def _judge_harness(mod: types.ModuleType, case: dict[str, Any]) -> bool:
    targets = [t for t in (mod.parse_target(e) for e in case["targets"]) if t is not None]
    got = mod.kernel_for(parse_cc(case["cc"]), targets)
    want = mod.parse_target(case["kernel"]) if case["kernel"] else None
    return bool(got == want)


COPIES: dict[str, tuple[types.ModuleType, Judge]] = {
    "envbuilder.archs": (archs, _judge_envbuilder),
    "harness.kernels": (kernels, _judge_harness),
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("copy", sorted(COPIES))
def test_both_copies_follow_the_case_table(copy: str, case: dict[str, Any]) -> None:
    mod, judge = COPIES[copy]
    assert judge(mod, case), f"{copy}: {case}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_doctor_reports_the_kernel_of_the_case_table(case: dict[str, Any]) -> None:
    got = doctor_kernel_for(tuple(case["targets"]), case["cc"])
    if case["kernel"] is None:
        assert got is None
    else:
        assert got is not None
        want = archs.parse_target(case["kernel"])
        assert want is not None and archs.parse_target(got[1]) == want
        assert got[0] == want.kind


def test_harness_arch_covered_says_how() -> None:
    assert kernels.arch_covered(["sm_80", "compute_80"], (9, 0)) == (
        True,
        "PTX compute_80 (JIT-compiled by the driver at first use)",
    )
    assert kernels.arch_covered(["sm_90"], (9, 0)) == (True, "SASS sm_90")
    ok, why = kernels.arch_covered(["sm_75"], (9, 0))
    assert not ok and why == "no SASS for sm_90 and no PTX <= compute_90"


def test_matrix_spelling_and_description() -> None:
    ts = archs.matrix_targets(["7.5", "9.0"], ["12.0"])
    assert [t.name for t in ts] == ["sm_75", "sm_90", "compute_120"]
    assert archs.describe(ts) == "SASS for 7.5, 9.0 and PTX for 12.0"
    assert archs.parse_target("sm_9") is None and archs.parse_target("9") is None


# --------------------------------------------------------------------------- mutants

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


# The functions that decide (the rest of each module only formats what they decided).
RULE_FUNCTIONS = {"parse_target", "runs_on", "kernel_for"}


def _mutants(path: Path) -> Iterator[tuple[str, types.ModuleType]]:
    """Every one-comparison mutant of a module's rule functions: each <, <=, >, >=, ==, != flipped
    in turn, the module executed afresh (registered in sys.modules, as dataclasses need)."""
    tree = ast.parse(path.read_text())
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in RULE_FUNCTIONS]
    assert {f.name for f in funcs} == RULE_FUNCTIONS, f"{path} lost a rule function"
    sites = [
        (node, i)
        for f in funcs
        for node in ast.walk(f)
        if isinstance(node, ast.Compare)
        for i, op in enumerate(node.ops)
        if type(op) in _FLIP
    ]
    assert len(sites) >= 5, f"too few comparisons found in {path}: {len(sites)}"
    for node, i in sites:
        original = node.ops[i]
        node.ops[i] = _FLIP[type(original)]()
        name = f"_mutant_{path.stem}"
        mod = types.ModuleType(name)
        sys.modules[name] = mod
        try:
            exec(compile(tree, str(path), "exec"), mod.__dict__)  # our own source, mutated
        finally:
            node.ops[i] = original
            del sys.modules[name]
        yield f"line {node.lineno}: {type(original).__name__} -> {_FLIP[type(original)].__name__}", mod


@pytest.mark.parametrize("copy", sorted(COPIES))
def test_every_comparison_flip_breaks_a_case(copy: str) -> None:
    mod, judge = COPIES[copy]
    assert mod.__file__ is not None
    survivors = []
    for where, mutant in _mutants(Path(mod.__file__)):
        try:
            killed = not all(judge(mutant, case) for case in CASES)
        except Exception:  # a mutant that crashes is killed too
            killed = True
        if not killed:
            survivors.append(where)
    assert not survivors, f"{copy}: mutants no case catches: {survivors}"


@pytest.mark.parametrize("text", ["sm_90x", "sm_90a1", "compute_120f_extra", "sm_90 a"])
def test_an_arch_name_with_trailing_text_is_not_a_target(text: str) -> None:
    """Set I's survivor I13 (h13): the whole name is read, not a prefix of it."""
    assert archs.parse_target(text) is None
    assert archs.parse_target("sm_90a") == archs.Target("sass", (9, 0), "a")
    assert archs.parse_target(" compute_120f ") == archs.Target("ptx", (12, 0), "f")


def test_a_gpu_runs_the_sass_it_has_before_newer_ptx() -> None:
    # sm_80 cubins run on an 8.6 GPU as they are; PTX for 8.6 would need the driver's JIT.
    targets = archs.parse_targets(["sm_80", "compute_86"])
    got = archs.kernel_for((8, 6), targets)
    assert got is not None and (got.kind, got.cc) == ("sass", (8, 0))
    only_ptx = archs.kernel_for((8, 6), archs.parse_targets(["compute_86"]))
    assert only_ptx is not None and only_ptx.kind == "ptx"


# --------------------------------------------------------------------------- the seventh operator set


@pytest.mark.parametrize("text", [".0", "sm_", "9.", ""])
def test_a_target_with_a_part_missing_is_none(text: str) -> None:
    assert archs.parse_target(text) is None


@pytest.mark.parametrize("text", ["sm_90\n", "\tsm_90", "sm_90\r\n", "9.0\n"])
def test_a_target_read_with_white_space_around_it_is_the_target(text: str) -> None:
    """Torch's arch list and TensorFlow's build info are read from a program's output: a tab, a
    line break or a CRLF around a name is not part of it."""
    assert archs.parse_target(text) == archs.Target("sass", (9, 0), "")
