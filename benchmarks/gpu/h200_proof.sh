#!/usr/bin/env bash
# The GPU proof on the H200 test machine (no Docker, no Container Toolkit, no network there), in
# two parts so each fits one device call:
#
#   bash benchmarks/gpu/h200_proof.sh native      nvidia-smi, `envbuilder doctor`, the harness natively
#   bash benchmarks/gpu/h200_proof.sh container   Docker from gpu-docker.sh, an image of the machine's
#                                                 own environment as --base-image, `envbuilder build`,
#                                                 `envbuilder certify --gpu-access devices`, `envbuilder run`
#
# On a machine with 2+ GPUs (nvidia-h200-x2) the container part certifies the image on all of them:
# the harness adds its multi_gpu step, and certify passes the host's NCCL_* settings in
# (NCCL_NVLS_ENABLE=0 stays set inside the container).
#
# Needs, beside the checkout (carried, ignored by git): .device/dockerbin.tar.xz and gpu-docker.sh
# (`shared/tools/gpu-docker.sh pack`), .device/whl/docker-*.whl (the docker SDK; the machine has
# requests and urllib3). Results go to $OUT (the device tool brings them back).
set -uo pipefail
part=${1:?usage: h200_proof.sh native|container}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
eb_setup || exit 1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

case "$part" in
native)
  nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
  eb doctor > "$OUT/doctor-h200.txt" 2>&1; echo "doctor exit $?" >> "$OUT/doctor-h200.txt"
  eb doctor --json > "$OUT/doctor-h200.json" 2>/dev/null
  stamp "doctor done"
  OUT="$OUT" bash benchmarks/gpu/run_harness_native.sh
  stamp "native harness exit $?"
  ;;
container)
  bash .device/gpu-docker.sh start .device || exit 1
  export PATH=/opt/dkr/usr/sbin:/opt/dkr/usr/bin:$PATH
  BASE=envbuilder-gpu/base:host
  import_host_base "$BASE"
  stamp "base image imported: $(docker image inspect -f '{{.Size}}' $BASE) bytes"
  eb doctor > "$OUT/doctor-docker.txt" 2>&1
  eb build benchmarks/gpu/h200-proof.yaml --base-image "$BASE" --base-venv /opt/torch/.venv \
      --network host --tag envbuilder/h200-proof:latest --lock-out "$OUT/h200-proof.lock.json" \
      > "$OUT/build.txt" 2>&1
  rc=$?; stamp "build exit $rc"; tail -25 "$OUT/build.txt"
  [ $rc = 0 ] || exit $rc
  eb certify envbuilder/h200-proof:latest --gpu-access devices --out "$OUT/cert-container.json" \
      > "$OUT/certify.txt" 2> "$OUT/certify.stderr.txt"
  rc=$?; stamp "certify exit $rc"; cat "$OUT/certify.txt"
  {
    echo "\$ envbuilder run envbuilder/h200-proof:latest --gpu-access devices --network none -- python3 -c ..."
    eb run envbuilder/h200-proof:latest --gpu-access devices --network none -- python3 -c \
      "import torch; print('cuda available:', torch.cuda.is_available()); print('device:', torch.cuda.get_device_name(0)); x = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); print('bf16 matmul ok:', bool(torch.isfinite(x @ x).all()))"
    echo "exit $?"
    echo "\$ envbuilder run ... -- python3 -c 'import sys; sys.exit(3)'"
    eb run envbuilder/h200-proof:latest --gpu-access devices --network none -- python3 -c "import sys; sys.exit(3)"
    echo "exit $?"
    echo "\$ envbuilder certs list"; eb certs list
  } > "$OUT/run.txt" 2>&1
  stamp "run done"; cat "$OUT/run.txt"
  ;;
*) echo "usage: $0 native|container" >&2; exit 2 ;;
esac
