"""One image for a whole partition (issue 24 item 9): the stack the resolver picks for a host that
holds one GPU of every class (so the build has kernels for each) with the oldest driver among
them (a stack runs on every class only if it runs on the oldest driver), and, for each class that
alone would get a newer stack, why that one was dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.version import Version

from envbuilder.errors import UsageError
from envbuilder.fleet.bake import BakeTarget, class_host, target_name
from envbuilder.fleet.classes import NodeClass
from envbuilder.host.model import Host, HostGpu
from envbuilder.image.build import BuildOptions, plan_from_spec
from envbuilder.image.spec import ImageSpec
from envbuilder.matrix.model import Matrix
from envbuilder.resolve.model import NoCompatibleStackError, Rejection, Request, Resolution, Stack
from envbuilder.resolve.resolver import resolve
from envbuilder.versions import parse_driver


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropped:
    """A class's own best stack, newer than the common one, and why the common host refused it."""

    node_class: str
    stack: str  # the stack id the class alone would get
    reasons: tuple[str, ...]  # "arch: no kernels for Tesla V100 (sm_70): ..."

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.node_class, "alone": self.stack, "dropped_because": list(self.reasons)}


@dataclass(frozen=True, slots=True, kw_only=True)
class OneImage:
    classes: tuple[str, ...]
    host: Host  # every class's GPU, the oldest driver
    resolution: Resolution
    dropped: tuple[Dropped, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        stack = self.resolution.stack
        return {
            "classes": list(self.classes),
            "host": self.host.to_dict(),
            "stack": stack.to_dict() if stack else None,
            "dropped": [d.to_dict() for d in self.dropped],
            "notes": list(self.notes),
        }


def partition_host(matrix: Matrix, classes: Sequence[NodeClass]) -> tuple[Host, tuple[str, ...]]:
    """(the host every class must fit: one GPU of each GPU class, the oldest driver, their platform;
    notes). Raises UsageError when the classes are of two platforms, or a GPU class states neither
    its GPU nor its driver (bake.class_host)."""
    platforms = sorted({c.platform for c in classes if c.platform is not None})
    if len(platforms) > 1:
        raise UsageError(
            f"node classes of {' and '.join(platforms)} cannot share one image",
            hint="one image per platform: --classes with the classes of one platform, or no --one-image",
        )
    platform = platforms[0] if platforms else None
    gpus: list[HostGpu] = []
    drivers: list[tuple[str, str]] = []
    notes: list[str] = []
    for cls in classes:
        host = class_host(matrix, cls)
        if not host.gpus:
            notes.append(f"{cls.name} has no GPUs: it runs the image's framework on its CPUs")
            continue
        assert host.driver is not None  # class_host refuses a GPU class without one
        drivers.append((host.driver, cls.name))
        gpus += [g for g in host.gpus if g.name not in {h.name for h in gpus}]
    if not gpus:
        return Host(driver=None, gpus=(), source="given", platform=platform), tuple(notes)
    oldest, who = min(drivers, key=lambda d: parse_driver(d[0]))
    if len({d for d, _ in drivers}) > 1:
        notes.append(
            f"driver {oldest} ({who}) is the oldest of the partition: every stack is checked against it"
        )
    return Host(driver=oldest, gpus=tuple(gpus), source="given", platform=platform), tuple(notes)


def _label_prefix(stack: Stack) -> str:
    """How the resolver names the candidate of `stack` in its rejections (resolver._Candidate)."""
    return f"{stack.framework} {stack.version}+{stack.variant} / "


def _newer(a: Stack, b: Stack) -> bool:
    """Does `a` rank above `b` on the resolver's first keys (release, then the build's CUDA)?"""
    return (Version(a.version), Version(a.cuda or "0")) > (Version(b.version), Version(b.cuda or "0"))


def one_stack(matrix: Matrix, request: Request, classes: Sequence[NodeClass]) -> OneImage:
    """The one stack for every class in `classes`, with the reason each class's own newer stack
    was dropped. `resolution.stack` is None when no stack fits them all (its `rejected` says why).
    Raises UsageError (no classes, a GPU class without GPU or driver), as resolve does."""
    if not classes:
        raise UsageError("no node classes to build one image for", hint="check --partition / --classes")
    host, notes = partition_host(matrix, classes)
    common = resolve(matrix, request if host.gpus else _cpu(request), host)
    dropped: list[Dropped] = []
    if common.stack is not None and host.gpus:
        for cls in classes:
            own_host = class_host(matrix, cls)
            if not own_host.gpus:
                continue
            alone = resolve(matrix, request, own_host).stack
            if alone is None or not _newer(alone, common.stack):
                continue
            prefix = _label_prefix(alone)
            reasons = _reasons([r for r in common.rejected if r.candidate.startswith(prefix)])
            dropped.append(Dropped(node_class=cls.name, stack=alone.id, reasons=reasons))
    return OneImage(
        classes=tuple(c.name for c in classes),
        host=host,
        resolution=common,
        dropped=tuple(dropped),
        notes=notes,
    )


def _cpu(request: Request) -> Request:
    return replace(request, cpu_only=True)


def _reasons(rejections: list[Rejection]) -> tuple[str, ...]:
    seen: list[str] = []
    for r in rejections:
        text = f"{r.component}: {r.reason}"
        if text not in seen:
            seen.append(text)
    return tuple(seen) or ("ranked below the common stack on the partition's oldest driver",)


def plan_one_image_targets(
    specs: Sequence[tuple[ImageSpec, Path]],
    classes: Sequence[NodeClass],
    matrix: Matrix,
    options: BuildOptions,
    out_dir: Path,
    name: str,
) -> tuple[list[BakeTarget], list[OneImage]]:
    """`fleet build --one-image`: one target per spec serving every class (named SPEC-`name`,
    tagged envbuilder/NAME:STACK and envbuilder/NAME:CLASS for each class), and the choice made
    for each. Raises NoCompatibleStackError (no stack fits every class), UsageError."""
    targets: list[BakeTarget] = []
    choices: list[OneImage] = []
    for spec, path in specs:
        choice = one_stack(matrix, spec.to_request(), classes)
        if choice.resolution.stack is None:
            raise NoCompatibleStackError(
                choice.resolution,
                f"no one stack fits all of {', '.join(choice.classes)}: see why with "
                "`envbuilder fleet plan --one-image SPEC`, or build one image per class "
                "(without --one-image)",
                file=str(path),
            )
        tname = target_name(spec, name)
        opts = replace(
            options,
            tags=(*options.tags, *(f"envbuilder/{spec.name}:{c}" for c in choice.classes)),
            lock_out=out_dir / f"{tname}.lock.json",
        )
        plan = plan_from_spec(spec, choice.resolution, opts, path, matrix)
        targets.append(
            BakeTarget(name=tname, spec_path=path, classes=choice.classes, plan=plan, options=opts)
        )
        choices.append(choice)
    return targets, choices
