"""`envbuilder run`: check the image's certificate against this host, then run the user's job in
the image the way it was certified (GPU access mode, shared memory, ulimits), in the foreground.

Refusals come from runcheck.py (pure); --force runs anyway and is recorded in the run log
(runs.jsonl in the data folder). --monitor samples NVML meanwhile (monitor.py).
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from envbuilder.atomic import append_jsonl
from envbuilder.certify.certificate import Certificate
from envbuilder.certify.gpu_access import (
    drop_refused_memlock,
    prepare_target,
    training_container,
)
from envbuilder.engine import AttachedRun, DaemonInfo, Engine, ImageInfo, Mount, PortBinding
from envbuilder.engine.ownership import record_labels
from envbuilder.errors import CertificateRefusedError, NoGpuError, UsageError
from envbuilder.host import AccessMode, HostReport
from envbuilder.lifecycle import stop_error
from envbuilder.resources import user_data_dir
from envbuilder.run.coverage import (
    CERTIFY_HINT,
    Refusal,
    RefusedError,
    RunHost,
    choose_certificate,
    image_ref,
    refusal_error,
    short_id,
)
from envbuilder.run.diagnosis import diagnose, format_diagnosis
from envbuilder.run.joblog import read_job_output
from envbuilder.run.monitor import Monitor, write_monitor_files
from envbuilder.runtime import DEFAULT, AccessChoice, Runtime
from envbuilder.runtime import get as get_runtime
from envbuilder.runtime.gpu_selection import GpuSelection, parse_gpus, select_gpus

RUN_LOG = "runs.jsonl"
OUTPUT_LINES = 2000  # --monitor reads this much of the end of the job's output (where it died)
RUN_LABEL = "io.envbuilder.run"  # on every container `run` starts
IPC_MODES = ("private", "shareable", "host")
# -e, -u, --name and -p's ports: each matched whole (fullmatch): `$` alone also matches before
# a final line break.
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIZE = re.compile(r"([0-9]{1,20})([bkmg]?)b?", re.IGNORECASE | re.ASCII)
_SIZE_MAX = (1 << 63) - 1  # Docker's HostConfig.ShmSize is an int64
PROTOCOLS = ("tcp", "udp", "sctp")  # what docker's -p accepts after the slash
_PORT = re.compile(r"^[0-9]{1,5}$", re.ASCII)
# -u: a numeric ID or a POSIX-portable user/group name (useradd's default NAME_REGEX, wider case).
_ID_OR_NAME = r"(?:[0-9]{1,10}|[A-Za-z_][A-Za-z0-9_.-]{0,31})"
_USER = re.compile(rf"^{_ID_OR_NAME}(?::{_ID_OR_NAME})?$", re.ASCII)
_ID_MAX = (1 << 32) - 2  # (uid_t)-1 is "no change" to the kernel, never a user
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{1,127}$", re.ASCII)  # docker's container name rule

Say = Callable[[str], None]
FindCertificate = Callable[[ImageInfo], Sequence[Certificate]]  # newest first


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    image: str
    command: tuple[str, ...] = ()  # empty: the image's own CMD (behind its ENTRYPOINT)
    gpu_access: str = "auto"
    jit_cache: bool = True  # the image's JIT cache volume: CUDA's and the frameworks' (certify/jit_cache.py)
    gpus: str | None = None  # docker's --gpus: all | N | device=0,2 | device=GPU-UUID; None: all
    force: bool = False
    monitor: bool = False
    monitor_dir: Path | None = None  # default: DATA/runs/<run id>/
    volumes: tuple[str, ...] = ()  # SRC:DST[:ro|rw]
    env: tuple[str, ...] = ()  # K=V
    workdir: str | None = None
    shm_size: str | None = None  # 16g, 512m, bytes; default: half the RAM, at most 8 GiB
    ipc: str | None = None  # private | shareable | host
    network: str | None = None  # None: the daemon's default network
    interactive: bool = False  # hand stdin to the job
    tty: bool = False  # give it a terminal
    publish: tuple[str, ...] = ()  # -p [IP:][HOST_PORT:]CONTAINER_PORT[/PROTO]
    user: str | None = None  # -u UID[:GID] | NAME[:GROUP]; None: the image's USER
    name: str | None = None  # the container's name; None: envbuilder-run-RUN_ID


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    exit_code: int
    run_id: str
    refusals: tuple[Refusal, ...] = ()
    forced: bool = False
    monitor_files: tuple[Path, ...] = ()
    warnings: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- option parsing


def parse_size(text: str) -> int:
    """'16g', '512m', '65536' -> bytes. Raises UsageError."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise UsageError(f"malformed size {text!r}", hint="write it like docker does: 16g, 512m or bytes")
    power = "bkmg".index((m.group(2) or "b").lower())
    size = int(m.group(1)) * (1 << (10 * power))
    if not 0 < size <= _SIZE_MAX:
        raise UsageError(
            f"size {text[:40]!r} is out of range",
            hint="above 0 and below 8 EiB (Docker keeps sizes in a signed 64-bit integer), e.g. 16g",
        )
    return size


