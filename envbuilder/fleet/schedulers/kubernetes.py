"""Kubernetes as a fleet scheduler (the Scheduler of schedulers/base.py): node classes from NVIDIA
GPU Feature Discovery's labels (fleet/kubernetes.py), one Job per class rendered, validated and,
with --apply, submitted and collected from its pod's log (fleet/k8s_jobs.py, through the client or
kubectl of fleet/k8s_api.py); and what a certified image asks of a cluster:

- a required node affinity on GFD labels (product, compute capability, integer driver labels with
  `Gt`);
- Node Feature Discovery: an image-compatibility spec (v1alpha1) with the same rules on NFD's
  features (the PCI vendor, the loaded nvidia module, and GFD's labels as NFD's `local.label`
  feature, where GFD writes them as a feature file), attachable to the image as an OCI artifact
  of type application/vnd.nfd.image-compatibility.v1alpha1.
  Spec: https://kubernetes-sigs.github.io/node-feature-discovery/stable/usage/image-compatibility.html
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.store import CertStore
from envbuilder.errors import UsageError
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.jobs import FleetRun, new_run_id, save_run
from envbuilder.fleet.k8s_api import cluster, live_nodes
from envbuilder.fleet.k8s_jobs import advance_k8s, apply_run, plan_k8s_run, wait_k8s
from envbuilder.fleet.kubernetes import (
    CC_MAJOR,
    CC_MINOR,
    K8S_VERSION,
    PRODUCT,
    GpuTarget,
    driver_at_least,
    gfd_product,
    node_affinity,
    node_classes,
    read_nodes_file,
    yaml_text,
)
from envbuilder.fleet.schedulers.base import (
    Attachable,
    CertifyRequest,
    ClassQuery,
    ConstraintSection,
    Say,
)
from envbuilder.fleet.status import ClassStatus
from envbuilder.matrix.model import Matrix

NFD_ARTIFACT_TYPE = "application/vnd.nfd.image-compatibility.v1alpha1"
NFD_SPEC_MEDIA_TYPE = "application/vnd.nfd.image-compatibility.spec.v1alpha1+yaml"
NVIDIA_PCI_VENDOR = "10de"


def gpu_targets(certs: Sequence[Certificate]) -> list[GpuTarget]:
    """The GPU models GPU-certified (verdict certified), as GFD names them, each once."""
    found: dict[tuple[str, str | None], set[str]] = {}
    for cert in certs:
        if cert.verdict != "certified":
            continue
        for g in cert.host.gpus:
            if g.name:
                found.setdefault((" ".join(g.name.split()), g.cc), set()).add(gfd_product(g.name))
    return [GpuTarget(products=tuple(sorted(p)), cc=cc) for (_, cc), p in sorted(found.items())]


def min_driver(certs: Sequence[Certificate]) -> str | None:
    """The stack's driver floor (the same image: the same stack in every certificate)."""
    for cert in certs:
        stack = cert.image.stack
        if stack is not None and stack.min_driver:
            return stack.min_driver
    return None


def k8s_affinity(certs: Sequence[Certificate]) -> dict[str, Any] | None:
    """The node affinity admitting exactly the GPU-certified models on a new enough driver; None
    when no certificate is a GPU certification."""
    targets = gpu_targets(certs)
    return node_affinity(targets, min_driver(certs)) if targets else None


