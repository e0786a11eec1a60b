"""A fleet certification on Kubernetes: one Job per node class (the harness as its command, the
class pinned by node affinity on its GFD labels, the GPUs from the `nvidia.com/gpu` limit or a DRA
ResourceClaimTemplate), the thresholds in a ConfigMap, every manifest validated offline; with
--apply they are submitted and each Job's result is read from its pod's log (the harness's last
stdout line is its result), judged as certify judges and sealed into a certificate here
(certify.foreign). The harness that runs is this host's payload, shipped in a ConfigMap and
mounted read-only, never the image's own copy."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from envbuilder.atomic import make_output_dir, write_text_atomic
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.harness_plan import HARNESS_ENV, IO_DIR, HarnessPlan, parse_harness_output
from envbuilder.certify.scheduler import FLEET_RUN_ENV, NODE_CLASS_ENV
from envbuilder.certify.store import CertStore
from envbuilder.errors import StoreError
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.image import FleetImage
from envbuilder.fleet.jobs import (
    Collected,
    FleetRun,
    JobRecord,
    follow,
    new_run_id,
    open_jobs,
    save_run,
    seal_job,
)
from envbuilder.fleet.k8s_api import Cluster
from envbuilder.fleet.kubernetes import (
    DRA_DEVICE_CLASS,
    GPU_RESOURCE,
    MANAGED_BY,
    class_affinity,
    dra_selectors,
    dump_manifests,
    validate_manifests,
)

Say = Callable[[str], None]
LABEL_CLASS = "envbuilder.io/node-class"
LABEL_RUN = "envbuilder.io/fleet-run"
SHM_LIMIT = "8Gi"
CONFIG_MAP_MAX = 1024 * 1024  # what the API server stores of one ConfigMap (etcd's object limit)


def _payload(root: Path) -> list[str]:
    """The payload's files, relative and sorted, byte caches left out (what tree_digest covers)."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )


def harness_config_map(root: Path, meta: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """This host's payload as a ConfigMap (a key per file: its path with '/' as '_', as keys allow
    no '/') and the volume that lays it out again, each key at its path. Raises StoreError (a key
    clash, or over the 1 MiB a ConfigMap holds)."""
    data: dict[str, str] = {}
    items = []
    for rel in _payload(root):
        key = rel.replace("/", "_")
        if key in data:
            raise StoreError(f"two harness files map to the ConfigMap key {key!r}")
        data[key] = (root / rel).read_text(encoding="utf-8")
        items.append({"key": key, "path": rel})
    if sum(len(k) + len(v.encode()) for k, v in data.items()) > CONFIG_MAP_MAX:
        raise StoreError(f"the harness in {root} is over the 1 MiB a ConfigMap holds")
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(meta), "data": data}
    return doc, {"name": "harness", "configMap": {"name": meta["name"], "items": items}}


def job_name(node_class: str, run_id: str) -> str:
    """envbuilder-certify-CLASS-XXXXXX, at most 63 characters (a DNS label)."""
    suffix = run_id.rsplit("-", 1)[-1]
    return f"envbuilder-certify-{node_class[: 63 - 27]}-{suffix}".lower()


