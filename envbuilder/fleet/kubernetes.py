"""Kubernetes: node classes from NVIDIA GPU Feature Discovery's node labels, node affinity built
from those labels, and the Job that certifies an image on one class (GPUs from the device plugin's
`nvidia.com/gpu` limit, or a DRA ResourceClaim of NVIDIA's DRA driver), validated offline against
the Kubernetes schemas (kubernetes-validate).

GFD's labels are integers where they are numbers (nvidia.com/cuda.driver.major=580,
nvidia.com/gpu.compute.major=9), so `Gt` works on them: a driver floor of 580.65.06 is three
alternatives (major > 580; major 580, minor > 65; 580.65, rev > 5), as Kubernetes ORs
nodeSelectorTerms and ANDs the expressions of one term. Label meanings:
https://github.com/NVIDIA/k8s-device-plugin/blob/main/docs/gpu-feature-discovery/README.md
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from envbuilder.bounded import load_yaml, read_text_bounded
from envbuilder.errors import SchedulerError, UsageError
from envbuilder.fleet.classes import NodeClass, with_gpu_model
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import platform_of_machine
from envbuilder.typed import ascii_int
from envbuilder.versions import parse_driver

PRODUCT = "nvidia.com/gpu.product"
COUNT = "nvidia.com/gpu.count"
CC_MAJOR = "nvidia.com/gpu.compute.major"
CC_MINOR = "nvidia.com/gpu.compute.minor"
DRV_MAJOR = "nvidia.com/cuda.driver.major"
DRV_MINOR = "nvidia.com/cuda.driver.minor"
DRV_REV = "nvidia.com/cuda.driver.rev"
CLASS_KEYS = (PRODUCT, COUNT, CC_MAJOR, CC_MINOR, DRV_MAJOR, DRV_MINOR, DRV_REV)
ARCH = "kubernetes.io/arch"  # the kubelet's well-known label (amd64, arm64): splits classes, not affinity
GPU_RESOURCE = "nvidia.com/gpu"
DRA_DEVICE_CLASS = "gpu.nvidia.com"  # NVIDIA's DRA driver (k8s-dra-driver-gpu)
K8S_VERSION = "1.34"  # the schemas manifests are validated against (resource.k8s.io/v1 is GA there)
MANAGED_BY = "envbuilder"
_DNS = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class K8sNode:
    name: str
    labels: Mapping[str, str]


def nodes_from_doc(doc: Any, where: str) -> list[K8sNode]:
    items = doc.get("items") if isinstance(doc, dict) and "items" in doc else doc
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise UsageError(f"{where} holds no nodes", hint="write it with: kubectl get nodes -o json > FILE")
    nodes = []
    for item in items:
        meta = item.get("metadata") if isinstance(item, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise UsageError(f"{where}: an item without metadata.name", hint="kubectl get nodes -o json")
        labels = meta.get("labels")
        labels = labels if isinstance(labels, dict) else {}
        nodes.append(K8sNode(name=meta["name"], labels={str(k): str(v) for k, v in labels.items()}))
    return nodes


def read_nodes_file(path: Path) -> list[K8sNode]:
    """Nodes from `kubectl get nodes -o json` (or -o yaml) saved to a file. Raises UsageError."""
    try:
        doc = load_yaml(read_text_bounded(path))  # a FIFO, a device or a huge file: refused unread
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    return nodes_from_doc(doc, str(path))


def _int_label(labels: Mapping[str, str], key: str) -> int | None:
    return ascii_int(labels.get(key, ""))


def class_name(product: str) -> str:
    """A DNS-1123 label from a GFD product: NVIDIA-H100-80GB-HBM3 -> nvidia-h100-80gb-hbm3."""
    return _DNS.sub("-", product.lower()).strip("-")[:40].strip("-") or "gpu"


def node_classes(nodes: Sequence[K8sNode], matrix: Matrix) -> tuple[NodeClass, ...]:
    """GPU nodes grouped by their GFD labels (product, count, compute capability, driver);
    nodes without nvidia.com/gpu.product are no GPU class."""
    groups: dict[tuple[str, ...], list[K8sNode]] = {}
    for n in nodes:
        if PRODUCT not in n.labels:
            continue
        key = (*(n.labels.get(k, "") for k in CLASS_KEYS), n.labels.get(ARCH, ""))
        groups.setdefault(key, []).append(n)
    names: dict[str, int] = {}
    classes = []
    for (*values, arch), members in sorted(groups.items()):
        labels = {k: v for k, v in zip(CLASS_KEYS, values, strict=True) if v}
        base = class_name(labels[PRODUCT])
        names[base] = names.get(base, 0) + 1
        name = base if names[base] == 1 else f"{base}-{names[base]}"
        facts = [f"GPU product {labels[PRODUCT]}: label {PRODUCT}"]
        cc = None
        if (major := _int_label(labels, CC_MAJOR)) is not None and (
            minor := _int_label(labels, CC_MINOR)
        ) is not None:
            cc = f"{major}.{minor}"
            facts.append(f"compute capability {cc}: labels {CC_MAJOR}/{CC_MINOR}")
        driver = None
        parts = [labels.get(k, "") for k in (DRV_MAJOR, DRV_MINOR, DRV_REV)]
        if all(ascii_int(p) is not None for p in parts):
            driver = f"{parts[0]}.{parts[1]}.{parts[2].zfill(2)}"
            facts.append(f"driver {driver}: labels {DRV_MAJOR}/{DRV_MINOR}/{DRV_REV}")
        count = _int_label(labels, COUNT) or 1
        platform = platform_of_machine(arch) if arch else None
        if platform is not None:
            facts.append(f"platform {platform}: label {ARCH}={arch}")
        cls = NodeClass(
            name=name,
            scheduler="kubernetes",
            nodes=tuple(sorted(n.name for n in members)),
            gpus_per_node=count,
            gpu_type=labels[PRODUCT],
            nvml_names=(labels[PRODUCT].replace("-", " "),),
            cc=cc,
            driver=driver,
            labels=labels,
            facts=tuple(facts),
            platform=platform,
        )
        cls = with_gpu_model(cls, matrix, labels[PRODUCT].replace("-", " "), "GFD product")
        # GFD's product is an NVML name with its spaces as dashes: keep the names that give it
        named = tuple(n for n in cls.nvml_names if gfd_product(n) == labels[PRODUCT])
        classes.append(replace(cls, nvml_names=named or (labels[PRODUCT].replace("-", " "),)))
    return tuple(classes)


# --------------------------------------------------------------------------- node affinity


def gfd_product(nvml_name: str) -> str:
    """The nvidia.com/gpu.product value GFD writes for an NVML name (spaces become dashes)."""
    return "-".join(nvml_name.split())


def _expr(key: str, op: str, *values: str | int) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = [str(v) for v in values]
    return out


def driver_at_least(driver: str) -> list[list[dict[str, Any]]]:
    """Alternatives (each a list of ANDed expressions) that hold exactly on a driver >= `driver`,
    from GFD's integer driver labels. A bare branch (580) is one alternative."""
    parts = [int(p) for p in parse_driver(driver).release[:3]]
    major = parts[0]
    alts = [[_expr(DRV_MAJOR, "Gt", major - 1)]] if len(parts) == 1 else [[_expr(DRV_MAJOR, "Gt", major)]]
    if len(parts) >= 2:
        minor = parts[1]
        if len(parts) == 2 or parts[2] == 0:
            alts.append([_expr(DRV_MAJOR, "In", major), _expr(DRV_MINOR, "Gt", minor - 1)])
        else:
            alts.append([_expr(DRV_MAJOR, "In", major), _expr(DRV_MINOR, "Gt", minor)])
            alts.append(
                [
                    _expr(DRV_MAJOR, "In", major),
                    _expr(DRV_MINOR, "In", minor),
                    _expr(DRV_REV, "Gt", parts[2] - 1),
                ]
            )
    return alts


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuTarget:
    """A GPU model an affinity admits: its GFD product names and compute capability."""

    products: tuple[str, ...]
    cc: str | None = None