def _nfd_expressions(exprs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Node affinity expressions -> NFD matchExpressions ({key: {op, value}})."""
    out: dict[str, Any] = {}
    for e in exprs:
        entry: dict[str, Any] = {"op": e["operator"]}
        if "values" in e:
            entry["value"] = list(e["values"])
        out[e["key"]] = entry
    return out


def nfd_spec(certs: Sequence[Certificate], *, description: str) -> dict[str, Any] | None:
    """The NFD image-compatibility spec: one compatibility set per GPU-certified model. None when
    no certificate is a GPU certification."""
    targets = gpu_targets(certs)
    if not targets:
        return None
    floor = min_driver(certs)
    drivers = driver_at_least(floor) if floor else [[]]
    sets = []
    for t in targets:
        gpu = [{"key": PRODUCT, "operator": "In", "values": list(t.products)}]
        if t.cc:
            major, _, minor = t.cc.partition(".")
            gpu += [
                {"key": CC_MAJOR, "operator": "In", "values": [major]},
                {"key": CC_MINOR, "operator": "In", "values": [minor]},
            ]
        rule: dict[str, Any] = {
            "name": f"{t.products[0]}, driver >= {floor}" if floor else t.products[0],
            "matchFeatures": [
                {
                    "feature": "pci.device",
                    "matchExpressions": {"vendor": {"op": "In", "value": [NVIDIA_PCI_VENDOR]}},
                },
                {"feature": "kernel.loadedmodule", "matchExpressions": {"nvidia": {"op": "Exists"}}},
            ],
            "matchAny": [
                {
                    "matchFeatures": [
                        {"feature": "local.label", "matchExpressions": _nfd_expressions([*gpu, *alt])}
                    ]
                }
                for alt in drivers
            ],
        }
        sets.append(
            {
                "description": f"{description}: {t.products[0]} (compute capability {t.cc})",
                "tag": t.products[0],
                "rules": [rule],
            }
        )
    return {"version": "v1alpha1", "compatibilities": sets}


def nfd_yaml(spec: dict[str, Any]) -> str:
    return yaml_text(spec)


class Kubernetes:
    """Kubernetes through the official client where it is installed, else kubectl."""

    name = "kubernetes"
    option = "k8s"
    source = "Kubernetes GFD labels"
    constraint_formats = ("k8s", "nfd")

    def node_classes(self, matrix: Matrix, query: ClassQuery) -> tuple[NodeClass, ...]:
        """Node classes from GPU Feature Discovery labels: a `kubectl get nodes -o json` file
        (--nodes), or the cluster itself. Raises UsageError, SchedulerError."""
        nodes = read_nodes_file(query.nodes_file) if query.nodes_file else live_nodes()
        return node_classes(nodes, matrix)

    def certify(
        self, request: CertifyRequest, *, say: Say, echo: Say
    ) -> tuple[FleetRun | None, list[Certificate]]:
        """Render and validate one Job per class into --out; with --apply, submit and (with wait)
        collect them. Without --apply the manifests are the result (run None: nothing ran)."""
        if not request.classes:
            raise UsageError(
                "no node with GPU Feature Discovery labels", hint="is GFD (the GPU Operator) deployed?"
            )
        run_id = new_run_id()
        folder = request.out_dir or Path(f"envbuilder-k8s-{run_id}")
        run = plan_k8s_run(
            request.image,
            request.classes,
            request.plan,
            out_dir=folder,
            namespace=request.namespace,
            dra=request.dra,
            gpu=request.gpu_access != "none",
            quick=request.quick,
            run_id=run_id,
        )
        for job in run.jobs:
            echo(
                f"{job.node_class}: {job.script} "
                f"(Job {job.job_id}; validated against Kubernetes {K8S_VERSION})"
            )
        if not request.apply:
            say(
                f"fleet: {len(run.jobs)} class(es) rendered in {folder}; "
                "submit with --apply or kubectl create -f"
            )
            return None, []
        kube = cluster()
        run = apply_run(save_run(run), kube, say=say)
        if not request.wait:
            return run, []
        return wait_k8s(run, kube, store=CertStore(), say=say, timeout_s=request.timeout_s)

    def advance(self, run: FleetRun, *, store: CertStore, say: Say) -> tuple[FleetRun, list[Certificate]]:
        """One look at the run's Jobs in the current kubeconfig's cluster."""
        return advance_k8s(run, cluster(), store=store, say=say)

    def constraints(self, rows: Sequence[ClassStatus], *, image: str) -> tuple[ConstraintSection, ...]:
        certs = [r.certificate for r in rows]
        stack = certs[0].image.stack if certs else None
        description = f"envbuilder: {image} ({stack.id if stack else 'no stack label'}) certified"
        affinity = k8s_affinity(certs)
        spec = nfd_spec(certs, description=description)
        k8s_lines = ["# Kubernetes: pod spec affinity (GPU Feature Discovery labels)"]
        k8s_lines.append(
            yaml_text({"affinity": affinity}).rstrip()
            if affinity
            else "# (no GPU certification: the CPU path constrains no GPU node)"
        )
        init = check_init_section(certs, image, affinity, k8s_lines)
        nfd_lines = [f"# NFD image compatibility ({NFD_ARTIFACT_TYPE})"]
        nfd_lines.append(nfd_yaml(spec).rstrip() if spec else "# (no GPU certification: no NFD rule)")
        attachable = (
            Attachable(
                title="NFD image-compatibility spec",
                artifact_type=NFD_ARTIFACT_TYPE,
                media_type=NFD_SPEC_MEDIA_TYPE,
                blob=nfd_yaml(spec).encode(),
            )
            if spec
            else None
        )
        return (
            ConstraintSection(
                format="k8s",
                key="kubernetes",
                value={"affinity": affinity, "init_container": init},
                lines=tuple(k8s_lines),
            ),
            ConstraintSection(
                format="nfd",
                key="nfd",
                value=spec,
                lines=tuple(nfd_lines),
                attachable=attachable,
                no_attachable=None if spec else "no GPU certification, so there is no NFD spec to attach",
            ),
        )


def check_init_section(
    certs: Sequence[Certificate], image: str, affinity: dict[str, Any] | None, lines: list[str]
) -> dict[str, Any] | None:
    """`envbuilder check`'s init container for `image` (fleet/check_init.py), validated offline as
    a Pod before it is printed (never a broken snippet), its lines added to `lines`; None without
    a GPU certification. The harness is where envbuilder's builds put it (image/render.py)."""
    from envbuilder.fleet.check_init import check_pod, k8s_check_init_container
    from envbuilder.fleet.kubernetes import validate_manifests
    from envbuilder.image.render import HARNESS_DEST

    init = k8s_check_init_container(certs, image=image, harness_dir=HARNESS_DEST)
    lines.append("# Kubernetes: pod spec initContainers (envbuilder check's in-image steps, docs/check.md)")
    if init is None:
        lines.append("# (no GPU certification: no init container to check a GPU with)")
        return None
    validate_manifests([check_pod(init, affinity)])
    lines.append(yaml_text({"initContainers": [init]}).rstrip())
    return init
