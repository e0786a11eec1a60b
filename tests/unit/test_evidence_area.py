"""Evidence read from outside the image (mutants area "evidence", issue 23): the host probe's GPU
process lists and what certify's GPU watch makes of them, the foreign node's record, the kernel
inventory, the cgroup CPU meter. One table row per condition, on the record a slip would miss (the
second GPU, another order, a field missing, null or of another type, both sides of a bound)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_host import SMI_APPS_ARGV, FakeGpu, FakeNvml, FakeNVMLError, smi_runner
from test_certify import IMAGE
from test_evidence_rules import H100, RISE, gpu, lib, node_result, report, watched
from test_verdict_conditions import gpu_facts

from envbuilder.certify.foreign import seal_foreign_run
from envbuilder.certify.kernels import judge_inventory
from envbuilder.doctor.checks import _gpu_checks
from envbuilder.engine import ImageInfo
from envbuilder.host import CommandResult, GpuInfo, HostReport
from envbuilder.host.probe import probe_nvidia_smi, probe_nvml
from envbuilder.matrix import load_matrix

Doc = dict[str, Any]

# =========================================================================== unread process lists


class _Unlisting(FakeNvml):
    """NVML that cannot list one kind of process (`fails`: compute | graphics) on the GPUs whose
    index is in `on`: an NVMLError (no permission, a driver without the call)."""

    def __init__(self, gpus: list[FakeGpu], fails: str, on: tuple[int, ...]) -> None:
        super().__init__(gpus)
        self.fails, self.on = fails, on

    def _listed(self, g: FakeGpu, kind: str) -> list[Any]:
        if kind == self.fails and self.gpus.index(g) in self.on:
            raise FakeNVMLError("Insufficient Permissions")
        return getattr(super(), f"nvmlDeviceGet{kind.title()}RunningProcesses")(g)  # type: ignore[no-any-return]

    def nvmlDeviceGetComputeRunningProcesses(self, g: FakeGpu) -> list[Any]:
        return self._listed(g, "compute")

    def nvmlDeviceGetGraphicsRunningProcesses(self, g: FakeGpu) -> list[Any]:
        return self._listed(g, "graphics")


def _two() -> list[FakeGpu]:
    return [FakeGpu(uuid="GPU-1", compute=[(7, None)]), FakeGpu(uuid="GPU-2", graphics=[(8, None)])]


@pytest.mark.parametrize(
    ("fails", "on", "pids"),
    [
        pytest.param("none", (), [(7,), (8,)], id="both-lists-read"),
        pytest.param("compute", (0,), [None, (8,)], id="compute-unread-on-the-first"),
        pytest.param("graphics", (1,), [(7,), None], id="graphics-unread-on-the-second"),
        pytest.param("compute", (1,), [(7,), None], id="compute-unread-on-the-second-an-empty-one"),
        pytest.param("graphics", (0, 1), [None, None], id="graphics-unread-on-both"),
    ],
)
def test_an_nvml_process_list_that_fails_is_unread_not_empty(
    tmp_path: Path, fails: str, on: tuple[int, ...], pids: list[tuple[int, ...] | None]
) -> None:
    """Was `opt(fn) or ()`: a list NVML refused read as no process, and certify's watch took a
    process that ran before the run (another tenant's) for the container's (issue 23 item 14)."""
    got = probe_nvml(_Unlisting(_two(), fails, on), root=tmp_path)
    assert isinstance(got, HostReport)
    seen = [None if g.processes is None else tuple(p.pid for p in g.processes) for g in got.gpus]
    assert seen == pids


@pytest.mark.parametrize(
    ("apps", "processes"),
    [
        pytest.param(CommandResult(returncode=0, stdout="", stderr=""), [(), ()], id="no-process"),
        pytest.param(
            CommandResult(returncode=6, stdout="", stderr="No permission"), [None, None], id="failed"
        ),
        pytest.param(CommandResult(returncode=127, stdout="", stderr="gone"), [None, None], id="not-run"),
    ],
)
def test_nvidia_smis_compute_apps_that_fail_are_unread_for_every_gpu(
    apps: CommandResult, processes: list[tuple[()] | None]
) -> None:
    run = smi_runner("2gpu")
    run.table[SMI_APPS_ARGV] = apps
    got = probe_nvidia_smi(run)
    assert isinstance(got, HostReport)
    assert [g.processes for g in got.gpus] == processes


def unlisted(g: GpuInfo) -> GpuInfo:
    return replace(g, processes=None)


@pytest.mark.parametrize(
    ("baseline", "sample", "busy"),
    [
        # Process 9 may have run on GPU-2 before the container (its list is unread): turning up on
        # GPU-1 it is no new process, whichever GPU's list was unread and wherever it turns up.
        pytest.param(
            (gpu("GPU-1", 0), unlisted(gpu("GPU-2", 1))),
            (gpu("GPU-1", 0, pids=(9,)), gpu("GPU-2", 1, pids=(9,))),
            (),
            id="the-second-baselines-list-unread",
        ),
        pytest.param(
            (unlisted(gpu("GPU-1", 0)), gpu("GPU-2", 1), gpu("GPU-3", 2)),
            (gpu("GPU-1", 0), gpu("GPU-2", 1), gpu("GPU-3", 2, pids=(9,))),
            (),
            id="the-first-unread-a-process-on-the-third",
        ),
        pytest.param(
            (unlisted(gpu("GPU-1", 0)),),
            (gpu("GPU-1", 0, pids=(9,)),),
            (),
            id="the-only-gpus-list-unread",
        ),
        # Memory is still read against the baseline.
        pytest.param(
            (gpu("GPU-1", 0), unlisted(gpu("GPU-2", 1))),
            (gpu("GPU-1", 0), gpu("GPU-2", 1, mem=100 + RISE, pids=(9,))),
            ("GPU-2",),
            id="unread-list-memory-rise",
        ),
        pytest.param(
            (gpu("GPU-1", 0), unlisted(gpu("GPU-2", 1))),
            (gpu("GPU-1", 0, mem=100 + RISE - 1), gpu("GPU-2", 1, pids=(9,))),
            (),
            id="unread-list-memory-one-below-the-rise",
        ),
        # A sample's list unread shows no process; every baseline list read, the rule holds.
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1)),
            (unlisted(gpu("GPU-1", 0)), gpu("GPU-2", 1, pids=(9,))),
            ("GPU-2",),
            id="a-samples-list-unread",
        ),
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1)),
            (gpu("GPU-1", 0), unlisted(gpu("GPU-2", 1))),
            (),
            id="a-samples-list-unread-nothing-new",
        ),
        # A GPU the baseline did not list, its list unread, takes nothing from the others.
        pytest.param(
            (gpu("GPU-1", 0),),
            (gpu("GPU-1", 0, pids=(9,)), unlisted(gpu("GPU-2", 1))),
            ("GPU-1",),
            id="an-unread-gpu-not-in-the-baseline",
        ),
    ],
)
def test_no_process_is_new_against_a_baseline_whose_list_is_unread(
    baseline: tuple[GpuInfo, ...], sample: tuple[GpuInfo, ...], busy: tuple[str, ...]
) -> None:
    seen = watched(report(*baseline), report(*sample))
    assert seen.busy == busy and seen.samples == 1


@pytest.mark.parametrize(
    ("baseline", "said"),
    [
        pytest.param((gpu("GPU-1", 0), gpu("GPU-2", 1)), "", id="every-list-read"),
        pytest.param(
            (unlisted(gpu("GPU-3", 0)), gpu("GPU-1", 1), unlisted(gpu("GPU-2", 2))),
            "no baseline process list for GPU-2, GPU-3: no process is counted as new on any GPU",
            id="two-unread",
        ),
    ],
)
def test_the_detail_names_the_gpus_whose_process_list_is_unread(
    baseline: tuple[GpuInfo, ...], said: str
) -> None:
    sample = tuple(replace(g, processes=()) for g in baseline)
    assert watched(report(*baseline), report(*sample)).detail == said


@pytest.mark.parametrize(
    ("processes", "status", "detail"),
    [
        pytest.param(None, "warn", "its processes could not be listed", id="unread"),
        pytest.param((), "ok", "no process holds VRAM", id="none"),
    ],
)
def test_doctor_says_an_unread_process_list_is_unknown(processes: Any, status: str, detail: str) -> None:
    vram = _gpu_checks(replace(gpu("GPU-1"), processes=processes))[-1]
    assert (vram.name, vram.status, vram.detail) == ("gpu0 vram", status, detail)


def test_another_tenants_process_nvml_could_not_list_in_the_baseline_is_no_work(tmp_path: Path) -> None:
    """The defect end to end: process 9 ran on GPU-2 before the run, NVML refused GPU-2's compute
    list at the baseline, and 9 then used GPU-1 too. Read as no process, 9 was new on both GPUs."""
    before = _Unlisting([FakeGpu(uuid="GPU-1"), FakeGpu(uuid="GPU-2", compute=[(9, None)])], "compute", (1,))
    during = FakeNvml(
        [FakeGpu(uuid="GPU-1", compute=[(9, None)]), FakeGpu(uuid="GPU-2", compute=[(9, None)])]
    )
    reads = [probe_nvml(before, root=tmp_path), probe_nvml(during, root=tmp_path)]
    assert all(isinstance(r, HostReport) for r in reads)
    seen = watched(*(r for r in reads if isinstance(r, HostReport)))
    assert (seen.busy, seen.samples) == ((), 1)
    assert "no baseline process list for GPU-2" in seen.detail


def sealed(doc: Doc, image: ImageInfo = IMAGE, **facts: Any) -> Any:
    """seal_foreign_run of a fleet job's result `doc` (a GPU run; `facts` change its RunFacts)."""
    base: Doc = {"observation": None, "container_seconds": None, "cpu_seconds": None}
    return seal_foreign_run(
        image=image,
        image_ref="img:1",
        result=doc,
        facts=gpu_facts(**{**base, **facts}),
        where="node1",
        thresholds={},
        run={},
    )


@pytest.mark.parametrize(
    ("record", "verdict", "said"),
    [
        pytest.param(
            {"name": "NVIDIA Odd", "uuid": "GPU-9", "compute_capability": ""},
            "certified",
            "NVIDIA Odd: compute capability '' could not be read",
            id="an-empty-cc-is-said",
        ),
        pytest.param(
            {"name": "NVIDIA Odd", "uuid": "GPU-9", "compute_capability": None},
            "certified",
            "NVIDIA Odd: compute capability '' could not be read",
            id="a-null-cc-is-said",
        ),
        pytest.param(
            {"name": "NVIDIA Odd", "uuid": "GPU-9"},
            "certified",
            "compute capability '' could not",
            id="no-cc",
        ),
        pytest.param(
            {"name": "", "uuid": "GPU-9", "compute_capability": "6.1"},
            "failed",
            "has no kernel for GPU-9 (sm_61)",
            id="a-nameless-gpu-is-judged-by-its-uuid",
        ),
        pytest.param(
            {"name": None, "uuid": None, "compute_capability": "6.1"},
            "failed",
            "has no kernel for GPU 1 (sm_61)",
            id="nameless-and-no-uuid-by-its-place",
        ),
    ],
)
def test_every_gpu_of_a_nodes_host_record_is_judged_or_said_not_judged(
    record: Doc, verdict: str, said: str
) -> None:
    """Was `if g["name"] and g["cc"]`: a GPU of the job's host record without a compute capability
    (or a name) was left out silently, so its kernels were never judged and nothing said so."""
    doc = node_result([H100], [lib("libtorch_cuda.so", ["sm_90"])])
    doc["host"]["gpus"].append(record)
    cert = sealed(doc)
    assert cert.verdict == verdict
    assert said in " | ".join([cert.data["verdict_reason"], *cert.data["run"]["warnings"]])


def test_a_host_gpu_whose_compute_capability_the_probe_could_not_read_is_said_not_judged() -> None:
    """certify's own run, the same rule: was `if g.cc`, a GPU left out of the kernel judgement
    without a word."""
    from test_certify import _inventory_step, _lib, a100_host, busy_gpu, engine, harness_result, mode

    from envbuilder.certify.certify import certify_image

    host = a100_host()
    unread = replace(host, gpus=(replace(host.gpus[0], cc=None),))
    libs = [_lib("torch/lib/libtorch_cuda.so", ["sm_90"], [])]
    cert = certify_image(
        "img:1",
        eng=engine(result=harness_result(steps=[_inventory_step(libs)])),
        probe=lambda: unread,
        observe=busy_gpu(),
        access_modes=lambda _d: [mode("toolkit")],
        progress=lambda _line: None,
        mem_total=2**34,
    )
    said = "NVIDIA A100-SXM4-80GB: compute capability '' could not be read"
    assert any(said in w for w in cert.data["run"]["warnings"]), cert.data["run"]["warnings"]


@pytest.mark.parametrize(
    ("driver", "said"),
    [
        pytest.param(None, "the driver (unknown) could not be read", id="null"),
        pytest.param("", "the driver (unknown) could not be read", id="empty"),
        pytest.param("R580", "the driver (R580) could not be read", id="no-version"),
        pytest.param("580.159.04", "", id="read"),
    ],
)
def test_ptx_on_a_driver_that_cannot_be_read_is_a_warning_not_a_pass(driver: str | None, said: str) -> None:
    """Was `driver is not None and _newer(...)`, _newer False for what Version cannot read: the JIT
    floor was skipped without a word, where an unknown ISA is a warning."""
    ptx = [{"arch": "compute_90", "isa": "8.3"}]
    v = judge_inventory(load_matrix(), {"libraries": [lib("a.so", [], ptx)]}, [("RTX 5090", "12.0")], driver)
    assert v.failures == () and v.covered == ("a.so: compute_90 on RTX 5090",)
    if said:
        assert v.warnings == (
            "a.so runs on RTX 5090 (sm_120) only through PTX compute_90 of ISA 8.3 (CUDA 12.3, driver "
            f"545.23.06): {said}: the JIT is not checked",
        )
    else:
        assert v.warnings == ()
