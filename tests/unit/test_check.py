"""`envbuilder check` (issue 27 item 1): the verdict and its exit codes, the thresholds of
matrices/thresholds.yaml `check`, the node's NVML answers read through a fake NVML and judged, the
kernel's Xid lines, the image's short-mode figures against the certificate's, the --json schema,
and the whole check against the FakeEngine."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cert_factory import H200, IMAGE_ID, cert_doc
from click.testing import CliRunner
from fake_engine import FakeEngine

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.harness_plan import IO_DIR
from envbuilder.check.findings import (
    Band,
    Finding,
    load_check_thresholds,
    parse_thresholds,
    time_findings,
    validate_report,
    verdict_of,
    verdict_reason,
)
from envbuilder.check.gate import check_image
from envbuilder.check.image import GateRun, certified_busbw, certified_figures, judge_gate, run_gate
from envbuilder.check.node import judge_gpu, judge_xids
from envbuilder.engine import ContainerSpec, ImageInfo, RunResult
from envbuilder.errors import MatrixError
from envbuilder.host import AccessMode, HostReport
from envbuilder.host.health import XidLog, bus_key, gpu_health, kernel_xids, parse_kmsg, read_health
from envbuilder.runtime import AccessChoice

T = load_check_thresholds()
DEVICES = AccessMode(
    name="devices", available=True, detail="fake", devices=("/dev/nvidia0", "/dev/nvidiactl"),
    lib_dir="/usr/local/nvidia/lib64",
)  # fmt: skip


# --------------------------------------------------------------------------- verdict


def f(status: str, check: str = "x") -> Finding:
    return Finding(check=check, status=status, message=status)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        ((), "PASS"),
        (("pass", "skip", "note"), "PASS"),
        (("pass", "warn", "note"), "WARN"),
        (("warn", "fail", "pass"), "FAIL"),
        (("skip", "fail"), "FAIL"),
        (("skip", "skip"), "PASS"),
    ],
)
def test_the_verdict_is_the_worst_finding_and_skips_or_notes_never_change_it(
    statuses: tuple[str, ...], verdict: str
) -> None:
    assert verdict_of([f(s) for s in statuses]) == verdict


def test_the_reason_names_the_failures_before_the_warnings() -> None:
    findings = [f("warn", "node.clocks"), f("fail", "node.ecc"), replace(f("fail", "image.gemm"), gpu=3)]
    reason = verdict_reason(findings)
    assert reason.startswith("node.ecc: fail; image.gemm (GPU 3): fail") and "clocks" not in reason
    many = [f("fail", f"c{i}") for i in range(5)]
    assert verdict_reason(many).endswith("; and 2 more")
    assert verdict_reason([f("pass"), f("skip")]) == "1 check(s) passed, 1 skipped"


def test_the_reason_says_how_many_more_only_past_the_three_it_shows() -> None:
    three = [f("fail", f"c{i}") for i in range(3)]
    assert verdict_reason(three) == "c0: fail; c1: fail; c2: fail"
    assert verdict_reason([*three, f("fail", "c3")]).endswith("c2: fail; and 1 more")


def test_a_pass_reason_counts_the_checks_that_passed_not_the_skips_or_notes() -> None:
    assert verdict_reason([f("pass"), f("pass"), f("skip"), f("note")]) == "2 check(s) passed, 1 skipped"


def test_a_fail_reason_names_the_failures_alone_however_many_warnings() -> None:
    reason = verdict_reason([f("warn", "node.clocks"), f("fail", "node.ecc"), f("warn", "node.pcie")])
    assert reason == "node.ecc: fail"


@pytest.mark.parametrize(
    ("measured", "status"), [(100.0, "pass"), (90.0, "pass"), (89.9, "warn"), (70.0, "warn"), (69.9, "fail")]
)
def test_a_band_warns_below_its_warn_share_and_fails_below_its_fail_share(
    measured: float, status: str
) -> None:
    assert Band(warn_below=0.9, fail_below=0.7).judge(measured, 100.0) == status


def test_no_reference_is_no_judgement() -> None:
    assert Band(warn_below=0.9, fail_below=0.7).judge(1.0, 0.0) == "skip"


# --------------------------------------------------------------------------- thresholds


def test_the_repositorys_thresholds_file_has_a_check_section_with_its_bands() -> None:
    assert (T.gemm.warn_below, T.gemm.fail_below) == (0.90, 0.70)
    assert T.busbw.fail_below < T.busbw.warn_below <= 1
    assert (T.time_target_s, T.time_limit_s) == (30.0, 60.0)
    text = (Path(__file__).resolve().parents[2] / "matrices" / "thresholds.yaml").read_text()
    section = text[text.index("\ncheck:") :]
    # every number carries its reason on its line (data, with the why beside it)
    for line in section.splitlines()[1:]:
        if ":" in line and line.split(":", 1)[1].strip() and not line.strip().startswith("#"):
            assert "#" in line, line


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda c: c.pop("gemm"), "check.gemm"),
        (lambda c: c["copy"].update(fail_below=0.95), "fail_below 0.95 must be <= warn_below"),
        (lambda c: c.update(memory_held_fail_fraction=0.01), "memory_held_warn_fraction"),
        (lambda c: c.update(memory_held_fail_fraction=1.5), "memory_held_fail_fraction <= 1"),
        (lambda c: c.update(time_limit_s=10), "time_target_s"),
        (lambda c: c.update(pcie_width_fail="no"), "pcie_width_fail"),
        (lambda c: c.update(temperature_margin_c=True), "temperature_margin_c"),
    ],
)
def test_a_broken_check_section_is_refused_naming_its_field(change: Callable[[Any], Any], field: str) -> None:
    section = {
        "gemm": {"warn_below": 0.9, "fail_below": 0.7},
        "copy": {"warn_below": 0.9, "fail_below": 0.7},
        "busbw": {"warn_below": 0.85, "fail_below": 0.5},
        "memory_held_warn_fraction": 0.05,
        "memory_held_fail_fraction": 0.5,
        "temperature_margin_c": 5,
        "pcie_width_fail": False,
        "time_target_s": 30,
        "time_limit_s": 60,
    }
    parse_thresholds({"check": section})  # the baseline holds
    change(section)
    with pytest.raises(MatrixError, match=field.replace("(", r"\(")):
        parse_thresholds({"check": section})


def test_time_is_a_note_past_the_target_and_a_warning_near_the_hard_limit() -> None:
    assert time_findings(12.0, T) == []
    assert [x.status for x in time_findings(31.0, T)] == ["note"]
    near = time_findings(50.5, T)
    assert [x.status for x in near] == ["warn"] and "60 s" in near[0].message


# --------------------------------------------------------------------------- NVML, faked


class NVMLError(Exception):
    pass


NOT_SUPPORTED = NVMLError("Not Supported")


class Obj:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


class FakeNvml:
    """nvidia-ml-py's calls `gpu_health` makes, answering from `answers` (an exception is raised)."""

    def __init__(self, **over: Any) -> None:
        gib = 1 << 30
        self.answers: dict[str, Any] = {
            "nvmlDeviceGetName": "NVIDIA H200",
            "nvmlDeviceGetUUID": "GPU-1",
            "nvmlDeviceGetPciInfo": Obj(busId=b"00000000:18:00.0"),
            "nvmlDeviceGetMemoryInfo": Obj(total=141 * gib, used=gib // 2),
            "nvmlDeviceGetTotalEccErrors": 0,
            "nvmlDeviceGetRemappedRows": (0, 0, 0, 0),
            "nvmlDeviceGetRetiredPages": [],
            "nvmlDeviceGetRetiredPagesPendingStatus": 0,
            "nvmlDeviceGetFieldValues": [Obj(nvmlReturn=0, value=Obj(uiVal=0))],
            "nvmlDeviceGetCurrentClocksEventReasons": 0x1,
            "nvmlDeviceGetCurrPcieLinkGeneration": 1,
            "nvmlDeviceGetMaxPcieLinkGeneration": 5,
            "nvmlDeviceGetCurrPcieLinkWidth": 16,
            "nvmlDeviceGetMaxPcieLinkWidth": 16,
            "nvmlDeviceGetTemperature": 31,
            "nvmlDeviceGetTemperatureThreshold": 87,
            "nvmlDeviceGetComputeRunningProcesses": [],
            "nvmlDeviceGetGraphicsRunningProcesses": [],
        }
        self.answers.update(over)
        self.NVMLError = NVMLError

    def __getattr__(self, name: str) -> Any:
        if name not in self.answers:
            raise AttributeError(name)

        def call(*args: Any) -> Any:
            got = self.answers[name]
            if isinstance(got, Exception):
                raise got
            return got(*args) if callable(got) and not isinstance(got, type) else got

        return call

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"h{i}"


UNION_RESET = Obj(nvmlReturn=0, valueType=1, value=Obj(uiVal=1, ullVal=(7 << 32) | 1))


def judged(**over: Any) -> dict[str, Finding]:
    out = judge_gpu(gpu_health(FakeNvml(**over), 0), T)
    assert all(x.gpu == 0 for x in out)
    return {x.check: x for x in out}


def test_a_healthy_idle_gpu_passes_every_node_check() -> None:
    got = judged()
    assert {k: v.status for k, v in got.items()} == {
        "node.ecc": "pass",
        "node.remapped_rows": "pass",
        "node.recovery_action": "pass",
        "node.clocks": "pass",
        "node.pcie": "pass",
        "node.temperature": "pass",
        "node.processes": "pass",
    }
    assert "power saving" in got["node.pcie"].message  # Gen1 at idle of a Gen5 link is normal


def test_each_query_the_gpu_does_not_support_is_said_and_is_no_failure() -> None:
    got = judged(
        nvmlDeviceGetTotalEccErrors=NOT_SUPPORTED,
        nvmlDeviceGetRemappedRows=NOT_SUPPORTED,
        nvmlDeviceGetRetiredPages=NOT_SUPPORTED,
        nvmlDeviceGetRetiredPagesPendingStatus=NOT_SUPPORTED,
        nvmlDeviceGetFieldValues=[Obj(nvmlReturn=3, value=Obj(uiVal=0))],
        nvmlDeviceGetCurrentClocksEventReasons=NOT_SUPPORTED,
        nvmlDeviceGetCurrPcieLinkWidth=NOT_SUPPORTED,
        nvmlDeviceGetTemperature=NOT_SUPPORTED,
    )
    notes = {k: v for k, v in got.items() if v.status == "note"}
    want = {"node.ecc", "node.memory_repair", "node.recovery_action", "node.clocks", "node.pcie"}
    assert set(notes) == want | {"node.temperature"}
    assert all("not supported" in v.message.lower() for k, v in notes.items() if k != "node.recovery_action")
    assert verdict_of(got.values()) == "PASS"


def test_an_older_nvidia_ml_py_without_a_function_is_not_supported_either() -> None:
    nvml = FakeNvml()
    del nvml.answers["nvmlDeviceGetCurrentClocksEventReasons"]
    nvml.answers["nvmlDeviceGetCurrentClocksThrottleReasons"] = 0x40  # the older name is used
    got = {x.check: x for x in judge_gpu(gpu_health(nvml, 0), T)}
    assert got["node.clocks"].status == "fail" and "hw_thermal_slowdown" in got["node.clocks"].message
    del nvml.answers["nvmlDeviceGetRemappedRows"]
    health = gpu_health(nvml, 0)
    assert "not in this nvidia-ml-py" in str(health.get("remapped_rows").unsupported)


@pytest.mark.parametrize(
    ("answer", "mig"),
    [
        pytest.param((1, 1), True, id="enabled"),
        pytest.param((0, 1), False, id="pending-only"),
        pytest.param((0, 0), False, id="disabled"),
        pytest.param(NOT_SUPPORTED, False, id="no-mig-on-this-gpu"),
        pytest.param(None, False, id="older-nvidia-ml-py"),
    ],
)
def test_mig_mode_is_the_current_mode_and_no_node_finding(answer: Any, mig: bool) -> None:
    nvml = FakeNvml(nvmlDeviceGetMigMode=answer)
    if answer is None:
        del nvml.answers["nvmlDeviceGetMigMode"]
    gpu = gpu_health(nvml, 0)
    assert gpu.in_mig_mode is mig
    assert not [f for f in judge_gpu(gpu, T) if "mig" in f.check]  # check/gate.py judges it


@pytest.mark.parametrize(
    ("over", "check", "status", "words"),
    [
        ({"nvmlDeviceGetTotalEccErrors": lambda h, kind, counter: 2}, "node.ecc", "fail",
         "since the driver loaded"),
        ({"nvmlDeviceGetTotalEccErrors": lambda h, kind, counter: 0 if counter == 0 else 4}, "node.ecc",
         "warn", "lifetime"),
        ({"nvmlDeviceGetRemappedRows": (0, 1, 1, 0)}, "node.remapped_rows", "fail", "pending"),
        ({"nvmlDeviceGetRemappedRows": (3, 1, 0, 1)}, "node.remapped_rows", "fail", "spare rows"),
        ({"nvmlDeviceGetFieldValues": [Obj(nvmlReturn=0, value=Obj(uiVal=2))]}, "node.recovery_action",
         "fail", "node_reboot"),
        # the union read by its type: uiVal=1 with garbage in the upper bytes of ullVal
        ({"nvmlDeviceGetFieldValues": [UNION_RESET]}, "node.recovery_action", "fail", "gpu_reset"),
        ({"nvmlDeviceGetCurrentClocksEventReasons": 0x8}, "node.clocks", "fail", "hw_slowdown"),
        ({"nvmlDeviceGetCurrentClocksEventReasons": 0x21}, "node.clocks", "warn", "sw_thermal_slowdown"),
        ({"nvmlDeviceGetCurrPcieLinkWidth": 8}, "node.pcie", "warn", "narrower"),
        ({"nvmlDeviceGetTemperature": 84}, "node.temperature", "warn", "within 5 C"),
        ({"nvmlDeviceGetTemperature": 88}, "node.temperature", "fail", "slowdown threshold (87 C)"),
    ],
)  # fmt: skip
def test_each_fault_nvml_reports_is_judged_with_a_remedy(
    over: dict[str, Any], check: str, status: str, words: str
) -> None:
    got = judged(**over)[check]
    assert got.status == status and words in got.message
    assert got.remedy


def test_retired_pages_judge_an_older_gpu_without_a_row_remapper() -> None:
    got = judged(nvmlDeviceGetRemappedRows=NOT_SUPPORTED, nvmlDeviceGetRetiredPagesPendingStatus=1)
    assert got["node.retired_pages"].status == "fail" and "node.remapped_rows" not in got


def test_a_process_holding_most_of_the_memory_fails_and_a_small_one_warns() -> None:
    gib = 1 << 30
    big = [Obj(pid=4242, usedGpuMemory=120 * gib)]
    got = judged(
        nvmlDeviceGetComputeRunningProcesses=big, nvmlDeviceGetMemoryInfo=Obj(total=141 * gib, used=121 * gib)
    )
    assert got["node.processes"].status == "fail" and "4242" in got["node.processes"].message
    small = [Obj(pid=7, usedGpuMemory=2 * gib)]
    got = judged(
        nvmlDeviceGetComputeRunningProcesses=small, nvmlDeviceGetMemoryInfo=Obj(total=141 * gib, used=2 * gib)
    )
    assert got["node.processes"].status == "warn"
    # another container's process NVML cannot name: the used memory speaks for it
    got = judged(nvmlDeviceGetMemoryInfo=Obj(total=141 * gib, used=100 * gib))
    assert got["node.processes"].status == "fail" and "does not list" in got["node.processes"].message
    # ... and below the fail fraction but past the warn one, it warns (no listed process needed)
    share = (T.memory_held_warn_fraction + T.memory_held_fail_fraction) / 2
    got = judged(nvmlDeviceGetMemoryInfo=Obj(total=100 * gib, used=int(share * 100) * gib))
    assert T.memory_held_warn_fraction < int(share * 100) / 100 < T.memory_held_fail_fraction
    assert got["node.processes"].status == "warn" and "does not list" in got["node.processes"].message


def test_no_nvml_is_a_reason_never_a_crash() -> None:
    class Broken(FakeNvml):
        def nvmlInit(self) -> None:
            raise NVMLError("NVML Shared Library Not Found")

    assert read_health(Broken()) == ((), "NVML: NVML Shared Library Not Found")
    gpus, why = read_health(FakeNvml())
    assert (
        why is None and [g.name for g in gpus] == ["NVIDIA H200"] and gpus[0].pci_bus_id == "00000000:18:00.0"
    )


# --------------------------------------------------------------------------- Xids in the kernel log

KMSG = (
    "6,1001,5000000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04\n"
    "3,1200,7200000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
    "4,1201,7300000000,-;NVRM: Xid (PCI:0000:3a:00): 13, pid=99, Graphics Exception\n"
)
DMESG = "[ 7201.5] NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE\n[ 9.0] usb 1-1: new device\n"


def test_kernel_xid_lines_are_read_from_kmsg_and_dmesg_with_their_time() -> None:
    assert [(x.xid, x.pci, x.seconds_since_boot) for x in parse_kmsg(KMSG)] == [
        (79, "0000:18:00", 7200.0),
        (13, "0000:3a:00", 7300.0),
    ]
    assert [(x.xid, x.seconds_since_boot) for x in parse_kmsg(DMESG)] == [(48, 7201.5)]
    assert bus_key("00000000:18:00.0") == bus_key("0000:18:00") == "0000:18:00"


def test_a_hardware_xid_fails_on_its_gpu_and_an_application_one_is_a_note() -> None:
    gpus = read_health(FakeNvml())[0]
    got = judge_xids(XidLog(xids=parse_kmsg(KMSG)), gpus, uptime_s=8000.0, window_s=None)
    by_xid = {x.value["xid"]: x for x in got}
    assert by_xid[79].status == "fail" and by_xid[79].gpu == 0 and "fallen off the bus" in by_xid[79].message
    assert by_xid[79].remedy
    assert by_xid[13].status == "note" and by_xid[13].gpu is None  # 0000:3a:00 is no GPU NVML listed


@pytest.mark.parametrize("pci", ["0000:18:00.0", "00000000:18:00.0", "0000:18:00"])
def test_an_xid_is_put_on_its_gpu_whichever_form_the_kernel_writes_its_address_in(pci: str) -> None:
    # the Xid line's address and NVML's are compared as bus_key reduces them, not as written
    gpus = read_health(FakeNvml())[0]  # NVML: 00000000:18:00.0
    xids = parse_kmsg(f"[ 7201.5] NVRM: Xid (PCI:{pci}): 79, pid=1, GPU has fallen off the bus.\n")
    got = judge_xids(XidLog(xids=xids), gpus, uptime_s=8000.0, window_s=None)
    assert [(x.status, x.gpu) for x in got] == [("fail", 0)] and "GPU 0" in got[0].message


def test_the_window_leaves_older_xids_out() -> None:
    log = XidLog(xids=parse_kmsg(KMSG))
    got = judge_xids(log, (), uptime_s=8000.0, window_s=750.0)  # since 7250 s after boot
    assert [x.value["xid"] for x in got] == [13]
    got = judge_xids(log, (), uptime_s=8000.0, window_s=60.0)
    assert [x.status for x in got] == ["pass"] and "last 60 s" in got[0].message


def test_an_unreadable_kernel_log_is_said() -> None:
    def denied() -> str:
        raise PermissionError(1, "Operation not permitted")

    log = kernel_xids(denied)
    assert log.unreadable is not None and "dmesg_restrict" in log.unreadable
    assert [x.status for x in judge_xids(log, (), uptime_s=1.0, window_s=None)] == ["note"]


# --------------------------------------------------------------------------- the image's figures


def sealed(steps: list[dict[str, Any]], verdict: str = "certified") -> Certificate:
    doc = cert_doc(verdict)
    return build_certificate(
        image=doc["image"], host=doc["host"], run={}, harness={"steps": steps, "verdict": verdict},
        thresholds={}, verdict=verdict, verdict_reason="ok",
    )  # fmt: skip


BASELINE: dict[str, Any] = {
    "name": "gate_baseline", "status": "pass", "reason": "", "seconds": 1.0, "warnings": [],
    "metrics": {"device_name": "NVIDIA H200", "bf16_gemm_tflops": 700.0, "copy_gbs": 4000.0},
}  # fmt: skip
MULTI: dict[str, Any] = {
    "name": "multi_gpu", "status": "pass", "reason": "", "seconds": 30.0, "warnings": [],
    "metrics": {"world_size": 2, "sweep": [{"bytes": 1 << 28, "busbw_gbs": 300.0},
                                           {"bytes": 1 << 30, "busbw_gbs": 330.0}]},
}  # fmt: skip


def gate_doc(
    *steps: dict[str, Any], nonce: str | None = None, facts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A short mode's document; `nonce` None: the run's own (engine_answering fills it in).
    `facts` None: as the harness writes them, with a device count of its gpuN steps when it has
    any (torch's device_count on the GPU path), none without."""
    if facts is None:
        n = sum(1 for s in steps if str(s.get("name")).startswith("gpu"))
        facts = {"framework": "torch", "gpu_path": True, "device_count": n} if n else {}
    doc = {"kind": "gate_result", "facts": facts, "steps": list(steps)}
    return doc if nonce is None else {**doc, "nonce": nonce}


def gpu_step(i: int, tflops: float, gbs: float, name: str = "NVIDIA H200") -> dict[str, Any]:
    return {
        "name": f"gpu{i}", "status": "pass", "reason": "", "seconds": 1.0,
        "metrics": {"device_name": name, "compute_capability": "9.0", "arch_covered_by": "SASS sm_90",
                    "bf16_gemm_tflops": tflops, "copy_gbs": gbs},
    }  # fmt: skip


def run_of(doc: dict[str, Any] | None) -> GateRun:
    return GateRun(doc=doc, exit_code=0, stderr_tail="", seconds=3.0)


def test_the_certificate_keeps_its_figures_by_gpu_model() -> None:
    c = sealed([BASELINE, MULTI])
    assert certified_figures(c) == {"NVIDIA H200": {"bf16_gemm_tflops": 700.0, "copy_gbs": 4000.0}}
    assert certified_busbw(c, 2, 1 << 28) == 300.0
    assert certified_busbw(c, 4, 1 << 28) is None and certified_busbw(c, 2, 1 << 20) is None


def test_each_gpus_gemm_and_copy_are_judged_against_the_certified_figure() -> None:
    c = sealed([BASELINE])
    got = judge_gate(run_of(gate_doc(gpu_step(0, 690.0, 3950.0), gpu_step(1, 560.0, 2000.0))), c, T)
    by = {(x.check, x.gpu): x for x in got}
    assert by[("image.gemm", 0)].status == "pass" and by[("image.copy", 0)].status == "pass"
    assert (
        by[("image.gemm", 1)].status == "warn"
        and "80% of the certified 700.0" in by[("image.gemm", 1)].message
    )
    assert by[("image.copy", 1)].status == "fail" and by[("image.copy", 1)].remedy
    assert by[("image.kernels", 0)].status == "pass" and "SASS sm_90" in by[("image.kernels", 0)].message


def test_a_gpu_model_the_certificate_recorded_no_figure_for_is_not_judged() -> None:
    got = judge_gate(
        run_of(gate_doc(gpu_step(0, 300.0, 1000.0, name="NVIDIA H100 80GB HBM3"))), sealed([BASELINE]), T
    )
    gemm = next(x for x in got if x.check == "image.gemm")
    assert gemm.status == "skip" and "records none for NVIDIA H100" in gemm.message
    old = judge_gate(run_of(gate_doc(gpu_step(0, 300.0, 1000.0))), sealed([]), T)
    assert {x.status for x in old if x.check in ("image.gemm", "image.copy")} == {"skip"}


def test_a_figure_the_image_gives_as_a_boolean_is_no_measure() -> None:
    # gate.json comes from the image under test: `true` is not 1.0 TFLOP/s (Python takes it for 1),
    # nor is a certificate's `true` a figure to judge against.
    got = judge_gate(run_of(gate_doc(gpu_step(0, True, 3950.0))), sealed([BASELINE]), T)
    gemm = next(x for x in got if x.check == "image.gemm")
    assert (gemm.status, gemm.message) == ("skip", "no bf16 GEMM was measured")
    flagged = {**BASELINE, "metrics": {**BASELINE["metrics"], "copy_gbs": True}}
    assert certified_figures(sealed([flagged])) == {"NVIDIA H200": {"bf16_gemm_tflops": 700.0}}


def test_the_allreduce_is_judged_against_the_certified_busbw_of_the_same_size_and_gpu_count() -> None:
    c = sealed([BASELINE, MULTI])
    loop = {"name": "allreduce_loopback", "status": "pass", "reason": "",
            "metrics": {"world_size": 2, "bytes": 1 << 28, "busbw_gbs": 120.0}}  # fmt: skip
    got = [x for x in judge_gate(run_of(gate_doc(loop)), c, T) if x.check == "image.allreduce"]
    assert [x.status for x in got] == ["fail"] and "40% of the certified 300.0" in got[0].message


def test_failed_and_skipped_steps_of_the_short_mode() -> None:
    smoke = {"name": "gpu0", "status": "fail", "reason": "torch.cuda.is_available() is False", "metrics": {}}
    skip = {"name": "cuda_smoke", "status": "skip", "reason": "CPU path: no GPU was given", "metrics": {}}
    nofw = {"name": "framework", "status": "fail", "reason": "torch is not installed", "metrics": {}}
    got = judge_gate(run_of(gate_doc(nofw, smoke, skip)), None, T)
    assert [(x.check, x.status) for x in got] == [
        ("image.framework", "fail"), ("image.cuda_smoke", "fail"), ("image.cuda_smoke", "skip"),
    ]  # fmt: skip
    assert got[1].gpu == 0 and got[2].message.startswith("CPU path")
    none = judge_gate(GateRun(doc=None, exit_code=124, stderr_tail="killed", seconds=40.0), None, T)
    assert [(x.check, x.status) for x in none] == [("image.run", "fail")] and "exit 124" in none[0].message


# --------------------------------------------------------------------------- the whole check


IMAGE = ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=())


def engine_answering(
    doc_for: Callable[[ContainerSpec], dict[str, Any] | None],
    gate_json: Callable[[Path, str], None] | None = None,
) -> FakeEngine:
    """A FakeEngine whose short mode prints `doc_for(spec)` with the run's nonce (none: nothing);
    `gate_json(path, nonce)` may first plant the io folder's gate.json."""

    def job(spec: ContainerSpec, on_stderr: Any) -> RunResult:
        if "--nonce" not in spec.command:
            return RunResult(exit_code=0, stdout="", stderr="")  # the memlock probe
        nonce = spec.command[spec.command.index("--nonce") + 1]
        if gate_json is not None:
            gate_json(next(Path(m.source) for m in spec.mounts if m.target == IO_DIR) / "gate.json", nonce)
        doc = doc_for(spec)
        out = json.dumps({**doc, "nonce": doc.get("nonce", nonce)}) if doc is not None else ""
        return RunResult(exit_code=0 if doc else 1, stdout=out + "\n", stderr="[harness] done\n")

    return FakeEngine(images={"team/train:1": IMAGE, IMAGE_ID: IMAGE}, job=job)


def healthy() -> tuple[tuple[Any, ...], str | None]:
    return read_health(FakeNvml())


def run_check(eng: FakeEngine, certs: list[Certificate], **kw: Any) -> Any:
    lines: list[str] = []
    report = check_image(
        "team/train:1",
        find_certificate=lambda info: certs if info.id == IMAGE_ID else [],
        eng=eng,
        probe=lambda: HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H200,)),
        access_modes=lambda daemon: (DEVICES,),
        health=kw.pop("health", healthy),
        xids=kw.pop("xids", XidLog),
        say=lines.append,
        **kw,
    )
    return report, lines


