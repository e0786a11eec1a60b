#!/usr/bin/env bash
# A Docker image with Apptainer in it, for `envbuilder export --sif --apptainer-image` in the tests,
# idempotently: Apptainer is a Debian sid package that needs glibc >= 2.38 (this bookworm machine
# has 2.36), so it lives in an image: debootstrap trixie (minbase) + `docker import`, then sid's
# apptainer installed in it by a BuildKit build. Tagged $APPTAINER_IMAGE; kept once built (like the
# base image of services.sh). Root, no stdin (CI). Cost: 3 min the first time (measured
# 2026-12-01: debootstrap and apt; a 448 MB image), under 1 s after. See shared/docs/environment.md ("buildx and Apptainer
# from newer Debian suites"): `apptainer build` works in such a container with seccomp and AppArmor
# unconfined; `apptainer exec` needs systempaths unconfined too and a root filesystem unpacked
# with unsquashfs first (docs/fleet.md, "Apptainer and enroot").
set -euo pipefail

APPTAINER_IMAGE="${ENVBUILDER_TEST_APPTAINER_IMAGE:-envbuilder-test/apptainer:sid}"
DEB_MIRROR="${DEBOOTSTRAP_MIRROR:-http://deb.debian.org/debian}"

say() { printf 'apptainer: %s\n' "$*" >&2; }
die() { printf 'apptainer: error: %s\n' "$*" >&2; exit 1; }
works() { docker image inspect "$APPTAINER_IMAGE" >/dev/null 2>&1 \
  && docker run --rm --network none "$APPTAINER_IMAGE" apptainer --version 2>/dev/null; }

if version="$(works)"; then
  say "$version in $APPTAINER_IMAGE"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root to debootstrap trixie and build $APPTAINER_IMAGE (CI runs as root)"
command -v debootstrap >/dev/null || die "no debootstrap (scripts/services.sh installs it)"

say "building $APPTAINER_IMAGE: debootstrap trixie, then sid's apptainer (a few minutes, once)"
work="$(mktemp -d /tmp/envbuilder-apptainer.XXXXXX)"
box="envbuilder-apptainer-install-$$"
trap 'rm -rf "$work"; docker rm -f "$box" >/dev/null 2>&1 || true' EXIT
stage="${APPTAINER_IMAGE%%:*}:trixie-stage"  # kept until the image is made: a retry starts from it
if ! docker image inspect "$stage" >/dev/null 2>&1; then
  if ! debootstrap --variant=minbase trixie "$work/rootfs" "$DEB_MIRROR" >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log" >&2 || true
    die "debootstrap trixie failed (log tail above)"
  fi
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$stage" >/dev/null
  rm -rf "$work/rootfs"
fi
# docker run + commit, not docker build: the docker CLI here may want a buildx it lacks.
if ! docker run --name "$box" "$stage" sh -c "
    echo 'deb $DEB_MIRROR sid main' >/etc/apt/sources.list.d/sid.list &&
    apt-get -o Acquire::Check-Valid-Until=false update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends apptainer squashfs-tools &&
    rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb" >"$work/install.log" 2>&1; then
  tail -n 30 "$work/install.log" >&2 || true
  die "installing sid's apptainer failed (log tail above)"
fi
docker commit "$box" "$APPTAINER_IMAGE" >/dev/null
docker rm -f "$box" >/dev/null 2>&1 || true
docker rmi "$stage" >/dev/null 2>&1 || true
version="$(works)" || die "$APPTAINER_IMAGE was built but apptainer --version fails in it"
say "$version in $APPTAINER_IMAGE"