def parse_workdir(text: str) -> str:
    """-w DIR: an absolute path inside the container (docker refuses a relative one, but only
    after the certificate check). Raises UsageError."""
    if not text.startswith("/") or any(c in text for c in "\n\r\x00"):
        raise UsageError(
            f"-w {text[:80]!a}: the working directory must be an absolute path", hint="e.g. -w /workspace"
        )
    return text


def parse_env(items: Sequence[str]) -> dict[str, str]:
    """-e K=V items -> dict. Raises UsageError for a missing '=' or a malformed key."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not _ENV_KEY.fullmatch(key):
            raise UsageError(f"malformed -e {item!r}", hint="write -e NAME=VALUE (NAME: letters, digits, _)")
        out[key] = value
    return out


def parse_volume(item: str, cwd: Path | None = None) -> Mount:
    """-v SRC:DST[:ro|rw] -> a bind mount of the absolute host path. Raises UsageError
    when SRC does not exist (docker would silently create an empty folder) or DST is relative."""
    parts = item.split(":")
    if len(parts) not in (2, 3) or not all(parts[:2]) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise UsageError(f"malformed -v {item!r}", hint="write -v SRC:DST or -v SRC:DST:ro")
    src = ((cwd or Path.cwd()) / parts[0]).resolve()
    if not src.exists():
        raise UsageError(f"-v {item!r}: {src} does not exist", hint="create it, or fix the path")
    if not parts[1].startswith("/"):
        raise UsageError(f"-v {item!r}: the container path must be absolute")
    return Mount(source=str(src), target=parts[1], read_only=len(parts) == 3 and parts[2] == "ro")


def _port(text: str, item: str) -> int:
    if not _PORT.fullmatch(text) or not 1 <= int(text) <= 65535:
        hint = "one port per -p (docker's ranges are not taken)" if "-" in text else "a port is 1-65535"
        raise UsageError(f"-p {item[:80]!r}: {text[:20]!r} is not a port", hint=hint)
    return int(text)


def parse_publish(item: str) -> PortBinding:
    """-p [HOST_IP:][HOST_PORT:]CONTAINER_PORT[/tcp|udp|sctp], as docker writes it (an IPv6 host
    address in brackets; no host port: the daemon picks one). Raises UsageError."""
    hint = "write -p 8888:8888, -p 127.0.0.1:8080:80 or -p 5353:53/udp"
    body, slash, proto = item.rpartition("/")
    if not slash:
        body, proto = item, "tcp"
    if proto not in PROTOCOLS:
        raise UsageError(
            f"-p {item[:80]!r}: unknown protocol {proto[:20]!r}", hint=f"use {', '.join(PROTOCOLS)}"
        )
    ip: str | None = None
    if body.startswith("["):
        addr, close, rest = body[1:].partition("]:")
        if not close:
            raise UsageError(f"malformed -p {item[:80]!r}", hint="an IPv6 address: -p [::1]:8080:80")
        ip, parts = addr, rest.split(":")
        if len(parts) != 2:
            raise UsageError(f"malformed -p {item[:80]!r}", hint="an IPv6 address: -p [::1]:8080:80")
    else:
        parts = body.split(":")
        if len(parts) == 3:
            ip, parts = parts[0], parts[1:]
        elif len(parts) > 3:
            raise UsageError(
                f"malformed -p {item[:80]!r}", hint="put an IPv6 address in brackets: -p [::1]:8080:80"
            )
    if ip is not None:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise UsageError(f"-p {item[:80]!r}: {ip[:60]!r} is not an IP address", hint=hint) from None
    host = _port(parts[0], item) if len(parts) == 2 and parts[0] else None
    if len(parts) == 2 and not parts[0] and ip is None:
        raise UsageError(f"malformed -p {item[:80]!r}", hint=hint)
    return PortBinding(container_port=_port(parts[-1], item), protocol=proto, host_port=host, host_ip=ip)


def parse_user(text: str) -> str:
    """-u UID[:GID] or NAME[:GROUP] (a name must exist in the image; docker says so at start).
    Raises UsageError."""
    ids = [p for p in text.split(":") if p.isdigit()]
    if not _USER.fullmatch(text) or any(int(i) > _ID_MAX for i in ids):
        raise UsageError(
            f"malformed -u {text[:80]!a}",
            hint="write -u UID[:GID] or -u NAME[:GROUP]; -u $(id -u):$(id -g) runs the job as you "
            "(what it writes into a bind mount is then yours)",
        )
    return text


def parse_name(text: str) -> str:
    """--name: docker's rule for container names. Raises UsageError."""
    if not _NAME.fullmatch(text):
        raise UsageError(
            f"malformed --name {text[:80]!a}",
            hint="2-128 characters: letters, digits, _ . - (not first), as docker allows",
        )
    return text


