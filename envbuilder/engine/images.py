"""Daemon, images and builds: the SDK for ping/inspect/tag/push/pull/save, the BuildKit CLI for
builds (cache mounts, secrets), found by `find_buildkit_cli`. Part of the engine boundary."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from envbuilder.engine.progress import BuildEvent, ProgressParser, StepRecord, step_instruction
from envbuilder.errors import (
    BuildFailedError,
    BuildKitMissingError,
    DockerUnavailableError,
    RegistryError,
)

# The SDK is a dependency, but a broken or partial install must not take down the commands that never
# talk to Docker (doctor, resolve, render, matrix): they import this package too.
_SDK_MISSING: str | None = None
try:
    import docker
    import docker.errors
except ImportError as _exc:
    _SDK_MISSING = str(_exc)


def require_sdk() -> None:
    """Raises DockerUnavailableError when the docker Python SDK cannot be imported."""
    if _SDK_MISSING is not None:
        raise DockerUnavailableError(
            f"the docker Python SDK is not installed ({_SDK_MISSING})",
            hint="pip install docker (envbuilder depends on it)",
        )


DAEMON_HINT = (
    "start the Docker daemon (e.g. `sudo systemctl start docker`, or `make services` in a checkout) "
    "or point DOCKER_HOST at a running one"
)
_BUILDKIT_HINT = (
    "install the buildx plugin (Docker's `docker-buildx-plugin`, or `docker-buildx` on Debian 13+), "
    "or Debian 12's `docker.io` (its /usr/bin/docker 20.10 builds with DOCKER_BUILDKIT=1); "
    "ENVBUILDER_DOCKER_CLI=/path/to/docker picks a client"
)
_SECRET_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


BUILD_NETWORKS = ("default", "host", "none")


@dataclass(frozen=True, slots=True, kw_only=True)
class DaemonInfo:
    server_version: str
    runtimes: tuple[str, ...]  # registered OCI runtimes, e.g. ("runc", "nvidia")
    default_runtime: str
    cdi_spec_dirs: tuple[str, ...]  # where the daemon looks for CDI specs (empty: CDI off)
    storage_driver: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildKitCli:
    """A docker client that can build with BuildKit."""

    path: str
    kind: Literal["buildx", "docker-buildkit"]  # `docker buildx build` | DOCKER_BUILDKIT=1 build
    version: str

    def build_argv(self) -> list[str]:
        if self.kind == "buildx":
            return [self.path, "buildx", "build", "--load"]
        return [self.path, "build"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildSecret:
    """A BuildKit secret: `RUN --mount=type=secret,id=ID` sees the file's content, no layer does."""

    id: str
    src: Path


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildResult:
    image_id: str
    seconds: float
    steps: tuple[StepRecord, ...]  # Dockerfile instructions in order, with cached/done state
    log_tail: tuple[str, ...]

    @property
    def cached_steps(self) -> int:
        return sum(1 for s in self.steps if s.state == "cached")


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    repo_digests: tuple[str, ...]  # name@sha256:... (empty for a never-pushed/pulled image)
    labels: Mapping[str, str] = field(default_factory=dict)
    env: tuple[str, ...] = ()
    size: int = 0  # bytes, as `docker images` reports


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    exit_code: int
    stdout: str
    stderr: str


ProgressCallback = Callable[[BuildEvent], None]


def _client(timeout: int = 10) -> Any:
    """A docker SDK client from the usual environment. Raises DockerUnavailableError."""
    require_sdk()
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerUnavailableError(
            f"cannot reach the Docker daemon: {exc}".splitlines()[0], hint=DAEMON_HINT
        ) from exc
    return client


def daemon_info() -> DaemonInfo:
    """Ping the daemon and describe it. Raises DockerUnavailableError when it is unreachable."""
    return DockerEngine().daemon_info()


