#!/usr/bin/env bash
# Docker 26 with CDI on a GPU machine that has a driver but no Docker and no network (the H200 test
# machine): the equivalent of shared/tools/gpu-docker.sh (Docker 20.10, no CDI), kept in the
# checkout because only the checkout reaches that machine.
#
#   docker26.sh pack DIR    on a Debian machine with network (the CPU machine), as root: writes
#                           DIR/docker26.tar.xz (~55 MB): Debian trixie's dockerd and docker CLI
#                           26.1, containerd 1.7 and its runc shim, runc 1.1 (all need glibc <= 2.38;
#                           the H200 machine has 2.39), Debian bookworm's docker CLI 20.10 as
#                           usr/bin/docker-20.10 (it builds with DOCKER_BUILDKIT=1; the 26 CLI needs
#                           the buildx plugin for that), and this machine's copies of the libraries
#                           they load, used only where the GPU machine lacks one.
#                           DOCKER26_NO_CLI26=1: usr/bin/docker is the 20.10 CLI too (one hard link,
#                           48 MB): for the proofs that need no CDI, so the checkout and the pack
#                           stay under a device call's 64 MiB (the 26 CLI alone is 30 MB unpacked).
#   docker26.sh start DIR   on the GPU machine, as root: unpacks to /opt/dkr26, enables CDI in
#                           /opt/dkr26/daemon.json (specs in /etc/cdi and /var/run/cdi), starts
#                           dockerd (no iptables, no bridge: use --network host or none), waits.
#   docker26.sh stop        stops that dockerd.
# After `start`: export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH, and build with
# ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 (for that command only: `run --gpu-access
# cdi` needs the 26 CLI, which turns --device nvidia.com/gpu=all into a CDI device request).
set -euo pipefail
cmd=${1:-}; dir=${2:-}
DEST=/opt/dkr26
BINS=(usr/sbin/dockerd usr/bin/docker usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/sbin/runc)
SUITE=${DOCKER26_SUITE:-trixie}
MIRROR=${DOCKER26_MIRROR:-http://deb.debian.org/debian}

case "$cmd" in
pack)
  [ -n "$dir" ] || { echo "usage: $0 pack DIR" >&2; exit 2; }
  mkdir -p "$dir"; dir=$(realpath "$dir")
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  mkdir -p "$work/lists/partial" "$work/parts" "$work/debs" "$work/x/usr/bin" "$work/x/lib/fallback"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$work/parts/s.list"
  apt=(-o "Dir::Etc::SourceParts=$work/parts" -o Dir::Etc::SourceList=/dev/null
    -o "Dir::State::Lists=$work/lists" -o Acquire::Check-Valid-Until=false -qq)
  apt-get "${apt[@]}" update >"$work/update.log" 2>&1 || { tail "$work/update.log" >&2; exit 1; }
  (cd "$work/debs" && apt-get "${apt[@]}" download docker.io docker-cli containerd runc 2>&1 | grep -v unsandboxed) || true
  for f in "$work"/debs/*.deb; do dpkg -x "$f" "$work/x"; done
  for b in "${BINS[@]}"; do [ -x "$work/x/$b" ] || { echo "pack: $b missing from $SUITE's packages" >&2; exit 1; }; done
  # Bookworm's docker CLI (this machine's docker.io, else downloaded) for BuildKit builds.
  if [ -x /usr/bin/docker ] && /usr/bin/docker version --format '{{.Client.Version}}' 2>/dev/null | grep -q '^20\.10'; then
    cp /usr/bin/docker "$work/x/usr/bin/docker-20.10"
  else
    (cd "$work" && apt-get download docker.io >/dev/null 2>&1) && dpkg -x "$work"/docker.io_20.10*.deb "$work/old"
    cp "$work/old/usr/bin/docker" "$work/x/usr/bin/docker-20.10"
  fi
  for lib in $(for b in "${BINS[@]}"; do ldd "$work/x/$b"; done | awk '/=> \// {print $3}' | sort -u); do
    case "$(basename "$lib")" in libc.so.*|ld-linux*) continue ;; esac
    cp -L "$lib" "$work/x/lib/fallback/"
  done
  if [ -n "${DOCKER26_NO_CLI26:-}" ]; then
    ln -f "$work/x/usr/bin/docker-20.10" "$work/x/usr/bin/docker"  # tar keeps it once
  fi
  # In this order xz packs it smaller (48.1 against 51.6 MB with DOCKER26_NO_CLI26, 2026-12-07).
  (cd "$work/x" && tar -cf - usr/sbin/dockerd usr/sbin/runc usr/bin/containerd usr/bin/containerd-shim-runc-v2 \
    usr/bin/docker-20.10 usr/bin/docker lib/fallback | xz -T0 -9 >"$dir/docker26.tar.xz")
  ls -la "$dir/docker26.tar.xz" ;;
start)
  [ -n "$dir" ] || { echo "usage: $0 start DIR" >&2; exit 2; }
  mkdir -p "$DEST" && tar -xJf "$dir/docker26.tar.xz" -C "$DEST"
  export PATH=$DEST/usr/sbin:$DEST/usr/bin:$PATH
  libs=""
  if for b in "${BINS[@]}"; do ldd "$DEST/$b"; done | grep -q "not found"; then
    libs=$DEST/lib/fallback
    echo "docker26: this machine lacks a library Docker needs; using the packed copies in $libs" >&2
  fi
  printf '{"features": {"cdi": true}}\n' >"$DEST/daemon.json"
  if ! docker info >/dev/null 2>&1; then
    # No docker-proxy in the pack: without a bridge nothing is published, so no userland proxy.
    LD_LIBRARY_PATH=$libs setsid dockerd --config-file "$DEST/daemon.json" --iptables=false --bridge=none \
      --userland-proxy=false --data-root /var/lib/dkr26 --pidfile /var/run/dkr26.pid \
      >/tmp/dockerd26.log 2>&1 </dev/null &
    pid=$!
    for _ in $(seq 1 90); do docker info >/dev/null 2>&1 && break; kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  # `docker info --format` exits 0 with an empty server part when the daemon is down: check it.
  if [ -z "$(docker version --format '{{.Server.Version}}' 2>/dev/null)" ]; then
    echo "docker26: dockerd is not answering (exited, or not within 90 s); its log:" >&2
    tail -40 /tmp/dockerd26.log >&2; exit 1
  fi
  # CDISpecDirs is in the API from Docker 27 on: a 26 CLI's template stops at it, so without it there.
  info=$(docker info --format '{{.ServerVersion}} {{.Driver}} cgroup v{{.CgroupVersion}}, CDI specs in {{.CDISpecDirs}}' 2>/dev/null) ||
    info=$(docker info --format '{{.ServerVersion}} {{.Driver}} cgroup v{{.CgroupVersion}}')
  echo "$info" ;;
stop)
  [ -f /var/run/dkr26.pid ] && kill "$(cat /var/run/dkr26.pid)" && echo "docker26: stopped" ;;
*) echo "usage: $0 pack DIR | start DIR | stop" >&2; exit 2 ;;
esac