def test_a_certified_image_on_a_healthy_node_passes_and_starts_its_container_like_certify() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    report, lines = run_check(eng, [sealed([BASELINE])])
    doc = report.to_dict()
    assert validate_report(doc) == [], doc
    assert (doc["verdict"], doc["exit_code"]) == ("PASS", 0)
    spec = eng.runs[-1]
    assert spec.purpose == "check" and spec.network == "none" and "/dev/nvidia0" in spec.devices
    assert spec.command[:2] == ("python3", "/opt/envbuilder-host/harness/gate_run.py")
    assert "--cpu-only" not in spec.command
    assert {u.name for u in spec.ulimits} >= {"stack"}
    assert any("covers this node" in line for line in lines)


def test_a_result_with_another_runs_nonce_is_no_result() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0), nonce="replayed"))
    report, _ = run_check(eng, [sealed([BASELINE])])
    assert report.verdict == "FAIL" and any(
        x.check == "image.run" for x in report.findings if x.status == "fail"
    )


def test_the_short_modes_gate_json_is_read_before_stdout_and_never_through_a_planted_link(
    tmp_path: Path,
) -> None:
    """run_gate reads its document as certify reads its result (parse_harness_output): the io
    folder's gate.json first, else stdout's last JSON line; a gate.json the container made a
    link to a host file is not followed, and a document with another run's nonce is none."""
    host_file = tmp_path / "host.json"

    def run(plant: Callable[[Path, str], None], printed: dict[str, Any] | None) -> Any:
        eng = engine_answering(lambda spec: printed, gate_json=plant)
        none = AccessChoice(name="none", reason="t")
        return run_gate(eng, IMAGE, none, timeout_s=30, say=lambda _line: None).doc

    def doc(source: str, nonce: str | None = None) -> dict[str, Any]:
        return {**gate_doc(nonce=nonce), "facts": {"from": source}}

    def write(path: Path, nonce: str) -> None:
        path.write_text(json.dumps(doc("file", nonce)))

    def link(path: Path, nonce: str) -> None:
        host_file.write_text(json.dumps(doc("host", nonce)))
        path.symlink_to(host_file)

    got = run(write, doc("stdout"))
    assert got is not None and got["facts"] == {"from": "file"}
    assert run(link, None) is None
    got = run(link, doc("stdout"))
    assert got is not None and got["facts"] == {"from": "stdout"}
    assert run(lambda path, nonce: write(path, "replayed"), doc("stdout", "replayed")) is None


