"""`envbuilder export --sif` for real: the test base image saved by the real daemon and built into a
SIF by Debian sid's Apptainer, which runs in a Docker image (scripts/apptainer.sh: this bookworm
machine's glibc is too old for it) with seccomp and AppArmor unconfined. The SIF is read back by
`apptainer sif list` (its partitions: the squashfs root filesystem), its sidecar names the image,
`apptainer exec --containall` runs a command in its root filesystem, and `run --runtime apptainer`
applies the image's certificate checks to it. How exec runs inside a Docker container here (and
what failed before): docs/fleet.md, "Apptainer and enroot".

Cost: one `docker save` and one `apptainer build` of the base image, then one unsquashfs of it:
the module took 100 s before the exec step and 113 s with it on the loaded 2-core development
machine (2026-12-01)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import envbuilder_cli, unavailable

from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker

APPTAINER_IMAGE = os.environ.get("ENVBUILDER_TEST_APPTAINER_IMAGE", "envbuilder-test/apptainer:sid")


@pytest.fixture(scope="module")
def apptainer_image(engine: DockerEngine) -> str:
    if engine.inspect_image(APPTAINER_IMAGE) is None:
        unavailable(f"no {APPTAINER_IMAGE} image (scripts/apptainer.sh builds it)")
    return APPTAINER_IMAGE


def test_a_sif_is_exported_for_real_and_run_checks_its_certificate(
    apptainer_image: str, base_image: str, tmp_path: Path
) -> None:
    out = tmp_path / "sif" / "base.sif"
    out.parent.mkdir()  # an output's folder is never created (docs/files.md)
    data = {"ENVBUILDER_DATA_DIR": str(tmp_path / "data")}
    res = envbuilder_cli(
        "export", base_image, "--sif", str(out), "--apptainer-image", apptainer_image, "--json", env=data
    )
    assert res.returncode == 0, res.stderr[-3000:]
    done = json.loads(res.stdout)
    assert done["path"] == str(out) and done["format"] == "sif" and done["size_bytes"] == out.stat().st_size
    assert "export: docker save" in res.stderr and "seccomp=unconfined" in res.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == ["base.sif", "base.sif.envbuilder.json"]
    head = out.read_bytes()[:64]
    assert head.startswith(b"#!/usr/bin/env run-singularity") and b"SIF_MAGIC" in head
    listing = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", f"{out.parent}:/sif:ro", apptainer_image,
         "apptainer", "sif", "list", "/sif/base.sif"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    assert "Squashfs" in listing.stdout and "FS" in listing.stdout  # the root filesystem partition
    # exec, for real: Docker's masked /proc paths unconfined (systempaths) so Apptainer can mount a
    # procfs, and the SIF's squashfs partition unpacked as root first (Apptainer's own extraction
    # runs in a user namespace, where mknod and chown are refused: docs/fleet.md).
    script = (
        "set -e; part=$(apptainer sif list /sif/base.sif | awk '/Squashfs/{print $1; exit}'); "
        'apptainer sif dump "$part" /sif/base.sif > /tmp/root.sqfs; '
        "unsquashfs -q -no-progress -d /tmp/root /tmp/root.sqfs >/dev/null 2>&1 || true; "
        "apptainer exec --containall /tmp/root sh -c 'cat /etc/debian_version; id -u'"
    )
    exec_res = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--security-opt", "seccomp=unconfined",
         "--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined",
         "-v", f"{out.parent}:/sif:ro", apptainer_image, "sh", "-c", script],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert exec_res.returncode == 0, exec_res.stderr[-2000:]
    in_docker = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", base_image, "cat", "/etc/debian_version"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    version, uid = exec_res.stdout.split()
    assert version == in_docker.stdout.strip() and uid == "0"  # the image's own filesystem, in the SIF
    side = json.loads((out.parent / "base.sif.envbuilder.json").read_text())
    assert side["exported_from"] == base_image and side["sha256"] == done["sha256"]
    # No certificate for the base image in this store: `run --runtime apptainer` refuses before
    # starting. When an earlier test pushed the same image (the attestation tests do, in CI's order),
    # it has a registry digest, so run first fetches its attestations, which this store's empty
    # trust policy refuses: the same refusal, reached one step later.
    run = envbuilder_cli(
        "run", "--runtime", "apptainer", "--runtime-path", "/bin/true", str(out), "--", "true", env=data
    )
    assert run.returncode == 12, run.stderr
    assert "no certificate for image" in run.stderr or "no local certificate;" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_a_failed_export_leaves_nothing(apptainer_image: str, tmp_path: Path) -> None:
    out = tmp_path / "missing.sif"
    res = envbuilder_cli(
        "export", "envbuilder-test/no-such-image:1", "--sif", str(out), "--apptainer-image", apptainer_image
    )
    assert res.returncode == 2 and "not found locally" in res.stderr
    assert list(tmp_path.iterdir()) == []
