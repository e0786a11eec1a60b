#!/usr/bin/env bash
# Install Debian's headless-capable chromium for the report browser test
# (tests/integration/test_report_browser.py), idempotently. Root, no stdin (CI).
# `make services` calls it; running it again when chromium is there does nothing.
set -euo pipefail

say() { printf 'install-chromium: %s\n' "$*" >&2; }

for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then
    say "already installed: $(command -v "$c") ($("$c" --version 2>/dev/null || echo '?'))"
    exit 0
  fi
done

if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  say "error: chromium is missing; this script installs it with apt-get and needs root on Debian"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when they are missing or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
  apt-get update -q
fi
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core >/dev/null
say "installed: $(chromium --version 2>/dev/null || echo 'chromium (version unknown)')"