def test_an_uncertified_image_fails_with_the_refusal_and_runs_nothing_in_it() -> None:
    eng = engine_answering(lambda spec: pytest.fail("no container for an uncertified image"))
    report, _ = run_check(eng, [])
    assert (report.verdict, report.exit_code) == ("FAIL", 2)
    assert (
        report.findings[0].check == "certificate.no-certificate"
        and "envbuilder certify" in report.findings[0].remedy
    )


def test_a_driver_below_the_certificates_floor_fails() -> None:
    low = Certificate(cert_doc(min_driver="999.0"))
    eng = engine_answering(lambda spec: pytest.fail("nothing runs in the image"))
    report, _ = run_check(eng, [low])
    assert [x.check for x in report.findings if x.status == "fail"] == ["certificate.driver-too-old"]
    assert report.exit_code == 2


def test_a_gpu_held_by_another_process_fails_the_check() -> None:
    gib = 1 << 30
    held = FakeNvml(
        nvmlDeviceGetComputeRunningProcesses=[Obj(pid=31337, usedGpuMemory=130 * gib)],
        nvmlDeviceGetMemoryInfo=Obj(total=141 * gib, used=131 * gib),
    )
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 690.0, 3900.0)))
    report, _ = run_check(eng, [sealed([BASELINE])], health=lambda: read_health(held))
    assert report.verdict == "FAIL" and "31337" in report.to_dict()["reason"]


