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
from typing import Literal

from envbuilder.engine.hpc import (
    ExportedImage,
    Tool,
    apptainer_exec_argv,
    enroot_start_argv,
    find_tool,
    read_exported,
    run_foreground,
)
from envbuilder.errors import UsageError
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

HpcRuntime = Literal["apptainer", "enroot"]
RUNTIMES = ("docker", "apptainer", "enroot")  # `run --runtime`: docker is run/launch.py
FORMAT_OF = {"apptainer": "sif", "enroot": "sqsh"}
GPU_ACCESS = {"apptainer": "apptainer --nv", "enroot": "enroot (NVIDIA hook)"}


@dataclass(frozen=True, slots=True, kw_only=True)
class HpcRunOptions:
    path: Path  # the exported SIF or squashfs file
    runtime: HpcRuntime
    command: tuple[str, ...]
    gpu_access: str = "auto"  # auto (the GPUs where there are any) | none
    force: bool = False
    volumes: tuple[str, ...] = ()  # SRC:DST[:ro|rw]
    env: tuple[str, ...] = ()  # K=V
    workdir: str | None = None
    tool: str | None = None  # the runtime's binary (default: on PATH)


def runtime_argv(opts: HpcRunOptions, exported: ExportedImage, tool: Tool, *, gpu: bool) -> list[str]:
    """The runtime's command line for this run. Raises UsageError (bad -v/-e; -w with enroot,
    whose `start` has no working-directory option)."""
    env = parse_env(opts.env)
    binds = [(m.source, m.target, m.read_only) for m in (parse_volume(v) for v in opts.volumes)]
    binary = tool.path or opts.runtime
    if opts.runtime == "apptainer":
        return apptainer_exec_argv(
            str(exported.path),
            opts.command,
            nv=gpu,
            binds=binds,
            env=env,
            workdir=parse_workdir(opts.workdir) if opts.workdir is not None else None,
            apptainer=binary,
        )
    if opts.workdir:
        raise UsageError(
            "-w/--workdir does not apply to --runtime enroot (enroot start has no working-directory option)",
            hint="cd in the command: -- sh -c 'cd DIR && exec python train.py'",
        )
    return enroot_start_argv(str(exported.path), opts.command, gpu=gpu, binds=binds, env=env, enroot=binary)


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
    foreground; its exit code comes back. Raises UsageError (no command, a Docker-only access
    mode, no or changed file, the other runtime's format), ContainerRuntimeError (no runtime
    binary), CertificateRefusedError (not covered and not --force)."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    if not opts.command:
        raise UsageError(
            f"no command given: --runtime {opts.runtime} needs one (only --runtime docker runs the "
            "image's own CMD)",
            hint=f"write it after FILE: envbuilder run --runtime {opts.runtime} FILE python train.py",
        )
    if opts.gpu_access not in ("auto", "none"):
        raise UsageError(
            f"--gpu-access {opts.gpu_access} is a Docker access mode; --runtime {opts.runtime} "
            f"hands the GPUs in itself ({GPU_ACCESS[opts.runtime]})",
            hint="use --gpu-access auto (the default) or none",
        )
    exported = read_exported(opts.path)
    wanted = FORMAT_OF[opts.runtime]
    if exported.format != wanted:
        raise UsageError(
            f"{opts.path} is a {exported.format} file; --runtime {opts.runtime} runs {wanted} files",
            hint=f"export one with envbuilder export IMAGE --{wanted} FILE",
        )
    tool = find_tool(opts.runtime, path=opts.tool)
    report = (probe or probe_host)()
    gpu = opts.gpu_access != "none" and bool(report.gpus)
    host = RunHost(
        driver=report.driver,
        cuda_driver=report.cuda_driver or native_cuda_of(report.driver),
        gpus=report.gpus,
        access=GPU_ACCESS[opts.runtime] if gpu else "none",
        requested=opts.gpu_access,
    )
    argv = runtime_argv(opts, exported, tool, gpu=gpu)  # bad -v/-e refused before anything is logged
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
