#!/usr/bin/env bash
# Issue 17: the multi-GPU proof on 4 or 8 GPUs (the nvidia-h200-x4 / nvidia-h200-x8 kinds), as the
# 2-GPU one was made (benchmarks/results/multigpu-h200x2-2026-11-30/), in three parts of one device
# call each. Each part bounds itself under the 10-minute limit of a call (the harness watchdogs
# below add up to at most 570 s) and brings back at most 8 files:
#
#   bash benchmarks/gpu/run_multigpu_proof.sh native      host facts; native 1 = the whole harness
#        natively (single-GPU steps on GPU 0, then the multi_gpu step on every GPU: sweep 8 B - 8 GiB,
#        DDP against one GPU; watchdog 330 s); native 2 = the multi_gpu step alone again (240 s).
#        $OUT: host.txt cert-native-1.json cert-native-2.json summary.txt logs.tar.gz
#   bash benchmarks/gpu/run_multigpu_proof.sh faults      the three fault injections on named ranks
#        (a wrong all-reduce contribution on rank N/2-1, drifting parameters on rank N/2, a hang on
#        rank N-2), the multi_gpu step alone with a 20 s process-group timeout (watchdog 180 s each).
#        $OUT: faults.txt faults.jsonl logs.tar.gz
#   bash benchmarks/gpu/run_multigpu_proof.sh container   Docker 26 (docker26.sh), the machine's own
#        environment as the base image, `envbuilder build`, `envbuilder certify --gpu-access devices`
#        on every GPU (the third run), `envbuilder run`.
#        $OUT: doctor.txt build.txt cert-container.json certify.txt run.txt proof.log summary.txt
#
# Expected durations, from the 2-GPU H200 runs (harness 170-187 s with the multi_gpu step 19-21 s,
# a hang 98 s with a 20 s timeout; the issue-16 harness 98 s on one H200) and NOT yet measured on 4
# or 8 GPUs: native about 4-5 min, faults about 3-4 min, container about 5-6 min (base import ~70 s).
#
# Then, here: python benchmarks/gpu/multigpu_floors.py --at 8G cert-native-1.json cert-native-2.json \
#   cert-container.json prints the floors by the rule in matrices/thresholds.yaml (multi_gpu:), and
#   `envbuilder report cert-container.json` shows the certificate's multi-GPU section.
#
# NCCL variables are left exactly as the machine sets them (NVLink multicast stays off there:
# NCCL_NVLS_ENABLE=0); nothing here sets or unsets one. The container part needs .device/ carried
# (docker26.tar.xz and whl/docker-*.whl, as cdi_proof.sh); the other parts need nothing beside the
# checkout. Extra arguments go to the harness (native and faults runs). MG_CPU_TEST=N runs the
# native and faults parts with N gloo processes on the CPU instead (a dry run of this script on a
# machine without GPUs: `--multi-gpu-cpu-test N`, nothing certified).
set -uo pipefail
part=${1:?usage: run_multigpu_proof.sh native|faults|container}
shift
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
export PYTHONUNBUFFERED=1
t0=$(date +%s)
LOG="$OUT/proof.log"
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$LOG" >&2; }
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
CPU_ARGS=()
if [ -n "${MG_CPU_TEST:-}" ]; then GPUS=$MG_CPU_TEST; CPU_ARGS=(--multi-gpu-cpu-test "$MG_CPU_TEST"); fi
summary() { "$PYTHON" benchmarks/gpu/multigpu_summary.py "$@" >"$OUT/summary.txt" 2>&1; cat "$OUT/summary.txt" >&2; }
# run_harness (lib.sh) leaves `set -e` on: this script goes on after a failed run and says so.
harness() { run_harness "$@"; set +e; }
# Packs $KEEP (logs, step lines, this part's proof.log) into $OUT/logs.tar.gz.
pack() { cp "$LOG" "$KEEP/" 2>/dev/null; tar -C "$KEEP" -czf "$OUT/logs.tar.gz" --exclude='*.json' . && rm -f "$LOG"; }

case "$part" in
native|faults)
  [ "$GPUS" -ge 2 ] || { stamp "fewer than 2 GPUs ($GPUS): nothing to prove"; exit 1; }
  KEEP="$(mktemp -d)"
  ;;
