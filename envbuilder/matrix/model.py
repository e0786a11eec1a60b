"""Typed, frozen records of the compatibility facts in matrices/: CUDA releases, GPU models,
framework builds and base images. Parsed once by matrix/ (nothing downstream sees raw dicts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
    windows_driver: str | None = None  # Windows toolkit driver (Table 3), for WSL2; None from 13.0


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
    wsl_limits: tuple[WslLimit, ...] = ()  # what WSL2 lacks, sourced (cuda.yaml `wsl.limits`)


@dataclass(frozen=True, slots=True, kw_only=True)
class WslLimit:
    """One thing WSL2 lacks or does differently (cuda.yaml `wsl.limits`)."""

    lacks: str  # short: "no MIG"
    detail: str  # what instead, with its source


# --------------------------------------------------------------------------- matrix: GPUs


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchInfo:
    cc: str  # "9.0"
    family: str  # "hopper"
    name: str  # marketing name of the arch ("Hopper")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuModel:
    name: str  # canonical name (as NVIDIA's CUDA GPUs page writes it)
    nvml_names: tuple[str, ...]  # names NVML / nvidia-smi report for it
    aliases: tuple[str, ...]  # other names people use for it ("H100 SXM", "DGX Spark")
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
class KernelSet:
    """Kernel sets (fatbins: one compilation unit's kernels, loaded as one module) of a build that
    carry the same SASS and PTX lists, and how many there are (read from the wheel's fatbins)."""

    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    sets: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Compiler:
    """The compiler an XLA framework runs at run time, as read from its wheels: the sm targets of
    its NVPTX backend (names in the binary) and the requirement that brings its ptxas."""

    runs: str  # "always" (JAX: every jitted function) | "on-request" (TensorFlow: jit_compile)
    targets: tuple[str, ...]  # compute capabilities the NVPTX backend names
    ptxas: str | None  # e.g. "nvidia-cuda-nvcc-cu12==12.5.82"; None: the system's ptxas
    ptxas_cuda: str | None = None  # the CUDA X.Y of the ptxas that installs (set at load)


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
    ptx_isa: str | None = None  # newest PTX ISA the build's wheels carry (None: not read from them)
    # the wheels the arch facts were read from ("FILE sha256:HEX; ..."); None: curated by hand
    arch_source: str | None = None
    kernel_sets: tuple[KernelSet, ...] = ()  # () : not read (SASS taken as covering every kernel)
    compiler: Compiler | None = None  # the run-time compiler of an XLA framework; None: none read


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


# --------------------------------------------------------------------------- matrix: PTX and known-bad


@dataclass(frozen=True, slots=True, kw_only=True)
class PtxIsa:
    """A PTX ISA version and the CUDA release that introduced it (ptx_isa.yaml)."""

    isa: str
    cuda: str


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownBad:
    """A build that fails on some GPUs although its arch lists say it should run (known_bad.yaml)."""

    framework: str
    versions: str  # PEP 440 specifier on the release ("" = all)
    variants: tuple[str, ...]  # () = every variant
    ccs: tuple[str, ...]  # compute capabilities it fails on
    path: str  # "ptx": fails when the GPU runs it through PTX JIT | "any"
    reason: str
    issues: tuple[str, ...]  # the reports (URLs)


# --------------------------------------------------------------------------- matrix: platforms


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformBuild:
    """A framework build as published for a platform other than linux/amd64 (platforms.yaml)."""

    platform: str  # linux/arm64
    framework: str
    versions: str  # PEP 440 specifier on the release
    variant: str  # the variant of frameworks/*.yaml it is the platform's build of
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    archs_from_default: bool  # the arch lists were not read for this platform: linux/amd64's are taken
    index_url: str | None  # where pip finds it (None: PyPI) when `own_index`; else the variant's
    own_index: bool
    python: str | None  # PEP 440 range of the CPython wheels when it differs from the release's
    wheels: tuple[str, ...]  # "FILE sha256:HEX" read, where one was
    source: str
    # generated rows (generated/arm64/NAME.yaml, `matrix refresh`): read from this platform's wheel,
    # they win over the curated rows of platforms.yaml; these facts are the wheel's own
    generated: bool = False
    ptx_isa: str | None = None
    kernel_sets: tuple[KernelSet, ...] = ()
    compiler: Compiler | None = None
    cuda: str | None = None  # from the wheel's nvidia-* requirements, where they name it
    cudnn: str | None = None
    nccl: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformAbsence:
    """Builds known not to exist for a platform, and why (platforms.yaml `absent`)."""

    platform: str
    framework: str
    versions: str
    variants: tuple[str, ...]  # () = every build with CUDA
    reason: str
    source: str
    # read from the index (generated/arm64/NAME.yaml `missing`: no wheel of the platform for this
    # release): it also rules out a curated build of platforms.yaml that says otherwise
    generated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformGpu:
    """A GPU model that only exists in hosts of one platform (platforms.yaml `gpus`)."""

    model: str  # GpuModel.name
    platform: str
    unsupported: str | None  # why no stack is given for it at all (Jetson on L4T); None: supported
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformImages:
    """Which base images are published for a platform (platforms.yaml `images`)."""

    platform: str
    slim_os: tuple[str, ...]  # OS of the python:X.Y-slim-* bases
    cuda_os: tuple[str, ...]  # OS of the nvidia/cuda bases
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformFacts:
    builds: tuple[PlatformBuild, ...] = ()
    absent: tuple[PlatformAbsence, ...] = ()
    gpus: tuple[PlatformGpu, ...] = ()
    images: tuple[PlatformImages, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class InstallAnswer:
    """Whether one install set (a framework with its extras and companions, pinned) resolves to
    wheels for one Python and platform: uv's answer from the index metadata (installable.yaml)."""

    requirements: tuple[str, ...]  # sorted pip requirements, e.g. ("tensorflow[and-cuda]==2.14.0",)
    index_url: str | None  # the framework's extra index (torch's); None: PyPI alone
    python: str  # X.Y
    platform: str  # linux/amd64 | linux/arm64 (Docker's spelling)
    ok: bool
    why: str  # "" when ok, else "tensorrt==8.5.3.1 has no wheel for cp311 manylinux x86_64"
    source: str  # how and when it was answered ("uv 0.9.x pip compile, PyPI, 2026-12-04")


@dataclass(frozen=True, slots=True, kw_only=True)
class Matrix:
    cuda: CudaMatrix
    gpus: GpuMatrix
    frameworks: tuple[FrameworkMatrix, ...]
    base_images: tuple[BaseImage, ...]
    # file name -> reviewed date, for `matrix check` and provenance in stacks
    reviewed: tuple[tuple[str, str], ...] = ()
    ptx_isa: tuple[PtxIsa, ...] = ()
    known_bad: tuple[KnownBad, ...] = ()
    platforms: PlatformFacts = PlatformFacts()
    # uv's answers on whole install sets (generated/installable.yaml, then the user's live ones)
    installable: tuple[InstallAnswer, ...] = ()
