"""`envbuilder matrix check|list|show`: validate and inspect matrices/."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from envbuilder import resources
from envbuilder.cli import cli
from envbuilder.errors import MatrixError, UsageError
from envbuilder.matrix import FRAMEWORKS, load_matrix
from envbuilder.matrix import listing as facts
from envbuilder.platforms import PLATFORMS, Platform
from envbuilder.tables import table

if TYPE_CHECKING:
    from envbuilder.matrix.index import PackageIndex
    from envbuilder.matrix.model import Matrix
    from envbuilder.matrix.rederive import RowCheck


@cli.group()
def matrix() -> None:
    """Inspect and validate the compatibility matrix (matrices/)."""


@matrix.command("check")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    default=None,
    help="Matrix folder to check (default: the bundled matrices/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@click.option(
    "--fetch",
    is_flag=True,
    help="Read again the wheels whose scan is missing from the cache or was made by a reader part "
    "that changed since (range requests to the index); without it they are listed as not checked.",
)
@click.option(
    "--index-url",
    default=None,
    help="With --fetch: where the wheels are (a PEP 503 simple index, or a JSON API ending in /pypi). "
    "Default: PyPI's JSON API.",
)
@click.option(
    "--cache",
    type=click.Path(path_type=Path),
    default=None,
    help="Scan cache of `matrix refresh` (default: ~/.cache/envbuilder/wheel-scans).",
)
def check(
    directory: Path | None, as_json: bool, fetch: bool, index_url: str | None, cache: Path | None
) -> None:
    """Load every matrix file and verify its invariants; then re-derive each generated row
    (matrices/generated/) from its wheels' cached scans with the current fatbin reader and fail
    on any row that differs. Exit codes: 0 all consistent; 3 a file breaks an invariant or a
    generated row differs from what the reader reads (the rows are named)."""
    index = None
    if fetch:
        from envbuilder.matrix.index import open_index

        index = open_index(index_url, None)
    summary = check_matrix(directory, cache=cache, index=index, log=lambda m: click.echo(m, err=True))
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for line in summary["lines"]:
            click.echo(line)


def check_matrix(
    directory: Path | None = None,
    *,
    cache: Path | None = None,
    index: PackageIndex | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Load the matrix, re-derive its generated rows (matrix/rederive.py) and summarise both.
    Raises MatrixError (a broken invariant, or generated rows that differ from what the reader
    reads), PackageIndexError (a wheel that cannot be read again)."""
    m = load_matrix(directory, compiled=False)  # a check reads and checks the YAML itself
    lines = [
        f"ok  cuda.yaml: {len(m.cuda.releases)} releases "
        f"({m.cuda.releases[0].version} .. {m.cuda.releases[-1].version}), "
        "minimum drivers non-decreasing",
        f"ok  gpus.yaml: {len(m.gpus.models)} GPU models, {len(m.gpus.archs)} compute capabilities",
    ]
    counts: dict[str, Any] = {"cuda_releases": len(m.cuda.releases), "gpus": len(m.gpus.models)}
    for fw in m.frameworks:
        n_var = sum(len(r.variants) for r in fw.releases)
        lines.append(
            f"ok  frameworks/{fw.name}.yaml: {len(fw.releases)} releases "
            f"({fw.releases[0].version} .. {fw.releases[-1].version}), {n_var} variants"
        )
        counts[fw.name] = {"releases": len(fw.releases), "variants": n_var}
    n_cuda = sum(1 for b in m.base_images if b.kind == "cuda")
    lines.append(f"ok  base_images.yaml: {n_cuda} nvidia/cuda tags, {len(m.base_images) - n_cuda} slim bases")
    counts["base_images"] = len(m.base_images)
    p = m.platforms
    if p.builds or p.gpus:
        from envbuilder.matrix.platforms import disagreements

        generated = sum(1 for b in p.builds if b.generated)
        curated = len(p.builds) - generated
        read = sum(1 for b in p.builds if b.wheels and not b.generated)
        lines.append(
            f"ok  platforms.yaml: {curated} curated linux/arm64 builds ({read} naming aarch64 wheels read), "
            f"{len(p.absent)} known absences, {len(p.gpus)} GPUs of aarch64 hosts; generated/arm64/: "
            f"{generated} builds read from aarch64 wheels (they win over a curated row)"
        )
        differ = disagreements(m)
        lines += [f"note  {d}" for d in differ]
        counts["platforms"] = {
            "builds": curated,
            "generated_builds": generated,
            "absent": len(p.absent),
            "gpus": len(p.gpus),
            "curated_vs_wheel": differ,
        }
    if m.installable:
        refused = sum(1 for a in m.installable if not a.ok)
        lines.append(
            f"ok  generated/installable.yaml: {len(m.installable)} install sets answered, "
            f"{refused} do not resolve"
        )
        counts["installable"] = {"answered": len(m.installable), "not_resolving": refused}
    lines.append("ok  invariants: quoted versions, known CUDA and compute capabilities, no duplicates")
    rows = _check_rows(m, directory, cache, index, log)
    counts["generated_rows"] = {
        "rows": rows.rows,
        "checked": rows.checked,
        "not_checked": len(rows.unchecked),
        "scans_from_cache": rows.from_cache,
        "wheels_read": rows.read,
        "bytes_fetched": rows.fetched,
    }
    s = "" if rows.read == 1 else "s"
    again = f", {rows.read} wheel{s} read again ({rows.fetched / 2**20:.0f} MiB)" if rows.read else ""
    lines.append(
        f"ok  generated rows: {rows.checked} of {rows.rows} re-derived by the current reader from "
        f"{rows.from_cache} cached scans{again}, all as committed"
        + (
            f"; {len(rows.unchecked)} not checked (no current scan of their wheels: "
            "`envbuilder matrix check --fetch` reads them)"
            if rows.unchecked
            else ""
        )
    )
    return {"ok": True, "counts": counts, "reviewed": dict(m.reviewed), "lines": lines}


