"""The multi-GPU floors of matrices/thresholds.yaml from measured runs, by the rule written there
(multi_gpu:, above `defaults`): min_busbw_gbs = 90% of the lowest busbw at the gated size,
min_scaling_efficiency = 90% of the lowest DDP scaling efficiency, both rounded down (1 GB/s, 0.01);
reference_busbw_gbs = the median. Stdlib only: runs on the GPU machine or here.

    python benchmarks/gpu/multigpu_floors.py --at 8G cert-native-1.json cert-native-2.json cert-container.json

Each file is a harness result (run_multigpu.sh) or a certificate (envbuilder certify). Refuses
(exit 1, saying why) a run that did not pass its multi_gpu step, ran with NVLink multicast on or
unrecorded, stopped short of the gated size, or differs from the others in GPU count or GPU model
(an interconnect recorded differently is only warned about).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

FRACTION = 0.9
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """'8G' -> 8589934592, '1M' -> 1048576, '4096' -> 4096."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    if t and t[-1] in UNITS:
        return int(t[:-1]) * UNITS[t[-1]]
    return int(t)


def run_figures(doc: dict[str, Any], at_bytes: int) -> dict[str, Any]:
    """busbw at at_bytes, scaling efficiency, GPU count and model of one run; raises ValueError
    saying why the run cannot set a floor."""
    mg = (doc.get("harness") or doc).get("multi_gpu") or {}
    if mg.get("status") != "pass":
        raise ValueError(f"multi_gpu step {mg.get('status')!r}: {mg.get('reason') or 'no section'}")
    env = mg.get("env") or {}
    if env.get("nvls_enable") != "0":
        raise ValueError(f"NCCL_NVLS_ENABLE={env.get('nvls_enable')!r}: not a ring (NVLS off) run")
    row = next((r for r in mg.get("sweep") or [] if r.get("bytes") == at_bytes), None)
    if row is None:
        raise ValueError(f"no sweep row at {at_bytes} B (the sweep stopped at {mg.get('max_bytes')} B)")
    return {
        "busbw_gbs": float(row["busbw_gbs"]),
        "scaling_efficiency": float(mg["scaling_efficiency"]),
        "world_size": mg.get("world_size"),
        "gpu": ((env.get("gpu_names") or [None])[0]),
        "interconnect": mg.get("interconnect"),
    }


def floors(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The rule: 90% of the lowest, rounded down; the median as the reference."""
    bus = [r["busbw_gbs"] for r in runs]
    eff = [r["scaling_efficiency"] for r in runs]
    return {
        "min_busbw_gbs": float(math.floor(FRACTION * min(bus) + 1e-9)),
        "min_scaling_efficiency": math.floor(FRACTION * min(eff) * 100 + 1e-9) / 100,
        "reference_busbw_gbs": round(statistics.median(bus), 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--at", default="8G", help="the gated message size (busbw_at_bytes), e.g. 1G or 8G")
    p.add_argument("results", nargs="+", type=Path, help="three runs: two native, one container")
    a = p.parse_args(argv)
    at = parse_size(a.at)
    runs, bad = [], []
    for f in a.results:
        try:
            runs.append({"file": str(f), **run_figures(json.loads(f.read_text()), at)})
        except (OSError, ValueError, KeyError, TypeError) as e:
            bad.append(f"{f}: {e}")
    kinds = {(r["world_size"], r["gpu"]) for r in runs}
    if len(kinds) > 1:
        bad.append(f"the runs differ in (GPU count, model): {sorted(map(str, kinds))}")
    links = sorted({str(r["interconnect"]) for r in runs})
    if len(links) > 1:  # the first 2-GPU container run recorded "unknown" (no nvidia-smi topology)
        print(f"multigpu_floors: warning: interconnect recorded as {', '.join(links)}", file=sys.stderr)
    if bad:
        print("multigpu_floors: refused:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    if len(runs) < 3:
        print(f"multigpu_floors: warning: {len(runs)} run(s); the rule asks for three", file=sys.stderr)
    for r in runs:
        eff = r["scaling_efficiency"]
        print(f"# {r['file']}: busbw {r['busbw_gbs']:.1f} GB/s at {a.at}, scaling {eff:.3f}")
    world, gpu = runs[0]["world_size"], runs[0]["gpu"]
    link = next((x for x in links if x != "unknown"), links[0])
    f = floors(runs)
    print(f'    - name: "{gpu} x{world}, {link} (ring: NVLS off)"')
    print(f'      nvml_names: ["{gpu}"]')
    print(f"      interconnect: {link}")
    print(f"      world_size: {world}")
    print(f"      min_busbw_gbs: {f['min_busbw_gbs']}")
    print(f"      min_scaling_efficiency: {f['min_scaling_efficiency']}")
    print(f"      reference_busbw_gbs: {f['reference_busbw_gbs']}")
    print(f"      busbw_at_bytes: {at}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
