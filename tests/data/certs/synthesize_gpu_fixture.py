"""Write tests/data/certs/sample-gpu.json: a SYNTHETIC GPU certificate for report tests.

Not a measurement. Its shape follows the harness's result document (envbuilder/harness/result.py
assemble_result, telemetry.Sampler.to_json) and its numbers are made plausible from
shared/reference/perf-anchors.md (H200, driver 580.159.04); the telemetry series is generated.
It carries "_fixture" in its harness and run sections so nobody mistakes it for evidence.
Regenerate: .venv/bin/python tests/data/certs/synthesize_gpu_fixture.py
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from envbuilder.certify.certificate import build_certificate, host_fingerprint

LABEL = "synthetic test data, not a measurement"
OUT = Path(__file__).resolve().parent / "sample-gpu.json"
GPU = {"name": "NVIDIA H200", "uuid": "GPU-00000000-fixture-0000-000000000000", "cc": "9.0"}
# (step, seconds from start, end, util %, memory MiB, power W, mean step ms, images/s, val acc)
RUNS = [
    ("train_rn18_fp32_bs32", 10, 18, 93, 3900, 430, 11.8, 2712, 0.962),
    ("train_rn18_bf16_bs32", 18, 25, 88, 2600, 380, 9.6, 3333, 0.958),
    ("train_rn18_bf16_bs64", 25, 32, 94, 4100, 470, 12.1, 5289, 0.969),
    ("tuned_rn18_eager", 62, 70, 98, 12800, 610, 19.3, 13264, 0.971),
    ("tuned_rn50_eager", 70, 82, 99, 11300, 665, 54.2, 4723, 0.944),
    ("tuned_rn50_compiled", 82, 146, 97, 10900, 640, 38.4, 6667, 0.947),
]


def series(rng: random.Random) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {
        k: []
        for k in ("t", "util_gpu", "util_mem", "mem_used_mib", "power_w", "temp_c", "sm_clock_mhz", "reasons")
    }
    temp = 34.0
    for i in range(165):
        t = float(i)
        run = next((r for r in RUNS if r[1] <= t < r[2]), None)
        ramp = 32 <= t < 62
        if run:
            util = run[3] - rng.random() * 4
            if run[0] == "tuned_rn50_compiled" and t < 140:  # compiling: the CPU works, the GPU waits
                util = rng.choice([0, 5, 30, 60])
            mem, power = run[4] + rng.random() * 40, run[5] * (0.9 + rng.random() * 0.15)
        elif ramp:
            util, mem = 90 - rng.random() * 20, 2000 + (t - 32) * 4300
            power = 560 + rng.random() * 80
        else:
            util, mem, power = (0 if t < 3 else 8), 530.0, 90 + rng.random() * 20
        temp += (30 + power / 12 - temp) * 0.06
        capped = power > 640 and rng.random() < 0.6  # SW power cap near the 700 W limit
        reasons = (0x4 if capped else 0) | (0x1 if util == 0 else 0)
        clock = 1980 - (180 * rng.random() if capped else 0)
        for k, v in zip(
            cols,
            (
                t,
                round(util),
                round(util * 0.6),
                round(mem, 1),
                round(power, 1),
                round(temp),
                round(clock),
                reasons,
            ),
            strict=True,
        ):
            cols[k].append(v)
    return cols


def window_summary(cols: dict[str, list[Any]], a: float, b: float) -> dict[str, Any]:
    idx = [i for i, t in enumerate(cols["t"]) if a <= t <= b]
    out: dict[str, Any] = {"samples": len(idx)}
    for f in ("util_gpu", "mem_used_mib", "power_w", "temp_c", "sm_clock_mhz"):
        vals = [float(cols[f][i]) for i in idx]
        out[f] = {"mean": round(sum(vals) / len(vals), 2), "max": max(vals)}
    capped = sum(1 for i in idx if cols["reasons"][i] & 0x4) / len(idx)
    out["clock_event_reasons"] = {"sw_power_cap": round(capped, 3)} if capped else {}
    out["slowdown_fraction"] = round(capped, 3)
    return out


def step(
    name: str, seconds: float, metrics: dict[str, Any], status: str = "pass", reason: str = ""
) -> dict[str, Any]:
    return {
        "kind": "step",
        "name": name,
        "status": status,
        "reason": reason,
        "seconds": seconds,
        "metrics": metrics,
        "warnings": [],
    }


def main() -> None:
    rng = random.Random(20261130)
    cols = series(rng)
    steps = [
        step(
            "host", 0.9, {"gpus": [{**GPU, "index": 0, "power_limit_w": 700.0, "memory_total_mib": 143771}]}
        ),
        step("cpu_check", 1.8, {"batch": 8, "image_size": 64, "loss": 1.61}),
        step(
            "cuda_smoke",
            3.1,
            {
                "device_name": "NVIDIA H200",
                "compute_capability": "9.0",
                "arch_covered_by": "sass sm_90",
                "memory_peak_allocated_mib": 871.2,
            },
        ),
        step("tensorflow_smoke", 0.0, {}, "skip", "tensorflow is not installed in this environment"),
        step("dataset", 3.6, {"image_size": 224, "train": 4096, "val": 512, "test": 512}),
    ]
    windows = {}
    for name, a, b, _u, mem, _p, ms, ips, acc in RUNS:
        windows[name] = [float(a), float(b)]
        precision = "fp32" if "fp32" in name else "bf16"
        batch = 64 if name.endswith("bs64") else (32 if "bs32" in name else 256)
        metrics = {
            "config": {
                "arch": "resnet50" if "rn50" in name else "resnet18",
                "batch": batch,
                "precision": precision,
                "channels_last": name.startswith("tuned"),
                "compile": name.endswith("compiled"),
            },
            "step_time": {
                "mean_ms": ms,
                "p50_ms": round(ms * 0.98, 2),
                "p95_ms": round(ms * 1.12, 2),
                "min_ms": round(ms * 0.93, 2),
                "max_ms": round(ms * 1.6, 2),
            },
            "images_per_s": ips,
            "memory": {"peak_allocated_mib": round(mem * 0.8, 1), "peak_reserved_mib": round(mem * 0.92, 1)},
            "val_accuracy": acc,
            "telemetry": window_summary(cols, a, b),
        }
        steps.append(step(name, float(b - a), metrics))
        if name == "train_rn18_bf16_bs64":
            windows["batch_ramp"] = [32.0, 62.0]
            steps.append(
                step(
                    "batch_ramp",
                    30.0,
                    {
                        "largest_batch": 3072,
                        "first_oom_batch": 3328,
                        "precision": "bf16",
                        "model": "resnet18",
                        "telemetry": window_summary(cols, 32, 62),
                    },
                )
            )
    steps.append(step("telemetry_overhead", 5.2, {"overhead": 0.0021}))
    steps.append(
        step(
            "input_pipeline",
            9.8,
            {
                "loader_fed_img_s": 2890.0,
                "resident_img_s": 4710.0,
                "bottleneck": "CPU decode: 16 workers feed 61% of what the GPU trains on resident data",
            },
        )
    )
    harness = {
        "_fixture": LABEL,
        "kind": "result",
        "schema_version": 1,
        "harness_version": "1.0.0",
        "mode": "full",
        "gpu_path": True,
        "wall_seconds": 162.4,
        "steps": steps,
        "facts": {"amp": "bf16", "largest_batch": 3072},
        "gates": [{"name": "tuned_rn50_eager", "status": "pass", "measured": 4723, "required": 4482.1}],
        "verdict": "certified",
        "verdict_reason": "13 checks passed on the GPU",
        "notes": [],
        "telemetry": {
            "available": True,
            "interval_s": 1.0,
            "windows": windows,
            "unsupported": {},
            "series": cols,
            "reason_bits": {
                "1": "gpu_idle",
                "4": "sw_power_cap",
                "8": "hw_slowdown",
                "32": "sw_thermal_slowdown",
                "64": "hw_thermal_slowdown",
            },
        },
    }
    cert = build_certificate(
        image={
            "id": "sha256:" + "5a" * 32,
            "ref": "example/synthetic-gpu-fixture:1",
            "lock_hash": None,
            "stack": {
                "id": "torch2.11.0-cu130-py3.12-bundled",
                "cuda": "13.0",
                "cudnn": "9.19",
                "python": "3.12",
                "min_driver": "580.65.06",
                "strategy": "bundled",
                "base_image": "python:3.12-slim-bookworm",
                "framework": {"name": "torch", "version": "2.11.0", "variant": "cu130"},
                "archs": {"sass": ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"], "ptx": ["12.0"]},
            },
        },
        host={
            "fingerprint": host_fingerprint("580.159.04", [GPU]),
            "driver": "580.159.04",
            "cuda_driver": "13.0",
            "gpus": [GPU],
            "gpu_access": "devices",
        },
        run={"_fixture": LABEL, "exit_code": 0, "seconds": 171.0, "quick": False},
        harness=harness,
        thresholds={"defaults": {"accuracy_margin_over_chance": 0.25}},
        verdict="certified",
        verdict_reason="13 checks passed on the GPU",
        issued_at="2026-11-30T07:00:00Z",
    )
    OUT.write_text(cert.to_json(indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
