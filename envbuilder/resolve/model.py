"""What the resolver takes and gives: a Request, and a Resolution with the chosen Stack, the
runners-up and a Rejection per refused candidate. `Stack.to_dict()` is the one JSON schema used
by `resolve --json`, the lock file, image labels and certificates.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from envbuilder.errors import EnvbuilderError
from envbuilder.host.model import Host
from envbuilder.matrix.model import Flavor, Strategy
from envbuilder.platforms import DEFAULT_PLATFORM, Platform, platform_of_machine
from envbuilder.typed import STR, check_document, list_of, map_of, obj, opt


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
    # linux/amd64 | linux/arm64; None: the host's (Host.platform), else the platform the named
    # GPUs exist in, else linux/amd64 (resolver.effective_platform). A Resolution's request has it.
    platform: Platform | None = None

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
        } | ({"platform": self.platform} if self.platform else {})


# --------------------------------------------------------------------------- resolver output

_MAYBE_STR = opt(STR)
# Stack.to_dict()'s field types: what Stack.from_dict checks before it reads a lock or a label.
STACK_SHAPE = obj(
    {
        "id": STR,
        "framework": obj(
            {"name": STR, "version": STR, "variant": STR}, required=("name", "version", "variant")
        ),
        **dict.fromkeys(
            ("cuda", "cudnn", "nccl", "flavor", "min_driver", "require_cuda", "index_url"), _MAYBE_STR
        ),
        **dict.fromkeys(("python", "base_image", "os", "strategy", "python_install"), STR),
        "archs": obj({"sass": list_of(STR), "ptx": list_of(STR)}, required=("sass", "ptx")),
        "packages": list_of(STR),
        "companions": map_of(STR),
        "notes": list_of(STR),
        "forward_compat": opt(obj({"package": STR, "driver": STR}, required=("package", "driver"))),
        "platform": STR,
    },
    required=(
        "id",
        "framework",
        "python",
        "base_image",
        "os",
        "strategy",
        "archs",
        "packages",
        "python_install",
    ),
)


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
    # (cuda-compat package, the driver its libcuda is) when the stack runs through CUDA forward
    # compatibility (resolve/forward_compat.py); None otherwise, and then absent from to_dict()
    forward_compat: tuple[str, str] | None = None
    # the machine the image is for (envbuilder/platforms.py); absent from to_dict() for
    # linux/amd64, so stacks (ids, labels, lock hashes) from before the platform axis read the same
    platform: Platform = DEFAULT_PLATFORM

    def to_dict(self) -> dict[str, Any]:
        return (
            {
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
            | (
                {"forward_compat": {"package": self.forward_compat[0], "driver": self.forward_compat[1]}}
                if self.forward_compat
                else {}
            )
            | ({"platform": self.platform} if self.platform != DEFAULT_PLATFORM else {})
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stack:
        """Inverse of to_dict, every field type-checked (STACK_SHAPE). Raises WrongType (a
        ValueError) on a malformed dict (callers wrap it)."""
        check_document(d, STACK_SHAPE)
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
            forward_compat=(fc["package"], fc["driver"]) if (fc := d.get("forward_compat")) else None,
            # a lock or label written before the platform axis: its facts were linux/amd64's
            platform=_stack_platform(d.get("platform")),
        )


def _stack_platform(value: str | None) -> Platform:
    """A stack's platform as a lock or label has it; absent in those written before the platform
    axis, whose facts were linux/amd64's. Raises ValueError for one envbuilder does not know."""
    if value is None:
        return DEFAULT_PLATFORM
    found = platform_of_machine(value)
    if found is None:
        raise ValueError(f"stack platform {value!r} is not linux/amd64 or linux/arm64")
    return found


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
    python_reason: str = ""  # why the stack's Python, when the spec named none (image/python_pick.py)

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "schema_version": 1,
            "request": self.request.to_dict(),
            "host": self.host.to_dict(),
            "stack": self.stack.to_dict() if self.stack else None,
            "alternatives": [s.to_dict() for s in self.alternatives],
            "rejected": [r.to_dict() for r in self.rejected],
            "warnings": list(self.warnings),
        }
        if self.python_reason:
            doc["python_reason"] = self.python_reason
        return doc


def rejection_summary(resolution: Resolution) -> str:
    """'12 candidates rejected; arch: 8, driver: 4': why nothing fit, for one-line errors."""
    counts = Counter(r.component for r in resolution.rejected)
    parts = ", ".join(f"{c}: {n}" for c, n in counts.most_common())
    return f"{len(resolution.rejected)} candidates rejected; {parts}"


class NoCompatibleStackError(EnvbuilderError):
    """The resolver rejected every candidate stack; `resolution` holds every rejection (exit 4)."""

    exit_code = 4

    def __init__(self, resolution: Resolution, hint: str, *, file: str | None = None) -> None:
        req = resolution.request
        where = f"{file}: " if file else ""
        super().__init__(
            f"{where}no compatible {req.requirement or req.framework} stack for this host "
            f"({rejection_summary(resolution)})",
            hint,
            file=file,
        )
        self.resolution = resolution
