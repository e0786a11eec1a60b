"""The kernel inventory judged for a host: does every CUDA library an image (or a host's Python)
carries have a kernel each GPU runs natively (SASS) or that this driver can JIT (PTX of an ISA the
driver supports)? certify and doctor both ask here. The inventory itself is read by the harness
(harness/inventory.py); the rules are envbuilder.archs' and the JIT floor of resolve.drivers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from packaging.version import InvalidVersion, Version

from envbuilder.archs import describe, kernel_for, parse_targets
from envbuilder.errors import MatrixError, UsageError
from envbuilder.harness.inventory import FRAMEWORK_OWNERS
from envbuilder.matrix import load_matrix
from envbuilder.matrix.model import Matrix
from envbuilder.resolve.drivers import jit_floor
from envbuilder.versions import parse_cc


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelVerdict:
    """Per GPU and library: what runs, and what cannot."""

    failures: tuple[str, ...]  # a GPU with no kernel it can run in a library, library named
    warnings: tuple[str, ...]  # PTX whose ISA could not be read, matrix vs inventory disagreements
    covered: tuple[str, ...]  # "libtorch_cuda.so: sm_90 on NVIDIA H200"


INVENTORY_STEP = "kernel_inventory"


def inventory_of(result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The kernel inventory a harness result carries (its kernel_inventory step's metrics)."""
    for step in result.get("steps") or ():
        if isinstance(step, Mapping) and step.get("name") == INVENTORY_STEP:
            metrics = step.get("metrics")
            if isinstance(metrics, Mapping) and isinstance(metrics.get("libraries"), list):
                return dict(metrics)
    return None


