"""Build benchmarks (not timed tests), run by `make bench`; results go to benchmarks/results/.

1. Cold vs warm build of the same image, in one run: the bundled torch 2.13.0 CPU image from the
   local Debian base, offline from the wheelhouse. Cold = its tags removed and the BuildKit cache
   pruned (`docker builder prune`: layers and cache mounts); warm = the same build right after.
2. Image size of one stack built with each strategy. nvidia/cuda cannot be pulled here, so the
   system-cuda template is built on the same local base (--base-image): what it measures is the
   template's own layers; the nvidia/cuda base itself is not measured and is said to be so.
3. What a duplicate CUDA costs: the nvidia/CUDA wheels a CUDA build of torch pulls from PyPI, with
   download and installed sizes (read from each wheel's zip directory with HTTP range requests).
   Those libraries are exactly what a system-cuda image already carries in its base.

Needs `make services` (dockerd, base image, wheelhouse) and PyPI for part 3.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from envbuilder.engine import DockerEngine
from envbuilder.host.model import Host
from envbuilder.image.build import BuildOptions, BuildOutcome, plan_from_spec, run_build
from envbuilder.image.spec import load_spec
from envbuilder.matrix import load_matrix
from envbuilder.resolve.model import Resolution
from envbuilder.resolve.resolver import resolve

ROOT = Path(__file__).resolve().parent
BASE = os.environ.get("ENVBUILDER_TEST_BASE", "envbuilder-test/debian:bookworm")
WHEELHOUSE = Path(os.environ.get("ENVBUILDER_TEST_STATE", "/var/cache/envbuilder-test")) / "wheelhouse"
NAME = "bench-torch-cpu"
# The PyPI (default, CUDA) build of the benchmarked torch: the CUDA wheels it pulls are sized.
CUDA_TORCH = os.environ.get("BENCH_CUDA_TORCH", "torch==2.13.0")
MB = 1_000_000


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def machine(engine: DockerEngine) -> dict[str, Any]:
    mem_kb = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in line
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False
    ).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "mem_gib": round(mem_kb / 2**20, 1),
        "cpu": platform.processor() or platform.machine(),
        "kernel": platform.release(),
        "docker_server": engine.daemon_info().server_version,
        "buildkit_cli": f"{engine.buildkit_cli().path} {engine.buildkit_cli().version}",
        "storage_driver": engine.daemon_info().storage_driver,
        "envbuilder_commit": commit,
    }


def cpu_resolution(spec_path: Path) -> Resolution:
    spec = load_spec(spec_path)
    res = resolve(load_matrix(), spec.to_request(cpu_only=True), Host(driver=None, source="none"))
    if res.stack is None:
        sys.exit(f"bench: the resolver found no CPU stack for {spec_path}")
    return res


def build(engine: DockerEngine, spec_path: Path, res: Resolution, work: Path, tag: str) -> BuildOutcome:
    options = BuildOptions(base_image=BASE, wheelhouse=WHEELHOUSE, lock_out=work / f"{tag}.lock.json")
    plan = plan_from_spec(load_spec(spec_path), res, options, spec_path, load_matrix())
    return run_build(plan, options, engine)


def step_summary(outcome: BuildOutcome) -> dict[str, Any]:
    r = outcome.result
    return {
        "seconds": round(r.seconds, 2),
        "steps": len(r.steps),
        "cached_steps": r.cached_steps,
        "step_seconds": {s.name[:90]: s.seconds for s in r.steps if s.seconds is not None},
        "image_id": outcome.image.id,
        "size_mb": round(outcome.image.size / MB, 1),
    }


def cold_vs_warm(engine: DockerEngine, spec_path: Path, res: Resolution, work: Path) -> dict[str, Any]:
    for image in engine.list_images(f"envbuilder/{NAME}"):
        for t in image.tags:
            engine.remove_image(t, force=True)
    reclaimed = engine.prune_build_cache()
    log(f"pruned the build cache ({reclaimed / MB:.0f} MB); cold build...")
    cold = build(engine, spec_path, res, work, "cold")
    log(f"cold {cold.result.seconds:.1f}s; warm build...")
    warm = build(engine, spec_path, res, work, "warm")
    c, w = step_summary(cold), step_summary(warm)
    return {
        "image": f"envbuilder/{NAME}",
        "stack": res.stack.id if res.stack else None,
        "cache_pruned_mb": round(reclaimed / MB, 1),
        "cold": c,
        "warm": w,
        "ratio_cold_over_warm": round(cold.result.seconds / warm.result.seconds, 1),
        "same_image": cold.image.id == warm.image.id,
    }


def strategies(engine: DockerEngine, spec_path: Path, res: Resolution, work: Path) -> dict[str, Any]:
    assert res.stack is not None
    bundled = build(engine, spec_path, res, work, "bundled")
    forced = replace(res.stack, strategy="system-cuda", python_install="apt", flavor="runtime")
    log("system-cuda template on the same local base...")
    system = build(engine, spec_path, replace(res, stack=forced), work, "system")
    base = engine.inspect_image(BASE)
    return {
        "base_image": {"ref": BASE, "size_mb": round((base.size if base else 0) / MB, 1)},
        "bundled": {"size_mb": round(bundled.image.size / MB, 1), "base": BASE},
        "system_cuda_template_on_local_base": {
            "size_mb": round(system.image.size / MB, 1),
            "base": BASE,
            "note": "same stack rendered with the system-cuda template (Python from apt) on the local "
            "base; a real system-cuda image adds the nvidia/cuda base (not pullable here, not measured)",
        },
    }


class _HttpRange(io.RawIOBase):
    """A seekable read-only view of a remote file through HTTP Range requests (zip directory)."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.pos = url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, b: Any) -> int:
        if self.pos >= self.size or not len(b):
            return 0
        end = min(self.pos + len(b), self.size) - 1
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            data = resp.read()
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


