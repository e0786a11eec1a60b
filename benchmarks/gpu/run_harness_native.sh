#!/usr/bin/env bash
# Run the certification payload natively on a GPU host (no Docker), exactly as it runs in images:
# the harness folder is copied as a top-level package `envbuilder_harness` and run with
# `python3 -m envbuilder_harness`, so it cannot lean on the envbuilder package being importable.
#
#   bash benchmarks/gpu/run_harness_native.sh            # writes $OUT (or ./out)/cert-native.json
#   PYTHON=python3.12 OUT=/tmp/o bash benchmarks/gpu/run_harness_native.sh --budget-seconds 170
#
# Extra arguments go to the harness (--quick, --steps N, --data DIR, ...). Thresholds come from
# matrices/thresholds.yaml (converted to JSON here, as the host side does).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
stage_harness run_harness_native

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
  "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null || true
  echo "nproc: $(nproc)"
} | tee "$OUT/cert-native.host.txt" >&2

run_harness cert-native "$@"
echo "run_harness_native: exit $rc, wall ${wall} s (target <= 180 s), result $OUT/cert-native.json" >&2
"$PYTHON" - "$OUT/cert-native.json" "$wall" <<'PY' >&2 || true
import json, sys
doc = json.load(open(sys.argv[1]))
print(f"verdict: {doc['verdict']} ({doc['verdict_reason']}); harness wall {doc['wall_seconds']:.1f} s, script wall {sys.argv[2]} s")
for s in doc["steps"]:
    m = s["metrics"]
    ips = m.get("images_per_s")
    extra = f" {ips:,.0f} img/s" if isinstance(ips, (int, float)) else ""
    print(f"  {s['status']:4} {s['name']:28} {s['seconds']:7.1f} s{extra}  {s['reason'][:90]}")
for g in doc["gates"]:
    print(f"  gate {g['name']:34} {g['status']:5} {g.get('reason', '')}")
PY
exit $rc
