"""platforms.yaml: which framework builds, base images and GPUs exist for platforms other than
linux/amd64 (the one frameworks/*.yaml describe), read into PlatformFacts; and the lookups over
them ("is there an aarch64 cu124 torch 2.6 for cp312" is `platform_build(...)`).
"""

from __future__ import annotations

import re
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from envbuilder.matrix.model import (
    FrameworkRelease,
    FrameworkVariant,
    Matrix,
    PlatformAbsence,
    PlatformBuild,
    PlatformFacts,
    PlatformGpu,
    PlatformImages,
)
from envbuilder.matrix.reader import Ctx, cc_list, get_field, rows
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
    for b in m.platforms.builds:
        if (b.platform, b.framework, b.variant) != (platform, framework, variant):
            continue
        if not SpecifierSet(b.versions).contains(version, prereleases=True):
            continue
        if python is not None and b.python is not None and python not in SpecifierSet(b.python):
            continue
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
    if not build.archs_from_default:
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
    from dataclasses import replace

    return replace(variant, **fields) if fields else variant


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
