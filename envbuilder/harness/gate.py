"""The short mode `envbuilder check` runs inside the image before a job: on each GPU the CUDA
smoke, the framework's kernel for its arch, a bf16 GEMM and a device-memory copy
(steps/gate.py gpu_figures), and with 2+ GPUs an all-reduce loopback over all of them. No
training, no thresholds: the host compares the figures with the image's certificate. One JSON
line per step on stdout, the last line the gate document ({"kind": "gate_result"}); prose on
stderr. Runs under a watchdog well inside Slurm's 60 s HealthCheckProgram limit.

`python3 HARNESS/gate_run.py [--out FILE] [--nonce N] [--cpu-only] [--watchdog-seconds S]`
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from . import HARNESS_VERSION
from .hostinfo import gpu_devices_present
from .record import FAIL, Recorder, Step, log, utc_now

GATE_KIND = "gate_result"
GATE_SCHEMA_VERSION = 1
NO_GPU = "CPU path: no GPU was given to this check (none on this host, or --gpu-access none)"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_WATCHDOG = 0, 1, 2, 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="envbuilder_harness gate", description=__doc__.splitlines()[0])
    p.add_argument("--out", help="also write the gate document to this file")
    p.add_argument("--nonce", help="a token echoed in the document (check verifies it came from this run)")
    p.add_argument("--cpu-only", action="store_true", help="no GPU steps (the CPU path)")
    p.add_argument(
        "--framework",
        default="torch",
        help="the image's framework (its stack): it must import; the GPU figures are taken with torch",
    )
    p.add_argument("--watchdog-seconds", type=float, default=45.0, help="hard stop for hangs")
    p.add_argument("--allreduce-timeout", type=float, default=25.0, help="all-reduce loopback limit (s)")
    # Tests only: the all-reduce loopback's code path with gloo and N CPU processes (the CPU path).
    p.add_argument("--allreduce-cpu-test", type=int, default=0, metavar="N", help=argparse.SUPPRESS)
    p.add_argument(
        "--expect",
        help="JSON (or @FILE): the certified GPU models, their figures and the bands; with it this "
        "mode judges itself (a Kubernetes init container: `fleet constraints` writes it) and exits "
        "0 on PASS or WARN, 2 on FAIL",
    )
    return p.parse_args(argv)


def judge_share(measured: float, reference: float, warn_below: float, fail_below: float) -> str:
    """A figure against the certified one: "fail" below fail_below x it, "warn" below warn_below
    x it, else "pass" ("skip" without a reference). The copy of check/findings.py Band.judge the
    image runs: tests/unit/test_check.py drives both through one case table."""
    if reference <= 0:
        return "skip"
    share = measured / reference
    if share < fail_below:
        return "fail"
    if share < warn_below:
        return "warn"
    return "pass"


def finite_figure(value: Any) -> float | None:
    """A figure of a document as a finite float, else None: never a bool (JSON's `true` is no
    1.0); NaN and Infinity, which Python's json reads, are none (no band fails NaN: NaN < x is
    false), and an integer past a float's range too (float() raises). The one rule for the figures
    of gate.json (from the image under test), of an --expect (may be written by hand) and of a
    certificate (check/image.py)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def device_count(value: Any) -> int | None:
    """facts.device_count as a count: a JSON integer of 0 or more (never a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def judge_gpus(
    facts: Any, steps: Any, handed_in: int
) -> tuple[Literal["pass", "warn", "fail"], str, str, dict[str, Any]]:
    """(status, why, message, value): did the short mode see, and step on, each of the
    `handed_in` GPUs (1 or more) its container was given? The one rule of `envbuilder check`'s
    image.gpus (check/image.py judge_seen, on a node) and of an --expect run's own `gpus` finding
    (judge_expect, the Kubernetes init container, with the count the certification ran on).
    It sees fewer where the image's ENV sets CUDA_VISIBLE_DEVICES (or its runtime hides some):
    its figures then speak for those GPUs only, so fewer is a failure of the image. Its count is
    facts.device_count (torch.cuda.device_count() in the image; 0 where it took the CPU path),
    and gpuN steps must exist for GPUs 0..handed_in-1. A GPU run that does not say its count is
    not taken as having seen them: a failure, except where the short mode says it measured
    nothing (`facts.measured` false: the image's framework is not torch, and the figures are
    torch's): a warning, since none of its GPUs was looked at. `why`: seen, unmeasured, unsaid,
    fewer or unstepped."""
    facts = facts if isinstance(facts, Mapping) else {}
    named = {s.get("name") for s in steps if isinstance(s, Mapping)} if isinstance(steps, list) else set()
    stepped = [i for i in range(handed_in) if f"gpu{i}" in named]
    hidden = facts.get("cuda_visible_devices")
    where = f" (CUDA_VISIBLE_DEVICES={hidden} in the image)" if isinstance(hidden, str) else ""
    if facts.get("gpu_path") is False:
        where = " (it found no GPU device node, /dev/nvidia*, and took the CPU path)"
    count = 0 if facts.get("gpu_path") is False else device_count(facts.get("device_count"))
    value: dict[str, Any] = {"handed_in": handed_in, "seen": count, "stepped": len(stepped)}
    if count is None and facts.get("measured") is False:
        said = (
            f"the image's run looked at none of the {handed_in} GPU(s) handed in: the short mode "
            f"measures with torch, the image's framework is {facts.get('framework')}"
        )
        return "warn", "unmeasured", said, value
    if count is None:
        said = (
            f"the image's run did not say how many GPUs it saw (facts.device_count "
            f"{facts.get('device_count')!r}): none of the {handed_in} GPU(s) handed in is taken as seen"
        )
        return "fail", "unsaid", said, value
    if count < handed_in:
        said = (
            f"the image saw {count} of {handed_in} GPUs handed in{where}: the others were "
            "neither smoke-tested nor measured"
        )
        return "fail", "fewer", said, value
    missing = [i for i in range(handed_in) if i not in stepped]
    if missing:
        said = (
            f"the image saw {count} GPUs but its run has no step for GPU "
            f"{', '.join(map(str, missing))} of the {handed_in} handed in: those were not tested"
        )
        return "fail", "unstepped", said, value
    more = f" (it saw {count})" if count > handed_in else ""
    return "pass", "seen", f"the image saw and tested all {handed_in} GPU(s) handed in{more}", value


def judge_expect(steps: list[dict[str, Any]], expect: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings of an --expect run: each GPU is a certified model, its GEMM and copy within
    the bands of the certified figures; a failed step fails."""
    models = set(expect.get("models") or [])
    figures = expect.get("certified") or {}
    bands = expect.get("bands") or {}
    out: list[dict[str, Any]] = []
    for st in steps:
        name, m = st["name"], st.get("metrics") or {}
        if st["status"] == FAIL:
            out.append({"check": name, "status": "fail", "message": st.get("reason", "")})
            continue
        if not name.startswith("gpu") or st["status"] != "pass":
            continue
        model = m.get("device_name")
        if model not in models:
            out.append(
                {
                    "check": f"{name}.model",
                    "status": "fail",
                    "message": f"{model} is not a GPU model the image is certified on ({sorted(models)})",
                }
            )
            continue
        for key, band in (("bf16_gemm_tflops", "gemm"), ("copy_gbs", "copy")):
            ref, got = finite_figure((figures.get(model) or {}).get(key)), finite_figure(m.get(key))
            b = bands.get(band) or {}
            if ref is None or ref <= 0 or not b:
                out.append({"check": f"{name}.{band}", "status": "skip", "message": "no certified figure"})
                continue
            if got is None:
                out.append({"check": f"{name}.{band}", "status": "skip", "message": f"{key} not measured"})
                continue
            status = judge_share(got, ref, float(b["warn_below"]), float(b["fail_below"]))
            out.append(
                {
                    "check": f"{name}.{band}",
                    "status": status,
                    "message": f"{key} {got:.1f} = {got / ref:.0%} of the certified {ref:.1f}",
                }
            )
    return out


def judge_expected_gpus(doc: dict[str, Any], expect: dict[str, Any]) -> list[dict[str, Any]]:
    """The `gpus` finding of an --expect run: the short mode saw and stepped on as many GPUs as
    the certification ran on (expect's `gpus`: the count the init container asks for), by
    judge_gpus; none where the expectation states no count (one written before it did)."""
    want = expect.get("gpus")
    if want is None:
        return []
    status, _, message, _ = judge_gpus(doc.get("facts"), doc.get("steps"), want)
    return [{"check": "gpus", "status": status, "message": message}]


def read_expect(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    raw = Path(text[1:]).read_text() if text.startswith("@") else text
    doc = json.loads(raw)
    if not isinstance(doc, dict):
        raise ValueError("--expect must be a JSON object")
    if "gpus" in doc and not (device_count(doc["gpus"]) or 0) >= 1:
        raise ValueError(f"--expect's gpus must be a count of 1 or more, not {doc['gpus']!r}")
    return doc


def run_gate(args: argparse.Namespace, rec: Recorder) -> dict[str, Any]:
    """The steps; returns the facts the document carries (device count, torch version)."""
    facts: dict[str, Any] = {"python": sys.version.split()[0]}
    gpu_path = not args.cpu_only and gpu_devices_present()
    facts["gpu_path"] = gpu_path
    facts["framework"] = args.framework
    if importlib.util.find_spec(args.framework) is None:
        rec.fail("framework", f"{args.framework} is not installed in this image: it cannot run its framework")
        return facts
    if args.framework != "torch":  # the figures are torch's: another framework's image is not measured
        with rec.step("framework") as st:
            module = importlib.import_module(args.framework)
            st.metrics.update(framework=args.framework, version=getattr(module, "__version__", None))
        for name in ("cuda_smoke", "allreduce_loopback"):
            rec.skip(name, f"the short mode measures with torch; this image's framework is {args.framework}")
        facts["measured"] = False  # check's image.gpus: none of the GPUs was looked at (a warning)
        return facts
    with rec.step("framework") as st:
        import torch

        st.metrics.update(framework="torch", version=torch.__version__, cuda_build=torch.version.cuda)
        facts["torch"] = torch.__version__
    if not gpu_path:
        rec.skip("cuda_smoke", NO_GPU)
        if args.allreduce_cpu_test >= 2:
            from .steps.gate import allreduce_loopback

            with rec.step("allreduce_loopback") as st:
                st.metrics.update(
                    allreduce_loopback(
                        args.allreduce_cpu_test,
                        backend="gloo",
                        nbytes=1 << 20,
                        iters=3,
                        timeout_s=args.allreduce_timeout,
                    )
                )
        else:
            rec.skip("allreduce_loopback", NO_GPU)
        return facts
    from .steps.gate import allreduce_loopback, gpu_figures

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    facts["device_count"] = count
    facts["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")  # what hides GPUs from it
    if count == 0:
        rec.fail(
            "cuda_smoke",
            f"the GPU device nodes are here but torch.cuda.is_available() is False (torch "
            f"{torch.__version__}, built for CUDA {torch.version.cuda}): the driver libraries, the "
            "CUDA build of torch or the driver version",
        )
        rec.skip("allreduce_loopback", "no GPU usable")
        return facts
    for i in range(count):
        with rec.step(f"gpu{i}") as st:
            st.metrics.update(gpu_figures(i))
    if count < 2:
        rec.skip("allreduce_loopback", f"{count} GPU: an all-reduce needs 2 or more")
    elif any(s.status == FAIL for s in rec.steps):
        rec.skip("allreduce_loopback", "a GPU step failed: no all-reduce over a broken GPU")
    else:
        with rec.step("allreduce_loopback") as st:
            st.metrics.update(allreduce_loopback(count, timeout_s=args.allreduce_timeout))
    return facts


def gate_document(
    rec: Recorder, facts: dict[str, Any], *, started: str, wall_s: float, nonce: str | None
) -> dict[str, Any]:
    steps, _ = rec.snapshot()
    return {
        "kind": GATE_KIND,
        "schema_version": GATE_SCHEMA_VERSION,
        "harness_version": HARNESS_VERSION,
        "nonce": nonce,
        "started": started,
        "finished": utc_now(),
        "wall_seconds": round(wall_s, 3),
        "facts": facts,
        "steps": [s.to_json() for s in steps],
    }


def _write(doc: dict[str, Any], out: str | None, rec: Recorder) -> None:
    if out:
        try:
            Path(out).write_text(json.dumps(doc, allow_nan=False) + "\n")
        except OSError as e:
            log(f"cannot write --out {out}: {e}")
    with rec.lock:
        print(json.dumps(doc, allow_nan=False), flush=True)


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    started = utc_now()
    args = parse_args(argv)
    try:
        expect = read_expect(args.expect)
    except (OSError, ValueError) as e:
        print(f"envbuilder_harness gate: error: --expect: {e}", file=sys.stderr)
        return EXIT_USAGE
    rec = Recorder()
    facts: dict[str, Any] = {}

    def on_watchdog() -> None:
        rec.lock.acquire()  # held until os._exit: no step line may follow the document
        why = f"step {rec.current or 'between steps'} still running after {args.watchdog_seconds:.0f} s"
        rec.emit(Step(name="watchdog", status=FAIL, reason=why))
        _write(
            gate_document(rec, facts, started=started, wall_s=time.monotonic() - t0, nonce=args.nonce),
            args.out,
            rec,
        )
        os._exit(EXIT_WATCHDOG)

    timer = threading.Timer(args.watchdog_seconds, on_watchdog)
    timer.daemon = True
    timer.start()
    try:
        facts.update(run_gate(args, rec))
    finally:
        timer.cancel()
    doc = gate_document(rec, facts, started=started, wall_s=time.monotonic() - t0, nonce=args.nonce)
    if expect is not None:
        findings = judge_expect(doc["steps"], expect) + judge_expected_gpus(doc, expect)
        statuses = {f["status"] for f in findings}
        verdict = "FAIL" if "fail" in statuses else "WARN" if "warn" in statuses else "PASS"
        doc.update(verdict=verdict, findings=findings, certificate=expect.get("certificate"))
        for f in findings:
            if f["status"] in ("warn", "fail"):
                log(f"{f['status'].upper()} {f['check']}: {f['message']}")
        _write(doc, args.out, rec)
        log(f"verdict: {verdict}")
        return EXIT_USAGE if verdict == "FAIL" else EXIT_OK  # exit 2 fails the init container
    _write(doc, args.out, rec)
    return EXIT_FAILED if any(s["status"] == FAIL for s in doc["steps"]) else EXIT_OK
