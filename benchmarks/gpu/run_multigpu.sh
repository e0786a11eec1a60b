#!/usr/bin/env bash
# The multi-GPU proof (issue 6) on a host with 2+ GPUs, natively (no Docker): the whole harness as
# it runs in images (single-GPU steps, then the multi_gpu step: NCCL all-reduce sweep 8 B - 1 GiB,
# DDP ResNet-18 vs one GPU, environment sanity), writing $OUT/cert-multigpu.json and a short table.
#
#   bash benchmarks/gpu/run_multigpu.sh                     # OUT defaults to ./out
#   OUT=/tmp/o bash benchmarks/gpu/run_multigpu.sh --multi-gpu-timeout 60
#
# The environment is left exactly as the machine sets it: on our test machines NVLink multicast
# stays off (NCCL_NVLS_ENABLE=0 is set there and must stay set), so busbw is a ring number. This
# script never sets or unsets any NCCL variable; it only records them. Extra arguments go to the
# harness. Thresholds: matrices/thresholds.yaml converted to JSON (as the host side does).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
stage_harness run_multigpu

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
  echo "--- nvidia-smi topo -m"
  nvidia-smi topo -m 2>/dev/null || echo "(not available)"
  echo "--- NCCL / CUDA environment (as the machine sets it)"
  env | grep -E '^(NCCL_|TORCH_NCCL_|CUDA_VISIBLE_DEVICES=)' | sort || true
  echo "NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-<unset>}"
  echo "--- /dev/shm"
  df -h /dev/shm 2>/dev/null || true
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())' 2>/dev/null || true
} | tee "$OUT/cert-multigpu.host.txt" >&2

run_harness cert-multigpu "$@"
echo "run_multigpu: exit $rc, wall ${wall} s, result $OUT/cert-multigpu.json" >&2
"$PYTHON" - "$OUT/cert-multigpu.json" <<'PY' | tee "$OUT/cert-multigpu.table.txt" >&2 || true
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"verdict: {doc['verdict']} ({doc['verdict_reason']}); harness wall {doc['wall_seconds']:.1f} s")
for s in doc["steps"]:
    print(f"  {s['status']:4} {s['name']:28} {s['seconds']:7.1f} s  {s['reason'][:100]}")
mg = doc.get("multi_gpu") or {}
print(f"multi_gpu: {mg.get('status')} {mg.get('reason', '')[:200]}")
env = mg.get("env") or {}
print(f"  world {mg.get('world_size')}, backend {mg.get('backend')}, NCCL {mg.get('nccl_version')}, "
      f"interconnect {mg.get('interconnect')}, NCCL_NVLS_ENABLE={env.get('nvls_enable')}, "
      f"shm {env.get('shm')}, P2P all pairs {(env.get('p2p') or {}).get('all_pairs')}")
print(f"  {'bytes':>12} {'time_us':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}")
for r in mg.get("sweep") or []:
    print(f"  {r['bytes']:>12} {r['time_us']:>10.1f} {r['algbw_gbs']:>11.2f} {r['busbw_gbs']:>11.2f}")
print(f"  DDP {mg.get('ddp_images_per_s')} img/s vs one GPU {mg.get('single_gpu_images_per_s')}: "
      f"scaling efficiency {mg.get('scaling_efficiency')}; params identical {mg.get('params_identical')}")
for g in doc["gates"]:
    print(f"  gate {g['name']:34} {g['status']:5} {g.get('reason', '')}")
PY
exit $rc
