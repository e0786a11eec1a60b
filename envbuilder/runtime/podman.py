"""Podman: images in Podman's own store, built by `podman build`, containers started by the podman
CLI (daemonless; rootless when envbuilder runs as a user), GPUs through CDI.

Builds: `podman build` (Buildah), not BuildKit. Buildah reads the rendered Dockerfile as it is
(`RUN --mount=type=cache|bind|secret`, `--secret id=,src=`, `--build-context`), and Podman has no
BuildKit (its Docker-compatible API builds with Buildah too), so there is nothing to gain from one.
Image IDs: Podman's `Id` is the image config's digest, the same value Docker reports for the same
image (a `docker save | podman load` keeps it); this module gives it as `sha256:<hex>`, as Docker
does, so a certificate binds a Podman image exactly as a Docker one. Podman's `Digest` is the
manifest's; its `localhost/NAME@sha256:...` RepoDigests of never-pushed images are not registry
digests and are left out. Names without a registry live as `localhost/NAME`; they are given back
without that prefix (the short name finds them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envbuilder.engine.buildkit import BUILD_NETWORKS, BuildKitCli, secret_flag
from envbuilder.engine.container import ContainerSpec, Ulimit, docker_arguments, docker_flags
from envbuilder.engine.interface import Engine
from envbuilder.engine.model import (
    AttachedRun,
    BuildResult,
    BuildSecret,
    DaemonInfo,
    ImageInfo,
    RunResult,
    cpu_reading,
)
from envbuilder.engine.ownership import container_name, owner_labels
from envbuilder.engine.progress import BuildEvent, StepRecord
from envbuilder.errors import (
    BuildFailedError,
    ContainerRuntimeError,
    EnvbuilderError,
    NoGpuError,
    RegistryError,
    UsageError,
    log_tail,
)
from envbuilder.host.access import AccessMode, find_cdi_specs
from envbuilder.lifecycle import kill_group, scratch_dir, start_child, stop_signal
from envbuilder.runtime.base import Availability, GpuGrant, ImageStoreRuntime
from envbuilder.runtime.docker import docker_grant, grant_docker_flags
from envbuilder.runtime.gpu_selection import GpuSelection
from envbuilder.typed import ascii_int

PODMAN_HINT = (
    "install Podman (Debian/Ubuntu: apt-get install podman; RHEL/Fedora: dnf install podman), "
    "or set ENVBUILDER_PODMAN=/path/to/podman; or use --runtime docker"
)
# Podman 4.3 reads CDI specs from these two folders only (no cdi_spec_dirs setting before 4.4).
CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
_NOT_FOUND = ("image not known", "no such image", "invalid reference format", "unable to find")
_NO_CONTAINER = ("no such container", "no container with name or id")
_NEVER_STARTED = "0001-01-01"
_PROBE_ENTRYPOINT = "/envbuilder-ulimit-probe-does-not-exist"
_STEP = re.compile(r"^STEP (?P<k>\d+)/(?P<n>\d+): (?P<instr>.*)$")
_CACHED = re.compile(r"^--> Using cache [0-9a-f]+")
Say = Callable[[str], None]


def find_podman() -> str:
    """The podman program: ENVBUILDER_PODMAN, else `podman` on PATH. Raises ContainerRuntimeError."""
    override = os.environ.get("ENVBUILDER_PODMAN")
    found = override if override and os.access(override, os.X_OK) else shutil.which(override or "podman")
    if found is None:
        where = f"ENVBUILDER_PODMAN={override} is not an executable" if override else "podman is not on PATH"
        raise ContainerRuntimeError(f"Podman is not installed ({where})", hint=PODMAN_HINT)
    return found


def podman_flags(spec: ContainerSpec) -> list[str]:
    """The podman create/run flags of `spec`, without the image and command: Docker's flags
    (engine/container.py docker_flags: Podman takes the same), except the Container Toolkit's
    `--gpus`, which Podman 4 does not have: GPUs come through CDI (`--device nvidia.com/gpu=...`).
    Raises UsageError for a spec with a `--gpus` request."""
    if spec.gpus is not None:
        raise UsageError(
            "Podman cannot take the Container Toolkit's --gpus request (toolkit access mode)",
            hint="use --gpu-access cdi with --runtime podman (`envbuilder gpu cdi-spec` writes the spec "
            "Podman reads from /etc/cdi or /var/run/cdi)",
        )
    return docker_flags(spec)


def podman_run_argv(spec: ContainerSpec, program: str = "podman") -> list[str]:
    """The equivalent `podman run --rm` command line (recorded in certificates, shown to users)."""
    return [program, "run", "--rm", *podman_flags(spec), *docker_arguments(spec)]


def podman_build_argv(
    program: str,
    context: Path,
    dockerfile: Path,
    iidfile: Path,
    *,
    secrets: Sequence[BuildSecret] = (),
    build_args: Mapping[str, str] | None = None,
    build_contexts: Mapping[str, Path] | None = None,
    no_cache: bool = False,
    network: str | None = None,
    source_date_epoch: int | None = None,
) -> list[str]:
    """`podman build` of the rendered Dockerfile, untagged, its image ID written to `iidfile`.
    `network` is one of BUILD_NETWORKS ("default": Podman's own). `source_date_epoch`: Buildah's
    `--timestamp` (the image's and its files' times). Raises UsageError (a network or secret
    that cannot be given)."""
    # --layers=false: Buildah 1.28 keys a RUN step's cached layer on its text alone, not on what
    # its `--mount=type=bind` sources hold (seen here: a changed lock/framework reused the old
    # install layer, and only the installed-set check caught it). One layer per build, no stale
    # step; the uv cache mount still makes a rebuild's installs fast.
    argv = [program, "build", "--layers=false", "--iidfile", str(iidfile), "-f", str(dockerfile)]
    for s in secrets:
        argv += ["--secret", secret_flag(s)]
    for k, v in sorted((build_args or {}).items()):
        argv += ["--build-arg", f"{k}={v}"]
    for k, p in sorted((build_contexts or {}).items()):
        argv += ["--build-context", f"{k}={p}"]
    if no_cache:
        argv.append("--no-cache")
    if network is not None and network not in BUILD_NETWORKS:
        raise UsageError(f"build network {network!r} is not one of {', '.join(BUILD_NETWORKS)}")
    if network not in (None, "default"):
        argv += ["--network", str(network)]
    if source_date_epoch is not None:
        argv += ["--timestamp", str(int(source_date_epoch))]
    argv.append(str(context))
    return argv


def image_info(doc: Mapping[str, Any]) -> ImageInfo:
    """One `podman image inspect` object as envbuilder's ImageInfo (see the module docstring:
    the ID with `sha256:`, names without `localhost/`, no local manifest digests)."""
    raw_id = str(doc.get("Id") or "")
    config = doc.get("Config") or {}
    return ImageInfo(
        id=raw_id if raw_id.startswith("sha256:") else f"sha256:{raw_id}",
        tags=tuple(_short(t) for t in doc.get("RepoTags") or ()),
        repo_digests=tuple(d for d in doc.get("RepoDigests") or () if not str(d).startswith("localhost/")),
        labels=dict(config.get("Labels") or doc.get("Labels") or {}),
        env=tuple(config.get("Env") or ()),
        size=int(doc.get("Size") or 0),
    )


def _short(name: str) -> str:
    return name.removeprefix("localhost/")


@dataclass(slots=True)
class PodmanProgress:
    """`podman build`'s output (`STEP k/n: INSTR`, `--> Using cache ID`, `--> ID`, `COMMIT`) as
    envbuilder's build events: each step starts at its STEP line and ends (done or cached) at the
    next one or at COMMIT."""

    steps: list[StepRecord]
    tail: list[str]
    _current: StepRecord | None = None
    _started: float = 0.0

    @classmethod
    def new(cls) -> PodmanProgress:
        return cls(steps=[], tail=[])

    def feed(self, raw: str) -> list[BuildEvent]:
        line = raw.rstrip("\r\n")
        self.tail = [*self.tail[-199:], line]
        events: list[BuildEvent] = []
        step = _STEP.match(line)
        if step:
            events += self._end("done")
            k, n = int(step["k"]), int(step["n"])
            rec = StepRecord(vertex=k, name=f"[{k}/{n}] {step['instr']}", index=k, total=n)
            self.steps.append(rec)
            self._current, self._started = rec, time.monotonic()
            return [*events, self._event("start", rec)]
        if _CACHED.match(line) and self._current is not None:
            return self._end("cached")
        if line == "COMMIT" or line.startswith("COMMIT "):
            return self._end("done")
        if self._current is not None and line:
            return [self._event("log", self._current, text=line)]
        return events

    def fail(self) -> list[BuildEvent]:
        return self._end("error")

    def _end(self, state: str) -> list[BuildEvent]:
        rec, self._current = self._current, None
        if rec is None or rec.state != "running":
            return []
        rec.state = "cached" if state == "cached" else "error" if state == "error" else "done"
        rec.seconds = None if state == "cached" else round(time.monotonic() - self._started, 3)
        return [self._event(rec.state, rec, seconds=rec.seconds)]

    @staticmethod
    def _event(kind: Any, rec: StepRecord, *, seconds: float | None = None, text: str = "") -> BuildEvent:
        return BuildEvent(
            kind=kind,
            vertex=rec.vertex,
            name=rec.name,
            index=rec.index,
            total=rec.total,
            seconds=seconds,
            text=text,
        )


class PodmanEngine:
    """The container engine behind `--runtime podman` (envbuilder.engine.Engine), through the
    podman CLI. Every method raises ContainerRuntimeError when podman is missing or fails (exit
    24), where DockerEngine says the daemon is down."""

    def __init__(self, program: str | None = None) -> None:
        self._program = program

    @property
    def program(self) -> str:
        if self._program is None:
            self._program = find_podman()
        return self._program

    def _podman(
        self, *args: str, timeout: float | None = 600, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """One podman command, output captured. Raises ContainerRuntimeError (`check`: a non-zero
        exit, with podman's first error line)."""
        argv = [self.program, *args]
        try:
            with start_child(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                stdin=subprocess.DEVNULL,
            ) as child:  # fmt: skip
                try:
                    out, err = child.communicate(timeout=timeout)
                except BaseException:  # a timeout included: as subprocess.run, killed (and reaped)
                    child.kill()
                    raise
            proc = subprocess.CompletedProcess(argv, child.returncode, out, err)
        except subprocess.TimeoutExpired as exc:
            raise ContainerRuntimeError(f"podman {args[0]} did not answer within {timeout:g} s") from exc
        except OSError as exc:
            raise ContainerRuntimeError(f"cannot run {self.program}: {exc}", hint=PODMAN_HINT) from exc
        if check and proc.returncode != 0:
            raise ContainerRuntimeError(f"podman {' '.join(args[:2])} failed: {_first_error(proc.stderr)}")
        return proc

    # ------------------------------------------------------------------ "daemon"

    def ping(self) -> None:
        """Podman has no daemon: that the program answers. Raises ContainerRuntimeError."""
        self._podman("version", "--format", "{{.Client.Version}}", timeout=60)

    def daemon_info(self) -> DaemonInfo:
        """`podman info`: version, OCI runtime, storage; `id` names the store (root or the user's)."""
        doc = json.loads(self._podman("info", "--format", "json", timeout=60).stdout or "{}")
        host, store = doc.get("host") or {}, doc.get("store") or {}
        runtime = str((host.get("ociRuntime") or {}).get("name") or "")
        rootless = bool((host.get("security") or {}).get("rootless"))
        return DaemonInfo(
            server_version=str((doc.get("version") or {}).get("Version") or ""),
            runtimes=(runtime,) if runtime else (),
            default_runtime=runtime,
            cdi_spec_dirs=CDI_SPEC_DIRS,
            storage_driver=str(store.get("graphDriverName") or ""),
            id=f"podman:{'rootless' if rootless else 'root'}:{store.get('graphRoot') or ''}",
        )

    # ------------------------------------------------------------------ builds

    def buildkit_cli(self) -> BuildKitCli:
        """Podman builds with Buildah, which reads the same Dockerfile features envbuilder renders
        for BuildKit (cache, bind and secret mounts): the podman program stands for the client."""
        version = self._podman("version", "--format", "{{.Client.Version}}", timeout=60).stdout.strip()
        return BuildKitCli(path=self.program, kind="docker-buildkit", version=f"podman {version}")

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
        """`podman build`, untagged. Raises ContainerRuntimeError, BuildFailedError, UsageError;
        Ctrl-C stops it (SIGINT to podman's process group) and is re-raised."""
        say = on_event or (lambda _e: None)
        progress = PodmanProgress.new()
        started = time.monotonic()
        with scratch_dir("podman-build") as tmp:
            iidfile = tmp / "iid"
            argv = podman_build_argv(
                self.program, context, dockerfile, iidfile, secrets=secrets, build_args=build_args,
                build_contexts=build_contexts, no_cache=no_cache, network=network,
                source_date_epoch=source_date_epoch,
            )  # fmt: skip
            proc = start_child(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                errors="replace", bufsize=1, start_new_session=True,
            )  # fmt: skip
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    for event in progress.feed(line):
                        say(event)
                code = proc.wait()
            except BaseException:
                kill_group(proc, first=signal.SIGINT)
                raise
            image_id = iidfile.read_text().strip() if iidfile.is_file() else ""
        if code != 0 or not image_id:
            for event in progress.fail():
                say(event)
            failed = next((s for s in progress.steps if s.state == "error"), None)
            where = f" at step {failed.name}"[:200] if failed else ""
            raise BuildFailedError(
                f"podman build failed (exit {code}){where}",
                hint="fix the failing step (its log above) and build again; nothing was tagged",
                log=log_tail(progress.tail),
            )
        return BuildResult(
            image_id=image_id if image_id.startswith("sha256:") else f"sha256:{image_id}",
            seconds=round(time.monotonic() - started, 3),
            steps=tuple(progress.steps),
            log_tail=log_tail(progress.tail),
        )

    def prune_build_cache(self) -> int:
        """`podman image prune --force`: the dangling images a build leaves (Buildah's layer cache);
        Podman does not report the bytes, so 0."""
        self._podman("image", "prune", "--force")
        return 0

    # ------------------------------------------------------------------ images

    def inspect_image(self, ref: str) -> ImageInfo | None:
        """The local image `ref` (name, name@digest or ID), or None."""
        found = self._inspect([ref])
        return found[0].named_as(ref) if found else None

    def _inspect(self, refs: Sequence[str]) -> list[ImageInfo]:
        proc = self._podman("image", "inspect", "--format", "json", *refs, check=False)
        if proc.returncode != 0:
            if any(s in proc.stderr.lower() for s in _NOT_FOUND):
                return []
            raise ContainerRuntimeError(f"podman image inspect failed: {_first_error(proc.stderr)}")
        return [image_info(d) for d in json.loads(proc.stdout or "[]")]

    def list_images(self, repository: str) -> tuple[ImageInfo, ...]:
        """The local images tagged in `repository`."""
        ids: list[str] = []
        for name in dict.fromkeys((repository, f"localhost/{repository}")):
            out = self._podman(
                "images", "--no-trunc", "--format", "{{.ID}}", "--filter", f"reference={name}"
            ).stdout
            ids += [i for i in out.split() if i not in ids]
        return tuple(self._inspect(ids)) if ids else ()

    def tag(self, image: str, ref: str) -> None:
        self._podman("tag", image, ref)

    def remove_image(self, ref: str, *, force: bool = False) -> bool:
        """False when it was not there."""
        proc = self._podman("rmi", *(["--force"] if force else []), ref, check=False)
        if proc.returncode == 0:
            return True
        if any(s in proc.stderr.lower() for s in _NOT_FOUND):
            return False
        raise ContainerRuntimeError(f"podman rmi {ref} failed: {_first_error(proc.stderr)}")

    def push(self, ref: str) -> str:
        """`podman push` with Podman's credentials (auth.json, then the Docker config); the
        manifest digest. Raises RegistryError."""
        with scratch_dir("podman-push") as tmp:
            digestfile = tmp / "digest"
            proc = self._podman("push", "--digestfile", str(digestfile), ref, check=False)
            if proc.returncode != 0:
                raise RegistryError(
                    f"push of {ref} failed: {_first_error(proc.stderr)}",
                    hint="check the registry address and `podman login` credentials (plain-HTTP registries: "
                    "mark them insecure in registries.conf)",
                )
            digest = digestfile.read_text().strip() if digestfile.is_file() else ""
        if not digest:
            raise RegistryError(f"push of {ref} reported no digest")
        return digest

    def pull(self, ref: str) -> ImageInfo:
        proc = self._podman("pull", "--quiet", ref, check=False)
        if proc.returncode != 0:
            raise RegistryError(f"pull of {ref} failed: {_first_error(proc.stderr)}")
        info = self.inspect_image(ref)
        if info is None:
            raise RegistryError(f"pull of {ref} reported success but the image is not there")
        return info

    def save(self, ref: str, dest: Path) -> Path:
        """`podman save` as a docker-archive (what `docker save` writes) into `dest`."""
        self._podman("save", "--format", "docker-archive", "-o", str(dest), ref)
        return dest

    # ------------------------------------------------------------------ containers

    def create_argv(self, spec: ContainerSpec) -> list[str]:
        """`podman create` of `spec`: named and labelled as envbuilder's (engine/ownership.py)."""
        named = spec if spec.name else replace(spec, name=container_name(spec.purpose))
        owned = replace(named, labels=owner_labels(spec.purpose, spec.labels))
        return [self.program, "create", *podman_flags(owned), *docker_arguments(owned)]

    @contextlib.contextmanager
    def _created(self, spec: ContainerSpec) -> Iterator[str]:
        """The container of `spec`, created, and removed when the block ends (whatever ends it).
        Raises UsageError / NoGpuError when podman refuses it."""
        argv = self.create_argv(spec)
        name = argv[argv.index("--name") + 1]
        try:
            proc = self._podman(*argv[1:], check=False)
            if proc.returncode != 0:
                raise _refused(f"podman create {spec.image}", proc.stderr)
            yield name
        finally:
            self._podman("rm", "--force", "--time", "0", name, check=False, timeout=120)

    def _state(self, name: str) -> Mapping[str, Any]:
        proc = self._podman("container", "inspect", "--format", "{{json .State}}", name, check=False)
        try:
            return dict(json.loads(proc.stdout)) if proc.returncode == 0 else {}
        except ValueError:
            return {}

    def _started(self, name: str, stderr: str) -> Mapping[str, Any]:
        """The container's state; raises what a container that never started means."""
        state = self._state(name)
        if str(state.get("StartedAt", _NEVER_STARTED)).startswith(_NEVER_STARTED):
            why = state.get("Error") or _first_error(stderr)
            raise _refused("podman would not start the container", str(why))
        return state

    def run(
        self,
        spec: ContainerSpec,
        *,
        on_stderr: Callable[[str], None] | None = None,
        timeout_s: float | None = None,
    ) -> RunResult:
        """Create, start and follow (`podman start --attach`); stderr lines to `on_stderr` as they
        come; the cgroup's CPU time from `podman stats`. Removed in every case; killed after
        `timeout_s` (exit 124). Raises UsageError/NoGpuError (refused), ContainerRuntimeError."""
        with self._created(spec) as name:
            timed_out = threading.Event()
            meter = _CpuMeter(lambda: self._cpu_nano(name))
            proc = start_child(
                [self.program, "start", "--attach", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            err_lines: list[str] = []
            out_chunks: list[bytes] = []

            def read_out() -> None:
                assert proc.stdout is not None
                out_chunks.append(proc.stdout.read())

            def kill() -> None:
                timed_out.set()
                self._podman("kill", name, check=False, timeout=60)

            reader = threading.Thread(target=read_out, daemon=True)
            timer = threading.Timer(timeout_s, kill) if timeout_s else None
            try:
                reader.start()
                meter.start()
                if timer is not None:
                    timer.daemon = True
                    timer.start()
                assert proc.stderr is not None
                for raw in proc.stderr:
                    text = raw.decode(errors="replace").rstrip("\r\n")
                    err_lines.append(text)
                    if on_stderr is not None:
                        on_stderr(text)
                code = proc.wait()
                reader.join()
            except BaseException:
                self._podman("kill", name, check=False, timeout=60)
                kill_group(proc)
                raise
            finally:
                meter.stop()
                if timer is not None:
                    timer.cancel()
            state = self._started(name, "\n".join(err_lines))
            if timed_out.is_set():
                code = 124
                err_lines.append(f"envbuilder: container killed after {timeout_s:g} s")
            else:
                code = int(state.get("ExitCode", code))
            return RunResult(
                exit_code=code,
                stdout=b"".join(out_chunks).decode(errors="replace"),
                stderr="\n".join(err_lines),
                cpu_seconds=meter.cpu_seconds,
                cpu_samples=meter.samples,
            )

    def _cpu_nano(self, name: str) -> int | None:
        proc = self._podman(
            "stats", "--no-stream", "--no-reset", "--format", "{{.CPUNano}}", name, check=False, timeout=30
        )
        text = proc.stdout.strip()
        return ascii_int(text) if proc.returncode == 0 else None

    def run_attached(
        self, spec: ContainerSpec, *, stop_timeout_s: float = 10.0, output_lines: int = 0
    ) -> AttachedRun:
        """`podman start --attach` with this process's terminal (stdin when spec.interactive).
        Ctrl-C reaches the job as SIGINT (stopped after `stop_timeout_s`), then is re-raised.
        Removed in every case. Raises UsageError/NoGpuError (refused), ContainerRuntimeError."""
        with self._created(spec) as name:
            start = [
                self.program,
                "start",
                "--attach",
                *(["--interactive"] if spec.interactive else []),
                name,
            ]
            proc = start_child(start, stdin=None if spec.interactive else subprocess.DEVNULL)
            try:
                proc.wait()
            except KeyboardInterrupt as stop:
                self._podman("kill", "--signal", str(stop_signal(stop)), name, check=False, timeout=60)
                try:
                    proc.wait(timeout=stop_timeout_s)
                except (subprocess.TimeoutExpired, KeyboardInterrupt):
                    self._podman("stop", "--time", "5", name, check=False, timeout=60)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=10.0)
                raise
            finally:
                if proc.poll() is None:
                    with contextlib.suppress(OSError):
                        proc.kill()
            state = self._started(name, "(podman's reason is printed above)")
            tail = ""
            if output_lines > 0:
                tail = self._podman("logs", "--tail", str(output_lines), name, check=False).stdout
            return AttachedRun(
                exit_code=int(state.get("ExitCode", -1)), output=tail, oom_killed=bool(state.get("OOMKilled"))
            )

    def container_pids(self, name: str) -> tuple[int, ...]:
        """Host PIDs (`podman top NAME hpid`); empty when it is not there or not running."""
        proc = self._podman("top", name, "hpid", check=False, timeout=60)
        if proc.returncode != 0:
            return ()
        return tuple(pid for w in proc.stdout.split()[1:] if (pid := ascii_int(w)) is not None)

    def ulimit_refusal(self, image: str, ulimits: Sequence[Ulimit]) -> str | None:
        """Podman's refusal of these ulimits (rootless Podman cannot raise RLIMIT_MEMLOCK past the
        user's), or None: a container that never runs a program is created and started."""
        probe = ContainerSpec(
            image=image, entrypoint=(_PROBE_ENTRYPOINT,), ulimits=tuple(ulimits), purpose="ulimit-probe"
        )
        with self._created(probe) as name:
            proc = self._podman("start", name, check=False)
            text = proc.stderr.strip()
            return _first_error(text) if proc.returncode != 0 and "rlimit" in text.lower() else None


class _CpuMeter:
    """The container cgroup's CPU time (`podman stats` CPUNano), read every `interval_s` while it
    runs; the last reading is up to one interval short of the total. A reading counts by
    cpu_reading's rule (0 included), Docker's meter's too."""

    def __init__(self, read: Callable[[], int | None], interval_s: float = 0.5) -> None:
        self._read, self._interval = read, interval_s
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._max_ns = 0
        self.samples = 0

    def _loop(self) -> None:
        while not self._done.is_set():
            with contextlib.suppress(Exception):
                ns = cpu_reading(self._read())
                if ns is not None:
                    self._max_ns = max(self._max_ns, ns)
                    self.samples += 1
            self._done.wait(self._interval)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="envbuilder-podman-cpu", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=35.0)

    @property
    def cpu_seconds(self) -> float | None:
        return self._max_ns / 1e9 if self.samples else None


def _first_error(stderr: str) -> str:
    """Podman's reason: its `Error: ...` line, else the last non-empty line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("Error:")]
    line = (errors or lines or ["no reason given"])[-1]
    return line.removeprefix("Error: ")[:300]


def _refused(what: str, stderr: str) -> UsageError | NoGpuError:
    """Podman refused a container: a CDI device it cannot resolve is a host without that GPU
    access (NoGpuError); anything else is what was asked (UsageError)."""
    reason = _first_error(stderr)
    if "cdi" in reason.lower() or "unresolvable" in reason.lower():
        return NoGpuError(
            f"{what} failed: {reason}",
            hint="write the CDI spec (`envbuilder gpu cdi-spec`) into /etc/cdi or /var/run/cdi; "
            "`envbuilder doctor` shows the GPU access modes this host offers",
        )
    return UsageError(
        f"{what} failed: podman refused it: {reason}",
        hint="check what was asked of the container (--network, -v, -w, -u, -p, --shm-size, --gpu-access)",
    )


def cdi_mode(podman: Availability, specs: Sequence[str]) -> AccessMode:
    """Podman's cdi mode: offered when podman answers and a spec in CDI_SPEC_DIRS defines
    nvidia.com/gpu (Podman reads them itself: no daemon setting to check)."""
    found = (
        "spec " + ", ".join(specs)
        if specs
        else f"no CDI spec for nvidia.com/gpu in {' or '.join(CDI_SPEC_DIRS)}"
    )
    if not podman.ok:
        return AccessMode(
            name="cdi", available=False, detail=f"{podman.reason}; {found}", cdi_specs=tuple(specs)
        )
    return AccessMode(name="cdi", available=bool(specs), detail=found, cdi_specs=tuple(specs))


class PodmanRuntime(ImageStoreRuntime):
    """Podman: images in Podman's own store (root's, or the user's when rootless); GPUs through
    CDI (`--device nvidia.com/gpu=all`, from the spec `envbuilder gpu cdi-spec` writes)."""

    name = "podman"
    modes: tuple[str, ...] = ("cdi",)
    runs = "image"
    store = "Podman's store"

    def __init__(self, engine: Engine | None = None, binary: str | None = None) -> None:
        self._engine = engine
        self._binary = binary

    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = PodmanEngine(self._binary)
        return self._engine

    def available(self) -> Availability:
        try:
            info = self.engine().daemon_info()
        except EnvbuilderError as exc:
            return Availability(ok=False, reason=exc.message, hint=exc.hint)
        return Availability(ok=True, reason=f"Podman {info.server_version} ({info.id})")

    def probe_modes(self) -> tuple[AccessMode, ...]:
        """cdi: a spec defining nvidia.com/gpu in Podman's CDI folders, and a podman that answers."""
        return (cdi_mode(self.available(), find_cdi_specs(CDI_SPEC_DIRS)),)

    def grant(self, mode: AccessMode, selection: GpuSelection | None = None) -> GpuGrant:
        """cdi: nvidia.com/gpu=all, or nvidia.com/gpu=INDEX for each selected GPU (the names
        `envbuilder gpu cdi-spec` and nvidia-ctk write). Raises UsageError for another mode."""
        if mode.name != "cdi":
            raise UsageError(
                f"GPU access mode {mode.name!r} is not one of the podman runtime's",
                hint="with --runtime podman use --gpu-access cdi (or auto, or none)",
            )
        return docker_grant(mode, selection)

    def mode_flags(self, mode: AccessMode) -> tuple[str, ...]:
        return grant_docker_flags(self.grant(mode)) if mode.available and mode.name in self.modes else ()

    def argv(self, spec: ContainerSpec) -> list[str]:
        return podman_run_argv(spec)