def test_on_a_cpu_node_the_gpu_steps_are_skipped_with_their_reason() -> None:
    eng = engine_answering(
        lambda spec: gate_doc(
            {"name": "framework", "status": "pass", "reason": "", "metrics": {"torch": "2.13.0+cpu"}},
            {"name": "cuda_smoke", "status": "skip", "reason": "CPU path: no GPU was given to this check"},
        )
    )
    cpu = Certificate(cert_doc("certified-cpu-only", gpus=()))
    lines: list[str] = []
    report = check_image(
        "team/train:1", find_certificate=lambda info: [cpu], eng=eng,
        probe=lambda: HostReport(source="none", driver=None, cuda_driver=None),
        access_modes=lambda daemon: (), health=lambda: ((), "NVML: NVML Shared Library Not Found"),
        xids=lambda: pytest.fail("no Xids read without a GPU"), say=lines.append,
    )  # fmt: skip
    assert (report.verdict, report.exit_code) == ("PASS", 0)
    assert "--cpu-only" in eng.runs[-1].command
    statuses = {x.check: x.status for x in report.findings}
    assert statuses["node.nvml"] == "skip" and statuses["image.cuda_smoke"] == "skip"
    assert validate_report(report.to_dict()) == []


def test_gpu_access_none_on_a_gpu_node_is_judged_as_the_user_asked_not_as_auto() -> None:
    """`check --gpu-access none` on a GPU node: the GPU certificate covers the CPU run the user asked
    for (run's rule: no no-gpu refusal when --gpu-access none), and the short mode runs on the CPU
    (set P: P40)."""
    eng = engine_answering(
        lambda spec: gate_doc(
            {"name": "framework", "status": "pass", "reason": "", "metrics": {"torch": "2.13.0"}},
            {"name": "cuda_smoke", "status": "skip", "reason": "CPU path: no GPU was given to this check"},
        )
    )
    report, _ = run_check(eng, [sealed([BASELINE])], gpu_access="none")
    checks = {x.check: x.status for x in report.findings}
    assert "certificate.no-gpu" not in checks, report.findings
    assert checks["certificate.coverage"] == "pass"
    assert "--cpu-only" in eng.runs[-1].command


def test_the_schema_validator_catches_a_wrong_document() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    doc = run_check(eng, [sealed([BASELINE])])[0].to_dict()
    assert validate_report(doc) == []
    assert validate_report({**doc, "exit_code": 1}) != []
    assert validate_report({**doc, "verdict": "FAIL", "exit_code": 2}) != []  # not what the findings give
    assert validate_report({**doc, "findings": [{"check": "x"}]}) != []
    bad = dict(doc)
    del bad["timings"]
    assert validate_report(bad) == ["timings: missing or not dict"]


@pytest.mark.parametrize("field", ["exit_code", "schema_version"])
def test_the_schema_validator_takes_no_boolean_for_a_number(field: str) -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    doc = run_check(eng, [sealed([BASELINE])])[0].to_dict()
    assert doc[field] in (0, 1)  # PASS's 0 and schema 1: equal to False and True in Python
    assert validate_report({**doc, field: bool(doc[field])}) == [f"{field}: missing or not int"]


def test_the_schema_validator_takes_no_boolean_for_a_findings_gpu_or_the_total_time() -> None:
    """A finding's `gpu` is an index and `timings.total_s` seconds: true and false are no numbers,
    though Python takes them for 1 and 0 (seen by the io/check areas' helper, 2026-12-06)."""
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    doc = run_check(eng, [sealed([BASELINE])])[0].to_dict()
    assert validate_report(doc) == []
    first = doc["findings"][0]
    for gpu in (True, False):
        findings = [{**first, "gpu": gpu}, *doc["findings"][1:]]
        assert validate_report({**doc, "findings": findings}) == ["findings[0]: bad gpu"]
    assert validate_report({**doc, "findings": [{**first, "gpu": 0}, *doc["findings"][1:]]}) == []
    timings = {**doc["timings"], "total_s": True}
    assert validate_report({**doc, "timings": timings}) == ["timings.total_s: missing"]


def test_the_schema_validator_wants_each_findings_value_even_a_null_one() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    doc = run_check(eng, [sealed([BASELINE])])[0].to_dict()
    first = {k: v for k, v in doc["findings"][0].items() if k != "value"}
    problems = validate_report({**doc, "findings": [first, *doc["findings"][1:]]})
    assert problems == ["findings[0]: bad status or value"]
    assert validate_report({**doc, "findings": [{**first, "value": None}, *doc["findings"][1:]]}) == []


def test_the_json_document_gives_the_time_target_and_slurms_hard_limit_each_its_own() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    doc = run_check(eng, [sealed([BASELINE])])[0].to_dict()
    assert T.time_target_s != T.time_limit_s
    assert doc["limits"] == {"target_s": T.time_target_s, "hard_s": T.time_limit_s}


def test_the_text_report_gives_a_warnings_remedy_and_names_gpu_0() -> None:
    from envbuilder.cli.check_cmd import render_text

    findings = (
        Finding(check="node.clocks", status="warn", message="throttled", remedy="cool it", gpu=0),
        Finding(check="node.ecc", status="pass", message="no errors", remedy="nothing to do", gpu=1),
        Finding(check="node.xid", status="note", message="none", remedy="read dmesg"),
    )
    text = render_text({"verdict": "WARN", "reason": "x", "timings": {"total_s": 1.5}}, findings)
    assert text.splitlines() == [
        "WARN node.clocks [GPU 0]: throttled",
        "     remedy: cool it",
        "ok   node.ecc [GPU 1]: no errors",
        "note node.xid: none",
        "WARN: x (1.5 s)",
    ]


def test_the_cli_prints_findings_with_remedies_and_exits_with_the_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from envbuilder.check import gate as gate_mod
    from envbuilder.cli import cli

    def fake_check(image: str, **kw: Any) -> Any:
        eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 400.0, 4000.0)))
        return run_check(eng, [sealed([BASELINE])])[0]

    monkeypatch.setattr(gate_mod, "check_image", fake_check)
    monkeypatch.setattr("envbuilder.check.check_image", fake_check)
    res = CliRunner().invoke(cli, ["check", "team/train:1"])
    assert res.exit_code == 2, res.output
    assert "FAIL image.gemm [GPU 0]: bf16 GEMM 400.0 TFLOP/s = 57% of the certified 700.0" in res.output
    assert "     remedy: the GPU computes slower" in res.output
    res = CliRunner().invoke(cli, ["check", "team/train:1", "--json"])
    assert res.exit_code == 2 and validate_report(json.loads(res.output)) == []
    # The document alone on stdout (the Slurm prolog reads it from there), nothing of it on stderr.
    assert validate_report(json.loads(res.stdout)) == [] and '"verdict"' not in res.stderr


# --------------------------------------------------------------------------- the harness's short mode


def test_the_short_mode_on_the_cpu_path_skips_the_gpu_steps_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from envbuilder.harness.gate import main

    out = tmp_path / "gate.json"
    assert main(["--cpu-only", "--out", str(out), "--nonce", "abc"]) == 0
    doc = json.loads(out.read_text())
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc == last and doc["kind"] == "gate_result" and doc["nonce"] == "abc"
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [
        ("framework", "pass"), ("cuda_smoke", "skip"), ("allreduce_loopback", "skip"),
    ]  # fmt: skip
    assert doc["steps"][1]["reason"].startswith("CPU path")


def test_the_allreduce_loopback_checks_values_and_reports_busbw_gloo_on_the_cpu() -> None:
    from envbuilder.harness.steps.gate import allreduce_loopback

    got = allreduce_loopback(2, backend="gloo", nbytes=1 << 16, iters=2, timeout_s=120)
    assert got["values_ok"] is True and got["world_size"] == 2 and got["busbw_gbs"] > 0
    assert got["busbw_gbs"] == pytest.approx(got["algbw_gbs"])  # 2(n-1)/n = 1 at two ranks


def test_every_nvml_call_the_node_check_makes_exists_in_nvidia_ml_py() -> None:
    """The fake answers exactly the calls gpu_health makes: each must be a function of the real
    nvidia-ml-py (a misspelt name would read as "not supported" on every GPU, never as a bug)."""
    import pynvml

    calls = [name for name in FakeNvml().answers if name.startswith("nvml")]
    assert calls and [n for n in calls if not callable(getattr(pynvml, n, None))] == []
    assert pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION == 230  # FI_RECOVERY_ACTION's fallback


