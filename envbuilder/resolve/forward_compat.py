"""CUDA forward compatibility (the cuda-compat package): when a build whose driver floor the host's
driver is below may still run, because a newer user-mode driver (libcuda) ships in the image.

NVIDIA's rule (https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html):
forward compatibility "is applicable only for systems with NVIDIA Data Center GPUs, select NGC
Server Ready SKUs of RTX cards, Jetson boards" (cuda.yaml `forward_compat.segments`), through the
package cuda-compat-<major>-<minor>, which the nvidia/cuda base images install; which older
driver branches each image's package supports is what its NVIDIA_REQUIRE_CUDA exempts for
data-center brands (base_images.yaml `require.branches`). The package brings the user-mode driver
of its CUDA release (cuda.yaml `min_driver` of that release), so a build needing more than that
(PTX of a newer ISA) is not helped.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from envbuilder.host.model import HostGpu
from envbuilder.matrix.model import BaseImage, Matrix
from envbuilder.resolve.drivers import first_release
from envbuilder.versions import driver_branch, major_minor

FWD_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"
COMPAT_DIR = "/usr/local/cuda/compat"  # where cuda-compat-X-Y puts libcuda ([NV-FWD])


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardCompat:
    """How a stack runs through forward compatibility: the package and the user-mode driver it
    brings (hosts with an older driver use its libraries, newer ones their own)."""

    package: str  # cuda-compat-13-0
    driver: str  # the driver its libcuda is: 580.65.06
    min_driver: str  # the lowest branch the image's package supports: "535"
    note: str


def ineligible_gpus(matrix: Matrix, gpus: tuple[HostGpu, ...]) -> tuple[HostGpu, ...]:
    """The GPUs forward compatibility does NOT apply to (empty: it may apply to all of them)."""
    segments = matrix.cuda.forward_compat_segments
    return tuple(g for g in gpus if g.segment not in segments)


def not_applicable(matrix: Matrix, gpus: tuple[HostGpu, ...]) -> str:
    """Why --forward-compat cannot help these GPUs."""
    others = ineligible_gpus(matrix, gpus)
    named = ", ".join(f"{g.name} ({g.segment or 'unknown class'})" for g in others)
    return (
        f"--forward-compat does not apply to {named}: NVIDIA's forward compatibility (cuda-compat) "
        f"supports data-center GPUs, select NGC-ready RTX and Jetson only ({FWD_DOC})"
    )


def through_image(
    matrix: Matrix, image: BaseImage, driver: str, floor: str, gpus: tuple[HostGpu, ...]
) -> ForwardCompat | str:
    """The forward compatibility `image`'s cuda-compat gives a host with `driver` that is below
    `floor`, or why it gives none."""
    if image.cuda is None:  # pragma: no cover - system-cuda images always have a CUDA
        return "a CPU image has no cuda-compat"
    branches = sorted({r.branch for r in image.require_rules})
    branch = driver_branch(driver)
    package = f"cuda-compat-{major_minor(image.cuda).replace('.', '-')}"
    if branch not in branches:
        listed = ", ".join(f"R{b}" for b in branches) or "none"
        return (
            f"the {package} of {image.ref} supports driver branches {listed} (its NVIDIA_REQUIRE_CUDA), "
            f"not R{branch}"
        )
    release = next((r for r in matrix.cuda.releases if r.version == image.cuda), None)
    compat_driver = (release or first_release(matrix, image.cuda)).min_driver
    if Version(compat_driver) < Version(floor):
        return f"{package} brings driver {compat_driver}, below the {floor} this build needs"
    names = ", ".join(g.name for g in gpus)
    return ForwardCompat(
        package=package,
        driver=compat_driver,
        min_driver=str(branches[0]),
        note=(
            f"runs through CUDA forward compatibility: {package} (the user-mode driver "
            f"{compat_driver}, in {COMPAT_DIR}) on the R{branch} driver of {names}; the image's "
            f"entrypoint uses it while the host driver is older than {compat_driver} ({FWD_DOC})"
        ),
    )
