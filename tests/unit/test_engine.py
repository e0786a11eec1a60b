"""The engine package without Docker: BuildKit CLI discovery, streaming a build through a stand-in CLI
(a script replaying recorded output), Ctrl-C killing the build's process group, refs, and the
ContainerSpec turned into docker CLI flags and into the SDK's create call (a recording client)."""

from __future__ import annotations

import os
import signal
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_engine import DATA

from envbuilder.engine import (
    BuildKitCli,
    BuildSecret,
    ContainerSpec,
    DockerEngine,
    Engine,
    GpuRequest,
    Mount,
    PortBinding,
    Ulimit,
    docker_run_argv,
    find_buildkit_cli,
)
from envbuilder.engine import buildkit as eng
from envbuilder.engine.container import docker_flags
from envbuilder.engine.docker_engine import _split_ref
from envbuilder.engine.ownership import DATA_LABEL, OWNER_LABEL, PURPOSE_LABEL, data_mark
from envbuilder.engine.progress import BuildEvent
from envbuilder.errors import BuildFailedError, BuildKitMissingError, UsageError
from envbuilder.lifecycle import owner_mark


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
        f'echo done > "{tmp_path}/finished"\n'
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
    assert "\n" not in msg  # one line; the log's lines follow it, each on its own (cli._fail)
    assert any("No matching distribution found for no-such-package-envbuilder" in ln for ln in err.value.log)
    assert err.value.exit_code == 9 and err.value.hint and "nothing was tagged" in err.value.hint


@pytest.mark.usefixtures("no_daemon_ping")
def test_ctrl_c_kills_the_build_process_group(tmp_path: Path) -> None:
    def interrupt(event: BuildEvent) -> None:
        if event.index == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        DockerEngine(fake_cli(tmp_path, "cold", sleep=60)).build(
            tmp_path, tmp_path / "Dockerfile", on_event=interrupt
        )
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not (tmp_path / "finished").exists()  # killed in its sleep, not waited for


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


def _conforms(real: DockerEngine) -> Engine:
    return real  # mypy proves DockerEngine implements the whole engine interface


# --------------------------------------------------------------------------- the container spec

FULL = ContainerSpec(
    image="sha256:" + "ab" * 32,
    command=("python3", "train.py"),
    env={"B": "2", "A": "1"},
    devices=("/dev/nvidia0", "/dev/nvidiactl"),
    cdi_devices=("nvidia.com/gpu=all",),
    gpus=GpuRequest(),
    mounts=(Mount(source="/data", target="/data", read_only=True), Mount(source="/tmp/io", target="/io")),
    ulimits=(Ulimit(name="memlock", soft=-1, hard=-1), Ulimit(name="stack", soft=64, hard=64)),
    shm_size=2**30,
    network="none",
    ipc="host",
    workdir="/work",
    name="envbuilder-run-x",
    labels={"io.envbuilder.run": "1"},
    interactive=True,
    tty=True,
)


def test_docker_flags_render_every_field_in_a_stable_order() -> None:
    assert docker_run_argv(FULL) == [
        "docker", "run", "--rm", "--name", "envbuilder-run-x", "--label", "io.envbuilder.run=1",
        "--interactive", "--tty", "--workdir", "/work", "--ipc", "host", "--network", "none",
        "--shm-size", str(2**30), "--ulimit", "memlock=-1:-1", "--ulimit", "stack=64:64",
        "--gpus", "all", "--device", "/dev/nvidia0", "--device", "/dev/nvidiactl",
        "--device", "nvidia.com/gpu=all", "-v", "/data:/data:ro", "-v", "/tmp/io:/io",
        "-e", "A=1", "-e", "B=2", FULL.image, "python3", "train.py",
    ]  # fmt: skip
    bare = ContainerSpec(image="img", network=None)
    assert docker_flags(bare) == [] and docker_run_argv(bare) == ["docker", "run", "--rm", "img"]
    # docker's CLI reads --gpus as CSV: several devices are quoted ('"device=0,2"', its docs' form)
    assert GpuRequest(device_ids=("0", "GPU-1")).cli_value() == '"device=0,GPU-1"'
    assert GpuRequest(device_ids=("GPU-1",)).cli_value() == "device=GPU-1"
    assert GpuRequest(count=2).cli_value() == "2"
    ports = (
        PortBinding(container_port=80),
        PortBinding(container_port=8888, host_port=8888),
        PortBinding(container_port=53, protocol="udp", host_port=5353, host_ip="127.0.0.1"),
        PortBinding(container_port=80, host_ip="::1"),
    )
    flags = docker_flags(ContainerSpec(image="img", network=None, ports=ports, user="1000:1000"))
    assert flags == [
        "--user", "1000:1000", "-p", "80/tcp", "-p", "8888:8888/tcp", "-p", "127.0.0.1:5353:53/udp",
        "-p", "[::1]::80/tcp",
    ]  # fmt: skip
    probe = ContainerSpec(image="img", entrypoint=("/bin/sh", "-c"), command=("true",))
    assert docker_run_argv(probe)[-5:] == ["--entrypoint", "/bin/sh", "img", "-c", "true"]


