"""`envbuilder check IMAGE`: the job-start gate. In order: the image's certificate covers this
host (run/coverage.py's checks, the certificate found as `run` finds it), the node's GPUs through
NVML and the kernel's Xids (check/node.py), then the image's short mode on each GPU against the
certificate's figures (check/image.py). One verdict PASS / WARN / FAIL (findings.py), the
report as a document (`CheckReport.to_dict`, docs/check.md's schema)."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.gpu_access import prepare_target
from envbuilder.check.findings import (
    EXIT_CODES,
    KIND,
    SCHEMA_VERSION,
    CheckThresholds,
    Finding,
    load_check_thresholds,
    time_findings,
    verdict_of,
    verdict_reason,
)
from envbuilder.check.image import GateRun, gate_summary, judge_gate, run_gate, summarise_refusals
from envbuilder.check.node import judge_gpu, judge_xids
from envbuilder.engine import DaemonInfo, Engine
from envbuilder.host import AccessMode, HostReport
from envbuilder.host.health import GpuHealth, XidLog, kernel_xids, read_health, uptime_seconds
from envbuilder.run.coverage import image_ref
from envbuilder.run.launch import FindCertificate, covering_certificate, native_cuda_of, run_host
from envbuilder.runtime import DEFAULT as DEFAULT_RUNTIME
from envbuilder.runtime import get as get_runtime

Say = Callable[[str], None]
IMAGE_TIMEOUT_S = 40.0  # the short mode's container limit: inside Slurm's 60 s with the rest


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckReport:
    image: str
    image_id: str | None
    findings: tuple[Finding, ...]
    certificate: Certificate | None
    host: HostReport | None
    gpu_access: str
    timings: dict[str, float]
    thresholds: CheckThresholds
    started: str
    gate: dict[str, Any] | None = None
    node: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return verdict_of(self.findings)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        cert = self.certificate
        host = self.host
        return {
            "kind": KIND,
            "schema_version": SCHEMA_VERSION,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reason": verdict_reason(self.findings),
            "image": self.image,
            "image_id": self.image_id,
            "started": self.started,
            "node": {
                "hostname": platform.node(),
                "driver": host.driver if host is not None else None,
                "cuda_driver": host.cuda_driver if host is not None else None,
                "gpu_access": self.gpu_access,
                "gpus": self.node,
            },
            "certificate": None
            if cert is None
            else {
                "id": cert.id,
                "verdict": cert.verdict,
                "issued_at": cert.issued_at,
                "host_fingerprint": cert.host.fingerprint,
            },
            "findings": [f.to_dict() for f in self.findings],
            "image_run": self.gate,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "limits": {"target_s": self.thresholds.time_target_s, "hard_s": self.thresholds.time_limit_s},
        }


def node_findings(
    gpus: Sequence[GpuHealth],
    why: str | None,
    report: HostReport,
    t: CheckThresholds,
    *,
    xids: Callable[[], XidLog],
    uptime_s: float | None,
    xid_window_s: float | None,
) -> list[Finding]:
    """The node's findings: each GPU's NVML answers, then the kernel's Xids; with no GPU, one
    skip that says so (the CPU path); with GPUs NVML cannot be asked about, one warning."""
    if why is not None or not gpus:
        reason = why or "NVML lists no GPU"
        if report.gpus:  # the probe saw GPUs (nvidia-smi, /proc) that NVML cannot be asked about
            return [
                Finding(
                    check="node.nvml",
                    status="warn",
                    message=f"{len(report.gpus)} GPU(s) here, but their health cannot be read through "
                    f"NVML ({reason}): the node checks did not run",
                    remedy="install nvidia-ml-py beside envbuilder and check that libnvidia-ml.so.1 "
                    "loads (envbuilder doctor)",
                )
            ]
        return [
            Finding(
                check="node.nvml",
                status="skip",
                message=f"no NVIDIA GPU to check on this node ({reason}; driver {report.driver or 'none'})",
            )
        ]
    out: list[Finding] = []
    for g in gpus:
        out += judge_gpu(g, t)
    out += judge_xids(xids(), gpus, uptime_s=uptime_s, window_s=xid_window_s)
    return out


def gpus_handed_in(access: str, report: HostReport, gpus: Sequence[GpuHealth]) -> int | None:
    """How many GPUs the short mode's container is given: None on the CPU path (access none);
    else every GPU of the node (run_gate selects none: training_container hands in all), as many
    as the probe or NVML lists, whichever lists more (0: neither lists one)."""
    if access == "none":
        return None
    return max(len(report.gpus), len(gpus))


def gpus_to_judge(
    access: str, report: HostReport, gpus: Sequence[GpuHealth]
) -> tuple[int | None, Finding | None]:
    """The number of GPUs the image's run is held to (image.gpus: judge_seen), or None with the
    image.gpus skip that says why not: no GPU listed (how many were handed in is not known), or a
    GPU in MIG mode: a CUDA process enumerates one MIG device only, whatever it is handed (NVIDIA
    MIG user guide, "CUDA Device Enumeration":
    https://docs.nvidia.com/datacenter/tesla/mig-user-guide/mig-device-names.html; torch's
    device_count is 1 on a MIG A100, pytorch/pytorch#102715). CUDA names a MIG device by its
    profile ("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), so its GEMM and copy find no certified figure
    either. (None, None) on the CPU path."""
    handed_in = gpus_handed_in(access, report, gpus)
    if handed_in == 0:
        why = (
            f"GPU access {access}, but neither the probe nor NVML lists a GPU: "
            "how many GPUs the image was given is not known, so not judged"
        )
    elif handed_in and (mig := [g.index for g in gpus if g.in_mig_mode]):
        why = (
            f"GPU {', '.join(map(str, mig))} in MIG mode: a CUDA process sees one MIG device only (NVIDIA's "
            "MIG user guide), so how many GPUs the image saw is not judged; its figures are that MIG device's"
        )
    else:
        return handed_in, None
    return None, Finding(check="image.gpus", status="skip", message=why)


def check_image(
    image: str,
    *,
    find_certificate: FindCertificate,
    gpu_access: str = "auto",
    xid_window_s: float | None = None,
    eng: Engine | None = None,
    probe: Callable[[], HostReport] | None = None,
    access_modes: Callable[[DaemonInfo], Sequence[AccessMode]] | None = None,
    health: Callable[[], tuple[tuple[GpuHealth, ...], str | None]] = read_health,
    xids: Callable[[], XidLog] = kernel_xids,
    thresholds: CheckThresholds | None = None,
    say: Say = lambda _line: None,
    clock: Callable[[], float] = time.monotonic,
) -> CheckReport:
    """Check `image` (local) on this node. Raises UsageError (image not found, unknown mode),
    NoGpuError (an explicit mode this host lacks), DockerUnavailableError, MatrixError (the
    thresholds file); a refused or missing certificate, a sick GPU or a slow one are findings."""
    t0 = clock()
    started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    t = thresholds or load_check_thresholds()
    rt = get_runtime(DEFAULT_RUNTIME, engine=eng)  # the container start goes through the runtime
    eng = rt.engine()
    target = prepare_target(rt, image, gpu_access, probe=probe, access_modes=access_modes)
    info, choice, report = target.image, target.choice, target.host
    timings = {"probe_s": clock() - t0}
    say(f"check: {image_ref(info)} ({info.id[:19]}): GPU access {choice.name} ({choice.reason})")

    t1 = clock()
    host = run_host(report, choice, gpu_access, native_cuda_of(report.driver))
    cert, refusals = covering_certificate(info, host, find_certificate)
    findings: list[Finding] = summarise_refusals(refusals)
    if cert is not None and not refusals:
        shown = ", ".join(sorted({str(g.name) for g in cert.host.gpus})) or "the CPU"
        findings.append(
            Finding(
                check="certificate.coverage",
                status="pass",
                value=cert.id[:12],
                message=f"certificate {cert.id[:12]} ({cert.verdict}, issued {cert.issued_at or '?'}, on "
                f"{shown}, driver {cert.host.driver or '-'}) covers this node",
            )
        )
    timings["certificate_s"] = clock() - t1
    say(f"check: certificate: {'covers this node' if not refusals else 'REFUSED'}")

    t2 = clock()
    gpus, why = health()
    findings += node_findings(
        gpus, why, report, t, xids=xids, uptime_s=uptime_seconds(), xid_window_s=xid_window_s
    )
    timings["node_s"] = clock() - t2
    say(f"check: node: {len(gpus)} GPU(s) read through NVML" if why is None else f"check: node: {why}")

    gate: GateRun | None = None
    if refusals:
        findings.append(
            Finding(
                check="image.run",
                status="skip",
                message="the in-image steps did not run: no certificate covers this node (FAIL already)",
            )
        )
    else:
        t3 = clock()
        say("check: running the short mode in the image")
        gate = run_gate(eng, info, choice, timeout_s=IMAGE_TIMEOUT_S, say=say, runtime=rt)
        handed_in, skipped = gpus_to_judge(choice.name, report, gpus)
        if skipped is not None:
            findings.append(skipped)
        findings += judge_gate(gate, cert, t, handed_in=handed_in)
        timings["image_s"] = clock() - t3
    timings["total_s"] = clock() - t0
    findings += time_findings(timings["total_s"], t)
    return CheckReport(
        image=image,
        image_id=info.id,
        findings=tuple(findings),
        certificate=cert,
        host=report,
        gpu_access=choice.name,
        timings=timings,
        thresholds=t,
        started=started,
        gate=gate_summary(gate),
        node=[g.to_dict() for g in gpus],
    )
