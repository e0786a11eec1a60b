"""The engine package without Docker: BuildKit CLI discovery, streaming a build through a stand-in CLI
(a script replaying recorded output), Ctrl-C killing the build's process group, refs."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from fake_engine import DATA

from envbuilder.engine import BuildKitCli, BuildSecret, DockerEngine, find_buildkit_cli
from envbuilder.engine import images as eng
from envbuilder.engine.images import _split_ref
from envbuilder.engine.progress import BuildEvent
from envbuilder.errors import BuildFailedError, BuildKitMissingError


def fake_cli(tmp_path: Path, log: str, *, rc: int = 0, sleep: float = 0.0) -> BuildKitCli:
    """A stand-in for `docker build`: prints a recorded log, writes --iidfile, exits rc."""
    script = tmp_path / "fake-buildkit-cli"
    script.write_text(
        "#!/bin/sh\n"
        f'echo $$ > "{tmp_path}/pid"\n'
        f'echo "$@" > "{tmp_path}/argv"\n'
        'while [ $# -gt 0 ]; do [ "$1" = --iidfile ] && IID="$2"; shift; done\n'
        f'cat "{DATA / log}.log"\n'
        f"sleep {sleep}\n"
        f'[ {rc} -eq 0 ] && printf sha256:%064d 7 > "$IID"\n'
        f"exit {rc}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return BuildKitCli(path=str(script), kind="docker-buildkit", version="test")


@pytest.fixture
def no_daemon_ping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(DockerEngine, "ping", lambda self: None)


@pytest.mark.usefixtures("no_daemon_ping")
def test_build_streams_events_and_returns_the_iid(tmp_path: Path) -> None:
    secret = tmp_path / "tok"
    secret.write_text("s3cret")
    events: list[BuildEvent] = []
    result = DockerEngine(fake_cli(tmp_path, "warm")).build(
        tmp_path, tmp_path / "Dockerfile", secrets=[BuildSecret(id="ca", src=secret)], on_event=events.append
    )
    assert result.image_id == "sha256:" + "0" * 63 + "7"
    assert result.cached_steps == 3 and len(result.steps) == 4
    argv = (tmp_path / "argv").read_text()
    assert "--progress=plain" in argv and f"--secret id=ca,src={secret}" in argv
    assert "-t " not in argv and "--tag" not in argv  # never tagged by the build itself
    assert [e.index for e in events if e.kind == "cached"] == [2, 3, 4]


@pytest.mark.usefixtures("no_daemon_ping")
def test_failed_build_raises_with_the_log_tail(tmp_path: Path) -> None:
    with pytest.raises(BuildFailedError) as err:
        DockerEngine(fake_cli(tmp_path, "failed", rc=1)).build(tmp_path, tmp_path / "Dockerfile")
    msg = err.value.message
    assert "exit 1" in msg and "at step 4/4: RUN" in msg
    assert "No matching distribution found for no-such-package-envbuilder" in msg
    assert err.value.exit_code == 9 and err.value.hint and "nothing was tagged" in err.value.hint


@pytest.mark.usefixtures("no_daemon_ping")
def test_ctrl_c_kills_the_build_process_group(tmp_path: Path) -> None:
    def interrupt(event: BuildEvent) -> None:
        if event.index == 2:
            raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        DockerEngine(fake_cli(tmp_path, "cold", sleep=60)).build(
            tmp_path, tmp_path / "Dockerfile", on_event=interrupt
        )
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert time.monotonic() - started < 15


@pytest.mark.usefixtures("no_daemon_ping")
def test_build_contexts_need_buildx(tmp_path: Path) -> None:
    with pytest.raises(BuildKitMissingError, match="buildx"):
        DockerEngine(fake_cli(tmp_path, "warm")).build(
            tmp_path, tmp_path / "Dockerfile", build_contexts={"wheels": tmp_path}
        )


def test_find_buildkit_cli_prefers_buildx_then_a_buildkit_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng, "cli_candidates", lambda: ["/new/docker", "/old/docker"])

    def probe(argv: list[str], env: object = None) -> str | None:
        table = {
            ("/new/docker", "buildx"): None,
            ("/new/docker", "build"): "Usage: docker buildx build (no buildx here)",
            ("/old/docker", "buildx"): None,
            ("/old/docker", "build"): "  --secret stringArray   Secret file to expose",
            ("/old/docker", "version"): "20.10.24+dfsg1\n",
        }
        return table.get((argv[0], argv[1]))

    monkeypatch.setattr(eng, "_probe", probe)
    cli = find_buildkit_cli()
    assert (cli.path, cli.kind, cli.version) == ("/old/docker", "docker-buildkit", "20.10.24+dfsg1")
    assert cli.build_argv() == ["/old/docker", "build"]
    monkeypatch.setattr(eng, "_probe", lambda argv, env=None: "v0.20.1" if argv[1] == "buildx" else None)
    cli = find_buildkit_cli()
    assert cli.kind == "buildx" and cli.build_argv()[:3] == ["/new/docker", "buildx", "build"]


def test_no_buildkit_cli_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng, "cli_candidates", lambda: ["/usr/local/bin/docker"])
    monkeypatch.setattr(eng, "_probe", lambda argv, env=None: None)
    with pytest.raises(BuildKitMissingError) as err:
        find_buildkit_cli()
    assert "/usr/local/bin/docker" in err.value.message
    assert err.value.hint and "buildx" in err.value.hint and "docker.io" in err.value.hint
    assert err.value.exit_code == 8


def test_split_ref() -> None:
    assert _split_ref("127.0.0.1:5000/a/b:t1") == ("127.0.0.1:5000/a/b", "t1")
    assert _split_ref("127.0.0.1:5000/a/b") == ("127.0.0.1:5000/a/b", None)
    assert _split_ref("a/b@sha256:" + "f" * 64) == ("a/b", "sha256:" + "f" * 64)


def test_unit_tests_cannot_reach_docker() -> None:
    """The autouse guard in tests/conftest.py: the SDK and the docker CLI both refuse."""
    import subprocess

    import docker

    with pytest.raises(AssertionError, match="touched the Docker SDK"):
        docker.from_env()
    with pytest.raises(AssertionError, match="docker CLI"):
        subprocess.run(["docker", "info"], check=False)
    with pytest.raises(AssertionError):
        DockerEngine().ping()