def test_the_spec_is_frozen_and_refuses_what_docker_would_misread() -> None:
    with pytest.raises(TypeError):
        FULL.env["A"] = "3"  # type: ignore[index]
    assert FULL.without_ulimit("memlock").ulimits == (Ulimit(name="stack", soft=64, hard=64),)
    with pytest.raises(ValueError, match="CDI"):
        ContainerSpec(image="img", cdi_devices=("gpu=all",))
    with pytest.raises(ValueError, match="absolute"):
        ContainerSpec(image="img", devices=("nvidia0",))
    with pytest.raises(ValueError, match="absolute"):
        Mount(source="data", target="/data")


class _Created:
    """A container as the SDK's create returns it, started by the ulimit probe."""

    def __init__(self, start_error: Exception | None) -> None:
        self.start_error, self.removed = start_error, False

    def start(self) -> None:
        if self.start_error is not None:
            raise self.start_error

    def remove(self, force: bool = False) -> None:
        self.removed = force


class _Containers:
    def __init__(self, start_error: Exception | None = None) -> None:
        self.created: list[tuple[str, list[str] | None, dict[str, Any]]] = []
        self.start_error = start_error
        self.last: _Created | None = None

    def create(self, image: str, command: list[str] | None, **kwargs: Any) -> _Created:
        self.created.append((image, command, kwargs))
        self.last = _Created(self.start_error)
        return self.last


class _Client:
    def __init__(self, containers: _Containers) -> None:
        self.containers = containers


def _recording_engine(containers: _Containers) -> DockerEngine:
    real = DockerEngine()
    real._docker = _Client(containers)  # the SDK client, replaced by a recorder (no daemon)
    return real


def test_the_sdk_create_call_carries_the_whole_spec() -> None:
    import docker.errors

    containers = _Containers(start_error=docker.errors.APIError("error setting rlimit type 8: not permitted"))
    refusal = _recording_engine(containers).ulimit_refusal(FULL.image, FULL.ulimits)
    assert refusal is not None and "rlimit type 8" in refusal
    assert containers.last is not None and containers.last.removed
    image, command, kw = containers.created[0]
    # no command: no Cmd at all (the daemon then uses the image's, unless an entrypoint is given)
    assert (image, command, kw["entrypoint"]) == (
        FULL.image,
        None,
        ["/envbuilder-ulimit-probe-does-not-exist"],
    )
    assert kw["network_mode"] == "none"
    assert [(u["Name"], u["Soft"], u["Hard"]) for u in kw["ulimits"]] == [
        ("memlock", -1, -1),
        ("stack", 64, 64),
    ]

    engine = _recording_engine(containers)
    engine._create(FULL)
    image, command, kw = containers.created[-1]
    assert (image, command) == (FULL.image, ["python3", "train.py"])
    gpus, cdi = kw["device_requests"]
    assert (gpus["Count"], gpus["Capabilities"], gpus["Driver"]) == (-1, [["gpu"]], "")
    assert (cdi["Driver"], cdi["DeviceIDs"]) == ("cdi", ["nvidia.com/gpu=all"])
    assert kw["devices"] == ["/dev/nvidia0:/dev/nvidia0:rwm", "/dev/nvidiactl:/dev/nvidiactl:rwm"]
    assert [(m["Source"], m["Target"], m["ReadOnly"]) for m in kw["mounts"]] == [
        ("/data", "/data", True),
        ("/tmp/io", "/io", False),
    ]
    assert kw["environment"] == {"A": "1", "B": "2"}
    assert kw["labels"] == {
        "io.envbuilder.run": "1",
        OWNER_LABEL: owner_mark(),
        DATA_LABEL: data_mark(),
        PURPOSE_LABEL: "job",
    }
    assert (kw["shm_size"], kw["ipc_mode"], kw["working_dir"], kw["name"]) == (
        2**30,
        "host",
        "/work",
        FULL.name,
    )
    assert (kw["stdin_open"], kw["tty"], kw["entrypoint"]) == (True, True, None)
    assert (kw["ports"], kw["user"]) == (None, None)


