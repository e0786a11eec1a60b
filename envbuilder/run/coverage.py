"""Does an image's certificate cover running it HERE? One pure function per refusal reason.

Each check takes (certificate or None, the image as inspected, this host) and returns a Refusal
or None; `check_run` applies them all. `envbuilder run` refuses on any Refusal unless --force.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envbuilder.archs import kernel_for, matrix_targets
from envbuilder.certify.certificate import Certificate, verify_certificate
from envbuilder.certify.record import StackRecord
from envbuilder.engine import ImageInfo
from envbuilder.errors import CertificateRefusedError
from envbuilder.host import GpuInfo
from envbuilder.image.metadata import image_env
from envbuilder.require_cuda import Properties, image_requirements
from envbuilder.versions import parse_cc

CERTIFY_HINT = "re-certify the image on this host: envbuilder certify {ref}"
REBUILD_HINT = "rebuild for this host: envbuilder build SPEC --driver {driver}{gpus}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunHost:
    """This host as `run` sees it: the probe's driver and GPUs, and the GPU access the container
    gets (`access` "none": no GPU is handed in; `requested` is what the user asked for)."""

    driver: str | None
    cuda_driver: str | None  # newest CUDA the driver supports ("13.0"); None when unknown
    gpus: tuple[GpuInfo, ...] = ()
    access: str = "none"  # toolkit | cdi | devices | none
    requested: str = "auto"  # auto | toolkit | cdi | devices | none


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    reason: str  # no-certificate | tampered | image-mismatch | failed | cpu-only | no-gpu | gpu-arch
    # | gpu-model | driver-too-old | require-cuda
    message: str
    hint: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "hint": self.hint}


Check = Callable[[Certificate | None, ImageInfo, RunHost], Refusal | None]


def image_ref(image: ImageInfo) -> str:
    """The name a user would type for the image: its first tag, else its ID."""
    return image.tags[0] if image.tags else image.id


def short_id(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]


def _rebuild_hint(host: RunHost) -> str:
    gpus = "".join(f' --gpu "{g.name}"' for g in host.gpus)
    return REBUILD_HINT.format(driver=host.driver or "DRIVER", gpus=gpus)


def _gpu_cert(cert: Certificate) -> bool:
    return cert.verdict == "certified"


def _gpu_stack(cert: Certificate | None) -> StackRecord | None:
    """The certificate's stack when it is a CUDA build (the GPU checks apply), else None."""
    stack = cert.image.stack if cert is not None else None
    return stack if stack is not None and stack.cuda else None


# --------------------------------------------------------------------------- the checks


