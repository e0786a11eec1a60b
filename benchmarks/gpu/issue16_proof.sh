#!/usr/bin/env bash
# Issue 16 on the H200 test machine, in two parts (each fits one device call):
#
#   bash benchmarks/gpu/issue16_proof.sh native     the torch certification twice, side by side in
#                                                   one run: --level full (the old schedule, every
#                                                   step in one process, autotuning everywhere) and
#                                                   the default (compile lane); then the JAX plan
#   bash benchmarks/gpu/issue16_proof.sh container  the JAX certification in a container:
#                                                   `envbuilder certify --framework jax --gpu-access devices`
#                                                   of the machine's own environment as an image
#
# native writes $OUT/{torch-full,torch-default,jax-native}.{json,log} and summary.txt (walls, GPU
# busy = the mean NVML utilization over the run's samples, the gates); about 7 minutes.
# container needs .device/ as h200_proof.sh does (gpu-docker.sh, dockerbin.tar.xz, the docker SDK
# wheel) and writes $OUT/{cert-jax-container.json,certify-jax.txt,certify-jax.stderr.txt}; about 5 minutes.
set -uo pipefail
part=${1:?usage: issue16_proof.sh native|container}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
export PYTHONUNBUFFERED=1

summary() {
  "$PYTHON" - "$OUT" "$@" <<'PY'
import json, sys
out, names = sys.argv[1], sys.argv[2:]
for name in names:
    try:
        doc = json.load(open(f"{out}/{name}.json"))
    except (OSError, ValueError) as e:
        print(f"{name}: no result ({e})"); continue
    tel = doc.get("telemetry") or {}
    busy = ((tel.get("summary") or {}).get("util_gpu") or {}).get("mean")
    print(f"{name}: {doc['verdict']} ({doc['verdict_reason']}); harness wall {doc['wall_seconds']:.1f} s; "
          f"GPU busy {busy}% (mean NVML utilization over {(tel.get('summary') or {}).get('samples')} samples)")
    for s in doc["steps"]:
        m = s["metrics"]; ips = m.get("images_per_s")
        extra = f" {ips:,.0f} img/s" if isinstance(ips, (int, float)) else ""
        first = m.get("first_step_s"); extra += f" first {first:.1f} s" if isinstance(first, (int, float)) else ""
        pre = (m.get("config") or {}).get("precompile")
        extra += f" [child compile {pre.get('compile_s', 0):.1f} s, waited {pre.get('waited_s', 0):.1f} s]" if pre else ""
        print(f"  {s['status']:4} {s['name']:28} {s['seconds']:7.1f} s{extra}  {s['reason'][:80]}")
    for g in doc["gates"]:
        print(f"  gate {g['name']:34} {g['status']:5} {g.get('reason', '')}")
PY
}

case "$part" in
native)
  stage_harness issue16
  {
    echo "date: $(date -u +%FT%TZ)  host: $(hostname)  nproc: $(nproc)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader 2>&1
    "$PYTHON" -c 'import torch, jax; print("torch", torch.__version__, "jax", jax.__version__)' 2>&1
  } > "$OUT/summary.txt"
  for run in "torch-full --level full" "torch-default" "jax-native --framework jax"; do
    set -- $run
    name=$1; shift
    run_harness "$name" "$@"
    rm -f "$OUT/$name.steps.jsonl"
    echo "$name: exit $rc, script wall $wall s" >> "$OUT/summary.txt"
  done
  summary torch-full torch-default jax-native >> "$OUT/summary.txt"
  cat "$OUT/summary.txt"
  ;;
container)
  eb_setup || exit 1
  bash .device/gpu-docker.sh start .device || exit 1
  export PATH=/opt/dkr/usr/sbin:/opt/dkr/usr/bin:$PATH
  BASE=envbuilder-gpu/base:host
  import_host_base "$BASE" || exit 1
  # XLA compiles PTX with ptxas at run time; import_host_base leaves usr/local/cuda* out (the 2026-11-30
  # devices proof's jax_smoke failed with "No PTX compilation provider"), so add the CUDA binaries.
  CUDA_BIN=$(dirname "$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)")
  CTX=$(mktemp -d)
  cp "$CUDA_BIN"/ptxas "$CUDA_BIN"/nvlink "$CUDA_BIN"/fatbinary "$CTX"/ 2>/dev/null
  printf 'FROM %s\nCOPY . /usr/local/cuda/bin/\n' "$BASE" > "$CTX/Dockerfile"
  docker build -q -t envbuilder-gpu/jax:host "$CTX" > /dev/null || exit 1
  BASE=envbuilder-gpu/jax:host
  eb certify "$BASE" --framework jax --gpu-access devices \
      --out "$OUT/cert-jax-container.json" > "$OUT/certify-jax.txt" 2> "$OUT/certify-jax.stderr.txt"
  echo "certify exit $?" >> "$OUT/certify-jax.txt"
  cat "$OUT/certify-jax.txt"
  ;;
*) echo "usage: $0 native|container" >&2; exit 2 ;;
esac
