"""`fleet build`: one image per spec and node class, each stack resolved for that class's GPU and
driver, rendered as `envbuilder build` renders it, and all built by one `docker buildx bake`
(targets in parallel on BuildKit, its cache shared; remote or Kubernetes builders are buildx's
business). Classes that resolve to the same stack share one target. The whole bake holds every
target's outputs (its lock file and tags: image.build.outputs_held, as `envbuilder build` holds
its own), and each target is then inspected, tagged and given its lock with hashes exactly as
`envbuilder build` does it (image.build.finish_build: tag + lock as one journalled step); a
failed bake tags nothing and writes no lock.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.engine import BuildResult, Engine
from envbuilder.engine.buildkit import Buildx, buildx_bake, secret_flag
from envbuilder.engine.progress import BuildEvent
from envbuilder.errors import UsageError
from envbuilder.fleet.classes import NodeClass
from envbuilder.host.model import Host, HostGpu
from envbuilder.image.build import (
    BuildOptions,
    BuildOutcome,
    BuildPlan,
    finish_build,
    for_stack_platform,
    outputs_held,
    plan_from_spec,
    planned_tags,
    prepare_build,
    secrets_redacted,
)
from envbuilder.image.spec import ImageSpec
from envbuilder.matrix.model import Matrix
from envbuilder.resolve.gpus import gpu_from_cc, gpu_from_match, lookup_gpu
from envbuilder.resolve.model import NoCompatibleStackError
from envbuilder.resolve.resolver import resolve

BAKE_FILE = "docker-bake.hcl"
_TARGET = re.compile(r"[^a-z0-9_-]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class BakeTarget:
    name: str  # the bake target (SPEC-CLASS)
    spec_path: Path
    classes: tuple[str, ...]  # the node classes this image serves
    plan: BuildPlan
    options: BuildOptions  # with this target's tags and lock file

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.name,
            "spec": str(self.spec_path),
            "classes": list(self.classes),
            "stack": self.plan.stack.id,
            "lock": str(self.plan.lock_out),
        }


def class_host(matrix: Matrix, cls: NodeClass) -> Host:
    """The class as `resolve` takes a host: its driver and one GPU of its model (or of its compute
    capability); a class without GPUs is a host without GPUs (a CPU stack). Raises UsageError
    when a GPU class says neither its GPU nor its driver."""
    if cls.gpus_per_node == 0:
        return Host(driver=None, gpus=(), source="given", platform=cls.platform)
    if cls.driver is None or (cls.gpu_model is None and cls.cc is None):
        missing = "driver" if cls.driver is None else "GPU model"
        raise UsageError(
            f"node class {cls.name} states no {missing}: no stack can be resolved for it",
            hint="give the nodes a driver feature (nvidia_driver_X.Y.Z) or run `fleet plan --probe` first",
        )
    gpu: HostGpu = (
        gpu_from_match(matrix, lookup_gpu(matrix, cls.gpu_model))
        if cls.gpu_model
        else gpu_from_cc(matrix, str(cls.cc))
    )
    return Host(driver=cls.driver, gpus=(gpu,), source="given", platform=cls.platform)


def target_name(spec: ImageSpec, cls: str) -> str:
    return _TARGET.sub("-", f"{spec.name}-{cls}".lower()).strip("-")


def plan_targets(
    specs: Sequence[tuple[ImageSpec, Path]],
    classes: Sequence[NodeClass],
    matrix: Matrix,
    options: BuildOptions,
    out_dir: Path,
) -> list[BakeTarget]:
    """One target per spec and distinct stack: each class's stack resolved for its host; classes
    with the same stack share a target (and a lock). Each target is tagged envbuilder/NAME:STACK
    (as build tags it) and envbuilder/NAME:CLASS for each class. Raises NoCompatibleStackError
    (naming the spec and class), UsageError."""
    targets: dict[tuple[str, str], BakeTarget] = {}
    for spec, path in specs:
        for cls in classes:
            request = spec.to_request(cpu_only=cls.gpus_per_node == 0)
            resolution = resolve(matrix, request, class_host(matrix, cls))
            if resolution.stack is None:
                gpu = f"--gpu '{cls.gpu_model}'" if cls.gpu_model else f"--cc {cls.cc}"
                raise NoCompatibleStackError(
                    resolution,
                    f"that host is node class {cls.name}; see why: envbuilder resolve --driver {cls.driver} "
                    f"{gpu} --explain (or leave the class out with --classes)",
                    file=str(path),
                )
            key = (spec.name, resolution.stack.id)
            if key in targets:
                t = targets[key]
                tag = f"envbuilder/{spec.name}:{cls.name}"
                targets[key] = replace(
                    t, classes=(*t.classes, cls.name), options=replace(t.options, tags=(*t.options.tags, tag))
                )
                continue
            name = target_name(spec, cls.name)
            opts = replace(
                for_stack_platform(options, resolution.stack),  # an arm64 class's stack: aarch64 wheels
                tags=(*options.tags, f"envbuilder/{spec.name}:{cls.name}"),
                lock_out=out_dir / f"{name}.lock.json",
            )
            plan = plan_from_spec(spec, resolution, opts, path, matrix)
            targets[key] = BakeTarget(name=name, spec_path=path, classes=(cls.name,), plan=plan, options=opts)
    return list(targets.values())


def _hcl(value: str) -> str:
    """An HCL string literal: JSON's escapes, with HCL's template sequences escaped."""
    return json.dumps(value).replace("${", "$${").replace("%{", "%%{")


def bake_file(entries: Sequence[tuple[str, Path, Path]], options: BuildOptions) -> str:
    """docker-bake.hcl for (target, context dir, Dockerfile) entries: a default group, one target
    each, loaded into the daemon (output type=docker), no tags (tags come after success)."""
    lines = ["# Generated by envbuilder fleet build; run with: docker buildx bake -f docker-bake.hcl", ""]
    lines += ['group "default" {', f"  targets = [{', '.join(_hcl(t) for t, _, _ in entries)}]", "}", ""]
    for name, context, dockerfile in entries:
        lines += [
            f"target {_hcl(name)} {{",
            f"  context = {_hcl(str(context))}",
            f"  dockerfile = {_hcl(str(dockerfile))}",
            '  output = ["type=docker"]',
        ]
        if options.secrets:
            secrets = ", ".join(
                _hcl(secret_flag(s)) for s in options.secrets
            )  # CSV-quoted, as buildx reads it
            lines.append(f"  secret = [{secrets}]")
        if options.network:
            lines.append(f"  network = {_hcl(options.network)}")
        if options.no_cache:
            lines.append("  no-cache = true")
        lines += ["}", ""]
    return "\n".join(lines)


def bake(
    targets: Sequence[BakeTarget],
    engine: Engine,
    buildx: Buildx,
    *,
    keep_dir: Path | None = None,
    on_event: Callable[[BuildEvent], None] | None = None,
    say: Callable[[str], None] = lambda _l: None,
) -> list[BuildOutcome]:
    """Render every target, bake them all at once, then tag and lock each, all its targets'
    outputs held meanwhile (no other build writes those locks or tags). `keep_dir` keeps the
    rendered contexts and the bake file (else a temporary folder). Raises BuildFailedError,
    BuildKitMissingError, DockerUnavailableError, OutputError, SpecError, UsageError,
    RegistryError (push)."""
    lock_outs = [t.plan.lock_out for t in targets]
    tags = [tag for t in targets for tag in planned_tags(t.plan, t.options)]
    secrets = [s for t in targets for s in t.options.secrets]
    with outputs_held(lock_outs, tags, engine, say), secrets_redacted(secrets):
        return _bake_held(targets, engine, buildx, keep_dir=keep_dir, on_event=on_event, say=say)


def _bake_held(
    targets: Sequence[BakeTarget],
    engine: Engine,
    buildx: Buildx,
    *,
    keep_dir: Path | None,
    on_event: Callable[[BuildEvent], None] | None,
    say: Callable[[str], None],
) -> list[BuildOutcome]:
    work = keep_dir or Path(tempfile.mkdtemp(prefix="envbuilder-bake-"))
    try:
        prepared = []
        for t in targets:
            p = prepare_build(t.plan, t.options, engine, work / t.name)
            prepared.append((t, p))
            say(f"fleet build: {t.name}: stack {t.plan.stack.id} for {', '.join(t.classes)}")
        entries = [(t.name, p.rendered.context_dir, p.rendered.dockerfile) for t, p in prepared]
        path = work / BAKE_FILE
        write_text_atomic(path, bake_file(entries, targets[0].options))
        say(f"fleet build: {' '.join(buildx.argv)} bake -f {path} ({len(entries)} targets)")
        allow = ["network.host"] if targets[0].options.network == "host" else []
        started = time.monotonic()
        ids = buildx_bake(buildx, path, [t.name for t, _ in prepared], allow=allow, on_event=on_event)
        seconds = time.monotonic() - started  # one bake for all targets: its wall time is theirs
        outcomes = []
        for t, p in prepared:
            result = BuildResult(image_id=ids[t.name], seconds=seconds, steps=(), log_tail=())
            outcomes.append(finish_build(p, result, t.options, engine))
        return outcomes
    finally:
        if keep_dir is None:
            shutil.rmtree(work, ignore_errors=True)
