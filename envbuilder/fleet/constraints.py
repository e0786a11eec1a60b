"""What a certified image asks of a scheduler, derived from its passing certificates by the rules
`run` applies (a GPU model it was certified on, a driver at least the stack's floor):

- Slurm: per certified class, the `--gres` and `--constraint` its certification job asked for
  (sealed in the certificate's run.scheduler), as sbatch options;
- Kubernetes: a required node affinity on GPU Feature Discovery labels (product, compute
  capability, integer driver labels with `Gt`);
- Node Feature Discovery: an image-compatibility spec (v1alpha1) with the same rules on NFD's
  features (the PCI vendor, the loaded nvidia module, and GFD's labels as NFD's `local.label`
  feature, where GFD writes them as a feature file), attachable to the image as an OCI artifact
  of type application/vnd.nfd.image-compatibility.v1alpha1.
  Spec: https://kubernetes-sigs.github.io/node-feature-discovery/stable/usage/image-compatibility.html
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.record import section, text
from envbuilder.fleet.kubernetes import (
    CC_MAJOR,
    CC_MINOR,
    PRODUCT,
    GpuTarget,
    driver_at_least,
    gfd_product,
    node_affinity,
    yaml_text,
)
from envbuilder.fleet.status import ClassStatus

NFD_ARTIFACT_TYPE = "application/vnd.nfd.image-compatibility.v1alpha1"
NFD_SPEC_MEDIA_TYPE = "application/vnd.nfd.image-compatibility.spec.v1alpha1+yaml"
NVIDIA_PCI_VENDOR = "10de"
PASSING = ("certified", "certified-cpu-only")


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmConstraint:
    node_class: str
    gres: str | None
    constraint: str | None
    partition: str | None
    verdict: str

    def options(self) -> list[str]:
        opts = [f"--partition={self.partition}"] if self.partition else []
        opts += [f"--gres={self.gres}"] if self.gres else []
        opts += [f"--constraint={self.constraint}"] if self.constraint else []
        return opts

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.node_class,
            "gres": self.gres,
            "constraint": self.constraint,
            "partition": self.partition,
            "verdict": self.verdict,
            "sbatch": shlex.join(self.options()),
        }


def slurm_constraints(rows: Sequence[ClassStatus]) -> list[SlurmConstraint]:
    """One entry per passing class certified through Slurm: the options its job was selected by."""
    out = []
    for r in rows:
        sched = section(r.certificate.run.get("scheduler"))
        if r.verdict not in PASSING or sched.get("kind") != "slurm":
            continue
        out.append(
            SlurmConstraint(
                node_class=r.node_class,
                gres=text(sched.get("gres")),
                constraint=text(sched.get("constraint")),
                partition=text(sched.get("partition")),
                verdict=r.verdict,
            )
        )
    return out


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
