#!/usr/bin/env bash
# GPU access through CDI under Podman on the H200 test machine (issue 25, item 2), in one device
# call: Debian 12's podman 4.3.1, conmon and runc with their libraries (carried: no network there),
# `envbuilder gpu cdi-spec --out /etc/cdi/nvidia.yaml`; first a tiny image (/bin/sh, ls, cat and the
# C library from the machine, a few MB, nothing of NVIDIA's) run with the CDI device by plain podman
# and by `envbuilder run --runtime podman --gpu-access cdi --force` (nvidia-smi -L: what the spec
# mounted); then (unless TINY_ONLY=1) the machine's own environment imported as a
# base image (`podman import`), `envbuilder build --runtime podman` on it, plain `podman run
# --device nvidia.com/gpu=all` with nvidia-smi, `envbuilder certify --runtime podman --gpu-access
# cdi --quick` (CERTIFY_ARGS), and `envbuilder run --runtime podman --gpu-access cdi` (nvidia-smi, a bf16 matmul).
#
#   bash benchmarks/gpu/podman_proof.sh pack    # on the CPU machine (after scripts/podman.sh)
#   bash benchmarks/gpu/podman_proof.sh         # on the GPU machine, with .device carried
#
# Needs, beside the checkout (carried, ignored by git): .device/podman.tar.xz (bin/podman, conmon,
# runc, lib/ their libraries, seccomp.json: `pack` makes it from this machine's Debian packages,
# about 14 MB) and .device/whl/docker-*.whl. FREE_DOCKER=1: Docker 26's store from an earlier call
# (/var/lib/dkr26, ~20 GB after check_faults.sh) is removed before the 10 GB import. Writes to $OUT:
# podman-info.txt, cdi-spec.json, run-tiny.txt, build.txt, certify.txt, cert.json, run.txt,
# proof.log (the steps with their times and the free disk).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
if [ "${1:-}" = pack ]; then
  work="$(mktemp -d)" && mkdir -p "$work/bin" "$work/lib" .device || exit 1
  cp /usr/bin/podman /usr/bin/conmon "$(command -v runc)" "$work/bin/" || exit 1
  cp /usr/share/containers/seccomp.json "$work/" || exit 1
  for b in "$work"/bin/*; do ldd "$b" | awk '/=> \// {print $3}'; done | sort -u \
    | grep -v -E '/(libc|libm)\.so|ld-linux' | xargs -r cp -L -t "$work/lib/"
  tar -C "$work" -cJf .device/podman.tar.xz . && rm -rf "$work"
  ls -la .device/podman.tar.xz
  exit 0
fi
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
eb_setup || exit 1
proof_log
TAG=envbuilder/podman-proof:latest
BASE=envbuilder-gpu/base:host
PM=/opt/podman
CERTIFY_ARGS="${CERTIFY_ARGS:---quick}"   # e.g. "--timeout 420": a default-level certification
SMOKE="import torch; print('cuda available:', torch.cuda.is_available()); print('device:', torch.cuda.get_device_name(0)); x = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16); print('bf16 matmul ok:', bool(torch.isfinite(x @ x).all()))"

date -u +"%Y-%m-%dT%H:%M:%SZ on $(hostname)" >"$LOG"
nvidia-smi -L >>"$LOG" 2>&1
mkdir -p "$PM" && tar -xJf .device/podman.tar.xz -C "$PM" || exit 1
export PATH="$PM/bin:$PATH" LD_LIBRARY_PATH="$PM/lib"
# Podman starts conmon with an environment of its own (no LD_LIBRARY_PATH): conmon gets a wrapper
# that finds the carried libraries (the first H100 run: "conmon: libglib-2.0.so.0: cannot open").
mv -f "$PM/bin/conmon" "$PM/bin/conmon.real"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bin/conmon.real "$@"\n' "$PM" "$PM" >"$PM/bin/conmon"
chmod +x "$PM/bin/conmon"
mkdir -p /etc/containers /var/lib/containers/storage /run/containers/storage
[ -f /etc/containers/policy.json ] || echo '{"default": [{"type": "insecureAcceptAnything"}]}' >/etc/containers/policy.json
write_conf() { # runtime path
  cat >"$PM/containers.conf" <<EOF
[containers]
seccomp_profile = "$PM/seccomp.json"
[engine]
conmon_path = ["$PM/bin/conmon"]
runtime = "proof-runtime"
cgroup_manager = "cgroupfs"
events_logger = "file"
[engine.runtimes]
proof-runtime = ["$1"]
EOF
}
write_conf "$PM/bin/runc"
export CONTAINERS_CONF="$PM/containers.conf" CONTAINERS_STORAGE_CONF="$PM/storage.conf"
for driver in overlay vfs; do
  printf '[storage]\ndriver = "%s"\ngraphroot = "/var/lib/containers/storage"\nrunroot = "/run/containers/storage"\n' "$driver" >"$CONTAINERS_STORAGE_CONF"
  podman info >"$OUT/podman-info.txt" 2>&1 && break
  rm -rf /var/lib/containers/storage/* 2>/dev/null
done
stamp "podman $(podman version --format '{{.Client.Version}}' 2>&1 | tail -1), storage $(podman info --format '{{.Store.GraphDriverName}}' 2>&1 | tail -1), cgroups $(podman info --format '{{.Host.CgroupsVersion}}' 2>&1 | tail -1)"

eb gpu cdi-spec --out /etc/cdi/nvidia.yaml --json >"$OUT/cdi-spec.json" 2>>"$LOG"
rc=$?; stamp "gpu cdi-spec exit $rc"
[ $rc = 0 ] || exit $rc

# The CDI proof first, on an image of a few MB: /bin/sh, ls, cat and the C library, nothing of
# NVIDIA's (ldd's lines naming nvidia or cuda are left out): whatever nvidia-smi finds in the
# container, the CDI spec put there. Then the full proof on the machine's environment (10 GB).
TINY=envbuilder-gpu/tiny:host
tiny="$(mktemp -d)"
mkdir -p "$tiny/bin" "$tiny/usr/bin" "$tiny/etc" "$tiny/tmp"
for b in sh ls cat; do cp -L "$(command -v "$b")" "$tiny/bin/"; done
for b in "$tiny"/bin/* "$(command -v nvidia-smi)"; do ldd "$b"; done \
  | awk '/=> \// {print $3} /^[[:space:]]*\/[^ ]*ld-linux/ {print $1}' | grep -v -E 'nvidia|cuda' | sort -u \
  | while read -r lib; do mkdir -p "$tiny$(dirname "$lib")" && cp -L "$lib" "$tiny$lib"; done
tar -C "$tiny" -c . | podman import - "$TINY" >>"$LOG" 2>&1
stamp "tiny image $TINY ($(du -sh "$tiny" | cut -f1)): import exit $?"
rm -rf "$tiny"
if ! podman run --rm --network none "$TINY" sh -c : >>"$LOG" 2>&1; then
  # As on the CPU machines (scripts/podman.sh): a sandbox that refuses Podman's rlimits.
  cat >"$PM/runc-norlimits" <<EOF
#!/usr/bin/python3
import json, os, sys
args = sys.argv[1:]
if "create" in args or "run" in args:
    b = os.getcwd()
    for i, a in enumerate(args):
        if a in ("--bundle", "-b") and i + 1 < len(args):
            b = args[i + 1]
    p = os.path.join(b, "config.json")
    c = json.load(open(p))
    if c.get("process", {}).pop("rlimits", None) is not None:
        json.dump(c, open(p, "w"))
os.execv("$PM/bin/runc", ["runc", *args])
EOF
  chmod +x "$PM/runc-norlimits"; write_conf "$PM/runc-norlimits"
  podman run --rm --network none "$TINY" sh -c : >>"$LOG" 2>&1
  stamp "podman run needed the rlimits left out here: now exit $?"
fi
podman_runs() { # IMAGE FILE: plain podman with the CDI device, then envbuilder's run (--force: uncertified)
  {
    echo "\$ podman run --rm --network none --device nvidia.com/gpu=all $1 nvidia-smi -L   # plain podman, the spec alone"
    timeout 120 podman run --rm --network none --device nvidia.com/gpu=all "$1" nvidia-smi -L; echo "exit $?"
    echo "\$ podman run --rm --network none $1 sh -c 'echo /dev/*'   # no CDI device: no GPU"
    timeout 120 podman run --rm --network none "$1" sh -c 'echo /dev/*'; echo "exit $?"
    echo; echo "\$ envbuilder run --runtime podman --gpu-access cdi --force --network none $1 -- nvidia-smi -L"
    timeout 120 "$PYTHON" -m envbuilder run --runtime podman --gpu-access cdi --force --network none "$1" -- nvidia-smi -L; echo "exit $?"
  } >"$2" 2>&1
}
podman_runs "$TINY" "$OUT/run-tiny.txt"
stamp "tiny image under CDI: $(grep -c '^exit 0' "$OUT/run-tiny.txt") of 3 commands exited 0; $(grep -c '^GPU [0-9]' "$OUT/run-tiny.txt") GPU lines"
[ "${TINY_ONLY:-0}" = 1 ] && { stamp "done (TINY_ONLY)"; exit 0; }

# The machine's environment is 10 GB in Podman's store on top of what Docker 26 may have kept from
# an earlier call (check_faults.sh): with FREE_DOCKER=1 that is removed first.
if [ "${FREE_DOCKER:-0}" = 1 ] && [ -d /var/lib/dkr26 ]; then
  bash benchmarks/gpu/docker26.sh stop >>"$LOG" 2>&1; rm -rf /var/lib/dkr26
fi
stamp "disk: $(df -h --output=avail,size / | tail -1)"

podman image exists "$BASE" 2>/dev/null || (cd / && tar -c --exclude='usr/local/cuda*' --exclude=usr/share/doc lib lib64 bin sbin usr/bin \
    usr/lib usr/lib64 usr/sbin usr/libexec usr/include etc opt/torch 2>/dev/null) \
  | podman import --change 'ENV PATH=/opt/torch/.venv/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$BASE" >>"$LOG" 2>&1
stamp "base image imported: $(podman image inspect --format '{{.Id}} {{.Size}}' "$BASE" 2>&1 | tail -1); disk: $(df -h --output=avail / | tail -1)"

eb build benchmarks/gpu/h200-proof.yaml --runtime podman --base-image "$BASE" --base-venv /opt/torch/.venv \
    --network host --tag "$TAG" >"$OUT/build.txt" 2>&1
rc=$?; stamp "build --runtime podman exit $rc; disk: $(df -h --output=avail / | tail -1)"; tail -8 "$OUT/build.txt" >>"$LOG"
[ $rc = 0 ] || exit $rc

{
  echo "\$ podman run --rm --network none --device nvidia.com/gpu=all $TAG nvidia-smi   # plain podman, the spec alone"
  podman run --rm --network none --device nvidia.com/gpu=all "$TAG" nvidia-smi; echo "exit $?"
} >"$OUT/run.txt" 2>&1
stamp "plain podman run with the CDI device: $(tail -1 "$OUT/run.txt")"

# shellcheck disable=SC2086 # CERTIFY_ARGS is a word list
eb certify "$TAG" --runtime podman --gpu-access cdi $CERTIFY_ARGS --out "$OUT/cert.json" >"$OUT/certify.txt" 2>&1
rc=$?; stamp "certify --runtime podman --gpu-access cdi $CERTIFY_ARGS exit $rc: $(grep -m1 -E 'certified|failed' "$OUT/certify.txt" | cut -c1-160)"

{
  echo; echo "\$ envbuilder run --runtime podman $TAG --gpu-access cdi --network none -- nvidia-smi -L"
  eb run --runtime podman "$TAG" --gpu-access cdi --network none -- nvidia-smi -L; echo "exit $?"
  echo; echo "\$ envbuilder run --runtime podman $TAG --gpu-access cdi --network none -- python3 -c <torch smoke>"
  eb run --runtime podman "$TAG" --gpu-access cdi --network none -- python3 -c "$SMOKE"; echo "exit $?"
  echo; echo "\$ envbuilder certs list"; eb certs list
} >>"$OUT/run.txt" 2>&1
stamp "runs done: $(grep -c '^exit 0' "$OUT/run.txt") commands exited 0"
stamp "done"
