#!/usr/bin/env bash
# The image's Inductor cache (certify/jit_cache.py puts TORCHINDUCTOR_CACHE_DIR into the image's
# JIT cache volume) as the harness uses it, natively on a GPU machine (no Docker: a short device
# call): two default-level certifications of the machine's own torch, both given the same new
# TORCHINDUCTOR_CACHE_DIR, as two certifications of one image on one host are; the first compiles
# into it, the second loads from it. About 3 minutes on an H100.
#   bash benchmarks/gpu/inductor_cache_native.sh      -> $OUT/inductor-native.md, $OUT/native-N.json
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
R="$OUT/inductor-native.md"
site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$PYTHON" -m compileall -q -j 0 "$site" >/dev/null 2>&1  # as images carry it (issue27_proof.sh)
stage_harness inductor-native
export TORCHINDUCTOR_CACHE_DIR
TORCHINDUCTOR_CACHE_DIR="$(mktemp -d)/torchinductor"
{
  echo "# The harness with a kept Inductor cache, natively, $(hostname), $(date -u +%FT%TZ)"
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo; echo "Default-level certifications (torch), TORCHINDUCTOR_CACHE_DIR=$TORCHINDUCTOR_CACHE_DIR for both."
  echo; echo "| run | script wall s | harness wall s | verdict | RN50 child compile s | RN18 child compile s | Inductor cache found (files, bytes) | GPU busy % |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$R"
for n in 1 2; do
  run_harness "native-$n" 2>/dev/null
  set +e
  row=$("$PYTHON" - "$OUT/native-$n.json" <<'PY'
import json, sys
try:
    h = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"| no result ({type(e).__name__}) | | | | | |"); sys.exit()
def child(step):
    for s in h.get("steps") or []:
        if s.get("name") == step:
            pre = ((s.get("metrics") or {}).get("config") or {}).get("precompile") or {}
            v = pre.get("compile_s")
            return "%.1f" % v if isinstance(v, (int, float)) else "-"
    return "-"
ind = ((h.get("host") or {}).get("compile_caches") or {}).get("TORCHINDUCTOR_CACHE_DIR") or {}
busy = (((h.get("telemetry") or {}).get("summary") or {}).get("util_gpu") or {}).get("mean")
print(f"| {h.get('wall_seconds', 0):.1f} | {h.get('verdict')} | {child('tuned_rn50_compiled')} "
      f"| {child('tuned_rn18_compiled')} | {ind.get('files', '-')}, {ind.get('bytes', '-')} | {busy} |")
PY
)
  echo "| $n | $wall $row" | tee -a "$R"
done
echo; cat "$R"
