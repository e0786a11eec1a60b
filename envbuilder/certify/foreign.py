"""Certificates for harness runs that envbuilder did not start on this host: a fleet's job on a
Slurm node (Docker, Apptainer, enroot) or a Kubernetes pod. They are judged as `certify` judges a
local run (certify/verdict.py host_verdict: the result's shape, harness digest and nonce, GPU
claims on the CPU path, the verdict re-derived from its step records; the kernel inventory
against the GPUs and driver the node's own host record names); what this host cannot see, the
GPUs of a remote node, is recorded as not observed, never assumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from envbuilder.certify.certificate import Certificate, build_certificate, host_fingerprint
from envbuilder.certify.kernels import judge_kernels
from envbuilder.certify.observe import Observation, not_observed
from envbuilder.certify.record import items, section, text
from envbuilder.certify.verdict import RunFacts, host_verdict
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
    facts: RunFacts,
    where: str,
    thresholds: Mapping[str, Any],
    run: Mapping[str, Any],
) -> Certificate:
    """The sealed certificate of a harness run a scheduler's runtime started: `image` as the
    registry (or daemon) describes it, `result` the harness's last JSON line, `facts` what this
    host knows of the run (the nonce and payload digest it handed out, the access it asked for,
    the exit status the scheduler reported); `where` names the node for the not-observed record.
    Raises CertificateRefusedError (a body that is not strict JSON)."""
    meta = read_metadata(image)
    observation = facts.observation or not_observed(where)
    verdict, reason = host_verdict(result, facts)
    host = host_from_result(result, facts.access)
    # The kernel inventory against the node's GPUs and driver as its own host record states them:
    # every GPU, one without a compute capability too (judge_inventory says it is not judged).
    gpus = [(g["name"] or g["uuid"] or f"GPU {i}", g["cc"] or "") for i, g in enumerate(host["gpus"])]
    judged = judge_kernels(
        result, gpus=gpus, driver=host["driver"], access=facts.access, stack=meta.stack_record
    )
    if judged.failures and verdict != "failed":
        verdict, reason = "failed", "kernel inventory: " + "; ".join(judged.failures[:3])
    warnings = list(judged.warnings)
    if meta.certify is not None and meta.certify.smoke is not None:
        # The job ran the harness alone (certify/smoke.py runs in `certify` on a Docker host).
        warnings.append(
            "the image's own smoke command (certify.smoke) did not run: this job ran the harness "
            "alone; `envbuilder certify IMAGE` on a Docker host runs it"
        )
    return build_certificate(
        image={"id": image.id, "ref": image_ref, "stack": meta.stack_record, "lock_hash": meta.lock_hash},
        host=host,
        run={
            **run,
            "exit_code": facts.exit_code,
            "harness_source": "host",
            "harness_sha256": facts.harness_sha256,
            "host_observation": observation.to_json(),
            "warnings": warnings,
        },
        harness=result,
        thresholds=thresholds,
        verdict=verdict,
        verdict_reason=reason,
    )


def node_observation(cert: Certificate) -> Observation | None:
    """What the node's own envbuilder saw of its GPUs during a certification it ran itself
    (the certificate's run.host_observation), recorded as the node's, not this host's."""
    return Observation.from_json(cert.run.get("host_observation"), seen_by="the node's")


def certificate_refusal(cert: Certificate, facts: RunFacts) -> str | None:
    """Why this host does not accept a certificate that a node's own `envbuilder certify` sealed
    (a Slurm job of the docker runtime), or None: the verdict is re-derived here from its result
    by host_verdict with this host's facts (its nonce, its payload digest, the CPU path for a
    class without GPUs); a certificate that claims more than that is refused. A failed one claims
    nothing and stands (the node may have judged more strictly: kernels, package drift)."""
    if cert.verdict == "failed":
        return None
    smoke = cert.run.get("project_smoke")  # the node's host ran it: its record counts as a step
    if isinstance(smoke, Mapping):
        facts = replace(facts, project_smoke=smoke)
    verdict, reason = host_verdict(cert.harness, facts)
    if verdict != cert.verdict:
        return f"it says {cert.verdict}, but its own result gives {verdict} here ({reason})"
    return None
