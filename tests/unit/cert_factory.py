"""Sealed certificates for unit tests of run, report and compare (built with the real sealing
code, so their hashes verify), and the GPUs they name."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.engine import ImageInfo
from envbuilder.host import GpuInfo
from envbuilder.run.coverage import RunHost, check_run

IMAGE_ID = "sha256:" + "ab" * 32
OTHER_ID = "sha256:" + "cd" * 32
H200 = GpuInfo(index=0, name="NVIDIA H200", uuid="GPU-1", cc="9.0", brand="nvidia")
RTX = GpuInfo(index=0, name="NVIDIA GeForce RTX 3090", uuid="GPU-2", cc="8.6", brand="geforce")
K80 = GpuInfo(index=0, name="Tesla K80", uuid="GPU-3", cc="3.7", brand="tesla")
REQUIRE_130 = "cuda>=13.0 brand=tesla,driver>=535,driver<536 brand=nvidia,driver>=535,driver<536"


def stack(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": "torch-2.11.0-cu130-py3.12-bundled",
        "framework": {"name": "torch", "version": "2.11.0", "variant": "cu130"},
        "cuda": "13.0",
        "min_driver": "580.65.06",
        "archs": {"sass": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], "ptx": ["12.0"]},
    }
    doc.update(over)
    return doc


def cert_doc(
    verdict: str = "certified",
    gpus: tuple[GpuInfo, ...] = (H200,),
    issued_at: str | None = None,
    image_id: str = IMAGE_ID,
    **stack_over: Any,
) -> dict[str, Any]:
    """A sealed certificate document for `image_id` issued on a host with `gpus`; stack fields
    overridable (a dict, so that tests can tamper with it)."""
    c = build_certificate(
        image={"id": image_id, "ref": "team/train:1", "stack": stack(**stack_over), "lock_hash": None},
        host={
            "fingerprint": "sha256:00",
            "driver": "580.159.04",
            "gpus": [{"name": g.name, "uuid": g.uuid, "cc": g.cc} for g in gpus],
            "gpu_access": "devices",
        },
        run={},
        harness={"steps": [], "verdict": verdict},
        thresholds={},
        verdict=verdict,
        verdict_reason="3 checks passed" if verdict != "failed" else "failed steps: cuda_smoke",
        issued_at=issued_at,
    )
    return c.to_dict()


def cert(*args: Any, **kw: Any) -> Certificate:
    """cert_doc as a Certificate."""
    return Certificate(cert_doc(*args, **kw))


# run's coverage check: the image and the host it is judged on
def image(env: tuple[str, ...] = (), image_id: str = IMAGE_ID) -> ImageInfo:
    return ImageInfo(id=image_id, tags=("team/train:1",), repo_digests=(), env=env)


def host(gpus: tuple[GpuInfo, ...] = (H200,), access: str = "devices", **over: Any) -> RunHost:
    base = RunHost(driver="580.159.04", cuda_driver="13.0", gpus=gpus, access=access, requested="auto")
    return replace(base, **over)


def reasons(c: Certificate | None, i: ImageInfo, h: RunHost) -> list[str]:
    return [r.reason for r in check_run(c, i, h)]
