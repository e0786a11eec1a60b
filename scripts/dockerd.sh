#!/usr/bin/env bash
# Make sure a Docker daemon answers before anything else runs (`make run`, scripts/services.sh):
# - one answers: nothing to do;
# - root on Debian/Ubuntu: install Debian's docker.io if dockerd is missing (and debootstrap, with
#   which `envbuilder up` makes a local base where no registry answers), start dockerd, wait;
# - otherwise: one line saying what to run, exit 7 (envbuilder's "Docker daemon cannot be
#   reached"), within seconds rather than after the virtual environment's install.
set -euo pipefail

say() { printf 'dockerd: %s\n' "$*" >&2; }
docker_up() { timeout 10 docker info >/dev/null 2>&1; }

docker_up && exit 0
if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ] || ! command -v apt-get >/dev/null; then
  say "no Docker daemon answers: start it (sudo systemctl start docker), or run \`sudo make services\` on Debian/Ubuntu, then run this again"
  exit 7
fi
missing=()
command -v dockerd >/dev/null && [ -x /usr/bin/docker ] || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian's ${missing[*]} (about a minute)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
say "starting dockerd (log: /tmp/dockerd.log)"
setsid dockerd >/tmp/dockerd.log 2>&1 < /dev/null &
for _ in $(seq 1 60); do docker_up && exit 0; sleep 1; done
tail -n 30 /tmp/dockerd.log >&2 || true
say "dockerd did not become ready within 60 s (log tail above)"
exit 7