def test_the_certifications_baseline_is_a_skip_never_a_failure_where_it_cannot_measure() -> None:
    """gate_baseline runs in every GPU certification: without a usable GPU (here: torch has no
    CUDA) it records why it measured nothing, and the certification's verdict is untouched."""
    from envbuilder.harness.record import Recorder
    from envbuilder.harness.steps.gate import gate_baseline_step

    class S:
        rec = Recorder(out=__import__("io").StringIO())

    gate_baseline_step(S())
    (step,) = S.rec.steps
    assert step.status == "skip" and step.reason.startswith(
        "not recorded: StepFailed: torch.cuda.is_available()"
    )


def test_gpus_that_nvml_cannot_read_are_a_warning_not_a_cpu_node() -> None:
    from envbuilder.check.gate import node_findings

    report = HostReport(source="nvidia-smi", driver="580.159.04", cuda_driver="13.0", gpus=(H200,))
    got = node_findings((), "nvidia-ml-py is not importable", report, T, xids=XidLog, uptime_s=None,
                        xid_window_s=None)  # fmt: skip
    assert [(x.check, x.status) for x in got] == [("node.nvml", "warn")] and got[0].remedy
    cpu = HostReport(source="none", driver=None, cuda_driver=None)
    got = node_findings((), "NVML: NVML Shared Library Not Found", cpu, T, xids=XidLog, uptime_s=None,
                        xid_window_s=None)  # fmt: skip
    assert [(x.check, x.status) for x in got] == [("node.nvml", "skip")] and "no NVIDIA GPU" in got[0].message


def test_each_gpu_of_the_node_is_judged_on_its_own_readings() -> None:
    from envbuilder.check.gate import node_findings

    # GPU 1 is hot, GPU 0 is not: the finding of GPU 1 fails, GPU 0's passes (not GPU 0's twice)
    gpus = (gpu_health(FakeNvml(), 0), gpu_health(FakeNvml(nvmlDeviceGetTemperature=88), 1))
    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H200, H200))
    got = node_findings(gpus, None, report, T, xids=XidLog, uptime_s=None, xid_window_s=None)
    temps = {x.gpu: x.status for x in got if x.check == "node.temperature"}
    assert temps == {0: "pass", 1: "fail"}
    assert verdict_of(got) == "FAIL"