def certify_manifests(
    image: FleetImage,
    cls: NodeClass,
    plan: HarnessPlan,
    *,
    run_id: str,
    namespace: str,
    dra: bool,
    gpu: bool,
    deadline_s: int = 3600,
) -> list[dict[str, Any]]:
    """The ConfigMaps (thresholds; this host's harness), the DRA ResourceClaimTemplate (with dra)
    and the Job that certify `image` on `cls` with `plan` (its command, with its nonce). Raises
    StoreError (see harness_config_map)."""
    name = job_name(cls.name, run_id)
    labels = {"app.kubernetes.io/managed-by": MANAGED_BY, LABEL_CLASS: cls.name, LABEL_RUN: run_id}
    meta = {"name": name, "namespace": namespace, "labels": labels}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**meta, "name": f"{name}-thresholds"},
        "data": {"thresholds.json": json.dumps(plan.thresholds, sort_keys=True)},
    }
    harness_map, harness_volume = harness_config_map(
        Path(plan.host_harness), {**meta, "name": f"{name}-harness"}
    )
    env = [
        *({"name": k, "value": v} for k, v in sorted(HARNESS_ENV.items())),
        {"name": NODE_CLASS_ENV, "value": cls.name},
        {"name": FLEET_RUN_ENV, "value": run_id},
        {"name": "ENVBUILDER_K8S_JOB", "value": name},
        {"name": "ENVBUILDER_K8S_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "ENVBUILDER_K8S_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ENVBUILDER_K8S_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
    ]
    container: dict[str, Any] = {
        "name": "harness",
        "image": image.pull_ref,
        "command": list(plan.command),
        "env": env,
        "volumeMounts": [
            {"name": "io", "mountPath": IO_DIR},
            {
                "name": "thresholds",
                "mountPath": f"{IO_DIR}/thresholds.json",
                "subPath": "thresholds.json",
                "readOnly": True,
            },
            {"name": "harness", "mountPath": plan.harness_dir, "readOnly": True},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }
    docs: list[dict[str, Any]] = [config_map, harness_map]
    pod: dict[str, Any] = {"restartPolicy": "Never"}
    if gpu and dra:
        claim = f"{name}-gpu"
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {**meta, "name": claim},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpu",
                                    "exactly": {
                                        "deviceClassName": DRA_DEVICE_CLASS,
                                        "allocationMode": "ExactCount",
                                        "count": max(1, cls.gpus_per_node),
                                        "selectors": dra_selectors(cls.nvml_names, cls.driver),
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        )
        pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    elif gpu:
        container["resources"] = {"limits": {GPU_RESOURCE: max(1, cls.gpus_per_node)}}
    pod.update(
        {
            "affinity": class_affinity(cls),
            "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [container],
            "volumes": [
                {"name": "io", "emptyDir": {}},
                {"name": "thresholds", "configMap": {"name": f"{name}-thresholds"}},
                harness_volume,
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_LIMIT}},
            ],
        }
    )
    docs.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": deadline_s,
                "ttlSecondsAfterFinished": 7 * 86400,
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        }
    )
    return docs


def job_access(*, gpu: bool, dra: bool, cls: NodeClass) -> str:
    """How a class's pod gets its GPUs: a DRA claim, the device plugin's limit, or "none" (the
    CPU path: --gpu-access none, or a class without GPUs)."""
    if not gpu or not cls.gpus_per_node:
        return "none"
    return f"kubernetes DRA {DRA_DEVICE_CLASS}" if dra else f"kubernetes {GPU_RESOURCE}"


def plan_k8s_run(
    image: FleetImage,
    classes: Sequence[NodeClass],
    plan: HarnessPlan,
    *,
    out_dir: Path,
    namespace: str,
    dra: bool,
    gpu: bool,
    quick: bool,
    run_id: str | None = None,
) -> FleetRun:
    """Render, validate and write the manifests of every class (out_dir/CLASS.yaml), each job with
    a nonce of its own (plan.for_job); the run as a record whose jobs are the Jobs to submit.
    Raises UsageError (a manifest Kubernetes would refuse), StoreError."""
    run_id = run_id or new_run_id()
    jobs = []
    try:
        make_output_dir(out_dir)  # its parent must exist: no folder is made for it (docs/files.md)
        for cls in classes:
            access = job_access(gpu=gpu, dra=dra, cls=cls)
            jplan = plan.for_job(cpu=access == "none")
            has_gpu = access != "none"
            docs = certify_manifests(
                image, cls, jplan, run_id=run_id, namespace=namespace, dra=dra, gpu=has_gpu
            )
            validate_manifests(docs)
            path = out_dir / f"{cls.name}.yaml"
            write_text_atomic(path, dump_manifests(docs))
            gpus = (
                {"dra": DRA_DEVICE_CLASS} if has_gpu and dra else {"limit": GPU_RESOURCE} if has_gpu else {}
            )
            jobs.append(
                JobRecord(
                    node_class=cls.name,
                    job_dir=str(out_dir),
                    script=str(path),
                    request={"gpus": gpus, "count": cls.gpus_per_node, "labels": dict(cls.labels)},
                    command=jplan.command,
                    job_id=job_name(cls.name, run_id),
                    nonce=jplan.nonce,
                    access=access,
                )
            )
    except OSError as exc:
        raise StoreError(f"cannot write the manifests under {out_dir}: {exc}") from exc
    return FleetRun.begin(
        run_id=run_id,
        scheduler="kubernetes",
        image=image,
        plan=plan,
        options={
            "runtime": "kubernetes",
            "gpu_access": "kubernetes" if gpu else "none",
            "quick": quick,
            "dra": dra,
            "namespace": namespace,
        },
        jobs=jobs,
    )


