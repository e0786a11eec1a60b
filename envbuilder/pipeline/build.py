"""Resolution -> plan: the build plan of a spec (resolved for a host) or of a lock file, with the
options that install the package lock of the platform its stack is for. `build`, `up` and
`fleet build` plan here; the plan is built by image/build.py run_build."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from envbuilder.errors import UsageError
from envbuilder.image.build import (
    BuildOptions,
    BuildPlan,
    build_epoch,
    for_stack_platform,
    plan_from_lock,
    plan_from_spec,
)
from envbuilder.image.spec import ImageSpec, load_spec
from envbuilder.matrix.model import Matrix
from envbuilder.pipeline.resolution import resolve_spec
from envbuilder.platforms import Platform, machine_of
from envbuilder.resolve.model import Resolution

Say = Callable[[str], None]


def plan_spec(
    spec: ImageSpec, spec_path: Path, matrix: Matrix, resolution: Resolution, options: BuildOptions
) -> tuple[BuildPlan, BuildOptions]:
    """The plan of a fresh build of `spec` for the stack resolved, and the options that install
    the package lock of the stack's platform. Raises SpecError."""
    plan = plan_from_spec(spec, resolution, options, spec_path, matrix)
    return plan, for_stack_platform(options, plan.stack)


def plan_build(
    spec_path: Path | None,
    lock_path: Path | None,
    options: BuildOptions,
    *,
    driver: str | None = None,
    gpus: tuple[str, ...] = (),
    ccs: tuple[str, ...] = (),
    cpu_only: bool = False,
    platform: Platform | None = None,
    reproducible: bool | None = None,
    say: Say = lambda _line: None,
) -> tuple[BuildPlan, BuildOptions]:
    """`build`'s plan: a lock rebuilt (its stack, and with `platform` another of its package
    locks, said as a warning), else the spec resolved for the host given (or this one); the
    SOURCE_DATE_EPOCH of a reproducible build. Raises UsageError (neither given), SpecError,
    NoCompatibleStackError, MatrixError."""
    spec = load_spec(spec_path) if spec_path else None
    if lock_path is not None:
        from envbuilder.matrix import load_matrix

        plan = plan_from_lock(lock_path, options, spec, matrix=load_matrix())
        # the image installs the package lock of its stack's platform; with a lock, `platform`
        # picks another of the lock's package locks (`lock --also-platform`)
        target = platform or plan.stack.platform
        if target != plan.stack.platform:
            say(
                f"warning: {lock_path} holds a stack resolved for {plan.stack.platform}; installing its "
                f"{machine_of(target)} package lock (the stack's arch facts are {plan.stack.platform}'s)"
            )
            options = replace(options, platform=machine_of(target))
        else:
            options = for_stack_platform(options, plan.stack)
    elif spec is not None and spec_path is not None:
        matrix, resolution = resolve_spec(
            spec, driver, gpus, ccs, cpu_only, settings=options.lock_settings, platform=platform
        )
        plan, options = plan_spec(spec, spec_path, matrix, resolution, options)
    else:
        raise UsageError("give an image spec or --lock FILE", hint="envbuilder build images/NAME.yaml")
    return plan, replace(options, source_date_epoch=build_epoch(reproducible, plan.previous, os.environ))
