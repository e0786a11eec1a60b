"""A node class (nodes with the same GPU model, GPU count, driver and features) and whether an
image's stack can cover it: run's own checks (arch, driver floor, NVIDIA_REQUIRE_CUDA) applied to
the class as if the image ran there, so `fleet plan` and `run` can never disagree.

What a class says of itself comes with its source (a GRES type read in the matrix, a node
feature, a probe on the node, a GPU Feature Discovery label): a fact nobody stated is unknown,
never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from envbuilder.certify.certificate import Certificate
from envbuilder.engine import ImageInfo
from envbuilder.errors import UsageError
from envbuilder.host import GpuInfo
from envbuilder.image.metadata import image_env, read_metadata
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import Platform
from envbuilder.require_cuda import image_requirements
from envbuilder.resolve.drivers import native_cuda
from envbuilder.resolve.gpus import find_gpu
from envbuilder.run.coverage import (
    Refusal,
    RunHost,
    check_gpu_arch,
    check_min_driver,
    check_require_cuda,
)
from envbuilder.versions import is_driver_branch, parse_driver

Status = Literal["covered", "not-covered", "unknown", "no-gpu"]
# Node features that state a fact (Slurm `Features=`; sites name them freely, these are the common
# spellings): the driver (`nvidia_driver_580.95.05`, `driver_580`, `drv_580`) and the compute
# capability (`sm_90`, `sm_120`: the last digit is the minor).
_DRIVER_FEATURE = re.compile(r"^(?:nvidia[_-]?driver|driver|drv)[_-]?(\d+(?:\.\d+){0,2})$", re.IGNORECASE)
_CC_FEATURE = re.compile(r"^sm_?(\d+)(\d)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeClass:
    """Nodes a scheduler treats alike for a GPU job. `facts` says where each known value came from."""

    name: str
    scheduler: str  # the name of the scheduler that reported it (fleet/schedulers/: slurm, kubernetes)
    nodes: tuple[str, ...]
    gpus_per_node: int = 0
    gpu_type: str | None = None  # Slurm's GRES type (h200) or GFD's nvidia.com/gpu.product
    gpu_model: str | None = None  # the matrix's model name (NVIDIA H200)
    nvml_names: tuple[str, ...] = ()  # the names NVML gives that model
    cc: str | None = None
    brand: str | None = None
    driver: str | None = None  # full version, or a bare branch (its oldest driver)
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)  # Kubernetes: the GFD labels it shares
    facts: tuple[str, ...] = ()
    # the nodes' platform where the scheduler says (Slurm's Arch, Kubernetes' kubernetes.io/arch);
    # None: not said (resolve then takes the platform its GPU exists in, else linux/amd64)
    platform: Platform | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scheduler": self.scheduler,
            "nodes": list(self.nodes),
            "gpus_per_node": self.gpus_per_node,
            "gpu_type": self.gpu_type,
            "gpu_model": self.gpu_model,
            "cc": self.cc,
            "driver": self.driver,
            "partitions": list(self.partitions),
            "features": list(self.features),
            "labels": dict(self.labels),
            "facts": list(self.facts),
        }


def facts_from_features(features: tuple[str, ...]) -> tuple[str | None, str | None, list[str]]:
    """(driver, cc, facts) stated by node features; None where no feature says it."""
    driver = cc = None
    facts: list[str] = []
    for f in features:
        if (m := _DRIVER_FEATURE.match(f)) and driver is None:
            try:
                parse_driver(m.group(1))
            except UsageError:
                continue
            driver = m.group(1)
            branch = " (a branch: its oldest driver is assumed)" if is_driver_branch(driver) else ""
            facts.append(f"driver {driver}: node feature {f}{branch}")
        elif (m := _CC_FEATURE.match(f)) and cc is None:
            cc = f"{int(m.group(1))}.{m.group(2)}"
            facts.append(f"compute capability {cc}: node feature {f}")
    return driver, cc, facts


def with_gpu_model(cls: NodeClass, matrix: Matrix, name: str, source: str) -> NodeClass:
    """The class with what the matrix knows of the GPU `name` (a GRES type, a product label)
    stands for. A name that fits no model, or several, leaves the model unknown and says so."""
    try:
        match = find_gpu(matrix, name)
    except UsageError as exc:
        return replace(cls, facts=(*cls.facts, f"GPU model: {source} {name!r}: {exc.message}"))
    if match is None:
        return replace(cls, facts=(*cls.facts, f"GPU model: {source} {name!r} is no model the matrix knows"))
    if match.candidates:  # several models of one compute capability: that much is known
        said = (
            f"GPU model: {source} {name!r} fits {len(match.candidates)} models of compute capability "
            f"{match.model.cc} ({', '.join(match.candidates)}): the model is left unknown"
        )
        return replace(cls, cc=cls.cc or match.model.cc, facts=(*cls.facts, said))
    model = match.model
    facts = [f"GPU model {model.name}: {source} {name!r} in the matrix"]
    cc = cls.cc
    if cc is None:
        cc = model.cc
        facts.append(f"compute capability {cc}: the matrix's {model.name}")
    elif cc != model.cc:
        facts.append(
            f"warning: the class states compute capability {cc}, the matrix's {model.name} has {model.cc}"
        )
    return replace(
        cls,
        gpu_model=model.name,
        nvml_names=tuple(model.nvml_names) or (model.name,),
        brand=model.brand,
        cc=cc,
        facts=(*cls.facts, *facts),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Coverage:
    """Whether an image's stack can run on a class, by run's checks, with each reason."""

    node_class: str
    status: Status
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.node_class, "status": self.status, "reasons": list(self.reasons)}


def class_host(cls: NodeClass, matrix: Matrix) -> RunHost:
    """The class as run's checks see a host: one of its GPUs, its driver, GPUs handed in."""
    gpu = GpuInfo(
        index=0,
        name=cls.nvml_names[0] if cls.nvml_names else cls.gpu_type or "GPU",
        uuid=None,
        cc=cls.cc,
        brand=cls.brand,
    )
    cuda = native_cuda(matrix, cls.driver) if cls.driver else None
    return RunHost(driver=cls.driver, cuda_driver=cuda, gpus=(gpu,), access="devices", requested="devices")


