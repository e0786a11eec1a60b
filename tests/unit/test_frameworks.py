"""The framework registry (envbuilder/frameworks/) against what it must agree with: the
image-side harness's own table (which imports nothing of envbuilder), the matrix files, and
docs/architecture.md's "How to add a framework"; and no framework-name chain outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from envbuilder import frameworks
from envbuilder.errors import UsageError
from envbuilder.frameworks.base import Framework
from envbuilder.harness import frameworks as harness_frameworks
from envbuilder.harness import inventory, plan, session
from envbuilder.harness.steps import frameworks as harness_smokes
from envbuilder.resources import harness_dir, matrices_dir
from envbuilder.run.joblog import read_job_output

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
MEMBERS = ("NAME", "FACTS", "HARNESS", "HINTS", "COMPILE_CACHES", "PROBE", "read_variant")  # base.Framework's


def section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_the_registry_is_the_modules_in_order() -> None:
    assert frameworks.NAMES[:3] == ("torch", "tensorflow", "jax")  # the first three, in listing order
    assert frameworks.DEFAULT in frameworks.NAMES
    for fw in frameworks.ALL_FRAMEWORK_MODULES:
        module = fw.__name__  # type: ignore[attr-defined]  # each is a module
        assert module == f"envbuilder.frameworks.{fw.NAME}"
        assert all(hasattr(fw, m) for m in MEMBERS), module
        assert frameworks.get(fw.NAME) is fw
    with pytest.raises(UsageError, match="unknown framework 'mxnet'") as info:
        frameworks.get("mxnet")
    assert "torch, tensorflow, jax" in (info.value.hint or "")


def test_the_protocol_is_what_the_doc_and_the_test_name() -> None:
    declared = set(Framework.__annotations__) | {n for n in vars(Framework) if not n.startswith("_")}
    assert declared == set(MEMBERS)


def test_the_harness_table_agrees_with_the_registry() -> None:
    """harness/frameworks.py (image-side) and each module's HARNESS name the same things."""
    assert tuple(harness_frameworks.FRAMEWORKS) == frameworks.NAMES
    assert session.FRAMEWORK_CHOICES == frameworks.NAMES
    assert frozenset(frameworks.NAMES) == inventory.FRAMEWORK_OWNERS
    for fw in frameworks.ALL_FRAMEWORK_MODULES:
        row = harness_frameworks.FRAMEWORKS[fw.NAME]
        assert row.kernel_packages == fw.HARNESS.kernel_owners
        assert row.compile_caches == tuple(c.env for c in fw.COMPILE_CACHES)  # hostinfo.compile_caches
        assert {folder for folder, owner in inventory.PACKAGES if owner == fw.NAME} == set(
            row.kernel_packages
        )
        assert (harness_dir() / fw.HARNESS.steps_module).exists(), fw.HARNESS.steps_module
        assert fw.HARNESS.smoke_step == f"{fw.NAME}_smoke"
        if fw.HARNESS.plan == "xla":
            assert (
                row.adapter is not None and fw.HARNESS.steps_module == f"steps/{row.adapter.split(':')[0]}.py"
            )
            assert plan.XLA_FRAMEWORKS[fw.NAME].name == fw.FACTS.import_name
            assert fw.NAME in harness_smokes.FRAMEWORKS  # its smoke runs in a child
        else:
            assert row.adapter is None and fw.NAME not in plan.XLA_FRAMEWORKS


def test_each_framework_has_its_matrix_files() -> None:
    refresh = yaml.safe_load((matrices_dir() / "refresh.yaml").read_text())["frameworks"]
    assert tuple(refresh) == frameworks.NAMES
    for fw in frameworks.ALL_FRAMEWORK_MODULES:
        data = yaml.safe_load((matrices_dir() / "frameworks" / f"{fw.NAME}.yaml").read_text())
        assert data["framework"] == fw.NAME
        assert ("plugins" in refresh[fw.NAME]) == (fw.FACTS.refresh == "plugins")
        assert refresh[fw.NAME]["package"] in fw.FACTS.packages


def test_each_out_of_memory_pattern_matches_its_own_message_only() -> None:
    for fw in frameworks.ALL_FRAMEWORK_MODULES:
        said = [o.NAME for o in frameworks.ALL_FRAMEWORK_MODULES if o.HINTS.oom.search(fw.HINTS.oom_example)]
        assert said == [fw.NAME]
        assert read_job_output(f"step 3 bs 64 ok\n{fw.HINTS.oom_example}\n").oom_framework == fw.NAME


def test_no_framework_name_is_compared_outside_the_framework_modules() -> None:
    """`framework == "torch"`, `fw in ("jax", ...)`, a literal tuple of the names: each is a
    chain a new framework would have to find. Only envbuilder/frameworks/ and the image-side
    harness (which cannot import it) may spell the names as values to compare or list."""
    names = set(frameworks.NAMES)
    compared_in_code = re.compile(r"==\s*[\"'](" + "|".join(names) + r")[\"']")  # a child's program text
    bad = []
    for path in sorted((ROOT / "envbuilder").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("envbuilder/frameworks/", "envbuilder/harness/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                if names & {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}:
                    bad.append(f"{rel}:{node.lineno} compares with a framework name")
            elif isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
                elts = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
                inner = [e.elts[0] for e in elts if isinstance(e, ast.Tuple) and e.elts]  # (name, ...) rows
                consts = {e.value for e in [*elts, *inner] if isinstance(e, ast.Constant)}
                if len(names & consts) >= 2:
                    bad.append(f"{rel}:{node.lineno} lists framework names")
            elif isinstance(node, ast.Constant) and compared_in_code.search(str(node.value)):
                bad.append(f"{rel}:{node.lineno} compares with a framework name in program text")
    assert not bad, "\n".join(bad)


def test_the_doc_names_the_members_and_the_files_a_framework_touches() -> None:
    """docs/architecture.md "How to add a framework": every Protocol member, and a numbered list
    of the files (at most 7) that, with the worked example's name replaced by a registered
    framework of the same plan (jax), all exist and all mention it."""
    text = section("How to add a framework")
    for member in MEMBERS:
        assert f"`{member}`" in text, f"the doc does not name {member}"
    steps = re.findall(r"^(\d+)\. `([^`]+)`", text, re.M)
    assert [int(n) for n, _ in steps] == list(range(1, len(steps) + 1))
    assert len(steps) <= 7 and f"in order ({len(steps)})" in text
    example = re.search(r"as `(\w+)` \(not implemented\)", text)
    assert example is not None
    jax = frameworks.get("jax")
    assert jax.HARNESS.plan == "xla"  # the worked example's plan
    for _, path in steps:
        real = ROOT / path.replace(example.group(1), "jax")
        assert real.is_file(), f"{path} -> {real} does not exist"
        assert "jax" in real.read_text(encoding="utf-8").lower(), f"{real} does not mention jax"
    # the registry's own files are all in the list
    listed = {p for _, p in steps}
    for need in (
        "envbuilder/frameworks/__init__.py",
        "envbuilder/harness/frameworks.py",
        "matrices/refresh.yaml",
    ):
        assert need in listed, need
