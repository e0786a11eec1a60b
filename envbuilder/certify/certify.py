"""`certify`: run the harness inside an image with GPU access and turn its result into a Certificate.

Chooses the GPU access mode (toolkit, cdi, devices, none), builds the container (shared memory,
ulimits, no network, the thresholds and an output folder mounted), streams the harness's progress,
and seals its result together with the image and host records (envbuilder/certify/certificate.py).
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from envbuilder.certify.certificate import VERDICTS, Certificate, build_certificate, host_fingerprint
from envbuilder.certify.gpu_access import (
    drop_refused_memlock,
    prepare_target,
    training_container,
)
from envbuilder.certify.kernels import disagreements, inventory_of, judge_inventory
from envbuilder.certify.observe import GpuWatch
from envbuilder.certify.scheduler import scheduler_section
from envbuilder.certify.verdict import REFUSED, RunFacts, host_verdict
from envbuilder.engine import ContainerSpec, DaemonInfo, DockerEngine, Engine, Mount, docker_run_argv
from envbuilder.errors import BuildFailedError, CertificationFailedError, MatrixError
from envbuilder.harness.digest import tree_digest
from envbuilder.host import AccessMode, HostReport, probe_host
from envbuilder.host.collectives import collective_env
from envbuilder.image.drift import check_against_lock, parse_installed, summarize
from envbuilder.image.lock import LockFile
from envbuilder.image.metadata import LABEL_HARNESS, ImageMetadata, read_metadata
from envbuilder.image.spec import CertifySettings
from envbuilder.lifecycle import temp_dir
from envbuilder.matrix import load_matrix
from envbuilder.resolve.model import Stack
from envbuilder.resources import harness_dir as harness_source_dir
from envbuilder.resources import matrices_dir

HOST_HARNESS_DIR = "/opt/envbuilder-host/harness"  # where the host's copy goes (read-only), always
IO_DIR = "/envbuilder-io"  # mounted read-write: thresholds.json in, result.json out
TIMEOUT_S = {"full": 1800.0, "quick": 600.0}

Progress = Callable[[str], None]


def harness_command(
    harness_dir: str,
    *,
    quick: bool,
    cpu: bool,
    watchdog_s: float,
    budget_s: float | None = None,
    steps: int | None = None,
    framework: str | None = None,
    nonce: str | None = None,
) -> tuple[str, ...]:
    """The payload's command line inside the container (envbuilder/harness/cli.py). Its watchdog
    fires before our container timeout, so a hung run still leaves a failed result behind."""
    argv = ["python3", f"{harness_dir}/run.py", "--out", f"{IO_DIR}/result.json"]
    if nonce is not None:
        argv += ["--nonce", nonce]
    argv += ["--thresholds", f"{IO_DIR}/thresholds.json", "--watchdog-seconds", f"{watchdog_s:g}"]
    if quick:
        argv.append("--quick")
    if cpu:
        argv.append("--cpu-only")
    if budget_s is not None:
        argv += ["--budget-seconds", f"{budget_s:g}"]
    if steps is not None:
        argv += ["--steps", str(steps)]
    if framework is not None:
        argv += ["--framework", framework]
    return tuple(argv)


def load_thresholds(overrides: Mapping[str, float] | None = None) -> tuple[dict[str, Any], list[str]]:
    """matrices/thresholds.yaml with an image's overrides applied, and warnings for overrides that
    matched nothing. A plain key overrides `defaults`; `throughput.RUN.FIELD` overrides that field
    of RUN in every GPU entry that has RUN. Raises MatrixError when the file is unreadable."""
    path = matrices_dir() / "thresholds.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise MatrixError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("defaults"), dict):
        raise MatrixError(f"{path}: expected a mapping with a `defaults` mapping")
    doc["source_path"] = "matrices/thresholds.yaml"
    warnings: list[str] = []
    for key, value in sorted((overrides or {}).items()):
        parts = key.split(".")
        if len(parts) == 1:
            doc["defaults"][key] = value
        elif len(parts) == 3 and parts[0] == "throughput":
            hits = [g for g in doc.get("gpus") or [] if parts[1] in (g.get("throughput") or {})]
            for entry in hits:
                entry["throughput"][parts[1]][parts[2]] = value
            if not hits:
                warnings.append(f"threshold override {key} matched no GPU entry")
        else:
            warnings.append(f"threshold override {key} ignored (use NAME or throughput.RUN.FIELD)")
    doc["overrides"] = dict(overrides or {})
    return doc, warnings


def parse_harness_output(io_dir: Path | None, stdout: str) -> dict[str, Any] | None:
    """The harness result: result.json in the io folder (None: there is none, e.g. a pod's log
    alone), else the last JSON line of stdout."""
    candidates = []
    out = io_dir / "result.json" if io_dir is not None else None
    if out is not None and out.is_file():
        candidates.append(out.read_text(encoding="utf-8", errors="replace"))
    candidates += [line for line in reversed(stdout.splitlines()) if line.startswith("{")][:1]
    for text in candidates:
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "result":
            return doc
    return None


def decide(result: Mapping[str, Any], exit_code: int, access: str, stack: Stack | None) -> tuple[str, str]:
    """The certificate's verdict: the harness's, made stricter. A GPU stack run with GPU access
    (`access`: the mode, or the runtime that handed the GPUs in; "none" for the CPU path) that
    only saw the CPU failed (the classic `torch.cuda.is_available() == False` in a container)."""
    verdict = str(result.get("verdict"))
    reason = str(result.get("verdict_reason") or "")
    if verdict not in VERDICTS:
        return "failed", f"harness gave an unknown verdict {verdict!r}"
    if verdict == "certified-cpu-only" and access != "none" and stack is not None and stack.cuda:
        return "failed", (
            f"the container got the GPUs ({access}) but the {stack.id} stack "
            "only ran on the CPU: the framework does not see the GPU inside this image"
        )
    if verdict != "failed" and exit_code != 0:
        return "failed", f"harness exited {exit_code} after a {verdict} result"
    return verdict, reason


def host_record(report: HostReport, gpu_access: str) -> dict[str, Any]:
    gpus = [{"name": g.name, "uuid": g.uuid, "cc": g.cc} for g in report.gpus]
    return {
        "fingerprint": host_fingerprint(report.driver, gpus),
        "driver": report.driver,
        "cuda_driver": report.cuda_driver,
        "gpus": gpus,
        "gpu_access": gpu_access,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessPlan:
    """How the harness runs in an image: its command line, the thresholds document it reads, where
    it lies (the image's own copy, or the host's mounted for an unlabelled image), its level and
    time limit, and the warnings on the way. One plan for `certify` and for runs a scheduler starts."""

    command: tuple[str, ...]
    thresholds: dict[str, Any]
    harness_dir: str
    host_harness: str | None  # the host's copy to mount at harness_dir; None: the image has its own
    quick: bool
    limit_s: float
    warnings: tuple[str, ...] = ()


def plan_harness(
    meta: ImageMetadata,
    *,
    quick: bool,
    cpu: bool,
    thresholds: Mapping[str, float] | None = None,
    timeout_s: float | None = None,
    budget_s: float | None = None,
    steps: int | None = None,
    framework: str | None = None,
) -> HarnessPlan:
    """The harness run for an image with these labels: the spec's certify settings (level,
    threshold overrides, which `thresholds` override in turn), the watchdog before the limit;
    `framework` where the stack label names none. Raises MatrixError (thresholds file)."""
    settings = meta.certify or CertifySettings()
    doc, warnings = load_thresholds({**dict(settings.thresholds), **(thresholds or {})})
    warnings = [*(f"image {p}" for p in meta.problems), *warnings]
    harness_dir = meta.harness
    host_harness = None
    if not harness_dir:
        harness_dir, host_harness = HOST_HARNESS_DIR, str(harness_source_dir())
        warnings.append(f"image has no {LABEL_HARNESS} label: the host's harness copy was mounted")
    run_quick = quick or settings.level == "quick"
    limit = timeout_s or TIMEOUT_S["quick" if run_quick else "full"]
    command = harness_command(
        harness_dir,
        quick=run_quick,
        cpu=cpu,
        watchdog_s=max(10.0, limit - 30.0),
        budget_s=budget_s,
        steps=steps,
        framework=meta.framework or framework,
    )
    return HarnessPlan(
        command=command,
        thresholds=doc,
        harness_dir=harness_dir,
        host_harness=host_harness,
        quick=run_quick,
        limit_s=limit,
        warnings=tuple(warnings),
    )


def certify_image(
    image_ref: str,
    *,
    gpu_access: str = "auto",
    quick: bool = False,
    thresholds: Mapping[str, float] | None = None,
    progress: Progress | None = None,
    eng: Engine | None = None,
    probe: Callable[[], HostReport] | None = None,
    access_modes: Callable[[DaemonInfo], Sequence[AccessMode]] | None = None,
    mem_total: int | None = None,
    timeout_s: float | None = None,
    budget_s: float | None = None,
    steps: int | None = None,
    framework: str | None = None,
    lock: LockFile | None = None,
    observe: Callable[[], HostReport] | None = None,
) -> Certificate:
    """Certify `image_ref` on this host and return the sealed certificate (failed ones too: the
    caller stores the evidence, then raises). `thresholds` override the image's own overrides;
    `budget_s` and `steps` are handed to the harness (its time budget, training steps);
    `framework` is what it certifies for when the image's stack label does not say (an image
    envbuilder did not build), else the label's. With `lock`, the image's installed set is read
    (harness/installed.py, in the image) and recorded; a locked package missing, at another
    version, or (this image's own lock) from another wheel fails certification, named. The harness
    that runs is the host's own copy, mounted read-only; the verdict is the host's
    (certify/verdict.py), from the result's step records and what `observe` (default: `probe`,
    else probe_host) saw of the GPUs during the run.

    Raises UsageError (image not found), NoGpuError (an explicit mode this host lacks),
    DockerUnavailableError, MatrixError (thresholds file), CertificationFailedError (the harness
    produced no result: it crashed, was killed or timed out).
    """
    say = progress or (lambda _line: None)
    eng = eng or DockerEngine()
    target = prepare_target(eng, image_ref, gpu_access, probe=probe, access_modes=access_modes)
    info, choice = target.image, target.choice
    say(f"certify: GPU access {choice.name} ({choice.reason})")
    if choice.name == "none":
        say("certify: CPU path: the result will NOT be a GPU certification")
    meta = read_metadata(info)
    settings = meta.certify or CertifySettings()
    doc, warnings = load_thresholds({**dict(settings.thresholds), **(thresholds or {})})
    warnings = [*(f"image {p}" for p in meta.problems), *warnings]
    # The image's own copy (meta.harness) never runs: the host's is mounted read-only and checked.
    harness_dir, host_harness = HOST_HARNESS_DIR, harness_source_dir()
    harness_sha256, nonce = tree_digest(host_harness), secrets.token_hex(16)
    for w in warnings:
        say(f"certify: warning: {w}")
    run_quick = quick or settings.level == "quick"
    tmp = temp_dir("certify")
    try:
        tmp.chmod(0o777)  # the image runs as a non-root user that must write result.json
        (tmp / "thresholds.json").write_text(json.dumps(doc, sort_keys=True), encoding="utf-8")
        mounts = [Mount(source=str(tmp), target=IO_DIR)]
        mounts.append(Mount(source=str(host_harness), target=harness_dir, read_only=True))
        limit = timeout_s or TIMEOUT_S["quick" if run_quick else "full"]
        command = harness_command(
            harness_dir,
            quick=run_quick,
            cpu=choice.name == "none",
            watchdog_s=max(10.0, limit - 30.0),
            budget_s=budget_s,
            steps=steps,
            framework=meta.framework or framework,
            nonce=nonce,
        )
        spec = training_container(
            info,
            choice,
            command,
            env={"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
            mounts=mounts,
            mem_total=mem_total,
        )
        spec = replace(spec, purpose="certify")
        passed = [f"{k}={v}" for k, v in collective_env(spec.env).items()]
        if passed:
            say(f"certify: the host's collective settings go in: {' '.join(passed)}")
        spec, refused = drop_refused_memlock(eng, spec)
        if refused:
            warnings.append(refused)
            say(f"certify: warning: {refused}")
        watch = None
        if choice.name != "none" and target.host.gpus:
            watch = GpuWatch(observe or probe or probe_host)
            watch.start()

        def on_stderr(line: str) -> None:
            if watch is not None:
                watch.tick()
            say(line)

        started = time.monotonic()
        res = eng.run(spec, on_stderr=on_stderr, timeout_s=limit)
        seconds = time.monotonic() - started
        observation = watch.stop() if watch is not None else None
        result = parse_harness_output(tmp, res.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if result is None:
        tail = "\n".join(res.stderr.splitlines()[-30:])
        raise CertificationFailedError(
            f"the harness in {image_ref} produced no result (exit {res.exit_code})\n"
            f"--- stderr tail ---\n{tail}",
            hint="exit 124 means it ran out of time; otherwise the payload crashed: see the tail above",
        )
    facts = RunFacts(
        nonce=nonce,
        harness_sha256=harness_sha256,
        exit_code=res.exit_code,
        choice=choice,
        stack=meta.stack,
        observation=observation,
    )
    verdict, reason = host_verdict(result, facts)
    if reason.startswith(REFUSED):
        say(f"certify: {reason}")
    verdict, reason = _judge_kernels(
        result, target.host, choice.name, meta.stack_record, verdict, reason, warnings, say
    )
    packages: dict[str, Any] | None = None
    if lock is not None:
        collector = ContainerSpec(
            image=info.id,
            command=("python3", f"{harness_dir}/installed.py"),
            mounts=tuple(m for m in mounts if m.target == harness_dir),  # the host's copy
        )
        try:
            installed = parse_installed(eng.run(collector, timeout_s=120).stdout, image_ref)
        except BuildFailedError as exc:
            raise CertificationFailedError(exc.message, hint="the image's Python must run") from None
        drifts, compared = check_against_lock(installed, lock, info.id)
        packages = {
            "compared_with": compared,
            "installed": [d.to_dict() for d in installed],
            "drift": [str(d) for d in drifts],
        }
        say(f"certify: packages: {len(installed)} installed, compared with {compared}: {len(drifts)} drift")
        if drifts and verdict != "failed":
            verdict, reason = "failed", f"package drift from the lock: {summarize(drifts)}"
    return build_certificate(
        image={"id": info.id, "ref": image_ref, "stack": meta.stack_record, "lock_hash": meta.lock_hash},
        host=host_record(target.host, choice.name),
        run={
            "gpu_access_reason": choice.reason,
            "quick": run_quick,
            "exit_code": res.exit_code,
            "seconds": round(seconds, 3),
            "docker_args": docker_run_argv(spec),
            "harness_dir": harness_dir,
            "harness_source": "host",
            "harness_sha256": harness_sha256,
            "host_observation": observation.to_json() if observation is not None else None,
            "warnings": warnings,
            **({"packages": packages} if packages is not None else {}),
            **scheduler_section(),
        },
        harness=result,
        thresholds=doc,
        verdict=verdict,
        verdict_reason=reason,
    )


def _judge_kernels(
    result: Mapping[str, Any],
    report: HostReport,
    access: str,
    stack: Any,
    verdict: str,
    reason: str,
    warnings: list[str],
    say: Progress,
) -> tuple[str, str]:
    """The image's kernel inventory (the harness's kernel_inventory step) against this host's GPUs
    and driver: a library with no kernel a GPU runs, or only PTX the driver cannot JIT, fails the
    certificate (naming the library); where the matrix row and the inventory disagree, a warning
    names both."""
    inv = inventory_of(result)
    if inv is None:
        return verdict, reason
    if isinstance(stack, Mapping) and stack.get("cuda"):
        archs_v, fw_v = stack.get("archs"), stack.get("framework")
        archs: Mapping[str, Any] = archs_v if isinstance(archs_v, Mapping) else {}
        fw: Mapping[str, Any] = fw_v if isinstance(fw_v, Mapping) else {}
        row = f"matrix row {fw.get('name')} {fw.get('version')}+{fw.get('variant')}"
        for line in disagreements(archs.get("sass", ()), archs.get("ptx", ()), row, inv, str(fw.get("name"))):
            warnings.append(line)
            say(f"certify: warning: {line}")
    if access == "none" or not report.gpus:
        return verdict, reason
    try:
        matrix = load_matrix()
    except MatrixError as exc:
        warnings.append(f"kernel inventory not judged: {exc.message}")
        return verdict, reason
    judged = judge_inventory(matrix, inv, [(g.name, g.cc) for g in report.gpus if g.cc], report.driver)
    for line in judged.warnings:
        warnings.append(line)
        say(f"certify: warning: {line}")
    if judged.failures and verdict != "failed":
        return "failed", "kernel inventory: " + "; ".join(judged.failures[:3])
    return verdict, reason