def _check_rows(
    m: Matrix,
    directory: Path | None,
    cache: Path | None,
    index: PackageIndex | None,
    log: Callable[[str], None],
) -> RowCheck:
    """The generated rows re-derived; MatrixError naming each row that differs."""
    from envbuilder.matrix.rederive import check_generated
    from envbuilder.matrix.refresh import cache_dir

    rows = check_generated(
        directory or resources.matrices_dir(),
        {a.cc for a in m.gpus.archs},
        cache or cache_dir(),
        index=index,
        log=log,
    )
    if rows.differences:
        shown = "; ".join(rows.differences[:20])
        more = f"; ... and {len(rows.differences) - 20} more" if len(rows.differences) > 20 else ""
        raise MatrixError(
            f"{len(rows.differences)} generated row fields differ from what the current reader reads "
            f"of their wheels: {shown}{more}",
            hint="`envbuilder matrix refresh --framework NAME` regenerates them from the wheels",
        )
    return rows


@matrix.command("list")
@click.argument("kind", type=click.Choice(facts.KINDS), metavar="|".join(facts.KINDS))
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
def list_cmd(kind: str, as_json: bool) -> None:
    """List one kind of fact: GPU models, a framework's releases, CUDA releases or base images."""
    listed = facts.list_facts(load_matrix(), kind)
    if as_json:
        click.echo(json.dumps(listed.to_dict(), indent=2, sort_keys=True))
        return
    for line in table(listed.headers, listed.rows, indent=""):
        click.echo(line)
    note = "  (* = the build a bare pip install gets)" if kind in FRAMEWORKS else ""
    click.echo(
        f"{len(listed.rows)} {kind} from matrices/{listed.file}, reviewed {listed.reviewed}{note}", err=True
    )


_FRAMEWORK_RE = re.compile(rf"^({'|'.join(FRAMEWORKS)})(?:\s*(\S.*))?$", re.IGNORECASE)
_CUDA_RE = re.compile(r"^(?:cuda\s*)?([0-9]+\.[0-9]+(?:\.[0-9]+)?)$", re.IGNORECASE)
_ARCH_RE = re.compile(r"^(?:sm_|compute_)([0-9]+)([0-9])$|^cc\s*([0-9]+\.[0-9])$", re.IGNORECASE)


