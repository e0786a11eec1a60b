"""Against the real PyPI (marker `network`; CI runs it, bounded to about 1 MB): a jax CUDA plugin
wheel read by HTTP range requests from PyPI's file host, its kernels read by the fatbin reader
and by NVIDIA's cuobjdump from the same extracted member, and the two agree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from envbuilder.harness import fatbin
from envbuilder.matrix.index import PypiJsonIndex
from envbuilder.matrix.refresh import pick_wheel
from envbuilder.matrix.wheel import WheelReader

pytestmark = pytest.mark.network

PROJECT, VERSION, MEMBER = "jax-cuda13-plugin", "0.11.2", "jax_cuda13_plugin/_prng.so"


def _cuobjdump() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for base in list(spec.submodule_search_locations or []) if spec else []:
        for exe in Path(base).glob("cu*/bin/cuobjdump"):
            return exe
    pytest.fail("cuobjdump is missing: `make install` installs the nvidia-cuda-cuobjdump wheel")


def test_a_real_wheel_is_read_by_ranges_and_agrees_with_cuobjdump(tmp_path: Path) -> None:
    files = [f for f in PypiJsonIndex().files(PROJECT) if str(f.version) == VERSION]
    wheel = pick_wheel(files)
    assert wheel is not None and wheel.sha256 and wheel.size
    with WheelReader(wheel.url, wheel.filename) as w:
        assert w.metadata().requires_python is not None
        with w.extracted(MEMBER, tmp_path / "x") as lib:
            ours = fatbin.file_entries(lib)
            out = subprocess.run(
                [str(_cuobjdump()), "--list-elf", "--list-ptx", str(lib)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        assert w.transfer.ranges, "PyPI's file host answers range requests"
        assert w.transfer.fetched < wheel.size / 4, (w.transfer, wheel.size)
    theirs = [
        ("sass" if m.group(1) == "ELF" else "ptx", int(m.group(2)))
        for m in re.finditer(r"^(ELF|PTX) file\s+\d+: .*\.sm_(\d+)[a-z]?\.(?:cubin|ptx)$", out, re.MULTILINE)
    ]
    assert [(e.kind, e.sm) for e in ours] == theirs and theirs
    assert {e.isa for e in ours if e.kind == "ptx"} == {"9.0"}
