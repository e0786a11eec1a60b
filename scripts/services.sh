#!/usr/bin/env bash
# Install and start everything the docker-marked tests and benchmarks need, idempotently:
# Debian's docker.io (dockerd + the BuildKit-capable 20.10 client), a local Debian base image
# made with debootstrap + `docker import`, a wheelhouse with the torch CPU wheel, and two local
# registries (Debian's docker-registry): open on 127.0.0.1:5000, htpasswd auth on 127.0.0.1:5001.
# Root, no stdin (CI). See shared/docs/environment.md for why each piece is done this way.
set -euo pipefail

BASE_IMAGE="${ENVBUILDER_TEST_BASE:-envbuilder-test/debian:bookworm}"
STATE_DIR="${ENVBUILDER_TEST_STATE:-/var/cache/envbuilder-test}"
WHEELHOUSE="$STATE_DIR/wheelhouse"
TORCH_REQ="${ENVBUILDER_TEST_TORCH:-torch==2.13.0}"
REG_PORT=5000
REG_AUTH_PORT=5001
REG_USER=envbuilder
REG_PASS=envbuilder-test
DEB_MIRROR="${DEBOOTSTRAP_MIRROR:-http://deb.debian.org/debian}"
# Docker 26 (CDI) beside the system daemon: Debian trixie's docker.io + docker-cli, unpacked, never
# installed (tests/integration/test_cdi_docker.py reads these paths from conftest.py).
D26_DIR="$STATE_DIR/docker26"
D26_SOCK="$D26_DIR/docker.sock"
D26_SUITE="${ENVBUILDER_TEST_D26_SUITE:-trixie}"
# The same Docker 26 once more, with the containerd image store: a builder whose exporter rewrites
# file times, for reproducible builds (tests/integration/test_build_image.py, docs/reproducible.md).
D26CS_DIR="$STATE_DIR/docker26-containerd"
D26CS_SOCK="$D26CS_DIR/docker.sock"

say() { printf 'services: %s\n' "$*" >&2; }
die() { printf 'services: error: %s\n' "$*" >&2; exit 1; }

