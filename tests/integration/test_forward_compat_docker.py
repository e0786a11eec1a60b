"""CUDA forward compatibility in a real image (envbuilder/image/entrypoint.sh): with the variable a
forward-compatible stack's Dockerfile sets (ENVBUILDER_COMPAT_DRIVER), the cuda-compat folder goes
first in LD_LIBRARY_PATH while the host's driver is older than the package's, and not on a newer
driver. The GPU-less machine stands in both drivers through the file the entrypoint reads and the
package through a folder mounted at /usr/local/cuda/compat."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

SHOW = "import os; print(os.environ.get('LD_LIBRARY_PATH', ''))"


@pytest.mark.parametrize(
    ("driver", "compat_first"), [("535.104.05", True), ("580.00", True), ("590.44.01", False)]
)
def test_compat_libraries_go_first_only_on_an_older_driver(
    cpu_image: str, tmp_path: Path, driver: str, compat_first: bool
) -> None:
    compat = tmp_path / "compat"
    compat.mkdir()
    (compat / "libcuda.so.1").write_bytes(b"")
    version = tmp_path / "version"
    version.write_text(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Thu Oct 30 2025\n")
    tmp_path.chmod(0o755)
    res = subprocess.run(
        [
            "docker", "run", "--rm", "--network", "none",
            "-v", f"{version}:/fake/version:ro", "-e", "ENVBUILDER_DRIVER_VERSION_FILE=/fake/version",
            "-v", f"{compat}:/usr/local/cuda/compat:ro",
            "-e", "ENVBUILDER_MIN_DRIVER=535", "-e", "ENVBUILDER_COMPAT_DRIVER=580.65.06",
            cpu_image, "python3", "-c", SHOW,
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    first = res.stdout.strip().split(":")[0]
    assert (first == "/usr/local/cuda/compat") == compat_first, res.stdout
