#!/usr/bin/env bash
# What the CUDA driver's JIT cache (CUDA_CACHE_PATH, default ~/.nv/ComputeCache) is worth to the
# harness: each run with an empty cache folder, then again with the folder the first run filled.
# A container starts with an empty one unless one is mounted, so the "empty" column is what every
# `check`, `certify` and training job pays in a fresh container (benchmarks/gpu/first_run.sh found
# the first cuDNN-autotuned ResNet-50 step at 12.1 s with an empty cache and 3.2-3.5 s with a
# filled one, H100, 2026-12-07). Native runs (the machine's own Python), bytecode compiled first as
# images carry it. One device call, about 4 minutes:
#   bash benchmarks/gpu/jit_cache.sh            -> $OUT/jit-cache.md, $OUT/raw.tar.gz
#   LEVELS="gate quick" ...                       fewer (gate: check's short mode; quick; default)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
LEVELS=${LEVELS:-gate quick default}
FINAL_OUT=$OUT
W=$(mktemp -d /tmp/jitcache.XXXXXX)
R="$FINAL_OUT/jit-cache.md"
site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
t=$(date +%s); "$PYTHON" -m compileall -q -j 0 "$site" >/dev/null 2>&1
{
  echo "# The CUDA JIT cache, empty against filled, $(hostname), $(date -u +%FT%TZ)"
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "bytecode compiled over $site in $(( $(date +%s) - t )) s"
  echo; echo "| level | cache | verdict | wall s | steps (s) | cache after |"; echo "|---|---|---|---|---|---|"
} | tee "$R"
stage_harness jit-cache
summary() {  # LEVEL CACHE-STATE JSON WALL
  "$PYTHON" - "$@" <<'PY'
import json, os, subprocess, sys
level, state, path, wall = sys.argv[1:5]
cache = os.environ["CUDA_CACHE_PATH"]
size = subprocess.run(["du", "-sh", cache], capture_output=True, text=True).stdout.split("\t")[0] or "-"
files = sum(len(f) for _, _, f in os.walk(cache))
try:
    doc = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"| {level} | {state} | no result ({type(e).__name__}) | {wall} | | {size}, {files} files |"); sys.exit()
steps = " ".join(f"{s['name']} {s['seconds']:.1f}" for s in doc.get("steps", []) if s.get("status") != "skip")
failed = [s["name"] for s in doc.get("steps", []) if s.get("status") == "fail"]
verdict = doc.get("verdict") or (f"failed: {' '.join(failed)}" if failed else "no step failed")
print(f"| {level} | {state} | {verdict} | {wall} | {steps} | {size}, {files} files |")
PY
}
for level in $LEVELS; do
  export CUDA_CACHE_PATH="$W/cache-$level"
  for state in empty filled; do
    [ "$state" = empty ] && rm -rf "$CUDA_CACHE_PATH" && mkdir -p "$CUDA_CACHE_PATH"
    prefix="$level-$state"
    start=$(date +%s.%N)
    case $level in
      gate)
        PYTHONPATH="$STAGE" "$PYTHON" "$STAGE/envbuilder_harness/gate_run.py" --out "$W/$prefix.json" \
          --nonce jit --watchdog-seconds 120 --framework torch >"$W/$prefix.stdout" 2>"$W/$prefix.log" ;;
      quick) OUT=$W run_harness "$prefix" --quick 2>/dev/null ;;
      default) OUT=$W run_harness "$prefix" 2>/dev/null ;;
    esac
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    summary "$level" "$state" "$W/$prefix.json" "$wall" | tee -a "$R"
  done
done
tar -czf "$FINAL_OUT/raw.tar.gz" -C "$W" --exclude='cache-*' . 2>/dev/null
rm -rf "$W"
