"""How long `envbuilder resolve` takes as a new process, before vs after, side by side in one run.

The baseline revision and this checkout's HEAD are extracted with `git archive` into temporary
folders and put first on PYTHONPATH, so the same interpreter and packages run their code. Each
round runs, in turn: `python -c pass`; each revision as a first command (no cache: what a new
install, a new CI machine or a fresh container sees), then again with its cache present (every
later command); and HEAD without the compiled form shipped beside its YAML (the first command
after an edit of matrices/, before `make golden`). Rounds interleave the variants so that the load
of a shared machine falls on all of them alike. Wall time and the child's CPU time (user + sys)
are recorded per run; the host is given (--driver/--gpu), so no driver probe is timed.

    .venv/bin/python benchmarks/resolve_bench.py [--baseline REV] [--rounds N] [--realtime]

--realtime runs every timed process (baseline and after alike) under SCHED_FIFO (root): on this
2-core machine shared by several engineers' test runs, the timed process is then not preempted by
them, which is the closest stand-in for the quiet machine a latency target speaks of (nice does not
help: the other work runs in other cgroups). Caches and memory bandwidth stay shared. Results say
which mode was used.

Writes benchmarks/results/resolve-DATE[-realtime].json and .md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
# main before the compiled matrix shipped beside the YAML (2026-12-05; the arm64 rows had taken its
# first command over 300 ms). 0babc9d is the one before the compiled matrix itself (issue 11).
BASELINE = "7e36c25"
ARGV = ["resolve", "--driver", "580.95.05", "--gpu", "NVIDIA H200"]


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def extract(rev: str, dest: Path) -> None:
    """The baseline's code and data, as committed (nothing of this checkout leaks in)."""
    blob = subprocess.run(
        ["git", "archive", "--format=tar", rev, "envbuilder", "matrices", "templates", "images"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(dest, filter="data")


def timed(argv: list[str], env: dict[str, str], cwd: Path, realtime: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run; it must succeed."""

    def priority() -> None:
        if realtime:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, check=False, preexec_fn=priority
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stderr[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls = sorted(w for w, _ in samples)
    cpus = sorted(c for _, c in samples)
    return {
        "wall_median_ms": round(statistics.median(walls) * 1000, 1),
        "wall_min_ms": round(walls[0] * 1000, 1),
        "wall_p90_ms": round(walls[int(0.9 * (len(walls) - 1))] * 1000, 1),
        "cpu_median_ms": round(statistics.median(cpus) * 1000, 1),
        "runs": len(samples),
    }


def machine() -> dict[str, Any]:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((ln.split(":", 1)[1].strip() for ln in lines if "model name" in ln), platform.processor())
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": platform.platform(),
        "commit": commit,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, help=f"revision to compare with (default {BASELINE})")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--realtime", action="store_true", help="time each run under SCHED_FIFO (root)")
    args = ap.parse_args()
    info = {**machine(), "realtime": args.realtime}
    with tempfile.TemporaryDirectory(prefix="envbuilder-bench-") as tmp:
        base_dir, head_dir, stale_dir = Path(tmp) / "baseline", Path(tmp) / "head", Path(tmp) / "stale"
        extract(args.baseline, base_dir)
        extract("HEAD", head_dir)
        extract("HEAD", stale_dir)
        (stale_dir / "matrices" / "generated" / "compiled.json").unlink(missing_ok=True)
        clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVBUILDER_CACHE_DIR")}
        cmd = [sys.executable, "-m", "envbuilder", *ARGV]
        floor = [sys.executable, "-c", "pass"]
        trees = {f"before ({args.baseline})": base_dir, "after": head_dir}
        samples: dict[str, list[tuple[float, float]]] = {"python -c pass": []}
        for name in trees:
            samples[f"{name}, first command (no cache)"] = []
            samples[f"{name}, cache present"] = []
        stale = "after, no shipped form (first command after a matrix edit)"
        samples[stale] = []

        def run_in(tree: Path, cache: Path) -> tuple[float, float]:
            env = {**clean, "PYTHONPATH": str(tree), "ENVBUILDER_CACHE_DIR": str(cache)}
            return timed(cmd, env, tree, args.realtime)

        for tree in (base_dir, head_dir, stale_dir):  # page cache for every variant
            run_in(tree, Path(tmp) / "warmup")
        for i in range(args.rounds):
            samples["python -c pass"].append(timed(floor, clean, ROOT, args.realtime))
            for name, tree in trees.items():
                cache = Path(tmp) / "cache" / tree.name
                shutil.rmtree(cache, ignore_errors=True)
                samples[f"{name}, first command (no cache)"].append(run_in(tree, cache))
                samples[f"{name}, cache present"].append(run_in(tree, cache))
            cache = Path(tmp) / "cache" / "stale"
            shutil.rmtree(cache, ignore_errors=True)
            samples["after, no shipped form (first command after a matrix edit)"].append(
                run_in(stale_dir, cache)
            )
            log(f"round {i + 1}/{args.rounds}: " + ", ".join(f"{s[-1][0]:.3f}s" for s in samples.values()))
    info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    result = {
        "date": dt.date.today().isoformat(),
        "command": "envbuilder " + " ".join(ARGV),
        "machine": info,
        "variants": {name: summary(s) for name, s in samples.items()},
        "raw_wall_s": {name: [round(w, 4) for w, _ in s] for name, s in samples.items()},
    }
    before = result["variants"][f"before ({args.baseline}), first command (no cache)"]["wall_median_ms"]
    after = result["variants"]["after, first command (no cache)"]["wall_median_ms"]
    result["speedup_median_wall"] = round(before / after, 2)
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "-realtime" if args.realtime else ""
    stem = RESULTS / f"resolve-{result['date']}{suffix}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(render(result))
    log(f"wrote {stem}.md: first command before {before} ms, after {after} ms (median wall)")
    return 0


def render(r: dict[str, Any]) -> str:
    m = r["machine"]
    mode = (
        "under SCHED_FIFO (--realtime: not preempted by the other work)"
        if m["realtime"]
        else "at the default priority, sharing the CPUs with the other work"
    )
    rows = "\n".join(
        f"| {name} | {v['wall_median_ms']:,.0f} | {v['wall_min_ms']:,.0f} | {v['wall_p90_ms']:,.0f} "
        f"| {v['cpu_median_ms']:,.0f} | {v['runs']} |"
        for name, v in r["variants"].items()
    )
    return f"""# `envbuilder resolve` as a new process, before vs after ({r["date"]})

`{r["command"]}`, measured by `benchmarks/resolve_bench.py` (variants interleaved round by round in
one run; wall time of the process and its CPU time, user + sys).

Machine: {m["cpu"]}, {m["cores"]} cores, {m["os"]}, Python {m["python"]}; commit {m["commit"]}.
A shared machine: load average {m["load_average_start"]} at the start, {m["load_average_end"]} at
the end (other engineers' work), so wall times carry that contention; CPU time carries less of it.
Timed processes ran {mode}.

| variant | wall median ms | wall min ms | wall p90 ms | CPU median ms | runs |
|---|---:|---:|---:|---:|---:|
{rows}

Median wall time of a first command: {r["speedup_median_wall"]}x faster after.

What changed: the compiled matrix (envbuilder/matrix/compiled.py: the checked `Matrix` as JSON,
keyed by the sha256 of the YAML files and the loader's code) also ships beside the YAML, in
matrices/generated/compiled.json (`make golden`, `matrix refresh` and `matrix installable --write`
rewrite it; a unit test fails while it is stale), and is served for its own key only: a first
command no longer parses the YAML. Before, only the user's cache held it, so the first command of
every new install, CI machine or container parsed 16 YAML files (with the arm64 rows of
2026-12-05, 51 KB more of them).
"""


if __name__ == "__main__":
    raise SystemExit(main())
