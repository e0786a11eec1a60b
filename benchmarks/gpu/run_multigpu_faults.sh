#!/usr/bin/env bash
# Fault injection for the multi_gpu step on real GPUs with NCCL (the unit tests do the same with
# gloo on CPUs): a wrong all-reduce value, parameters that drift apart on one rank, and a rank that
# hangs before the DDP run. Each must fail the step with a reason that names the fault, and the hang
# must end within the process-group timeout plus the parent's grace, not the whole deadline.
#
#   OUT=/tmp/o bash benchmarks/gpu/run_multigpu_faults.sh          # extra arguments go to the harness
#   ... run_multigpu_faults.sh --multi-gpu-cpu-test 2              # the same with gloo on CPUs
#   FAULTS=hang ... run_multigpu_faults.sh                         # some of them
#   FAULTS="allreduce@3 params@4 hang@6" ...                        # on those ranks (default: the last)
#
# The single-GPU steps are skipped (--budget-seconds 1: the multi_gpu step runs outside that budget).
# Writes $OUT/faults.txt (one summary per fault) and $OUT/faults.jsonl (each run's multi_gpu section);
# each run's own files go to $RUNS (default: a temporary folder, removed at the end).
# NCCL variables are left as the machine sets them, as in run_multigpu.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
stage_harness run_multigpu_faults
RUNS="${RUNS:-$STAGE/runs}"
mkdir -p "$RUNS"
: > "$OUT/faults.jsonl"
for fault in ${FAULTS:-allreduce params hang}; do
  name="fault-${fault//@/-at}"  # file names: letters, digits, '.', '_', '-'
  ENVBUILDER_HARNESS_MG_FAULT=$fault OUT="$RUNS" run_harness "$name" \
    --budget-seconds 1 --multi-gpu-timeout 20 "$@"
  echo "fault $fault: harness exit $rc, wall $wall s" >> "$OUT/faults.txt"
  "$PYTHON" - "$RUNS/$name.json" "$fault" "$OUT/faults.jsonl" <<'PY' >> "$OUT/faults.txt" || true
import json, sys
doc = json.load(open(sys.argv[1]))
mg = doc.get("multi_gpu") or {}
step = next((s for s in doc["steps"] if s["name"] == "multi_gpu"), {})
with open(sys.argv[3], "a") as f:
    f.write(json.dumps({"fault": sys.argv[2], "verdict": doc["verdict"], "multi_gpu": mg}) + "\n")
print(f"  verdict {doc['verdict']}; multi_gpu {mg.get('status')} after {step.get('seconds')} s")
print(f"  reason: {mg.get('reason')}")
for r in mg.get("ranks") or []:
    print(f"  rank {r.get('rank')}: exit {r.get('exit_code')} {str(r.get('error') or '')[:160]}")
PY
done
cat "$OUT/faults.txt" >&2