def test_the_sdk_create_call_publishes_ports_and_sets_the_user() -> None:
    containers = _Containers()
    spec = ContainerSpec(
        image="img",
        network=None,
        user="1000:1000",
        ports=(
            PortBinding(container_port=8888, host_port=8888),
            PortBinding(container_port=8888, host_port=9999, host_ip="127.0.0.1"),
            PortBinding(container_port=53, protocol="udp"),
        ),
    )
    _recording_engine(containers)._create(spec)
    image, command, kw = containers.created[-1]
    assert (image, command, kw["user"]) == ("img", None, "1000:1000")
    assert kw["ports"] == {"8888/tcp": [8888, ("127.0.0.1", 9999)], "53/udp": [None]}


def test_a_probe_start_failure_that_is_no_rlimit_is_no_refusal_and_a_refused_create_is_an_error() -> None:
    import docker.errors

    containers = _Containers(start_error=docker.errors.APIError("exec: no such file"))
    assert _recording_engine(containers).ulimit_refusal("img", FULL.ulimits) is None

    class _Refusing(_Containers):
        def create(self, image: str, command: list[str] | None, **kwargs: Any) -> _Created:
            raise docker.errors.ImageNotFound("No such image: img")

    with pytest.raises(UsageError, match="docker create img failed: the Docker daemon refused it"):
        _recording_engine(_Refusing()).run(ContainerSpec(image="img"))


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in this process, as in a terminal. A process started in the
    background by a non-interactive shell (a CI runner, `cmd &`) inherits SIGINT as ignored, and
    Python then installs no handler: the tests below sent their SIGINT into the void (seen here when
    the suite ran as `setsid bash -c 'bash .ci/run' &`)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


class _Hung(_Containers):
    """The daemon makes the container, SIGINT reaches the main thread, and the create's answer
    never comes (a daemon that hangs): the name is all there is to find it by."""

    def __init__(self, foreign: str | None = None) -> None:
        super().__init__()
        self.by_name: dict[str, _Created] = {}
        self.foreign = foreign  # the owner mark of a container of that name someone else made
        self.release = threading.Event()

    def create(self, image: str, command: list[str] | None, **kwargs: Any) -> _Created:
        made = super().create(image, command, **kwargs)
        made.labels = {OWNER_LABEL: self.foreign or kwargs["labels"][OWNER_LABEL]}  # type: ignore[attr-defined]
        self.by_name[kwargs["name"]] = made
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        self.release.wait(timeout=10)
        return made

    def get(self, name: str) -> Any:
        import docker.errors

        if name not in self.by_name:
            raise docker.errors.NotFound(f"No such container: {name}")
        return self.by_name[name]


