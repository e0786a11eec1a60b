"""Which kernel of a build runs on this GPU. Stdlib only (the harness never imports envbuilder):
a copy of envbuilder/archs.py's rule, held equal to it by the shared case table
tests/data/arch_cases.yaml (tests/unit/test_archs.py runs both copies, and their mutants).

SASS sm_XY runs on X.Z for Z >= Y (sm_XYa: X.Y only); PTX compute_XY JITs for any cc >= X.Y
(compute_XYa: X.Y only; compute_XYf: X.Z for Z >= Y).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

_NAMED = re.compile(r"^(sm|compute)_(\d+)(\d)([af]?)$")
_DOTTED = re.compile(r"^(\d+)\.(\d)([af]?)$")

# (kind "sass" | "ptx", (major, minor), suffix "" | "a" | "f")
if TYPE_CHECKING:  # typing.TypeAlias is 3.10+: the harness also runs on 3.8
    from typing import TypeAlias  # novermin (type checkers only)

Target: TypeAlias = "tuple[str, tuple[int, int], str]"


def parse_target(text: str, dotted_kind: str = "sass") -> Target | None:
    """'sm_90a' -> ('sass', (9, 0), 'a'); 'compute_120' -> ('ptx', (12, 0), ''); '8.0' -> dotted_kind."""
    s = text.strip()
    m = _NAMED.match(s)
    if m:
        return ("sass" if m.group(1) == "sm" else "ptx", (int(m.group(2)), int(m.group(3))), m.group(4))
    m = _DOTTED.match(s)
    if m:
        return (dotted_kind, (int(m.group(1)), int(m.group(2))), m.group(3))
    return None


def target_name(t: Target) -> str:
    kind, cc, suffix = t
    return f"{'sm' if kind == 'sass' else 'compute'}_{cc[0]}{cc[1]}{suffix}"


def runs_on(t: Target, gpu: tuple[int, int]) -> bool:
    kind, cc, suffix = t
    if suffix == "a":
        return cc == gpu
    if kind == "sass" or suffix == "f":
        return cc[0] == gpu[0] and cc[1] <= gpu[1]
    return cc <= gpu


def kernel_for(gpu: tuple[int, int], targets: Iterable[Target]) -> Target | None:
    """The newest SASS that runs on `gpu`, else the newest PTX that JITs for it, else None."""
    fitting = [t for t in targets if runs_on(t, gpu)]
    sass: list[Target] = [t for t in fitting if t[0] == "sass"]
    pool = sass or fitting
    return max(pool, key=lambda t: (t[1], t[2])) if pool else None


def arch_covered(arch_list: Iterable[str], cc: tuple[int, int]) -> tuple[bool, str]:
    """Does a build with these targets (torch.cuda.get_arch_list() spelling) run on cc? With how."""
    targets = [t for t in (parse_target(e) for e in arch_list) if t is not None]
    got = kernel_for(cc, targets)
    if got is None:
        return False, f"no SASS for sm_{cc[0]}{cc[1]} and no PTX <= compute_{cc[0]}{cc[1]}"
    if got[0] == "sass":
        return True, "SASS " + target_name(got)
    return True, f"PTX {target_name(got)} (JIT-compiled by the driver at first use)"