def test_the_short_mode_checks_the_images_own_framework(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A JAX or TensorFlow image is checked for its own framework (the stack's, handed in as
    --framework); the GPU figures are torch's, so there they are skipped with that reason."""
    from envbuilder.harness.gate import main

    assert main(["--cpu-only", "--framework", "no_such_framework_x", "--out", str(tmp_path / "a.json")]) == 1
    doc = json.loads((tmp_path / "a.json").read_text())
    assert (
        doc["steps"][0]["status"] == "fail"
        and "no_such_framework_x is not installed" in doc["steps"][0]["reason"]
    )
    assert main(["--framework", "json", "--out", str(tmp_path / "b.json")]) == 0  # an importable stand-in
    doc = json.loads((tmp_path / "b.json").read_text())
    assert [(s["name"], s["status"]) for s in doc["steps"]] == [
        ("framework", "pass"), ("cuda_smoke", "skip"), ("allreduce_loopback", "skip"),
    ]  # fmt: skip
    assert doc["steps"][1]["reason"] == "the short mode measures with torch; this image's framework is json"
    assert doc["facts"]["measured"] is False  # what check's image.gpus reads: a warning, not a failure
    got = judge_gate(run_of({"kind": "gate_result", "steps": doc["steps"]}), None, T)
    assert got[0].status == "pass" and got[0].message.startswith("json ")


def test_the_container_is_told_the_images_framework() -> None:
    from envbuilder.check.image import gate_container
    from envbuilder.runtime import AccessChoice

    info = ImageInfo(id=IMAGE_ID, tags=(), repo_digests=())
    spec = gate_container(
        info, AccessChoice(name="none", reason="t"), io_dir="/tmp/x", nonce="n", watchdog_s=30
    )
    assert spec.command[-2:] == ("--framework", "torch")  # no stack label: torch, as certify assumes
    none = AccessChoice(name="none", reason="t")
    spec = gate_container(info, none, io_dir="/tmp/x", nonce="n", watchdog_s=30, framework="jax")
    assert spec.command[-2:] == ("--framework", "jax")


def test_the_image_under_check_gets_the_hosts_harness_read_only() -> None:
    # The harness that judges the image is the host's: the image must not rewrite it for the next
    # check (a bind mount's writes reach the host's own files); only its io folder is writable.
    from envbuilder.check.image import gate_container
    from envbuilder.resources import harness_dir
    from envbuilder.runtime import AccessChoice

    info = ImageInfo(id=IMAGE_ID, tags=(), repo_digests=())
    spec = gate_container(
        info, AccessChoice(name="none", reason="t"), io_dir="/tmp/x", nonce="n", watchdog_s=30
    )
    by_source = {m.source: m for m in spec.mounts}
    assert by_source[str(harness_dir())].read_only
    assert not by_source["/tmp/x"].read_only


# --------------------------------------------------------------------------- --auto check (2026-12-06)


def test_a_pass_reason_counts_each_pass_and_each_skip_apart() -> None:
    assert verdict_reason([f("pass"), f("pass"), f("pass"), f("skip")]) == "3 check(s) passed, 1 skipped"
    assert verdict_reason([f("note"), f("pass")]) == "1 check(s) passed"


def test_a_reference_below_one_is_still_judged_only_zero_is_none() -> None:
    band = Band(warn_below=0.9, fail_below=0.7)
    assert (
        band.judge(0.8, 0.8) == "pass" and band.judge(0.5, 0.8) == "fail" and band.judge(0.3, 1.0) == "fail"
    )


def test_the_time_finding_carries_the_seconds_to_the_hundredth() -> None:
    (late,) = time_findings(T.time_limit_s + 1.2345, T)
    assert late.value == round(T.time_limit_s + 1.23, 2)
    (slow,) = time_findings(T.time_target_s + 0.4567, T)
    assert slow.value == round(T.time_target_s + 0.46, 2)


def test_time_warns_from_exactly_ten_seconds_before_the_limit_and_notes_only_past_the_target() -> None:
    assert [x.status for x in time_findings(T.time_limit_s - 10, T)] == ["warn"]
    assert time_findings(T.time_target_s, T) == []


def _valid_doc() -> dict[str, Any]:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    doc: dict[str, Any] = run_check(eng, [sealed([BASELINE])])[0].to_dict()
    assert validate_report(doc) == []
    return doc


def test_the_schema_validator_wants_each_field_of_its_type_and_its_kind_and_schema_each() -> None:
    doc = _valid_doc()
    assert validate_report({**doc, "image": 5}) == ["image: missing or not str"]
    assert validate_report({**doc, "kind": "other"}) == ["kind/schema_version: expected envbuilder-check 1"]
    assert validate_report({**doc, "schema_version": 2}) == [
        "kind/schema_version: expected envbuilder-check 1"
    ]


def test_the_schema_validator_names_a_finding_that_is_no_object_or_of_no_known_status() -> None:
    doc = _valid_doc()
    first, rest = doc["findings"][0], doc["findings"][1:]
    assert validate_report({**doc, "findings": ["node.ecc", *rest]}) == [
        "findings[0]: bad check, status, gpu, message, remedy"
    ]
    assert validate_report({**doc, "findings": [{**first, "status": "ok"}, *rest]}) == [
        "findings[0]: bad status or value"
    ]


def test_a_malformed_finding_is_the_one_problem_even_where_the_verdict_rests_on_it() -> None:
    doc = _valid_doc()
    first, rest = doc["findings"][0], doc["findings"][1:]
    failed = {**doc, "verdict": "FAIL", "exit_code": 2, "findings": [{**first, "status": "failed"}, *rest]}
    assert validate_report(failed) == ["findings[0]: bad status or value"]


def _ecc(volatile: int | None, aggregate: int | None) -> Finding:
    def total(_handle: Any, _kind: Any, counter: int) -> int:
        got = volatile if counter == 0 else aggregate
        if got is None:
            raise NOT_SUPPORTED
        return got

    return judged(nvmlDeviceGetTotalEccErrors=total)["node.ecc"]


def test_ecc_is_judged_on_whichever_of_its_two_counters_the_gpu_answers() -> None:
    assert (_ecc(None, 3).status, _ecc(None, 3).value) == ("warn", 3)  # lifetime errors only
    assert (_ecc(None, 0).status, _ecc(0, None).status) == ("pass", "pass")
    assert (_ecc(2, None).status, _ecc(2, None).value) == ("fail", 2)
    assert (_ecc(1, 0).status, _ecc(0, 1).status) == ("fail", "warn")  # one error is one too many
    assert _ecc(None, None).status == "note"


def test_a_clean_ecc_reading_carries_zero_and_any_hardware_reason_fails_the_clocks() -> None:
    assert _ecc(0, 0).value == 0
    got = judged(nvmlDeviceGetCurrentClocksEventReasons=0x1 | 0x8)["node.clocks"]  # gpu_idle, hw_slowdown
    assert got.status == "fail" and "hw_slowdown" in got.message and got.value[0] != "hw_slowdown"


def test_a_pcie_link_whose_maximum_width_nvml_cannot_read_is_a_note_saying_so() -> None:
    got = judged(nvmlDeviceGetMaxPcieLinkWidth=NOT_SUPPORTED)["node.pcie"]
    assert got.status == "note" and "not supported" in got.message.lower()


def test_temperature_fails_at_the_threshold_warns_from_its_margin_and_passes_without_one() -> None:
    limit, margin = 87, int(T.temperature_margin_c)
    status = {
        c: judged(nvmlDeviceGetTemperature=c)["node.temperature"]
        for c in (limit, limit - margin, limit - margin - 1)
    }
    assert [status[c].status for c in (limit, limit - margin, limit - margin - 1)] == ["fail", "warn", "pass"]
    assert status[limit - margin - 1].message.endswith(f"(slowdown at {limit} C)")
    unknown = judged(nvmlDeviceGetTemperature=95, nvmlDeviceGetTemperatureThreshold=NOT_SUPPORTED)[
        "node.temperature"
    ]
    assert unknown.status == "pass" and unknown.message == "95 C (no slowdown threshold from NVML)"


def test_every_process_on_the_gpu_is_listed_and_its_memory_counted_one_hidden_as_none() -> None:
    gib = 1 << 30
    procs = [
        Obj(pid=7, usedGpuMemory=2 * gib),
        Obj(pid=8, usedGpuMemory=None),
        Obj(pid=9, usedGpuMemory=3 * gib),
    ]
    got = judged(
        nvmlDeviceGetComputeRunningProcesses=procs, nvmlDeviceGetMemoryInfo=Obj(total=141 * gib, used=gib)
    )
    held = got["node.processes"]
    assert [p["pid"] for p in held.value["processes"]] == [7, 8, 9] and held.value["held_mib"] == 5 * 1024
    assert (
        held.status == "warn" and "process(es) 7, 8, 9 already hold 4% of its memory (5120 of" in held.message
    )


def test_the_memory_shares_bounds_warn_and_fail_at_exactly_their_fractions() -> None:
    from envbuilder.check.node import PROCESSES

    def status(used: int, total: int, processes: tuple[dict[str, Any], ...] = ()) -> str:
        value = {
            "processes": list(processes),
            "held_mib": 0,
            "memory_used_mib": used,
            "memory_total_mib": total,
        }
        return PROCESSES.judge(value, T).status

    warn, fail = round(T.memory_held_warn_fraction * 1000), round(T.memory_held_fail_fraction * 1000)
    assert (warn / 1000, fail / 1000) == (T.memory_held_warn_fraction, T.memory_held_fail_fraction)
    assert [status(n, 1000) for n in (warn - 1, warn, fail - 1, fail)] == ["pass", "warn", "warn", "fail"]
    assert status(0, 1) == "pass"  # a GPU using none of its memory is clear, however small


def test_retired_pages_pass_when_none_is_pending() -> None:
    got = judged(nvmlDeviceGetRemappedRows=NOT_SUPPORTED, nvmlDeviceGetRetiredPagesPendingStatus=0)
    assert got["node.retired_pages"].status == "pass"


def test_a_window_without_the_uptime_judges_every_xid_since_boot() -> None:
    got = judge_xids(XidLog(xids=parse_kmsg(KMSG)), (), uptime_s=None, window_s=60.0)
    assert sorted(x.value["xid"] for x in got) == [13, 79] and "since boot" in got[0].message


def test_the_window_keeps_an_xid_at_its_start_and_one_without_a_time_and_each_goes_on_its_gpu() -> None:
    second = gpu_health(FakeNvml(nvmlDeviceGetPciInfo=Obj(busId=b"00000000:3A:00.0")), 1)
    gpus = (gpu_health(FakeNvml(), 0), second)
    xids = parse_kmsg(KMSG)  # 79 at 7200 s on 0000:18:00 (GPU 0), 13 at 7300 s on 0000:3a:00 (GPU 1)
    got = judge_xids(XidLog(xids=xids), gpus, uptime_s=8000.0, window_s=800.0)  # since 7200 s
    assert {x.value["xid"]: x.gpu for x in got} == {79: 0, 13: 1}
    untimed = replace(xids[0], seconds_since_boot=None)
    got = judge_xids(XidLog(xids=(untimed,)), gpus, uptime_s=8000.0, window_s=60.0)
    assert [(x.value["xid"], x.gpu) for x in got] == [(79, 0)]


def test_one_xid_on_two_gpus_is_counted_twice_and_put_on_neither_alone() -> None:
    second = gpu_health(FakeNvml(nvmlDeviceGetPciInfo=Obj(busId=b"00000000:3A:00.0")), 1)
    gpus = (gpu_health(FakeNvml(), 0), second)
    lines = (
        "[ 10.0] NVRM: Xid (PCI:0000:3a:00): 48, pid=1, DBE\n"
        "[ 20.0] NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE\n"
        "[ 30.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n"
    )
    got = {
        x.value["xid"]: x
        for x in judge_xids(XidLog(xids=parse_kmsg(lines)), gpus, uptime_s=99.0, window_s=None)
    }
    assert got[48].gpu is None and got[48].value["count"] == 2 and " x2 " in got[48].message
    assert "on GPU 0, GPU 1:" in got[48].message and got[79].value["count"] == 1 and got[79].gpu == 0
    assert got[48].value["pci"] == ["0000:18:00", "0000:3a:00"]


def test_an_xid_on_a_gpu_nvml_does_not_list_and_on_one_it_does_names_the_unknown_first() -> None:
    lines = (
        "[ 10.0] NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE\n"
        "[ 20.0] NVRM: Xid (PCI:0000:99:00): 48, pid=1, DBE\n"
    )
    (got,) = judge_xids(
        XidLog(xids=parse_kmsg(lines)), (gpu_health(FakeNvml(), 0),), uptime_s=99.0, window_s=None
    )
    assert got.gpu is None and "x2 since boot on GPU ?, GPU 0:" in got.message


def test_nvml_listing_no_gpu_without_a_reason_is_one_skip_and_no_xid_read() -> None:
    from envbuilder.check.gate import node_findings

    cpu = HostReport(source="none", driver=None, cuda_driver=None)
    got = node_findings(
        (), None, cpu, T, xids=lambda: pytest.fail("no Xids without a GPU"), uptime_s=None, xid_window_s=None
    )
    assert [(x.check, x.status) for x in got] == [("node.nvml", "skip")] and "NVML lists no GPU" in got[
        0
    ].message


def test_a_refused_certificate_gives_no_coverage_pass_beside_its_refusal() -> None:
    low = Certificate(cert_doc(min_driver="999.0"))
    eng = engine_answering(lambda spec: pytest.fail("nothing runs in the image"))
    report, lines = run_check(eng, [low])
    assert "certificate.coverage" not in {x.check for x in report.findings}
    assert any("REFUSED" in line for line in lines)


def test_the_thresholds_given_are_the_ones_judged_with() -> None:
    strict = replace(T, gemm=Band(warn_below=1.5, fail_below=0.7))
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    report, _ = run_check(eng, [sealed([BASELINE])], thresholds=strict)
    assert {x.check: x.status for x in report.findings}["image.gemm"] == "warn"


def test_no_gpu_through_nvml_says_nvmls_own_reason() -> None:
    from envbuilder.check.gate import node_findings

    cpu = HostReport(source="none", driver=None, cuda_driver=None)
    why = "NVML: NVML Shared Library Not Found"
    (got,) = node_findings((), why, cpu, T, xids=lambda: XidLog(), uptime_s=None, xid_window_s=None)
    assert got.status == "skip" and f"({why}; driver none)" in got.message


def test_the_coverage_pass_names_every_certified_gpu_model_or_the_cpu() -> None:
    from cert_factory import RTX

    def coverage(certificate: Certificate, **kw: Any) -> Finding:
        eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
        report, _ = run_check(eng, [certificate], **kw)
        found: Finding = next(x for x in report.findings if x.check == "certificate.coverage")
        return found

    two = coverage(Certificate(cert_doc(gpus=(RTX, H200))))
    assert two.status == "pass" and "on NVIDIA GeForce RTX 3090, NVIDIA H200, driver" in two.message
    assert two.message.endswith("covers this node")
    eng = engine_answering(lambda spec: gate_doc())
    report = check_image(
        "team/train:1", find_certificate=lambda info: [Certificate(cert_doc("certified-cpu-only", gpus=()))],
        eng=eng, probe=lambda: HostReport(source="none", driver=None, cuda_driver=None),
        access_modes=lambda daemon: (), health=lambda: ((), "NVML: NVML Shared Library Not Found"),
        xids=lambda: XidLog(),
    )  # fmt: skip
    cpu = next(x for x in report.findings if x.check == "certificate.coverage")
    assert cpu.status == "pass" and ", on the CPU, driver" in cpu.message


def test_the_progress_says_how_many_gpus_nvml_read_or_why_it_read_none() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    _, lines = run_check(eng, [sealed([BASELINE])])
    assert "check: node: 1 GPU(s) read through NVML" in lines
    _, lines = run_check(
        engine_answering(lambda spec: gate_doc()), [sealed([BASELINE])], health=lambda: ((), "NVML: gone")
    )
    assert "check: node: NVML: gone" in lines


def test_the_certified_figures_are_every_passed_baseline_step_of_a_named_gpu_and_nothing_else() -> None:
    h100 = {**BASELINE, "metrics": {**BASELINE["metrics"], "device_name": "NVIDIA H100", "copy_gbs": 3000.0}}
    other = {**BASELINE, "name": "training", "metrics": {**BASELINE["metrics"], "device_name": "NVIDIA B200"}}
    skipped = {**BASELINE, "status": "skip", "metrics": {**BASELINE["metrics"], "device_name": "NVIDIA A100"}}
    unnamed = {**BASELINE, "metrics": {"bf16_gemm_tflops": 1.0, "copy_gbs": 1.0}}
    unmeasured = {**BASELINE, "metrics": {"device_name": "NVIDIA L4"}}
    got = certified_figures(sealed([MULTI, other, skipped, unnamed, unmeasured, BASELINE, h100]))
    assert got == {
        "NVIDIA H200": {"bf16_gemm_tflops": 700.0, "copy_gbs": 4000.0},
        "NVIDIA H100": {"bf16_gemm_tflops": 700.0, "copy_gbs": 3000.0},
    }


def test_the_json_document_lists_every_gpu_nvml_read() -> None:
    two = FakeNvml()
    two.nvmlDeviceGetCount = lambda: 2  # type: ignore[method-assign]
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    report, _ = run_check(eng, [sealed([BASELINE])], health=lambda: read_health(two))
    assert [g["index"] for g in report.to_dict()["node"]["gpus"]] == [0, 1]


def test_the_certified_busbw_is_the_multi_gpu_steps_row_of_that_size() -> None:
    other = {
        **MULTI,
        "name": "training",
        "metrics": {**MULTI["metrics"], "sweep": [{"bytes": 1 << 20, "busbw_gbs": 9.0}]},
    }
    c = sealed([other, MULTI])
    assert certified_busbw(c, 2, 1 << 30) == 330.0 and certified_busbw(c, 2, 1 << 20) is None
    odd = {**MULTI, "metrics": {**MULTI["metrics"], "sweep": ["a row", 7, *MULTI["metrics"]["sweep"]]}}
    assert certified_busbw(sealed([odd]), 2, 1 << 28) == 300.0  # a row that is no object is passed over


def test_a_judged_figure_carries_its_figures_to_the_hundredth_and_its_share_to_the_thousandth() -> None:
    base = {**BASELINE, "metrics": {**BASELINE["metrics"], "bf16_gemm_tflops": 700.456}}
    got = judge_gate(run_of(gate_doc(gpu_step(0, 691.234, 4000.0))), sealed([base]), T)
    gemm = next(x for x in got if x.check == "image.gemm")
    assert gemm.value == {"measured": 691.23, "certified": 700.46, "fraction": 0.987}


def test_a_judged_figure_says_which_share_it_fell_below_and_a_pass_says_none() -> None:
    got = judge_gate(
        run_of(gate_doc(gpu_step(0, 690.0, 2000.0), gpu_step(1, 560.0, 4000.0))), sealed([BASELINE]), T
    )
    by = {(x.check, x.gpu): x.message for x in got}
    assert by[("image.copy", 0)].endswith("(below 70%)") and by[("image.gemm", 1)].endswith("(below 90%)")
    assert "below" not in by[("image.gemm", 0)]


def test_a_harness_without_a_result_is_told_by_its_last_line_and_a_step_without_reason_by_none() -> None:
    none = judge_gate(
        GateRun(doc=None, exit_code=1, stderr_tail="starting\nImportError: no torch", seconds=1.0), None, T
    )
    assert none[0].message.endswith("(exit 1): ImportError: no torch")
    bare = {"name": "cuda_smoke", "status": "skip", "metrics": {}}
    assert [x.message for x in judge_gate(run_of(gate_doc(bare)), None, T)] == [""]


def test_the_short_modes_framework_smoke_and_unknown_steps_are_judged_as_they_say() -> None:
    framework: dict[str, Any] = {
        "name": "framework",
        "status": "pass",
        "reason": "",
        "metrics": {"framework": "torch", "version": "2.9.0"},
    }
    built = {**framework, "metrics": {**framework["metrics"], "cuda_build": "12.8"}}
    smoke = {"name": "cuda_smoke", "status": "fail", "reason": "no CUDA device is visible", "metrics": {}}
    newer = {"name": "a_newer_step", "status": "skip", "reason": "not here", "metrics": {}}
    got = judge_gate(run_of(gate_doc(framework, built, smoke, newer)), None, T)
    assert [(x.check, x.status, x.gpu, x.message) for x in got] == [
        ("image.framework", "pass", None, "torch 2.9.0 imports"),
        ("image.framework", "pass", None, "torch 2.9.0 imports (CUDA build 12.8)"),
        ("image.cuda_smoke", "fail", None, "no CUDA device is visible"),
    ]


def test_a_failed_allreduce_and_a_watchdog_after_it_are_each_their_own_failure() -> None:
    loop = {"name": "allreduce_loopback", "status": "fail", "reason": "NCCL error", "metrics": {}}
    hung = {"name": "watchdog", "status": "fail", "reason": "gpu0 hung", "metrics": {}}
    got = judge_gate(run_of(gate_doc(loop, hung)), None, T)
    assert [(x.check, x.status, x.message) for x in got] == [
        ("image.allreduce", "fail", "NCCL error"),
        ("image.run", "fail", "gpu0 hung"),
    ]


@pytest.mark.parametrize(("world", "nbytes"), [(2.0, 1 << 28), (2, float(1 << 28))])
def test_an_allreduce_whose_size_or_gpu_count_is_no_whole_number_is_not_judged(
    world: Any, nbytes: Any
) -> None:
    loop = {"name": "allreduce_loopback", "status": "pass", "reason": "",
            "metrics": {"world_size": world, "bytes": nbytes, "busbw_gbs": 120.0}}  # fmt: skip
    (got,) = judge_gate(run_of(gate_doc(loop)), sealed([BASELINE, MULTI]), T)
    assert (got.check, got.status) == ("image.allreduce", "skip")


def test_every_refusal_is_a_failed_certificate_finding_and_a_failure_without_remedy_prints_none() -> None:
    from envbuilder.check.image import summarise_refusals
    from envbuilder.cli.check_cmd import render_text
    from envbuilder.run.coverage import Refusal

    two = [
        Refusal(reason="driver-too-old", message="old", hint="update"),
        Refusal(reason="gpu", message="T4", hint=""),
    ]
    got = summarise_refusals(two)
    assert [(x.check, x.status, x.remedy) for x in got] == [
        ("certificate.driver-too-old", "fail", "update"),
        ("certificate.gpu", "fail", ""),
    ]
    text = render_text({"verdict": "FAIL", "reason": "x", "timings": {"total_s": 1.0}}, tuple(got))
    assert text.splitlines() == [
        "FAIL certificate.driver-too-old: old",
        "     remedy: update",
        "FAIL certificate.gpu: T4",
        "FAIL: x (1.0 s)",
    ]


# --------------------------------------------------------------------- --auto check, eighth set (2026-12-06)


def well_formed(findings: list[Finding]) -> None:
    """Each finding as --json writes it: a check name, a known status, a message, a remedy that is
    text; and a warning or failure of the check itself says what to do."""
    from envbuilder.check.findings import STATUSES

    for x in findings:
        d = x.to_dict()
        assert isinstance(d["check"], str) and d["check"].count(".") == 1, d
        assert d["status"] in STATUSES and isinstance(d["message"], str) and d["message"], d
        assert isinstance(d["remedy"], str) and (d["remedy"] != "") == (d["status"] in ("warn", "fail")), d


def test_the_checks_own_time_is_named_check_time_and_a_warning_says_what_to_do() -> None:
    (note,) = time_findings(31.0, T)
    (near,) = time_findings(50.5, T)
    assert (note.check, note.status, note.value) == ("check.time", "note", 31.0)
    assert (near.check, near.status, near.value) == ("check.time", "warn", 50.5)
    assert "pull the image before the job" in near.remedy
    well_formed([note, near])


def test_the_pcie_link_is_read_from_its_own_four_answers() -> None:
    """Gen4 x8 of a Gen5 x16 link: each figure from its own NVML call; a full link at its
    maximum generation is said without the power-saving note."""
    narrow = judged(
        nvmlDeviceGetCurrPcieLinkGeneration=4,
        nvmlDeviceGetMaxPcieLinkGeneration=5,
        nvmlDeviceGetCurrPcieLinkWidth=8,
        nvmlDeviceGetMaxPcieLinkWidth=16,
    )["node.pcie"]
    assert narrow.value == {"gen": 4, "gen_max": 5, "width": 8, "width_max": 16}
    assert narrow.message == "PCIe link narrower than the maximum: Gen4 x8 (max Gen5 x16)"
    full = judged(nvmlDeviceGetCurrPcieLinkGeneration=5)["node.pcie"]
    assert (full.status, full.message) == ("pass", "PCIe Gen5 x16 (max Gen5 x16)")


def test_a_pcie_width_neither_answer_reads_is_said_with_the_current_widths_reason() -> None:
    nvml = FakeNvml(nvmlDeviceGetCurrPcieLinkWidth=NOT_SUPPORTED)
    del nvml.answers["nvmlDeviceGetMaxPcieLinkWidth"]  # an older nvidia-ml-py: another reason
    pcie = {x.check: x for x in judge_gpu(gpu_health(nvml, 0), T)}["node.pcie"]
    assert pcie.status == "note" and "not supported" in pcie.message.lower()
    assert "not in this nvidia-ml-py" not in pcie.message


def test_the_xid_findings_are_node_xid_with_what_they_found() -> None:
    log = XidLog(xids=parse_kmsg(KMSG))
    gpus = read_health(FakeNvml())[0]
    hits = judge_xids(log, gpus, uptime_s=8000.0, window_s=None)
    assert {x.check for x in hits} == {"node.xid"}
    well_formed(hits)
    (clean,) = judge_xids(XidLog(), gpus, uptime_s=8000.0, window_s=None)
    assert (clean.check, clean.status, clean.value) == ("node.xid", "pass", [])
    (unread,) = judge_xids(
        XidLog(unreadable="dmesg: read kernel buffer failed"), gpus, uptime_s=1.0, window_s=None
    )
    assert (unread.check, unread.status, unread.message) == (
        "node.xid",
        "note",
        "dmesg: read kernel buffer failed",
    )


def test_the_window_judges_each_xid_by_its_own_time() -> None:
    """An Xid line without a time is kept (it may be recent); one before the window is left out,
    whatever the line before it."""
    from envbuilder.host.health import KernelXid

    untimed = KernelXid(xid=79, pci="0000:18:00", seconds_since_boot=None, line="")
    old = KernelXid(xid=48, pci="0000:18:00", seconds_since_boot=100.0, line="")
    got = judge_xids(XidLog(xids=(untimed, old)), (), uptime_s=8000.0, window_s=750.0)
    assert [x.value["xid"] for x in got] == [79]


def test_the_node_and_the_whole_check_read_xids_in_the_window_given_from_the_uptime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KMSG: Xid 79 at 7200 s after boot, Xid 13 at 7300 s; up 8000 s, a 750 s window keeps 13."""
    from envbuilder.check import gate
    from envbuilder.check.gate import node_findings

    gpus = read_health(FakeNvml())[0]
    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H200,))

    def kmsg() -> XidLog:
        return XidLog(xids=parse_kmsg(KMSG))

    got = node_findings(gpus, None, report, T, xids=kmsg, uptime_s=8000.0, xid_window_s=750.0)
    assert [x.value["xid"] for x in got if x.check == "node.xid"] == [13]
    monkeypatch.setattr(gate, "uptime_seconds", lambda: 8000.0)
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    whole, _ = run_check(eng, [sealed([BASELINE])], xids=kmsg, xid_window_s=750.0)
    assert [x.value["xid"] for x in whole.findings if x.check == "node.xid"] == [13]


def test_the_xid_windows_now_is_the_kernel_logs_clock_not_a_containers_uptime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under LXCFS a container's /proc/uptime is its own (here 100 s), while /dev/kmsg stamps its
    records from the host's boot: a 750 s window would keep every Xid of the host's days of uptime."""
    import time
    from pathlib import Path

    from envbuilder.host.health import uptime_seconds

    real = Path.read_text

    def lxcfs(self: Path, *a: Any, **k: Any) -> str:
        return "100.00 90.00\n" if str(self) == "/proc/uptime" else real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", lxcfs)
    before = time.clock_gettime(time.CLOCK_MONOTONIC)
    assert before <= uptime_seconds() <= time.clock_gettime(time.CLOCK_MONOTONIC)


@pytest.fixture
def east_of_utc(monkeypatch: pytest.MonkeyPatch) -> Any:
    """This process's local time 5:30 ahead of UTC (a POSIX TZ rule: no zone files needed)."""
    import time

    monkeypatch.setenv("TZ", "XST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("east_of_utc")
def test_the_report_is_started_in_utc_whatever_the_local_zone() -> None:
    from datetime import datetime, timezone

    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    report, _ = run_check(eng, [sealed([BASELINE])])
    started = datetime.strptime(report.started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - started).total_seconds()) < 600


def test_the_report_document_carries_what_the_check_found() -> None:
    """--json: the image's ID, the certificate that covers, the host's driver and GPU access
    mode, the short mode's steps, and the coverage finding's certificate ID; the harness's stderr
    reaches `say` as it comes."""

    def job(spec: ContainerSpec, on_stderr: Any) -> RunResult:
        if "--nonce" not in spec.command:
            return RunResult(exit_code=0, stdout="", stderr="")
        if on_stderr is not None:
            on_stderr("[harness] gpu0: bf16 GEMM")
        nonce = spec.command[spec.command.index("--nonce") + 1]
        out = json.dumps({**gate_doc(gpu_step(0, 700.0, 4000.0)), "nonce": nonce})
        return RunResult(exit_code=0, stdout=out + "\n", stderr="")

    c = sealed([BASELINE])
    report, lines = run_check(FakeEngine(images={"team/train:1": IMAGE, IMAGE_ID: IMAGE}, job=job), [c])
    doc = report.to_dict()
    assert doc["image_id"] == IMAGE_ID and doc["certificate"]["id"] == c.id
    assert (doc["node"]["driver"], doc["node"]["gpu_access"]) == ("580.159.04", "devices")
    assert [s["name"] for s in doc["image_run"]["steps"]] == ["gpu0"]
    coverage = next(x for x in report.findings if x.check == "certificate.coverage")
    assert coverage.value == c.id[:12]
    assert "[harness] gpu0: bf16 GEMM" in lines


def test_an_uncertified_image_says_its_steps_did_not_run() -> None:
    eng = engine_answering(lambda spec: pytest.fail("no container for an uncertified image"))
    report, _ = run_check(eng, [])
    (skipped,) = [x for x in report.findings if x.check == "image.run"]
    assert skipped.status == "skip" and "in-image steps did not run" in skipped.message


def test_each_short_mode_finding_is_well_formed_on_its_own_gpu() -> None:
    """Every branch of judge_gate: the figures not measured or not certified are skips of their
    GPU (with what was measured); failures say what to do; passes carry their figure."""
    c = sealed([BASELINE, MULTI])
    unmeasured = {**gpu_step(1, 700.0, 4000.0)}
    unmeasured["metrics"] = {**unmeasured["metrics"], "copy_gbs": None}
    other = gpu_step(2, 300.0, 1000.0, name="NVIDIA H100 80GB HBM3")
    framework = {
        "name": "framework",
        "status": "pass",
        "reason": "",
        "metrics": {"framework": "torch", "version": "2.9.1"},
    }
    got = judge_gate(run_of(gate_doc(framework, gpu_step(0, 700.0, 4000.0), unmeasured, other)), c, T)
    well_formed(got)
    by = {(x.check, x.gpu): x for x in got}
    assert by[("image.framework", None)].value == "2.9.1"
    assert by[("image.cuda_smoke", 0)].status == "pass" and by[("image.kernels", 0)].value == "SASS sm_90"
    assert by[("image.gemm", 0)].value == {"measured": 700.0, "certified": 700.0, "fraction": 1.0}
    assert (by[("image.copy", 1)].status, by[("image.copy", 1)].message) == (
        "skip",
        "no device-memory copy was measured",
    )
    assert by[("image.gemm", 2)].status == "skip" and by[("image.gemm", 2)].value == {
        "measured": 300.0,
        "certified": None,
    }
    failing = [
        {"name": "framework", "status": "fail", "reason": "torch is not installed", "metrics": {}},
        {"name": "gpu0", "status": "fail", "reason": "no CUDA", "metrics": {}},
        {"name": "allreduce_loopback", "status": "fail", "reason": "NCCL error", "metrics": {}},
        {"name": "watchdog", "status": "fail", "reason": "gpu1 hung", "metrics": {}},
    ]
    failed = judge_gate(run_of(gate_doc(*failing)), c, T)
    well_formed(failed)
    assert [x.message for x in failed] == ["torch is not installed", "no CUDA", "NCCL error", "gpu1 hung"]
    none = judge_gate(GateRun(doc=None, exit_code=124, stderr_tail="killed", seconds=40.0), None, T)
    well_formed(none)


def test_each_refusal_keeps_its_own_reason_as_its_value() -> None:
    from envbuilder.check.image import summarise_refusals
    from envbuilder.run.coverage import Refusal

    two = [
        Refusal(reason="driver-too-old", message="old", hint="update"),
        Refusal(reason="gpu-model", message="T4", hint="certify here"),
    ]
    assert [x.value for x in summarise_refusals(two)] == ["driver-too-old", "gpu-model"]


# ------------------------------------------------------------- --auto check, sets new..seventh (2026-12-06)


def test_a_warning_report_is_a_valid_document_whose_reason_names_the_warnings() -> None:
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 560.0, 4000.0)))  # GEMM at 80%: a warning
    report, _ = run_check(eng, [sealed([BASELINE])])
    doc = report.to_dict()
    assert (doc["verdict"], doc["exit_code"]) == ("WARN", 1) and validate_report(doc) == []
    assert doc["reason"].startswith("image.gemm (GPU 0): bf16 GEMM 560.0 TFLOP/s = 80% of the certified")
    assert verdict_reason([f("pass"), f("warn", "node.clocks"), f("note")]) == "node.clocks: warn"