@pytest.mark.usefixtures("ctrl_c_raises")
@pytest.mark.parametrize("call", ["probe", "run"])
@pytest.mark.parametrize("owner", ["mine", "another"])
def test_a_create_that_never_answers_is_found_by_its_name_if_ours(
    call: str, owner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envbuilder.engine.docker_engine as docker_engine

    monkeypatch.setattr(docker_engine, "CREATE_SETTLE_S", 0.2)
    containers = _Hung(foreign=None if owner == "mine" else "otherhost/1/1")
    engine = _recording_engine(containers)
    try:
        with pytest.raises(KeyboardInterrupt):
            if call == "probe":
                engine.ulimit_refusal(FULL.image, FULL.ulimits)
            else:
                engine.run(ContainerSpec(image="img", purpose="certify"))
    finally:
        containers.release.set()
    [(name, made)] = containers.by_name.items()
    assert name.startswith("envbuilder-ulimit-probe-" if call == "probe" else "envbuilder-certify-")
    assert made.removed is (owner == "mine")


def test_the_cpu_meter_keeps_the_highest_reading_and_skips_a_gone_container() -> None:
    from envbuilder.engine.docker_engine import CpuMeter

    readings: list[Any] = [
        {"read": "2026-12-04T23:00:00Z", "cpu_stats": {"cpu_usage": {"total_usage": 2_500_000_000}}},
        {"read": "2026-12-04T23:00:01Z", "cpu_stats": {"cpu_usage": {"total_usage": 4_000_000_000}}},
        {"read": "0001-01-01T00:00:00Z", "cpu_stats": {"cpu_usage": {"total_usage": 0}}},  # ended
        OSError("gone"),
    ]

    def read() -> Any:
        r = readings.pop(0)
        if isinstance(r, Exception):
            raise r
        return r

    meter = CpuMeter(read)
    unread = meter.cpu_seconds
    assert unread is None  # never read: no claim either way
    for _ in range(4):
        meter.sample()
    assert meter.cpu_seconds == 4.0 and meter.samples == 2


class _SlowDaemon(_Containers):
    """A create the daemon goes on with after the client was interrupted: SIGINT reaches the
    main thread at once, the container exists only 0.3 s later, its answer comes at 0.4 s (what
    left 3 ulimit probes in 20 early SIGINTs of `certify` here, 2026-12-04)."""

    def __init__(self) -> None:
        super().__init__()
        self.made: dict[str, _Created] = {}

    def create(self, image: str, command: list[str] | None, **kwargs: Any) -> _Created:
        import time

        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        time.sleep(0.3)
        made = super().create(image, command, **kwargs)
        self.made[kwargs["name"]] = made
        time.sleep(0.1)
        return made

    def get(self, name: str) -> Any:
        import docker.errors

        if name not in self.made:
            raise docker.errors.NotFound(f"No such container: {name}")
        return self.made[name]


@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_stop_signal_waits_for_the_create_in_flight_and_removes_what_the_daemon_made() -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    containers = _SlowDaemon()
    with pytest.raises(KeyboardInterrupt):
        _recording_engine(containers).ulimit_refusal(FULL.image, FULL.ulimits)
    [made] = containers.made.values()
    assert made.removed, "the probe the daemon made after the interrupt was left behind"


# --------------------------------------------------------------------------- the name a user typed


def _two_tags() -> Any:
    from envbuilder.engine.model import ImageInfo

    return ImageInfo(
        id="sha256:" + "a" * 64, tags=("other/check:1", "mine/check:2", "mine/plain:latest"), repo_digests=()
    )


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        ("mine/check:2", "mine/check:2"),  # another tag of the same ID listed first: the typed one wins
        ("mine/plain", "mine/plain:latest"),  # the implied :latest
        ("other/check:1", "other/check:1"),  # already first: the same object
        ("sha256:" + "a" * 64, "other/check:1"),  # an ID names no tag: order kept
        ("mine/check@sha256:" + "b" * 64, "other/check:1"),  # a digest reference: order kept
        ("localhost:5000/mine", "other/check:1"),  # a registry port is no tag; not among the tags
    ],
)
def test_an_inspected_image_lists_the_tag_it_was_asked_by_first(typed: str, first: str) -> None:
    """Two tags of one image ID (reproducible builds of two specs that render alike): the remedies
    name the image as the user typed it (a shared daemon once named another test's tag)."""
    info = _two_tags()
    named = info.named_as(typed)
    assert named.tags[0] == first
    assert sorted(named.tags) == sorted(info.tags) and named.id == info.id


def test_a_stop_signal_before_the_create_thread_runs_stops_within_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the create's thread is being started (it never runs: nothing was asked of
    the daemon): the interrupt is re-raised after a second at most, not after the CREATE_SETTLE_S
    a create in flight gets, and never hangs."""
    import time

    import envbuilder.engine.docker_engine as docker_engine

    class _NeverStarts(threading.Thread):
        def start(self) -> None:
            raise KeyboardInterrupt

    containers = _Hung()
    engine = _recording_engine(containers)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            engine.run(ContainerSpec(image="img", purpose="certify"))
        except BaseException as exc:
            outcome.append(exc)

    runner = threading.Thread(target=call, daemon=True)  # made before the stand-in below
    monkeypatch.setattr(threading, "Thread", _NeverStarts)  # the module docker_engine uses
    began = time.monotonic()
    runner.start()
    runner.join(timeout=docker_engine.CREATE_SETTLE_S / 3)
    assert not runner.is_alive(), "the interrupt was never re-raised"
    assert [type(e) for e in outcome] == [KeyboardInterrupt]
    assert time.monotonic() - began < docker_engine.CREATE_SETTLE_S / 3
    assert containers.by_name == {}  # no create reached the daemon


class _SlowerDaemon(_SlowDaemon):
    """As _SlowDaemon, but the container exists only 1.3 s after the interrupt and the answer
    comes at 1.5 s: longer than a second, well within CREATE_SETTLE_S."""

    def create(self, image: str, command: list[str] | None, **kwargs: Any) -> _Created:
        import time

        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        time.sleep(1.3)
        made = _Containers.create(self, image, command, **kwargs)
        self.made[kwargs["name"]] = made
        time.sleep(0.2)
        return made


@pytest.mark.usefixtures("ctrl_c_raises")
def test_a_stop_signal_waits_for_a_create_answered_after_more_than_a_second() -> None:
    """The create had begun when Ctrl-C came: its answer is waited for (up to CREATE_SETTLE_S),
    not only the second a create that never began gets, and what the daemon made is removed."""
    import time

    containers = _SlowerDaemon()
    with pytest.raises(KeyboardInterrupt):
        _recording_engine(containers).ulimit_refusal(FULL.image, FULL.ulimits)
    time.sleep(0.5)  # were the create still running, it would have answered by now
    [made] = containers.made.values()
    assert made.removed, "the probe the daemon made 1.3 s after the interrupt was left behind"