esac
case "$part" in
native)
  {
    echo "date: $(date -u +%FT%TZ)  host: $(hostname)  checkout: $(git -C "$ROOT" log -1 --format='%h %s' 2>/dev/null | cut -c1-80)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,power.limit --format=csv,noheader
    echo "--- nvidia-smi topo -m"; nvidia-smi topo -m
    echo "--- NCCL / CUDA environment (as the machine sets it)"
    env | grep -E '^(NCCL_|TORCH_NCCL_|TORCH_SYMM_MEM_|NVSHMEM_|CUDA_VISIBLE_DEVICES=)' | sort
    echo "NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE-<unset>}"
    echo "--- /dev/shm"; df -h /dev/shm
    echo "--- cores $(nproc), memory $(free -g | awk '/^Mem:/ {print $2}') GiB"
    "$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None, "gpus", torch.cuda.device_count())'
  } >"$OUT/host.txt" 2>&1
  stamp "$GPUS GPUs; host facts written"
  stage_harness run_multigpu_proof
  OUT_KEEP=$OUT
  OUT=$KEEP harness cert-native-1 --watchdog-seconds 330 "${CPU_ARGS[@]}" "$@"
  cp "$KEEP/cert-native-1.json" "$OUT_KEEP/" 2>/dev/null
  stamp "native 1 (whole harness): exit $rc, wall $wall s"
  OUT=$KEEP harness cert-native-2 --budget-seconds 1 --watchdog-seconds 240 "${CPU_ARGS[@]}" "$@"
  cp "$KEEP/cert-native-2.json" "$OUT_KEEP/" 2>/dev/null
  stamp "native 2 (the multi_gpu step alone): exit $rc, wall $wall s"
  summary "$OUT/cert-native-1.json" "$OUT/cert-native-2.json"
  pack
  ;;
faults)
  # On named ranks, not only the last: the reason must name the rank that misbehaved.
  FAULTS="allreduce@$((GPUS / 2 - 1)) params@$((GPUS / 2)) hang@$((GPUS - 2))" RUNS="$KEEP" \
    bash benchmarks/gpu/run_multigpu_faults.sh --watchdog-seconds 180 "${CPU_ARGS[@]}" "$@" \
    >>"$KEEP/faults.stderr.txt" 2>&1
  stamp "faults done: $(grep -c '^fault ' "$OUT/faults.txt" 2>/dev/null) runs"
  pack
  ;;
container)
  eb_setup || exit 1
  date -u +"%Y-%m-%dT%H:%M:%SZ on $(hostname), $GPUS GPUs" >"$LOG"
  bash benchmarks/gpu/docker26.sh start .device >>"$LOG" 2>&1 || { tail -20 "$LOG"; exit 1; }
  export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
  stamp "docker 26 up: $(docker version --format 'client {{.Client.Version}}, server {{.Server.Version}}')"
  TAG=envbuilder/multigpu-proof:latest
  BASE=envbuilder-gpu/base:host
  import_host_base "$BASE"
  stamp "base image imported: $(docker image inspect -f '{{.Size}}' "$BASE") bytes"
  { eb doctor; echo "doctor exit $?"; } >"$OUT/doctor.txt" 2>&1
  stamp "doctor: $(grep -E '^(ok|warn|fail) +(interconnect|shm|nccl)' "$OUT/doctor.txt" | tr '\n' ';' | cut -c1-300)"
  ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 eb build benchmarks/gpu/h200-proof.yaml \
      --base-image "$BASE" --base-venv /opt/torch/.venv --network host --tag "$TAG" >"$OUT/build.txt" 2>&1
  rc=$?; stamp "build exit $rc"
  [ $rc = 0 ] || exit $rc
  eb certify "$TAG" --gpu-access devices --out "$OUT/cert-container.json" >"$OUT/certify.txt" 2>&1
  rc=$?; stamp "certify --gpu-access devices exit $rc: $(grep -m1 -E 'verdict' "$OUT/certify.txt" | cut -c1-200)"
  {
    echo "\$ envbuilder run $TAG --gpu-access devices --network none -- python3 -c <every GPU>"
    eb run "$TAG" --gpu-access devices --network none -- python3 -c \
      "import torch; n = torch.cuda.device_count(); print('gpus', n, [torch.cuda.get_device_name(i) for i in range(n)])"
    echo "exit $?"
    echo "\$ envbuilder run ... -- python3 -c 'import sys; sys.exit(3)'"
    eb run "$TAG" --gpu-access devices --network none -- python3 -c "import sys; sys.exit(3)"
    echo "exit $?"
    echo "\$ envbuilder certs list"; eb certs list
  } >"$OUT/run.txt" 2>&1
  stamp "runs done: $(grep -c '^exit' "$OUT/run.txt") commands"
  summary "$OUT/cert-container.json"
  bash benchmarks/gpu/docker26.sh stop >>"$LOG" 2>&1
  stamp "done"
  ;;
*) echo "usage: $0 native|faults|container" >&2; exit 2 ;;
esac
