"""`certify`: run the harness inside an image with GPU access and turn its result into a Certificate.

Chooses the GPU access mode (toolkit, cdi, devices, none), builds the container (shared memory,
ulimits, no network, the thresholds and an output folder mounted), streams the harness's progress,
and seals its result together with the image and host records (envbuilder/certify/certificate.py).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from envbuilder.certify.certificate import Certificate, build_certificate, host_fingerprint
from envbuilder.certify.gpu_access import (
    drop_refused_memlock,
    prepare_target,
    training_container,
)
from envbuilder.certify.harness_plan import HARNESS_ENV, IO_DIR, parse_harness_output, plan_harness
from envbuilder.certify.kernels import judge_kernels
from envbuilder.certify.observe import GpuWatch
from envbuilder.certify.scheduler import scheduler_section
from envbuilder.certify.smoke import run_project_smoke, smoke_container
from envbuilder.certify.verdict import REFUSED, RunFacts, host_verdict
from envbuilder.engine import ContainerSpec, DaemonInfo, Engine, Mount
from envbuilder.errors import BuildFailedError, CertificationFailedError
from envbuilder.host import AccessMode, HostReport, probe_host
from envbuilder.host.collectives import collective_env
from envbuilder.image.drift import check_against_lock, parse_installed, summarize
from envbuilder.image.lock import LockFile
from envbuilder.image.metadata import read_metadata
from envbuilder.lifecycle import temp_dir
from envbuilder.runtime import DEFAULT, Runtime
from envbuilder.runtime import get as get_runtime

Progress = Callable[[str], None]


def host_record(report: HostReport, gpu_access: str) -> dict[str, Any]:
    gpus = [{"name": g.name, "uuid": g.uuid, "cc": g.cc} for g in report.gpus]
    return {
        "fingerprint": host_fingerprint(report.driver, gpus),
        "driver": report.driver,
        "cuda_driver": report.cuda_driver,
        "gpus": gpus,
        "gpu_access": gpu_access,
    }


def certify_image(
    image_ref: str,
    *,
    gpu_access: str = "auto",
    quick: bool = False,
    jit_cache: bool = True,
    thresholds: Mapping[str, float] | None = None,
    progress: Progress | None = None,
    eng: Engine | None = None,
    runtime: Runtime | None = None,
    probe: Callable[[], HostReport] | None = None,
    access_modes: Callable[[DaemonInfo], Sequence[AccessMode]] | None = None,
    mem_total: int | None = None,
    timeout_s: float | None = None,
    budget_s: float | None = None,
    steps: int | None = None,
    framework: str | None = None,
    lock: LockFile | None = None,
    observe: Callable[[], HostReport] | None = None,
    nonce: str | None = None,
) -> Certificate:
    """Certify `image_ref` on this host and return the sealed certificate (failed ones too: the
    caller stores the evidence, then raises). `thresholds` override the image's own overrides;
    `budget_s` and `steps` are handed to the harness (its time budget, training steps);
    `framework` is what it certifies for when the image's stack label does not say (an image
    envbuilder did not build), else the label's. With `lock`, the image's installed set is read
    (harness/installed.py, in the image) and recorded; a locked package missing, at another
    version, or (this image's own lock) from another wheel fails certification, named. The image's
    own smoke command (its spec's certify.smoke) runs after the harness, quick or not, in a
    container of its own (certify/smoke.py): recorded as run.project_smoke, and a failure or a
    timeout fails certification. The harness
    that runs is the host's own copy, mounted read-only; the verdict is the host's
    (certify/verdict.py), from the result's step records and what `observe` (default: `probe`,
    else probe_host) saw of the GPUs during the run. `nonce`: the one the result must echo (a
    fleet job's, handed in by the host that submitted it), else a fresh one. `jit_cache`: the
    GPU containers keep certify's CUDA JIT cache volume of the image (certify/jit_cache.py).

    `runtime`: the container runtime (default docker, on `eng` when given: tests' fake engine).
    Raises UsageError (image not found, a mode the runtime lacks), NoGpuError (an explicit mode
    this host lacks), DockerUnavailableError, MatrixError (thresholds file),
    CertificationFailedError (the harness produced no result: it crashed, was killed or timed
    out), ContainerRuntimeError (a runtime that runs exported files: fleet certifies with those).
    """
    say = progress or (lambda _line: None)
    rt = runtime or get_runtime(DEFAULT, engine=eng)
    eng = rt.engine()
    target = prepare_target(rt, image_ref, gpu_access, probe=probe, access_modes=access_modes)
    info, choice = target.image, target.choice
    say(f"certify: GPU access {choice.name} ({choice.reason})")
    if choice.name == "none":
        say("certify: CPU path: the result will NOT be a GPU certification")
    meta = read_metadata(info)
    jit_owner = "certify" if jit_cache else None  # the harness's and the smoke's volume (jit_cache.py)
    # The image's own copy (meta.harness) never runs: the host's is mounted read-only and checked.
    plan = plan_harness(
        meta,
        quick=quick,
        cpu=choice.name == "none",
        thresholds=thresholds,
        timeout_s=timeout_s,
        budget_s=budget_s,
        steps=steps,
        framework=framework,
        nonce=nonce,
    )
    warnings = list(plan.warnings)
    for w in warnings:
        say(f"certify: warning: {w}")
    tmp = temp_dir("certify")
    try:
        tmp.chmod(0o777)  # the image runs as a non-root user that must write result.json
        (tmp / "thresholds.json").write_text(json.dumps(plan.thresholds, sort_keys=True), encoding="utf-8")
        mounts = [Mount(source=str(tmp), target=IO_DIR)]
        mounts.append(Mount(source=plan.host_harness, target=plan.harness_dir, read_only=True))
        command = plan.command
        spec = training_container(
            info,
            choice,
            command,
            runtime=rt,
            env=dict(HARNESS_ENV),
            mounts=mounts,
            mem_total=mem_total,
            jit_cache=jit_owner,
        )
        spec = replace(spec, purpose="certify")
        passed = [f"{k}={v}" for k, v in collective_env(spec.env).items()]
        if passed:
            say(f"certify: the host's collective settings go in: {' '.join(passed)}")
        spec, dropped = drop_refused_memlock(eng, spec)
        if dropped is not None:  # in the certificate each time; said once a day per daemon
            warnings.append(dropped.warning)
            if not dropped.said_before:
                say(f"certify: warning: {dropped.warning}")
        watch = None
        if choice.name != "none" and target.host.gpus:
            watch = GpuWatch(observe or probe or probe_host)
            watch.start()

        def on_stderr(line: str) -> None:
            if watch is not None:
                watch.tick()
            say(line)

        started = time.monotonic()
        res = rt.run(spec, on_stderr=on_stderr, timeout_s=plan.limit_s)
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
    # The project's own smoke command (the spec's certify.smoke), quick or not: the user's proof.
    smoke = meta.certify.smoke if meta.certify is not None else None
    smoke_record = None
    if smoke is not None:
        box = smoke_container(
            info,
            choice,
            smoke,
            mem_total=mem_total,
            without_memlock=dropped is not None,
            runtime=rt,
            jit_cache=jit_owner,
        )
        smoke_record = run_project_smoke(rt, smoke, box, say=say)
    facts = RunFacts(
        nonce=plan.nonce,
        harness_sha256=plan.harness_sha256,
        exit_code=res.exit_code,
        access=choice.name,
        stack=meta.stack,
        observation=observation,
        framework=plan.framework,
        container_seconds=seconds,
        cpu_seconds=res.cpu_seconds,
        project_smoke=smoke_record,
        gpus_given=len(target.host.gpus) if choice.name != "none" else None,  # all: no selection
    )
    verdict, reason = host_verdict(result, facts)
    if reason.startswith(REFUSED):
        say(f"certify: {reason}")
    gpus = [(g.name, g.cc or "") for g in target.host.gpus]  # an unread cc: judge_inventory warns
    judged = judge_kernels(
        result, gpus=gpus, driver=target.host.driver, access=choice.name, stack=meta.stack_record
    )
    for line in judged.warnings:
        warnings.append(line)
        say(f"certify: warning: {line}")
    if judged.failures and verdict != "failed":
        verdict, reason = "failed", "kernel inventory: " + "; ".join(judged.failures[:3])
    packages: dict[str, Any] | None = None
    if lock is not None:
        collector = ContainerSpec(
            image=info.id,
            command=("python3", f"{plan.harness_dir}/installed.py"),
            mounts=tuple(m for m in mounts if m.target == plan.harness_dir),  # the host's copy
        )
        try:
            installed = parse_installed(rt.run(collector, timeout_s=120).stdout, image_ref)
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
            "quick": plan.quick,
            "exit_code": res.exit_code,
            "seconds": round(seconds, 3),
            "docker_args": rt.argv(spec),
            "harness_dir": plan.harness_dir,
            "harness_source": "host",
            "harness_sha256": plan.harness_sha256,
            "host_observation": observation.to_json() if observation is not None else None,
            "host_cpu": {"cpu_seconds": res.cpu_seconds, "samples": res.cpu_samples, "source": "cgroup"},
            "warnings": warnings,
            **({"packages": packages} if packages is not None else {}),
            **({"project_smoke": smoke_record} if smoke_record is not None else {}),
            **scheduler_section(),
        },
        harness=result,
        thresholds=plan.thresholds,
        verdict=verdict,
        verdict_reason=reason,
    )