def choose_gpus(
    opts: RunOptions, choice: AccessChoice, report: HostReport, root: Path
) -> GpuSelection | None:
    """The GPUs `--gpus` gives the job (None: every GPU, as without it). Raises UsageError (a
    malformed value, a GPU this host lacks, --gpus with --gpu-access none), NoGpuError (no GPU
    access mode on this host)."""
    if opts.gpus is None:
        return None
    spec = parse_gpus(opts.gpus)
    if opts.gpu_access == "none":
        raise UsageError(
            f"--gpus {opts.gpus} asks for GPUs, --gpu-access none for none",
            hint="drop one of them (--gpu-access auto hands the selected GPUs in)",
        )
    if choice.name == "none":
        raise NoGpuError(
            f"--gpus {opts.gpus}: this host offers no GPU access mode ({choice.reason})",
            hint="`envbuilder doctor` says why; run on the CPU without --gpus",
        )
    selection = select_gpus(spec, report, root=root)
    return None if spec.all else selection


# --------------------------------------------------------------------------- the run


def run_host(report: HostReport, choice: AccessChoice, requested: str, cuda_fallback: str | None) -> RunHost:
    return RunHost(
        driver=report.driver,
        cuda_driver=report.cuda_driver or cuda_fallback,
        gpus=report.gpus,
        access=choice.name,
        requested=requested,
    )


def native_cuda_of(driver: str | None) -> str | None:
    """The driver's CUDA version from the matrix, for probes that could not tell (/proc)."""
    if driver is None:
        return None
    try:
        from envbuilder.matrix import load_matrix
        from envbuilder.resolve.drivers import native_cuda

        return native_cuda(load_matrix(), driver)
    except Exception:  # a broken matrix must not stop a run; the check is then skipped
        return None


