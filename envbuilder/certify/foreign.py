"""Certificates for harness runs that envbuilder did not start itself: a Kubernetes pod, an
Apptainer or enroot job on an HPC node. There no envbuilder probed the host, so the harness's own
host record (NVML inside the container) stands for it; the verdict is decided as `certify`
decides it (certify.decide), and the certificate is sealed the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envbuilder.certify.certificate import Certificate, build_certificate, host_fingerprint
from envbuilder.certify.certify import decide
from envbuilder.certify.record import items, section, text
from envbuilder.engine import ImageInfo
from envbuilder.image.metadata import read_metadata


def host_from_result(result: Mapping[str, Any], access: str) -> dict[str, Any]:
    """The certificate's host section from the harness's host record: driver, CUDA driver version
    and each GPU as NVML inside the container saw them; `access` names how the GPUs got in."""
    host = section(result.get("host"))
    gpus = [
        {"name": text(g.get("name")), "uuid": text(g.get("uuid")), "cc": text(g.get("compute_capability"))}
        for g in items(host.get("gpus"))
    ]
    driver = text(host.get("driver_version"))
    return {
        "fingerprint": host_fingerprint(driver, gpus),
        "driver": driver,
        "cuda_driver": text(host.get("cuda_driver_version")),
        "gpus": gpus,
        "gpu_access": access,
        "source": "the harness's host record (NVML inside the container)",
    }


def seal_foreign_run(
    *,
    image: ImageInfo,
    image_ref: str,
    result: Mapping[str, Any],
    exit_code: int,
    access: str,
    thresholds: Mapping[str, Any],
    run: Mapping[str, Any],
) -> Certificate:
    """The sealed certificate of a harness run started by a scheduler's runtime: `image` as the
    registry (or daemon) describes it, `result` the harness's last JSON line, `access` how the
    GPUs got in ("none" for the CPU path). Raises CertificateRefusedError (a body that is not
    strict JSON)."""
    meta = read_metadata(image)
    verdict, reason = decide(result, exit_code, access, meta.stack)
    return build_certificate(
        image={"id": image.id, "ref": image_ref, "stack": meta.stack_record, "lock_hash": meta.lock_hash},
        host=host_from_result(result, access),
        run={**run, "exit_code": exit_code},
        harness=result,
        thresholds=thresholds,
        verdict=verdict,
        verdict_reason=reason,
    )
