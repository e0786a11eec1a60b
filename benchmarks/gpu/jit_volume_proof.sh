#!/usr/bin/env bash
# The per-image CUDA JIT cache volume (envbuilder/certify/jit_cache.py) on a GPU machine, end to
# end: the machine's environment imported as a base image, an image built from it by this
# checkout's `envbuilder build` (whose template gives the image its JIT cache folder), certified
# (--quick, devices mode, so `run` admits it), then three `envbuilder run --gpu-access devices`
# jobs, each one fresh container running one cuDNN-autotuned ResNet-50 bf16 step at batch 256:
#   1. the image's volume new (empty): the driver compiles cuDNN's PTX kernels first
#   2. the volume again: they are in it
#   3. --no-jit-cache: a fresh container as before this change (empty again)
# One device call, about 3-4 minutes (carry .device: docker26.tar.xz, whl/docker-*.whl):
#   bash benchmarks/gpu/jit_volume_proof.sh      -> $OUT/jit-volume.md, $OUT/jit-volume.log
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
R="$OUT/jit-volume.md"
L="$OUT/jit-volume.log"
TAG=envbuilder/jit-volume-proof:latest
BASE=envbuilder-gpu/base:host
t0=$(date +%s)
note() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$L"; }
site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$PYTHON" -m compileall -q -j 0 "$site" >/dev/null 2>&1  # as images carry it (issue27_proof.sh)
note "bytecode compiled over $site"
eb_setup >>"$L" 2>&1 || { note "eb_setup failed"; exit 1; }
bash benchmarks/gpu/docker26.sh start .device >>"$L" 2>&1 || { note "docker start failed"; exit 1; }
export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
import_host_base "$BASE" || { note "import failed"; exit 1; }
note "base imported"
ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 eb build benchmarks/gpu/h200-proof.yaml \
  --base-image "$BASE" --base-venv /opt/torch/.venv --network host --tag "$TAG" >>"$L" 2>&1 \
  || { note "build failed"; exit 1; }
note "built $TAG: $(docker image inspect --format '{{.Id}} {{index .Config.Labels "io.envbuilder.cuda-jit-cache"}}' "$TAG")"
eb certify "$TAG" --gpu-access devices --quick >>"$L" 2>&1 || { note "certify failed"; exit 1; }
note "certified (--quick)"
{
  echo "# The per-image CUDA JIT cache volume, $(hostname), $(date -u +%FT%TZ)"
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo; echo "Each job a fresh container (\`envbuilder run --gpu-access devices\`) running benchmarks/gpu/autotune_probe.py."
  echo; "$PYTHON" benchmarks/gpu/autotune_probe.py --header
} >"$R"
job() {  # LABEL RUN-OPTIONS...
  local label=$1; shift
  local t row wall
  t=$(date +%s.%N)
  row=$(eb run --gpu-access devices -v "$ROOT/benchmarks/gpu:/probe:ro" "$@" "$TAG" \
    python3 /probe/autotune_probe.py "$label" 2>>"$L" | grep '^| ' | tail -1)
  wall=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  note "$label: ${row:-no row (see the log)} (job wall $wall s)"
  echo "${row:-| $label | no result: see jit-volume.log | | | | | |}" >>"$R"
}
job "1: the image's volume, new"
job "2: the image's volume again"
job "3: --no-jit-cache (a fresh container, as before)" --no-jit-cache
{
  echo; echo "Volumes after the jobs:"; echo '```'
  docker volume ls --filter name=envbuilder-cuda-jit- 2>&1
  for v in $(docker volume ls -q --filter name=envbuilder-cuda-jit-); do
    echo "$v: $(du -sh "$(docker volume inspect --format '{{.Mountpoint}}' "$v")" 2>&1 | cut -f1)"
  done
  echo '```'
} >>"$R"
cat "$R"
