#!/usr/bin/env bash
# A local linux/arm64 Debian base image for the arm64 build test (tests/integration/
# test_platform_arm64_docker.py), idempotently: Debian's qemu-user-static + binfmt-support, the
# qemu-aarch64 binfmt handler enabled (flag F, so it works inside containers), an arm64 bookworm
# minbase with python3 made by debootstrap under QEMU (cached in $STATE_DIR/arm64/root), and the
# image built FROM scratch with BuildKit's --platform linux/arm64 (`docker import --platform`
# records amd64 on Docker 20.10: shared/docs/environment.md, "arm64 under emulation").
# No registry is reachable here to pull one. Root, no stdin (CI).
# Cost measured on the 2-core CPU machine, 2026-12-04: debootstrap 6 min 47 s (once; cached),
# the image build 55 s, about 300 MB on disk (rootfs) + 308 MB (image).
set -euo pipefail

STATE_DIR="${ENVBUILDER_TEST_STATE:-/var/cache/envbuilder-test}"
DIR="$STATE_DIR/arm64"
IMAGE="${ENVBUILDER_TEST_ARM64_BASE:-envbuilder-test/debian-arm64:bookworm}"
DEB_MIRROR="${DEBOOTSTRAP_MIRROR:-http://deb.debian.org/debian}"
DOCKER="${ENVBUILDER_TEST_DOCKER20:-/usr/bin/docker}"  # the 20.10 client that honours DOCKER_BUILDKIT=1

say() { printf 'arm64-base: %s\n' "$*" >&2; }
die() { printf 'arm64-base: error: %s\n' "$*" >&2; exit 1; }

if "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1 && [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  say "$IMAGE is there and qemu-aarch64 is registered"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root to install qemu-user-static, register binfmt and debootstrap"

if ! command -v qemu-aarch64-static >/dev/null || ! command -v update-binfmts >/dev/null; then
  say "installing qemu-user-static and binfmt-support"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q qemu-user-static binfmt-support >/tmp/arm64-apt.log 2>&1 \
    || { tail -n 20 /tmp/arm64-apt.log >&2; die "apt-get install failed (log tail above)"; }
fi
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || die "qemu-aarch64 is not registered in /proc/sys/fs/binfmt_misc"

if [ ! -x "$DIR/root/usr/bin/python3" ]; then
  say "debootstrap --arch arm64 bookworm (about 7 minutes under QEMU)"
  rm -rf "$DIR/root.new" && mkdir -p "$DIR"
  if ! debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv \
      bookworm "$DIR/root.new" "$DEB_MIRROR" >/tmp/arm64-debootstrap.log 2>&1; then
    tail -n 30 /tmp/arm64-debootstrap.log >&2 || true
    die "debootstrap failed (log tail above)"
  fi
  rm -rf "$DIR/root" && mv "$DIR/root.new" "$DIR/root"
fi

ctx="$(mktemp -d /tmp/envbuilder-arm64-ctx.XXXXXX)"
trap 'rm -rf "$ctx"' EXIT
tar -C "$DIR/root" -cf "$ctx/rootfs.tar" .
printf 'FROM scratch\nADD rootfs.tar /\nCMD ["/bin/bash"]\n' >"$ctx/Dockerfile"
say "building $IMAGE (linux/arm64)"
DOCKER_BUILDKIT=1 "$DOCKER" build -q --platform linux/arm64 -t "$IMAGE" "$ctx" >/dev/null
arch="$("$DOCKER" image inspect -f '{{.Architecture}}' "$IMAGE")"
[ "$arch" = arm64 ] || die "$IMAGE was recorded as $arch, not arm64"
say "$IMAGE ready"
