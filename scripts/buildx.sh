#!/usr/bin/env bash
# Unpack Debian trixie's docker-buildx plugin (bookworm has none) for `envbuilder fleet build`,
# idempotently: `apt-get download` + `dpkg -x` from a private sources list (never installed, the
# machine's own apt sources untouched), into $STATE_DIR/buildx/root. The plugin is then linked as
# ~/.docker/cli-plugins/docker-buildx only with ENVBUILDER_BUILDX_PLUGIN=1; the tests run it as
# ENVBUILDER_BUILDX (a standalone binary) instead, so that every other `envbuilder build` keeps the
# 20.10 client's DOCKER_BUILDKIT=1 path it is tested with. Root, no stdin (CI). Cost: one
# `apt-get update` of trixie's lists and a ~20 MB download, about 20 s the first time.
# See shared/docs/environment.md ("buildx and Apptainer from newer Debian suites").
set -euo pipefail

STATE_DIR="${ENVBUILDER_TEST_STATE:-/var/cache/envbuilder-test}"
DIR="$STATE_DIR/buildx"
BIN="$DIR/root/usr/libexec/docker/cli-plugins/docker-buildx"
SUITE="${ENVBUILDER_TEST_BUILDX_SUITE:-trixie}"
DEB_MIRROR="${DEBOOTSTRAP_MIRROR:-http://deb.debian.org/debian}"

say() { printf 'buildx: %s\n' "$*" >&2; }
die() { printf 'buildx: error: %s\n' "$*" >&2; exit 1; }
works() { [ -x "$BIN" ] && "$BIN" version >/dev/null 2>&1; }

if ! works; then
  [ "$(id -u)" = 0 ] || die "needs root to unpack $SUITE's docker-buildx into $DIR (CI runs as root)"
  say "unpacking $SUITE's docker-buildx into $DIR/root"
  apt_dir="$(mktemp -d /tmp/envbuilder-buildx-apt.XXXXXX)"
  trap 'rm -rf "$apt_dir"' EXIT
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts" "$apt_dir/debs" "$DIR"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEB_MIRROR $SUITE main" \
    >"$apt_dir/parts/buildx.list"
  apt_opts=(-o "Dir::Etc::SourceParts=$apt_dir/parts" -o Dir::Etc::SourceList=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o Acquire::Check-Valid-Until=false -qq)
  apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 \
    || { tail -n 20 "$apt_dir/update.log" >&2; die "apt-get update for $SUITE failed (log tail above)"; }
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download docker-buildx 2>&1 | grep -v unsandboxed) || true
  compgen -G "$apt_dir/debs/docker-buildx_*.deb" >/dev/null || die "could not download $SUITE's docker-buildx"
  rm -rf "$DIR/root.new" && mkdir -p "$DIR/root.new"
  dpkg -x "$apt_dir"/debs/docker-buildx_*.deb "$DIR/root.new"
  rm -rf "$DIR/root" && mv "$DIR/root.new" "$DIR/root"
  works || die "$BIN does not run here"
fi
if [ "${ENVBUILDER_BUILDX_PLUGIN:-0}" = 1 ]; then
  mkdir -p "$HOME/.docker/cli-plugins"
  ln -sfn "$BIN" "$HOME/.docker/cli-plugins/docker-buildx"
fi
say "$("$BIN" version) at $BIN"
