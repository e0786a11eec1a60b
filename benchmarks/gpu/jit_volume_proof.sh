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
PROBE='
import os, time
t0 = time.monotonic()
import torch, torchvision
torch.backends.cudnn.benchmark = True
m = torchvision.models.resnet50(num_classes=5).cuda().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(256, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
y = torch.randint(0, 5, (256,), device="cuda")
torch.cuda.synchronize()
def step():
    t = time.monotonic()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return time.monotonic() - t
first, second = step(), step()
path = os.environ.get("CUDA_CACHE_PATH") or "(default: ~/.nv/ComputeCache)"
print(f"PROBE first {first:.2f} second {second:.3f} total {time.monotonic() - t0:.2f} cache {path}")
'
{
  echo "# The per-image CUDA JIT cache volume, $(hostname), $(date -u +%FT%TZ)"
  echo; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo; echo "Each job a fresh container (\`envbuilder run --gpu-access devices\`): one cuDNN-autotuned ResNet-50 bf16 step at batch 256, then a second."
  echo; echo "| job | first step (autotune) s | second step s | process s | CUDA_CACHE_PATH | job wall s |"
  echo "|---|---|---|---|---|---|"
} >"$R"
job() {  # LABEL RUN-OPTIONS...
  local label=$1; shift
  local t=$(date +%s.%N) out
  out=$(eb run --gpu-access devices "$@" "$TAG" python3 -c "$PROBE" 2>>"$L" | grep '^PROBE' | tail -1)
  local wall=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  note "$label: ${out:-no PROBE line (see the log)} (wall $wall s)"
  # shellcheck disable=SC2086
  set -- $out
  echo "| $label | ${3:--} | ${5:--} | ${7:--} | ${9:--} | $wall |" >>"$R"
}
job "1: the image's volume, new"
job "2: the image's volume again"
job "3: --no-jit-cache (a fresh container, as before)" --no-jit-cache
{
  echo; echo "Volumes after the jobs:"; echo '```'
  docker volume ls --filter name=envbuilder-cuda-jit- 2>&1
  v=$(docker volume ls -q --filter name=envbuilder-cuda-jit- | head -1)
  [ -n "$v" ] && du -sh "$(docker volume inspect --format '{{.Mountpoint}}' "$v")" 2>&1
  echo '```'
} >>"$R"
cat "$R"
