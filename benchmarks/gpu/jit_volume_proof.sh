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
# JOBS=certify: instead of the run jobs, three default-level certifications of the image
# (`envbuilder certify --gpu-access devices`): certify's volume new, again, and --no-jit-cache;
# each one's certify wall, harness wall, cudnn_warmup and the JIT cache the harness found
# (about 6 minutes on an H100; $OUT/cert-N.json are the certificates' harness results).
# JOBS=compile: two default-level certifications first, certify's volume new and again (the
# compile lane's ResNet-50 child's compile_s and the Inductor cache the harness found), then the
# run jobs run benchmarks/gpu/autotune_probe.py --compile (a torch.compile'd ResNet-50 step: its first step is
# the compile, or the load from the image's Inductor cache in the run volume), the volume new and
# again; about 6 minutes on an H100.
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
CERT_HEADER="| certification | certify wall s | $("$PYTHON" benchmarks/gpu/cert_row.py --header)"
CERT_RULE="|---|---|---|---|---|---|---|---|---|"
cert() {  # N LABEL CERTIFY-OPTIONS...: one default-level certification, one table row
  local n=$1 label=$2; shift 2
  local t wall row
  t=$(date +%s.%N)
  eb certify "$TAG" --gpu-access devices --out "$OUT/cert-$n.json" "$@" >>"$L" 2>&1
  wall=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  row=$("$PYTHON" benchmarks/gpu/cert_row.py "$OUT/cert-$n.json")
  note "$label: certify $wall s $row"
  echo "| $label | $wall $row" >>"$R"
}
if [ "${JOBS:-run}" = certify ]; then
  {
    echo "# certify with the per-image JIT cache volume, $(hostname), $(date -u +%FT%TZ)"
    echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo; echo "Each a default-level \`envbuilder certify --gpu-access devices\` of $TAG."
    echo; echo "$CERT_HEADER"; echo "$CERT_RULE"
  } >"$R"
  cert 1 "1: certify's volume, new"
  cert 2 "2: certify's volume again"
  cert 3 "3: --no-jit-cache (a fresh container, as before)" --no-jit-cache
  { echo; echo "Volumes after:"; echo '```'; docker volume ls --filter name=envbuilder-cuda-jit- 2>&1; echo '```'; } >>"$R"
  cat "$R"
  exit 0
fi
PROBE=(autotune_probe.py)
[ "${JOBS:-run}" = compile ] && PROBE=(autotune_probe.py --compile)
{
  echo "# The per-image JIT cache volume, $(hostname), $(date -u +%FT%TZ)"
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} >"$R"
if [ "${JOBS:-run}" = compile ]; then
  # torch.compile in certify first (the most important part, and a default-level certificate lets
  # `run` admit the image): the compile lane's children and the harness's own compile use the
  # image's Inductor cache in certify's volume
  { echo; echo "Default-level \`envbuilder certify --gpu-access devices\` of $TAG:"
    echo; echo "$CERT_HEADER"; echo "$CERT_RULE"; } >>"$R"
  cert 1 "1: certify's volume, new"
  cert 2 "2: certify's volume again"
else
  eb certify "$TAG" --gpu-access devices --quick >>"$L" 2>&1 || { note "certify failed"; exit 1; }
  note "certified (--quick)"
fi
{
  echo; echo "Each job a fresh container (\`envbuilder run --gpu-access devices\`) running benchmarks/gpu/${PROBE[*]}."
  echo; "$PYTHON" benchmarks/gpu/autotune_probe.py --header
} >>"$R"
job() {  # LABEL RUN-OPTIONS...
  local label=$1; shift
  local t row wall
  t=$(date +%s.%N)
  row=$(eb run --gpu-access devices -v "$ROOT/benchmarks/gpu:/probe:ro" "$@" "$TAG" \
    python3 "/probe/${PROBE[0]}" "${PROBE[@]:1}" "$label" 2>>"$L" | grep '^| ' | tail -1)
  wall=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  note "$label: ${row:-no row (see the log)} (job wall $wall s)"
  echo "${row:-| $label | no result: see jit-volume.log | | | | | |}" >>"$R"
}
job "1: the image's volume, new"
job "2: the image's volume again"
[ "${JOBS:-run}" = compile ] || job "3: --no-jit-cache (a fresh container, as before)" --no-jit-cache
{
  echo; echo "Volumes after the jobs:"; echo '```'
  docker volume ls --filter name=envbuilder-cuda-jit- 2>&1
  for v in $(docker volume ls -q --filter name=envbuilder-cuda-jit-); do
    echo "$v: $(du -sh "$(docker volume inspect --format '{{.Mountpoint}}' "$v")" 2>&1 | cut -f1)"
  done
  echo '```'
} >>"$R"
cat "$R"
