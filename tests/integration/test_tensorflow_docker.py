"""The TensorFlow (Keras) certification's CPU path for real: an image with the real
`tensorflow-cpu` wheel (2.21.0, Keras 3; built for this test from the local Debian base, offline
from a host-side wheelhouse), certified by the real CLI with `--framework tensorflow`: a batch
forward + backward in float32 and under the mixed_bfloat16 policy, the Keras ResNet trained in
FP32 and XLA-compiled (`jit_compile=True`) above chance, and the tf.data pipeline compared with
resident tensors. Then `certs show` and
`report` present it as they do torch and JAX certificates.

The wheelhouse (about 350 MB) is downloaded once per machine into ENVBUILDER_TEST_STATE; the image
build installs from it (about 1.3 GB installed) and is removed at the end of the session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import STATE, envbuilder_cli

from envbuilder.certify.certificate import verify_certificate
from envbuilder.engine import DockerEngine, find_buildkit_cli

pytestmark = pytest.mark.docker

TF = "tensorflow-cpu==2.21.0"
WHEELS = STATE / "wheelhouse-tensorflow"


def tf_wheelhouse() -> Path:
    """tensorflow-cpu and its dependencies as wheels for the base's Python (3.11, this one's),
    downloaded by pip once (into a temporary folder, then renamed: never half-written)."""
    if list(WHEELS.glob("tensorflow_cpu-2.21.0-*.whl")):
        return WHEELS
    tmp = WHEELS.with_name(WHEELS.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "download", TF, "--only-binary=:all:", "-d", str(tmp), "-q"],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    try:
        tmp.rename(WHEELS)
    except OSError:  # another session got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return WHEELS


DOCKERFILE = f"""\
FROM {{base}}
# The wheels are bind-mounted for this RUN only: they never land in a layer.
RUN --mount=type=bind,source=wheels,target=/wheels \\
    python3 -m venv /opt/tf \\
 && /opt/tf/bin/pip install --no-index --find-links /wheels --no-compile --no-cache-dir -q {TF} \\
 && rm -rf /opt/tf/lib/python3.11/site-packages/tensorflow/include
ENV PATH=/opt/tf/bin:/usr/local/bin:/usr/bin:/bin
"""


@pytest.fixture(scope="module")
def tf_image(
    engine: DockerEngine,
    base_image: str,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> str:
    wheels = tf_wheelhouse()
    ctx = tmp_path_factory.mktemp("tf-image")
    shutil.copytree(wheels, ctx / "wheels", copy_function=os.link if _same_fs(wheels, ctx) else shutil.copy2)
    (ctx / "Dockerfile").write_text(DOCKERFILE.format(base=base_image))
    tag = f"envbuilder-it/tensorflow:{run_id}"
    cli = find_buildkit_cli()
    env = {**os.environ, "DOCKER_BUILDKIT": "1"}
    res = subprocess.run(
        [*cli.build_argv(), "-q", "-t", tag, str(ctx)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    shutil.rmtree(ctx, ignore_errors=True)
    assert res.returncode == 0, res.stderr[-3000:]
    cleanup_refs.append(tag)
    return tag


def _same_fs(a: Path, b: Path) -> bool:
    return a.stat().st_dev == b.stat().st_dev


def test_tensorflow_cpu_certification_for_real(
    tf_image: str, engine: DockerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "store"))
    out = tmp_path / "cert.json"
    res = envbuilder_cli(
        "certify",
        tf_image,
        "--gpu-access",
        "none",
        "--framework",
        "tensorflow",
        "--json",
        "--out",
        str(out),
        "--budget-seconds",
        "600",  # XLA compiles on a shared 2-core machine: no step may be skipped
    )
    assert res.returncode == 0, res.stderr[-4000:]
    cert = json.loads(res.stdout)
    assert verify_certificate(cert) == []
    assert cert["verdict"] == "certified-cpu-only", cert["reason"]
    harness = cert["harness"]
    assert harness["options"]["framework"] == "tensorflow" and harness["mode"] == "cpu"
    steps = {s["name"]: s for s in harness["steps"]}
    for name in (
        "cpu_check",
        "dataset",
        "train_cpu_rn18w16_fp32_bs32",
        "tuned_cpu_rn18w16_xla",
        "input_pipeline",
    ):
        assert steps[name]["status"] == "pass", (name, steps.get(name))
    assert steps["cuda_smoke"]["status"] == "skip"
    assert "tensorflow_smoke" not in steps and "jax_smoke" not in steps
    check = steps["cpu_check"]["metrics"]
    assert check["tensorflow"] == "2.21.0" and check["keras"].startswith("3.")
    assert check["model"]["parameters"] == 11_179_077  # torchvision's ResNet-18 with 5 classes
    assert set(check["loss_by_policy"]) == {"float32", "mixed_bfloat16"}
    assert check["mixed_compute_dtype"] == "bfloat16"
    for name, policy, xla in (
        ("train_cpu_rn18w16_fp32_bs32", "float32", False),
        ("tuned_cpu_rn18w16_xla", "float32", True),
    ):
        m = steps[name]["metrics"]
        assert m["config"]["dtype_policy"] == policy and m["config"]["jit_compile"] is xla
        assert m["val_accuracy"] >= m["accuracy_required"] > 0.2
        assert m["loss_last"] < m["loss_first"] and m["images_per_s"] > 0
        assert m["model"]["source"] == "built-in (keras)"
    pipe = steps["input_pipeline"]["metrics"]
    assert pipe["loader_only_img_s"] > 0 and pipe["resident_img_s"] > 0 and pipe["bottleneck"]

    # certs show and the report present it as the other frameworks' certificates
    shown = envbuilder_cli("certs", "show", cert["content_hash"].removeprefix("sha256:")[:12])
    assert shown.returncode == 0, shown.stderr
    assert "tensorflow" in shown.stdout and "tuned_cpu_rn18w16_xla" in shown.stdout