def _libraries(inventory: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    libs = inventory.get("libraries")
    return [lib for lib in libs if isinstance(lib, Mapping)] if isinstance(libs, list) else []


def _names(lib: Mapping[str, Any]) -> list[str]:
    ptx = [str(p.get("arch")) for p in lib.get("ptx") or () if isinstance(p, Mapping)]
    return [str(s) for s in lib.get("sass") or ()] + ptx


def _isa(lib: Mapping[str, Any], arch: str) -> str | None:
    for p in lib.get("ptx") or ():
        if isinstance(p, Mapping) and p.get("arch") == arch and p.get("isa"):
            return str(p["isa"])
    return None


def _newer(a: str, b: str | None) -> bool | None:
    """Whether version `a` is newer than `b`; None when either cannot be read."""
    try:
        return Version(a) > Version(b) if b else None
    except InvalidVersion:
        return None


def judge_inventory(
    matrix: Matrix, inventory: Mapping[str, Any], gpus: Sequence[tuple[str, str]], driver: str | None
) -> KernelVerdict:
    """For each GPU (name, compute capability X.Y) and each library of `inventory` with device
    code: a failure when none of its kernels runs on the GPU (a warning for a library that is not
    the framework's own: FRAMEWORK_OWNERS), or when the only one is PTX of an ISA
    newer than `driver` can JIT (ptx_isa.yaml); a warning when that ISA or the driver is unknown, or
    when a GPU's compute capability cannot be read (that GPU is not judged). Never raises."""
    failures: list[str] = []
    warnings: list[str] = []
    covered: list[str] = []
    for name, cc in gpus:
        sm = f"sm_{cc.replace('.', '')}"
        try:
            gpu = parse_cc(cc)
        except UsageError:  # a node's host record is the job's output: said, never raised
            warnings.append(
                f"{name}: compute capability {cc!r} could not be read: "
                "the kernel inventory is not judged for it"
            )
            continue
        for lib in _libraries(inventory):
            targets = parse_targets(_names(lib))
            if not targets:
                continue
            where = str(lib.get("library"))
            got = kernel_for(gpu, targets)
            if got is None:
                text = f"{where} has no kernel for {name} ({sm}): {describe(targets)}"
                if lib.get("owner") in FRAMEWORK_OWNERS:
                    failures.append(text)
                else:  # an nvidia-* wheel's or a system CUDA's library: the GPU steps decide
                    warnings.append(f"{text} (not the framework's own library)")
                continue
            covered.append(f"{where}: {got.name} on {name}")
            if got.kind != "ptx":
                continue
            isa = _isa(lib, got.name)
            found = jit_floor(matrix, isa) if isa else None
            if found is None:
                warnings.append(
                    f"{where} runs on {name} ({sm}) only through PTX {got.name}, whose ISA "
                    f"{isa or 'could not be read'} is not in ptx_isa.yaml: the JIT is not checked"
                )
            elif (newer := _newer(found[1], driver)) is None:  # unknown: said, as an unknown ISA is
                warnings.append(
                    f"{where} runs on {name} ({sm}) only through PTX {got.name} of ISA {isa} (CUDA "
                    f"{found[0]}, driver {found[1]}): the driver ({driver or 'unknown'}) could not be read: "
                    "the JIT is not checked"
                )
            elif newer:
                failures.append(
                    f"{where} runs on {name} ({sm}) only through PTX {got.name} of ISA {isa} (CUDA "
                    f"{found[0]}): driver {driver} < {found[1]} cannot JIT-compile it"
                )
    return KernelVerdict(failures=tuple(failures), warnings=tuple(warnings), covered=tuple(covered))


def disagreements(
    stack_sass: Iterable[str], stack_ptx: Iterable[str], source: str, inventory: Mapping[str, Any], owner: str
) -> list[str]:
    """Where the matrix row a stack came from (dotted SASS/PTX lists, and its source) and the
    framework's own libraries in the inventory disagree: one line naming both."""
    want_sass, want_ptx = {s for s in stack_sass}, {p for p in stack_ptx}
    libs = [lib for lib in _libraries(inventory) if lib.get("owner") == owner and _names(lib)]
    if not libs:
        return []
    have = parse_targets([n for lib in libs for n in _names(lib)])
    have_sass = {t.dotted for t in have if t.kind == "sass"}
    have_ptx = {t.dotted for t in have if t.kind == "ptx"}
    if have_sass == want_sass and have_ptx == want_ptx:
        return []

    def fmt(s: set[str]) -> str:
        return ", ".join(sorted(s, key=lambda c: parse_cc(c.rstrip("af")))) or "none"

    shown = ", ".join(str(lib.get("library")) for lib in libs[:3]) + (" ..." if len(libs) > 3 else "")
    return [
        f"the matrix ({source}) says SASS {fmt(want_sass)} and PTX {fmt(want_ptx)}; the image's {owner} "
        f"libraries ({shown}) carry SASS {fmt(have_sass)} and PTX {fmt(have_ptx)}"
    ]


def judge_kernels(
    result: Mapping[str, Any],
    *,
    gpus: Sequence[tuple[str, str]],
    driver: str | None,
    access: str,
    stack: object,
) -> KernelVerdict:
    """The image's kernel inventory (a harness result's kernel_inventory step) against the GPUs
    (name, compute capability) and driver it ran on, as certify judges it: where the stack label's
    matrix row and the inventory disagree, a warning names both; on a GPU run, a library with no
    kernel a GPU runs, or only PTX the driver cannot JIT, is a failure (the caller fails the
    certificate, naming it). Nothing to judge without an inventory or on the CPU path."""
    inv = inventory_of(result)
    if inv is None:
        return KernelVerdict(failures=(), warnings=(), covered=())
    warnings: list[str] = []
    if isinstance(stack, Mapping) and stack.get("cuda"):
        archs_v, fw_v = stack.get("archs"), stack.get("framework")
        archs: Mapping[str, Any] = archs_v if isinstance(archs_v, Mapping) else {}
        fw: Mapping[str, Any] = fw_v if isinstance(fw_v, Mapping) else {}
        row = f"matrix row {fw.get('name')} {fw.get('version')}+{fw.get('variant')}"
        warnings += disagreements(archs.get("sass", ()), archs.get("ptx", ()), row, inv, str(fw.get("name")))
    if access == "none" or not gpus:
        return KernelVerdict(failures=(), warnings=tuple(warnings), covered=())
    try:
        matrix = load_matrix()
    except MatrixError as exc:
        return KernelVerdict(
            failures=(), warnings=(*warnings, f"kernel inventory not judged: {exc.message}"), covered=()
        )
    judged = judge_inventory(matrix, inv, list(gpus), driver)
    return replace(judged, warnings=(*warnings, *judged.warnings))
