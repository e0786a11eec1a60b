#!/usr/bin/env bash
# GPU access proven in CDI mode on the H200 test machine (issue 19), in one device call (~7 min):
# Docker 26 from docker26.sh (CDI on), `envbuilder gpu cdi-spec --out /etc/cdi/nvidia.yaml`, an
# image of the machine's own environment built as in h200_proof.sh, `envbuilder certify
# --gpu-access cdi` (the full harness, so its figures compare with the devices-mode proof), `envbuilder
# run` in cdi and devices modes with nvidia-smi inside, and the image's entrypoint refusing a driver
# floor above the real driver (read from the real /proc/driver/nvidia/version).
#
#   bash benchmarks/gpu/cdi_proof.sh
#
# Needs, beside the checkout (carried, ignored by git): .device/docker26.tar.xz
# (`bash benchmarks/gpu/docker26.sh pack .device` on the CPU machine) and .device/whl/docker-*.whl
# (the docker SDK). Writes 8 files to $OUT: nvidia-smi.txt, cdi-spec.json (the result and the spec
# itself), doctor.txt, build.txt, certify-cdi.txt (stdout + stderr), cert-cdi.json, run.txt (every
# container run, with nvidia-smi in both modes), proof.log (the steps with their times).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
eb_setup || exit 1
proof_log
TAG=envbuilder/cdi-proof:latest
BASE=envbuilder-gpu/base:host
SMOKE="import torch; print('cuda available:', torch.cuda.is_available()); print('device:', torch.cuda.get_device_name(0)); x = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); print('bf16 matmul ok:', bool(torch.isfinite(x @ x).all()))"

date -u +"%Y-%m-%dT%H:%M:%SZ on $(hostname)" >"$LOG"
nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
bash benchmarks/gpu/docker26.sh start .device >>"$LOG" 2>&1 || { tail -45 "$LOG"; exit 1; }
export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
stamp "docker 26 up: $(docker version --format 'client {{.Client.Version}}, server {{.Server.Version}}')"

eb gpu cdi-spec --out /etc/cdi/nvidia.yaml --json >"$OUT/cdi-spec.json" 2>>"$LOG"
rc=$?; stamp "gpu cdi-spec exit $rc: $(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("devices", d["devices"], d["mounts"], "mounts, cdiVersion", d["cdi_version"], "notes", d["notes"])' "$OUT/cdi-spec.json" 2>&1 | cut -c1-300)"
[ $rc = 0 ] || exit $rc
{ eb doctor; echo "doctor exit $?"; } >"$OUT/doctor.txt" 2>&1
stamp "doctor: $(grep -E '^(ok|warn|fail) +cdi:' "$OUT/doctor.txt" | cut -c1-160)"

import_host_base "$BASE"
stamp "base image imported: $(docker image inspect -f '{{.Size}}' "$BASE") bytes"
ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 eb build benchmarks/gpu/h200-proof.yaml \
    --base-image "$BASE" --base-venv /opt/torch/.venv --network host --tag "$TAG" >"$OUT/build.txt" 2>&1
rc=$?; stamp "build exit $rc"; tail -8 "$OUT/build.txt" >>"$LOG"
[ $rc = 0 ] || exit $rc

{
  echo "\$ docker run --rm --network none --device nvidia.com/gpu=all $TAG nvidia-smi   # plain docker, the spec alone"
  docker run --rm --network none --device nvidia.com/gpu=all "$TAG" nvidia-smi; echo "exit $?"
} >"$OUT/run.txt" 2>&1
stamp "plain docker run with the CDI device: $(tail -1 "$OUT/run.txt")"

eb certify "$TAG" --gpu-access cdi --out "$OUT/cert-cdi.json" >"$OUT/certify-cdi.txt" 2>&1
rc=$?; stamp "certify --gpu-access cdi exit $rc: $(grep -m1 -E 'certified|failed' "$OUT/certify-cdi.txt" | cut -c1-160)"

{
  for mode in cdi devices; do
    echo; echo "\$ envbuilder run $TAG --gpu-access $mode --network none -- nvidia-smi"
    eb run "$TAG" --gpu-access "$mode" --network none -- nvidia-smi; echo "exit $?"
    echo; echo "\$ envbuilder run $TAG --gpu-access $mode --network none -- python3 -c <torch smoke>"
    eb run "$TAG" --gpu-access "$mode" --network none -- python3 -c "$SMOKE"; echo "exit $?"
  done
  echo; echo "\$ envbuilder run $TAG --gpu-access cdi --network none -- python3 -c 'import sys; sys.exit(3)'"
  eb run "$TAG" --gpu-access cdi --network none -- python3 -c "import sys; sys.exit(3)"; echo "exit $?"
  echo; echo "# the entrypoint reads the real driver: a floor above it is refused (exit 78), the image's own floor passes"
  echo "\$ docker run --rm --network none --device nvidia.com/gpu=all -e ENVBUILDER_MIN_DRIVER=999.0 $TAG nvidia-smi -L"
  docker run --rm --network none --device nvidia.com/gpu=all -e ENVBUILDER_MIN_DRIVER=999.0 "$TAG" nvidia-smi -L; echo "exit $?"
  echo "\$ docker run --rm --network none --device nvidia.com/gpu=all $TAG sh -c 'echo \$ENVBUILDER_MIN_DRIVER; nvidia-smi -L'"
  docker run --rm --network none --device nvidia.com/gpu=all "$TAG" sh -c 'echo "floor $ENVBUILDER_MIN_DRIVER"; nvidia-smi -L'; echo "exit $?"
  echo; echo "\$ envbuilder certs list"; eb certs list
} >>"$OUT/run.txt" 2>&1
stamp "runs done: $(grep -c '^exit 0' "$OUT/run.txt") commands exited 0"
bash benchmarks/gpu/docker26.sh stop >>"$LOG" 2>&1
stamp "done"
