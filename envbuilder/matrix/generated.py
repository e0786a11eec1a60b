"""The generated rows (matrices/generated/<framework>.yaml, written by `matrix refresh`) laid over
the curated framework files before they are parsed: what a wheel says wins over what was typed.

For a release both files know, a generated variant replaces the curated one's sass, ptx and
ptx_isa (and its cuda, cudnn, nccl, python where the wheel names them) and records the wheels as
`arch_source`. A release only the generated file knows (newer than the curated file) is added;
what no wheel says (min_driver, strategies, `default`) it takes from the newest curated release
with a variant of the same name, and says so in `inherited_from`.
"""

from __future__ import annotations

import copy
from typing import Any

from packaging.version import Version

from envbuilder.matrix.reader import Ctx, get_field, rows
from envbuilder.platforms import DEFAULT_PLATFORM, Platform, short_name

_FROM_WHEEL = ("cuda", "cudnn", "nccl")
GENERATED = "generated"
CPU = "cpu"  # the variant of a CPU build's row (written off linux/amd64 only: the wheel has no CUDA)


def generated_file(framework: str, platform: Platform = DEFAULT_PLATFORM) -> str:
    """Where `matrix refresh` writes the rows of `framework` read from `platform`'s wheels,
    relative to matrices/: generated/torch.yaml (linux/amd64), generated/arm64/torch.yaml."""
    if platform == DEFAULT_PLATFORM:
        return f"{GENERATED}/{framework}.yaml"
    return f"{GENERATED}/{short_name(platform)}/{framework}.yaml"


_READ_ONLY_HERE = ("kernel_sets", "compiler")


def arch_source(variant: dict[str, Any]) -> str:
    """'torch-2.15.0-...whl sha256:6d8c...; ...': the wheels a generated row was read from."""
    return "; ".join(f"{w['file']} sha256:{w['sha256']}" for w in variant.get("wheels") or ())


def _check_wheels(variant: dict[str, Any], c: Ctx) -> None:
    """A generated variant's `wheels`: a list of {file, sha256} mappings. Raises MatrixError."""
    wheels = variant.get("wheels") or []
    if not isinstance(wheels, list) or not all(
        isinstance(w, dict) and isinstance(w.get("file"), str) and isinstance(w.get("sha256"), str)
        for w in wheels
    ):
        raise c.fail("wheels", "expected a list of {file, sha256} mappings (matrix refresh writes them)")


def _apply(target: dict[str, Any], gen: dict[str, Any]) -> dict[str, Any]:
    out = copy.copy(target)
    out["sass"], out["ptx"] = list(gen["sass"]), list(gen["ptx"])
    out["ptx_isa"] = gen.get("ptx_isa")
    out["arch_source"] = arch_source(gen)
    for key in _READ_ONLY_HERE:  # facts no curated row has: the wheel's, or none
        out[key] = gen.get(key)
    for key in _FROM_WHEEL:
        if gen.get(key) is not None:
            out[key] = gen[key]
    return out


def _cuda_variant(variants: list[dict[str, Any]]) -> int | None:
    """Index of the release's only CUDA variant (None when there are several or none)."""
    idx = [i for i, v in enumerate(variants) if v.get("cuda") is not None]
    return idx[0] if len(idx) == 1 else None


def _inherit(curated: list[dict[str, Any]], name: str, version: str) -> dict[str, Any] | None:
    """The newest curated variant named `name` of a release older than `version`."""
    older = [r for r in curated if Version(str(r["version"])) < Version(version)]
    for rel in sorted(older, key=lambda r: Version(str(r["version"])), reverse=True):
        for v in rel.get("variants") or ():
            if v.get("name") == name:
                return {**copy.copy(v), "inherited_from": str(rel["version"])}
    return None


def overlay(data: dict[str, Any], gen: dict[str, Any], gen_ctx: Ctx) -> dict[str, Any]:
    """`data` (a curated framework file) with the generated file `gen` laid over it. Raises
    MatrixError for a malformed generated file (named by `gen_ctx`)."""
    out = dict(data)
    curated = [copy.copy(r) for r in get_field(data, "releases", gen_ctx, list)]
    by_version = {str(r.get("version")): r for r in curated}
    added: list[dict[str, Any]] = []
    for i, g in enumerate(rows(gen, "releases", gen_ctx)):
        c = gen_ctx.at(f"releases[{i}] ({g.get('version')})", g)
        version = str(get_field(g, "version", c, str))
        gvariants = rows(g, "variants", c)
        for j, gv in enumerate(gvariants):
            _check_wheels(gv, c.at(f"variants[{j}]", gv))
        row = by_version.get(version)
        if row is None:
            variants = []
            for gv in gvariants:
                base = _inherit(curated, str(gv.get("name")), version) if gv.get("name") else None
                if base is not None:
                    variants.append(_apply(base, gv))
            if variants:
                added.append(
                    {"version": version, "python": g.get("python"), "companions": {}, "variants": variants}
                )
            continue
        if g.get("python"):
            row["python"] = g["python"]
        variants = [copy.copy(v) for v in row.get("variants") or ()]
        for gv in gvariants:
            names = [v.get("name") for v in variants]
            at = names.index(gv["name"]) if gv.get("name") in names else None
            if at is None and gv.get("name") is None:
                at = _cuda_variant(variants)
            if at is not None:
                variants[at] = _apply(variants[at], gv)
        row["variants"] = variants
    out["releases"] = curated + added
    return out