@matrix.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the record(s) as JSON.")
def show(name: str, as_json: bool) -> None:
    """Show what the matrix says about NAME: a GPU ("RTX 4090", "NVIDIA A100-SXM4-80GB"), a
    framework release ("torch==2.11.0", "jax 0.11"), a CUDA release ("12.8", "cuda 12.8.1"), a
    compute capability ("sm_90", "cc 9.0") or a base image ("nvidia/cuda:12.8.1-runtime-ubuntu24.04").

    Exit codes: 0 shown; 2 nothing (or more than one GPU model) has that name.
    """
    records = find_records(name)
    if as_json:
        click.echo(json.dumps(records if len(records) > 1 else records[0], indent=2, sort_keys=True))
        return
    for i, record in enumerate(records):
        if i:
            click.echo("")
        _print_record(record)


def find_records(name: str) -> list[dict[str, Any]]:
    """The matrix records NAME stands for (see `show`). Raises UsageError."""
    from envbuilder.resolve.gpus import find_gpu, suggest_gpus  # the one GPU-name rule

    m = load_matrix()
    text = " ".join(name.split())
    if fw := _FRAMEWORK_RE.match(text):
        spec = (fw.group(2) or "").strip()
        return [facts.release_record(r) for r in facts.find_releases(m, fw.group(1).lower(), spec)]
    if image := facts.find_image(m, text):
        return [facts.image_record(image)]
    if cuda := _CUDA_RE.match(text):
        found = facts.find_cuda(m, cuda.group(1))
        if not found:
            raise UsageError(
                f"no CUDA release {cuda.group(1)!r} in the matrix",
                hint="`envbuilder matrix list cuda` lists them (a compute capability is written sm_90 "
                "or cc 9.0)",
            )
        return [facts.cuda_record(m, r) for r in found]
    if arch := _ARCH_RE.match(text):
        cc = arch.group(3) or f"{int(arch.group(1))}.{arch.group(2)}"
        record = facts.arch_record(m, cc)
        if record is None:
            raise UsageError(
                f"unknown compute capability {cc!r}",
                hint="`envbuilder matrix list cuda` shows the ones toolkits know",
            )
        return [record]
    gpu = find_gpu(m, text)
    if gpu is None:
        near = suggest_gpus(m, text)
        did_you_mean = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        raise UsageError(
            f"the matrix has no GPU, framework release, CUDA release, compute capability or base "
            f"image called {name!r}",
            hint=f"{did_you_mean}e.g. matrix show 'RTX 4090', torch==2.11.0, 'cuda 12.8', sm_90 or an "
            "nvidia/cuda image; `envbuilder matrix list gpus|torch|tensorflow|jax|cuda|images` lists them",
        )
    if gpu.candidates:  # several models of one compute capability: each of them
        return [facts.gpu_record(g) for g in m.gpus.models if g.name in gpu.candidates]
    return [facts.gpu_record(gpu.model)]


def _print_record(record: dict[str, Any]) -> None:
    kind = record["record"]
    if kind == "framework-release":
        click.echo(f"{record['framework']} {record['version']}   python {record['python']}")
        companions = ", ".join(f"{k} {v}" for k, v in record["companions"])
        if companions:
            click.echo(f"  with {companions}")
        rows = [
            (
                v["name"] + ("*" if v["default"] else ""),
                v["cuda"] or "-",
                v["cudnn"] or "-",
                v["nccl"] or "-",
                " ".join(v["sass"]) or "-",
                " ".join(v["ptx"]) or "-",
                v["min_driver"] or "-",
            )
            for v in record["variants"]
        ]
        for line in table(("VARIANT", "CUDA", "CUDNN", "NCCL", "SASS", "PTX", "OWN DRIVER FLOOR"), rows):
            click.echo(line)
        for v in record["variants"]:
            sets = [
                f"{k['sets']:,} with SASS {' '.join(k['sass']) or '-'}, PTX {' '.join(k['ptx']) or '-'}"
                for k in v.get("kernel_sets") or ()
            ]
            if len(sets) > 1:
                click.echo(f"  {v['name']} kernel sets: {'; '.join(sets)}")
            if comp := v.get("compiler"):
                newest = comp["targets"][-1] if comp["targets"] else "-"
                click.echo(
                    f"  {v['name']} XLA ({comp['runs']}): targets up to {newest}, ptxas from "
                    f"{comp['ptxas'] or 'the system'}"
                )
        return
    title = record.get("name") or record.get("ref") or record.get("version")
    click.echo(f"{kind} {title}")
    shown = {k: _text(k, v) for k, v in record.items() if k not in ("record", "name", "ref", "version")}
    shown = {k: v for k, v in shown.items() if v}
    width = max(map(len, shown), default=0) + 2
    for key, value in shown.items():
        click.echo(f"  {key.replace('_', ' '):<{width}}{value}")