def test_time_is_only_a_note_until_ten_seconds_before_the_limit() -> None:
    assert [x.status for x in time_findings(T.time_limit_s - 10.5, T)] == ["note"]


def test_the_schema_validator_answers_a_document_that_is_no_object_in_one_line() -> None:
    for doc in ([], [{"kind": "envbuilder-check"}], None, "PASS", 0):
        assert validate_report(doc) == ["not an object"], doc


def test_the_schema_validator_names_a_finding_that_is_a_list_and_takes_whole_seconds() -> None:
    doc = _valid_doc()
    assert validate_report({**doc, "findings": [[], *doc["findings"][1:]]}) == [
        "findings[0]: bad check, status, gpu, message, remedy"
    ]
    # JSON has one kind of number: a total of 12 seconds written `12` is seconds all the same
    assert validate_report({**doc, "timings": {**doc["timings"], "total_s": 12}}) == []


def test_the_report_times_each_phase_of_the_check() -> None:
    ticks = iter([100.0, 100.5, 101.0, 102.0, 103.0, 104.5, 105.0, 111.0, 112.0])
    eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
    report, _ = run_check(eng, [sealed([BASELINE])], clock=lambda: next(ticks))
    assert report.to_dict()["timings"] == {
        "probe_s": 0.5,
        "certificate_s": 1.0,
        "node_s": 1.5,
        "image_s": 6.0,
        "total_s": 12.0,
    }