def brand_decides(
    view: Certificate, image: ImageInfo, host: RunHost, refusal: Refusal | None
) -> tuple[str, ...]:
    """The brands the image's NVIDIA_REQUIRE_* name (`brand=tesla,driver>=535,...` exemptions)
    under which check_require_cuda would decide otherwise than for `host`'s GPU, whose brand is
    unknown (empty: the outcome does not depend on the brand). `refusal`: what check_require_cuda
    said for `host` itself (the caller has it; it is not asked twice). An unknown brand compares
    as "" in the toolkit's evaluator, so it never matches a brand exemption: a class whose model
    is unknown would be refused for a brand it may well have."""
    named = sorted(
        {
            f.value
            for req in image_requirements(image_env(image))
            for term in req.terms
            for f in term
            if f.prop == "brand"
        }
    )
    refused = refusal is not None
    return tuple(
        b
        for b in named
        if (
            check_require_cuda(view, image, replace(host, gpus=tuple(replace(g, brand=b) for g in host.gpus)))
            is not None
        )
        != refused
    )


def class_coverage(cls: NodeClass, image: ImageInfo, matrix: Matrix) -> Coverage:
    """Can `image` run on `cls`? run's arch, driver-floor and NVIDIA_REQUIRE_CUDA checks, applied to
    the stack the image's label names (what a certificate of the image would carry). Unknown where
    the class does not say its GPU or driver, or where the image's NVIDIA_REQUIRE_* holds for some
    brands only and the class's brand is unknown (brand_decides); not-covered where a check fails
    whatever the unknowns; no-gpu for a class without GPUs. Pure."""
    meta = read_metadata(image)
    if cls.gpus_per_node == 0:
        return Coverage(node_class=cls.name, status="no-gpu", reasons=("the class has no GPUs",))
    if meta.stack_record is None or "unparsed" in meta.stack_record:
        return Coverage(
            node_class=cls.name,
            status="unknown",
            reasons=("the image has no envbuilder stack label: certify it to find out",),
        )
    if not meta.stack_record.get("cuda"):
        return Coverage(node_class=cls.name, status="not-covered", reasons=("a CPU-only stack: no GPU runs",))
    view = Certificate({"image": {"stack": dict(meta.stack_record)}})  # what run's checks read of it
    host = class_host(cls, matrix)
    reasons: list[str] = []
    unknown: list[str] = []
    if cls.cc is None:
        unknown.append(
            "GPU model and compute capability unknown (no known GRES type/product, feature or probe)"
        )
    elif (r := check_gpu_arch(view, image, host)) is not None:
        reasons.append(f"{r.message} [{r.reason}]")
    if cls.driver is None:
        unknown.append("driver unknown (no node feature or label states it; --probe asks the nodes)")
    else:
        if (r := check_min_driver(view, image, host)) is not None:
            reasons.append(f"{r.message} [{r.reason}]")
        req: Refusal | None = check_require_cuda(view, image, host)
        decides = brand_decides(view, image, host, req) if cls.brand is None else ()
        if decides:  # the outcome turns on a brand nobody stated: unknown, not refused
            said = f"{req.message} [{req.reason}]; " if req is not None else ""
            unknown.append(
                f"{said}GPU brand unknown (no known GPU model): the image's NVIDIA_REQUIRE_* "
                f"decides otherwise for brand {', '.join(decides)}"
            )
        elif req is not None:
            reasons.append(f"{req.message} [{req.reason}]")
    if reasons:
        return Coverage(node_class=cls.name, status="not-covered", reasons=tuple(reasons + unknown))
    if unknown:
        return Coverage(node_class=cls.name, status="unknown", reasons=tuple(unknown))
    floor = meta.stack_record.get("min_driver")
    return Coverage(
        node_class=cls.name,
        status="covered",
        reasons=(f"sm {cls.cc} has kernels; driver {cls.driver} >= {floor}",),
    )


def select_classes(
    classes: Sequence[NodeClass], wanted: Sequence[str], *, plan_hint: str = "envbuilder fleet plan"
) -> tuple[NodeClass, ...]:
    """The classes named in `wanted` (all GPU classes when empty). Raises UsageError for a name
    that is no class (`plan_hint`: the command that lists them)."""
    if not wanted:
        return tuple(c for c in classes if c.gpus_per_node)
    by_name = {c.name: c for c in classes}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        raise UsageError(
            f"no node class {', '.join(map(repr, unknown))} in this cluster",
            hint=f"the classes are: {', '.join(by_name) or 'none'} ({plan_hint})",
        )
    return tuple(by_name[w] for w in dict.fromkeys(wanted))
