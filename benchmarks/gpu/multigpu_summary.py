"""One table of multi-GPU runs: each file's multi_gpu section (a harness result or a certificate)
as the busbw at the sizes the 2-GPU proof reported and beyond, the size cap and why, DDP scaling,
identical parameters, the gates, the slowest rank's phases and its sweep memory. Stdlib only.

    python benchmarks/gpu/multigpu_summary.py cert-native-1.json cert-native-2.json cert-container.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SIZES = (1 << 20, 8 << 20, 32 << 20, 128 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30, 8 << 30)


def label(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} B"


def section(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = json.loads(path.read_text())
    harness = doc.get("harness") or doc
    return harness, harness.get("multi_gpu") or {}


def describe(path: Path) -> list[str]:
    harness, mg = section(path)
    out = [f"== {path.name}: verdict {harness.get('verdict')}; multi_gpu {mg.get('status')}"]
    if mg.get("reason"):
        out.append(f"   reason: {mg['reason'][:600]}")
    env = mg.get("env") or {}
    gpus = sorted(set(env.get("gpu_names") or []))
    out.append(
        f"   {mg.get('world_size')} x {mg.get('backend')}, NCCL {mg.get('nccl_version')}, interconnect "
        f"{mg.get('interconnect')}, NCCL_NVLS_ENABLE={env.get('nvls_enable')}, GPUs {gpus}"
    )
    cap = mg.get("sweep_cap") or {}
    if cap:
        line = f"   sweep to {label(int(cap.get('max_bytes') or 0))} ({cap.get('limited_by')}; asked "
        line += f"{label(int(cap.get('requested_bytes') or 0))}"
        free = cap.get("free_bytes_min")
        if isinstance(free, int):  # None in the CPU test mode: no GPU memory asked
            margin = (cap.get("margin_bytes") or 0) / 2**30
            line += f", least free {free / 2**30:.1f} GiB, margin {margin:.1f} GiB, memory cap "
            line += label(int(cap.get("memory_cap_bytes") or 0))
        out.append(line + ")")
    rows = {r["bytes"]: r for r in mg.get("sweep") or []}
    cells = [f"{label(n)} {rows[n]['busbw_gbs']:.1f}" for n in SIZES if n in rows]
    out.append("   busbw GB/s: " + ", ".join(cells))
    out.append(
        f"   DDP {mg.get('ddp_images_per_s')} img/s vs one GPU {mg.get('single_gpu_images_per_s')}: "
        f"scaling {mg.get('scaling_efficiency')}; params identical {mg.get('params_identical')} "
        f"(max abs diff {mg.get('max_param_abs_diff')})"
    )
    ranks = mg.get("ranks") or []
    phases: dict[str, float] = {}
    for r in ranks:
        for k, v in (r.get("phase_s") or {}).items():
            phases[k] = max(phases.get(k, 0.0), float(v))
    out.append("   slowest rank's phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items()))
    held = [(r.get("sweep_memory") or {}).get("peak_allocated_bytes") for r in ranks]
    peaks = [p for p in held if isinstance(p, int)]
    if peaks:
        out.append(
            f"   sweep peak allocated per rank: {min(peaks) / 2**30:.2f} - {max(peaks) / 2**30:.2f} GiB"
        )
    for g in mg.get("gates") or []:
        out.append(f"   gate {g.get('name')}: {g.get('status')} ({g.get('reason')})")
    step: dict[str, Any] = next((s for s in harness.get("steps") or [] if s.get("name") == "multi_gpu"), {})
    out.append(f"   multi_gpu step {step.get('seconds')} s; harness wall {harness.get('wall_seconds')} s")
    return out


def main(argv: list[str]) -> int:
    code = 0
    for name in argv:
        try:
            print("\n".join(describe(Path(name))))
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"== {name}: unreadable ({type(e).__name__}: {e})")
            code = 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
