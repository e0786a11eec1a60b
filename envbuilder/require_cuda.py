"""NVIDIA_REQUIRE_CUDA as the NVIDIA Container Toolkit reads it: the one parser and evaluator.
resolve checks a base image's requirement (written from the matrix), run checks an image's own.

The grammar and semantics follow nvidia-container-toolkit, internal/requirements/constraints
(factory.go, binary.go, logical.go, property.go):
  - the value is a list of terms separated by spaces, OR-ed; a term is factors separated by commas,
    AND-ed; a factor is PROPERTY OPERATOR VALUE, the operator the first of != <= >= = < > that
    the text after the property starts with;
  - the properties are `cuda` (the CUDA version the driver supports), `driver` (its version) and
    `arch` (the GPU's compute capability), compared as semantic versions (12.8 is 12.8.0; a
    property whose value is unknown sorts below every version), and `brand` (NVML's brand, lower
    case: tesla, geforce, nvidiartx, ...), compared as a string;
  - a factor naming another property is skipped, and a term left without factors dropped; a
    factor without an operator, or a version that is not X, X.Y or X.Y.Z, makes the whole
    requirement invalid: the toolkit then refuses to start the container.
The toolkit reads the brand and compute capability of GPU 0 only; envbuilder evaluates every GPU
a container gets, so a mixed host is refused when any of its GPUs would be.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

OPERATORS = ("!=", "<=", ">=", "=", "<", ">")  # the toolkit's order: "<=" before "<"
VERSION_PROPERTIES = ("cuda", "driver", "arch")
STRING_PROPERTIES = ("brand",)
_VERSION = re.compile(r"^(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*)){0,2}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Properties:
    """What a requirement is checked against: the host's driver and one GPU (None: unknown)."""

    cuda: str | None = None  # "13.0": the newest CUDA the driver supports
    driver: str | None = None  # "580.159.04"
    arch: str | None = None  # "9.0"
    brand: str | None = None  # "tesla"

    def value(self, prop: str) -> str | None:
        return {"cuda": self.cuda, "driver": self.driver, "arch": self.arch, "brand": self.brand}[prop]

    @classmethod
    def of(cls, cuda: str | None, driver: str | None, gpu: Gpu | None) -> Properties:
        """The properties of one GPU (None: a host without one) on this driver."""
        return cls(
            cuda=cuda,
            driver=driver,
            arch=gpu.cc if gpu is not None else None,
            brand=gpu.brand if gpu is not None else None,
        )


class Gpu(Protocol):
    """What the evaluator reads of a GPU (host.HostGpu and host.GpuInfo both have it)."""

    @property
    def cc(self) -> str | None: ...
    @property
    def brand(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Factor:
    """One comparison: `brand=tesla`, `driver>=535`, `cuda>=12.8`."""

    prop: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.prop}{self.op}{self.value}"

    def holds(self, props: Properties) -> bool:
        c = _compare(self.prop, props.value(self.prop), self.value)
        return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[self.op]


Term = tuple[Factor, ...]  # factors AND-ed


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirement:
    """A parsed NVIDIA_REQUIRE_CUDA: terms OR-ed (none: always met), or why it is invalid."""

    text: str
    name: str = "NVIDIA_REQUIRE_CUDA"  # the variable it came from (CUDA_VERSION: a legacy image)
    terms: tuple[Term, ...] = ()
    invalid: str | None = None  # why the toolkit would refuse every container of the image

    def matching_term(self, props: Properties) -> Term | None:
        """The first term that holds (an empty term when there are none), else None."""
        if self.invalid is not None:
            return None
        if not self.terms:
            return ()
        return next((t for t in self.terms if all(f.holds(props) for f in t)), None)

    def admits(self, props: Properties) -> bool:
        """Would the toolkit start a container of this image with these properties?"""
        return self.matching_term(props) is not None