def test_a_driver_whose_cuda_the_probe_could_not_tell_is_judged_by_the_matrixs_cuda_of_it() -> None:
    """A /proc probe gives the driver without its CUDA version: the certificate's coverage is
    judged with the matrix's CUDA of that driver (580 -> 13.0), as `run` does."""

    def check(require: str) -> Any:
        image = replace(IMAGE, env=(f"NVIDIA_REQUIRE_CUDA={require}",))
        eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
        eng.images = {"team/train:1": image, IMAGE_ID: image}
        return check_image(
            "team/train:1", find_certificate=lambda info: [sealed([BASELINE])], eng=eng,
            probe=lambda: HostReport(source="proc", driver="580.159.04", cuda_driver=None, gpus=(H200,)),
            access_modes=lambda daemon: (DEVICES,), health=healthy, xids=XidLog,
        )  # fmt: skip

    assert "certificate.coverage" in {x.check for x in check("cuda>=13.0").findings}
    (refused,) = [x for x in check("cuda>=13.1").findings if x.status == "fail"]
    assert refused.check == "certificate.require-cuda"
    assert "driver 580.159.04 supports CUDA 13.0" in refused.message


def test_the_progress_goes_to_stderr_and_never_into_the_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """The image, its GPU access and the short mode's start are said as the check goes (a
    prolog's log shows where a slow check spent its time), on stderr: stdout is --json's alone."""
    from envbuilder.cli import cli

    def real_check(image: str, **kw: Any) -> Any:
        eng = engine_answering(lambda spec: gate_doc(gpu_step(0, 700.0, 4000.0)))
        return check_image(
            image, find_certificate=lambda info: [sealed([BASELINE])], eng=eng,
            probe=lambda: HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H200,)),
            access_modes=lambda daemon: (DEVICES,), health=healthy, xids=XidLog, say=kw["say"],
        )  # fmt: skip

    monkeypatch.setattr("envbuilder.check.check_image", real_check)
    res = CliRunner().invoke(cli, ["check", "team/train:1", "--json"])
    assert res.exit_code == 0, res.output
    assert validate_report(json.loads(res.stdout)) == []
    said = res.stderr.splitlines()
    assert f"check: team/train:1 ({IMAGE_ID[:19]}): GPU access devices (" in res.stderr
    assert "check: running the short mode in the image" in said
    assert "check: " not in res.stdout
