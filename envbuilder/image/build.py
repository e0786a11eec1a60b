"""`envbuilder build`: spec + stack (fresh or from a lock) -> render -> BuildKit build -> lock.

Order matters for the guarantees: the image is built untagged; only after it succeeded and was
inspected are tags applied, then the lock is written atomically. Anything that fails or is
interrupted before that leaves no new tag and the old lock file byte-for-byte intact. The whole
build holds its outputs' lock (image/commit.py: one writer per lock file and tag), and tag + lock
is one journalled step that a SIGKILL cannot split (the next build repairs it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envbuilder.atomic import check_output_path
from envbuilder.engine import BuildResult, BuildSecret, ContainerSpec, Engine, ImageInfo
from envbuilder.engine.progress import BuildEvent
from envbuilder.errors import (
    BuildFailedError,
    EnvbuilderError,
    OutputError,
    RegistryError,
    SpecError,
    UsageError,
)
from envbuilder.host.model import Host
from envbuilder.image.commit import (
    LOCK_DIR_ENV,
    commit,
    context_home,
    output_lock,
    repair,
    shared_locks_dir_name,
)
from envbuilder.image.drift import (
    collector_command,
    drift_from_lock,
    inline_collector_command,
    parse_installed,
    provided_by_base,
    summarize,
)
from envbuilder.image.hints import emulation_hint, missing_wheelhouse_hint, tls_hint
from envbuilder.image.lock import (
    BuildRecord,
    InstalledDist,
    LockFile,
    lock_json,
    read_lock,
    spec_base_dir,
    spec_dir_for,
    write_lock,
)
from envbuilder.image.packages import (
    LockSettings,
    PackageLock,
    Platform,
    changed_inputs,
    framework_requirements,
    lock_packages,
)
from envbuilder.image.render import (
    HARNESS_DEST,
    SECRET_CA,
    VENV,
    RenderedContext,
    RenderOptions,
    render_options,
    rendered_stack,
    write_build_context,
)
from envbuilder.image.secrets import Secrets, redact
from envbuilder.image.spec import ImageSpec, parse_spec
from envbuilder.imageref import check_registry, check_tag
from envbuilder.lifecycle import temp_dir
from envbuilder.matrix.model import Matrix
from envbuilder.platforms import machine_of, platform_of_machine
from envbuilder.resolve.model import Resolution, Stack
from envbuilder.typed import MAX_INT


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildOptions:
    base_image: str | None = None  # override the stack's base (a local image in tests)
    base_venv: str | None = None  # install into this environment of the base (render.RenderOptions)
    wheelhouse: Path | None = None  # offline: install only from these wheels
    secrets: tuple[BuildSecret, ...] = ()
    tags: tuple[str, ...] = ()  # extra tags beyond envbuilder/NAME:<stack-id>
    push: str | None = None  # registry host[:port][/prefix]
    lock_out: Path | None = None
    no_cache: bool = False
    network: str | None = None  # docker build --network: default | host | none
    # Where packages are locked from when the plan has no package lock yet (a spec, or a lock
    # from `resolve --lock`); with --wheelhouse and no settings: from the wheelhouse alone.
    lock_settings: LockSettings | None = None
    platform: Platform = "x86_64"  # which package lock the image installs
    source_date_epoch: int | None = None  # build reproducibly with these file times (build_epoch)
    outputs: tuple[Path, ...] = ()  # the command's other outputs (up's --out): never in the context


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildPlan:
    """Everything decided before Docker is touched."""

    spec: ImageSpec
    stack: Stack  # the resolved stack (overrides are render options, noted in the image label)
    resolution: dict[str, Any]
    base_ref: str  # what FROM will name
    lock_out: Path
    render: RenderOptions  # the options `render` would choose for the same inputs (one code path)
    previous: BuildRecord | None = None  # from --lock: what to reproduce
    warnings: tuple[str, ...] = ()
    packages: tuple[PackageLock, ...] = ()  # from --lock; locked by run_build when missing


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildOutcome:
    lock: LockFile
    lock_path: Path
    image: ImageInfo
    result: BuildResult
    tags: tuple[str, ...]
    pushed: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())


def build_epoch(
    reproducible: bool | None, previous: BuildRecord | None, environ: Mapping[str, str]
) -> int | None:
    """The SOURCE_DATE_EPOCH a build uses, or None (not reproducible). `reproducible` None (not
    said): as the lock being rebuilt was built. The epoch: the environment's SOURCE_DATE_EPOCH
    (reproducible-builds.org's convention), else the rebuilt lock's, else 0. Raises UsageError
    (SOURCE_DATE_EPOCH not a whole number of seconds)."""
    recorded = previous.source_date_epoch if previous is not None else None
    if not (reproducible or (reproducible is None and recorded is not None)):
        return None
    given = environ.get("SOURCE_DATE_EPOCH")
    if given is None:
        return recorded if recorded is not None else 0
    if not (given.isascii() and given.isdigit()) or int(given) >= MAX_INT:
        raise UsageError(
            f"SOURCE_DATE_EPOCH={given[:40]!r} is not a time in whole seconds since 1970",
            hint="set it to digits only, e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct), or unset it",
        )
    return int(given)


def stack_tag(stack: Stack) -> str:
    """The stack id as a Docker tag (characters Docker refuses become '-')."""
    tag = re.sub(r"[^A-Za-z0-9_.-]", "-", stack.id).lstrip(".-")
    return tag[:128] or "latest"


def default_tag(spec: ImageSpec, stack: Stack) -> str:
    return f"envbuilder/{spec.name}:{stack_tag(stack)}"


def _render_options(
    matrix: Matrix, spec: ImageSpec, stack: Stack, host: Host, options: BuildOptions
) -> RenderOptions:
    return render_options(
        matrix,
        spec,
        stack,
        host,
        base_image=options.base_image,
        base_venv=options.base_venv,
        wheelhouse=options.wheelhouse,
        secret_ids={s.id for s in options.secrets},
    )


def for_stack_platform(options: BuildOptions, stack: Stack) -> BuildOptions:
    """The options installing the package lock of the platform `stack` is for (its image's FROM
    names that platform: image/render.py): build, up and fleet build all take it from here."""
    return replace(options, platform=machine_of(stack.platform))


def plan_from_spec(
    spec: ImageSpec, resolution: Resolution, options: BuildOptions, spec_path: Path, matrix: Matrix
) -> BuildPlan:
    """Plan a fresh build. Raises SpecError when the resolution holds no stack."""
    if resolution.stack is None:
        raise SpecError(f"{spec_path}: no stack to build", hint="resolve must succeed first")
    lock_out = options.lock_out or spec_path.with_name(f"{spec_path.stem}.lock.json")
    return BuildPlan(
        spec=spec,
        stack=resolution.stack,
        resolution=resolution.to_dict(),
        base_ref=options.base_image or resolution.stack.base_image,
        lock_out=lock_out,
        render=_render_options(matrix, spec, resolution.stack, resolution.host, options),
        warnings=resolution.warnings,
    )


def plan_from_lock(
    lock_path: Path, options: BuildOptions, spec: ImageSpec | None = None, *, matrix: Matrix
) -> BuildPlan:
    """Plan a rebuild from a lock: its stack, its spec (unless given) and its pinned base, rendered
    for the host the lock was resolved for.

    Raises SpecError (malformed lock, or a lock without a spec and none given).
    """
    lock = read_lock(lock_path)
    if spec is None:
        if lock.spec is None:
            raise SpecError(
                f"{lock_path}: holds no image spec (written by an older `resolve --lock`)",
                hint="give the spec too: envbuilder build images/NAME.yaml --lock FILE",
            )
        where = lock.spec_path or str(lock_path)
        spec = parse_spec(lock.spec, where, base_dir=spec_base_dir(lock, lock_path))
    warnings: list[str] = []
    for locked in lock.packages:
        changed = changed_inputs(locked, spec)
        if changed:
            warnings.append(
                f"{', '.join(changed)} changed since the lock was written ({locked.platform}): the build "
                "installs the locked set; `envbuilder lock` picks the change up"
            )
    prev = lock.build
    base = options.base_image or (prev.base_image if prev else None) or lock.stack.base_image
    return BuildPlan(
        spec=spec,
        stack=lock.stack,
        resolution=lock.resolution,
        base_ref=base,
        lock_out=options.lock_out or lock_path,
        render=_render_options(matrix, spec, lock.stack, lock.host, options),
        previous=prev,
        warnings=tuple(warnings),
        packages=lock.packages,
    )


def _check_inputs(plan: BuildPlan, options: BuildOptions) -> list[str]:
    for s in options.secrets:
        if not s.src.is_file():
            raise UsageError(f"secret {s.id!r}: {s.src} is not a readable file")
    for tag in options.tags:
        check_tag(tag)
    if options.push is not None:
        check_registry(options.push)
    parent = Path(plan.lock_out).parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(
            f"cannot write the lock {plan.lock_out}: {parent} is not a writable folder",
            hint="create the folder or give --lock-out another path",
        )
    check_output_path(Path(plan.lock_out))  # a FIFO or a link there: refused before the build, not after
    given = {s.id for s in options.secrets}
    if options.wheelhouse is None:
        for index in plan.spec.indexes:
            if index.secret and index.secret not in given:
                raise UsageError(
                    f"index {index.name!r} reads its token from the build secret {index.secret!r}, "
                    "which was not given",
                    hint=f"--secret id={index.secret},src=FILE (a file holding the token)",
                )
    return planned_tags(plan, options)


def planned_tags(plan: BuildPlan, options: BuildOptions) -> list[str]:
    """The tags a build gives its image: the default (NAME:STACK), then --tag's, each once."""
    return list(dict.fromkeys([default_tag(plan.spec, plan.stack), *options.tags]))


@contextlib.contextmanager
def outputs_held(
    lock_outs: Sequence[Path], tags: Sequence[str], engine: Engine, say: Callable[[str], None]
) -> Iterator[None]:
    """One writer per output for a whole build (image/commit.py output_lock: every lock file and
    tag), and what a killed build left finished or undone first (commit.repair). `build` holds
    its one lock file and tags, `fleet build` all its targets'. Raises OutputError (the lock
    folder), DockerUnavailableError."""
    daemon = engine.daemon_info().id  # a tag is an output of one daemon
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(output_lock(lock_outs, tags, say, daemon=daemon))
        except OSError as exc:
            where = exc.filename or shared_locks_dir_name()
            raise OutputError(
                f"cannot lock the build's outputs in {where}: {exc.strerror}",
                hint=f"{LOCK_DIR_ENV} may name another folder for every user's build locks "
                "(one that each user of this Docker daemon can write)",
            ) from None
        repair(engine, say)
        yield


def ensure_package_lock(
    plan: BuildPlan,
    options: BuildOptions,
    engine: Engine,
    on_message: Callable[[str], None] | None = None,
) -> BuildPlan:
    """The plan with a package lock for the target platform: the lock's own, else resolved now
    (from options.lock_settings; with --wheelhouse and no settings, from the wheelhouse alone).
    With --base-venv the base's own environment provides the framework: its installed set is
    read (a container of the base) and checked against the stack's pins instead of resolved.
    Raises LockError, SpecError, BuildFailedError (the base's installed set unreadable)."""
    if any(p.platform == options.platform for p in plan.packages):
        return plan
    settings = options.lock_settings
    if settings is None and options.wheelhouse is not None:
        settings = LockSettings(find_links=(options.wheelhouse,), no_index=True)
    stack = rendered_stack(plan.spec, plan.stack, RenderOptions())
    provided = None
    if options.base_venv is not None:
        installed = read_installed(engine, plan.base_ref, f"{options.base_venv}/bin/python", inline=True)
        provided = provided_by_base(framework_requirements(stack), installed, plan.base_ref)
    locked = lock_packages(
        plan.spec,
        stack,
        platform=options.platform,
        settings=settings,
        on_progress=on_message,
        provided=provided,
    )
    return replace(plan, packages=(*plan.packages, locked))


def _pin_base(engine: Engine, plan: BuildPlan) -> tuple[str, str | None, list[str]]:
    """(FROM reference, recorded digest, warnings). A base with a registry digest is pinned as
    `ref@sha256:...`; a local-only base (docker import, local build) is recorded by image ID."""
    warnings: list[str] = []
    ref = plan.base_ref
    info = engine.inspect_image(ref)
    if info is None:
        try:
            info = engine.pull(ref)
        except RegistryError as exc:  # BuildKit will try (and report) itself
            warnings.append(f"base {ref} is not local and could not be pulled first: {exc}")
            return ref, None, warnings
    if "@sha256:" in ref:
        return ref, ref, warnings
    prev = plan.previous
    recorded = prev.base_image_digest if prev else None
    if recorded and "@" not in recorded and recorded != info.id:
        warnings.append(
            f"base {ref} is now image {info.id[:19]}, the lock recorded "
            f"{recorded[:19]}: the rebuild will differ"
        )
    name = ref if "/" in ref.rsplit(":", 1)[-1] else ref.rsplit(":", 1)[0]
    aliases = {name, f"docker.io/{name}", f"docker.io/library/{name}"}
    for d in info.repo_digests:
        repo, _, digest = d.partition("@")
        if repo in aliases:
            pinned = f"{ref}@{digest}"
            return pinned, pinned, warnings
    return ref, info.id, warnings


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedBuild:
    """A build ready for BuildKit: inputs checked, packages locked, the base pinned, the context
    rendered."""

    plan: BuildPlan  # with its package lock, base_ref pinned (ref@sha256:... where known)
    tags: tuple[str, ...]
    rendered: RenderedContext
    base_digest: str | None
    warnings: tuple[str, ...]


def build_outputs(plan: BuildPlan, options: BuildOptions) -> tuple[Path, ...]:
    """The paths a build writes or reads besides the project (its lock, its wheelhouse, its
    find-links folders, the command's other outputs): never part of the project's context,
    whatever their names."""
    settings = options.lock_settings
    links = settings.find_links if settings is not None else ()
    wheelhouse = (options.wheelhouse,) if options.wheelhouse is not None else ()
    return (Path(plan.lock_out), *wheelhouse, *links, *options.outputs)


def prepare_build(
    plan: BuildPlan,
    options: BuildOptions,
    engine: Engine,
    dest: Path,
    *,
    on_message: Callable[[str], None] | None = None,
) -> PreparedBuild:
    """Everything before BuildKit runs: check the inputs, pin the base, lock the packages (when
    the plan has none), render the build context into `dest`. `run_build` builds it alone,
    `fleet build` many at once with bake.

    Raises LockError, DockerUnavailableError, SpecError, UsageError.
    """
    tags = _check_inputs(plan, options)
    engine.ping()
    from_ref, base_digest, warnings = _pin_base(engine, plan)
    warnings = [*plan.warnings, *warnings]
    plan = ensure_package_lock(replace(plan, base_ref=from_ref), options, engine, on_message)
    # The pinned base (ref@sha256:...) is the one input render does not have.
    # The package locks are the other (render --lock gives them too).
    ropts = replace(
        plan.render,
        base_image=from_ref if from_ref != plan.stack.base_image else None,
        package_locks=plan.packages,
        platform=options.platform,
        context_outputs=build_outputs(plan, options),
    )
    rendered = write_build_context(plan.spec, plan.stack, dest, ropts)
    if plan.previous and plan.previous.dockerfile_sha256 != rendered.dockerfile_sha256:
        warnings.append(
            "the rendered Dockerfile differs from the one the lock records "
            f"({rendered.dockerfile_sha256[:12]} vs {plan.previous.dockerfile_sha256[:12]}): "
            "check --wheelhouse/--secret/--base-image match the original build"
        )
    return PreparedBuild(
        plan=plan, tags=tuple(tags), rendered=rendered, base_digest=base_digest, warnings=tuple(warnings)
    )


def run_build(
    plan: BuildPlan,
    options: BuildOptions,
    engine: Engine,
    *,
    on_event: Callable[[BuildEvent], None] | None = None,
    work_dir: Path | None = None,
    on_message: Callable[[str], None] | None = None,
) -> BuildOutcome:
    """Lock the packages (when the plan has none), render, build, check the installed set
    against the lock, tag, write the lock, push.

    Raises LockError (packages), DockerUnavailableError, BuildKitMissingError, BuildFailedError
    (also when the image holds other packages than the lock: it is removed, nothing tagged),
    SpecError, UsageError, RegistryError (push: the image stays tagged, the lock is written
    without `pushed`); KeyboardInterrupt passes through after rolling back tags, the lock
    untouched.
    """
    tags = _check_inputs(plan, options)
    say = on_message or (lambda _line: None)
    with outputs_held([plan.lock_out], tags, engine, say):
        return _run_build_locked(plan, options, engine, on_event, work_dir, say)


def _run_build_locked(
    plan: BuildPlan,
    options: BuildOptions,
    engine: Engine,
    on_event: Callable[[BuildEvent], None] | None,
    work_dir: Path | None,
    on_message: Callable[[str], None],
) -> BuildOutcome:
    """run_build holding the outputs' lock: no other build writes this lock file or these tags."""
    engine.buildkit_cli()
    # `work_dir`: a fresh folder there, removed after the build; else the output's own folder.
    tmp = temp_dir("render", work_dir) if work_dir is not None else None
    dest = (tmp or context_home(plan.lock_out)) / "build"
    try:
        with secrets_redacted(options.secrets):
            prepared = prepare_build(plan, options, engine, dest, on_message=on_message)
            try:
                result = engine.build(
                    prepared.rendered.context_dir,
                    prepared.rendered.dockerfile,
                    secrets=options.secrets,
                    no_cache=options.no_cache,
                    network=options.network,
                    on_event=on_event,
                    source_date_epoch=options.source_date_epoch,
                )
            except BuildFailedError as exc:
                locked = next((p for p in prepared.plan.packages if p.platform == options.platform), None)
                exc.hint = failure_hint(exc, locked, options) or exc.hint
                raise
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return finish_build(prepared, result, options, engine)


MAX_SECRET_BYTES = 64 * 1024  # a token or a URL; a larger file is no index secret


def secret_values(secrets: Sequence[BuildSecret]) -> Secrets:
    """(id, value) of the build's secrets that a tool may print (an index URL with its token, a
    password): every one but the CA bundle, which is public. A file that cannot be read is
    skipped (the build reports it)."""
    out: list[tuple[str, str]] = []
    for s in secrets:
        if s.id == SECRET_CA:
            continue
        try:
            with s.src.open("rb") as f:
                value = f.read(MAX_SECRET_BYTES).decode("utf-8", errors="replace").strip()
        except OSError:
            continue
        if value:
            out.append((s.id, value))
    return tuple(out)


@contextlib.contextmanager
def secrets_redacted(secrets: Sequence[BuildSecret]) -> Iterator[None]:
    """Every envbuilder error raised inside leaves with the secrets' values taken out of its
    message, hint and log lines (a failed RUN's log tail prints the index URL it could not fetch
    from, token and all)."""
    try:
        yield
    except EnvbuilderError as exc:
        values = secret_values(secrets)
        exc.message = redact(exc.message, values)
        exc.args = (exc.message,)
        exc.hint = None if exc.hint is None else redact(exc.hint, values)
        exc.log = tuple(redact(line, values) for line in exc.log)
        raise


def failure_hint(exc: BuildFailedError, packages: PackageLock | None, options: BuildOptions) -> str | None:
    """The fix a failed BuildKit build points to, read from its log (image/hints.py): a CA
    bundle behind a TLS-intercepting proxy; QEMU for an image of another platform whose steps
    could not run; a wheelhouse for wheels the lock took from a local folder; None when none shows."""
    text = "\n".join(exc.log)
    ca_given = any(s.id == SECRET_CA for s in options.secrets)
    if (tls := tls_hint(text, ca_given=ca_given)) is not None:
        return tls
    if (
        foreign := emulation_hint(text, platform_of_machine(options.platform) or options.platform)
    ) is not None:
        return foreign
    if options.wheelhouse is None:
        return missing_wheelhouse_hint(packages, exc.log)
    return None


def finish_build(
    prepared: PreparedBuild, result: BuildResult, options: BuildOptions, engine: Engine
) -> BuildOutcome:
    """What follows a successful BuildKit build: inspect the untagged image, check its installed
    set against the lock, tag it and write its lock in one journalled step (image/commit.py),
    push.

    Raises BuildFailedError (no such image, or it drifted from the lock: it is removed),
    OutputError (the lock cannot be written: nothing tagged), RegistryError (push),
    DockerUnavailableError; KeyboardInterrupt after rolling back tags.
    """
    plan, rendered, tags = prepared.plan, prepared.rendered, list(prepared.tags)
    image = engine.inspect_image(result.image_id)
    if image is None:
        raise BuildFailedError(f"the build reported image {result.image_id}, which is not there")
    installed = check_installed(engine, result.image_id, plan, options)
    record = BuildRecord(
        installed=installed,
        platform=options.platform,
        image_id=result.image_id,
        base_image=plan.base_ref,
        base_image_digest=prepared.base_digest,
        dockerfile_sha256=rendered.dockerfile_sha256,
        packages=tuple(f"{d.name}=={d.version}" for d in installed),
        tags=tuple(tags),
        source_date_epoch=options.source_date_epoch,
    )
    # The stack as it landed in the image (overrides noted, companions chosen): the lock records
    # it, so the lock's hash is the image's io.envbuilder.lock-hash label (both are lock_hash).
    lock = LockFile(
        resolution=plan.resolution,
        stack=rendered.stack,
        spec=plan.spec.to_dict(),
        spec_path=plan.spec.path,
        build=record,
        packages=plan.packages,
        spec_dir=spec_dir_for(plan.spec.base_dir, plan.lock_out),
    )
    try:
        commit(engine, result.image_id, tags, plan.lock_out, lock_json(lock))
    except OSError as exc:
        raise OutputError(
            f"cannot write the lock {plan.lock_out}: {exc.strerror}; nothing was tagged",
            hint="give --lock-out a writable folder with free space",
        ) from None
    pushed: tuple[str, ...] = ()
    if options.push:
        pushed = (push_image(engine, result.image_id, plan, options.push),)
        lock = lock.with_build(replace(record, pushed=pushed))
        write_lock(plan.lock_out, lock)
    return BuildOutcome(
        lock=lock,
        lock_path=plan.lock_out,
        image=engine.inspect_image(result.image_id) or image,
        result=result,
        tags=tuple(tags),
        pushed=pushed,
        warnings=prepared.warnings,
    )


def read_installed(
    engine: Engine, image: str, python: str, *, inline: bool = False
) -> tuple[InstalledDist, ...]:
    """An image's installed set: the harness's collector run in it with `python` (inline: given
    as source, for a base image that carries no harness). Raises BuildFailedError."""
    argv = inline_collector_command(python) if inline else collector_command(python, HARNESS_DEST)
    res = engine.run(ContainerSpec(image=image, command=tuple(argv), purpose="installed-set"), timeout_s=600)
    if res.exit_code != 0:
        raise BuildFailedError(
            f"reading the installed packages of {image} with {python} failed (exit {res.exit_code}): "
            + res.stderr.strip()[-500:]
        )
    return parse_installed(res.stdout, image)


def discard_untagged(engine: Engine, image_id: str) -> None:
    """Remove a new image this build will not tag, unless it has tags: a reproducible build makes
    the same image ID as another user's (or another data folder's) build of the same lock, and
    that image, tagged by them, is not this build's to remove."""
    info = engine.inspect_image(image_id)
    if info is not None and not info.tags:
        engine.remove_image(image_id, force=True)


def check_installed(
    engine: Engine, image_id: str, plan: BuildPlan, options: BuildOptions
) -> tuple[InstalledDist, ...]:
    """The image's installed set (the harness's collector, run in it), which must hold every
    locked package at its locked version. Raises BuildFailedError naming the packages that
    drifted, after removing the image if it is untagged (discard_untagged)."""
    try:
        installed = read_installed(engine, image_id, f"{options.base_venv or VENV}/bin/python")
    except BuildFailedError:
        discard_untagged(engine, image_id)
        raise
    locked = next(p for p in plan.packages if p.platform == options.platform)
    drifts = drift_from_lock(installed, locked.packages)
    if drifts:
        discard_untagged(engine, image_id)
        raise BuildFailedError(
            f"the new image does not hold what the lock says: {summarize(drifts)}",
            hint="nothing was tagged; a base environment (--base-venv) may shadow a locked package",
        )
    return installed


def push_image(engine: Engine, image_id: str, plan: BuildPlan, registry: str) -> str:
    """Tag for `registry` and push; return registry/name@sha256:... Raises RegistryError."""
    repo = f"{registry}/envbuilder/{plan.spec.name}"
    ref = f"{repo}:{stack_tag(plan.stack)}"
    engine.tag(image_id, ref)
    digest = engine.push(ref)
    if not digest.startswith("sha256:"):
        raise RegistryError(f"push of {ref} returned {digest!r}, not a digest")
    return f"{repo}@{digest}"
