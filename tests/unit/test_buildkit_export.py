"""Reproducible builds' export (buildkit.TarExport): the argv buildx gets, the image ID read from
its metadata, and a builder that cannot rewrite file times refused with its own error. buildx is
a script here; tests/integration/test_build_image.py builds for real, twice, and compares IDs."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from fake_engine import DATA

from envbuilder.engine.buildkit import BuildKitCli, Buildx, TarExport, buildkit_build, engine_cli_env
from envbuilder.engine.model import BuildResult
from envbuilder.errors import BuildFailedError, BuildKitMissingError

CLI = BuildKitCli(path="/nonexistent/docker", kind="docker-buildkit", version="20.10.24")
DIGEST = "sha256:" + "c5" * 32

# A stand-in for docker-buildx: records its argv, prints a recorded plain log, and (when the run
# is to succeed) writes --metadata-file and the --output tarball as buildx does.
SCRIPT = """#!/usr/bin/env python3
import json, os, sys
argv = sys.argv[1:]
open(os.environ["ARGV_OUT"], "w").write(json.dumps(argv))
open(os.environ["ARGV_OUT"] + ".context", "w").write(os.environ.get("DOCKER_CONTEXT", ""))
sys.stdout.write(open(os.environ["LOG_IN"]).read())
if os.environ.get("EXIT", "0") != "0":
    sys.exit(int(os.environ["EXIT"]))
meta = argv[argv.index("--metadata-file") + 1]
out = dict(kv.split("=", 1) for kv in argv[argv.index("--output") + 1].split(","))
open(out["dest"], "wb").write(b"tar")
json.dump({"containerimage.config.digest": os.environ["DIGEST"]}, open(meta, "w"))
"""

SUCCESS_LOG = """#1 [internal] load build definition from Dockerfile
#1 DONE 0.0s
#2 [1/2] FROM docker.io/envbuilder-test/debian:bookworm
#2 DONE 0.0s
#3 [2/2] RUN echo hi
#3 DONE 0.2s
#4 exporting to docker image format
#4 DONE 0.1s
"""


def fake_buildx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str, exit_code: int = 0) -> Buildx:
    script = tmp_path / "docker-buildx"
    script.write_text(SCRIPT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "log").write_text(log)
    monkeypatch.setenv("ARGV_OUT", str(tmp_path / "argv.json"))
    monkeypatch.setenv("LOG_IN", str(tmp_path / "log"))
    monkeypatch.setenv("EXIT", str(exit_code))
    monkeypatch.setenv("DIGEST", DIGEST)
    return Buildx(argv=(str(script),), version="github.com/docker/buildx 0.13.1")


def build(tmp_path: Path, buildx: Buildx) -> tuple[BuildResult, TarExport]:
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    export = TarExport(buildx=buildx, dest=tmp_path / "image.tar", source_date_epoch=1700000000)
    result = buildkit_build(
        CLI, tmp_path, tmp_path / "Dockerfile", build_args={"A": "1"}, network="none", export=export
    )
    return result, export


def test_the_export_sets_the_epoch_rewrites_file_times_and_reads_the_config_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, export = build(tmp_path, fake_buildx(tmp_path, monkeypatch, SUCCESS_LOG))
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[:2] == ["build", "--progress=plain"]
    assert argv[argv.index("--output") + 1] == f"type=docker,dest={export.dest},rewrite-timestamp=true"
    args = [argv[i + 1] for i, a in enumerate(argv) if a == "--build-arg"]
    assert args == ["A=1", "SOURCE_DATE_EPOCH=1700000000"]
    assert argv[argv.index("--network") + 1] == "none" and argv[-1] == str(tmp_path)
    assert result.image_id == DIGEST
    assert [s.name for s in result.steps] == [
        "[1/2] FROM docker.io/envbuilder-test/debian:bookworm",
        "[2/2] RUN echo hi",
    ]


def test_a_builder_on_the_classic_image_store_is_refused_with_what_to_use_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log is buildx 0.13.1's own, recorded against Docker 26.1.5 and 20.10.24 (classic store)."""
    log = (DATA / "export-refused-docker-driver.plain").read_text()
    buildx = fake_buildx(tmp_path, monkeypatch, log, exit_code=1)
    with pytest.raises(BuildKitMissingError, match="cannot export with rewritten file times") as err:
        build(tmp_path, buildx)
    assert (
        err.value.hint and "containerd image store" in err.value.hint and "docker-container" in err.value.hint
    )
    assert err.value.exit_code == 8


def test_a_failing_step_stays_a_build_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = SUCCESS_LOG.replace("#3 DONE 0.2s", "#3 ERROR: process did not complete successfully: exit code: 3")
    buildx = fake_buildx(tmp_path, monkeypatch, log, exit_code=1)
    with pytest.raises(BuildFailedError, match=r"at step 2/2: RUN echo hi"):
        build(tmp_path, buildx)


def test_an_export_that_reports_no_image_is_a_build_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buildx = fake_buildx(tmp_path, monkeypatch, SUCCESS_LOG)
    monkeypatch.setenv("DIGEST", "not-a-digest")
    with pytest.raises(BuildFailedError, match="docker build failed"):
        build(tmp_path, buildx)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"DOCKER_CONTEXT": "elsewhere", "PATH": "/bin"}, {"DOCKER_CONTEXT": "default", "PATH": "/bin"}),
        ({}, {"DOCKER_CONTEXT": "default"}),  # also overrides `docker context use` (config.json)
        ({"DOCKER_HOST": "unix:///d.sock", "DOCKER_CONTEXT": "x"}, {"DOCKER_HOST": "unix:///d.sock"}),
    ],
)
def test_the_engines_own_cli_calls_reach_the_daemon_the_sdk_reaches(
    given: dict[str, str], expected: dict[str, str]
) -> None:
    """docker-py reads DOCKER_HOST, never a docker context; the CLI builds and attached runs must
    go to that daemon, or the engine looks for an image (a container) another daemon has."""
    assert engine_cli_env(given) == expected


def test_a_plain_build_runs_its_client_on_the_engines_daemon_and_an_export_on_the_users_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buildx = fake_buildx(tmp_path, monkeypatch, SUCCESS_LOG)
    monkeypatch.setenv("DOCKER_CONTEXT", "containerd-store")
    script = tmp_path / "env-probe"
    script.write_text(
        '#!/bin/sh\nprintf \'%s\' "$DOCKER_CONTEXT" > "$ENV_OUT"\n'
        'while [ $# -gt 0 ]; do [ "$1" = --iidfile ] && echo sha256:' + "ab" * 32 + ' > "$2"; shift; done\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("ENV_OUT", str(tmp_path / "context"))
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    cli = BuildKitCli(path=str(script), kind="docker-buildkit", version="20.10.24")
    assert buildkit_build(cli, tmp_path, tmp_path / "Dockerfile").image_id == "sha256:" + "ab" * 32
    assert (tmp_path / "context").read_text() == "default"
    build(tmp_path, buildx)
    assert (tmp_path / "argv.json.context").read_text() == "containerd-store"  # buildx's own choice
