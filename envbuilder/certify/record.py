"""The typed reading of a certificate's sections (Certificate.image, .host, .steps, .gates): what
run's checks, the report, the CLI and attest read, instead of each digging through the JSON.

A certificate is evidence, perhaps from another machine or an older envbuilder: a missing field
reads as None (or an empty tuple), and the consumer decides what that means. A field of the wrong
type never gets this far: Certificate.from_json checks CERTIFICATE_SHAPE (the fields these
readers, the report, run's checks and attest use) once, at load. `Certificate.data` stays the
document exactly as sealed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from envbuilder.typed import ANY, BOOL, INT, NUM, POSITIVE, STR, list_of, map_of, obj, opt

_S, _N, _I = opt(STR), opt(NUM), opt(INT)
_STATS = obj({"max": _N, "mean": _N})
_LIBRARY = obj(
    {
        "library": STR,
        "owner": _S,
        "sass": list_of(STR),
        "ptx": list_of(obj({"arch": STR, "isa": _S})),
        "notes": list_of(STR),
    }
)
# The step metrics something outside the harness reads (report/model.py, certify/kernels.py,
# the CLI's key metric); the others are the harness's own and only checked as JSON.
_METRICS = obj(
    {
        "images_per_s": _N,
        "val_accuracy": _N,
        "largest_batch": _I,
        "precision": _S,
        "step_time": obj(dict.fromkeys(("mean_ms", "p95_ms", "p50_ms", "min_ms", "max_ms"), _N)),
        "memory": map_of(_N),
        "telemetry": obj({"temp_c": _STATS}),
        "config": obj({"precision": _S, "batch": _I}),
        "libraries": list_of(_LIBRARY),
    }
)
_STEP = obj(
    {
        "name": STR,
        "status": STR,
        "reason": _S,
        "seconds": _N,
        "metrics": opt(_METRICS),
        "warnings": list_of(STR),
    },
    required=("name", "status"),
)
_GATE = obj({"name": STR, "status": STR, "reason": _S}, required=("name",))
_TELEMETRY = obj(
    {
        "available": opt(BOOL),
        "reason": _S,
        "series": obj({"t": list_of(NUM)}, others=list_of(_N)),
        "windows": map_of(list_of(NUM)),
        "summary": map_of(ANY),
    }
)
_MULTI_GPU = obj(
    {
        "status": _S,
        "reason": _S,
        "world_size": _I,
        "max_bytes": opt(POSITIVE),
        "sweep_cap": obj({"requested_bytes": opt(POSITIVE), "free_bytes_min": _N, "limited_by": _S}),
        "backend": _S,
        "nccl_version": _S,
        "interconnect": _S,
        "env": map_of(ANY),
        "thresholds": obj({"min_busbw_gbs": _N, "min_scaling_efficiency": _N}),
        "gates": list_of(
            obj({"name": _S, "status": _S, "reason": _S, "at_bytes": opt(POSITIVE), "value": _N})
        ),
        "sweep": list_of(obj({"bytes": opt(POSITIVE), "busbw_gbs": _N, "algbw_gbs": _N, "time_us": _N})),
        "ranks": list_of(map_of(ANY)),
        **dict.fromkeys(("busbw_at_max_gbs", "ddp_images_per_s", "single_gpu_images_per_s"), _N),
        "scaling_efficiency": _N,
        "allreduce_values_ok": opt(BOOL),
        "params_identical": opt(BOOL),
    }
)
_STACK = obj(
    {
        **dict.fromkeys(("id", "cuda", "cudnn", "python", "base_image", "strategy", "min_driver"), _S),
        "framework": obj({"name": _S, "version": _S, "variant": _S}),
        "archs": obj({"sass": list_of(STR), "ptx": list_of(STR)}),
    }
)
CERTIFICATE_SHAPE = obj(
    {
        "schema_version": INT,
        "kind": STR,
        "content_hash": STR,
        "section_hashes": map_of(STR),
        "verdict": STR,
        "verdict_reason": _S,
        "issued_at": _S,
        "envbuilder_version": _S,
        "image": obj({"id": STR, "ref": _S, "stack": opt(_STACK), "lock_hash": _S}),
        "host": obj(
            {
                **dict.fromkeys(("fingerprint", "driver", "cuda_driver", "gpu_access"), _S),
                "gpus": list_of(obj({"name": _S, "uuid": _S, "cc": _S})),
            }
        ),
        "run": obj({"scheduler": opt(map_of(ANY)), "project_smoke": opt(_STEP), "_fixture": _S}),
        "thresholds": map_of(ANY),
        "harness": obj(
            {
                "steps": list_of(_STEP),
                "gates": list_of(_GATE),
                "telemetry": opt(_TELEMETRY),
                "notes": list_of(STR),
                "options": obj({"framework": _S}),
                "multi_gpu": opt(_MULTI_GPU),
                "_fixture": _S,
            }
        ),
    }
)


def text(value: object) -> str | None:
    """A field as text; None when absent (or JSON null)."""
    return None if value is None else str(value)


def number(value: object) -> float | None:
    """A field as a number; None for anything that is not one (booleans included)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def section(value: object) -> Mapping[str, Any]:
    """A field as an object; empty when it is not one."""
    return value if isinstance(value, Mapping) else {}