@functools.lru_cache(maxsize=512)
def parse_require_cuda(text: str, name: str = "NVIDIA_REQUIRE_CUDA") -> Requirement:
    """Parse NVIDIA_REQUIRE_CUDA, or another NVIDIA_REQUIRE_* variable `name` (never raises: a
    malformed value is an invalid Requirement). Memoised: resolve asks the same few texts once per
    candidate base image (130 times for one H200 resolve, 2026-12-05), and a Requirement is frozen."""
    terms: list[Term] = []
    for raw_term in text.split(" "):
        factors: list[Factor] = []
        for raw in raw_term.split(","):
            if not raw.strip():
                continue
            end = next((i for i, c in enumerate(raw) if c in "<>=!"), -1)
            if end < 0:
                return Requirement(text=text, name=name, invalid=f"invalid constraint {raw!r}: no operator")
            prop, rest = raw[:end], raw[end:]
            if prop not in VERSION_PROPERTIES + STRING_PROPERTIES:
                continue  # the toolkit skips properties it does not know
            op = next((o for o in OPERATORS if rest.startswith(o)), "")
            value = rest[len(op) :]
            # fullmatch: `$` would take "12.0\n" (a value ending in a newline), which the toolkit's
            # semver.IsValid refuses, making the whole requirement invalid.
            if not op or (prop in VERSION_PROPERTIES and not _VERSION.fullmatch(value)):
                return Requirement(text=text, name=name, invalid=f"invalid constraint {raw!r}")
            factors.append(Factor(prop, op, value))
        if factors:
            terms.append(tuple(factors))
    return Requirement(text=text, name=name, terms=tuple(terms))


def require_cuda_text(cuda: str, exemptions: tuple[tuple[str, int], ...] = ()) -> str:
    """The value the nvidia/cuda images write: `cuda>=X.Y` then one
    `brand=B,driver>=N,driver<N+1` per (brand, driver branch) exemption."""
    terms = [f"cuda>={cuda}", *(f"brand={b},driver>={n},driver<{n + 1}" for b, n in exemptions)]
    return " ".join(terms)


def _compare(prop: str, have: str | None, want: str) -> int:
    """-1, 0 or 1 as the toolkit's property compares: brand as a string (unknown is ""), the rest
    as semantic versions."""
    if prop in STRING_PROPERTIES:
        a = have or ""
        return (a > want) - (a < want)
    x, y = _version_key(have), _version_key(want)
    return (x > y) - (x < y)


def _version_key(text: str | None) -> tuple[int, ...]:
    """A semantic-version sort key: X.Y is X.Y.0; unknown or malformed sorts below every version
    (golang.org/x/mod/semver orders an invalid version before all valid ones)."""
    parts = (text or "").strip().split(".")
    # ASCII digits: "²".isdigit() holds, and int("²") raises (semver reads 0-9 only)
    if not all(p.isascii() and p.isdigit() for p in parts) or not 1 <= len(parts) <= 3:
        return (-1,)
    nums = [int(p) for p in parts]  # the driver's "04" is 4, as the toolkit normalises it
    return tuple(nums + [0] * (3 - len(nums)))


TRUE_WORDS = ("1", "t", "T", "TRUE", "true", "True")  # Go's strconv.ParseBool


def image_requirements(env: Mapping[str, str]) -> tuple[Requirement, ...]:
    """Every requirement the toolkit checks for an image with this environment, all of which must
    hold (internal/config/image/cuda_image.go GetRequirements): each NVIDIA_REQUIRE_* variable but
    NVIDIA_REQUIRE_JETPACK; for a legacy image (CUDA_VERSION set, NVIDIA_REQUIRE_CUDA not)
    cuda>=X.Y of CUDA_VERSION. None at all when NVIDIA_DISABLE_REQUIRE is true."""
    if env.get("NVIDIA_DISABLE_REQUIRE", "") in TRUE_WORDS:
        return ()
    out = [
        parse_require_cuda(value, name)
        for name, value in sorted(env.items())
        if name.startswith("NVIDIA_REQUIRE_") and not name.startswith("NVIDIA_REQUIRE_JETPACK")
    ]
    legacy = env.get("CUDA_VERSION", "")
    if legacy and not env.get("NVIDIA_REQUIRE_CUDA"):
        out.append(parse_require_cuda("cuda>=" + ".".join(legacy.split(".")[:2]), "CUDA_VERSION"))
    return tuple(out)
