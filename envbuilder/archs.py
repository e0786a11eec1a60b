"""Which kernel of a build runs on a GPU: the one arch-coverage rule (resolve, run, doctor and
certify call it; the harness keeps a stdlib copy in harness/kernels.py, driven by the same case
table in tests/data/arch_cases.yaml).

A build target is SASS (a cubin, `sm_XY`) or PTX (`compute_XY`), optionally arch-specific (`a`)
or family-specific (`f`). NVIDIA's binary-compatibility rules (CUDA C++ Programming Guide,
"Binary Compatibility" and "Feature Availability"):
  - SASS sm_XY runs on compute capability X.Z for Z >= Y (same major only); sm_XYa on X.Y only;
    sm_XYf on the same family, which is again X.Z for Z >= Y;
  - PTX compute_XY is JIT-compiled by the driver for any compute capability >= X.Y;
    compute_XYa only for X.Y itself, compute_XYf only for X.Z with Z >= Y.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["sass", "ptx"]
_NAMED = re.compile(r"^(sm|compute)_([0-9]+)([0-9])([af]?)$")
_DOTTED = re.compile(r"^([0-9]+)\.([0-9])([af]?)$")


@dataclass(frozen=True, slots=True)
class Target:
    """One compiled target of a build: SASS or PTX for a compute capability."""

    kind: Kind
    cc: tuple[int, int]
    suffix: str = ""  # "" | "a" (arch-specific) | "f" (family-specific)

    @property
    def name(self) -> str:
        """'sm_90a', 'compute_120': the spelling of nvcc and cuobjdump."""
        prefix = "sm" if self.kind == "sass" else "compute"
        return f"{prefix}_{self.cc[0]}{self.cc[1]}{self.suffix}"

    @property
    def dotted(self) -> str:
        """'9.0': the spelling of the matrix files."""
        return f"{self.cc[0]}.{self.cc[1]}{self.suffix}"

    def runs_on(self, gpu: tuple[int, int]) -> bool:
        """Does this target run on a GPU of compute capability `gpu` (the rule above)?"""
        if self.suffix == "a":
            return self.cc == gpu
        if self.kind == "sass" or self.suffix == "f":
            return self.cc[0] == gpu[0] and self.cc[1] <= gpu[1]
        return self.cc <= gpu


def parse_target(text: str, dotted_kind: Kind = "sass") -> Target | None:
    """'sm_90a', 'compute_120', or the dotted '9.0' (read as `dotted_kind`; TensorFlow's build info
    and the matrix spell SASS that way). None for anything else."""
    s = text.strip()
    m = _NAMED.match(s)
    if m:
        kind: Kind = "sass" if m.group(1) == "sm" else "ptx"
        return Target(kind, (int(m.group(2)), int(m.group(3))), m.group(4))
    m = _DOTTED.match(s)
    if m:
        return Target(dotted_kind, (int(m.group(1)), int(m.group(2))), m.group(3))
    return None


def matrix_targets(sass: Iterable[str], ptx: Iterable[str]) -> tuple[Target, ...]:
    """A matrix row's dotted SASS and PTX lists as targets (unparsable entries are dropped; the
    matrix loader has refused them already)."""
    found = [parse_target(s, "sass") for s in sass] + [parse_target(p, "ptx") for p in ptx]
    return tuple(t for t in found if t is not None)


def parse_targets(entries: Iterable[str], dotted_kind: Kind = "sass") -> tuple[Target, ...]:
    """Arch-list strings ('sm_90', 'compute_90', '8.0') as targets, unparsable ones dropped."""
    found = (parse_target(e, dotted_kind) for e in entries)
    return tuple(t for t in found if t is not None)


def kernel_for(gpu: tuple[int, int], targets: Iterable[Target]) -> Target | None:
    """The kernel a GPU of compute capability `gpu` runs from a build with `targets`: the newest
    SASS that runs on it, else the newest PTX the driver can JIT for it; None when there is none
    ("no kernel image is available for execution on the device")."""
    fitting = [t for t in targets if t.runs_on(gpu)]
    sass = [t for t in fitting if t.kind == "sass"]
    pool = sass or fitting
    return max(pool, key=lambda t: (t.cc, t.suffix)) if pool else None


def describe(targets: Iterable[Target]) -> str:
    """'SASS for 7.5, 8.0 and PTX for 12.0' (the wording of rejections and refusals)."""
    ts = list(targets)
    sass = ", ".join(t.dotted for t in ts if t.kind == "sass") or "none"
    ptx = ", ".join(t.dotted for t in ts if t.kind == "ptx") or "none"
    return f"SASS for {sass} and PTX for {ptx}"
