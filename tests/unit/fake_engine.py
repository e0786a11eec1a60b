"""The FakeEngine of the unit tests: the whole engine interface (envbuilder.engine.Engine) in
memory, no Docker; build, certify and run all use it.

Builds replay a recorded BuildKit plain-progress log (tests/data/buildkit/) through the real
parser, so the events build.py and the CLI see are the ones a real build produces. Containers are
recorded as the ContainerSpec they were given; what a collected run returns is `job`'s answer.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envbuilder.engine import (
    AttachedRun,
    BuildKitCli,
    BuildResult,
    BuildSecret,
    ContainerSpec,
    DaemonInfo,
    Engine,
    ImageInfo,
    RunResult,
    Ulimit,
)
from envbuilder.engine.progress import BuildEvent, ProgressParser
from envbuilder.errors import BuildFailedError, DockerUnavailableError, RegistryError, log_tail
from envbuilder.host.model import Host
from envbuilder.image.lock import BuildRecord, lock_from_resolution
from envbuilder.image.packages import LockedPackage, PackageLock
from envbuilder.image.sources import PackageIndex
from envbuilder.image.spec import ImageSpec, parse_spec
from envbuilder.resolve.model import Resolution, Stack

DATA = Path(__file__).resolve().parent.parent / "data" / "buildkit"


def sample(name: str) -> list[str]:
    """A recorded plain-progress log, line by line."""
    return (DATA / f"{name}.log").read_text().splitlines(keepends=True)


Stderr = Callable[[str], None] | None
Job = Callable[[ContainerSpec, Stderr], RunResult]
# What runc said on this machine's nested Docker (2026-12-01), through the daemon's API error.
MEMLOCK_REFUSAL = (
    "500 Server Error for http+docker://localhost/v1.41/containers/cfbd8be6a336/start: Internal Server "
    'Error ("failed to create shim task: OCI runtime create failed: runc create failed: unable to start '
    "container process: error during container init: error setting rlimits for ready process: error "
    'setting rlimit type 8: operation not permitted: unknown")'
)


@dataclass
class FakeEngine:
    daemon_up: bool = True
    buildkit: bool = True
    log: str = "cold"  # which recorded sample build() replays
    fail_build: bool = False
    interrupt_build: bool = False
    push_error: str | None = None
    push_digest: str = "sha256:" + "ab" * 32  # the manifest digest a push reports
    images: dict[str, ImageInfo] = field(default_factory=dict)  # ref or id -> image
    calls: list[tuple[str, object]] = field(default_factory=list)
    built_dockerfiles: list[str] = field(default_factory=list)
    epochs: list[int | None] = field(default_factory=list)  # each build's source_date_epoch
    packages: tuple[str, ...] = ("filelock==4.3.1", "numpy==2.1.0", "torch==2.13.0+cpu")  # image holds
    runtimes: tuple[str, ...] = ("runc",)
    cdi_spec_dirs: tuple[str, ...] = ()
    daemon_id: str = "FAKE:DAEMON"  # `docker info` ID: which daemon the tags live in
    refuse_memlock: bool = False  # a runtime that cannot raise RLIMIT_MEMLOCK (rootless Docker)
    job: Job | None = None  # what a collected run does (certify's harness); default: the collector
    exit_code: int = 0  # what an attached run exits with
    output: str = ""  # what an attached run printed (its log tail is the last lines asked for)
    pids: tuple[int, ...] = ()  # the host PIDs `container_pids` reports for a running container
    job_seconds: float = 0.0  # how long an attached run takes
    interrupt_run: bool = False  # Ctrl-C while an attached container runs
    runs: list[ContainerSpec] = field(default_factory=list)  # every container started

    def ping(self) -> None:
        self.calls.append(("ping", None))
        if not self.daemon_up:
            raise DockerUnavailableError("cannot reach the Docker daemon", hint="start it")

    def daemon_info(self) -> DaemonInfo:
        self.ping()
        return DaemonInfo(
            server_version="27.0",
            runtimes=self.runtimes,
            default_runtime="runc",
            cdi_spec_dirs=self.cdi_spec_dirs,
            storage_driver="overlay2",
            id=self.daemon_id,
        )

    def buildkit_cli(self) -> BuildKitCli:
        if not self.buildkit:
            from envbuilder.errors import BuildKitMissingError

            raise BuildKitMissingError("no docker client that can build with BuildKit")
        return BuildKitCli(path="/usr/bin/docker", kind="docker-buildkit", version="20.10.24")

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
        text = dockerfile.read_text()
        self.built_dockerfiles.append(text)
        self.calls.append(("build", [s.id for s in secrets]))
        self.epochs.append(source_date_epoch)
        assert (context / "harness").is_dir(), "the build context must carry the harness"
        parser = ProgressParser()
        for line in sample("failed" if self.fail_build else self.log):
            for event in parser.feed(line):
                if on_event:
                    on_event(event)
            if self.interrupt_build and "[stage-0 2/4]" in line:
                raise KeyboardInterrupt
        if self.fail_build:
            raise BuildFailedError("docker build failed (exit 1)", log=log_tail(parser.tail))
        image_id = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        labels = _labels_from(text)
        self.images[image_id] = ImageInfo(
            id=image_id, tags=(), repo_digests=(), labels=labels, size=1_260_000_000
        )
        return BuildResult(
            image_id=image_id,
            seconds=1.0,
            steps=tuple(parser.dockerfile_steps()),
            log_tail=tuple(parser.tail),
        )

    def prune_build_cache(self) -> int:
        self.calls.append(("prune", None))
        return 0

    def inspect_image(self, ref: str) -> ImageInfo | None:
        return self.images.get(ref)

    def list_images(self, repository: str) -> tuple[ImageInfo, ...]:
        found = {info.id: info for ref, info in self.images.items() if ref.rpartition(":")[0] == repository}
        return tuple(found.values())

    def tag(self, image: str, ref: str) -> None:
        self.calls.append(("tag", (image, ref)))
        self.images[ref] = self.images[image]

    def remove_image(self, ref: str, *, force: bool = False) -> bool:
        self.calls.append(("remove", ref))
        return self.images.pop(ref, None) is not None

    def push(self, ref: str) -> str:
        self.calls.append(("push", ref))
        if self.push_error:
            raise RegistryError(self.push_error)
        return self.push_digest

    def pull(self, ref: str) -> ImageInfo:
        self.calls.append(("pull", ref))
        raise RegistryError(f"pull of {ref} failed: no such host")

    def save(self, ref: str, dest: Path) -> Path:
        self.calls.append(("save", ref))
        dest.write_bytes(b"")
        return dest

    def _start(self, spec: ContainerSpec) -> None:
        """What the daemon checks when a container starts."""
        self.ping()
        if spec.image not in self.images:
            raise DockerUnavailableError(f"docker create {spec.image} failed: No such image")
        self.runs.append(spec)
        if self.refuse_memlock and any(u.name == "memlock" for u in spec.ulimits):
            raise DockerUnavailableError(f"docker run {spec.image} failed: {MEMLOCK_REFUSAL}")

    def run(
        self, spec: ContainerSpec, *, on_stderr: Stderr = None, timeout_s: float | None = None
    ) -> RunResult:
        self.calls.append(("run", spec.command))
        self._start(spec)
        if self.job is not None:
            return self.job(spec, on_stderr)
        # The installed-set collector: by path in a built image, as source (-c) in a base image.
        if spec.command[-1].endswith("/installed.py") or spec.command[1:2] == ("-c",):
            dists = [
                {"name": p.split("==")[0], "version": p.split("==")[1], "record_sha256": "f" * 64}
                for p in self.packages
            ]
            return RunResult(exit_code=0, stdout=json.dumps({"distributions": dists}) + "\n", stderr="")
        return RunResult(exit_code=0, stdout="", stderr="")

    def run_attached(
        self, spec: ContainerSpec, *, stop_timeout_s: float = 10.0, output_lines: int = 0
    ) -> AttachedRun:
        self.calls.append(("run_attached", spec.command))
        self._start(spec)
        if self.interrupt_run:
            raise KeyboardInterrupt
        time.sleep(self.job_seconds)
        lines = self.output.splitlines(keepends=True)
        tail = "".join(lines[-output_lines:]) if output_lines > 0 else ""
        return AttachedRun(exit_code=self.exit_code, output=tail)

    def container_pids(self, name: str) -> tuple[int, ...]:
        self.calls.append(("container_pids", name))
        return self.pids if any(spec.name == name for spec in self.runs) else ()

    def ulimit_refusal(self, image: str, ulimits: Sequence[Ulimit]) -> str | None:
        self.calls.append(("ulimit_probe", tuple(u.name for u in ulimits)))
        if image not in self.images:
            raise DockerUnavailableError(f"docker create {image} failed: No such image")
        refused = self.refuse_memlock and any(u.name == "memlock" for u in ulimits)
        return MEMLOCK_REFUSAL if refused else None

    def tags(self) -> set[str]:
        return {k for k in self.images if not k.startswith("sha256:")}


def _conforms(fake: FakeEngine) -> Engine:
    return fake  # mypy proves the fake implements the whole engine interface


def _labels_from(dockerfile: str) -> dict[str, str]:
    """The io.envbuilder.lock-hash label, read back from the rendered LABEL instruction."""
    out: dict[str, str] = {}
    for line in dockerfile.splitlines():
        if "io.envbuilder.lock-hash=" in line:
            out["io.envbuilder.lock-hash"] = line.split("=", 1)[1].split('"')[1]
    return out


def cpu_package_lock(platform: str = "x86_64") -> PackageLock:
    """What `lock_packages` gives for the CPU torch stack from the test wheelhouse (no uv run)."""

    def pkg(name: str, version: str, digit: str) -> LockedPackage:
        wheel = f"{name}-{version}-py3-none-any.whl"
        return LockedPackage(
            name=name, version=version, wheel=wheel, sha256=digit * 64, size=10,
            urls=(f"file:///wheelhouse/{wheel}",), group="framework",
        )  # fmt: skip

    return PackageLock(
        platform=platform,  # type: ignore[arg-type]
        python="3.11",
        python_platform=f"{platform}-manylinux_2_28",
        resolver="uv 0.13.9",
        framework_index="https://download.pytorch.org/whl/cpu",
        default_index="https://pypi.org/simple",
        indexes=(),
        packages=(pkg("filelock", "4.3.1", "1"), pkg("torch", "2.13.0+cpu", "2")),
    )


def cpu_stack(**overrides: object) -> Stack:
    """The stack the resolver picks for torch 2.13.0 on a CPU-only host (bundled)."""
    values: dict[str, object] = {
        "id": "torch2.13.0-cpu-py3.11-bundled",
        "framework": "torch",
        "version": "2.13.0",
        "variant": "cpu",
        "cuda": None,
        "cudnn": None,
        "nccl": None,
        "python": "3.11",
        "base_image": "python:3.11-slim-bookworm",
        "os": "debian12",
        "strategy": "bundled",
        "flavor": None,
        "min_driver": None,
        "require_cuda": None,
        "sass": (),
        "ptx": (),
        "index_url": "https://download.pytorch.org/whl/cpu",
        "packages": ("torch==2.13.0",),
        "companions": (),
        "python_install": "present",
    }
    values.update(overrides)
    return Stack(**values)  # type: ignore[arg-type]


def make_spec(name: str = "smoke", **fields: object) -> ImageSpec:
    raw: dict[str, object] = {
        "schema_version": 1,
        "name": name,
        "framework": "torch==2.13.0",
        "python": "3.11",
        "strategy": "bundled",
    }
    raw.update(fields)
    return parse_spec(raw, f"images/{name}.yaml")


def make_resolution(spec: ImageSpec, stack: Stack | None = None) -> Resolution:
    return Resolution(
        request=spec.to_request(cpu_only=True),
        host=Host(driver=None, source="none"),
        stack=stack or cpu_stack(),
        alternatives=(),
        rejected=(),
    )


def fake_lock_packages(
    spec: ImageSpec, stack: Stack, *, platform: str = "x86_64", **_: object
) -> PackageLock:
    """lock_packages without uv (unit tests never reach an index): the CPU torch lock, plus one
    project package when the spec asks for any."""
    lock = replace(cpu_package_lock(platform), framework_index=stack.index_url, python=stack.python)
    if not spec.has_project_packages:
        return lock
    extra = LockedPackage(
        name="numpy", version="2.1.0", wheel="numpy-2.1.0-py3-none-any.whl", sha256="3" * 64, size=10,
        urls=("file:///wheelhouse/numpy-2.1.0-py3-none-any.whl",), group="project",
    )  # fmt: skip
    return replace(lock, packages=(*lock.packages, extra))


def lock_doc() -> dict[str, Any]:
    """A lock file's document with every value a hostile lock could carry set (an index with its
    user and secret, find-links, an input, a build record), its optional lock_hash left out: what
    the lock-value tests mutate one field at a time."""
    spec = make_spec()
    packages = replace(
        cpu_package_lock(),
        indexes=(PackageIndex(name="corp", url="https://pkgs.example/simple", username="u", secret="tok"),),
        find_links=("/srv/wheels",),
        inputs=(("requirements.txt", "4" * 64),),
    )
    lock = replace(lock_from_resolution(make_resolution(spec), spec.to_dict()), packages=(packages,))
    lock = lock.with_build(
        BuildRecord(
            image_id="sha256:" + "1" * 64,
            base_image="python:3.11-slim-bookworm",
            base_image_digest="python:3.11-slim-bookworm@sha256:" + "2" * 64,
            dockerfile_sha256="3" * 64,
            packages=("filelock==4.3.1",),
            tags=("smoke:1",),
        )
    )
    doc = lock.to_dict()
    doc.pop("lock_hash")  # optional and recomputable: it protects nothing (D1)
    return doc