def check_present(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """No certificate in the store for this image ID (never certified, or rebuilt since)."""
    if cert is not None:
        return None
    return Refusal(
        reason="no-certificate",
        message=f"no certificate for image {image.id} ({image_ref(image)})",
        hint=CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_intact(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The content hash (and section hashes) still match: nobody edited the certificate."""
    if cert is None:
        return None
    problems = verify_certificate(cert)
    if not problems:
        return None
    return Refusal(
        reason="tampered",
        message="the certificate failed verification: " + "; ".join(problems),
        hint=CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_image(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The certificate names this exact image ID (not one it was moved from)."""
    if cert is None:
        return None
    have = cert.image.id
    if have.removeprefix("sha256:") == image.id.removeprefix("sha256:"):
        return None
    return Refusal(
        reason="image-mismatch",
        message=f"the certificate is for image {have or '(none)'}, but {image_ref(image)} is {image.id}",
        hint=CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_verdict(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The image passed certification (a 'failed' certificate is evidence against it)."""
    if cert is None or cert.verdict != "failed":
        return None
    why = cert.verdict_reason or "see the report"
    return Refusal(
        reason="failed",
        message=f"the image FAILED certification ({why}), issued {cert.issued_at or '?'}",
        hint=f"see what failed: envbuilder report {cert.content_hash or 'CERT'}; fix it, then "
        + CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_cpu_only(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """A CPU-only certificate does not cover a run that is given GPUs."""
    if cert is None or cert.verdict != "certified-cpu-only" or host.access == "none":
        return None
    return Refusal(
        reason="cpu-only",
        message="the image is certified for the CPU only (no GPU took part in certification), but "
        f"this run gets GPUs ({host.access} access)",
        hint=CERTIFY_HINT.format(ref=image_ref(image)) + " (with a GPU), or run on the CPU with "
        "--gpu-access none",
    )


def check_gpu_present(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """A GPU certificate, but this host offers the container no GPU (unless --gpu-access none)."""
    if cert is None or not _gpu_cert(cert) or host.access != "none" or host.requested == "none":
        return None
    certified = ", ".join(str(g.name) for g in cert.host.gpus) or "a GPU"
    found = f"{len(host.gpus)} GPU(s) but no GPU access mode" if host.gpus else "no NVIDIA GPU"
    return Refusal(
        reason="no-gpu",
        message=f"the image is certified on {certified}, but this host offers {found}",
        hint="`envbuilder doctor` says why; run on the CPU anyway with --gpu-access none",
    )


def check_gpu_arch(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The stack's SASS/PTX covers the compute capability of every GPU handed in."""
    stack = _gpu_stack(cert)
    if stack is None or host.access == "none":
        return None
    sass, ptx = stack.sass, stack.ptx
    targets = matrix_targets(sass, ptx)
    bad = [g for g in host.gpus if g.cc and kernel_for(parse_cc(g.cc), targets) is None]
    if not bad:
        return None
    build = f"{stack.framework or '?'} {stack.version or '?'}+{stack.variant or '?'}"
    who = ", ".join(f"{g.name} (compute capability {g.cc})" for g in bad)
    return Refusal(
        reason="gpu-arch",
        message=f"{build} has kernels for sm {' '.join(sass) or '-'} and PTX for {' '.join(ptx) or '-'}: "
        f"nothing runs on {who}",
        hint=_rebuild_hint(host),
    )


def check_gpu_model(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """Every GPU handed in is a model the image was certified on (same NVML name)."""
    if cert is None or host.access == "none" or not _gpu_cert(cert):
        return None
    certified = {str(g.name) for g in cert.host.gpus}
    new = sorted({g.name for g in host.gpus} - certified)
    if not new:
        return None
    return Refusal(
        reason="gpu-model",
        message=f"certified on {', '.join(sorted(certified)) or 'no GPU'}; this host's "
        f"{', '.join(new)} was not part of that certification",
        hint=CERTIFY_HINT.format(ref=image_ref(image)),
    )


def _version(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None


def check_min_driver(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The host driver is at least the stack's minimum driver."""
    stack = cert.image.stack if cert is not None else None
    floor = _version(stack.min_driver) if stack is not None else None
    if stack is None or host.access == "none" or floor is None:
        return None
    have = _version(host.driver)
    if have is not None and have >= floor:
        return None
    return Refusal(
        reason="driver-too-old",
        message=f"stack {stack.id or '?'} needs NVIDIA driver >= {stack.min_driver}; this "
        f"host has {host.driver or 'no driver'}",
        hint=f"upgrade the driver to >= {stack.min_driver}, or {_rebuild_hint(host)}",
    )


# --------------------------------------------------------------------------- NVIDIA_REQUIRE_CUDA


def check_require_cuda(cert: Certificate | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The image's NVIDIA_REQUIRE_* requirements (require_cuda.image_requirements: none when
    NVIDIA_DISABLE_REQUIRE is set) hold for every GPU handed in, as the Container Toolkit checks
    them at start-up: cuda>=X.Y against the driver's CUDA version, or a brand/driver exemption.
    A driver or CUDA version this host could not read is not taken as new enough: as in the
    toolkit's evaluator, an unknown version sorts below every version."""
    if host.access == "none":
        return None
    gpus: Sequence[GpuInfo | None] = host.gpus or (None,)
    for req in image_requirements(image_env(image)):
        refused = [g for g in gpus if not req.admits(Properties.of(host.cuda_driver, host.driver, g))]
        if not refused:
            continue
        shown = req.text if len(req.text) <= 80 else req.text[:77] + "..."
        if req.invalid is not None:
            message = (
                f"the image's {req.name}={shown} is malformed ({req.invalid}): the Container Toolkit "
                "refuses to start it"
            )
        elif host.cuda_driver is None:
            message = (
                f"the image requires {shown} ({req.name}); this host's CUDA version is unknown "
                f"(driver {host.driver or 'unknown'}), so the requirement cannot be shown to hold"
            )
        else:
            brands = ", ".join(sorted({f"brand={g.brand or 'unknown'}" for g in refused if g is not None}))
            message = (
                f"the image requires {shown} ({req.name}); driver {host.driver} supports "
                f"CUDA {host.cuda_driver} and no brand/driver exemption matches ({brands or 'no GPU'})"
            )
        return Refusal(
            reason="require-cuda", message=message, hint=f"upgrade the driver, or {_rebuild_hint(host)}"
        )
    return None


CHECKS: tuple[Check, ...] = (
    check_present,
    check_intact,
    check_image,
    check_verdict,
    check_cpu_only,
    check_gpu_present,
    check_gpu_arch,
    check_gpu_model,
    check_min_driver,
    check_require_cuda,
)


def check_run(cert: Certificate | None, image: ImageInfo, host: RunHost) -> list[Refusal]:
    """Every reason the certificate does not cover this run (empty: covered). Pure."""
    return [r for check in CHECKS if (r := check(cert, image, host)) is not None]


def choose_certificate(
    certs: Sequence[Certificate], image: ImageInfo, host: RunHost
) -> tuple[Certificate | None, list[Refusal]]:
    """The first (newest) certificate that covers this run, with no refusals; when none does,
    the newest and its refusals (none at all: the no-certificate refusal). Pure. An image
    certified on several hosts (node classes) runs on any of them."""
    for cert in certs:
        if not check_run(cert, image, host):
            return cert, []
    first = certs[0] if certs else None
    return first, check_run(first, image, host)


class RefusedError(CertificateRefusedError):
    """Raised while finding certificates when the reasons are already known (signed
    attestations that do not hold); `run` turns `refusals` into its refusal, or, with --force,
    its warnings."""

    def __init__(self, refusals: Sequence[Refusal]) -> None:
        self.refusals = tuple(refusals)
        err = refusal_error(self.refusals)
        super().__init__(err.message, hint=err.hint)


def refusal_error(refusals: Sequence[Refusal]) -> CertificateRefusedError:
    """One error naming every reason, with every distinct hint."""
    hints = list(dict.fromkeys(r.hint for r in refusals))
    msg = "; ".join(f"{r.message} [{r.reason}]" for r in refusals)
    return CertificateRefusedError(
        f"refusing to run: {msg}",
        hint="; or ".join(hints) + "; or pass --force to run anyway (recorded in the run log)",
    )


def describe_coverage(cert: Certificate) -> dict[str, Any]:
    """What a valid certificate lets `run` start, in the terms of the checks above: the GPU
    models (check_gpu_model), the driver floor (check_min_driver) and the archs of the stack
    (check_gpu_arch); a CPU-only or failed certificate covers no GPU run. Pure."""
    stack, host, verdict = cert.image.stack, cert.host, cert.verdict
    gpus = [{"name": g.name, "cc": g.cc} for g in host.gpus]
    return {
        "verdict": verdict,
        "gpu_runs": verdict == "certified",
        "cpu_runs": verdict in ("certified", "certified-cpu-only"),
        "gpus": gpus if verdict == "certified" else [],
        "certified_driver": host.driver,
        "min_driver": stack.min_driver if stack is not None and verdict == "certified" else None,
        "gpu_access": host.gpu_access,
        "archs": {"sass": list(stack.sass), "ptx": list(stack.ptx)} if stack is not None else {},
        "stack": stack.id if stack is not None else None,
        "host_fingerprint": host.fingerprint,
    }