def _text(key: str, value: Any) -> str:
    """One field of a record as a line of text ('' for an empty one)."""
    if value is None:
        return ""
    if key == "require_rules":  # the exemptions of NVIDIA_REQUIRE_CUDA: brands x branches
        brands = sorted({r["brand"] for r in value})
        branches = sorted({r["branch"] for r in value})
        return f"{', '.join(brands)} on R{', R'.join(map(str, branches))}" if value else ""
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in value.items() if v is not None)
    if isinstance(value, list | tuple):
        return ", ".join(" ".join(map(str, v)) if isinstance(v, list | tuple) else str(v) for v in value)
    return str(value)


@matrix.command("refresh")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    default=None,
    help="Matrix folder to refresh (default: the bundled matrices/).",
)
@click.option(
    "--index-url",
    default=None,
    help="A PEP 503 simple index (e.g. https://download.pytorch.org/whl/cu130) or a JSON API "
    "ending in /pypi. Default: PyPI's JSON API.",
)
@click.option(
    "--wheelhouse",
    type=click.Path(path_type=Path),
    default=None,
    help="Read wheels from this local folder instead of an index (offline).",
)
@click.option(
    "--framework",
    "frameworks",
    multiple=True,
    type=click.Choice(FRAMEWORKS),
    help="Refresh only these frameworks (repeatable; default: all).",
)
@click.option(
    "--cache",
    type=click.Path(path_type=Path),
    default=None,
    help="Scan cache, keyed by each wheel's sha256 (default: ~/.cache/envbuilder/wheel-scans).",
)
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    type=click.Choice(PLATFORMS),
    help="Read the wheels of these platforms (repeatable; default: both). linux/amd64 writes "
    "generated/NAME.yaml, linux/arm64 generated/arm64/NAME.yaml (the manylinux aarch64 wheels).",
)
@click.option(
    "--libraries-only",
    is_flag=True,
    help="Only list the CUDA libraries' releases (generated/cuda_libraries.yaml): index listings, no "
    "wheel is read (seconds, where a cold full refresh reads ~22 GB).",
)
@click.option("--dry-run", is_flag=True, help="Print the diff; write nothing.")
@click.option(
    "--diff", "diff_file", type=click.Path(path_type=Path), default=None, help="Also write the diff here."
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of the diff.")
def refresh(
    directory: Path | None,
    index_url: str | None,
    wheelhouse: Path | None,
    frameworks: tuple[str, ...],
    cache: Path | None,
    platforms: tuple[Platform, ...],
    libraries_only: bool,
    dry_run: bool,
    diff_file: Path | None,
    as_json: bool,
) -> None:
    """Regenerate matrices/generated/ from the wheels: Requires-Python, the nvidia-* pins and the
    SASS/PTX (with PTX ISA) each release's CUDA wheel carries, with its file name and sha256."""
    import datetime

    from envbuilder.atomic import write_text_atomic
    from envbuilder.matrix.compiled import write_shipped
    from envbuilder.matrix.index import open_index
    from envbuilder.matrix.refresh import refresh_matrix, write_result

    matrix_before = load_matrix(directory)
    index = open_index(index_url, wheelhouse)
    result = refresh_matrix(
        matrix_before,
        directory,
        index,
        frameworks=() if libraries_only else (frameworks or FRAMEWORKS),
        platforms=platforms or PLATFORMS,
        cache=cache,
        today=datetime.date.today().isoformat(),
        log=lambda m: click.echo(m, err=True),
    )
    diff = result.diff()
    if not dry_run:
        write_result(result, directory)
        written = load_matrix(directory or resources.matrices_dir())  # the written files must load
        if result.changed and directory is None:
            write_shipped(resources.matrices_dir(), written)
    if diff_file is not None:
        write_text_atomic(diff_file, diff)
    rep = result.report
    summary = {
        "index": index.location,
        "changed": result.changed,
        "written": not dry_run,
        "wheels_scanned": rep.scanned,
        "wheels_from_cache": rep.cached,
        "bytes_fetched": rep.fetched,
        "new_releases": rep.new_releases,
        "skipped": rep.skipped,
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2, sort_keys=True))
        return
    click.echo(diff, nl=False)
    click.echo(
        f"{'would change' if dry_run else 'changed'}: {', '.join(result.changed) or 'nothing'}; "
        f"{rep.scanned} wheels scanned ({rep.fetched / 2**20:.0f} MiB fetched), {rep.cached} from the cache; "
        f"new releases: {', '.join(rep.new_releases) or 'none'}",
        err=True,
    )
    for line in rep.skipped:
        click.echo(f"  skipped: {line}", err=True)


