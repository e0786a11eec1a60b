"""Typed, frozen records shared by every stage: matrix facts, the host, a request, a stack.

Parsed once at the boundary (matrix.py, host.py, cli) into these; nothing downstream sees raw
dicts. `Stack.to_dict()` is the one JSON schema used by `resolve --json`, the lock file, image
labels and certificates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Strategy = Literal["system-cuda", "bundled"]
STRATEGIES: tuple[Strategy, ...] = ("bundled", "system-cuda")
Flavor = Literal["base", "runtime", "devel"]


# --------------------------------------------------------------------------- matrix: CUDA


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaRelease:
    """One CUDA toolkit release (GA or update), e.g. 12.8 Update 1 = version '12.8.1'."""

    version: str  # X.Y.Z as the nvidia/cuda images name it
    label: str  # "12.8 Update 1"
    min_driver: str  # Linux x86_64 toolkit driver (NVIDIA release notes, Table 3)
    archs: tuple[str, ...]  # compute capabilities this toolkit can compile SASS/PTX for


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaMajor:
    """Minor-version compatibility of one CUDA major (release notes Table 2)."""

    major: int
    mvc_min_driver: str  # below this nothing of this major runs
    mvc_max_branch: int | None  # first branch that no longer counts as "MVC range" (None: open)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaMatrix:
    releases: tuple[CudaRelease, ...]
    majors: tuple[CudaMajor, ...]
    # GPU segments for which cuda-compat (forward compatibility) is supported
    forward_compat_segments: tuple[str, ...]


# --------------------------------------------------------------------------- matrix: GPUs


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchInfo:
    cc: str  # "9.0"
    family: str  # "hopper"
    name: str  # marketing name of the arch ("Hopper")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuModel:
    name: str  # canonical name
    nvml_names: tuple[str, ...]  # names NVML / nvidia-smi report for it
    cc: str
    family: str
    brand: str  # brand as the Container Toolkit sees it: tesla, nvidia, quadro, nvidiartx, geforce, titan
    segment: str  # datacenter | workstation | consumer | embedded
    first_branch: int | None  # first driver branch supporting it (None: older than our data)
    last_branch: int | None  # last driver branch supporting it (None: still supported)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuMatrix:
    archs: tuple[ArchInfo, ...]
    models: tuple[GpuModel, ...]


# --------------------------------------------------------------------------- matrix: frameworks


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkVariant:
    """One published build of a framework release, e.g. torch 2.11.0 + cu126."""

    name: str  # cu126, cu130, cpu, cuda12, cuda13, and-cuda ...
    cuda: str | None  # CUDA runtime X.Y the build targets; None for CPU builds
    cudnn: str | None
    nccl: str | None
    sass: tuple[str, ...]  # compute capabilities with cubins
    ptx: tuple[str, ...]  # compute capabilities with embedded PTX
    min_driver: str | None  # the build's own driver floor when stricter than CUDA MVC (JAX)
    index_url: str | None  # extra index for pip (torch); None = PyPI
    # pip requirements, framework first; "{version}" is already substituted
    bundled_packages: tuple[str, ...]  # wheels that carry their own CUDA; () = not offered
    system_packages: tuple[str, ...]  # wheels for a system-cuda image (may equal bundled)
    companion_packages: tuple[tuple[str, str], ...]  # (package, pinned requirement)
    uses_system_cuda: bool  # True when system_packages really load the image's CUDA libs
    needs_system_cudnn: str | None  # cuDNN major the image must carry for system_packages
    default: bool  # what a bare `pip install FRAMEWORK==V` gets on Linux x86_64


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkRelease:
    framework: str  # torch | tensorflow | jax
    version: str
    python: str  # PEP 440 specifier of supported CPython versions
    companions: tuple[tuple[str, str], ...]  # (package, version): torchvision, torchaudio ...
    variants: tuple[FrameworkVariant, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameworkMatrix:
    name: str
    releases: tuple[FrameworkRelease, ...]


# --------------------------------------------------------------------------- matrix: base images


@dataclass(frozen=True, slots=True, kw_only=True)
class RequireRule:
    """One alternative of NVIDIA_REQUIRE_CUDA: brand=X,driver>=B,driver<B+1."""

    brand: str
    branch: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BaseImage:
    ref: str  # full reference, e.g. nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
    kind: Literal["cuda", "slim"]
    cuda: str | None  # X.Y.Z (cuda kind only)
    cudnn: str | None  # cuDNN major carried ("9"), None when none
    flavor: Flavor | None  # base | runtime | devel (cuda kind only)
    os: str  # ubuntu24.04, debian12 ...
    python: str  # CPython X.Y the image provides or that `python_install` installs
    python_install: Literal["apt", "present"]  # how the template gets Python
    require_cuda: str | None  # the image's own NVIDIA_REQUIRE_CUDA minimum CUDA X.Y
    require_rules: tuple[RequireRule, ...]  # brand/branch exemptions in NVIDIA_REQUIRE_CUDA


@dataclass(frozen=True, slots=True, kw_only=True)
class Matrix:
    cuda: CudaMatrix
    gpus: GpuMatrix
    frameworks: tuple[FrameworkMatrix, ...]
    base_images: tuple[BaseImage, ...]
    # file name -> reviewed date, for `matrix check` and provenance in stacks
    reviewed: tuple[tuple[str, str], ...] = ()


# --------------------------------------------------------------------------- host and request


@dataclass(frozen=True, slots=True, kw_only=True)
class HostGpu:
    """One GPU as probed or as given on the command line."""

    name: str
    cc: str
    brand: str | None = None
    segment: str | None = None
    uuid: str | None = None
    memory_total_mib: int | None = None
    model: str | None = None  # canonical GpuModel name when known

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cc": self.cc,
            "brand": self.brand,
            "segment": self.segment,
            "uuid": self.uuid,
            "memory_total_mib": self.memory_total_mib,
            "model": self.model,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    driver: str | None  # None: no NVIDIA driver
    gpus: tuple[HostGpu, ...] = ()
    source: str = "given"  # nvml | nvidia-smi | proc | given | none

    def to_dict(self) -> dict[str, Any]:
        return {
            "driver": self.driver,
            "gpus": [g.to_dict() for g in self.gpus],
            "source": self.source,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    framework: str  # torch | tensorflow | jax
    specifier: str  # PEP 440 specifier, "" = any
    python: str | None = None  # X.Y
    strategy: Strategy | None = None  # None: consider both
    os: str | None = None
    flavor: Flavor = "runtime"  # for system-cuda images
    forward_compat: bool = False  # allow cuda-compat on GPUs that support it
    cpu_only: bool = False

    @property
    def requirement(self) -> str:
        return f"{self.framework}{self.specifier}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "framework": self.requirement,
            "python": self.python,
            "strategy": self.strategy,
            "os": self.os,
            "flavor": self.flavor,
            "forward_compat": self.forward_compat,
            "cpu_only": self.cpu_only,
        }


# --------------------------------------------------------------------------- resolver output


@dataclass(frozen=True, slots=True, kw_only=True)
class Stack:
    """A complete, compatible environment: what `build` turns into an image."""

    id: str
    framework: str
    version: str
    variant: str
    cuda: str | None
    cudnn: str | None
    nccl: str | None
    python: str
    base_image: str
    os: str
    strategy: Strategy
    flavor: Flavor | None
    min_driver: str | None  # lowest driver on which this stack runs (None: CPU)
    require_cuda: str | None  # NVIDIA_REQUIRE_CUDA the image carries
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    index_url: str | None
    packages: tuple[str, ...]  # pip requirements of the framework itself, pinned
    companions: tuple[tuple[str, str], ...]  # (package, pinned requirement) e.g. torchvision
    python_install: Literal["apt", "present"]
    notes: tuple[str, ...] = field(default=())  # warnings that hold for this stack

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "framework": {"name": self.framework, "version": self.version, "variant": self.variant},
            "cuda": self.cuda,
            "cudnn": self.cudnn,
            "nccl": self.nccl,
            "python": self.python,
            "base_image": self.base_image,
            "os": self.os,
            "strategy": self.strategy,
            "flavor": self.flavor,
            "min_driver": self.min_driver,
            "require_cuda": self.require_cuda,
            "archs": {"sass": list(self.sass), "ptx": list(self.ptx)},
            "index_url": self.index_url,
            "packages": list(self.packages),
            "companions": dict(self.companions),
            "python_install": self.python_install,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stack:
        """Inverse of to_dict. Raises KeyError/TypeError on a malformed dict (callers wrap it)."""
        fw = d["framework"]
        return cls(
            id=str(d["id"]),
            framework=str(fw["name"]),
            version=str(fw["version"]),
            variant=str(fw["variant"]),
            cuda=d.get("cuda"),
            cudnn=d.get("cudnn"),
            nccl=d.get("nccl"),
            python=str(d["python"]),
            base_image=str(d["base_image"]),
            os=str(d["os"]),
            strategy=d["strategy"],
            flavor=d.get("flavor"),
            min_driver=d.get("min_driver"),
            require_cuda=d.get("require_cuda"),
            sass=tuple(d["archs"]["sass"]),
            ptx=tuple(d["archs"]["ptx"]),
            index_url=d.get("index_url"),
            packages=tuple(d["packages"]),
            companions=tuple(sorted(d.get("companions", {}).items())),
            python_install=d["python_install"],
            notes=tuple(d.get("notes", ())),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    candidate: str  # e.g. "torch 2.11.0+cu130 / py3.12 / bundled"
    component: str  # driver | arch | python | base-image | require-cuda | gpu-support | ...
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"candidate": self.candidate, "component": self.component, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    request: Request
    host: Host
    stack: Stack | None
    alternatives: tuple[Stack, ...]
    rejected: tuple[Rejection, ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "request": self.request.to_dict(),
            "host": self.host.to_dict(),
            "stack": self.stack.to_dict() if self.stack else None,
            "alternatives": [s.to_dict() for s in self.alternatives],
            "rejected": [r.to_dict() for r in self.rejected],
            "warnings": list(self.warnings),
        }
