"""Shared by the multi_gpu tests: the staged harness run with N gloo ranks on the CPU, and rank
files written by hand for merge() (synthetic: never a measurement)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from envbuilder.harness.multigpu.env import FAULT_ENV
from envbuilder.harness.multigpu.sweep import sweep_sizes
from envbuilder.harness.schema import validate_result

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "envbuilder" / "harness"
GIB = 1 << 30


def run_harness(tmp_path: Path, *args: str, fault: str = "", ranks: int = 2) -> dict[str, Any]:
    """The payload as an image holds it (package envbuilder_harness), by file path, no PYTHONPATH,
    with `--multi-gpu-cpu-test ranks`; the result document, checked against the schema."""
    stage = tmp_path / "opt"
    shutil.copytree(HARNESS, stage / "envbuilder_harness", ignore=shutil.ignore_patterns("__py*"))
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "CUDA_VISIBLE_DEVICES": "",
        "NCCL_NVLS_ENABLE": "0",
    }
    if fault:
        env[FAULT_ENV] = fault
    run_py = stage / "envbuilder_harness" / "run.py"
    proc = subprocess.run(
        [sys.executable, str(run_py), "--multi-gpu-cpu-test", str(ranks), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120 + 30 * ranks,
    )
    lines = [json.loads(ln) for ln in proc.stdout.splitlines()]  # stdout is JSON only
    result: dict[str, Any] = lines[-1]
    assert validate_result(result) == [], proc.stderr[-3000:]
    assert proc.returncode == (0 if result["verdict"] != "failed" else 1), proc.stderr[-3000:]
    return result


def failure(result: dict[str, Any]) -> str:
    """What an assertion on a run should print: the verdict's reason, each failed step's, and the
    ranks' log tails (a CI failure that said only "failed steps: multi_gpu" left nothing to go on)."""
    lines = [result.get("verdict_reason", "")]
    lines += [f"{s['name']}: {s.get('reason', '')}" for s in result["steps"] if s["status"] == "fail"]
    for name, text in (result.get("multi_gpu", {}).get("rank_logs") or {}).items():
        lines.append(f"--- {name}.log (tail)\n{text}")
    return "\n".join(lines)


def write_ranks(
    workdir: Path,
    world: int,
    *,
    max_bytes: int = 8 * GIB,
    seconds_at: float = 0.040,
    value_problems: dict[int, list[str]] | None = None,
    solo_wrong: dict[int, dict[str, str]] | None = None,
    checksums: dict[int, float] | None = None,
    diffs: dict[int, float] | None = None,
    errors: dict[int, str] | None = None,
    missing: tuple[int, ...] = (),
    memory_capped: bool = False,
) -> None:
    """SYNTHETIC rank{r}.json files, shaped as worker.py writes them: a sweep to max_bytes whose
    time grows with the size (seconds_at at 8 GiB), values, solo rounds, DDP results. `missing`:
    ranks that wrote nothing (killed before the end)."""
    sizes = sweep_sizes(max_bytes)
    sweep = [{"bytes": b, "seconds": 20e-6 + seconds_at * b / (8 * GIB)} for b in sizes]
    cap: dict[str, Any] = {"requested_bytes": 8 * GIB, "free_bytes_min": 140 * GIB, "max_bytes": max_bytes}
    cap["limited_by"] = "memory" if memory_capped else "request"
    for r in range(world):
        if r in missing:
            continue
        doc: dict[str, Any] = {"rank": r, "world": world, "backend": "nccl", "init_s": 1.5 + r / 10}
        doc.update(sweep=sweep, sweep_cap=cap, value_problems=(value_problems or {}).get(r, []))
        doc["sweep_memory"] = {"peak_allocated_bytes": max_bytes + (256 << 20)}
        doc["phase_s"] = {"start": 4.0, "data": 0.5, "init": 2.0, "sweep": 9.0, "ddp": 6.0}
        if solo_wrong is not None:
            doc["solo_rounds"] = {"bytes": 8, "wrong": solo_wrong.get(r, {})}
        elif not value_problems:
            d = (diffs or {}).get(r, 0.0)
            doc["ddp"] = {
                "images_per_s_all": 100_000.0,
                "max_param_abs_diff": d,
                "param_tensors": 62,
                "param_tensors_differing": 1 if d else 0,
                "param_checksum_f64": (checksums or {}).get(r, 1234.5),
                "losses_finite": True,
            }
        if r == 0:
            doc["baseline"] = {"images_per_s": 13_000.0}
        if errors and r in errors:
            doc["error"] = errors[r]
        (workdir / f"rank{r}.json").write_text(json.dumps(doc))


def launch_result(
    world: int, *, hung: tuple[int, ...] = (), slow: tuple[int, ...] = (), codes: list[int] | None = None
) -> dict[str, Any]:
    """What step.launch returns, for merge()."""
    return {
        "wall_s": 30.0,
        "hung": list(hung),
        "hung_why": "still running 5 s after another rank failed" if hung else "",
        "slow_exit": list(slow),
        "codes": codes if codes is not None else [0] * world,
    }
