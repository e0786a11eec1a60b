"""`envbuilder run --runtime apptainer|enroot FILE`: the same certificate check as a Docker run,
then the job in a SIF (Apptainer) or squashfs (enroot) file that `envbuilder export` wrote.

The file's sidecar (engine/hpc.py) names the Docker image it was exported from, and its sha256
is checked first: the certificates of that image's ID are the ones that count, on a node that
has no Docker. The GPUs go in through the runtime's own way (`apptainer exec --nv`; enroot's
NVIDIA hook, which reads NVIDIA_VISIBLE_DEVICES), never a Docker access mode.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from envbuilder.certify.jit_cache import JitCache, jit_cache_volume
from envbuilder.engine.container import ContainerSpec
from envbuilder.engine.hpc import read_exported, run_foreground
from envbuilder.errors import ContainerRuntimeError, UsageError
from envbuilder.host import HostReport, probe_host
from envbuilder.run.coverage import RunHost
from envbuilder.run.launch import (
    FindCertificate,
    RunOutcome,
    Say,
    admit,
    log_run,
    native_cuda_of,
    parse_env,
    parse_volume,
    parse_workdir,
)
from envbuilder.runtime import NONE, GpuGrant, Runtime, choose_access
from envbuilder.runtime import get as get_runtime
from envbuilder.runtime.base import access_label


@dataclass(frozen=True, slots=True, kw_only=True)
class HpcRunOptions:
    path: Path  # the exported SIF or squashfs file
    runtime: str  # a registered runtime that runs exported files (apptainer, enroot)
    command: tuple[str, ...]
    gpu_access: str = "auto"  # auto (the runtime's first mode this host offers) | a mode of it | none
    force: bool = False
    jit_cache: bool = True  # the image's JIT caches, a folder of the user's (certify/jit_cache.py)
    volumes: tuple[str, ...] = ()  # SRC:DST[:ro|rw]
    env: tuple[str, ...] = ()  # K=V
    workdir: str | None = None
    tool: str | None = None  # the runtime's binary (default: on PATH)


def job_spec(opts: HpcRunOptions, grant: GpuGrant, jit_cache: JitCache | None = None) -> ContainerSpec:
    """The container of this run: the file, the command, the access mode's grant, binds and
    variables (the user's win over the grant's); `jit_cache`: the image's JIT cache volume and
    the variables that point the caches there (jit_cache.jit_cache_volume). Raises UsageError
    (bad -v/-e/-w)."""
    env = parse_env(opts.env)
    return ContainerSpec(
        image=str(opts.path),
        command=opts.command,
        env={**(jit_cache.env if jit_cache else {}), **grant.env, **env},
        gpu_flags=grant.flags,
        mounts=tuple(parse_volume(v) for v in opts.volumes),
        volumes=(jit_cache.volume,) if jit_cache is not None else (),
        workdir=parse_workdir(opts.workdir) if opts.workdir is not None else None,
    )


def run_exported(
    opts: HpcRunOptions,
    *,
    find_certificate: FindCertificate,
    probe: Callable[[], HostReport] | None = None,
    say: Say | None = None,
    log_dir: Path | None = None,
    launch: Callable[[Sequence[str]], int] = run_foreground,
) -> RunOutcome:
    """Check the exported file and its certificate, then run the job through the runtime in the
    foreground; its exit code comes back. Raises UsageError (no command, an access mode that is
    not the runtime's, no or changed file, the other runtime's format), NoGpuError (a mode this
    host does not offer), ContainerRuntimeError (no runtime binary), CertificateRefusedError (not
    covered and not --force)."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    if not opts.command:
        raise UsageError(
            f"no command given: --runtime {opts.runtime} needs one (only --runtime docker runs the "
            "image's own CMD)",
            hint=f"write it after FILE: envbuilder run --runtime {opts.runtime} FILE python train.py",
        )
    report: HostReport | None = None

    def probe_once() -> HostReport:
        nonlocal report
        report = report or (probe or probe_host)()
        return report

    rt: Runtime = get_runtime(opts.runtime, binary=opts.tool, probe=probe_once)
    if opts.gpu_access not in (*rt.modes, "auto", NONE):
        raise UsageError(
            f"--gpu-access {opts.gpu_access} is not one of the {rt.name} runtime's modes; "
            f"--runtime {rt.name} hands the GPUs in its own way ({', '.join(rt.modes)})",
            hint=f"use --gpu-access auto (the default), {', '.join(rt.modes)} or none",
        )
    exported = read_exported(opts.path)
    if exported.format != rt.runs:
        raise UsageError(
            f"{opts.path} is a {exported.format} file; --runtime {rt.name} runs {rt.runs} files",
            hint=f"export one with envbuilder export IMAGE --{rt.runs} FILE",
        )
    there = rt.available()
    if not there.ok:
        raise ContainerRuntimeError(there.reason, hint=there.hint)
    choice = choose_access(rt, opts.gpu_access, rt.probe_modes() if opts.gpu_access != NONE else ())
    host_report = probe_once()
    grant = rt.grant(choice.mode) if choice.mode is not None else GpuGrant()
    host = RunHost(
        driver=host_report.driver,
        cuda_driver=host_report.cuda_driver or native_cuda_of(host_report.driver),
        gpus=host_report.gpus,
        access=access_label(rt, choice.name),
        requested=opts.gpu_access,
    )
    jit_cache = None
    if opts.jit_cache:  # where it applies: a GPU, the image's folder, not the caller's own cache
        jit_cache = jit_cache_volume(exported.image, rt, choice, parse_env(opts.env), owner="run")
    argv = rt.argv(job_spec(opts, grant, jit_cache))  # bad -v/-e/-w refused before anything is logged
    admitted = admit(
        exported.image,
        host,
        find_certificate,
        ref=str(opts.path),
        command=opts.command,
        force=opts.force,
        say=say,
        log_dir=log_dir,
        extra={"runtime": opts.runtime, "file_sha256": exported.sha256, "argv": argv},
    )
    say(f"envbuilder: {shlex.join(argv)}")
    started = time.monotonic()
    outcome, code = "interrupted", 130
    try:
        code = launch(argv)
        outcome = "exited"
    finally:
        seconds = round(time.monotonic() - started, 3)
        log_run(
            admitted.log_path,
            {**admitted.record, "outcome": outcome, "exit_code": code, "seconds": seconds},
            say,
        )
    return RunOutcome(
        exit_code=code, run_id=admitted.run_id, refusals=admitted.refusals, forced=bool(admitted.refusals)
    )
