"""bytecode.py: which of a package's modules carry a .pyc for this interpreter, found without
importing the package, and the warning for a package mostly without."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

import pytest

from envbuilder.harness.bytecode import bytecode_warnings, package_bytecode


def _package(root: Path, name: str, modules: int, compiled: int) -> None:
    pkg = root / name
    (pkg / "sub").mkdir(parents=True)
    files = [pkg / "__init__.py"] + [pkg / "sub" / f"m{i}.py" for i in range(modules - 1)]
    for f in files:
        f.write_text("raise SystemExit('imported')\n")  # found, never imported
    for f in files[:compiled]:
        py_compile.compile(str(f), doraise=True)


def test_counts_the_modules_with_bytecode_for_this_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _package(tmp_path, "eb_bc_some", modules=5, compiled=2)
    _package(tmp_path, "eb_bc_all", modules=3, compiled=3)
    monkeypatch.syspath_prepend(str(tmp_path))
    rec = package_bytecode(["eb_bc_some", "eb_bc_all", "eb_bc_absent"])
    assert rec["cache_tag"] == sys.implementation.cache_tag
    assert rec["packages"] == {
        "eb_bc_some": {"modules": 5, "compiled": 2},
        "eb_bc_all": {"modules": 3, "compiled": 3},
    }
    assert "eb_bc_some" not in sys.modules
    # another interpreter's bytecode is not this one's
    assert package_bytecode(["eb_bc_all"], cache_tag="cpython-27")["packages"]["eb_bc_all"]["compiled"] == 0


def test_a_package_mostly_without_bytecode_is_warned_about() -> None:
    rec = {
        "cache_tag": "cpython-312",
        "packages": {
            "torch": {"modules": 2141, "compiled": 0},
            "torchvision": {"modules": 182, "compiled": 182},
            "sympy": {"modules": 10, "compiled": 5},
            "triton": {"modules": 110, "compiled": 54},
            "empty": {"modules": 0, "compiled": 0},
        },
    }
    lines = bytecode_warnings(rec)
    # one line for every short package (half is enough: sympy 5 of 10 is not named)
    assert len(lines) == 1
    assert ": torch 0 of 2141, triton 54 of 110: " in lines[0]
    assert "sympy" not in lines[0] and "torchvision" not in lines[0] and "empty" not in lines[0]
    assert "--compile-bytecode" in lines[0] and "cpython-312" in lines[0]
    assert bytecode_warnings({"packages": {}}) == []