def node_affinity(targets: Sequence[GpuTarget], min_driver: str | None) -> dict[str, Any]:
    """A required node affinity admitting nodes with one of these GPU models (product and compute
    capability labels) and a driver >= min_driver: one nodeSelectorTerm per model x driver
    alternative. Deterministic (sorted)."""
    drivers = driver_at_least(min_driver) if min_driver else [[]]
    terms = []
    for t in sorted(targets, key=lambda t: t.products):
        base = [_expr(PRODUCT, "In", *sorted(set(t.products)))]
        if t.cc:
            major, _, minor = t.cc.partition(".")
            base += [_expr(CC_MAJOR, "In", int(major)), _expr(CC_MINOR, "In", int(minor))]
        terms += [{"matchExpressions": [*base, *alt]} for alt in drivers]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def class_affinity(cls: NodeClass) -> dict[str, Any]:
    """An affinity for exactly this class: every label the class shares, as `In`."""
    exprs = [_expr(k, "In", v) for k, v in sorted(cls.labels.items())]
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": exprs}]
            }
        }
    }


def dra_selectors(products: Sequence[str], min_driver: str | None) -> list[dict[str, Any]]:
    """CEL selectors for NVIDIA's DRA driver's device attributes (productName, driverVersion)."""
    out = []
    if products:
        names = ", ".join(json.dumps(p.replace("-", " ")) for p in sorted(set(products)))
        out.append(
            {"cel": {"expression": f"device.attributes['{DRA_DEVICE_CLASS}'].productName in [{names}]"}}
        )
    if min_driver:
        parts = [int(p) for p in parse_driver(min_driver).release[:3]] + [0, 0]
        semver = ".".join(str(p) for p in parts[:3])
        out.append(
            {
                "cel": {
                    "expression": f"device.attributes['{DRA_DEVICE_CLASS}'].driverVersion"
                    f".compareTo(semver('{semver}')) >= 0"
                }
            }
        )
    return out


