"""The count of docs/architecture.md "How to add a framework", proven: a copy of the tree gets a
fourth framework (PaddlePaddle, the doc's worked example, with illustrative facts) by touching
only the files the doc lists, and then its registry checks pass, the matrix serves it, the
command line offers it, `init`'s draft recognises it and the harness takes it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PADDLE_PY = r'''"""PaddlePaddle (the worked example of docs/architecture.md; illustrative)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from envbuilder.frameworks.base import (
    CompileCache, Facts, HarnessPlan, MonitorHints, VariantFacts, pinned, xy,
)

if TYPE_CHECKING:
    from packaging.requirements import Requirement

NAME = "paddle"
COMPILE_CACHES: tuple[CompileCache, ...] = ()
FACTS = Facts(packages=("paddlepaddle-gpu", "paddlepaddle"), import_name="paddle")
HARNESS = HarnessPlan(
    plan="xla", steps_module="steps/paddle_steps.py", smoke_step="paddle_smoke", kernel_owners=("paddle",)
)
HINTS = MonitorHints(
    oom=re.compile(r"\(ResourceExhausted\) Out of memory"),
    oom_example="MemoryError: (ResourceExhausted) Out of memory error on GPU 0.",
)
PROBE = "import paddle\nout.update(version=paddle.__version__)\n"


def read_variant(requirements: Sequence[Requirement]) -> VariantFacts | None:
    cuda = pinned(requirements, r"nvidia-cuda-runtime-cu\d+")
    return VariantFacts(name=f"cu{''.join(cuda.split('.')[:2])}", cuda=xy(cuda)) if cuda else None
'''
PADDLE_YAML = """schema_version: 1
framework: paddle
source: illustrative (tests/unit/test_fourth_framework.py)
reviewed: "2026-12-05"
install:
  index_url: "https://www.paddlepaddle.org.cn/packages/stable/{variant}/"
  bundled: ["paddlepaddle-gpu=={version}"]
  system: ["paddlepaddle-gpu=={version}"]
  uses_system_cuda: false
  companions: {}
releases:
  - version: "3.0.0"
    python: ">=3.9,<3.14"
    variants:
      - {name: cu126, cuda: "12.6", cudnn: "9.5", nccl: null, sass: ["8.0", "9.0"], ptx: [], default: true}
"""
PADDLE_STEPS = '''"""PaddlePaddle's adapter for the plan (a stub: the example is not implemented)."""

from __future__ import annotations


class _Paddle:
    name = "paddle"
    env: dict[str, str] = {}
    tuned_tag = "paddle"
    compile = False


PADDLE = _Paddle()
'''


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: {old!r}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def listed_files() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text[text.index("## How to add a framework\n") :]
    return re.findall(r"^\d+\. `([^`]+)`", section, re.M)


def add_paddle(tree: Path) -> None:
    """The doc's seven steps, each on the file it names."""
    (tree / "matrices/frameworks/paddle.yaml").write_text(PADDLE_YAML)
    edit(
        tree / "matrices/refresh.yaml",
        "\n# CUDA libraries",
        '  paddle:\n    package: paddlepaddle-gpu\n    scan: ["paddle/libs/*.so"]\n    since: "3.0.0"\n'
        "\n# CUDA libraries",
    )
    (tree / "envbuilder/frameworks/paddle.py").write_text(PADDLE_PY)
    edit(
        tree / "envbuilder/frameworks/__init__.py", "jax, tensorflow, torch", "jax, paddle, tensorflow, torch"
    )
    edit(
        tree / "envbuilder/frameworks/__init__.py",
        "(torch, tensorflow, jax)",
        "(torch, tensorflow, jax, paddle)",
    )
    (tree / "envbuilder/harness/steps/paddle_steps.py").write_text(PADDLE_STEPS)
    edit(
        tree / "envbuilder/harness/frameworks.py",
        "\n}",
        '\n    "paddle": HarnessFramework("paddle_steps:PADDLE", ("paddle",), ("paddle",)),\n}',
    )
    smokes = tree / "envbuilder/harness/steps/frameworks.py"
    edit(smokes, 'FRAMEWORKS = ("tensorflow", "jax")', 'FRAMEWORKS = ("tensorflow", "jax", "paddle")')
    edit(smokes, '"tensorflow": _tensorflow}', '"tensorflow": _tensorflow, "paddle": _paddle}')
    edit(
        smokes,
        "\ndef child_main(",
        "\ndef _paddle(want_gpu: bool) -> dict[str, Any]:\n    import paddle\n\n"
        '    return {"version": paddle.__version__}\n\n\ndef child_main(',
    )


def changed(tree: Path, before: dict[str, bytes]) -> set[str]:
    now = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    return {rel for rel in before.keys() | now.keys() if before.get(rel) != now.get(rel)}


def test_a_fourth_framework_touches_only_the_files_the_doc_lists(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for part in ("envbuilder", "matrices", "docs"):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "tests/unit").mkdir(parents=True)
    for test in ("test_frameworks.py", "test_layout.py"):
        shutil.copy(ROOT / "tests/unit" / test, tree / "tests/unit" / test)
    before = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*") if p.is_file()}

    add_paddle(tree)

    files = listed_files()
    assert changed(tree, before) == set(files) and len(files) <= 7
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "ENVBUILDER_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    checks = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checks.returncode == 0, checks.stdout[-3000:]
    probe = """
import json
from click.testing import CliRunner
from envbuilder import frameworks
from envbuilder.cli import cli
from envbuilder.harness import plan, session
from envbuilder.image.draft import FRAMEWORK_OF
from envbuilder.matrix import framework, load_matrix
from envbuilder.run.joblog import read_job_output
helped = CliRunner().invoke(cli, ["certify", "--help"]).output
print(json.dumps({
    "names": list(frameworks.NAMES),
    "matrix": [r.version for r in framework(load_matrix(), "paddle").releases],
    "choice": "paddle" in helped,
    "draft": FRAMEWORK_OF.get("paddlepaddle-gpu"),
    "harness": [session.FRAMEWORK_CHOICES[-1], plan.XLA_FRAMEWORKS["paddle"].name],
    "oom": read_job_output(frameworks.get("paddle").HINTS.oom_example).oom_framework,
}))
"""
    res = subprocess.run(
        [sys.executable, "-c", probe], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout.splitlines()[-1]) == {
        "names": ["torch", "tensorflow", "jax", "paddle"],
        "matrix": ["3.0.0"],
        "choice": True,
        "draft": "paddle",
        "harness": ["paddle", "paddle"],
        "oom": "paddle",
    }