def apply_run(run: FleetRun, cluster: Cluster, say: Say = lambda _l: None) -> FleetRun:
    """Submit every manifest of the run. Raises SchedulerError, StoreError."""
    ns = str(run.options.get("namespace") or "default")
    import yaml

    for job in run.jobs:
        docs = [d for d in yaml.safe_load_all(Path(job.script).read_text(encoding="utf-8")) if d]
        created = cluster.apply(docs, ns)
        say(f"fleet: {job.node_class}: created {', '.join(created)}")
        run = run.with_job(replace(job, state="SUBMITTED"))
    return save_run(run)


def _job_phase(doc: Any) -> str:
    """SUCCEEDED / FAILED from a Job's conditions (Complete / Failed), else ACTIVE or PENDING."""
    status = doc.get("status") if isinstance(doc, dict) else None
    status = status if isinstance(status, dict) else {}
    for cond in status.get("conditions") or ():
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "SUCCEEDED"
        if cond.get("status") == "True" and cond.get("type") in ("Failed", "FailureTarget"):
            return "FAILED"
    return "ACTIVE" if status.get("active") else "PENDING"


def collect_k8s_job(run: FleetRun, job: JobRecord, cluster: Cluster, phase: str) -> Collected:
    """The ended Job's result from its pod's log, judged, sealed and checked (jobs.seal_job)."""
    ns = str(run.options.get("namespace") or "default")
    node = None
    pods = cluster.get_json(["pods", "-l", f"job-name={job.job_id}"], ns)
    items = pods.get("items") if isinstance(pods, dict) else None
    exit_code = 0 if phase == "SUCCEEDED" else 1
    if isinstance(items, list) and items:
        spec, status = items[-1].get("spec") or {}, items[-1].get("status") or {}
        node = spec.get("nodeName")
        for cs in status.get("containerStatuses") or ():
            term = (cs.get("state") or {}).get("terminated") or {}
            if isinstance(term.get("exitCode"), int):
                exit_code = term["exitCode"]
    job = replace(job, state=phase, node=node, exit_code=str(exit_code))
    result = parse_harness_output(None, cluster.job_logs(str(job.job_id), ns))
    if result is None:
        return Collected(
            job=replace(
                job,
                state="NO-RESULT",
                problem=f"Job {job.job_id} ended {phase} and its log holds no harness result",
            )
        )
    scheduler = {
        "kind": "kubernetes",
        "job": job.job_id,
        "namespace": ns,
        "node": node,
        "class": job.node_class,
        "fleet_run": run.run_id,
        "job_id": job.job_id,
    }
    return seal_job(run, job, result, exit_code=exit_code, scheduler=scheduler)


def advance_k8s(
    run: FleetRun, cluster: Cluster, *, store: CertStore, say: Say = lambda _l: None
) -> tuple[FleetRun, list[Certificate]]:
    """One look at the run's open Jobs: new phases are said and recorded; an ended Job's result
    is collected, judged, sealed and stored. Raises SchedulerError, StoreError."""
    ns = str(run.options.get("namespace") or "default")
    collected: list[Certificate] = []
    for job in open_jobs(run):
        phase = _job_phase(cluster.get_json(["job", str(job.job_id)], ns))
        if phase in ("SUCCEEDED", "FAILED"):
            got = collect_k8s_job(run, job, cluster, phase)
            if got.certificate is not None:
                store.add(got.certificate)
                collected.append(got.certificate)
            say(f"fleet: {job.node_class}: Job {job.job_id} {phase}: {got.job.verdict or got.job.problem}")
            run = save_run(run.with_job(got.job))
        elif phase != job.state:
            say(f"fleet: {job.node_class}: Job {job.job_id} {phase}")
            run = save_run(run.with_job(replace(job, state=phase)))
    return run, collected


def wait_k8s(
    run: FleetRun,
    cluster: Cluster,
    *,
    store: CertStore,
    say: Say = lambda _l: None,
    timeout_s: float | None = None,
    poll_s: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[FleetRun, list[Certificate]]:
    """Follow the Jobs until each ended and was collected (or the timeout). Raises SchedulerError,
    StoreError."""
    return follow(
        run,
        lambda r: advance_k8s(r, cluster, store=store, say=say),
        say=say,
        timeout_s=timeout_s,
        poll_s=poll_s,
        sleep=sleep,
        clock=clock,
    )
