"""scripts/reclaim-disk.sh (run by `make services` before the docker tests) with a fake `docker`
written into tmp_path: below the free-space floor it removes only test runs' tags older than an
hour, then prunes; a daemon with no such tag is no error (grep finding nothing ended the script
with exit 1 under `set -o pipefail`, and `make services` with it, 2026-12-06)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "reclaim-disk.sh"


def reclaim(tmp_path: Path, images: list[str]) -> tuple[int, str, list[str]]:
    """Run the script against a fake docker that lists `images` ("REF|CreatedAt" lines) and whose
    root folder is tmp_path; returns (exit, stderr, the docker commands that change something)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "images").write_text("".join(f"{line}\n" for line in images))
    fake = bin_dir / "docker"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'case "$1 $2" in\n'
        f'  "info --format") echo {tmp_path} ;;\n'
        f'  "image ls") cat {tmp_path}/images ;;\n'
        f'  *) echo "$@" >> {tmp_path}/changes ;;\n'
        "esac\n"
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ENVBUILDER_TEST_MIN_FREE_GB": "1000000"}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    changes = tmp_path / "changes"
    return done.returncode, done.stderr, changes.read_text().splitlines() if changes.exists() else []


def test_a_daemon_without_test_leftovers_is_pruned_and_the_script_succeeds(tmp_path: Path) -> None:
    rc, err, changes = reclaim(tmp_path, ["envbuilder-test/debian:bookworm|2026-01-01 00:00:00 +0000 UTC"])
    assert rc == 0, err
    assert changes == ["image prune -f --filter until=1h", "builder prune -f --filter until=1h"]
    assert "GB free now" in err


def test_only_a_test_runs_tags_older_than_an_hour_are_removed(tmp_path: Path) -> None:
    rc, err, changes = reclaim(
        tmp_path,
        [
            "envbuilder-it/certify:2653d1|2026-01-01 00:00:00 +0000 UTC",
            "envbuilder-it/certify:a1b2c3|2999-01-01 00:00:00 +0000 UTC",
            "envbuilder-test/debian:bookworm|2026-01-01 00:00:00 +0000 UTC",
            "<none>:<none>|2026-01-01 00:00:00 +0000 UTC",
        ],
    )
    assert rc == 0, err
    assert changes[0] == "image rm envbuilder-it/certify:2653d1"
    assert changes[1:] == ["image prune -f --filter until=1h", "builder prune -f --filter until=1h"]
