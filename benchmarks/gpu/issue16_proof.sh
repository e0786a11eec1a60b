#!/usr/bin/env bash
# Issue 16 on the H200 test machine, in parts (each fits one device call):
#
#   bash benchmarks/gpu/issue16_proof.sh native     old vs new, side by side in one run: the default
#                                                   torch certification of the previous harness (the
#                                                   tree in .device/old, when there), then this
#                                                   checkout's default torch certification, then its
#                                                   JAX plan; about 5.5 minutes
#   bash benchmarks/gpu/issue16_proof.sh ab         new, old, new (the same pair, bracketed against drift),
#                                                   then the monitor's recorded workloads; about 8 minutes
#   bash benchmarks/gpu/issue16_proof.sh full       this checkout's --level full (the long schedule);
#                                                   about 3 minutes
#   bash benchmarks/gpu/issue16_proof.sh container  the JAX certification in a container:
#                                                   `envbuilder certify --framework jax --gpu-access devices`
#                                                   of the machine's own environment as an image
#
# The previous harness for `native`: before the device call, in the checkout,
#   mkdir -p .device/old && git archive d28636f envbuilder/harness matrices/thresholds.yaml | tar -x -C .device/old
# and carry .device/old. native writes $OUT/{torch-old,torch-default,jax-native}.{json,log} and
# summary.txt (walls, GPU busy = the mean NVML utilization over the run's samples, the gates); full
# writes $OUT/torch-full.{json,log} and summary.txt.
# container needs .device/ as h200_proof.sh does (gpu-docker.sh, dockerbin.tar.xz, the docker SDK
# wheel) and writes $OUT/{cert-jax-container.json,certify-jax.txt,certify-jax.stderr.txt}; about 5 minutes.
set -uo pipefail
part=${1:?usage: issue16_proof.sh native|ab|full|container}
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
    warm = (doc.get("facts") or {}).get("cudnn_warmup")
    if warm:
        print(f"  cudnn_warmup {warm}")
    for s in doc["steps"]:
        if s["name"] == "batch_ramp" and s["metrics"].get("tried"):
            m = s["metrics"]
            print(f"  ramp tried {[t['batch'] for t in m['tried']]} predicted {m.get('predicted_max_batch')}")
    for g in doc["gates"]:
        print(f"  gate {g['name']:34} {g['status']:5} {g.get('reason', '')}")
PY
}

header() {
  {
    echo "date: $(date -u +%FT%TZ)  host: $(hostname)  nproc: $(nproc)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader 2>&1
    "$PYTHON" -c 'import torch, jax; print("torch", torch.__version__, "jax", jax.__version__)' 2>&1
  } > "$OUT/summary.txt"
}

#   runs "NAME ARGS..."...   each with the harness staged last, one after the other
runs() {
  local run name
  for run in "$@"; do
    set -- $run
    name=$1; shift
    run_harness "$name" "$@"
    rm -f "$OUT/$name.steps.jsonl"
    echo "$name: exit $rc, script wall $wall s" >> "$OUT/summary.txt"
  done
}

case "$part" in
native)
  header
  names=()
  if [ -d .device/old/envbuilder/harness ]; then
    stage_harness issue16-old .device/old
    runs "torch-old"
    names+=(torch-old)
  else
    echo "torch-old: not run (.device/old missing: see the header of this script)" >> "$OUT/summary.txt"
  fi
  stage_harness issue16
  runs "torch-default" "jax-native --framework jax"
  summary "${names[@]}" torch-default jax-native >> "$OUT/summary.txt"
  cat "$OUT/summary.txt"
  ;;
ab)
  # old vs new side by side, bracketed (new, old, new: the machine's drift shows in the two new
  # runs), then the monitor's seven recorded workloads; about 8 minutes. Everything in all.tar.gz.
  header
  stage_harness issue16; NEW_STAGE=$STAGE NEW_THRESH=("${THRESH_ARGS[@]}")
  names=(torch-new-1)
  runs "torch-new-1"
  if [ -d .device/old/envbuilder/harness ]; then
    stage_harness issue16-old .device/old
    runs "torch-old"
    names+=(torch-old)
  fi
  STAGE=$NEW_STAGE THRESH_ARGS=("${NEW_THRESH[@]}")
  runs "torch-new-2"
  names+=(torch-new-2)
  summary "${names[@]}" >> "$OUT/summary.txt"
  cat "$OUT/summary.txt"
  [ "${MONITOR:-1}" = 0 ] && exit 0  # MONITOR=0: the harness runs only
  mkdir -p "$OUT/monitor"
  OUT="$OUT/monitor" timeout 200 "$PYTHON" tests/data/monitor/record_workloads.py > "$OUT/monitor.log" 2>&1
  echo "record_workloads exit $?" >> "$OUT/monitor.log"
  tail -5 "$OUT/monitor.log"
  tar -czf "$OUT/all.tar.gz.tmp" -C "$OUT" --exclude all.tar.gz.tmp . && mv "$OUT/all.tar.gz.tmp" "$OUT/all.tar.gz"
  ;;
full)
  header
  stage_harness issue16
  runs "torch-full --level full"
  summary torch-full >> "$OUT/summary.txt"
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
*) echo "usage: $0 native|ab|full|container" >&2; exit 2 ;;
esac
