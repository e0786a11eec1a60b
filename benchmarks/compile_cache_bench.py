"""What keeping torch.compile's cache between processes saves, on this machine's CPU torch.

certify and run point TORCHINDUCTOR_CACHE_DIR into the image's JIT cache volume (envbuilder/certify/
jit_cache.py), so a process of the image finds what an earlier one compiled. This times the same
compile (a small MLP, forward and backward: torch.compile's Dynamo, AOT autograd and Inductor, which
on the CPU builds C++) in fresh processes, interleaved: each round one process with a new empty
cache folder (as every container had before) and one with the folder kept from the first round (as
the volume keeps it). The ratio is the kept folder's time over the empty one's, round by round.

    .venv/bin/python benchmarks/compile_cache_bench.py [--rounds 3]

Needs a C++ compiler (Inductor's CPU backend). Writes benchmarks/results/compile-cache-DATE.json
and .md. The GPU figures (ResNet-50, Triton) come from benchmarks/gpu/issue27_proof.sh (its new
harness's runs keep one set of compile caches) and jit_volume_proof.sh JOBS=compile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from results_io import machine, today, write

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, time
t0 = time.perf_counter()
import torch
from torch._dynamo.utils import counters
t_import = time.perf_counter() - t0
torch.manual_seed(0)
nn = torch.nn
m = nn.Sequential(nn.Linear(256, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 10))
run = torch.compile(m)
x = torch.randn(64, 256)
t = time.perf_counter()
run(x).sum().backward()
first = time.perf_counter() - t
print(json.dumps({"import_s": t_import, "first_step_s": first, "torch": torch.__version__,
                  "fxgraph_cache_hit": counters["inductor"].get("fxgraph_cache_hit", 0),
                  "fxgraph_cache_miss": counters["inductor"].get("fxgraph_cache_miss", 0),
                  "autograd_cache_hit": counters["aot_autograd"].get("autograd_cache_hit", 0)}))
"""


def one(cache: Path) -> dict[str, float]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="compile-cache-bench-") as tmp:
        kept = Path(tmp) / "kept"
        filled = one(kept)  # fills the kept folder (as an image's first container fills its volume)
        rounds = []
        for i in range(a.rounds):
            empty = one(Path(tmp) / f"empty-{i}")
            warm = one(kept)
            rounds.append(
                {"empty": empty, "kept": warm, "ratio": warm["first_step_s"] / empty["first_step_s"]}
            )
    ratios = [r["ratio"] for r in rounds]
    m = machine()
    doc = {
        "date": today(),
        "machine": m,
        "torch": filled["torch"],
        "fill": filled,
        "rounds": rounds,
        "ratio_median": statistics.median(ratios),
    }
    lines = [
        f"# torch.compile with a kept Inductor cache vs an empty one, {doc['date']}",
        "",
        f"{m['platform']}, {m['cpus']} CPUs, torch {filled['torch']} (CPU), "
        "benchmarks/compile_cache_bench.py: a small MLP's first compiled step (forward and backward) "
        "in a fresh process, interleaved round by round.",
        "",
        "| round | empty cache: first step s | kept cache: first step s | kept / empty "
        "| kept: FX graph hits, AOT autograd hits |",
        "|---|---|---|---|---|",
    ]
    for i, r in enumerate(rounds, 1):
        k = r["kept"]
        lines.append(
            f"| {i} | {r['empty']['first_step_s']:.2f} | {k['first_step_s']:.2f} | {r['ratio']:.3f} "
            f"| {k['fxgraph_cache_hit']}, {k['autograd_cache_hit']} |"
        )
    lines += [
        "",
        f"Median kept / empty: **{doc['ratio_median']:.3f}**. The run that filled the kept "
        f"folder took {filled['first_step_s']:.2f} s.",
    ]
    write("compile-cache", doc, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
