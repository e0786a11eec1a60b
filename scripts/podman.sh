#!/usr/bin/env bash
# Podman for the tests marked `podman` (envbuilder --runtime podman), idempotently: Debian's podman
# 4.3 (with crun, conmon, fuse-overlayfs, uidmap, slirp4netns and runc), the local base image loaded
# into Podman's own store (`docker save | podman load`: no registry is reachable here), and a
# containers.conf for these machines only. Root, no stdin (CI). Cost: ~12 s of apt the first time,
# ~4 s to load the base; under 1 s after. See shared/docs/environment.md ("Podman on the CPU machine").
#
# Why the containers.conf (an environment workaround, NOT something users need): this sandbox
# refuses the rlimits Podman sets for root containers (nofile/nproc 1048576: `setrlimit
# RLIMIT_NOFILE: Operation not permitted`, also with --ulimit host), and crun 1.8 refuses its hybrid
# cgroup layout ("cgroups in hybrid mode not supported"). So the tests point CONTAINERS_CONF at
# $DIR/containers.conf, whose runtime is runc behind a wrapper that drops process.rlimits from the
# bundle's config.json. `podman build` needs none of it; envbuilder itself never names the file.
set -euo pipefail

BASE_IMAGE="${ENVBUILDER_TEST_BASE:-envbuilder-test/debian:bookworm}"
STATE_DIR="${ENVBUILDER_TEST_STATE:-/var/cache/envbuilder-test}"
DIR="$STATE_DIR/podman"
CONF="$DIR/containers.conf"
WRAPPER="$DIR/runc-norlimits"

say() { printf 'podman: %s\n' "$*" >&2; }
die() { printf 'podman: error: %s\n' "$*" >&2; exit 1; }
pm() { CONTAINERS_CONF="$CONF" podman "$@"; }
runs() { [ -f "$CONF" ] && timeout 60 env CONTAINERS_CONF="$CONF" podman run --rm --network none "$BASE_IMAGE" true >/dev/null 2>&1; }

# The base in Podman's store is Docker's (same ID: a `docker save | podman load` keeps the config digest).
same_base() {
  [ "sha256:$(podman image inspect --format '{{.Id}}' "$BASE_IMAGE" 2>/dev/null)" \
    = "$(docker image inspect --format '{{.Id}}' "$BASE_IMAGE" 2>/dev/null || echo none)" ]
}
if command -v podman >/dev/null && same_base && runs; then
  say "$(podman --version), $BASE_IMAGE in its store, containers start (CONTAINERS_CONF=$CONF)"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root to install Debian's podman and load $BASE_IMAGE into its store (CI runs as root)"

# 1. Packages (Debian 12: podman 4.3.1).
missing=()
for cmd in podman crun conmon fuse-overlayfs newuidmap slirp4netns runc; do
  command -v "$cmd" >/dev/null || missing+=("$cmd")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing podman crun conmon fuse-overlayfs uidmap slirp4netns runc (missing: ${missing[*]})"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman crun conmon fuse-overlayfs uidmap slirp4netns runc >/dev/null
fi
runc_path="$(command -v runc)" || die "no runc after installing it"

# 2. The runtime wrapper and the containers.conf that names it (see the header for why).
mkdir -p "$DIR"
cat >"$WRAPPER.new" <<EOF
#!/usr/bin/python3
# Written by scripts/podman.sh: an OCI runtime for envbuilder's tests on sandboxed machines only.
# Drops process.rlimits from the bundle's config.json (this machine refuses them), then execs runc.
import json, os, sys

args = sys.argv[1:]
if "create" in args or "run" in args:
    bundle = os.getcwd()
    for i, a in enumerate(args):
        if a in ("--bundle", "-b") and i + 1 < len(args):
            bundle = args[i + 1]
        elif a.startswith("--bundle="):
            bundle = a.split("=", 1)[1]
    path = os.path.join(bundle, "config.json")
    try:
        with open(path) as f:
            config = json.load(f)
    except OSError:
        config = None
    if config is not None and config.get("process", {}).pop("rlimits", None) is not None:
        with open(path + ".tmp", "w") as f:
            json.dump(config, f)
        os.replace(path + ".tmp", path)
os.execv("$runc_path", ["runc", *args])
EOF
chmod 755 "$WRAPPER.new" && mv "$WRAPPER.new" "$WRAPPER"
cat >"$CONF.new" <<EOF
# Written by scripts/podman.sh for envbuilder's tests on sandboxed machines (see its header).
[engine]
runtime = "envbuilder-test-runc"

[engine.runtimes]
envbuilder-test-runc = ["$WRAPPER"]
EOF
mv "$CONF.new" "$CONF"

# 3. The base image in Podman's store (the tests build FROM it, offline).
if ! same_base; then
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 \
    || die "$BASE_IMAGE is not in Docker either (scripts/services.sh makes it; run it first)"
  say "loading $BASE_IMAGE into Podman's store (docker save | podman load)"
  docker save "$BASE_IMAGE" | podman load -q >/dev/null || die "podman load of $BASE_IMAGE failed"
  # `podman load` names a registry-less image localhost/NAME; the short name finds it.
  podman image exists "$BASE_IMAGE" || die "$BASE_IMAGE was loaded but Podman does not find it"
fi

# 4. A container starts.
runs || { pm run --rm --network none "$BASE_IMAGE" true || true; die "podman cannot start a container from $BASE_IMAGE (above)"; }
say "$(podman --version) ($(pm info --format '{{.Store.GraphDriverName}}') storage), $BASE_IMAGE $(podman image inspect --format '{{.Id}}' "$BASE_IMAGE" | cut -c1-12); tests use CONTAINERS_CONF=$CONF"
