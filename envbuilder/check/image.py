"""The image's side of `envbuilder check`: start the harness's short mode (harness/gate.py) in the
image the way certify starts its harness (certify/gpu_access.py training_container: the same GPU
access, shared memory, ulimits, no network), read its document back, and judge each GPU's figures
against what the certificate recorded for that GPU model (its `gate_baseline` step; its
multi_gpu sweep for the all-reduce)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from envbuilder.certify.certificate import Certificate
from envbuilder.certify.gpu_access import drop_refused_memlock, training_container
from envbuilder.certify.harness_plan import (
    HARNESS_ENV,
    HOST_HARNESS_DIR,
    IO_DIR,
    new_nonce,
    parse_harness_output,
)
from envbuilder.check.findings import Band, CheckThresholds, Finding
from envbuilder.engine import ContainerSpec, Engine, ImageInfo, Mount
from envbuilder.frameworks import DEFAULT as DEFAULT_FRAMEWORK
from envbuilder.harness.gate import GATE_KIND, finite_figure, judge_gpus
from envbuilder.image.metadata import read_metadata
from envbuilder.lifecycle import temp_dir
from envbuilder.resources import harness_dir
from envbuilder.runtime import AccessChoice, Runtime
from envbuilder.typed import ascii_int

GATE_MAX_BYTES = 1 << 20
Say = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class GateRun:
    """The short mode's document (None: it produced none), its exit code and stderr's tail."""

    doc: Mapping[str, Any] | None
    exit_code: int
    stderr_tail: str
    seconds: float


def gate_container(
    info: ImageInfo,
    choice: AccessChoice,
    *,
    io_dir: str,
    nonce: str,
    watchdog_s: float,
    framework: str | None = None,
    runtime: Runtime | None = None,
) -> ContainerSpec:
    """The one container `check` starts: the host's harness mounted read-only, its short mode
    (gate_run.py) as the command, GPU access per `choice` (none: --cpu-only). Kept in one
    function so the container start can move to the runtime layer in one place."""
    command = [
        "python3",
        f"{HOST_HARNESS_DIR}/gate_run.py",
        "--out",
        f"{IO_DIR}/gate.json",
        "--nonce",
        nonce,
        "--watchdog-seconds",
        f"{watchdog_s:g}",
    ]
    if choice.name == "none":
        command.append("--cpu-only")
    command += ["--framework", framework or read_metadata(info).framework or DEFAULT_FRAMEWORK]
    mounts = [
        Mount(source=io_dir, target=IO_DIR),
        Mount(source=str(harness_dir()), target=HOST_HARNESS_DIR, read_only=True),
    ]
    spec = training_container(info, choice, command, runtime=runtime, env=dict(HARNESS_ENV), mounts=mounts)
    return replace(spec, purpose="check")


def run_gate(
    eng: Engine,
    info: ImageInfo,
    choice: AccessChoice,
    *,
    timeout_s: float,
    say: Say,
    runtime: Runtime | None = None,
) -> GateRun:
    """Start the short mode, wait for it (at most `timeout_s`), read its document (the io
    folder's gate.json, else the last JSON line of stdout, as certify reads its result:
    parse_harness_output; its nonce must be this run's). Raises DockerUnavailableError."""
    import time

    nonce = new_nonce()
    tmp = temp_dir("check")
    try:
        tmp.chmod(0o777)  # the image may run as a non-root user that must write gate.json
        spec = gate_container(
            info, choice, io_dir=str(tmp), nonce=nonce, watchdog_s=max(5.0, timeout_s - 5), runtime=runtime
        )
        spec, dropped = drop_refused_memlock(eng, spec)
        if dropped is not None and not dropped.said_before:
            say(f"check: warning: {dropped.warning}")
        started = time.monotonic()
        res = eng.run(spec, on_stderr=say, timeout_s=timeout_s)
        seconds = time.monotonic() - started
        doc = parse_harness_output(
            tmp, res.stdout, filename="gate.json", kind=GATE_KIND, nonce=nonce, max_bytes=GATE_MAX_BYTES
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tail = "\n".join(res.stderr.splitlines()[-15:])
    return GateRun(doc=doc, exit_code=res.exit_code, stderr_tail=tail, seconds=seconds)


# --------------------------------------------------------------------------- judging


def _steps(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = doc.get("steps")
    return [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []


def _reference(value: Any) -> float | None:
    """A certificate's figure to judge against: a positive number (zero or below measured nothing:
    Band.judge takes it for none, and no share of it exists)."""
    number = finite_figure(value)
    return number if number is not None and number > 0 else None


def certified_figures(cert: Certificate | None) -> dict[str, dict[str, float]]:
    """The certificate's gate_baseline figures by GPU model: {device_name: {bf16_gemm_tflops,
    copy_gbs}} (empty: certified before the baseline existed, or on the CPU path)."""
    out: dict[str, dict[str, float]] = {}
    for step in cert.steps if cert is not None else ():
        if step.name != "gate_baseline" or step.status != "pass":
            continue
        name = step.metrics.get("device_name")
        figures = {
            k: v
            for k in ("bf16_gemm_tflops", "copy_gbs")
            if (v := _reference(step.metrics.get(k))) is not None
        }
        if isinstance(name, str) and figures:
            out[name] = figures
    return out


def certified_busbw(cert: Certificate | None, world: int, nbytes: int) -> float | None:
    """The certificate's multi_gpu busbw at `nbytes` (the sweep row of that size) for the same
    number of GPUs, else None."""
    for step in cert.steps if cert is not None else ():
        if step.name != "multi_gpu" or step.metrics.get("world_size") != world:
            continue
        rows = step.metrics.get("sweep")
        for row in rows if isinstance(rows, list) else ():
            if isinstance(row, Mapping) and row.get("bytes") == nbytes:
                return _reference(row.get("busbw_gbs"))
    return None


def _compare(
    check: str,
    what: str,
    unit: str,
    gpu: int | None,
    measured: float | None,
    reference: float | None,
    band: Band,
    model: str,
    remedy: str,
) -> Finding:
    if measured is None:
        return Finding(check=check, status="skip", gpu=gpu, message=f"no {what} was measured")
    value = {"measured": round(measured, 2), "certified": None if reference is None else round(reference, 2)}
    if reference is None:
        return Finding(
            check=check,
            status="skip",
            gpu=gpu,
            value=value,
            message=f"{what} {measured:.1f} {unit}; the certificate records none for {model} "
            "(certified before `check` existed, or on another GPU model): not judged",
            remedy="",
        )
    status = band.judge(measured, reference)
    value["fraction"] = round(measured / reference, 3)
    text = (
        f"{what} {measured:.1f} {unit} = {measured / reference:.0%} of the certified {reference:.1f} {unit}"
    )
    if status == "fail":
        text += f" (below {band.fail_below:.0%})"
    elif status == "warn":
        text += f" (below {band.warn_below:.0%})"
    return Finding(
        check=check,
        status=status,
        gpu=gpu,
        value=value,
        message=text,
        remedy=remedy if status in ("warn", "fail") else "",
    )


HIDDEN_REMEDY = (
    "the image hides GPUs from its own processes: remove CUDA_VISIBLE_DEVICES (and "
    "NVIDIA_VISIBLE_DEVICES) from the image's ENV (`docker inspect IMAGE --format "
    "'{{.Config.Env}}'`), rebuild and certify it; a job picks its GPUs itself. If it saw no GPU, "
    "image.cuda_smoke says why"
)


def judge_seen(doc: Mapping[str, Any], handed_in: int) -> Finding:
    """Did the image's short mode see, and step on, every GPU handed in (`handed_in`, 1 or more)?
    harness/gate.py judge_gpus's rule (the same one the Kubernetes init container judges itself
    by), with the remedy for each way it fails."""
    status, why, message, value = judge_gpus(doc.get("facts"), doc.get("steps"), handed_in)
    remedy = {
        "unmeasured": "the certificate's figures are not checked on this node for a non-torch image; "
        "`envbuilder certify IMAGE --quick` runs its framework on every GPU",
        "unsaid": "run `envbuilder certify IMAGE --quick` on this node to see the image run in full",
        "fewer": HIDDEN_REMEDY,
        "unstepped": "run the check again; if it recurs, `envbuilder certify IMAGE --quick` on this node",
    }.get(why, "")
    return Finding(check="image.gpus", status=status, value=value, message=message, remedy=remedy)


def judge_gate(
    run: GateRun, cert: Certificate | None, t: CheckThresholds, *, handed_in: int | None = None
) -> list[Finding]:
    """The findings of the image's short mode, against the certificate's figures. `handed_in`:
    the GPUs the container was given (None: the CPU path, or not judged); with 1 or more, the
    run must have seen and stepped on each (judge_seen)."""
    if run.doc is None:
        return [
            Finding(
                check="image.run",
                status="fail",
                message=f"the check's harness produced no result in the image (exit {run.exit_code}): "
                + (run.stderr_tail.splitlines()[-1][:300] if run.stderr_tail else "no output"),
                remedy="run `envbuilder certify IMAGE --quick` on this node to see the image fail in full; "
                "exit 124 means it ran out of time",
            )
        ]
    figures = certified_figures(cert)
    out: list[Finding] = []
    for step in _steps(run.doc):
        name, status = str(step.get("name")), str(step.get("status"))
        reason = str(step.get("reason") or "")
        m = step.get("metrics") if isinstance(step.get("metrics"), Mapping) else {}
        assert isinstance(m, Mapping)
        if name == "framework":
            if status == "fail":
                out.append(
                    Finding(
                        check="image.framework",
                        status="fail",
                        message=reason,
                        remedy="rebuild the image with its framework, then certify it",
                    )
                )
            else:
                build = f" (CUDA build {m.get('cuda_build')})" if "cuda_build" in m else ""
                out.append(
                    Finding(
                        check="image.framework",
                        status="pass",
                        value=m.get("version"),
                        message=f"{m.get('framework')} {m.get('version')} imports{build}",
                    )
                )
        elif name in ("cuda_smoke", "allreduce_loopback") and status == "skip":
            short = "allreduce" if name == "allreduce_loopback" else name
            out.append(Finding(check=f"image.{short}", status="skip", message=reason))
        elif name == "cuda_smoke" or (name.startswith("gpu") and status != "pass"):
            # a GPU step that did not pass (the harness writes pass or fail; any other status is
            # a document it did not write whole) is never a GPU that works
            gpu = ascii_int(name[3:])
            out.append(
                Finding(
                    check="image.cuda_smoke",
                    status="fail",
                    gpu=gpu,
                    message=reason or f"the step {name} ended {status!r} without a reason",
                    remedy="the image cannot use this GPU: `envbuilder doctor` for the node; "
                    "re-certify the image here if the stack changed",
                )
            )
        elif name.startswith("gpu"):
            gpu = ascii_int(name[3:])
            model = str(m.get("device_name"))
            ref = figures.get(model, {})
            out.append(
                Finding(
                    check="image.cuda_smoke",
                    status="pass",
                    gpu=gpu,
                    message=f"{model}: CUDA works, a GEMM matches the CPU",
                )
            )
            out.append(
                Finding(
                    check="image.kernels",
                    status="pass",
                    gpu=gpu,
                    value=m.get("arch_covered_by"),
                    message=f"torch has a kernel for compute capability {m.get('compute_capability')}: "
                    f"{m.get('arch_covered_by')}",
                )
            )
            slow = (
                "the GPU computes slower than when certified: look at node.clocks and node.processes; "
                "drain it if it stays so"
            )
            out.append(
                _compare(
                    "image.gemm",
                    "bf16 GEMM",
                    "TFLOP/s",
                    gpu,
                    finite_figure(m.get("bf16_gemm_tflops")),
                    ref.get("bf16_gemm_tflops"),
                    t.gemm,
                    model,
                    slow,
                )
            )
            out.append(
                _compare(
                    "image.copy",
                    "device-memory copy",
                    "GB/s",
                    gpu,
                    finite_figure(m.get("copy_gbs")),
                    ref.get("copy_gbs"),
                    t.copy,
                    model,
                    "GPU memory is slower than when certified: another process, or a degraded GPU",
                )
            )
        elif name == "allreduce_loopback":
            if status == "fail":
                out.append(
                    Finding(
                        check="image.allreduce",
                        status="fail",
                        message=reason,
                        remedy="NCCL cannot reduce across this node's GPUs: `nvidia-smi topo -m`, "
                        "NCCL_DEBUG=INFO; drain until fixed",
                    )
                )
                continue
            world, nbytes = m.get("world_size"), m.get("bytes")
            ref_bw = (
                certified_busbw(cert, world, nbytes)
                if isinstance(world, int) and isinstance(nbytes, int)
                else None
            )
            model = f"{world} GPUs"
            out.append(
                _compare(
                    "image.allreduce",
                    f"all-reduce busbw ({world} GPUs)",
                    "GB/s",
                    None,
                    finite_figure(m.get("busbw_gbs")),
                    ref_bw,
                    t.busbw,
                    model,
                    "the GPUs talk slower than when certified: NVLink/PCIe topology, NCCL settings",
                )
            )
        elif name == "watchdog":
            out.append(
                Finding(
                    check="image.run",
                    status="fail",
                    message=reason,
                    remedy="a GPU step hung: the GPU may be wedged; drain and reset it",
                )
            )
    if handed_in is not None and handed_in > 0:
        out.append(judge_seen(run.doc, handed_in))
    return out


def gate_summary(run: GateRun | None) -> dict[str, Any] | None:
    """What --json keeps of the short mode: its steps' names, statuses, seconds and wall time."""
    if run is None or run.doc is None:
        return (
            None
            if run is None
            else {"exit_code": run.exit_code, "steps": [], "seconds": round(run.seconds, 2)}
        )
    steps = [
        {"name": s.get("name"), "status": s.get("status"), "seconds": s.get("seconds")}
        for s in _steps(run.doc)
    ]
    return {
        "exit_code": run.exit_code,
        "seconds": round(run.seconds, 2),
        "steps": steps,
        "facts": json.loads(json.dumps(run.doc.get("facts") or {})),
    }


def summarise_refusals(refusals: Sequence[Any]) -> list[Finding]:
    """run/coverage.py's refusals as failed certificate findings (same reasons, same hints)."""
    return [
        Finding(
            check=f"certificate.{r.reason}", status="fail", message=r.message, remedy=r.hint, value=r.reason
        )
        for r in refusals
    ]