# --------------------------------------------------------------------------- validation


def validate_manifests(docs: Sequence[Mapping[str, Any]], version: str = K8S_VERSION) -> None:
    """Check every manifest against the Kubernetes OpenAPI schemas of `version`, offline and strict
    (unknown fields refused). Raises UsageError naming the manifest and the first problem."""
    try:
        from kubernetes_validate import ValidationError, validate  # type: ignore[import-untyped]
        from kubernetes_validate.utils import SchemaNotFoundError  # type: ignore[import-untyped]
    except ImportError as exc:  # the `k8s` extra: 108 MB of schemas that only Kubernetes users need
        raise SchedulerError(
            "Kubernetes manifests are validated before they are written or applied, and the "
            "validator (kubernetes-validate) is not installed",
            hint="install the k8s extra: pip install 'gpu-envbuilder[k8s]' (a checkout: -e '.[k8s]')",
        ) from exc

    for doc in docs:
        name = f"{doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
        try:
            validate(dict(doc), version, strict=True)
        except (ValidationError, SchemaNotFoundError) as exc:
            first = str(exc).splitlines()[0]
            raise UsageError(f"the rendered {name} is not valid Kubernetes {version}: {first}") from exc
        for term in _terms(doc):
            for e in term.get("matchExpressions", ()):
                if e.get("operator") in ("Gt", "Lt") and not (
                    len(e.get("values", ())) == 1 and str(e["values"][0]).lstrip("-").isdigit()
                ):
                    raise UsageError(
                        f"{name}: {e['key']} {e['operator']} needs one integer value, not {e.get('values')}"
                    )


def _terms(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = doc.get("spec") or {}
    pod = ((spec.get("template") or {}).get("spec") or {}) if doc.get("kind") == "Job" else {}
    req = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return list((req or {}).get("nodeSelectorTerms") or [])


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: what kubectl users read and diff."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def yaml_text(doc: Mapping[str, Any]) -> str:
    """One YAML document, keys in their natural (insertion) order, no anchors."""
    return yaml.dump(dict(doc), Dumper=_PlainDumper, sort_keys=False, default_flow_style=False)


def dump_manifests(docs: Sequence[Mapping[str, Any]]) -> str:
    """A multi-document YAML stream."""
    return "---\n".join(yaml_text(d) for d in docs)


def scheduler_error(what: str, said: str) -> SchedulerError:
    return SchedulerError(
        f"{what}: {said}",
        hint="check the kubeconfig (kubectl config current-context) and that the cluster answers",
    )
