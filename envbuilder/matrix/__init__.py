"""Loads matrices/*.yaml into typed, frozen records and checks their invariants (reading and
field checks: reader.py; the compiled form served to commands: compiled.py).

The only reader of the matrix files: everything past this module sees `models.Matrix`.
Every problem names the file, the row (with its line) and the field.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envbuilder import resources
from envbuilder.errors import MatrixError, UsageError
from envbuilder.frameworks import NAMES
from envbuilder.matrix.compiler import with_ptxas_cuda
from envbuilder.matrix.generated import generated_file, overlay
from envbuilder.matrix.installable import load_answers, with_user_answers
from envbuilder.matrix.model import (
    ArchInfo,
    BaseImage,
    CudaMajor,
    CudaMatrix,
    CudaRelease,
    FrameworkMatrix,
    FrameworkRelease,
    FrameworkVariant,
    GpuMatrix,
    GpuModel,
    KnownBad,
    Matrix,
    PtxIsa,
    RequireRule,
    WslLimit,
)
from envbuilder.matrix.platforms import check_platforms, load_generated_builds, load_platforms
from envbuilder.matrix.reader import (
    Ctx,
    branch_field,
    cc_list,
    checked_field,
    compiler_field,
    driver_field,
    get_field,
    kernel_sets_field,
    read_file,
    require_unique,
    rows,
    version_field,
)
from envbuilder.platforms import DEFAULT_PLATFORM, PLATFORMS
from envbuilder.versions import major_minor, parse_cc, parse_version

FRAMEWORKS = NAMES  # the registry's (envbuilder/frameworks/): frameworks/NAME.yaml each
INSTALLABLE = "generated/installable.yaml"  # uv's answers on whole install sets (matrix installable)
Doc = tuple[dict[str, Any], Ctx]  # a parsed matrix file and its location for error messages


# --------------------------------------------------------------------------- cuda.yaml


def _load_cuda(doc: Doc) -> CudaMatrix:
    data, ctx = doc
    majors = []
    for i, row in enumerate(rows(data, "majors", ctx)):
        c = ctx.at(f"majors[{i}]", row)
        majors.append(
            CudaMajor(
                major=get_field(row, "major", c, int),
                mvc_min_driver=driver_field(row, "mvc_min_driver", c),
                mvc_max_branch=branch_field(row, "mvc_max_branch", c),
            )
        )
    fwd = get_field(data, "forward_compat", ctx, dict)
    segments = tuple(str(s) for s in get_field(fwd, "segments", ctx.at("forward_compat"), list))
    releases, row_ctx = [], []
    for i, row in enumerate(rows(data, "releases", ctx)):
        c = ctx.at(f"releases[{i}] ({row.get('version')})", row)
        releases.append(
            CudaRelease(
                version=version_field(row, "version", c),
                label=get_field(row, "label", c, str),
                min_driver=driver_field(row, "min_driver", c),
                archs=cc_list(row, "archs", c),
                windows_driver=driver_field(row, "windows_driver", c, optional=True),
            )
        )
        row_ctx.append(c)
    require_unique(((r.version, c) for r, c in zip(releases, row_ctx, strict=True)), "CUDA release")
    require_unique(((str(m.major), ctx.at("majors")) for m in majors), "CUDA major")
    order = sorted(zip(releases, row_ctx, strict=True), key=lambda rc: Version(rc[0].version))
    for (prev, _), (cur, c) in itertools.pairwise(order):
        if Version(cur.min_driver) < Version(prev.min_driver):
            raise c.fail(
                "min_driver",
                f"{cur.min_driver} is lower than {prev.min_driver} of CUDA {prev.version}: "
                "minimum drivers never decrease as CUDA increases",
            )
    windows = [(r, c) for r, c in order if r.windows_driver is not None]
    for (prev, _), (cur, c) in itertools.pairwise(windows):
        assert prev.windows_driver is not None and cur.windows_driver is not None
        if Version(cur.windows_driver) < Version(prev.windows_driver):
            raise c.fail(
                "windows_driver",
                f"{cur.windows_driver} is lower than {prev.windows_driver} of CUDA {prev.version}: "
                "minimum drivers never decrease as CUDA increases",
            )
    wsl = get_field(data, "wsl", ctx, dict, optional=True) or {}
    limits = []
    for i, row in enumerate(get_field(wsl, "limits", ctx.at("wsl"), list, optional=True) or ()):
        if not isinstance(row, dict):
            raise ctx.at(f"wsl.limits[{i}]").fail(None, "each limit is a mapping with `lacks` and `detail`")
        c = ctx.at(f"wsl.limits[{i}]", row)
        limits.append(
            WslLimit(lacks=get_field(row, "lacks", c, str), detail=get_field(row, "detail", c, str))
        )
    known_majors = {m.major for m in majors}
    for r, c in zip(releases, row_ctx, strict=True):
        if Version(r.version).release[0] not in known_majors:
            raise c.fail("version", f"CUDA major of {r.version} has no entry under majors")
    return CudaMatrix(
        releases=tuple(r for r, _ in order),
        majors=tuple(sorted(majors, key=lambda m: m.major)),
        forward_compat_segments=segments,
        wsl_limits=tuple(limits),
    )


# --------------------------------------------------------------------------- gpus.yaml


def _load_gpus(doc: Doc) -> GpuMatrix:
    data, ctx = doc
    archs = []
    for i, row in enumerate(rows(data, "archs", ctx)):
        c = ctx.at(f"archs[{i}]", row)
        cc = get_field(row, "cc", c, str)
        checked_field(c, "cc", cc, parse_cc)
        archs.append(
            ArchInfo(cc=cc, family=get_field(row, "family", c, str), name=get_field(row, "name", c, str))
        )
    require_unique(((a.cc, ctx.at("archs")) for a in archs), "compute capability")
    family_of = {a.cc: a.family for a in archs}
    models, names = [], []
    for i, row in enumerate(rows(data, "models", ctx)):
        c = ctx.at(f"models[{i}] ({row.get('name')})", row)
        cc = get_field(row, "cc", c, str)
        if cc not in family_of:
            raise c.fail("cc", f"{cc!r} is not a known compute capability (add it under archs)")
        nvml = tuple(str(n) for n in get_field(row, "nvml_names", c, list))
        aliases = tuple(str(n) for n in get_field(row, "aliases", c, list, optional=True) or ())
        name = get_field(row, "name", c, str)
        if not name.strip():
            raise c.fail("name", "empty: a model needs the name users give (--gpu)")
        model = GpuModel(
            name=name,
            nvml_names=nvml,
            aliases=aliases,
            cc=cc,
            family=family_of[cc],
            brand=get_field(row, "brand", c, str),
            segment=get_field(row, "segment", c, str),
            first_branch=branch_field(row, "first_branch", c),
            last_branch=branch_field(row, "last_branch", c),
        )
        models.append(model)
        names += [(n.casefold(), c) for n in {model.name, *nvml, *aliases}]
    require_unique(names, "GPU name")
    return GpuMatrix(archs=tuple(sorted(archs, key=lambda a: parse_cc(a.cc))), models=tuple(models))


# --------------------------------------------------------------------------- frameworks/*.yaml


def _fill(templates: list[Any], subst: dict[str, str], c: Ctx, key: str) -> tuple[str, ...]:
    try:
        return tuple(str(t).format(**subst) for t in templates)
    except (KeyError, IndexError) as exc:
        raise c.fail(key, f"unknown placeholder {exc} in {templates!r}") from exc


def _load_framework(doc: Doc) -> FrameworkMatrix:
    data, ctx = doc
    name = get_field(data, "framework", ctx, str)
    install = get_field(data, "install", ctx, dict)
    releases, seen = [], []
    for i, row in enumerate(rows(data, "releases", ctx)):
        c = ctx.at(f"releases[{i}] ({row.get('version')})", row)
        version = version_field(row, "version", c)
        python = get_field(row, "python", c, str)
        try:
            SpecifierSet(python)
        except InvalidSpecifier as exc:
            raise c.fail("python", f"not a PEP 440 specifier: {python!r}") from exc
        companions = get_field(row, "companions", c, dict, optional=True) or {}
        for k in companions:
            checked_field(c, f"companions.{k}", get_field(companions, k, c, str), parse_version)
        variants, vseen = [], []
        for j, vrow in enumerate(rows(row, "variants", c)):
            vc = c.at(f"variants[{j}] ({vrow.get('name')})", vrow)
            variants.append(_variant(vrow, vc, install, version, companions))
            vseen.append((variants[-1].name, vc))
        require_unique(vseen, f"variant of {name} {version}")
        defaults = [v for v in variants if v.default]
        if len(defaults) > 1:
            raise c.fail("default", f"{len(defaults)} variants claim to be the PyPI default")
        releases.append(
            FrameworkRelease(
                framework=name,
                version=version,
                python=python,
                companions=tuple(sorted(companions.items())),
                variants=tuple(variants),
            )
        )
        seen.append((version, c))
    require_unique(seen, f"{name} release")
    return FrameworkMatrix(name=name, releases=tuple(sorted(releases, key=lambda r: Version(r.version))))


def _variant(
    row: dict[str, Any], c: Ctx, install: dict[str, Any], version: str, companions: dict[str, str]
) -> FrameworkVariant:
    merged = {**install, **row}  # a variant may override any install key
    vname = get_field(row, "name", c, str)
    cuda = version_field(row, "cuda", c, optional=True)
    cudnn = version_field(row, "cudnn", c, optional=True)
    subst = {"version": version, "variant": vname, **companions}
    index_url = merged.get("index_url")
    system = _fill(get_field(merged, "system", c, list), subst, c, "system")
    uses_system = bool(merged.get("uses_system_cuda", False)) and cuda is not None
    comp_templates = get_field(merged, "companions", c, dict, optional=True) or {}
    companion_packages = tuple(
        sorted((pkg, str(tpl).format(**subst)) for pkg, tpl in comp_templates.items() if pkg in companions)
    )
    return FrameworkVariant(
        name=vname,
        cuda=cuda,
        cudnn=cudnn,
        nccl=version_field(row, "nccl", c, optional=True),
        sass=cc_list(row, "sass", c),
        ptx=cc_list(row, "ptx", c),
        min_driver=driver_field(row, "min_driver", c, optional=True),
        index_url=str(index_url).format(**subst) if index_url else None,
        bundled_packages=_fill(get_field(merged, "bundled", c, list), subst, c, "bundled"),
        system_packages=system,
        companion_packages=companion_packages,
        uses_system_cuda=uses_system,
        needs_system_cudnn=cudnn.split(".")[0] if (uses_system and cudnn) else None,
        default=bool(row.get("default", False)),
        ptx_isa=version_field(row, "ptx_isa", c, optional=True),
        arch_source=get_field(row, "arch_source", c, str, optional=True) or None,
        kernel_sets=kernel_sets_field(row, c),
        compiler=compiler_field(row, c),
    )


# --------------------------------------------------------------------------- base_images.yaml


def _cudnn_tag_ok(flavor: str, flavors: list[Any]) -> bool:
    return flavor in flavors


def _load_base_images(doc: Doc) -> tuple[BaseImage, ...]:
    data, ctx = doc
    os_python = {
        k: str(get_field(v, "python", ctx.at(f"os.{k}"), str))
        for k, v in get_field(data, "os", ctx, dict).items()
    }
    images: list[tuple[BaseImage, Ctx]] = []
    for i, row in enumerate(rows(data, "cuda_images", ctx)):
        c = ctx.at(f"cuda_images[{i}] ({row.get('cuda')})", row)
        cuda = version_field(row, "cuda", c)
        req = get_field(row, "require", c, dict)
        rc = c.at("require", req)
        require_cuda = version_field(req, "cuda", rc)
        rules = tuple(
            RequireRule(brand=str(b), branch=int(br))
            for br in get_field(req, "branches", rc, list)
            for b in get_field(req, "brands", rc, list)
        )
        cudnn = get_field(row, "cudnn", c, dict, optional=True)
        for os_name in get_field(row, "os", c, list):
            if os_name not in os_python:
                raise c.fail("os", f"{os_name!r} has no entry in the os table")
            for flavor in get_field(row, "flavors", c, list):
                variants: list[tuple[str | None, str]] = [(None, f"{cuda}-{flavor}-{os_name}")]
                if cudnn and _cudnn_tag_ok(flavor, get_field(cudnn, "flavors", c, list)):
                    tag = get_field(cudnn, "tag", c.at("cudnn"), str)
                    major = get_field(cudnn, "major", c.at("cudnn"), str)
                    if not (major.isascii() and major.isdigit()):  # matched against a stack's cuDNN major
                        raise c.at("cudnn").fail(
                            "major", f'expected a cuDNN major version like "9", got {major!r}'
                        )
                    variants.append((major, f"{cuda}-{tag}-{flavor}-{os_name}"))
                for cudnn_major, tag in variants:
                    images.append(
                        (
                            BaseImage(
                                ref=f"nvidia/cuda:{tag}",
                                kind="cuda",
                                cuda=cuda,
                                cudnn=cudnn_major,
                                flavor=flavor,
                                os=os_name,
                                python=os_python[os_name],
                                python_install="apt",
                                require_cuda=require_cuda,
                                require_rules=rules,
                            ),
                            c,
                        )
                    )
    for i, row in enumerate(rows(data, "slim_images", ctx)):
        c = ctx.at(f"slim_images[{i}] ({row.get('ref')})", row)
        images.append(
            (
                BaseImage(
                    ref=get_field(row, "ref", c, str),
                    kind="slim",
                    cuda=None,
                    cudnn=None,
                    flavor=None,
                    os=get_field(row, "os", c, str),
                    python=version_field(row, "python", c),
                    python_install="present",
                    require_cuda=None,
                    require_rules=(),
                ),
                c,
            )
        )
    require_unique(((img.ref, c) for img, c in images), "base image")
    return tuple(img for img, _ in images)


# --------------------------------------------------------------------------- ptx_isa.yaml, known_bad.yaml


def _load_ptx_isa(doc: Doc) -> tuple[PtxIsa, ...]:
    data, ctx = doc
    out = []
    for i, row in enumerate(rows(data, "isa", ctx)):
        c = ctx.at(f"isa[{i}]", row)
        out.append(PtxIsa(isa=version_field(row, "isa", c), cuda=version_field(row, "cuda", c)))
    require_unique(((p.isa, ctx.at("isa")) for p in out), "PTX ISA")
    return tuple(sorted(out, key=lambda p: Version(p.isa)))


def _load_known_bad(doc: Doc) -> tuple[KnownBad, ...]:
    data, ctx = doc
    out = []
    for i, row in enumerate(rows(data, "known_bad", ctx)):
        c = ctx.at(f"known_bad[{i}]", row)
        versions = get_field(row, "versions", c, str, optional=True) or ""
        try:
            SpecifierSet(versions)
        except InvalidSpecifier as exc:
            raise c.fail("versions", f"not a PEP 440 specifier: {versions!r}") from exc
        path = get_field(row, "path", c, str)
        if path not in ("ptx", "any"):
            raise c.fail("path", f"expected 'ptx' or 'any', got {path!r}")
        issues = tuple(str(u) for u in get_field(row, "issues", c, list))
        if not issues or not all(u.startswith("https://") for u in issues):
            raise c.fail("issues", "every known-bad fact names the report it comes from (https:// URLs)")
        out.append(
            KnownBad(
                framework=get_field(row, "framework", c, str),
                versions=versions,
                variants=tuple(str(v) for v in get_field(row, "variants", c, list, optional=True) or ()),
                ccs=cc_list(row, "ccs", c),
                path=path,
                reason=get_field(row, "reason", c, str),
                issues=issues,
            )
        )
    return tuple(out)


# --------------------------------------------------------------------------- cross-file invariants


def _check_cross(m: Matrix, directory: Path) -> None:
    known_cc = {a.cc for a in m.gpus.archs}
    cuda_minors = {major_minor(r.version) for r in m.cuda.releases}
    for r in m.cuda.releases:
        unknown = set(r.archs) - known_cc
        if unknown:
            raise (
                Ctx("cuda.yaml")
                .at(f"release {r.version}")
                .fail(
                    "archs",
                    f"unknown compute capability {sorted(unknown)} (add it to gpus.yaml archs)",
                )
            )
    for fw in m.frameworks:
        for rel in fw.releases:
            for v in rel.variants:
                c = Ctx(f"frameworks/{fw.name}.yaml").at(f"{rel.version} variant {v.name}")
                unknown = (set(v.sass) | set(v.ptx)) - known_cc
                if unknown:
                    raise c.fail("sass/ptx", f"unknown compute capability {sorted(unknown)}")
                if v.cuda is not None and major_minor(v.cuda) not in cuda_minors:
                    raise c.fail("cuda", f"CUDA {v.cuda} is not a release in cuda.yaml")
    isas = {p.isa for p in m.ptx_isa}
    for fw in m.frameworks:
        for rel in fw.releases:
            for v in rel.variants:
                if v.ptx_isa is not None and isas and v.ptx_isa not in isas:
                    raise (
                        Ctx(f"frameworks/{fw.name}.yaml")
                        .at(f"{rel.version} variant {v.name}")
                        .fail("ptx_isa", f"PTX ISA {v.ptx_isa} is not in ptx_isa.yaml")
                    )
    for bad in m.known_bad:
        if bad.framework not in FRAMEWORKS:
            raise Ctx("known_bad.yaml").fail("framework", f"unknown framework {bad.framework!r}")
        unknown = set(bad.ccs) - known_cc
        if unknown:
            raise Ctx("known_bad.yaml").fail("ccs", f"unknown compute capability {sorted(unknown)}")
    for img in m.base_images:
        if img.cuda is not None and major_minor(img.cuda) not in cuda_minors:
            raise (
                Ctx("base_images.yaml")
                .at(img.ref)
                .fail("cuda", f"CUDA {img.cuda} is not a release in cuda.yaml")
            )
    del directory


# --------------------------------------------------------------------------- public API


def load_matrix(directory: Path | None = None, *, compiled: bool = True) -> Matrix:
    """Load and check every matrix file under `directory` (default: the bundled matrices/).

    The bundled matrix is served from its compiled form (matrix/compiled.py: the one shipped beside
    the YAML, else the user's cache) when one exists for exactly these files and this code, and
    compiled into the cache on a miss; `compiled=False`, or another
    folder, always reads and checks the YAML. Raises MatrixError naming the file, row and field of
    the first problem found.
    """
    if directory is not None:
        return _load(Path(directory))
    # the user's live installability answers (matrix installable) over the committed ones
    return with_user_answers(_load_default() if compiled else _load(resources.matrices_dir()))


@functools.cache
def _load_default() -> Matrix:
    from envbuilder.matrix import compiled

    directory = resources.matrices_dir()
    try:
        key = compiled.matrix_key(directory)
    except OSError:  # an unreadable file: let the YAML reader name it
        return _load(directory)
    for path in (compiled.shipped_file(directory), compiled.cache_file(key)):
        cached = compiled.read_compiled(path, key)
        if cached is not None:
            return cached
    matrix = _load(directory)
    compiled.write_compiled(compiled.cache_file(key), key, matrix)
    return matrix


def _load(directory: Path) -> Matrix:
    if not directory.is_dir():
        raise MatrixError(
            f"matrix folder {directory} does not exist", hint="pass --dir to an existing folder"
        )
    files = [
        "cuda.yaml",
        "gpus.yaml",
        "base_images.yaml",
        *(f"frameworks/{n}.yaml" for n in FRAMEWORKS),
    ]
    files += [f for f in ("ptx_isa.yaml", "known_bad.yaml", "platforms.yaml") if (directory / f).is_file()]
    files += [f"generated/{n}.yaml" for n in FRAMEWORKS if (directory / "generated" / f"{n}.yaml").is_file()]
    # rows read from another platform's own wheels (generated/arm64/NAME.yaml)
    platform_files = [generated_file(n, p) for p in PLATFORMS if p != DEFAULT_PLATFORM for n in FRAMEWORKS]
    platform_files = [f for f in platform_files if (directory / f).is_file()]
    files += platform_files
    if (directory / INSTALLABLE).is_file():
        files.append(INSTALLABLE)
    docs: dict[str, Doc] = {f: read_file(directory / f) for f in files}  # each file parsed once
    for n in FRAMEWORKS:  # generated rows (matrix refresh) over the curated ones
        if f"generated/{n}.yaml" in docs:
            data, ctx = docs[f"frameworks/{n}.yaml"]
            docs[f"frameworks/{n}.yaml"] = (overlay(data, *docs[f"generated/{n}.yaml"]), ctx)
    frameworks = tuple(_load_framework(docs[f"frameworks/{n}.yaml"]) for n in FRAMEWORKS)
    for fw, expected in zip(frameworks, FRAMEWORKS, strict=True):
        if fw.name != expected:
            raise MatrixError(f"frameworks/{expected}.yaml: field 'framework' says {fw.name!r}")
    cuda = _load_cuda(docs["cuda.yaml"])
    m = Matrix(
        cuda=cuda,
        gpus=_load_gpus(docs["gpus.yaml"]),
        frameworks=with_ptxas_cuda(cuda, frameworks),
        base_images=_load_base_images(docs["base_images.yaml"]),
        reviewed=tuple((f, str(data["reviewed"])) for f, (data, _) in docs.items()),
        ptx_isa=_load_ptx_isa(docs["ptx_isa.yaml"]) if "ptx_isa.yaml" in docs else (),
        known_bad=_load_known_bad(docs["known_bad.yaml"]) if "known_bad.yaml" in docs else (),
        installable=load_answers(docs[INSTALLABLE]) if INSTALLABLE in docs else (),
    )
    if "platforms.yaml" in docs:
        m = replace(m, platforms=load_platforms(docs["platforms.yaml"]))
    if platform_files:  # first: a generated row wins over a curated one (platform_build takes the first)
        read = [load_generated_builds(docs[f], f, cuda, m.frameworks) for f in platform_files]
        builds = tuple(b for bs, _ in read for b in bs) + m.platforms.builds
        absent = tuple(a for _, gone in read for a in gone) + m.platforms.absent
        m = replace(m, platforms=replace(m.platforms, builds=builds, absent=absent))
    _check_cross(m, directory)
    check_platforms(m, {a.cc for a in m.gpus.archs})
    return m


def framework(m: Matrix, name: str) -> FrameworkMatrix:
    """The framework table `name`. Raises UsageError for an unknown framework."""
    for fw in m.frameworks:
        if fw.name == name:
            return fw
    raise UsageError(f"unknown framework {name!r}", hint=f"envbuilder knows: {', '.join(FRAMEWORKS)}")
