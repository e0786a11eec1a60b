"""BuildKit builds through the docker CLI (cache mounts and secrets need BuildKit; the SDK's build
uses the classic builder): find a client that can (`find_buildkit_cli`), run it, follow its
plain progress, stop its whole process group on Ctrl-C. buildx bakes (fleet) and exports a
reproducible build as a tarball (TarExport)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from envbuilder.engine.model import BuildResult, BuildSecret
from envbuilder.engine.progress import BuildEvent, ProgressParser, step_instruction
from envbuilder.errors import BuildFailedError, BuildKitMissingError, UsageError, log_tail
from envbuilder.lifecycle import kill_group, scratch_dir, start_child

BUILDKIT_HINT = (
    "install the buildx plugin (Docker's `docker-buildx-plugin`, or `docker-buildx` on Debian 13+), "
    "or Debian 12's `docker.io` (its /usr/bin/docker 20.10 builds with DOCKER_BUILDKIT=1); "
    "ENVBUILDER_DOCKER_CLI=/path/to/docker picks a client"
)
BUILD_NETWORKS = ("default", "host", "none")
_SECRET_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

ProgressCallback = Callable[[BuildEvent], None]


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


def cli_candidates() -> list[str]:
    """The docker CLIs to try, in order: ENVBUILDER_DOCKER_CLI alone when set, else the one on
    PATH, /usr/bin/docker and /usr/local/bin/docker (each once)."""
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
        hint=BUILDKIT_HINT,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Buildx:
    """A buildx, for bakes and reproducible exports: the plugin through a docker CLI (`docker
    buildx`), or the plugin's binary run on its own (`docker-buildx`, which buildx supports)."""

    argv: tuple[str, ...]
    version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TarExport:
    """A reproducible build's output: buildx exports the image as a docker-format tarball at
    `dest`, with SOURCE_DATE_EPOCH set and every new file's time rewritten to it (BuildKit >= 0.13),
    so the same inputs give the same layers and image ID. The builder is buildx's own choice
    (BUILDX_BUILDER, `docker buildx use`, DOCKER_CONTEXT)."""

    buildx: Buildx
    dest: Path
    source_date_epoch: int


def buildkit_build(
    cli: BuildKitCli,
    context: Path,
    dockerfile: Path,
    *,
    secrets: Sequence[BuildSecret] = (),
    build_args: Mapping[str, str] | None = None,
    build_contexts: Mapping[str, Path] | None = None,
    no_cache: bool = False,
    network: str | None = None,
    on_event: ProgressCallback | None = None,
    export: TarExport | None = None,
) -> BuildResult:
    """Build with `cli`, WITHOUT a tag (the caller tags after success, so a failure leaves none);
    with `export`, with its buildx into its tarball instead (nothing loaded: the result's image_id
    is the config digest, the ID `docker load` of the tarball gives).

    Raises BuildKitMissingError (build_contexts need buildx; the export's builder cannot rewrite
    file times), BuildFailedError (message ends with the last 40 log lines); on KeyboardInterrupt
    kills the build's process group and re-raises.
    """
    if build_contexts and cli.kind != "buildx" and export is None:
        raise BuildKitMissingError(
            f"named build contexts need buildx; {cli.path} {cli.version} has none", hint=BUILDKIT_HINT
        )
    with scratch_dir("build") as tmp:
        iidfile, meta = tmp / "iid", tmp / "metadata.json"
        if export is None:
            argv = [*cli.build_argv(), "--progress=plain", "--iidfile", str(iidfile)]
        else:
            argv = [*export.buildx.argv, "build", "--progress=plain", "--metadata-file", str(meta)]
            argv += ["--output", f"type=docker,dest={export.dest},rewrite-timestamp=true"]
            build_args = {**(build_args or {}), "SOURCE_DATE_EPOCH": str(export.source_date_epoch)}
        argv += _build_flags(dockerfile, secrets, build_args, build_contexts, no_cache, network)
        argv.append(str(context))
        parser = ProgressParser()
        started = time.monotonic()
        code = _run_streaming(argv, parser, on_event, own_builder=export is not None)
        seconds = time.monotonic() - started
        if code != 0:
            raise _export_refused(export, parser) or _build_failure(code, parser)
        image_id = _built_image(iidfile, meta, export)
        if image_id is None:
            raise _build_failure(code, parser)
    return BuildResult(
        image_id=image_id,
        seconds=seconds,
        steps=tuple(parser.dockerfile_steps()),
        log_tail=tuple(parser.tail),
    )


