"""Containers: run one and follow it (certify), or attach a terminal to one (run). Part of the
engine boundary: docker-py objects never leak out."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envbuilder.engine.images import DAEMON_HINT, DockerEngine, RunResult, cli_candidates, require_sdk
from envbuilder.errors import DockerUnavailableError


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerRun:
    """What to run and with what: the structured twin of a `docker run` command line."""

    image: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[str, ...] = ()  # host device nodes, given at the same path (rwm)
    gpus_all: bool = False  # `--gpus all`: DeviceRequest(count=-1, capabilities=[["gpu"]])
    cdi_devices: tuple[str, ...] = ()  # `--device nvidia.com/gpu=all` (engines with CDI)
    binds: tuple[tuple[str, str, bool], ...] = ()  # (host path, container path, read_only)
    shm_size: int | None = None  # bytes
    ulimits: tuple[tuple[str, int, int], ...] = ()  # (name, soft, hard)
    network: str | None = "none"  # None: the daemon's default network
    user: str | None = None
    timeout_s: float | None = None  # kill the container after this long (exit code 124)


def run_container(
    spec: ContainerRun,
    *,
    on_stderr: Callable[[str], None] | None = None,
    engine: DockerEngine | None = None,
) -> RunResult:
    """Create, start and follow a container; call `on_stderr` with each stderr line as it comes;
    return its exit code, whole stdout and stderr. The container is removed in every case
    (also on Ctrl-C, which is re-raised). A timeout kills it and returns exit code 124.

    Raises DockerUnavailableError when the daemon is down or refuses the container (unknown image,
    a device request no runtime can serve: "could not select device driver").
    """
    import threading

    require_sdk()
    import docker.types

    client = (engine or DockerEngine()).client
    requests = []
    if spec.gpus_all:
        requests.append(docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]]))
    if spec.cdi_devices:
        requests.append(docker.types.DeviceRequest(driver="cdi", device_ids=list(spec.cdi_devices)))
    kwargs: dict[str, Any] = {
        "environment": dict(spec.env),
        "devices": [f"{d}:{d}:rwm" for d in spec.devices],
        "device_requests": requests or None,
        "mounts": [
            docker.types.Mount(target=dst, source=src, type="bind", read_only=ro)
            for src, dst, ro in spec.binds
        ],
        "ulimits": [docker.types.Ulimit(name=n, soft=s, hard=h) for n, s, h in spec.ulimits] or None,
        "shm_size": spec.shm_size,
        "network_mode": spec.network,
        "user": spec.user,
    }
    try:
        container = client.containers.create(spec.image, list(spec.command), **kwargs)
    except docker.errors.DockerException as exc:
        raise DockerUnavailableError(f"docker create {spec.image} failed: {exc}") from exc
    timed_out = threading.Event()

    def _kill() -> None:
        timed_out.set()
        with contextlib.suppress(docker.errors.DockerException):
            container.kill()

    timer = threading.Timer(spec.timeout_s, _kill) if spec.timeout_s else None
    err_lines: list[str] = []

    def _line(raw: bytes) -> None:
        text = raw.decode(errors="replace").rstrip("\r")
        err_lines.append(text)
        if on_stderr is not None:
            on_stderr(text)

    try:
        container.start()
        if timer is not None:
            timer.daemon = True
            timer.start()
        buf = b""
        for chunk in container.logs(stream=True, follow=True, stdout=False, stderr=True):
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                _line(raw)
        if buf:
            _line(buf)
        status = container.wait()
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
    except docker.errors.DockerException as exc:
        raise DockerUnavailableError(f"docker run {spec.image} failed: {exc}") from exc
    finally:
        if timer is not None:
            timer.cancel()
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
    code = 124 if timed_out.is_set() else int(status.get("StatusCode", -1))
    if timed_out.is_set():
        err_lines.append(f"envbuilder: container killed after {spec.timeout_s:g} s")
    return RunResult(exit_code=code, stdout=out, stderr="\n".join(err_lines))


# --------------------------------------------------------------------------- run_attached
# Added for `envbuilder run`: the user's own job in the foreground. Through the docker CLI
# (create, then `start --attach`), because only the CLI gives a job a real terminal (-t: raw
# mode, window size, Ctrl-C as a keystroke) and stdin, streams both outputs unbuffered, and
# proxies signals; the SDK offers none of that. Nothing here decides flags: the caller does.


def ulimit_refusal(
    image: str, ulimits: Sequence[tuple[str, int, int]], engine: DockerEngine | None = None
) -> str | None:
    """Whether the runtime refuses these ulimits (rootless or nested Docker cannot raise
    RLIMIT_MEMLOCK): the refusal, or None. Probes with a container that never runs a program
    (its entrypoint does not exist), so it costs a create and a failed start, nothing more.
    Raises DockerUnavailableError when the daemon is down or the image is missing."""

    require_sdk()
    import docker.types

    client = (engine or DockerEngine()).client
    try:
        container = client.containers.create(
            image,
            [],
            entrypoint=["/envbuilder-ulimit-probe-does-not-exist"],
            ulimits=[docker.types.Ulimit(name=n, soft=s, hard=h) for n, s, h in ulimits],
            network_disabled=True,
        )
    except docker.errors.DockerException as exc:
        raise DockerUnavailableError(f"docker create {image} failed: {exc}") from exc
    try:
        container.start()
    except docker.errors.APIError as exc:
        text = str(exc)
        return text if "rlimit" in text.lower() else None
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
    return None


def run_attached(create_args: Sequence[str], *, interactive: bool, stop_timeout_s: float = 10.0) -> int:
    """`docker create CREATE_ARGS`, then `docker start --attach` with this process's stdout and
    stderr (and stdin when `interactive`); return the container's exit code. Ctrl-C is passed to
    the job (SIGINT); if it has not ended after `stop_timeout_s` it is stopped. The container is
    removed in every case; KeyboardInterrupt is re-raised.

    Raises DockerUnavailableError: no docker CLI, the daemon refused the container, or it could
    not be started (the daemon's reason, e.g. an unknown device or a refused ulimit).
    """

    cli = next(iter(cli_candidates()), None)
    if cli is None:
        raise DockerUnavailableError("no docker CLI found on PATH", hint=DAEMON_HINT)
    created = subprocess.run(
        [cli, "create", *create_args], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    if created.returncode != 0:
        said = created.stderr.strip() or created.stdout.strip()
        raise DockerUnavailableError(f"docker create failed: {said}", hint=DAEMON_HINT)
    cid = created.stdout.strip().splitlines()[-1]

    def quiet(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str] | None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            return subprocess.run(
                [cli, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
        return None

    proc: subprocess.Popen[bytes] | None = None
    try:
        start = [cli, "start", "--attach", *(["--interactive"] if interactive else []), cid]
        proc = subprocess.Popen(start, stdin=None if interactive else subprocess.DEVNULL)
        try:
            proc.wait()
        except KeyboardInterrupt:
            quiet("kill", "--signal", "INT", cid)  # the CLI proxies it too; this covers -t
            try:
                proc.wait(timeout=stop_timeout_s)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                quiet("stop", "--time", "5", cid, timeout=20.0)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10.0)
            raise
        state = quiet("inspect", "--format", "{{.State.StartedAt}}|{{.State.ExitCode}}|{{.State.Error}}", cid)
        started, _, rest = (state.stdout.strip() if state else "").partition("|")
        code, _, error = rest.partition("|")
        if started.startswith("0001-01-01") or not code.lstrip("-").isdigit():
            raise DockerUnavailableError(f"the container did not start: {error or 'unknown reason'}")
        return int(code)
    finally:
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.kill()
        quiet("rm", "--force", cid)
