# Sourced by the GPU scripts here (after they set ROOT, the checkout): PYTHON (default python3) and
# OUT (default $ROOT/out, created); stage the harness exactly as images carry it, and convert
# matrices/thresholds.yaml to the JSON the harness reads (as the host side does).
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-$ROOT/out}"
mkdir -p "$OUT"

#   stage_harness NAME [SRC]   sets STAGE (a temp dir holding envbuilder_harness/, removed on
#                        exit) and THRESH_ARGS (empty when PyYAML is missing: built-in thresholds);
#                        SRC (default $ROOT): a tree with envbuilder/harness and matrices/thresholds.yaml,
#                        e.g. an older harness from `git archive` (issue16_proof.sh compares two)
STAGES=()
stage_harness() {
  local name=$1 src=${2:-$ROOT}
  STAGE="$(mktemp -d)"
  STAGES+=("$STAGE")
  trap 'rm -rf "${STAGES[@]}"' EXIT
  cp -r "$src/envbuilder/harness" "$STAGE/envbuilder_harness"
  find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
  THRESH_ARGS=()
  if "$PYTHON" -c 'import yaml' 2>/dev/null; then
    "$PYTHON" - "$src/matrices/thresholds.yaml" "$STAGE/thresholds.json" <<'PY'
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["source_path"] = "matrices/thresholds.yaml"
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
    THRESH_ARGS=(--thresholds "$STAGE/thresholds.json")
  else
    echo "$name: PyYAML missing: the harness's built-in thresholds apply" >&2
  fi
}

#   run_harness PREFIX ARGS...   runs the staged harness, writing $OUT/PREFIX.json (the result),
#                                .steps.jsonl (step lines) and .log (stderr); sets rc and wall (s)
run_harness() {
  local prefix=$1; shift
  local start end
  start=$(date +%s.%N)
  set +e
  PYTHONPATH="$STAGE${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m envbuilder_harness \
    --out "$OUT/$prefix.json" "${THRESH_ARGS[@]}" "$@" \
    > "$OUT/$prefix.steps.jsonl" 2> >(tee "$OUT/$prefix.log" >&2)
  rc=$?
  set -e
  end=$(date +%s.%N)
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
}

#   proof_log              a proof script's log: LOG=$OUT/proof.log, the clock started; then
#                          `stamp MSG...` prints "[N s] MSG" and appends it to LOG
proof_log() {
  LOG="$OUT/proof.log"
  t0=$(date +%s)
}
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$LOG"; }

#   eb_setup     for the container proofs: the docker SDK from .device/whl (the GPU machine lacks
#                it) on PYTHONPATH with this checkout, and a private certificate store; then `eb`
#                runs this checkout's envbuilder
eb_setup() {
  export PYTHONUNBUFFERED=1 ENVBUILDER_DATA_DIR="${ENVBUILDER_DATA_DIR:-/tmp/envbuilder-store}"
  "$PYTHON" -m pip install -q --no-index --no-deps --target /tmp/site "$ROOT"/.device/whl/*.whl || return 1
  export PYTHONPATH="/tmp/site:$ROOT"
}
eb() { "$PYTHON" -m envbuilder "$@"; }

#   import_host_base TAG   the machine's own environment as a base image (shared/docs/environment.md,
#                          about 70 s), plus the compiler driver's helpers (usr/libexec: cc1) and
#                          headers, which torch.compile's Triton needs
import_host_base() {
  (cd / && tar -c --exclude='usr/local/cuda*' --exclude=usr/share/doc lib lib64 bin sbin usr/bin \
      usr/lib usr/lib64 usr/sbin usr/libexec usr/include etc opt/torch 2>/dev/null) \
    | docker import --change 'ENV PATH=/opt/torch/.venv/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$1" >/dev/null
}