# What buildx prints when its builder's exporter cannot rewrite file times: Docker's classic image
# store (the docker driver without the containerd store), or a BuildKit older than 0.13.
_NO_REWRITE = ("turn on the containerd image store", "rewrite-timestamp")
REPRODUCIBLE_HINT = (
    "build with a builder whose exporter can rewrite file times (BuildKit >= 0.13): Docker >= 25 with "
    'the containerd image store (daemon.json: {"features": {"containerd-snapshotter": true}}), picked '
    "with DOCKER_CONTEXT=NAME, or `docker buildx create --driver docker-container --use`; or build "
    "without --reproducible"
)


def _export_refused(export: TarExport | None, parser: ProgressParser) -> BuildKitMissingError | None:
    """The builder refused the export itself (no step failed), or None."""
    if export is None or parser.failed_step() is not None:
        return None
    refused = next((ln for ln in parser.tail if any(k in ln for k in _NO_REWRITE)), None)
    if refused is None:
        return None
    return BuildKitMissingError(
        f"buildx's builder cannot export with rewritten file times: {refused.strip()[:200]}",
        hint=REPRODUCIBLE_HINT,
    )


def _built_image(iidfile: Path, meta: Path, export: TarExport | None) -> str | None:
    """The image ID from --iidfile, or (an export) from --metadata-file's config digest with
    the tarball written; None when the build left none."""
    try:
        if export is None:
            image_id: object = iidfile.read_text(encoding="utf-8").strip()
        else:
            image_id = json.loads(meta.read_text(encoding="utf-8")).get("containerimage.config.digest")
    except (OSError, ValueError, AttributeError):
        return None
    ok = isinstance(image_id, str) and image_id.startswith("sha256:")
    return image_id if ok and (export is None or export.dest.is_file()) else None  # type: ignore[return-value]


def _build_flags(
    dockerfile: Path,
    secrets: Sequence[BuildSecret],
    build_args: Mapping[str, str] | None,
    build_contexts: Mapping[str, Path] | None,
    no_cache: bool,
    network: str | None,
) -> list[str]:
    """The flags `docker build` and `buildx build` share, checked."""
    argv = ["-f", str(dockerfile)]
    for s in secrets:
        if not _SECRET_ID.fullmatch(s.id):
            raise BuildFailedError(f"invalid build secret id {s.id!r}")
        argv += ["--secret", secret_flag(s)]
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
    return argv


def secret_flag(secret: BuildSecret) -> str:
    """The value of `--secret` for one secret. docker reads it as one CSV record
    (encoding/csv: `id=x,src=FILE`), so a field holding a comma or a quote is quoted, or docker
    would read a different file than the one named. A line break or another control character
    cannot be carried (docker's reader ends the record there): refused. Raises UsageError."""
    for field, value in (("id", secret.id), ("src", str(secret.src))):
        if not value.isprintable():
            raise UsageError(
                f"secret {secret.id!r}: its {field} {value!r} holds a line break or another control "
                "character, which docker's --secret cannot carry",
                hint="give the file a path without one (a symlink to it will do)",
            )
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([f"id={secret.id}", f"src={secret.src}"])
    return out.getvalue()


def find_buildx() -> Buildx:
    """ENVBUILDER_BUILDX (a docker-buildx binary) when set, else the first docker CLI whose
    `buildx version` answers. Raises BuildKitMissingError."""
    override = os.environ.get("ENVBUILDER_BUILDX")
    tried: list[str] = []
    if override:
        out = _probe([override, "version"])
        if out is not None:
            return Buildx(argv=(override,), version=out.strip().split("\n")[0])
        tried.append(override)
    else:
        for path in cli_candidates():
            tried.append(f"{path} buildx")
            out = _probe([path, "buildx", "version"])
            if out is not None:
                return Buildx(argv=(path, "buildx"), version=out.strip().split("\n")[0])
    raise BuildKitMissingError(
        "no buildx (fleet bakes and reproducible builds need it); tried: "
        + (", ".join(tried) or "no docker on PATH"),
        hint="install the buildx plugin (Docker's docker-buildx-plugin, Debian 13's docker-buildx), or set "
        "ENVBUILDER_BUILDX=/path/to/docker-buildx",
    )