def _content_length(url: str) -> int:
    req = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return int(resp.headers["Content-Length"])


def duplicate_cuda() -> dict[str, Any]:
    """Resolve a CUDA torch from PyPI (pip --dry-run --report) and size its CUDA wheels."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "", "PIP_CONSTRAINT": ""}
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
             "--index-url", "https://pypi.org/simple", "--report", str(report), CUDA_TORCH],
            check=True, env=env,
        )  # fmt: skip
        installs = json.loads(report.read_text())["install"]
    torch = next(i["metadata"]["version"] for i in installs if i["metadata"]["name"] == "torch")
    cuda_like = ("nvidia-",)  # the CUDA libraries; triton and the cuda-python bindings are not
    rows = []
    for item in installs:
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if not name.lower().startswith(cuda_like):
            continue
        url = item["download_info"]["url"]
        size = _content_length(url)
        installed = None
        try:
            with zipfile.ZipFile(io.BufferedReader(_HttpRange(url, size), 1 << 20)) as z:
                installed = sum(i.file_size for i in z.infolist())
        except Exception as exc:  # report the download size alone rather than fail the run
            log(f"could not read the zip directory of {url}: {exc}")
        rows.append(
            {
                "package": name,
                "version": version,
                "wheel": url.rsplit("/", 1)[-1],
                "download_mb": round(size / MB, 1),
                "installed_mb": round(installed / MB, 1) if installed else None,
            }
        )
    rows.sort(key=lambda r: -(r["installed_mb"] or r["download_mb"]))
    return {
        "torch": f"torch {torch} from pypi.org (the default, CUDA, build)",
        "method": "pip install --dry-run --report on this Linux x86_64 / CPython 3.11 host; sizes from "
        "HTTP HEAD "
        "of each wheel; installed size = sum of file sizes in each wheel's zip directory (HTTP range reads)",
        "wheels": rows,
        "download_mb": round(sum(r["download_mb"] for r in rows), 1),
        "installed_mb": round(sum(r["installed_mb"] or 0 for r in rows), 1),
        "note": "The CPU image above carries none of these. In a system-cuda image "
        "these wheels duplicate the CUDA libraries of the nvidia/cuda base (torch wheels always carry them).",
    }


def markdown(doc: dict[str, Any]) -> str:
    m, cw, st, dup = doc["machine"], doc["cold_vs_warm"], doc["strategies"], doc["duplicate_cuda"]
    sys_mb = st["system_cuda_template_on_local_base"]["size_mb"]
    lines = [
        f"# Build benchmarks, {doc['date']}",
        "",
        f"Machine: {m['nproc']} cores, {m['mem_gib']} GiB, Docker {m['docker_server']} "
        f"({m['storage_driver']}), BuildKit via {m['buildkit_cli']}, envbuilder {m['envbuilder_commit']}.",
        "",
        "## Cold vs warm build (same image, one run)",
        "",
        f"`{cw['image']}` (stack `{cw['stack']}`), from `{BASE}`, offline from the wheelhouse.",
        "",
        "| build | seconds | steps cached | image size |",
        "|---|---:|---:|---:|",
        f"| cold (cache pruned, image removed) | {cw['cold']['seconds']} | {cw['cold']['cached_steps']}/"
        f"{cw['cold']['steps']} | {cw['cold']['size_mb']} MB |",
        f"| warm (nothing changed) | {cw['warm']['seconds']} | {cw['warm']['cached_steps']}/"
        f"{cw['warm']['steps']} | {cw['warm']['size_mb']} MB |",
        "",
        f"Warm is **{cw['ratio_cold_over_warm']}x** faster; same image ID: {cw['same_image']}.",
        "",
        "## Image size by strategy (one stack)",
        "",
        "| image | size |",
        "|---|---:|",
        f"| local base `{st['base_image']['ref']}` | {st['base_image']['size_mb']} MB |",
        f"| bundled | {st['bundled']['size_mb']} MB |",
        f"| system-cuda template on the local base | {sys_mb} MB |",
        "",
        st["system_cuda_template_on_local_base"]["note"] + ".",
        "",
        "## What a duplicate CUDA would cost",
        "",
        f"{dup['torch']}: its CUDA wheels. {dup['method']}.",
        "",
        "| wheel | download | installed |",
        "|---|---:|---:|",
    ]
    for r in dup["wheels"]:
        lines.append(f"| {r['package']} {r['version']} | {r['download_mb']} MB | {r['installed_mb']} MB |")
    lines += [
        f"| **total** | **{dup['download_mb']} MB** | **{dup['installed_mb']} MB** |",
        "",
        dup["note"],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    engine = DockerEngine()
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory(prefix="envbuilder-bench-") as tmp:
        work = Path(tmp)
        spec_path = work / f"{NAME}.yaml"
        spec_path.write_text(
            f"schema_version: 1\nname: {NAME}\n"
            'framework: "torch==2.13.0"\npython: "3.11"\nstrategy: bundled\n'
        )
        res = cpu_resolution(spec_path)
        doc = {
            "date": date,
            "machine": machine(engine),
            "cold_vs_warm": cold_vs_warm(engine, spec_path, res, work),
            "strategies": strategies(engine, spec_path, res, work),
        }
    log("sizing the CUDA wheels of a CUDA torch on PyPI...")
    doc["duplicate_cuda"] = duplicate_cuda()
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / f"build-{date}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    (out / f"build-{date}.md").write_text(markdown(doc))
    print(markdown(doc))


if __name__ == "__main__":
    main()
