#!/usr/bin/env bash
# Containers on the H200 test machine in one device call (~8 min): Docker 26 (docker26.sh), the
# machine's own environment as a base image, `build --base-venv` of the PyTorch proof image
# offline, `certify --gpu-access devices` of it with the host-side verdict (issue 18: the harness
# mounted read-only from this checkout, the host's NVML observation during the run), and the JAX plan certified in a container of that environment
# (issue 16: `certify --framework jax --gpu-access devices`, with ptxas added for XLA).
#
#   bash benchmarks/gpu/container_proof.sh      (carry .device: docker26.tar.xz, whl/)
#
# Writes to $OUT: proof.log (steps and times), build.txt, certify-torch.txt, cert-torch.json,
# certify-jax.txt, cert-jax.json.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
eb_setup || exit 1
proof_log
TAG=envbuilder/container-proof:latest
BASE=envbuilder-gpu/base:host
date -u +"%Y-%m-%dT%H:%M:%SZ on $(hostname)" >"$LOG"
bash benchmarks/gpu/docker26.sh start .device >>"$LOG" 2>&1 || { tail -45 "$LOG"; exit 1; }
export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
stamp "docker up: $(docker version --format 'server {{.Server.Version}}')"
import_host_base "$BASE"
stamp "base imported"
if [ "${JAX_ONLY:-0}" != 1 ]; then
  ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 eb build benchmarks/gpu/h200-proof.yaml \
      --base-image "$BASE" --base-venv /opt/torch/.venv --network host --tag "$TAG" >"$OUT/build.txt" 2>&1
  rc=$?; stamp "build exit $rc"
  [ $rc = 0 ] || { tail -20 "$OUT/build.txt"; exit $rc; }
  eb certify "$TAG" --gpu-access devices --out "$OUT/cert-torch.json" >"$OUT/certify-torch.txt" 2>&1
  rc=$?; stamp "certify torch --gpu-access devices exit $rc: $(grep -m1 -iE 'certified|failed|refused' "$OUT/certify-torch.txt" | cut -c1-200)"
fi
# XLA compiles PTX with ptxas at run time and links libdevice; import_host_base leaves
# usr/local/cuda* out, so add both (the JAX smoke fails without them: "Failed to get configs ...
# No candidates could be compiled", seen here 2026-12-01).
CUDA_BIN=$(dirname "$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1)")
CTX=$(mktemp -d)
mkdir -p "$CTX/bin" "$CTX/nvvm"
cp "$CUDA_BIN"/ptxas "$CUDA_BIN"/nvlink "$CUDA_BIN"/fatbinary "$CTX/bin/" 2>/dev/null
cp -r "$CUDA_BIN/../nvvm/libdevice" "$CTX/nvvm/" 2>>"$LOG"
stamp "libdevice: $(ls "$CTX/nvvm/libdevice" 2>&1 | head -3 | tr '\n' ' ')"
# The imported environment has no /tmp either: XLA writes its PTX there for ptxas ("We are not able
# to find a directory for temporary files", the same failure).
printf 'FROM %s\nCOPY . /usr/local/cuda/\nRUN mkdir -p -m 1777 /tmp /var/tmp\n' "$BASE" > "$CTX/Dockerfile"
ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 docker build -q -t envbuilder-gpu/jax:host "$CTX" >/dev/null
stamp "jax base with ptxas: exit $?"
eb certify envbuilder-gpu/jax:host --framework jax --gpu-access devices \
    --out "$OUT/cert-jax.json" >"$OUT/certify-jax.txt" 2>&1
rc=$?; stamp "certify jax --gpu-access devices exit $rc: $(grep -m1 -iE 'certified|failed|refused' "$OUT/certify-jax.txt" | cut -c1-200)"
bash benchmarks/gpu/docker26.sh stop >>"$LOG" 2>&1
stamp "done"
