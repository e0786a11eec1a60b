#!/usr/bin/env bash
# Make room on a test machine before the docker tests fill it (scripts/services.sh calls this once
# the system daemon answers). A test run builds about 20 images of 1 GB; its session fixture
# removes its own tags (tests/conftest.py run_id), but a run that is killed, or that meets a full
# disk, leaves them, with their dangling predecessors and their build cache. On 2026-12-05 CI met
# this machine with 1.9 GB free (four runs' leftovers: 113 images, 21 GB of build cache) and failed
# with hundreds of setup errors.
#
# Below ENVBUILDER_TEST_MIN_FREE_GB (default 30) free on the daemon's disk, and only for what is
# older than an hour (a test run beside this one keeps its images):
#   - tags that carry a test run's ID (six hex digits between -, :, / or the end: `secrets.token_hex(3)`
#     in tests/conftest.py), e.g. envbuilder-it/certify:2653d1, envbuilder/it-torch-cpu-2653d1:...;
#   - dangling images (docker image prune --filter until=1h);
#   - then the build cache no build used (docker builder prune --filter until=1h).
# Never the images the set-up scripts make (envbuilder-test/*:bookworm, :sid) nor an image a
# container uses (docker refuses to remove those without --force, and this passes none).
set -euo pipefail

MIN_FREE_GB="${ENVBUILDER_TEST_MIN_FREE_GB:-30}"
say() { printf 'reclaim-disk: %s\n' "$*" >&2; }
free_gb() { df -Pk "$(docker info --format '{{.DockerRootDir}}' 2>/dev/null || echo /)" | awk 'NR==2 {print int($4 / 1048576)}'; }

before=$(free_gb)
if [ "$before" -ge "$MIN_FREE_GB" ]; then
  exit 0
fi
say "${before} GB free (< ${MIN_FREE_GB}): removing test leftovers older than an hour"
cutoff=$(date -d '1 hour ago' +%s)
docker image ls --format '{{.Repository}}:{{.Tag}}|{{.CreatedAt}}' \
  | { grep -E '([-:/])[0-9a-f]{6}([-:/]|\||$)' || true; } \
  | while IFS='|' read -r ref created; do
      case "$ref" in *'<none>'*) continue ;; esac
      # CreatedAt: "2026-12-05 08:22:11 +0000 UTC"; date reads it without the zone name.
      [ "$(date -d "${created% *}" +%s)" -lt "$cutoff" ] || continue
      docker image rm "$ref" >/dev/null 2>&1 || say "kept $ref (in use or already gone)"
    done
docker image prune -f --filter until=1h >/dev/null || say "docker image prune failed (going on)"
# Last: a removed image's layers become build cache that no build uses (12.7 GB more here).
docker builder prune -f --filter until=1h >/dev/null 2>&1 || say "docker builder prune failed (going on)"
say "$(free_gb) GB free now (was ${before})"
