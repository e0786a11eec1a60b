"""Does an image's certificate cover running it HERE? One pure function per refusal reason.

Each check takes (certificate or None, the image as inspected, this host) and returns a Refusal
or None; `check_run` applies them all. `envbuilder run` refuses on any Refusal unless --force.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envbuilder.archs import kernel_for, matrix_targets
from envbuilder.certify.certificate import verify_certificate
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


Check = Callable[[Mapping[str, Any] | None, ImageInfo, RunHost], Refusal | None]


def image_ref(image: ImageInfo) -> str:
    """The name a user would type for the image: its first tag, else its ID."""
    return image.tags[0] if image.tags else image.id


def short_id(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]


def _section(cert: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = cert.get(key)
    return value if isinstance(value, Mapping) else {}


def _stack(cert: Mapping[str, Any]) -> Mapping[str, Any]:
    return _section(_section(cert, "image"), "stack")


def _rebuild_hint(host: RunHost) -> str:
    gpus = "".join(f' --gpu "{g.name}"' for g in host.gpus)
    return REBUILD_HINT.format(driver=host.driver or "DRIVER", gpus=gpus)


def _gpu_cert(cert: Mapping[str, Any]) -> bool:
    return cert.get("verdict") == "certified"


# --------------------------------------------------------------------------- the checks


def check_present(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """No certificate in the store for this image ID (never certified, or rebuilt since)."""
    if cert is not None:
        return None
    return Refusal(
        reason="no-certificate",
        message=f"no certificate for image {image.id} ({image_ref(image)})",
        hint=CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_intact(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
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


def check_image(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The certificate names this exact image ID (not one it was moved from)."""
    if cert is None:
        return None
    have = str(_section(cert, "image").get("id") or "")
    if have.removeprefix("sha256:") == image.id.removeprefix("sha256:"):
        return None
    return Refusal(
        reason="image-mismatch",
        message=f"the certificate is for image {have or '(none)'}, but {image_ref(image)} is {image.id}",
        hint=CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_verdict(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The image passed certification (a 'failed' certificate is evidence against it)."""
    if cert is None or cert.get("verdict") != "failed":
        return None
    why = cert.get("verdict_reason") or "see the report"
    return Refusal(
        reason="failed",
        message=f"the image FAILED certification ({why}), issued {cert.get('issued_at', '?')}",
        hint=f"see what failed: envbuilder report {cert.get('content_hash', 'CERT')}; fix it, then "
        + CERTIFY_HINT.format(ref=image_ref(image)),
    )


def check_cpu_only(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """A CPU-only certificate does not cover a run that is given GPUs."""
    if cert is None or cert.get("verdict") != "certified-cpu-only" or host.access == "none":
        return None
    return Refusal(
        reason="cpu-only",
        message="the image is certified for the CPU only (no GPU took part in certification), but "
        f"this run gets GPUs ({host.access} access)",
        hint=CERTIFY_HINT.format(ref=image_ref(image)) + " (with a GPU), or run on the CPU with "
        "--gpu-access none",
    )


def check_gpu_present(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """A GPU certificate, but this host offers the container no GPU (unless --gpu-access none)."""
    if cert is None or not _gpu_cert(cert) or host.access != "none" or host.requested == "none":
        return None
    certified = ", ".join(str(g.get("name")) for g in _gpus(cert)) or "a GPU"
    found = f"{len(host.gpus)} GPU(s) but no GPU access mode" if host.gpus else "no NVIDIA GPU"
    return Refusal(
        reason="no-gpu",
        message=f"the image is certified on {certified}, but this host offers {found}",
        hint="`envbuilder doctor` says why; run on the CPU anyway with --gpu-access none",
    )


def check_gpu_arch(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The stack's SASS/PTX covers the compute capability of every GPU handed in."""
    stack = _stack(cert or {})
    if cert is None or host.access == "none" or not stack.get("cuda"):
        return None
    archs = _section(stack, "archs")
    sass = [str(a) for a in archs.get("sass", ())]
    ptx = [str(a) for a in archs.get("ptx", ())]
    targets = matrix_targets(sass, ptx)
    bad = [g for g in host.gpus if g.cc and kernel_for(parse_cc(g.cc), targets) is None]
    if not bad:
        return None
    fw = _section(stack, "framework")
    build = f"{fw.get('name', '?')} {fw.get('version', '?')}+{fw.get('variant', '?')}"
    who = ", ".join(f"{g.name} (compute capability {g.cc})" for g in bad)
    return Refusal(
        reason="gpu-arch",
        message=f"{build} has kernels for sm {' '.join(sass) or '-'} and PTX for {' '.join(ptx) or '-'}: "
        f"nothing runs on {who}",
        hint=_rebuild_hint(host),
    )


def _gpus(cert: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    gpus = _section(cert, "host").get("gpus")
    return [g for g in gpus if isinstance(g, Mapping)] if isinstance(gpus, list) else []


def check_gpu_model(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """Every GPU handed in is a model the image was certified on (same NVML name)."""
    if cert is None or host.access == "none" or not _gpu_cert(cert):
        return None
    certified = {str(g.get("name")) for g in _gpus(cert)}
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


def check_min_driver(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The host driver is at least the stack's minimum driver."""
    stack = _stack(cert or {})
    floor = _version(str(stack.get("min_driver") or ""))
    if cert is None or host.access == "none" or floor is None:
        return None
    have = _version(host.driver)
    if have is not None and have >= floor:
        return None
    return Refusal(
        reason="driver-too-old",
        message=f"stack {stack.get('id', '?')} needs NVIDIA driver >= {stack.get('min_driver')}; this "
        f"host has {host.driver or 'no driver'}",
        hint=f"upgrade the driver to >= {stack.get('min_driver')}, or {_rebuild_hint(host)}",
    )


# --------------------------------------------------------------------------- NVIDIA_REQUIRE_CUDA


def check_require_cuda(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> Refusal | None:
    """The image's NVIDIA_REQUIRE_* requirements (require_cuda.image_requirements: none when
    NVIDIA_DISABLE_REQUIRE is set) hold for every GPU handed in, as the Container Toolkit checks
    them at start-up: cuda>=X.Y against the driver's CUDA version, or a brand/driver exemption."""
    if host.access == "none" or host.cuda_driver is None:
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


def check_run(cert: Mapping[str, Any] | None, image: ImageInfo, host: RunHost) -> list[Refusal]:
    """Every reason the certificate does not cover this run (empty: covered). Pure."""
    return [r for check in CHECKS if (r := check(cert, image, host)) is not None]


def choose_certificate(
    certs: Sequence[Mapping[str, Any]], image: ImageInfo, host: RunHost
) -> tuple[Mapping[str, Any] | None, list[Refusal]]:
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


def describe_coverage(cert: Mapping[str, Any]) -> dict[str, Any]:
    """What a valid certificate lets `run` start, in the terms of the checks above: the GPU
    models (check_gpu_model), the driver floor (check_min_driver) and the archs of the stack
    (check_gpu_arch); a CPU-only or failed certificate covers no GPU run. Pure."""
    stack = _stack(cert)
    host = _section(cert, "host")
    gpus = [{"name": g.get("name"), "cc": g.get("cc")} for g in _gpus(cert)]
    verdict = cert.get("verdict")
    return {
        "verdict": verdict,
        "gpu_runs": verdict == "certified",
        "cpu_runs": verdict in ("certified", "certified-cpu-only"),
        "gpus": gpus if verdict == "certified" else [],
        "certified_driver": host.get("driver"),
        "min_driver": stack.get("min_driver") if verdict == "certified" else None,
        "gpu_access": host.get("gpu_access"),
        "archs": dict(_section(stack, "archs")),
        "stack": stack.get("id"),
        "host_fingerprint": host.get("fingerprint"),
    }