def cli_candidates() -> list[str]:
    override = os.environ.get("ENVBUILDER_DOCKER_CLI")
    if override:
        return [override]
    found = [shutil.which("docker"), "/usr/bin/docker", "/usr/local/bin/docker"]
    out: list[str] = []
    for c in found:
        if c and Path(c).is_file() and os.path.realpath(c) not in map(os.path.realpath, out):
            out.append(c)
    return out


def _probe(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=20, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def find_buildkit_cli() -> BuildKitCli:
    """The first docker CLI that can build with BuildKit: buildx, else a client that honours
    DOCKER_BUILDKIT=1 (its `build --help` offers --secret). Raises BuildKitMissingError."""
    tried: list[str] = []
    for path in cli_candidates():
        tried.append(path)
        out = _probe([path, "buildx", "version"])
        if out is not None:
            return BuildKitCli(path=path, kind="buildx", version=out.strip().split("\n")[0])
        env = {**os.environ, "DOCKER_BUILDKIT": "1"}
        help_text = _probe([path, "build", "--help"], env)
        if help_text and "--secret" in help_text:
            version = _probe([path, "version", "--format", "{{.Client.Version}}"], env) or "?"
            return BuildKitCli(path=path, kind="docker-buildkit", version=version.strip())
    raise BuildKitMissingError(
        "no docker client that can build with BuildKit (needed for cache mounts and secrets); "
        f"tried: {', '.join(tried) or 'no docker on PATH'}",
        hint=_BUILDKIT_HINT,
    )


class DockerEngine:
    """The real engine. Every method raises DockerUnavailableError when the daemon is down."""

    def __init__(self, cli: BuildKitCli | None = None) -> None:
        self._cli = cli
        self._docker: Any = None

    @property
    def client(self) -> Any:
        if self._docker is None:
            self._docker = _client(timeout=600)
        return self._docker

    def ping(self) -> None:
        """Raises DockerUnavailableError when the daemon cannot be reached."""
        _ = self.client

    def daemon_info(self) -> DaemonInfo:
        """Describe the daemon. Raises DockerUnavailableError."""
        info = self.client.info()
        return DaemonInfo(
            server_version=str(info.get("ServerVersion", "")),
            runtimes=tuple(sorted((info.get("Runtimes") or {}).keys())),
            default_runtime=str(info.get("DefaultRuntime", "")),
            cdi_spec_dirs=tuple(info.get("CDISpecDirs") or ()),
            storage_driver=str(info.get("Driver", "")),
        )

    def buildkit_cli(self) -> BuildKitCli:
        """The BuildKit-capable CLI (found once). Raises BuildKitMissingError."""
        if self._cli is None:
            self._cli = find_buildkit_cli()
        return self._cli

    # ------------------------------------------------------------------ build

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
        on_event: ProgressCallback | None = None,
    ) -> BuildResult:
        """Build WITHOUT a tag (the caller tags after success, so a failure leaves none).

        Raises DockerUnavailableError, BuildKitMissingError (also when build_contexts need buildx),
        BuildFailedError (message ends with the last 40 log lines); on KeyboardInterrupt kills the
        build's process group and re-raises.
        """
        self.ping()
        cli = self.buildkit_cli()
        if build_contexts and cli.kind != "buildx":
            raise BuildKitMissingError(
                f"named build contexts need buildx; {cli.path} {cli.version} has none",
                hint=_BUILDKIT_HINT,
            )
        with tempfile.TemporaryDirectory(prefix="envbuilder-build-") as tmp:
            iidfile = Path(tmp) / "iid"
            argv = [*cli.build_argv(), "--progress=plain", "--iidfile", str(iidfile)]
            argv += ["-f", str(dockerfile)]
            for s in secrets:
                if not _SECRET_ID.match(s.id):
                    raise BuildFailedError(f"invalid build secret id {s.id!r}")
                argv += ["--secret", f"id={s.id},src={s.src}"]
            for k, v in sorted((build_args or {}).items()):
                argv += ["--build-arg", f"{k}={v}"]
            for k, p in sorted((build_contexts or {}).items()):
                argv += ["--build-context", f"{k}={p}"]
            if no_cache:
                argv.append("--no-cache")
            if network is not None:
                # host: a daemon without a bridge (dockerd --bridge=none) cannot give RUN steps
                # the default network; none: prove a wheelhouse build needs no network at all.
                if network not in BUILD_NETWORKS:
                    raise BuildFailedError(f"invalid build network {network!r}")
                argv += ["--network", network]
            argv.append(str(context))
            parser = ProgressParser()
            started = time.monotonic()
            code = _run_streaming(argv, parser, on_event)
            seconds = time.monotonic() - started
            if code != 0 or not iidfile.is_file():
                raise _build_failure(code, parser)
            image_id = iidfile.read_text().strip()
        return BuildResult(
            image_id=image_id,
            seconds=seconds,
            steps=tuple(parser.dockerfile_steps()),
            log_tail=tuple(parser.tail),
        )

    # ------------------------------------------------------------------ images

    def inspect_image(self, ref: str) -> ImageInfo | None:
        """The local image `ref` (name, name@digest or ID), or None. Raises DockerUnavailableError."""
        try:
            img = self.client.images.get(ref)
        except docker.errors.ImageNotFound:
            return None
        except docker.errors.APIError as exc:
            if exc.status_code in (400, 404):  # a malformed reference is "not here" too
                return None
            raise DockerUnavailableError(f"docker image inspect {ref} failed: {exc}") from exc
        attrs = img.attrs
        config = attrs.get("Config") or {}
        return ImageInfo(
            id=str(attrs["Id"]),
            tags=tuple(attrs.get("RepoTags") or ()),
            repo_digests=tuple(attrs.get("RepoDigests") or ()),
            labels=dict(config.get("Labels") or {}),
            env=tuple(config.get("Env") or ()),
            size=int(attrs.get("Size") or 0),
        )

    def tag(self, image: str, ref: str) -> None:
        """Tag `image` as `ref` (repo:tag). Raises DockerUnavailableError."""
        repo, tag = _split_ref(ref)
        try:
            self.client.api.tag(image, repo, tag=tag or "latest")
        except docker.errors.APIError as exc:
            raise DockerUnavailableError(f"docker tag {image} {ref} failed: {exc}") from exc

    def remove_image(self, ref: str, *, force: bool = False) -> bool:
        """Remove an image or tag; False when it was not there. Raises DockerUnavailableError."""
        try:
            self.client.images.remove(ref, force=force)
        except docker.errors.ImageNotFound:
            return False
        except docker.errors.APIError as exc:
            raise DockerUnavailableError(f"docker rmi {ref} failed: {exc}") from exc
        return True

    def run(self, image: str, command: Sequence[str], *, env: Mapping[str, str] | None = None) -> RunResult:
        """Run `command` in a throwaway container (no network) and collect its output.

        A non-zero exit is returned, not raised. Raises DockerUnavailableError.
        """
        try:
            container = self.client.containers.create(
                image, list(command), environment=dict(env or {}), network_disabled=True
            )
            try:
                container.start()
                status = container.wait(timeout=600)
                out = container.logs(stdout=True, stderr=False).decode(errors="replace")
                err = container.logs(stdout=False, stderr=True).decode(errors="replace")
            finally:
                container.remove(force=True)
        except docker.errors.DockerException as exc:
            raise DockerUnavailableError(f"docker run {image} failed: {exc}") from exc
        return RunResult(exit_code=int(status.get("StatusCode", -1)), stdout=out, stderr=err)

    def pip_freeze(self, image: str, python: str = "/opt/venv/bin/python") -> tuple[str, ...]:
        """`pip freeze` inside the image, sorted. Raises BuildFailedError when it fails."""
        res = self.run(image, [python, "-m", "pip", "freeze", "--all"])
        if res.exit_code != 0:
            raise BuildFailedError(
                f"`{python} -m pip freeze` failed in {image} (exit {res.exit_code}): "
                + res.stderr.strip()[-2000:]
            )
        return tuple(sorted(line for line in res.stdout.splitlines() if line.strip()))

    def push(self, ref: str) -> str:
        """Push `ref` (registry/name:tag) with credentials from the Docker config; return the
        manifest digest (sha256:...). Raises RegistryError, DockerUnavailableError."""
        repo, tag = _split_ref(ref)
        digest = ""
        try:
            for msg in self.client.images.push(repo, tag=tag or "latest", stream=True, decode=True):
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
        if not digest:
            raise RegistryError(f"push of {ref} reported no digest")
        return str(digest)

    def pull(self, ref: str) -> ImageInfo:
        """Pull `ref` (name:tag or name@sha256:...). Raises RegistryError, DockerUnavailableError."""
        repo, tag = _split_ref(ref)
        try:
            self.client.images.pull(repo, tag=tag)
        except docker.errors.APIError as exc:
            raise RegistryError(f"pull of {ref} failed: {exc}") from exc
        info = self.inspect_image(ref)
        if info is None:
            raise RegistryError(f"pull of {ref} reported success but the image is not there")
        return info

    def save(self, ref: str, dest: Path) -> Path:
        """`docker save` `ref` into the tar file `dest`. Raises DockerUnavailableError."""
        try:
            chunks: Iterable[bytes] = self.client.images.get(ref).save(named=True)
            with dest.open("wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
        except docker.errors.DockerException as exc:
            raise DockerUnavailableError(f"docker save {ref} failed: {exc}") from exc
        return dest

    def prune_build_cache(self) -> int:
        """`docker builder prune -a`: drop all BuildKit cache (layers and cache mounts), not only
        the dangling part; return bytes reclaimed. Raises DockerUnavailableError."""
        try:
            res = self.client.api.prune_builds(all=True)
        except docker.errors.APIError as exc:
            raise DockerUnavailableError(f"docker builder prune failed: {exc}") from exc
        return int((res or {}).get("SpaceReclaimed") or 0)


def _split_ref(ref: str) -> tuple[str, str | None]:
    """`host:5000/a/b:tag` -> (`host:5000/a/b`, `tag`); a digest ref keeps `sha256:...` as tag."""
    if "@" in ref:
        repo, _, digest = ref.partition("@")
        return repo, digest
    head, sep, tail = ref.rpartition(":")
    if sep and "/" not in tail:
        return head, tail
    return ref, None


def _run_streaming(argv: list[str], parser: ProgressParser, on_event: ProgressCallback | None) -> int:
    env = {**os.environ, "DOCKER_BUILDKIT": "1", "BUILDKIT_PROGRESS": "plain"}
    # Own process group: Ctrl-C reaches us, and we stop the whole build ourselves.
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
        errors="replace",
        bufsize=1,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            for event in parser.feed(line):
                if on_event is not None:
                    on_event(event)
        return proc.wait()
    except BaseException:
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen[str]) -> None:
    for sig, wait in ((signal.SIGINT, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _build_failure(code: int, parser: ProgressParser) -> BuildFailedError:
    failed = parser.failed_step()
    where = f" at {failed.name}" if failed else ""
    if failed and failed.index is not None:
        where = f" at step {failed.index}/{failed.total}: {step_instruction(failed.name)[:160]}"
    tail = "\n".join(parser.tail)
    return BuildFailedError(
        f"docker build failed (exit {code}){where}\n--- last {len(parser.tail)} log lines ---\n{tail}",
        hint="fix the failing step above and build again; nothing was tagged",
    )


# --------------------------------------------------------------------------- run_container
# Added for certify (and later `run`): a container with devices, mounts, shm, ulimits, env, its
# stderr streamed line by line, its stdout collected.
