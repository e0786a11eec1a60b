"""Hand-built stacks and specs for render tests (one per template x strategy case)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from envbuilder.image.packages import LockedPackage, PackageLock
from envbuilder.image.sources import PackageIndex
from envbuilder.image.spec import ImageSpec, parse_spec
from envbuilder.resolve.model import Stack

TORCH_BUNDLED_CU130 = Stack(
    id="torch2.11.0-cu130-py3.12-bundled-debian12",
    framework="torch",
    version="2.11.0",
    variant="cu130",
    cuda="13.0",
    cudnn="9.15.1.9",
    nccl="2.28.9",
    python="3.12",
    base_image="python:3.12-slim-bookworm",
    os="debian12",
    strategy="bundled",
    flavor=None,
    min_driver="580.65.06",
    require_cuda="cuda>=13.0",
    sass=("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"),
    ptx=("12.0",),
    index_url="https://download.pytorch.org/whl/cu130",
    packages=("torch==2.11.0",),
    companions=(("torchaudio", "torchaudio==2.11.0"), ("torchvision", "torchvision==0.26.0")),
    python_install="present",
)

TORCH_SYSTEM_CU126 = replace(
    TORCH_BUNDLED_CU130,
    id="torch2.11.0-cu126-py3.12-cuda12.6.3-runtime-ubuntu24.04",
    variant="cu126",
    cuda="12.6",
    cudnn="9.10.2.21",
    base_image="nvidia/cuda:12.6.3-runtime-ubuntu24.04",
    os="ubuntu24.04",
    strategy="system-cuda",
    flavor="runtime",
    min_driver="525.60.13",
    require_cuda="cuda>=12.6",
    sass=("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"),
    ptx=(),
    index_url="https://download.pytorch.org/whl/cu126",
    python_install="apt",
)

TORCH_SYSTEM_DEVEL = replace(
    TORCH_SYSTEM_CU126,
    id="torch2.11.0-cu126-py3.12-cuda12.6.3-devel-ubuntu24.04",
    base_image="nvidia/cuda:12.6.3-devel-ubuntu24.04",
    flavor="devel",
)

TF_SYSTEM_CUDNN = Stack(
    id="tensorflow2.17.0-cuda12-py3.10-cuda12.3.2-cudnn9-runtime-ubuntu22.04",
    framework="tensorflow",
    version="2.17.0",
    variant="cuda12",
    cuda="12.3",
    cudnn="8.9",
    nccl=None,
    python="3.10",
    base_image="nvidia/cuda:12.3.2-cudnn9-runtime-ubuntu22.04",
    os="ubuntu22.04",
    strategy="system-cuda",
    flavor="runtime",
    min_driver="525.60.13",
    require_cuda="cuda>=12.3",
    sass=("6.0", "7.0", "8.0", "8.9"),
    ptx=("9.0",),
    index_url=None,
    packages=("tensorflow==2.17.0",),
    companions=(),
    python_install="apt",
    notes=("cuDNN 9 in the image; TensorFlow's tested build is 8.9",),
)

JAX_BUNDLED = Stack(
    id="jax0.7.2-cuda12-py3.12-bundled-debian12",
    framework="jax",
    version="0.7.2",
    variant="cuda12",
    cuda="12.8",
    cudnn="9.8",
    nccl="2.26",
    python="3.12",
    base_image="python:3.12-slim-bookworm",
    os="debian12",
    strategy="bundled",
    flavor=None,
    min_driver="570.26",
    require_cuda="cuda>=12.8",
    sass=("5.2", "6.0", "7.0", "8.0", "9.0"),
    ptx=("9.0",),
    index_url=None,
    packages=("jax[cuda12]==0.7.2",),
    companions=(),
    python_install="present",
)

TORCH_CPU = replace(
    TORCH_BUNDLED_CU130,
    id="torch2.11.0-cpu-py3.12-bundled-debian12",
    variant="cpu",
    cuda=None,
    cudnn=None,
    nccl=None,
    min_driver=None,
    require_cuda=None,
    sass=(),
    ptx=(),
    index_url="https://download.pytorch.org/whl/cpu",
)


def spec(**fields: Any) -> ImageSpec:
    """A valid spec with overrides (parse_spec validates them like a file would)."""
    data: dict[str, Any] = {
        "name": "pytorch-train",
        "description": "PyTorch image-classifier training",
        "framework": "torch==2.11.*",
        "companions": ["torchvision"],
        "requirements": ["pillow>=10", "numpy>=1.26"],
        "env": {"OMP_NUM_THREADS": "8"},
        "user": {"name": "trainer", "uid": 1000},
    }
    data.update(fields)
    return parse_spec(data, "images/test.yaml")


def instructions(dockerfile: str) -> list[str]:
    """The instruction keywords of a Dockerfile, as Docker's parser sees them.

    Splits physical lines on "\\n" only (as Docker does), drops blank and comment lines (also
    inside a continuation), and joins lines that end in a backslash.
    """
    keywords: list[str] = []
    continuing = False
    for raw in dockerfile.split("\n"):
        line = raw.rstrip("\r")
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not continuing:
            keywords.append(stripped.split()[0].upper())
        continuing = line.rstrip().endswith("\\")
    return keywords


def label_values(dockerfile: str) -> dict[str, str]:
    """The LABEL values as BuildKit's word lexer reads a double-quoted word: backslash before
    a backslash, `"` or `$` stands for that character, any other backslash for itself, and an
    unescaped `$NAME` or `${NAME}` is a variable, expanded (moby frontend/dockerfile/shell/lex.go,
    processDoubleQuote, processDollar)."""
    text = dockerfile[dockerfile.index("\nLABEL ") :].replace("\\\n", " ")
    pairs = re.findall(r'([a-z0-9.-]+)="((?:[^"\\]|\\.)*)"', text)
    return {k: _BUILDKIT_WORD.sub(lambda m: m.group(1) or "", v) for k, v in pairs}


# An escaped `\\`, `"` or `$` stands for itself; an unescaped `$NAME` or `${...}` is expanded by
# BuildKit (to the build's value, "" where unset: read here as ""), so the label Docker records
# is not the text.
_BUILDKIT_WORD = re.compile(r'\\([\\"$])|\$(?:\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)')


def locked(name: str, version: str, group: str = "framework", digit: str = "a") -> LockedPackage:
    """A locked wheel with a made-up (well-formed) sha256."""
    return LockedPackage(
        name=name,
        version=version,
        wheel=f"{name.replace('-', '_')}-{version}-py3-none-any.whl",
        sha256=digit * 64,
        size=1000,
        urls=(f"https://files.example/{name}-{version}-py3-none-any.whl",),
        group=group,  # type: ignore[arg-type]
    )


def package_lock(
    framework: tuple[LockedPackage, ...] = (
        locked("torch", "2.11.0"),
        locked("filelock", "4.3.1", digit="b"),
    ),
    project: tuple[LockedPackage, ...] = (locked("numpy", "2.1.0", "project", "c"),),
    *,
    framework_index: str | None = "https://download.pytorch.org/whl/cu130",
    indexes: tuple[PackageIndex, ...] = (),
    platform: str = "x86_64",
) -> PackageLock:
    """A package lock as lock_packages would write it (no uv run)."""
    return PackageLock(
        platform=platform,  # type: ignore[arg-type]
        python="3.12",
        python_platform=f"{platform}-manylinux_2_28",
        resolver="uv 0.13.9",
        framework_index=framework_index,
        default_index="https://pypi.org/simple",
        indexes=indexes,
        packages=(*framework, *project),
    )