def items(value: object) -> tuple[Mapping[str, Any], ...]:
    """A field as a list of objects, skipping what is not an object."""
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list | tuple) else ()


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StackRecord:
    """The stack a certificate names (resolve.model.Stack.to_dict() as the image's label carried
    it), every field optional."""

    id: str | None = None
    framework: str | None = None
    version: str | None = None
    variant: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    python: str | None = None
    base_image: str | None = None
    strategy: str | None = None
    min_driver: str | None = None
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()

    @classmethod
    def read(cls, doc: object) -> StackRecord | None:
        if not isinstance(doc, Mapping):
            return None
        fw, archs = section(doc.get("framework")), section(doc.get("archs"))
        return cls(
            id=text(doc.get("id")),
            framework=text(fw.get("name")),
            version=text(fw.get("version")),
            variant=text(fw.get("variant")),
            cuda=text(doc.get("cuda")),
            cudnn=text(doc.get("cudnn")),
            python=text(doc.get("python")),
            base_image=text(doc.get("base_image")),
            strategy=text(doc.get("strategy")),
            min_driver=text(doc.get("min_driver")),
            sass=_texts(archs.get("sass")),
            ptx=_texts(archs.get("ptx")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifiedImage:
    """The `image` section: which image (by ID) was certified, under which reference."""

    id: str = ""  # "" when missing: then the certificate covers no image
    ref: str | None = None
    stack: StackRecord | None = None
    lock_hash: str | None = None

    @classmethod
    def read(cls, doc: object) -> CertifiedImage:
        d = section(doc)
        return cls(
            id=text(d.get("id")) or "",
            ref=text(d.get("ref")),
            stack=StackRecord.read(d.get("stack")),
            lock_hash=text(d.get("lock_hash")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifiedGpu:
    name: str | None = None
    uuid: str | None = None
    cc: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CertifiedHost:
    """The `host` section: where the image was certified and how the container got the GPUs."""

    fingerprint: str | None = None
    driver: str | None = None
    cuda_driver: str | None = None
    gpus: tuple[CertifiedGpu, ...] = ()
    gpu_access: str | None = None

    @classmethod
    def read(cls, doc: object) -> CertifiedHost:
        d = section(doc)
        gpus = tuple(
            CertifiedGpu(name=text(g.get("name")), uuid=text(g.get("uuid")), cc=text(g.get("cc")))
            for g in items(d.get("gpus"))
        )
        return cls(
            fingerprint=text(d.get("fingerprint")),
            driver=text(d.get("driver")),
            cuda_driver=text(d.get("cuda_driver")),
            gpus=gpus,
            gpu_access=text(d.get("gpu_access")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    """One harness step as the certificate keeps it; `metrics` is the step's own (per-step keys)."""

    name: str = "?"
    status: str = "?"
    reason: str = ""
    seconds: float | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> StepRecord:
        warnings = doc.get("warnings")
        return cls(
            name=text(doc.get("name")) or "?",
            status=text(doc.get("status")) or "?",
            reason=text(doc.get("reason")) or "",
            seconds=number(doc.get("seconds")),
            metrics=section(doc.get("metrics")),
            warnings=tuple(w for w in warnings if isinstance(w, str)) if isinstance(warnings, list) else (),
        )

    def metric(self, *path: str) -> Any:
        """A metric by its path ("step_time", "mean_ms"), or None."""
        value: Any = self.metrics
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class GateRecord:
    """One gate the harness judged over several steps (scaling, overhead, ...)."""

    name: str | None = None
    status: str | None = None
    reason: str = ""

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> GateRecord:
        return cls(
            name=text(doc.get("name")), status=text(doc.get("status")), reason=text(doc.get("reason")) or ""
        )
