"""DockerEngine, the real engine: the Docker SDK for the daemon, images and containers, the docker
CLI where only it can do the job (BuildKit builds, a terminal attached to a container)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from envbuilder.atomic import append_jsonl
from envbuilder.engine.buildkit import (
    BuildKitCli,
    Buildx,
    TarExport,
    buildkit_build,
    cli_candidates,
    engine_cli_env,
    find_buildkit_cli,
    find_buildx,
)
from envbuilder.engine.container import ContainerSpec, PortBinding, Ulimit
from envbuilder.engine.model import (
    AttachedRun,
    BuildResult,
    BuildSecret,
    DaemonInfo,
    ImageInfo,
    RunResult,
    cpu_reading,
)
from envbuilder.engine.ownership import (
    DATA_LABEL,
    OWNER_LABEL,
    OwnedContainer,
    container_name,
    data_mark,
    leftovers,
    log_is_ours,
    orphan_record,
    owner_labels,
)
from envbuilder.engine.progress import LOAD_VERTEX, BuildEvent
from envbuilder.errors import (
    BuildFailedError,
    DockerUnavailableError,
    EnvbuilderError,
    NoGpuError,
    RegistryError,
    UsageError,
)
from envbuilder.lifecycle import owner_mark, scratch_dir, start_child, stop_signal, sweep_temp_dirs
from envbuilder.typed import ascii_int

# The SDK is a dependency, but a broken or partial install must not take down the commands that never
# talk to Docker (doctor, resolve, render, matrix): they import this package too.
_SDK_MISSING: str | None = None
try:
    import docker
    import docker.errors
    import docker.types
    import requests.exceptions

    # What a call raises when the daemon refuses it (DockerException) or goes away in the middle
    # of it (requests' ConnectionError, ReadTimeout, ChunkedEncodingError: docker-py lets them out).
    _SDK_ERRORS: tuple[type[Exception], ...] = (
        docker.errors.DockerException,
        requests.exceptions.RequestException,
    )
except ImportError as _exc:
    _SDK_MISSING = str(_exc)
    _SDK_ERRORS = ()

DAEMON_HINT = (
    "start the Docker daemon (e.g. `sudo systemctl start docker`, or `make services` in a checkout) "
    "or point DOCKER_HOST at a running one"
)
# An entrypoint that does not exist: the ulimit probe's container is created and started (where
# runc sets the rlimits) but never runs a program.
_PROBE_ENTRYPOINT = "/envbuilder-ulimit-probe-does-not-exist"
_NEVER_STARTED = "0001-01-01"  # State.StartedAt of a container that did not start
CREATE_SETTLE_S = 15.0  # how long a stop signal waits for a create in flight to be answered
Notice = Callable[[str], None]


def _stderr_notice(line: str) -> None:
    print(f"envbuilder: {line}", file=sys.stderr, flush=True)


def lost_daemon(what: str, exc: BaseException, container: str | None = None) -> DockerUnavailableError:
    """The daemon went away (or broke the connection) during `what`: exit 7, naming the
    container that may be left behind and how to remove it."""
    first = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
    if container is None:
        return DockerUnavailableError(
            f"{what} failed: the Docker daemon went away ({first})", hint=DAEMON_HINT
        )
    return DockerUnavailableError(
        f"{what} failed: the Docker daemon went away ({first}); container {container[:12]} may be left",
        hint=f"when the daemon is back: docker rm -f {container} (the next envbuilder command that "
        "reaches the daemon removes it too)",
    )


def _require_sdk() -> None:
    if _SDK_MISSING is not None:
        raise DockerUnavailableError(
            f"the docker Python SDK is not installed ({_SDK_MISSING})",
            hint="pip install docker (envbuilder depends on it)",
        )


class DockerEngine:
    """The real engine (envbuilder.engine.Engine). Every method raises DockerUnavailableError when
    the daemon is down; the SDK connects on first use."""

    def __init__(
        self, cli: BuildKitCli | None = None, *, janitor: bool = True, notice: Notice | None = None
    ) -> None:
        """`janitor`: on the first connection, remove what crashed envbuilder runs left (their
        containers, by owner label, and temporary folders), saying so through `notice`."""
        self._cli = cli
        self._buildx: Buildx | None = None
        self._docker: Any = None
        self._janitor = janitor
        self._notice = notice or _stderr_notice

    @property
    def _client(self) -> Any:
        if self._docker is None:
            _require_sdk()
            try:
                client = docker.from_env(timeout=600)
                client.ping()
            except _SDK_ERRORS as exc:
                raise DockerUnavailableError(
                    f"cannot reach the Docker daemon: {exc}".splitlines()[0], hint=DAEMON_HINT
                ) from exc
            self._docker = client
            if self._janitor:
                self.sweep_leftovers()
        return self._docker

    # ------------------------------------------------------------------ daemon

    def ping(self) -> None:
        """Raises DockerUnavailableError when the daemon cannot be reached."""
        _ = self._client

    def sweep_leftovers(self) -> tuple[str, ...]:
        """The janitor: remove the containers of this data folder whose envbuilder process is gone
        from this host (a SIGKILL, a lost daemon) and such processes' temporary folders; say what
        went. A removed container that carries its run's record (`run`'s) gets that record written
        to its log, as `orphaned` (ownership.orphan_record). Another data folder's containers (another
        user of this daemon) are left to their own envbuilder (ownership.leftovers). The names of
        the containers removed. Never raises: a janitor that fails leaves things as they were."""
        removed: list[str] = []
        try:
            mine = data_mark()
            found = self._client.containers.list(
                all=True, filters={"label": [OWNER_LABEL, f"{DATA_LABEL}={mine}"]}
            )
            owned = [
                OwnedContainer(id=c.id, name=c.name, status=c.status, labels=dict(c.labels or {}))
                for c in found
            ]
            states = {c.id: (c.attrs or {}).get("State") or {} for c in found}
            for c in leftovers(owned, data=mine):
                orphan = orphan_record(c, states.get(c.id, {}))
                with contextlib.suppress(*_SDK_ERRORS):
                    self._client.api.remove_container(c.id, force=True)
                    removed.append(c.name)
                    self._notice(
                        f"removed {c.name} ({c.id[:12]}, {c.status}), left by an envbuilder run "
                        f"that is gone ({c.labels.get(OWNER_LABEL)})"
                    )
                    if orphan is not None and log_is_ours(orphan[0]):
                        self._record_orphan(*orphan)
                    elif orphan is not None:
                        self._notice(
                            f"not recording run {orphan[1].get('run_id')}: its log {orphan[0]} is not in "
                            "this data folder"
                        )
        except _SDK_ERRORS:
            pass
        for path in sweep_temp_dirs():
            self._notice(f"removed {path}, left by an envbuilder run that is gone")
        return tuple(removed)

    def _record_orphan(self, log: Path, record: Mapping[str, Any]) -> None:
        try:
            append_jsonl(log, record)
        except (OSError, ValueError) as exc:
            self._notice(f"could not record run {record.get('run_id')} in {log}: {exc}")
        else:
            self._notice(f"recorded run {record.get('run_id')} in {log} as {record.get('outcome')}")

    def daemon_info(self) -> DaemonInfo:
        """Describe the daemon. Raises DockerUnavailableError."""
        try:
            info = self._client.info()
        except _SDK_ERRORS as exc:
            raise lost_daemon("docker info", exc) from exc
        return DaemonInfo(
            server_version=str(info.get("ServerVersion", "")),
            runtimes=tuple(sorted((info.get("Runtimes") or {}).keys())),
            default_runtime=str(info.get("DefaultRuntime", "")),
            cdi_spec_dirs=tuple(info.get("CDISpecDirs") or ()),
            storage_driver=str(info.get("Driver", "")),
            id=str(info.get("ID") or ""),
        )

    # ------------------------------------------------------------------ builds

    def buildkit_cli(self) -> BuildKitCli:
        """The BuildKit-capable CLI (found once). Raises BuildKitMissingError."""
        if self._cli is None:
            self._cli = find_buildkit_cli()
        return self._cli

    def buildx(self) -> Buildx:
        """The buildx reproducible builds export with (found once). Raises BuildKitMissingError."""
        if self._buildx is None:
            self._buildx = find_buildx()
        return self._buildx

    def build(
        self,
        context: Path,
        dockerfile: Path,
        *,
        secrets: Sequence[BuildSecret] = (),
        build_args: Mapping[str, str] | None = None,
        build_contexts: Mapping[str, Path] | None = None,
        no_cache: bool = False,
        network: str | None = None,
        on_event: Callable[[BuildEvent], None] | None = None,
        source_date_epoch: int | None = None,
    ) -> BuildResult:
        """Build WITHOUT a tag (buildkit.buildkit_build); with `source_date_epoch`, reproducibly:
        exported by buildx as a tarball (buildkit.TarExport), then loaded here. Raises DockerUnavailableError,
        BuildKitMissingError, BuildFailedError; Ctrl-C stops the build and is re-raised."""
        self.ping()
        with scratch_dir("export") as tmp:
            export = None
            if source_date_epoch is not None:
                export = TarExport(
                    buildx=self.buildx(), dest=tmp / "image.tar", source_date_epoch=source_date_epoch
                )
            result = buildkit_build(
                self.buildkit_cli(),
                context,
                dockerfile,
                secrets=secrets,
                build_args=build_args,
                build_contexts=build_contexts,
                no_cache=no_cache,
                network=network,
                on_event=on_event,
                export=export,
            )
            if export is not None:
                self._load(export.dest, result.image_id, on_event)
        return result

    def _load(self, tarball: Path, image_id: str, on_event: Callable[[BuildEvent], None] | None) -> None:
        """`docker load` of a build's tarball, untagged, said through `on_event` (progress.LOAD_VERTEX).
        An image of that ID already here is the same image, byte for byte (its ID is its config's
        digest): nothing to load. Interrupted, the image it loaded is removed. Raises
        BuildFailedError, DockerUnavailableError."""
        if self.inspect_image(image_id) is not None:
            return
        say = on_event or (lambda _event: None)
        started = time.monotonic()
        say(BuildEvent(kind="start", vertex=0, name=LOAD_VERTEX, index=None, total=None))
        try:
            with tarball.open("rb") as f:
                for msg in self._client.api.load_image(f):
                    if "error" in msg or "errorDetail" in msg:
                        detail = (msg.get("errorDetail") or {}).get("message") or msg.get("error")
                        raise BuildFailedError(f"docker load of the built image failed: {detail}")
        except BaseException as exc:
            loaded = self.inspect_image(image_id) if isinstance(exc, KeyboardInterrupt) else None
            if loaded is not None and not loaded.tags:
                self.remove_image(image_id, force=True)
            if isinstance(exc, _SDK_ERRORS):
                raise lost_daemon("docker load", exc) from exc
            raise
        seconds = time.monotonic() - started
        say(BuildEvent(kind="done", vertex=0, name=LOAD_VERTEX, index=None, total=None, seconds=seconds))

    def prune_build_cache(self) -> int:
        """`docker builder prune -a`: drop all BuildKit cache (layers and cache mounts), not only
        the dangling part; return bytes reclaimed. Raises DockerUnavailableError."""
        try:
            res = self._client.api.prune_builds(all=True)
        except _SDK_ERRORS as exc:
            raise lost_daemon("docker builder prune", exc) from exc
        return int((res or {}).get("SpaceReclaimed") or 0)

    # ------------------------------------------------------------------ images

    def inspect_image(self, ref: str) -> ImageInfo | None:
        """The local image `ref` (name, name@digest or ID), or None. Raises DockerUnavailableError."""
        try:
            img = self._client.images.get(ref)
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            if exc.status_code in (400, 404):  # a malformed reference is "not here" too
                return None
            raise DockerUnavailableError(f"docker image inspect {ref} failed: {exc}") from exc
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker image inspect {ref}", exc) from exc
        return _image_info(img.attrs).named_as(ref)

    def list_images(self, repository: str) -> tuple[ImageInfo, ...]:
        """The local images tagged in `repository`. Raises DockerUnavailableError."""
        try:
            images = self._client.images.list(name=repository)
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker images {repository}", exc) from exc
        return tuple(_image_info(img.attrs) for img in images)

    def tag(self, image: str, ref: str) -> None:
        """Tag `image` as `ref` (repo:tag). Raises DockerUnavailableError."""
        repo, tag = _split_ref(ref)
        try:
            self._client.api.tag(image, repo, tag=tag or "latest")
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker tag {image} {ref}", exc) from exc

    def remove_image(self, ref: str, *, force: bool = False) -> bool:
        """Remove an image or tag; False when it was not there. Raises DockerUnavailableError."""
        try:
            self._client.images.remove(ref, force=force)
        except docker.errors.ImageNotFound:
            return False
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker rmi {ref}", exc) from exc
        return True

    def push(self, ref: str) -> str:
        """Push `ref` (registry/name:tag) with credentials from the Docker config; return the
        manifest digest (sha256:...). Raises RegistryError, DockerUnavailableError."""
        repo, tag = _split_ref(ref)
        digest = ""
        try:
            for msg in self._client.images.push(repo, tag=tag or "latest", stream=True, decode=True):
                if "error" in msg or "errorDetail" in msg:
                    detail = (msg.get("errorDetail") or {}).get("message") or msg.get("error")
                    raise RegistryError(
                        f"push of {ref} failed: {detail}",
                        hint="check the registry address and `docker login` credentials",
                    )
                aux = msg.get("aux") or {}
                digest = aux.get("Digest", digest)
        except docker.errors.APIError as exc:
            raise RegistryError(f"push of {ref} failed: {exc}") from exc
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker push {ref}", exc) from exc
        if not digest:
            raise RegistryError(f"push of {ref} reported no digest")
        return str(digest)

    def pull(self, ref: str) -> ImageInfo:
        """Pull `ref` (name:tag or name@sha256:...). Raises RegistryError, DockerUnavailableError."""
        repo, tag = _split_ref(ref)
        try:
            self._client.images.pull(repo, tag=tag)
        except docker.errors.APIError as exc:
            raise RegistryError(f"pull of {ref} failed: {exc}") from exc
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker pull {ref}", exc) from exc
        info = self.inspect_image(ref)
        if info is None:
            raise RegistryError(f"pull of {ref} reported success but the image is not there")
        return info

    def save(self, ref: str, dest: Path) -> Path:
        """`docker save` `ref` into the tar file `dest`. Raises DockerUnavailableError."""
        try:
            chunks: Iterable[bytes] = self._client.images.get(ref).save(named=True)
            with dest.open("wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker save {ref}", exc) from exc
        return dest

    # ------------------------------------------------------------------ containers

    def _create(self, spec: ContainerSpec) -> Any:
        """The one place a ContainerSpec becomes a Docker call. The container is envbuilder's:
        named `envbuilder-PURPOSE-XXXXXXXX` unless the spec names it (callers name it first, with
        `_named`, so that `_remove` finds it even when the create's answer never came), labelled
        with its owner and purpose (ownership.py), so a janitor can find it if this process dies.
        Raises UsageError when the daemon refuses the spec (a 4xx answer: a relative working
        directory, a name in use), DockerUnavailableError when it fails or cannot be reached."""
        requests_ = []
        if spec.gpus is not None:
            requests_.append(
                docker.types.DeviceRequest(
                    count=0 if spec.gpus.device_ids else spec.gpus.count,
                    device_ids=list(spec.gpus.device_ids),
                    capabilities=[list(spec.gpus.capabilities)],
                )
            )
        if spec.cdi_devices:
            requests_.append(docker.types.DeviceRequest(driver="cdi", device_ids=list(spec.cdi_devices)))
        kwargs: dict[str, Any] = {
            "entrypoint": list(spec.entrypoint) if spec.entrypoint is not None else None,
            "environment": dict(spec.env),
            "devices": [f"{d}:{d}:rwm" for d in spec.devices],
            "device_requests": requests_ or None,
            "mounts": [
                docker.types.Mount(target=m.target, source=m.source, type="bind", read_only=m.read_only)
                for m in spec.mounts
            ]
            + [docker.types.Mount(target=v.target, source=v.name, type="volume") for v in spec.volumes],
            "ulimits": [docker.types.Ulimit(name=u.name, soft=u.soft, hard=u.hard) for u in spec.ulimits]
            or None,
            "shm_size": spec.shm_size,
            "security_opt": list(spec.security_opt) or None,
            "network_mode": spec.network,
            "ports": _port_bindings(spec.ports) or None,
            "ipc_mode": spec.ipc,
            "user": spec.user,
            "working_dir": spec.workdir,
            "name": spec.name or container_name(spec.purpose),
            "labels": owner_labels(spec.purpose, spec.labels),
            "stdin_open": spec.interactive,
            "tty": spec.tty,
        }
        try:
            # No command: the image's own CMD (behind its ENTRYPOINT), as `docker run IMAGE` does.
            return self._client.containers.create(spec.image, list(spec.command) or None, **kwargs)
        except docker.errors.APIError as exc:
            raise _refusal(f"docker create {spec.image}", exc) from exc
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker create {spec.image}", exc, kwargs["name"]) from exc

    @contextlib.contextmanager
    def _created(self, spec: ContainerSpec) -> Iterator[Any]:
        """The container of `spec`, created (`_settled_create`) and removed when the block ends,
        whatever ends it, a stop signal in the middle of the create included (issue 23, D14)."""
        made: list[Any] = []  # filled by the create's own thread: no window between create and here
        try:
            self._settled_create(_named(spec), made)
            yield made[0]
        finally:
            if made:
                with contextlib.suppress(*_SDK_ERRORS):
                    made[0].remove(force=True)

    def _settled_create(self, spec: ContainerSpec, made: list[Any]) -> None:
        """`_create` on a thread of its own, the container appended to `made`. A Ctrl-C or stop
        signal (raised in this, the main thread) never abandons a create in flight, which the
        daemon goes on with after its client gives up (a ulimit probe was left behind 3 times in
        20 early SIGINTs of `certify`): it waits up to CREATE_SETTLE_S more for the answer, so the
        caller removes what was made, then re-raises. Should no answer come, the container is
        looked up by its name (fixed before the create) and removed if this process made it (its
        owner mark is ours). Raises what `_create` raises."""
        failed: list[BaseException] = []
        begun, done = threading.Event(), threading.Event()

        def create() -> None:
            begun.set()
            try:
                made.append(self._create(spec))
            except BaseException as exc:  # handed to the caller's thread, as raised
                failed.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=create, name="envbuilder-create", daemon=True)
        try:
            worker.start()
            done.wait()
        except BaseException:  # a stop signal: let the create settle first
            if begun.wait(timeout=1.0):  # (the signal may have come while the thread started)
                done.wait(timeout=CREATE_SETTLE_S)
            if not done.is_set() and spec.name:
                with contextlib.suppress(*_SDK_ERRORS):
                    found = self._client.containers.get(spec.name)
                    if (found.labels or {}).get(OWNER_LABEL) == owner_mark():
                        found.remove(force=True)
            raise
        if failed:
            raise failed[0]

    def _stats(self, container_id: str) -> Mapping[str, Any]:
        """The daemon's stats of a running container, at once (`one-shot`, API 1.41) where the
        daemon can, else after its usual second sample."""
        api = self._client.api
        try:
            doc = api.stats(container_id, stream=False, one_shot=True)
        except docker.errors.InvalidVersion:
            doc = api.stats(container_id, stream=False)
        return doc if isinstance(doc, Mapping) else {}

    def run(
        self,
        spec: ContainerSpec,
        *,
        on_stderr: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Create, start and follow a container; call `on_stderr` with each stderr line as it comes;
        return its exit code, whole stdout and stderr, and the CPU time its cgroup used (read
        through the daemon's stats while it runs: CpuMeter). The container is removed in every
        case (also on Ctrl-C or a stop signal, which is re-raised). A timeout kills it and returns
        exit code 124.

        Raises UsageError when the daemon refuses the spec, DockerUnavailableError when it is down
        or goes away meanwhile (naming the container that may be left).
        """
        with self._created(spec) as container:
            return self._follow(container, spec, on_stderr, timeout_s)

    def _follow(
        self,
        container: Any,
        spec: ContainerSpec,
        on_stderr: Callable[[str], None] | None,
        timeout_s: float | None,
    ) -> RunResult:
        """`run` from the start of the created container to its end (the caller removes it)."""
        timed_out = threading.Event()
        meter = CpuMeter(lambda: self._stats(container.id))

        def _kill() -> None:
            timed_out.set()
            with contextlib.suppress(*_SDK_ERRORS):
                container.kill()

        timer = threading.Timer(timeout_s, _kill) if timeout_s else None
        err_lines: list[str] = []

        def _line(raw: bytes) -> None:
            text = raw.decode(errors="replace").rstrip("\r")
            err_lines.append(text)
            if on_stderr is not None:
                on_stderr(text)

        try:
            container.start()
            meter.start()
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
            meter.stop()
            out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        except docker.errors.APIError as exc:
            raise _refusal(f"docker run {spec.image}", exc) from exc
        except _SDK_ERRORS as exc:
            raise lost_daemon(f"docker run {spec.image}", exc, container.id) from exc
        finally:
            meter.stop()
            if timer is not None:
                timer.cancel()
        code = 124 if timed_out.is_set() else int(status.get("StatusCode", -1))
        if timed_out.is_set():
            err_lines.append(f"envbuilder: container killed after {timeout_s:g} s")
        return RunResult(
            exit_code=code,
            stdout=out,
            stderr="\n".join(err_lines),
            cpu_seconds=meter.cpu_seconds,
            cpu_samples=meter.samples,
        )

    def run_attached(
        self, spec: ContainerSpec, *, stop_timeout_s: float = 10.0, output_lines: int = 0
    ) -> AttachedRun:
        """Create the container (SDK), then `docker start --attach` with this process's stdout and
        stderr (and stdin when spec.interactive); return its exit code and, with `output_lines`,
        the tail of what it printed: the terminal gets the stream untouched, the tail is read
        back from the daemon's log of the container before it is removed (`docker logs --tail`;
        empty with a logging driver that keeps nothing readable). Through the CLI because
        only it gives a job a real terminal (raw mode, window size, Ctrl-C as a keystroke) and
        stdin, streams both outputs unbuffered and proxies signals; the SDK offers none of that.
        A stop signal (Ctrl-C, SIGTERM) is passed to the job; if it has not ended after
        `stop_timeout_s` it is stopped. Removed in every case; KeyboardInterrupt is re-raised.

        Raises UsageError: the daemon refused the container or would not start it (its reason,
        e.g. an unknown network or device, a refused ulimit); DockerUnavailableError: no docker
        CLI, or the daemon is down or went away (naming the container that may be left).
        """
        cli = next(iter(cli_candidates()), None)
        if cli is None:
            raise DockerUnavailableError("no docker CLI found on PATH", hint=DAEMON_HINT)
        with self._created(spec) as container:
            return self._attached(container, cli, spec, stop_timeout_s, output_lines)

    def _attached(
        self, container: Any, cli: str, spec: ContainerSpec, stop_timeout_s: float, output_lines: int
    ) -> AttachedRun:
        """`run_attached` from the created container to its end (the caller removes it)."""
        proc: subprocess.Popen[bytes] | None = None
        try:
            start = [cli, "start", "--attach", *(["--interactive"] if spec.interactive else []), container.id]
            proc = start_child(
                start,
                stdin=None if spec.interactive else subprocess.DEVNULL,
                env=engine_cli_env(),  # the daemon where _create made the container
            )
            try:
                proc.wait()
            except KeyboardInterrupt as stop:
                with contextlib.suppress(*_SDK_ERRORS):  # the CLI proxies SIGINT too; this covers -t
                    container.kill(signal=int(stop_signal(stop)))
                try:
                    proc.wait(timeout=stop_timeout_s)
                except (subprocess.TimeoutExpired, KeyboardInterrupt):
                    with contextlib.suppress(*_SDK_ERRORS):
                        container.stop(timeout=5)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=10.0)
                raise
            try:
                container.reload()
            except _SDK_ERRORS as exc:
                raise lost_daemon(f"docker inspect {container.id[:12]}", exc, container.id) from exc
            state = container.attrs.get("State") or {}
            if str(state.get("StartedAt", _NEVER_STARTED)).startswith(_NEVER_STARTED):
                why = state.get("Error") or "unknown reason"
                raise _refused_start(f"the Docker daemon would not start the container: {why}")
            return AttachedRun(
                exit_code=int(state.get("ExitCode", -1)),
                output=self._log_tail(container, output_lines),
                oom_killed=bool(state.get("OOMKilled")),
            )
        finally:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()

    @staticmethod
    def _log_tail(container: Any, lines: int) -> str:
        if lines <= 0:
            return ""
        try:
            raw: bytes = container.logs(stdout=True, stderr=True, tail=lines)
        except docker.errors.DockerException:  # a logging driver without read support ("none")
            return ""
        return raw.decode(errors="replace")

    def container_pids(self, name: str) -> tuple[int, ...]:
        """Host PIDs from `docker top` (the daemon's PID namespace, which is the host's); empty when
        the container is not there or not running. Raises DockerUnavailableError when the daemon
        is down."""
        try:
            listing = self._client.containers.get(name).top()
        except docker.errors.NotFound:
            return ()
        except docker.errors.APIError as exc:
            if exc.status_code == 409 or "is not running" in str(exc):
                return ()
            raise DockerUnavailableError(f"docker top {name} failed: {exc}") from exc
        except docker.errors.DockerException as exc:
            raise DockerUnavailableError(f"docker top {name} failed: {exc}") from exc
        titles = [str(t).upper() for t in listing.get("Titles") or ()]
        if "PID" not in titles:
            return ()
        col = titles.index("PID")
        rows = listing.get("Processes") or ()
        return tuple(pid for row in rows if (pid := ascii_int(str(row[col]))) is not None)

    def ulimit_refusal(self, image: str, ulimits: Sequence[Ulimit]) -> str | None:
        """Whether the runtime refuses these ulimits (rootless or nested Docker cannot raise
        RLIMIT_MEMLOCK): the refusal, or None. Probes with a container that never runs a program
        (its entrypoint does not exist), so it costs a create and a failed start, nothing more.
        Raises DockerUnavailableError when the daemon is down or the image is missing."""
        probe = ContainerSpec(
            image=image, entrypoint=(_PROBE_ENTRYPOINT,), ulimits=tuple(ulimits), purpose="ulimit-probe"
        )
        with self._created(probe) as container:
            try:
                container.start()
            except docker.errors.APIError as exc:
                text = str(exc)
                return text if "rlimit" in text.lower() else None
            except _SDK_ERRORS as exc:
                raise lost_daemon("the ulimit probe", exc, container.id) from exc
        return None


