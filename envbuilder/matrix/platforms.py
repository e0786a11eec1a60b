"""platforms.yaml: which framework builds, base images and GPUs exist for platforms other than
linux/amd64 (the one frameworks/*.yaml describe), read into PlatformFacts; and the lookups over
them ("is there an aarch64 cu124 torch 2.6 for cp312" is `platform_build(...)`).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envbuilder.matrix.compiler import ptxas_cuda
from envbuilder.matrix.generated import CPU
from envbuilder.matrix.model import (
    CudaMatrix,
    FrameworkMatrix,
    FrameworkRelease,
    FrameworkVariant,
    Matrix,
    PlatformAbsence,
    PlatformBuild,
    PlatformFacts,
    PlatformGpu,
    PlatformImages,
)
from envbuilder.matrix.reader import (
    Ctx,
    cc_list,
    compiler_field,
    get_field,
    kernel_sets_field,
    rows,
    version_field,
)
from envbuilder.platforms import DEFAULT_PLATFORM, PLATFORMS

Doc = tuple[dict[str, Any], Ctx]


def load_platforms(doc: Doc) -> PlatformFacts:
    """Read platforms.yaml. Raises MatrixError naming the row and field of the first problem."""
    data, ctx = doc
    builds = []
    for i, row in enumerate(rows(data, "builds", ctx)):
        c = ctx.at(f"builds[{i}]", row)
        from_default = _archs_from(row, c)
        builds.append(
            PlatformBuild(
                platform=_platform(row, c),
                framework=get_field(row, "framework", c, str),
                versions=_specifier(row, "versions", c),
                variant=get_field(row, "variant", c, str),
                sass=() if from_default else cc_list(row, "sass", c),
                ptx=() if from_default else cc_list(row, "ptx", c),
                archs_from_default=from_default,
                index_url=get_field(row, "index_url", c, str, optional=True),
                own_index="index_url" in row,
                python=_specifier(row, "python", c) if "python" in row else None,
                wheels=_wheels(row, c),
                source=_source(row, c),
            )
        )
    absent = []
    for i, row in enumerate(rows(data, "absent", ctx)):
        c = ctx.at(f"absent[{i}]", row)
        absent.append(
            PlatformAbsence(
                platform=_platform(row, c),
                framework=get_field(row, "framework", c, str),
                versions=_specifier(row, "versions", c),
                variants=tuple(str(v) for v in get_field(row, "variants", c, list, optional=True) or ()),
                reason=get_field(row, "reason", c, str),
                source=_source(row, c),
            )
        )
    gpus = []
    for i, row in enumerate(rows(data, "gpus", ctx)):
        c = ctx.at(f"gpus[{i}]", row)
        gpus.append(
            PlatformGpu(
                model=get_field(row, "model", c, str),
                platform=_platform(row, c),
                unsupported=get_field(row, "unsupported", c, str, optional=True),
                source=_source(row, c),
            )
        )
    images = []
    for i, row in enumerate(rows(data, "images", ctx)):
        c = ctx.at(f"images[{i}]", row)
        images.append(
            PlatformImages(
                platform=_platform(row, c),
                slim_os=tuple(str(o) for o in get_field(row, "slim_os", c, list)),
                cuda_os=tuple(str(o) for o in get_field(row, "cuda_os", c, list)),
                source=_source(row, c),
            )
        )
    return PlatformFacts(builds=tuple(builds), absent=tuple(absent), gpus=tuple(gpus), images=tuple(images))


def load_generated_builds(
    doc: Doc, where: str, cuda: CudaMatrix, frameworks: tuple[FrameworkMatrix, ...]
) -> tuple[tuple[PlatformBuild, ...], tuple[PlatformAbsence, ...]]:
    """The rows `matrix refresh` read from a platform's own wheels (generated/arm64/NAME.yaml, at
    `where`), as builds of that platform: one per release and variant, its arch lists, PTX ISA,
    kernel sets, compiler and CUDA pins the wheel's. A variant frameworks/NAME.yaml does not
    name is left out (the file still records it). And the absences it read from the index (a
    release's `missing`: no wheel of the platform). Raises MatrixError naming row and field."""
    data, ctx = doc
    platform = _platform(data, ctx)
    name = get_field(data, "framework", ctx, str)
    table = next((t for t in frameworks if t.name == name), None)
    if table is None:
        raise ctx.fail("framework", f"unknown framework {name!r}")
    known = {v.name for rel in table.releases for v in rel.variants}
    index = get_field(data, "index", ctx, str, optional=True) or ""
    # where pip finds the wheels read: None for PyPI (its JSON API or simple index), else the index
    index_url = index if index.startswith("https://") and "pypi.org" not in index else None
    out, gone = [], []
    for i, rel in enumerate(rows(data, "releases", ctx)):
        c = ctx.at(f"releases[{i}] ({rel.get('version')})", rel)
        version = version_field(rel, "version", c)
        python = _specifier(rel, "python", c) if rel.get("python") else None
        for j, miss in enumerate(rows(rel, "missing", c) if "missing" in rel else ()):
            mc = c.at(f"missing[{j}]", miss)
            gone.append(
                PlatformAbsence(
                    platform=platform,
                    framework=name,
                    versions=f"=={version}",
                    variants=(get_field(miss, "variant", mc, str),),
                    reason=get_field(miss, "reason", mc, str),
                    source=f"{where} (`envbuilder matrix refresh`, {data.get('reviewed')})",
                    generated=True,
                )
            )
        for j, row in enumerate(rows(rel, "variants", c)):
            vc = c.at(f"variants[{j}] ({row.get('name')})", row)
            variant = get_field(row, "name", vc, str, optional=True) or _only_cuda(table, version)
            if variant is None or variant not in known:
                continue
            sass, ptx = cc_list(row, "sass", vc), cc_list(row, "ptx", vc)
            cuda_x = version_field(row, "cuda", vc, optional=True)
            if not sass and not ptx and variant != CPU:
                # no member carries a kernel, whatever METADATA pins (TensorFlow's aarch64 wheels
                # and their and-cuda extra): not a GPU build; platforms.yaml's absence says why
                continue
            comp = compiler_field(row, vc)
            if comp is not None and comp.ptxas is not None:
                comp = _replace_any(comp, {"ptxas_cuda": ptxas_cuda(cuda, comp.ptxas)})
            wheels = get_field(row, "wheels", vc, list, optional=True) or []
            if not all(isinstance(w, dict) and {"file", "sha256"} <= set(w) for w in wheels):
                raise vc.fail(
                    "wheels", "expected a list of {file, sha256} mappings (matrix refresh writes them)"
                )
            out.append(
                PlatformBuild(
                    platform=platform,
                    framework=name,
                    versions=f"=={version}",
                    variant=variant,
                    sass=sass,
                    ptx=ptx,
                    archs_from_default=False,
                    # a CUDA build is installed from where its wheel was read; a CPU build (PyPI's
                    # aarch64 torch through 2.10) keeps its variant's index, which serves it too
                    index_url=index_url,
                    own_index=cuda_x is not None,
                    python=python,
                    wheels=tuple(f"{w['file']} sha256:{w['sha256']}" for w in wheels),
                    source=f"{where} (`envbuilder matrix refresh`, {data.get('reviewed')}): "
                    f"read from the {platform} wheel{'s' if len(wheels) > 1 else ''}",
                    generated=True,
                    ptx_isa=version_field(row, "ptx_isa", vc, optional=True),
                    kernel_sets=kernel_sets_field(row, vc),
                    compiler=comp,
                    cuda=cuda_x,
                    cudnn=version_field(row, "cudnn", vc, optional=True),
                    nccl=version_field(row, "nccl", vc, optional=True),
                )
            )
    return tuple(out), tuple(gone)


def _only_cuda(table: FrameworkMatrix, version: str) -> str | None:
    """The name of the release's only CUDA variant (a generated row whose pins name none)."""
    rel = next((r for r in table.releases if r.version == version), None)
    names = [v.name for v in rel.variants if v.cuda is not None] if rel is not None else []
    return names[0] if len(names) == 1 else None


def disagreements(m: Matrix) -> list[str]:
    """Where a generated row (read from the platform's wheel) says otherwise than the curated
    platforms.yaml row it overrides, or than linux/amd64's lists that a curated row takes
    (`archs_from`), or than a curated absence: the wheel wins; `matrix check` prints each."""
    out = []
    curated = [b for b in m.platforms.builds if not b.generated]
    for g in (b for b in m.platforms.builds if b.generated):
        version = g.versions.removeprefix("==")
        what = f"{g.framework} {version} {g.variant} {g.platform}"
        wheel = f"the wheel reads sass {list(g.sass)} ptx {list(g.ptx)}; the wheel wins"
        c = next(
            (
                b
                for b in curated
                if (b.platform, b.framework, b.variant) == (g.platform, g.framework, g.variant)
                and SpecifierSet(b.versions).contains(version, prereleases=True)
            ),
            None,
        )
        if c is not None and c.archs_from_default:
            amd64 = _amd64_variant(m, g.framework, version, g.variant)
            if amd64 is not None and (amd64.sass, amd64.ptx) != (g.sass, g.ptx):
                out.append(
                    f"{what}: platforms.yaml ({c.versions}) takes linux/amd64's sass {list(amd64.sass)} "
                    f"ptx {list(amd64.ptx)}, {wheel}"
                )
        elif c is not None and (c.sass, c.ptx) != (g.sass, g.ptx):
            out.append(
                f"{what}: platforms.yaml ({c.versions}) says sass {list(c.sass)} ptx {list(c.ptx)}, {wheel}"
            )
        gone = next(
            (a for a in m.platforms.absent if not a.generated and _absent_covers(a, g, version)), None
        )
        if gone is not None and g.cuda is not None:
            out.append(f"{what}: platforms.yaml says it is absent ({gone.reason}), but the wheel was read")
    for a in (a for a in m.platforms.absent if a.generated):
        version = a.versions.removeprefix("==")
        for v in a.variants:
            c = next(
                (
                    b
                    for b in curated
                    if (b.platform, b.framework, b.variant) == (a.platform, a.framework, v)
                    and SpecifierSet(b.versions).contains(version, prereleases=True)
                ),
                None,
            )
            if c is not None:
                out.append(
                    f"{a.framework} {version} {v} {a.platform}: platforms.yaml ({c.versions}) says it is "
                    f"published, but {a.reason}; the index wins"
                )
    return out


def _absent_covers(a: PlatformAbsence, b: PlatformBuild, version: str) -> bool:
    return (
        (a.platform, a.framework) == (b.platform, b.framework)
        and (not a.variants or b.variant in a.variants)
        and SpecifierSet(a.versions).contains(version, prereleases=True)
    )


def _amd64_variant(m: Matrix, framework: str, version: str, variant: str) -> FrameworkVariant | None:
    for fw in m.frameworks:
        if fw.name == framework:
            for rel in fw.releases:
                if rel.version == version:
                    return next((v for v in rel.variants if v.name == variant), None)
    return None


def check_platforms(m: Matrix, known_cc: set[str]) -> None:
    """Cross-file checks: every framework, variant and GPU named exists in the other files, every
    compute capability is known. Raises MatrixError."""
    ctx = Ctx("platforms.yaml")
    names = {fw.name: {v.name for rel in fw.releases for v in rel.variants} for fw in m.frameworks}
    for b in m.platforms.builds:
        c = ctx.at(f"{b.framework} {b.versions} {b.variant}")
        if b.framework not in names:
            raise c.fail("framework", f"unknown framework {b.framework!r}")
        if b.variant not in names[b.framework]:
            raise c.fail("variant", f"{b.framework} has no variant {b.variant!r} in frameworks/")
        unknown = (set(b.sass) | set(b.ptx)) - known_cc
        if unknown:
            raise c.fail("sass/ptx", f"unknown compute capability {sorted(unknown)}")
    models = {g.name for g in m.gpus.models}
    for g in m.platforms.gpus:
        if g.model not in models:
            raise ctx.at(f"gpus {g.model}").fail("model", f"no GPU model {g.model!r} in gpus.yaml")


def platform_build(
    m: Matrix, platform: str, framework: str, version: str, variant: str, python: str | None = None
) -> PlatformBuild | None:
    """The build of `framework` `version` `variant` for `platform` (and CPython `python`, X.Y, when
    given), or None when no fact says it exists. linux/amd64 is not asked here: its facts are the
    frameworks' own."""
    read_absent: bool | None = None  # does the index say this release has no such wheel here?
    for b in m.platforms.builds:
        if (b.platform, b.framework, b.variant) != (platform, framework, variant):
            continue
        if not SpecifierSet(b.versions).contains(version, prereleases=True):
            continue
        if python is not None and b.python is not None and python not in SpecifierSet(b.python):
            if b.generated:
                return None  # the wheels of this release were read: none for this CPython
            continue
        if not b.generated:
            if read_absent is None:
                gone = absence(m, platform, framework, version, variant)
                read_absent = gone is not None and gone.generated
            if read_absent:
                return None  # the index was read: no wheel of this platform (a curated row says otherwise)
        return b
    return None


def absence(m: Matrix, platform: str, framework: str, version: str, variant: str) -> PlatformAbsence | None:
    """Why `framework` `version` `variant` does not exist for `platform`, when the matrix says."""
    for a in m.platforms.absent:
        if (a.platform, a.framework) != (platform, framework):
            continue
        if a.variants and variant not in a.variants:
            continue
        if SpecifierSet(a.versions).contains(version, prereleases=True):
            return a
    return None


def variant_for_platform(
    m: Matrix, platform: str, release: FrameworkRelease, variant: FrameworkVariant
) -> tuple[FrameworkVariant, PlatformBuild | None] | str:
    """The variant as published for `platform` (its own arch lists and index), with the row that
    says so; or the reason it does not exist there."""
    if platform == DEFAULT_PLATFORM:
        return variant, None
    build = platform_build(m, platform, release.framework, release.version, variant.name)
    if build is None:
        what = f"{release.framework} {release.version}+{variant.name}"
        gone = absence(m, platform, release.framework, release.version, variant.name)
        if gone is not None and (variant.cuda is not None or gone.variants):
            return f"{what} has no {platform} build: {gone.reason} ({gone.source})"
        return f"{what}: no fact says it is published for {platform} (matrices/platforms.yaml)"
    fields: dict[str, Any] = {}
    if build.generated:
        # the platform's own wheel, read by `matrix refresh`: every fact it carries
        fields = {
            "sass": build.sass,
            "ptx": build.ptx,
            "ptx_isa": build.ptx_isa,
            "arch_source": "; ".join(build.wheels) or None,
            "kernel_sets": build.kernel_sets,
            "compiler": build.compiler,
        }
        fields |= {k: getattr(build, k) for k in ("cuda", "cudnn", "nccl") if getattr(build, k) is not None}
    elif not build.archs_from_default:
        # the platform's own wheels: their arch lists, and no PTX ISA read from them
        fields = {
            "sass": build.sass,
            "ptx": build.ptx,
            "ptx_isa": None,
            "arch_source": "; ".join(build.wheels) or None,  # None: curated, not read from a wheel
            # read from the linux/amd64 wheels only: not this platform's facts
            "kernel_sets": (),
            "compiler": None,
        }
    if build.own_index:
        fields["index_url"] = build.index_url
    return _replace(variant, fields), build


def gpu_platform(m: Matrix, model: str | None) -> PlatformGpu | None:
    """The platform row of a GPU model that only exists in hosts of one platform."""
    return next((g for g in m.platforms.gpus if g.model == model), None) if model else None


def images_for(m: Matrix, platform: str) -> PlatformImages | None:
    """Which base images exist for `platform`; None for linux/amd64 (every image of the matrix)."""
    return next((i for i in m.platforms.images if i.platform == platform), None)


def _replace(variant: FrameworkVariant, fields: dict[str, Any]) -> FrameworkVariant:
    return _replace_any(variant, fields)


R = TypeVar("R")


def _replace_any(record: R, fields: dict[str, Any]) -> R:
    from dataclasses import replace

    return replace(record, **fields) if fields else record  # type: ignore[type-var]


def _platform(row: dict[str, Any], c: Ctx) -> str:
    value = get_field(row, "platform", c, str)
    if value not in PLATFORMS or value == DEFAULT_PLATFORM:
        others = [p for p in PLATFORMS if p != DEFAULT_PLATFORM]
        raise c.fail(
            "platform", f"expected one of {others} ({DEFAULT_PLATFORM} is frameworks/*.yaml), got {value!r}"
        )
    return value


def _specifier(row: dict[str, Any], key: str, c: Ctx) -> str:
    value = get_field(row, key, c, str)
    try:
        SpecifierSet(value)
    except InvalidSpecifier as exc:
        raise c.fail(key, f"not a PEP 440 specifier: {value!r}") from exc
    return value


def _archs_from(row: dict[str, Any], c: Ctx) -> bool:
    value = get_field(row, "archs_from", c, str, optional=True)
    if value is None:
        return False
    if value != DEFAULT_PLATFORM:
        raise c.fail("archs_from", f"only {DEFAULT_PLATFORM} can lend its arch lists, got {value!r}")
    if "sass" in row or "ptx" in row:
        raise c.fail("archs_from", "give either archs_from or sass/ptx, not both")
    return True


_WHEEL_READ = re.compile(r"^[A-Za-z0-9_.+!-]+\.whl sha256:[0-9a-f]{64}$")


def _wheels(row: dict[str, Any], c: Ctx) -> tuple[str, ...]:
    """The wheels a row's arch lists were read from, each "FILE sha256:HEX"."""
    out = tuple(str(w) for w in get_field(row, "wheels", c, list, optional=True) or ())
    for w in out:
        if not _WHEEL_READ.fullmatch(w):
            raise c.fail("wheels", f"expected 'FILE.whl sha256:HEX' (64 hex digits), got {w!r}")
    return out


def _source(row: dict[str, Any], c: Ctx) -> str:
    value = get_field(row, "source", c, str)
    if not value.strip():
        raise c.fail("source", "every platform fact names its source")
    return value
