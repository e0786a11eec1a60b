"""Loads matrices/*.yaml into typed, frozen records and checks their invariants (reading and
field checks: reader.py).

The only reader of the matrix files: everything past this module sees `models.Matrix`.
Every problem names the file, the row (with its line) and the field.
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envbuilder import resources
from envbuilder.errors import MatrixError, UsageError
from envbuilder.matrix.reader import (
    _ccs,
    _checked,
    _Ctx,
    _driver,
    _get,
    _read,
    _rows,
    _unique,
    _version,
)
from envbuilder.models import (
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
    Matrix,
    RequireRule,
)
from envbuilder.versions import major_minor, parse_cc, parse_version

FRAMEWORKS = ("torch", "tensorflow", "jax")


# --------------------------------------------------------------------------- cuda.yaml


def _load_cuda(path: Path) -> CudaMatrix:
    data, ctx = _read(path)
    majors = []
    for i, row in enumerate(_rows(data, "majors", ctx)):
        c = ctx.at(f"majors[{i}]", row)
        majors.append(
            CudaMajor(
                major=_get(row, "major", c, int),
                mvc_min_driver=_driver(row, "mvc_min_driver", c),
                mvc_max_branch=_get(row, "mvc_max_branch", c, int, optional=True),
            )
        )
    fwd = _get(data, "forward_compat", ctx, dict)
    segments = tuple(str(s) for s in _get(fwd, "segments", ctx.at("forward_compat"), list))
    releases, row_ctx = [], []
    for i, row in enumerate(_rows(data, "releases", ctx)):
        c = ctx.at(f"releases[{i}] ({row.get('version')})", row)
        releases.append(
            CudaRelease(
                version=_version(row, "version", c),
                label=_get(row, "label", c, str),
                min_driver=_driver(row, "min_driver", c),
                archs=_ccs(row, "archs", c),
            )
        )
        row_ctx.append(c)
    _unique(((r.version, c) for r, c in zip(releases, row_ctx, strict=True)), "CUDA release")
    _unique(((str(m.major), ctx.at("majors")) for m in majors), "CUDA major")
    order = sorted(zip(releases, row_ctx, strict=True), key=lambda rc: Version(rc[0].version))
    for (prev, _), (cur, c) in itertools.pairwise(order):
        if Version(cur.min_driver) < Version(prev.min_driver):
            raise c.fail(
                "min_driver",
                f"{cur.min_driver} is lower than {prev.min_driver} of CUDA {prev.version}: "
                "minimum drivers never decrease as CUDA increases",
            )
    known_majors = {m.major for m in majors}
    for r, c in zip(releases, row_ctx, strict=True):
        if Version(r.version).release[0] not in known_majors:
            raise c.fail("version", f"CUDA major of {r.version} has no entry under majors")
    return CudaMatrix(
        releases=tuple(r for r, _ in order),
        majors=tuple(sorted(majors, key=lambda m: m.major)),
        forward_compat_segments=segments,
    )


# --------------------------------------------------------------------------- gpus.yaml


def _load_gpus(path: Path) -> GpuMatrix:
    data, ctx = _read(path)
    archs = []
    for i, row in enumerate(_rows(data, "archs", ctx)):
        c = ctx.at(f"archs[{i}]", row)
        cc = _get(row, "cc", c, str)
        _checked(c, "cc", cc, parse_cc)
        archs.append(ArchInfo(cc=cc, family=_get(row, "family", c, str), name=_get(row, "name", c, str)))
    _unique(((a.cc, ctx.at("archs")) for a in archs), "compute capability")
    family_of = {a.cc: a.family for a in archs}
    models, names = [], []
    for i, row in enumerate(_rows(data, "models", ctx)):
        c = ctx.at(f"models[{i}] ({row.get('name')})", row)
        cc = _get(row, "cc", c, str)
        if cc not in family_of:
            raise c.fail("cc", f"{cc!r} is not a known compute capability (add it under archs)")
        nvml = tuple(str(n) for n in _get(row, "nvml_names", c, list))
        model = GpuModel(
            name=_get(row, "name", c, str),
            nvml_names=nvml,
            cc=cc,
            family=family_of[cc],
            brand=_get(row, "brand", c, str),
            segment=_get(row, "segment", c, str),
            first_branch=_get(row, "first_branch", c, int, optional=True),
            last_branch=_get(row, "last_branch", c, int, optional=True),
        )
        models.append(model)
        names += [(n.casefold(), c) for n in {model.name, *nvml}]
    _unique(names, "GPU name")
    return GpuMatrix(archs=tuple(sorted(archs, key=lambda a: parse_cc(a.cc))), models=tuple(models))


# --------------------------------------------------------------------------- frameworks/*.yaml


def _fill(templates: list[Any], subst: dict[str, str], c: _Ctx, key: str) -> tuple[str, ...]:
    try:
        return tuple(str(t).format(**subst) for t in templates)
    except (KeyError, IndexError) as exc:
        raise c.fail(key, f"unknown placeholder {exc} in {templates!r}") from exc


def _load_framework(path: Path) -> FrameworkMatrix:
    data, ctx = _read(path)
    name = _get(data, "framework", ctx, str)
    install = _get(data, "install", ctx, dict)
    releases, seen = [], []
    for i, row in enumerate(_rows(data, "releases", ctx)):
        c = ctx.at(f"releases[{i}] ({row.get('version')})", row)
        version = _version(row, "version", c)
        python = _get(row, "python", c, str)
        try:
            SpecifierSet(python)
        except InvalidSpecifier as exc:
            raise c.fail("python", f"not a PEP 440 specifier: {python!r}") from exc
        companions = _get(row, "companions", c, dict, optional=True) or {}
        for k in companions:
            _checked(c, f"companions.{k}", _get(companions, k, c, str), parse_version)
        variants, vseen = [], []
        for j, vrow in enumerate(_rows(row, "variants", c)):
            vc = c.at(f"variants[{j}] ({vrow.get('name')})", vrow)
            variants.append(_variant(vrow, vc, install, version, companions))
            vseen.append((variants[-1].name, vc))
        _unique(vseen, f"variant of {name} {version}")
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
    _unique(seen, f"{name} release")
    return FrameworkMatrix(name=name, releases=tuple(sorted(releases, key=lambda r: Version(r.version))))


def _variant(
    row: dict[str, Any], c: _Ctx, install: dict[str, Any], version: str, companions: dict[str, str]
) -> FrameworkVariant:
    merged = {**install, **row}  # a variant may override any install key
    vname = _get(row, "name", c, str)
    cuda = _version(row, "cuda", c, optional=True)
    cudnn = _version(row, "cudnn", c, optional=True)
    subst = {"version": version, "variant": vname, **companions}
    index_url = merged.get("index_url")
    system = _fill(_get(merged, "system", c, list), subst, c, "system")
    uses_system = bool(merged.get("uses_system_cuda", False)) and cuda is not None
    comp_templates = _get(merged, "companions", c, dict, optional=True) or {}
    companion_packages = tuple(
        sorted((pkg, str(tpl).format(**subst)) for pkg, tpl in comp_templates.items() if pkg in companions)
    )
    return FrameworkVariant(
        name=vname,
        cuda=cuda,
        cudnn=cudnn,
        nccl=_version(row, "nccl", c, optional=True),
        sass=_ccs(row, "sass", c),
        ptx=_ccs(row, "ptx", c),
        min_driver=_driver(row, "min_driver", c, optional=True),
        index_url=str(index_url).format(**subst) if index_url else None,
        bundled_packages=_fill(_get(merged, "bundled", c, list), subst, c, "bundled"),
        system_packages=system,
        companion_packages=companion_packages,
        uses_system_cuda=uses_system,
        needs_system_cudnn=cudnn.split(".")[0] if (uses_system and cudnn) else None,
        default=bool(row.get("default", False)),
    )


# --------------------------------------------------------------------------- base_images.yaml


def _cudnn_tag_ok(flavor: str, flavors: list[Any]) -> bool:
    return flavor in flavors


def _load_base_images(path: Path) -> tuple[BaseImage, ...]:
    data, ctx = _read(path)
    os_python = {
        k: str(_get(v, "python", ctx.at(f"os.{k}"), str)) for k, v in _get(data, "os", ctx, dict).items()
    }
    images: list[tuple[BaseImage, _Ctx]] = []
    for i, row in enumerate(_rows(data, "cuda_images", ctx)):
        c = ctx.at(f"cuda_images[{i}] ({row.get('cuda')})", row)
        cuda = _version(row, "cuda", c)
        req = _get(row, "require", c, dict)
        rc = c.at("require", req)
        require_cuda = _version(req, "cuda", rc)
        rules = tuple(
            RequireRule(brand=str(b), branch=int(br))
            for br in _get(req, "branches", rc, list)
            for b in _get(req, "brands", rc, list)
        )
        cudnn = _get(row, "cudnn", c, dict, optional=True)
        for os_name in _get(row, "os", c, list):
            if os_name not in os_python:
                raise c.fail("os", f"{os_name!r} has no entry in the os table")
            for flavor in _get(row, "flavors", c, list):
                variants: list[tuple[str | None, str]] = [(None, f"{cuda}-{flavor}-{os_name}")]
                if cudnn and _cudnn_tag_ok(flavor, _get(cudnn, "flavors", c, list)):
                    tag = _get(cudnn, "tag", c.at("cudnn"), str)
                    variants.append(
                        (
                            _get(cudnn, "major", c.at("cudnn"), str),
                            f"{cuda}-{tag}-{flavor}-{os_name}",
                        )
                    )
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
    for i, row in enumerate(_rows(data, "slim_images", ctx)):
        c = ctx.at(f"slim_images[{i}] ({row.get('ref')})", row)
        images.append(
            (
                BaseImage(
                    ref=_get(row, "ref", c, str),
                    kind="slim",
                    cuda=None,
                    cudnn=None,
                    flavor=None,
                    os=_get(row, "os", c, str),
                    python=_version(row, "python", c),
                    python_install="present",
                    require_cuda=None,
                    require_rules=(),
                ),
                c,
            )
        )
    _unique(((img.ref, c) for img, c in images), "base image")
    return tuple(img for img, _ in images)


# --------------------------------------------------------------------------- cross-file invariants


def _check_cross(m: Matrix, directory: Path) -> None:
    known_cc = {a.cc for a in m.gpus.archs}
    cuda_minors = {major_minor(r.version) for r in m.cuda.releases}
    for r in m.cuda.releases:
        unknown = set(r.archs) - known_cc
        if unknown:
            raise (
                _Ctx("cuda.yaml")
                .at(f"release {r.version}")
                .fail(
                    "archs",
                    f"unknown compute capability {sorted(unknown)} (add it to gpus.yaml archs)",
                )
            )
    for fw in m.frameworks:
        for rel in fw.releases:
            for v in rel.variants:
                c = _Ctx(f"frameworks/{fw.name}.yaml").at(f"{rel.version} variant {v.name}")
                unknown = (set(v.sass) | set(v.ptx)) - known_cc
                if unknown:
                    raise c.fail("sass/ptx", f"unknown compute capability {sorted(unknown)}")
                if v.cuda is not None and major_minor(v.cuda) not in cuda_minors:
                    raise c.fail("cuda", f"CUDA {v.cuda} is not a release in cuda.yaml")
    for img in m.base_images:
        if img.cuda is not None and major_minor(img.cuda) not in cuda_minors:
            raise (
                _Ctx("base_images.yaml")
                .at(img.ref)
                .fail("cuda", f"CUDA {img.cuda} is not a release in cuda.yaml")
            )
    del directory


# --------------------------------------------------------------------------- public API


def load_matrix(directory: Path | None = None) -> Matrix:
    """Load and check every matrix file under `directory` (default: the bundled matrices/).

    Raises MatrixError naming the file, row and field of the first problem found.
    """
    if directory is None:
        return _load_default()
    return _load(Path(directory))


@functools.cache
def _load_default() -> Matrix:
    return _load(resources.matrices_dir())


def _load(directory: Path) -> Matrix:
    if not directory.is_dir():
        raise MatrixError(
            f"matrix folder {directory} does not exist", hint="pass --dir to an existing folder"
        )
    frameworks = tuple(_load_framework(directory / "frameworks" / f"{n}.yaml") for n in FRAMEWORKS)
    for fw, expected in zip(frameworks, FRAMEWORKS, strict=True):
        if fw.name != expected:
            raise MatrixError(f"frameworks/{expected}.yaml: field 'framework' says {fw.name!r}")
    files = [
        "cuda.yaml",
        "gpus.yaml",
        "base_images.yaml",
        *(f"frameworks/{n}.yaml" for n in FRAMEWORKS),
    ]
    reviewed = tuple((f, str(_read(directory / f)[0]["reviewed"])) for f in files)
    m = Matrix(
        cuda=_load_cuda(directory / "cuda.yaml"),
        gpus=_load_gpus(directory / "gpus.yaml"),
        frameworks=frameworks,
        base_images=_load_base_images(directory / "base_images.yaml"),
        reviewed=reviewed,
    )
    _check_cross(m, directory)
    return m


def framework(m: Matrix, name: str) -> FrameworkMatrix:
    """The framework table `name`. Raises UsageError for an unknown framework."""
    for fw in m.frameworks:
        if fw.name == name:
            return fw
    raise UsageError(f"unknown framework {name!r}", hint=f"envbuilder knows: {', '.join(FRAMEWORKS)}")