docker_up() { timeout 10 docker info >/dev/null 2>&1; }
registry_up() { curl -fsS -o /dev/null -m 3 "http://127.0.0.1:$1/v2/" 2>/dev/null \
  || [ "$(curl -s -o /dev/null -w '%{http_code}' -m 3 "http://127.0.0.1:$1/v2/")" = 401 ]; }
image_up() { docker_up && docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; }
wheelhouse_up() { compgen -G "$WHEELHOUSE/torch-*.whl" >/dev/null && compgen -G "$WHEELHOUSE/sympy-*.whl" >/dev/null; }

d26() { DOCKER_HOST="unix://$D26_SOCK" "$D26_DIR/root/usr/bin/docker" "$@"; }
d26_up() { [ -S "$D26_SOCK" ] && timeout 10 "$D26_DIR/root/usr/bin/docker" -H "unix://$D26_SOCK" info >/dev/null 2>&1; }
d26_image_up() { d26_up && d26 image inspect "$BASE_IMAGE" >/dev/null 2>&1; }
d26cs() { DOCKER_HOST="unix://$D26CS_SOCK" "$D26_DIR/root/usr/bin/docker" "$@"; }
d26cs_up() { [ -S "$D26CS_SOCK" ] && timeout 10 "$D26_DIR/root/usr/bin/docker" -H "unix://$D26CS_SOCK" info >/dev/null 2>&1; }
d26cs_image_up() { d26cs_up && d26cs image inspect "$BASE_IMAGE" >/dev/null 2>&1; }

all_up() { docker_up && image_up && wheelhouse_up && registry_up "$REG_PORT" && registry_up "$REG_AUTH_PORT" && d26_image_up && d26cs_image_up; }

summary() {
  say "summary:"
  printf '  dockerd         %s\n' "$(docker info --format '{{.ServerVersion}} ({{.Driver}})' 2>/dev/null || echo DOWN)" >&2
  printf '  buildkit client %s\n' "$( (/usr/bin/docker version --format '{{.Client.Version}}' 2>/dev/null | sed 's|^|/usr/bin/docker |') || echo MISSING)" >&2
  printf '  base image      %s %s\n' "$BASE_IMAGE" "$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE" 2>/dev/null || echo MISSING)" >&2
  printf '  wheelhouse      %s (%s)\n' "$WHEELHOUSE" "$(ls "$WHEELHOUSE" 2>/dev/null | tr '\n' ' ')" >&2
  printf '  dockerd 26 (CDI) %s\n' "$(d26 info --format '{{.ServerVersion}} on '"$D26_SOCK"', CDI specs in {{.CDISpecDirs}}' 2>/dev/null || echo DOWN)" >&2
  printf '  dockerd 26 (containerd store) %s\n' "$(d26cs info --format '{{.ServerVersion}} on '"$D26CS_SOCK"' {{json .DriverStatus}}' 2>/dev/null || echo DOWN)" >&2
  printf '  registry        127.0.0.1:%s %s\n' "$REG_PORT" "$(registry_up $REG_PORT && echo up || echo DOWN)" >&2
  printf '  registry (auth) 127.0.0.1:%s %s (user %s, htpasswd in %s)\n' "$REG_AUTH_PORT" \
    "$(registry_up $REG_AUTH_PORT && echo up || echo DOWN)" "$REG_USER" "$STATE_DIR/registry-auth" >&2
}

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  if all_up; then
    say "not root or not Debian, but everything is already up"
    all_up || die "something is still down after setup"
summary
    exit 0
  fi
  die "needs root on Debian to install docker.io, debootstrap and docker-registry, start dockerd,
  build $BASE_IMAGE, start registries on 127.0.0.1:$REG_PORT/$REG_AUTH_PORT and dockerd 26 on
  $D26_SOCK; run it as root
  (CI does), or start those yourself"
fi

# 1. Packages.
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
[ -x /usr/bin/docker ] || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v docker-registry >/dev/null || missing+=(docker-registry)
command -v htpasswd >/dev/null || missing+=(apache2-utils)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. dockerd (the same script `make run` starts it with).
bash "$(dirname "$0")/dockerd.sh" || die "no Docker daemon (see above)"
# Earlier runs' leftovers go when the disk is short (a full disk fails hundreds of tests at once).
bash "$(dirname "$0")/reclaim-disk.sh"

# 3. Base image: debootstrap + docker import (no registry is reachable to pull one).
if ! image_up; then
  say "building $BASE_IMAGE with debootstrap (about a minute)"
  rootfs="$(mktemp -d /tmp/envbuilder-rootfs.XXXXXX)"
  trap 'rm -rf "$rootfs"' EXIT
  if ! debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      bookworm "$rootfs" "$DEB_MIRROR" >/tmp/debootstrap.log 2>&1; then
    tail -n 30 /tmp/debootstrap.log >&2 || true
    die "debootstrap failed (log tail above)"
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$rootfs"
  trap - EXIT
fi

# 4. Wheelhouse (pip takes the CPU wheel from the local find-links, offline).
if ! wheelhouse_up; then
  say "filling wheelhouse $WHEELHOUSE with $TORCH_REQ"
  mkdir -p "$WHEELHOUSE"
  # With its dependencies (filelock, sympy, ...): an offline build installs with --no-index.
  # The torch CPU wheel comes from this machine's local find-links; the small ones from PyPI.
  python3 -m pip download -q "$TORCH_REQ" pip setuptools wheel --only-binary=:all: \
    -d "$WHEELHOUSE" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  wheelhouse_up || die "pip download $TORCH_REQ into $WHEELHOUSE failed (see above)"
fi

# 5. Registries.
start_registry() { # port dir [auth]
  local port=$1 dir=$2 auth=${3:-}
  # A registry that is not up starts empty: every test pushes what it reads, under its run's ID,
  # and the pushes of earlier runs would otherwise pile up (7.7 GB here on 2026-12-05).
  rm -rf "$dir/data"
  mkdir -p "$dir/data"
  {
    printf 'version: 0.1\nlog: {level: warn}\n'
    printf 'storage:\n  filesystem: {rootdirectory: %s}\n  delete: {enabled: true}\n' "$dir/data"
    printf 'http: {addr: "127.0.0.1:%s"}\n' "$port"
    if [ -n "$auth" ]; then
      printf 'auth:\n  htpasswd: {realm: envbuilder-test, path: %s}\n' "$dir/htpasswd"
    fi
  } >"$dir/config.yml"
  say "starting docker-registry on 127.0.0.1:$port (log: $dir/registry.log)"
  setsid docker-registry serve "$dir/config.yml" >"$dir/registry.log" 2>&1 < /dev/null &
  for _ in $(seq 1 30); do registry_up "$port" && return 0; sleep 0.5; done
  tail -n 20 "$dir/registry.log" >&2 || true
  die "registry on 127.0.0.1:$port did not start (log tail above)"
}
registry_up "$REG_PORT" || start_registry "$REG_PORT" "$STATE_DIR/registry"
if ! registry_up "$REG_AUTH_PORT"; then
  mkdir -p "$STATE_DIR/registry-auth"
  htpasswd -Bbn "$REG_USER" "$REG_PASS" >"$STATE_DIR/registry-auth/htpasswd"
  start_registry "$REG_AUTH_PORT" "$STATE_DIR/registry-auth" auth
fi

# 6. Docker 26 with CDI, beside the system daemon (shared/docs/environment.md, "buildx and Apptainer
# from newer Debian suites"): trixie's dockerd (glibc 2.34) and CLI, with bookworm's runc and
# containerd; own socket, data root, exec root and CDI spec folder. It runs in a network namespace
# of its own: a dockerd with --bridge=none deletes the host's docker0 (moby's
# removeDefaultBridgeInterface), which would cut the system daemon's containers off.
if [ ! -x "$D26_DIR/root/usr/sbin/dockerd" ] || [ ! -x "$D26_DIR/root/usr/bin/docker" ]; then
  say "unpacking $D26_SUITE's docker.io and docker-cli into $D26_DIR/root (about 30 MB)"
  apt_dir="$(mktemp -d /tmp/envbuilder-d26-apt.XXXXXX)"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts" "$apt_dir/debs" "$D26_DIR"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEB_MIRROR $D26_SUITE main" \
    >"$apt_dir/parts/d26.list"
  apt_opts=(-o "Dir::Etc::SourceParts=$apt_dir/parts" -o Dir::Etc::SourceList=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o Acquire::Check-Valid-Until=false -qq)
  apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 \
    || { tail -n 20 "$apt_dir/update.log" >&2; die "apt-get update for $D26_SUITE failed (log tail above)"; }
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download docker.io docker-cli 2>&1 | grep -v unsandboxed) || true
  compgen -G "$apt_dir/debs/docker.io_*.deb" >/dev/null && compgen -G "$apt_dir/debs/docker-cli_*.deb" >/dev/null \
    || die "could not download $D26_SUITE's docker.io and docker-cli"
  rm -rf "$D26_DIR/root.new" && mkdir -p "$D26_DIR/root.new"
  for deb in "$apt_dir"/debs/*.deb; do dpkg -x "$deb" "$D26_DIR/root.new"; done
  rm -rf "$D26_DIR/root" && mv "$D26_DIR/root.new" "$D26_DIR/root"
  rm -rf "$apt_dir"
fi
# start_d26 DIR SOCK DAEMON_JSON UP_FN: one Docker 26 daemon in a network namespace of its own, its
# socket, data root, exec root and cgroup under DIR, the local base loaded into it.
start_d26() {
  local dir="$1" sock="$2" config="$3" up="$4"
  if ! "$up"; then
    mkdir -p "$dir/data" "$dir/exec"
    printf '%s\n' "$config" >"$dir/daemon.json"
    say "starting dockerd 26 on $sock (log: $dir/dockerd.log)"
    rm -f "$sock" "$dir/docker.pid"
    setsid unshare --net "$D26_DIR/root/usr/sbin/dockerd" --config-file "$dir/daemon.json" \
      -H "unix://$sock" --data-root "$dir/data" --exec-root "$dir/exec" \
      --pidfile "$dir/docker.pid" --iptables=false --bridge=none --cgroup-parent="/envbuilder-$(basename "$dir")" \
      >"$dir/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 1 60); do "$up" && break; sleep 1; done
    if ! "$up"; then
      tail -n 30 "$dir/dockerd.log" >&2 || true
      die "dockerd 26 on $sock did not become ready within 60 s (log tail above)"
    fi
  fi
  if ! DOCKER_HOST="unix://$sock" "$D26_DIR/root/usr/bin/docker" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    say "loading $BASE_IMAGE into dockerd 26 on $sock"
    docker save "$BASE_IMAGE" | DOCKER_HOST="unix://$sock" "$D26_DIR/root/usr/bin/docker" load -q >/dev/null \
      || die "could not load $BASE_IMAGE into dockerd 26 on $sock"
  fi
}
mkdir -p "$D26_DIR/cdi"
start_d26 "$D26_DIR" "$D26_SOCK" "{\"features\": {\"cdi\": true}, \"cdi-spec-dirs\": [\"$D26_DIR/cdi\"]}" d26_up
start_d26 "$D26CS_DIR" "$D26CS_SOCK" '{"features": {"containerd-snapshotter": true}}' d26cs_up

# 7. Containers really start on the default bridge (a second dockerd started with --bridge=none,
# e.g. by shared/tools/gpu-docker.sh, deletes docker0 under the running one).
if ! timeout 60 docker run --rm "$BASE_IMAGE" true >/dev/null 2>&1; then
  if [ -n "$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' 2>/dev/null)" ] \
      && ! ip link show docker0 >/dev/null 2>&1; then
    subnet="$(docker network inspect bridge -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}')"
    say "docker0 is gone; recreating it for $subnet"
    ip link add docker0 type bridge
    ip addr add "${subnet%.*/*}.1/${subnet#*/}" dev docker0
    ip link set docker0 up
  fi
  timeout 60 docker run --rm "$BASE_IMAGE" true >/dev/null \
    || die "dockerd is up but cannot start a container (see /tmp/dockerd.log; restart dockerd)"
fi
all_up || die "something is still down after setup"
summary
