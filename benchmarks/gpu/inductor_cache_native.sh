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
  echo; echo "| run | script wall s | $("$PYTHON" benchmarks/gpu/cert_row.py --header)"
  echo "|---|---|---|---|---|---|---|---|---|"
} >"$R"
for n in 1 2; do
  run_harness "native-$n" 2>/dev/null
  set +e
  row=$("$PYTHON" benchmarks/gpu/cert_row.py "$OUT/native-$n.json")
  echo "| $n | $wall $row" | tee -a "$R"
done
echo; cat "$R"
