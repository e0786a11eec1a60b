"""How long `envbuilder resolve` takes as a new process, before vs after, side by side in one run.

Each round runs, in turn: the baseline revision (extracted with `git archive` into a temporary
folder and put first on PYTHONPATH, so the same interpreter and packages run its code), this
checkout with its compiled matrix present (what every run but the first after a matrix change
sees), and this checkout with the compiled matrix removed (that first run). Rounds interleave the
variants so that the load of a shared machine falls on all of them alike. Wall time and the
child's CPU time (user + sys) are recorded per run; the host is given (--driver/--gpu), so no
driver probe is timed.

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
# The last main commit before the compiled matrix and the lazy command imports (envbuilder issue 11).
BASELINE = "0babc9d"
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
        base_dir, cache = Path(tmp) / "baseline", Path(tmp) / "cache"
        extract(args.baseline, base_dir)
        clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ENVBUILDER_CACHE_DIR")}
        env_cur = {**clean, "ENVBUILDER_CACHE_DIR": str(cache)}
        env_base = {**clean, "PYTHONPATH": str(base_dir), "ENVBUILDER_CACHE_DIR": str(cache / "baseline")}
        cmd = [sys.executable, "-m", "envbuilder", *ARGV]
        floor = [sys.executable, "-c", "pass"]
        # Warm-up: page cache for every variant, and the compiled matrix for "after".
        timed(cmd, env_base, base_dir, args.realtime)
        timed(cmd, env_cur, ROOT, args.realtime)
        samples: dict[str, list[tuple[float, float]]] = {
            "python -c pass": [],
            f"before ({args.baseline})": [],
            "after, compiled matrix present": [],
            "after, compiled matrix absent (first run)": [],
        }
        names = list(samples)
        for i in range(args.rounds):
            samples[names[0]].append(timed(floor, clean, ROOT, args.realtime))
            samples[names[1]].append(timed(cmd, env_base, base_dir, args.realtime))
            samples[names[2]].append(timed(cmd, env_cur, ROOT, args.realtime))
            shutil.rmtree(cache / "matrix", ignore_errors=True)
            samples[names[3]].append(timed(cmd, env_cur, ROOT, args.realtime))
            log(f"round {i + 1}/{args.rounds}: " + ", ".join(f"{s[-1][0]:.3f}s" for s in samples.values()))
    info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    result = {
        "date": dt.date.today().isoformat(),
        "command": "envbuilder " + " ".join(ARGV),
        "machine": info,
        "variants": {name: summary(s) for name, s in samples.items()},
        "raw_wall_s": {name: [round(w, 4) for w, _ in s] for name, s in samples.items()},
    }
    before = result["variants"][names[1]]["wall_median_ms"]
    after = result["variants"][names[2]]["wall_median_ms"]
    result["speedup_median_wall"] = round(before / after, 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "-realtime" if args.realtime else ""
    stem = RESULTS / f"resolve-{result['date']}{suffix}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    stem.with_suffix(".md").write_text(render(result))
    log(f"wrote {stem}.md: before {before} ms, after {after} ms (median wall)")
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

Median wall time: {r["speedup_median_wall"]}x faster with the compiled matrix present.

What changed: the matrix is served from a compiled JSON form keyed by the sha256 of the YAML files
and the loader's code (envbuilder/matrix/compiled.py; repeated tuples stored once; rebuilt on a
miss with libyaml's CSafeLoader, each file parsed once); commands are imported when invoked
(cli/__init__.py), so `resolve` loads neither the Docker SDK nor Jinja nor the host probes nor
packaging.requirements (cli/options.py); the version parsers are memoised. "Before" also parsed
the old 52-model gpus.yaml; "after" serves the 218-model one.
"""


if __name__ == "__main__":
    raise SystemExit(main())
