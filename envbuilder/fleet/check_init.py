"""`envbuilder check` at pod start in Kubernetes: an init container that runs the image's own
harness in check's short mode (harness/gate.py) with what the certificates recorded (the GPU
models, each model's GEMM and copy figures, matrices/thresholds.yaml's check bands), so a pod on a
GPU that is not what was certified, or slower than it, does not start. `fleet constraints` prints
it beside the node affinity (schedulers/kubernetes.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from envbuilder.certify.certificate import Certificate

CHECK_INIT_NAME = "envbuilder-check"


def check_expectations(certs: Sequence[Certificate]) -> dict[str, Any] | None:
    """What the in-image short mode judges itself against (its --expect): the GPU models the
    GPU certifications ran on, their recorded figures (check/image.py certified_figures), the
    check's bands and `gpus`, the count the init container asks for, which the short mode must
    see and step on each of (harness/gate.py judge_gpus): the fewest GPUs any certification ran
    on, so the pod can be placed on every certified class (asking for the most, a pod of a mixed
    fleet could not be scheduled on its smaller classes). None when no certificate is a GPU
    certification."""
    from envbuilder.check.findings import load_check_thresholds
    from envbuilder.check.image import certified_figures

    gpu = [c for c in certs if c.verdict == "certified"]
    if not gpu:
        return None
    t = load_check_thresholds()
    figures: dict[str, dict[str, float]] = {}
    for cert in gpu:
        for model, got in certified_figures(cert).items():
            figures.setdefault(model, got)
    return {
        "certificate": gpu[0].id[:12],
        "models": sorted({str(g.name) for c in gpu for g in c.host.gpus if g.name}),
        "certified": figures,
        "gpus": max(1, min(len(c.host.gpus) for c in gpu)),
        "bands": {
            "gemm": {"warn_below": t.gemm.warn_below, "fail_below": t.gemm.fail_below},
            "copy": {"warn_below": t.copy.warn_below, "fail_below": t.copy.fail_below},
        },
    }


def k8s_check_init_container(
    certs: Sequence[Certificate], *, image: str, harness_dir: str
) -> dict[str, Any] | None:
    """The init container of a pod that runs `image` (pinned by digest: the certified image):
    the image's own harness (at `harness_dir`, its io.envbuilder.harness label) in its short mode
    with check_expectations; it exits 2 on FAIL, so the pod's containers never start. It asks
    for the GPUs of one certification (the pod's own containers get the same devices afterwards:
    the kubelet hands an init container's devices on). None without a GPU certification."""
    import json

    expect = check_expectations(certs)
    if expect is None:
        return None
    return {
        "name": CHECK_INIT_NAME,
        "image": image,
        "command": [
            "python3",
            f"{harness_dir}/gate_run.py",
            "--watchdog-seconds",
            "50",
            "--expect",
            json.dumps(expect, sort_keys=True, separators=(",", ":")),
        ],
        "env": [
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
        ],
        "resources": {"limits": {"nvidia.com/gpu": expect["gpus"]}},
    }


def check_pod(init: dict[str, Any], affinity: dict[str, Any] | None) -> dict[str, Any]:
    """A Pod around the init container (and the same image as its job), for offline validation
    and as the example docs/check.md shows."""
    spec: dict[str, Any] = {
        "initContainers": [init],
        "containers": [
            {
                "name": "job",
                "image": init["image"],
                "resources": {"limits": dict(init["resources"]["limits"])},
            }
        ],
        "restartPolicy": "Never",
    }
    if affinity:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "envbuilder-checked-job"}, "spec": spec}