@matrix.command("installable")
@click.option(
    "--framework",
    "frameworks",
    multiple=True,
    type=click.Choice(FRAMEWORKS),
    help="Check only these frameworks (repeatable; default: all three).",
)
@click.option(
    "--python", "pythons", multiple=True, metavar="X.Y", help="Check only these Pythons (repeatable)."
)
@click.option(
    "--write",
    is_flag=True,
    help="Also write the answers into the bundled matrices/generated/installable.yaml (for a "
    "checkout of envbuilder: the committed answers); without it they go to the user's cache.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the answers as JSON.")
def installable(frameworks: tuple[str, ...], pythons: tuple[str, ...], write: bool, as_json: bool) -> None:
    """Ask uv whether each candidate stack's whole install set (the framework with its extras and
    companions) resolves to wheels for each Python it is offered with, from the index metadata
    alone, and remember the answers: `resolve` then rejects a set that does not resolve (reason
    `installable`) without asking any index. Sets whose index does not answer (offline,
    download.pytorch.org unreachable) stay "not checked"."""
    import datetime

    from envbuilder.atomic import write_text_atomic
    from envbuilder.image.installable import answer_sets, install_sets, uv_asker, uv_version
    from envbuilder.lifecycle import scratch_dir
    from envbuilder.matrix.compiled import write_shipped
    from envbuilder.matrix.installable import (
        key_of,
        render_answers,
        write_user_answers,
    )
    from envbuilder.platforms import DEFAULT_PLATFORM
    from envbuilder.versions import parse_python_xy

    for p in pythons:
        parse_python_xy(p)
    m = load_matrix()
    keys = install_sets(m, frameworks or FRAMEWORKS, DEFAULT_PLATFORM)
    if pythons:
        keys = [k for k in keys if k[2] in pythons]
    source = f"{uv_version()} pip compile --only-binary :all:, PyPI"
    with scratch_dir("installable") as tmp:
        outcome = answer_sets(
            keys,
            uv_asker(uv_cache=Path(tmp) / "uv-cache"),
            source=source,
            log=lambda s: click.echo(s, err=True),
        )
    path = write_user_answers(outcome.answers)
    if write:
        target = resources.matrices_dir() / "generated" / "installable.yaml"
        fresh = {key_of(a): a for a in outcome.answers}
        kept = [
            a
            for a in load_matrix(resources.matrices_dir(), compiled=False).installable
            if key_of(a) not in fresh
        ]
        text = render_answers(
            [*kept, *fresh.values()], source=source, reviewed=datetime.date.today().isoformat()
        )
        write_text_atomic(target, text)
        written = load_matrix(resources.matrices_dir(), compiled=False)  # the written file must load
        write_shipped(resources.matrices_dir(), written)
    refused = [f"{', '.join(a.requirements)} py{a.python}: {a.why}" for a in outcome.answers if not a.ok]
    unchecked = [
        f"{', '.join(k[0])}{f' from {k[1]}' if k[1] else ''} py{k[2]}: {why}" for k, why in outcome.unknown
    ]
    if as_json:
        doc = {
            "checked": len(outcome.answers),
            "not_resolving": refused,
            "not_checked": unchecked,
            "user_cache": str(path),
            "written": write,
        }
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(
        f"{len(outcome.answers)} install sets answered ({len(refused)} do not resolve), "
        f"{len(unchecked)} not checked; answers in {path}"
    )
    for line in refused:
        click.echo(f"  no: {line}")
    for line in unchecked:
        click.echo(f"  not checked: {line}")