def log_run(path: Path, record: Mapping[str, Any], say: Say) -> None:
    try:
        append_jsonl(path, record)
    except OSError as exc:
        say(f"envbuilder: warning: could not write the run log {path}: {exc}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Admitted:
    """A run the certificate check let start: its id, the run log and the record it starts,
    the certificate that covers it (None: forced without one) and the refusals --force overrode."""

    run_id: str
    log_path: Path
    record: dict[str, Any]
    cert: Certificate | None
    refusals: tuple[Refusal, ...]


def covering_certificate(
    info: ImageInfo, host: RunHost, find_certificate: FindCertificate
) -> tuple[Certificate | None, tuple[Refusal, ...]]:
    """The newest certificate for the image's ID that covers `host` (no refusals), else the
    newest and why it does not, else why none could be used (signed attestations that do not
    hold, a tampered store entry). What `run` admits and `check` judges, one rule."""
    try:
        cert, found = choose_certificate(find_certificate(info), info, host)
        return cert, tuple(found)
    except RefusedError as exc:  # signed attestations that do not hold, each with its reason
        return None, exc.refusals
    except CertificateRefusedError as exc:  # the store found the newest one tampered with
        hint = CERTIFY_HINT.format(ref=image_ref(info))
        return None, (Refusal(reason="tampered", message=exc.message, hint=hint),)


def admit(
    info: ImageInfo,
    host: RunHost,
    find_certificate: FindCertificate,
    *,
    ref: str,
    command: Sequence[str],
    force: bool,
    say: Say,
    log_dir: Path | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Admitted:
    """The check before any run starts, whatever runtime starts it (Docker, Apptainer, enroot):
    the newest certificate for the image's ID that covers `host`, else the refusals. A refused run
    is logged (outcome "refused") and raises CertificateRefusedError unless `force`, which runs
    anyway with a warning per refusal, recorded. `extra` goes into the run log's record."""
    cert, refusals = covering_certificate(info, host, find_certificate)
    run_id = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    log_path = (log_dir or user_data_dir()) / RUN_LOG
    record: dict[str, Any] = {
        "run_id": run_id,
        "time": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "image": info.id,
        "ref": ref,
        "command": list(command),
        "gpu_access": host.access,
        **dict(extra or {}),
        "certificate": cert.content_hash if cert is not None else None,
        "refusals": [r.to_dict() for r in refusals],
        "forced": bool(refusals) and force,
    }
    if refusals and not force:
        log_run(log_path, {**record, "outcome": "refused"}, say)
        raise refusal_error(refusals)
    for r in refusals:
        say(f"envbuilder: warning: --force: running although {r.message} [{r.reason}]")
    if refusals:
        say(f"envbuilder: the forced run is recorded in {log_path}")
    if cert is not None and not refusals:
        say(
            f"envbuilder: certificate {cert.id[:12]} covers this run "
            f"({cert.verdict}); GPU access: {host.access}"
        )
    return Admitted(run_id=run_id, log_path=log_path, record=record, cert=cert, refusals=refusals)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedOptions:
    """The options of a run, checked and in their typed form (no Docker asked yet)."""

    env: dict[str, str]
    mounts: list[Mount]
    shm: int | None
    ports: tuple[PortBinding, ...]
    user: str | None
    name: str | None


def parse_options(opts: RunOptions) -> ParsedOptions:
    """Check every option that needs neither Docker nor the host (the CLI calls this before it
    pulls an image). Raises UsageError (bad -v/-e/-w/-p/-u/--name/--gpus/--shm-size/--ipc)."""
    if opts.ipc is not None and opts.ipc not in IPC_MODES:
        raise UsageError(f"unknown --ipc {opts.ipc!r}", hint=f"use one of {', '.join(IPC_MODES)}")
    env, mounts = parse_env(opts.env), [parse_volume(v) for v in opts.volumes]
    shm = parse_size(opts.shm_size) if opts.shm_size else None
    if opts.workdir is not None:
        parse_workdir(opts.workdir)
    ports = tuple(parse_publish(p) for p in opts.publish)
    if ports and opts.network in ("none", "host"):
        raise UsageError(
            f"-p publishes nothing with --network {opts.network}",
            hint="drop -p (with --network host the job's ports are the host's), or pick another network",
        )
    if opts.gpus is not None:
        parse_gpus(opts.gpus)
    return ParsedOptions(
        env=env,
        mounts=mounts,
        shm=shm,
        ports=ports,
        user=parse_user(opts.user) if opts.user is not None else None,
        name=parse_name(opts.name) if opts.name is not None else None,
    )


def run_image(
    opts: RunOptions,
    *,
    find_certificate: FindCertificate,
    eng: Engine | None = None,
    runtime: Runtime | None = None,
    probe: Callable[[], HostReport] | None = None,
    access_modes: Callable[[DaemonInfo], Sequence[AccessMode]] | None = None,
    say: Say | None = None,
    log_dir: Path | None = None,
    monitor_factory: Callable[..., Monitor] = Monitor,
    host_root: Path = Path("/"),
) -> RunOutcome:
    """Check the certificate, then run. Returns the job's exit code (the caller passes it on).

    No command runs the image's own CMD behind its ENTRYPOINT (as `docker run IMAGE`). With
    `--gpus`, the job gets those GPUs only and the certificate must cover exactly those.

    Raises UsageError (image not found, bad -v/-e/-w/-p/-u/--name/--gpus/--shm-size/--ipc),
    CertificateRefusedError (the certificate does not cover this run and not --force),
    NoGpuError (an explicit access mode this host lacks, --gpus without any), DockerUnavailableError;
    Ctrl-C stops the container and re-raises KeyboardInterrupt after logging.
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    parsed = parse_options(opts)
    env, mounts, shm, ports, user, name = (
        parsed.env, parsed.mounts, parsed.shm, parsed.ports, parsed.user, parsed.name
    )  # fmt: skip
    rt = runtime or get_runtime(DEFAULT, engine=eng)
    eng = rt.engine()
    target = prepare_target(rt, opts.image, opts.gpu_access, probe=probe, access_modes=access_modes)
    info, choice, report = target.image, target.choice, target.host
    selection = choose_gpus(opts, choice, report, host_root)
    host = run_host(report, choice, opts.gpu_access, native_cuda_of(report.driver))
    if selection is not None:  # the certificate must cover the GPUs the job gets, no others
        host = replace(host, gpus=selection.gpus)
    extra = {"gpus": list(selection.indexes)} if selection is not None else {}
    admitted = admit(
        info, host, find_certificate, ref=opts.image, command=opts.command, force=opts.force,
        say=say, log_dir=log_dir, extra=extra,
    )  # fmt: skip
    run_id, log_path, record, refusals = (
        admitted.run_id, admitted.log_path, admitted.record, admitted.refusals
    )  # fmt: skip
    spec = replace(
        training_container(
            info,
            choice,
            opts.command,
            runtime=rt,
            env=env,
            mounts=mounts,
            network=opts.network,
            gpus=selection,
            jit_cache="run" if opts.jit_cache else None,
            user=user,
        ),
        name=name or f"envbuilder-run-{run_id.lower()}",
        purpose="run",
        # A SIGKILLed client cannot log its run: the janitor that removes the container does.
        labels={RUN_LABEL: "1", **record_labels(log_path, record)},
        workdir=opts.workdir,
        ipc=opts.ipc,
        interactive=opts.interactive,
        tty=opts.tty,
        ports=ports,
    )
    if opts.ipc == "host":
        spec = replace(spec, shm_size=None)  # the host's /dev/shm is shared: no size of its own
    elif shm is not None:
        spec = replace(spec, shm_size=shm)
    warnings: list[str] = []
    spec, dropped = drop_refused_memlock(eng, spec)
    if dropped is not None:  # in the run log each time; said once a day per daemon
        warnings.append(dropped.warning)
        if not dropped.said_before:
            say(f"envbuilder: warning: {dropped.warning}")
    monitor = _start_monitor(opts, choice, selection, monitor_factory, say, warnings)
    if monitor is not None:
        container, engine = spec.name or "", eng
        monitor.watch_processes(lambda: engine.container_pids(container))
        monitor.start()
    started = time.monotonic()
    outcome, code = "interrupted", 130
    files: tuple[Path, ...] = ()
    attached: AttachedRun | None = None
    try:
        attached = eng.run_attached(spec, output_lines=OUTPUT_LINES if monitor is not None else 0)
        code, outcome = attached.exit_code, "exited"
    except KeyboardInterrupt as stop:  # the code the CLI exits with: 130 Ctrl-C, 143 SIGTERM/SIGHUP
        code = stop_error(stop).exit_code
        raise
    finally:
        seconds = round(time.monotonic() - started, 3)
        if monitor is not None:
            files = _finish_monitor(monitor, opts, run_id, info, seconds, say, attached)
        log_run(
            log_path,
            {
                **record,
                "outcome": outcome,
                "exit_code": code,
                "seconds": seconds,
                "monitor": [str(p) for p in files],
                "warnings": warnings,
            },
            say,
        )
    return RunOutcome(
        exit_code=code,
        run_id=run_id,
        refusals=refusals,
        forced=bool(refusals),
        monitor_files=files,
        warnings=tuple(warnings),
    )


def _start_monitor(
    opts: RunOptions,
    choice: AccessChoice,
    selection: GpuSelection | None,
    factory: Callable[..., Monitor],
    say: Say,
    warnings: list[str],
) -> Monitor | None:
    """The monitor of a --monitor run (not started): GPU telemetry when this host has it for the
    container (the --gpus GPUs only); the job's processes and output are read either way."""
    if not opts.monitor:
        return None
    only = {"indices": [g.index for g in selection.gpus]} if selection is not None else {}
    monitor = factory(gpus=choice.name != "none", **only)
    if not monitor.available:
        warnings.append(f"--monitor: no GPU telemetry ({monitor.why}); the job's output and CPU are read")
        say(f"envbuilder: warning: {warnings[-1]}")
    return monitor


def _finish_monitor(
    monitor: Monitor,
    opts: RunOptions,
    run_id: str,
    info: ImageInfo,
    seconds: float,
    say: Say,
    attached: AttachedRun | None,
) -> tuple[Path, ...]:
    """Stop the monitor, diagnose (None: interrupted, nothing read from the job), write the files
    and print the diagnosis."""
    gpus = monitor.stop()
    output = attached.output if attached is not None else ""
    findings = diagnose(
        gpus,
        output=read_job_output(output) if output else None,
        exit_code=attached.exit_code if attached is not None else None,
        processes=monitor.processes(),
        oom_killed=attached.oom_killed if attached is not None else False,
        xids=monitor.xids(),
    )
    folder = opts.monitor_dir or user_data_dir() / "runs" / run_id
    context = {
        "run_id": run_id,
        "image": info.id,
        "ref": image_ref(info),
        "command": list(opts.command),
        "seconds": seconds,
        "interval_s": monitor.interval,
    }
    try:
        paths = write_monitor_files(
            folder,
            gpus,
            findings,
            context,
            processes=monitor.processes_record(),
            output=output,
            xids=monitor.xids(),
            unsupported=monitor.unsupported(),
        )
    except OSError as exc:
        say(f"envbuilder: warning: could not write telemetry to {folder}: {exc}")
        return ()
    say(f"envbuilder: monitor ({short_id(info.id)}): telemetry {paths[0]}, diagnosis {paths[1]}")
    say(format_diagnosis(findings).rstrip())
    return paths