def buildx_bake(
    buildx: Buildx,
    bake_file: Path,
    targets: Sequence[str],
    *,
    allow: Sequence[str] = (),
    on_event: ProgressCallback | None = None,
) -> dict[str, str]:
    """`buildx bake -f FILE TARGET...` (targets build in parallel on BuildKit, sharing its cache),
    each WITHOUT a tag; returns target -> image ID (from --metadata-file). Raises BuildFailedError
    (the last 40 log lines; no target is kept: the caller tags none of them); on KeyboardInterrupt
    stops the whole process group and re-raises."""
    with scratch_dir("bake") as tmp:
        meta = Path(tmp) / "metadata.json"
        # rawjson: each target's whole vertex list comes before its steps run, so the counters
        # are right from the first line; a vertex the targets share ends once (progress.py)
        argv = [
            *buildx.argv,
            "bake",
            "-f",
            str(bake_file),
            "--progress=rawjson",
            "--metadata-file",
            str(meta),
        ]
        argv += [f"--allow={a}" for a in allow]
        parser = ProgressParser(fmt="rawjson")
        code = _run_streaming([*argv, *targets], parser, on_event)
        if code != 0:
            raise _build_failure(code, parser)
        try:
            doc = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BuildFailedError(f"buildx bake wrote no readable metadata ({exc})") from exc
    ids: dict[str, str] = {}
    for target in targets:
        entry = doc.get(target) if isinstance(doc, dict) else None
        image = (
            entry.get("containerimage.config.digest") or entry.get("containerimage.digest") if entry else None
        )
        if not isinstance(image, str) or not image.startswith("sha256:"):
            raise BuildFailedError(f"buildx bake reported no image for target {target!r}")
        ids[target] = image
    return ids


def engine_cli_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a docker CLI that must reach the daemon the engine's SDK reaches:
    docker-py reads DOCKER_HOST and never a docker context, so DOCKER_CONTEXT is dropped and, with
    no DOCKER_HOST, the `default` context (the local socket) named. Else DOCKER_CONTEXT (or `docker
    context use`) sent a build to another daemon than the one that then looks for its image
    ("the build reported image ..., which is not there", seen). A reproducible export keeps the
    user's environment: there the builder is buildx's choice and the tarball is loaded here."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if k != "DOCKER_CONTEXT"}
    if "DOCKER_HOST" not in env:
        env["DOCKER_CONTEXT"] = "default"
    return env


def _run_streaming(
    argv: list[str], parser: ProgressParser, on_event: ProgressCallback | None, *, own_builder: bool = False
) -> int:
    """Run a build client, feeding its output to `parser`. `own_builder`: buildx picks the builder
    from the user's environment (an export); else the client builds on the engine's daemon."""
    base = dict(os.environ) if own_builder else engine_cli_env()
    env = {**base, "DOCKER_BUILDKIT": "1", "BUILDKIT_PROGRESS": "plain"}
    # Own process group: Ctrl-C (or SIGTERM, lifecycle.Stopped) reaches us, and we stop the whole
    # build ourselves; and the client dies with us even on SIGKILL (BuildKit then cancels it).
    proc = start_child(
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
        kill_group(proc, first=signal.SIGINT)  # docker cancels the build on SIGINT
        raise


def _build_failure(code: int, parser: ProgressParser) -> BuildFailedError:
    failed = parser.failed_step()
    where = f" at {failed.name}" if failed else ""
    if failed and failed.index is not None:
        counter = parser.counter(failed).strip("[]")
        where = f" at step {counter}: {step_instruction(failed.name)[:160]}"
    return BuildFailedError(
        f"docker build failed (exit {code}){where}",
        hint="fix the failing step (its log above) and build again; nothing was tagged",
        log=log_tail(parser.tail),
    )
