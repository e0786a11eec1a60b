#!/usr/bin/env bash
# The session's last H200 call, when little device time is left: the CDI proof (cdi_proof.sh: build
# --base-venv, certify --gpu-access cdi with the kernel inventory, run in cdi and devices modes),
# then the JAX plan natively (issue16_proof.sh's jax run), then the old-vs-new native torch pair
# when time remains. The device returns at most 8 files, so each part writes its own folder and
# everything is packed into $OUT/all.tar.gz after each part; proof.log and summary.txt come back
# as text too.
#
#   bash benchmarks/gpu/combined_proof.sh      (carry .device: docker26.tar.xz, whl/, old/)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
FINAL=${OUT:?}
WORK=$(mktemp -d)
pack() { tar -czf "$FINAL/all.tar.gz.tmp" -C "$WORK" . && mv "$FINAL/all.tar.gz.tmp" "$FINAL/all.tar.gz"; }
t0=$(date +%s)
OUT=$WORK/cdi bash benchmarks/gpu/cdi_proof.sh; echo "cdi_proof exit $? after $(( $(date +%s) - t0 )) s"
cp "$WORK/cdi/proof.log" "$FINAL/proof.log" 2>/dev/null; pack
source benchmarks/gpu/lib.sh
OUT=$WORK/native; mkdir -p "$OUT"
stage_harness combined
run_harness jax-native --framework jax; rm -f "$OUT/jax-native.steps.jsonl"
echo "jax-native: exit $rc, wall $wall s (at $(( $(date +%s) - t0 )) s)" | tee -a "$OUT/walls.txt"; pack
run_harness torch-new; rm -f "$OUT/torch-new.steps.jsonl"
echo "torch-new: exit $rc, wall $wall s (at $(( $(date +%s) - t0 )) s)" | tee -a "$OUT/walls.txt"; pack
if [ -d .device/old/envbuilder/harness ]; then
  stage_harness combined-old .device/old
  run_harness torch-old; rm -f "$OUT/torch-old.steps.jsonl"
  echo "torch-old: exit $rc, wall $wall s (at $(( $(date +%s) - t0 )) s)" | tee -a "$OUT/walls.txt"; pack
fi
cp "$OUT/walls.txt" "$FINAL/summary.txt"
