"""Specs -> one plan per node class: `fleet build`'s targets (fleet/bake.py), each class's stack
resolved for its GPU and driver, or one image for all of them (fleet/one_image.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from envbuilder.atomic import make_output_dir
from envbuilder.fleet.bake import BakeTarget, plan_targets
from envbuilder.fleet.classes import NodeClass
from envbuilder.image.build import BuildOptions
from envbuilder.image.spec import load_spec
from envbuilder.matrix.model import Matrix


def plan_fleet_build(
    spec_paths: Sequence[Path],
    classes: Sequence[NodeClass],
    matrix: Matrix,
    options: BuildOptions,
    out_dir: Path,
    *,
    one_image: bool = False,
    name: str = "all",
    say: Callable[[str], None] = lambda _line: None,
) -> list[BakeTarget]:
    """The bake targets of every spec for `classes` (`out_dir` made, for their locks and
    contexts): with `one_image`, one target per spec serving every class (named SPEC-`name`),
    each class whose own newer stack was dropped said with why. Raises SpecError,
    NoCompatibleStackError (naming the spec and class), UsageError."""
    specs = [(load_spec(p), p) for p in spec_paths]
    make_output_dir(out_dir)  # its parent must exist: no folder is made for it (docs/files.md)
    if not one_image:
        return plan_targets(specs, classes, matrix, options, out_dir.resolve())
    from envbuilder.fleet.one_image import plan_one_image_targets

    targets, choices = plan_one_image_targets(specs, classes, matrix, options, out_dir.resolve(), name)
    for choice in choices:
        for d in choice.dropped:
            say(f"one image: {d.node_class} alone would get {d.stack}; dropped: {'; '.join(d.reasons)}")
    return targets
