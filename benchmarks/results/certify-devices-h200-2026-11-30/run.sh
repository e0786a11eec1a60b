#!/usr/bin/env bash
# certify on the H200 with --gpu-access devices (no Container Toolkit there)
set -uo pipefail
REPO=$(pwd)
t0=$(date +%s)
bash .gpuproof/gpu-docker.sh start .gpuproof || exit 1
export PATH=/opt/dkr/usr/sbin:/opt/dkr/usr/bin:$PATH
PY=python3
for c in python3 /opt/torch/.venv/bin/python3; do
  if $c -c "import click, jinja2, yaml, packaging" 2>/dev/null; then PY=$c; break; fi
done
echo "host python: $PY $($PY --version)"
$PY -m pip install -q --no-index --find-links .gpuproof/wh docker --target /tmp/pydeps 2>&1 | tail -2
export PYTHONPATH=/tmp/pydeps:$REPO ENVBUILDER_DATA_DIR=/tmp/store
echo "gpu-args: $(bash .gpuproof/gpu-docker.sh gpu-args)"
if ! docker image inspect envbuilder-gpu/base:host >/dev/null 2>&1; then
  (cd / && tar -c --exclude='usr/local/cuda*' --exclude=usr/share/doc lib lib64 bin sbin usr/bin usr/lib usr/lib64 usr/sbin etc opt/torch 2>/dev/null) \
    | docker import --change 'ENV PATH=/opt/torch/.venv/bin:/usr/bin:/bin' - envbuilder-gpu/base:host
fi
echo "image ready after $(( $(date +%s) - t0 )) s"
$PY -m envbuilder doctor 2>&1 | tail -15
$PY -m envbuilder certify envbuilder-gpu/base:host --gpu-access auto --quick --out $OUT/cert-quick.json 2>$OUT/quick.stderr.txt
echo "quick rc=$?"; tail -5 $OUT/quick.stderr.txt
s=$(date +%s)
$PY -m envbuilder certify envbuilder-gpu/base:host --gpu-access devices --out $OUT/cert-devices.json 2>$OUT/full.stderr.txt
echo "full rc=$? wall=$(( $(date +%s) - s )) s"
grep -E "certify:|verdict" $OUT/full.stderr.txt | head
$PY -m envbuilder certs list
id=$($PY -m envbuilder certs list --json | $PY -c 'import json,sys; print(json.load(sys.stdin)[0]["id"][:12])')
$PY -m envbuilder certs verify $id --image envbuilder-gpu/base:host; echo "verify rc=$?"
echo "total $(( $(date +%s) - t0 )) s"