def _port_bindings(ports: Sequence[PortBinding]) -> dict[str, list[Any]]:
    """`-p` bindings as the SDK takes them: {"80/tcp": [(ip, port) or port or None, ...]} (one
    container port may be published on several host ports)."""
    out: dict[str, list[Any]] = {}
    for p in ports:
        host: Any = p.host_port if p.host_ip is None else (p.host_ip, p.host_port)
        out.setdefault(f"{p.container_port}/{p.protocol}", []).append(host)
    return out


def _named(spec: ContainerSpec) -> ContainerSpec:
    """The spec with its container's name fixed before the create (ownership.container_name)."""
    return spec if spec.name else replace(spec, name=container_name(spec.purpose))


class CpuMeter:
    """The CPU time a running container's cgroup has used, read from the daemon's stats (cgroup v1
    and v2 alike: Docker reads cpuacct.usage or cpu.stat's usage_usec) every `interval_s` on a
    thread of its own, so that the host has its own measure of the work done inside; the
    container cannot write it. The cgroup goes when the container ends, so the last reading is
    up to one interval short of the total. `read` returns the stats document; a failed reading
    is skipped, and a usage counts by cpu_reading's rule (0 included), Podman's meter's too."""

    def __init__(self, read: Callable[[], Mapping[str, Any]], interval_s: float = 0.5) -> None:
        self._read, self._interval = read, interval_s
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._max_ns = 0
        self.samples = 0

    def sample(self) -> None:
        try:
            doc = self._read()
        except Exception:  # a reading that fails (the container just ended) is no reading
            return
        usage = cpu_reading(((doc.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage"))
        if str(doc.get("read", "")).startswith(_NEVER_STARTED) or usage is None:
            return  # the daemon's answer for a container that is gone: zeros
        self._max_ns = max(self._max_ns, usage)
        self.samples += 1

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._done.wait(self._interval):
                return

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="envbuilder-cpu-meter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    @property
    def cpu_seconds(self) -> float | None:
        return self._max_ns / 1e9 if self.samples else None


_REFUSED_HINT = (
    "check what was asked of the container (--network, -v, -w, -u, -p, --name, --shm-size, "
    "--gpu-access, --gpus); `envbuilder doctor` shows the GPU access modes this host offers"
)


def _refused_start(message: str) -> EnvbuilderError:
    """A container the daemon would not start: no runtime for its GPU request is a host without
    GPU access (NoGpuError); anything else is what was asked (UsageError)."""
    if "could not select device driver" in message:
        return NoGpuError(message, hint="`envbuilder doctor` shows the GPU access modes this host offers")
    return UsageError(message, hint=_REFUSED_HINT)


def _refusal(what: str, exc: Any) -> EnvbuilderError:
    """The daemon answered, and refused: a 4xx is the request's fault (UsageError, exit 2), no GPU
    runtime is NoGpuError (5), another 5xx the daemon's (DockerUnavailableError, exit 7). Each is
    one line with the daemon's reason."""
    reason = (str(getattr(exc, "explanation", None) or exc).splitlines() or ["no reason given"])[0][:300]
    # A value the daemon cannot decode (a size past int64) comes back as a 500, but is the request's.
    malformed = reason.startswith("json: cannot unmarshal")
    client_error = isinstance(exc, docker.errors.NotFound) or exc.is_client_error() or malformed
    if client_error or "could not select device driver" in reason:
        return _refused_start(f"{what} failed: the Docker daemon refused it: {reason}")
    return DockerUnavailableError(f"{what} failed: {reason}", hint=DAEMON_HINT)


def _image_info(attrs: Mapping[str, Any]) -> ImageInfo:
    config = attrs.get("Config") or {}
    return ImageInfo(
        id=str(attrs["Id"]),
        tags=tuple(attrs.get("RepoTags") or ()),
        repo_digests=tuple(attrs.get("RepoDigests") or ()),
        labels=dict(config.get("Labels") or {}),
        env=tuple(config.get("Env") or ()),
        size=int(attrs.get("Size") or 0),
    )


def _split_ref(ref: str) -> tuple[str, str | None]:
    """`host:5000/a/b:tag` -> (`host:5000/a/b`, `tag`); a digest ref keeps `sha256:...` as tag."""
    if "@" in ref:
        repo, _, digest = ref.partition("@")
        return repo, digest
    head, sep, tail = ref.rpartition(":")
    if sep and "/" not in tail:
        return head, tail
    return ref, None
