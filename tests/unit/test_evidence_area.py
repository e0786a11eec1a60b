"""Evidence read from outside the image (mutants area "evidence", issue 23): the host probe's GPU
process lists and what certify's GPU watch makes of them, the foreign node's record, the kernel
inventory, the cgroup CPU meter. One table row per condition, on the record a slip would miss (the
second GPU, another order, a field missing, null or of another type, both sides of a bound)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from fake_host import (
    MIB,
    SMI_APPS_ARGV,
    SMI_QUERY_ARGV,
    FakeGpu,
    FakeNvml,
    FakeNVMLError,
    FakeRunner,
    ok,
    smi_runner,
)
from test_certify import IMAGE
from test_evidence_rules import (
    A100,
    H100,
    NEW_DRIVER,
    RISE,
    gpu,
    lib,
    node_certificate,
    node_result,
    report,
    watched,
)
from test_verdict_conditions import gpu_facts, gpu_result

from envbuilder.certify.foreign import certificate_refusal, host_from_result, seal_foreign_run
from envbuilder.certify.kernels import disagreements, inventory_of, judge_inventory, judge_kernels
from envbuilder.certify.observe import Observation, not_observed
from envbuilder.doctor.checks import _gpu_checks
from envbuilder.engine import ImageInfo
from envbuilder.host import CommandResult, GpuInfo, HostReport
from envbuilder.host.probe import probe_host, probe_nvidia_smi, probe_nvml, probe_proc
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


# =========================================================================== a foreign node's run


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


def test_the_nodes_observation_is_recorded_when_there_is_one_else_not_observed() -> None:
    doc = node_result([H100], [lib("libtorch_cuda.so", ["sm_90"])])
    seen = Observation("the node's nvml", 4, ("GPU-0",), "its detail")
    assert sealed(doc, observation=seen).data["run"]["host_observation"] == seen.to_json()
    unseen = sealed(doc).data["run"]["host_observation"]
    assert unseen == not_observed("node1").to_json()
    assert (unseen["source"], unseen["samples"], unseen["busy_gpus"]) == ("none", 0, [])


def _uncovered(n: int) -> list[Doc]:
    return [lib(f"lib{i}_cuda.so", ["sm_90"]) for i in range(n)]


@pytest.mark.parametrize("n", [1, 3, 4, 5])
def test_a_kernel_failure_reason_names_the_first_three(n: int) -> None:
    cert = sealed(node_result([A100], _uncovered(n)))
    reason = cert.data["verdict_reason"]
    assert cert.verdict == "failed" and reason.startswith("kernel inventory: lib0_cuda.so has no kernel")
    assert [f"lib{i}_cuda.so" in reason for i in range(n)] == [i < 3 for i in range(n)]
    assert reason.count("; ") == min(n, 3) - 1


def test_a_run_that_failed_keeps_its_own_reason_over_a_kernel_failure() -> None:
    cert = sealed(node_result([A100], _uncovered(1)), exit_code=1)
    assert cert.verdict == "failed"
    assert not cert.data["verdict_reason"].startswith("kernel inventory")


def _certify_label(label: Doc | None) -> ImageInfo:
    labels = {k: v for k, v in IMAGE.labels.items() if k != "io.envbuilder.certify"}
    if label is not None:
        labels["io.envbuilder.certify"] = json.dumps(label)
    return ImageInfo(id=IMAGE.id, tags=(), repo_digests=(), labels=labels)


@pytest.mark.parametrize(
    ("label", "warned"),
    [
        pytest.param(None, False, id="no-certify-label"),
        pytest.param({"level": "default", "thresholds": {}}, False, id="a-label-without-smoke"),
        pytest.param({"level": "default", "thresholds": {}, "smoke": ["true"]}, True, id="a-smoke-command"),
    ],
)
def test_a_node_run_says_the_smoke_command_did_not_run_only_when_the_image_has_one(
    label: Doc | None, warned: bool
) -> None:
    doc = node_result([H100], [lib("libtorch_cuda.so", ["sm_90"])])
    warnings = sealed(doc, _certify_label(label)).data["run"]["warnings"]
    assert any("certify.smoke) did not run" in w for w in warnings) is warned


# =========================================================================== a recorded observation


@pytest.mark.parametrize(
    "entry",
    [None, "", 7, 1.5, True, ["GPU-1"], {"uuid": "GPU-1"}],
    ids=["null", "empty", "int", "float", "true", "list", "mapping"],
)
def test_a_recorded_busy_entry_that_is_no_gpu_name_is_dropped_and_the_others_kept(entry: Any) -> None:
    doc = {"source": "nvml", "samples": 2, "busy_gpus": [entry, "GPU-2"]}
    got = Observation.from_json(doc, seen_by="the node's")
    assert got is not None and got.busy == ("GPU-2",)
    alone = Observation.from_json({**doc, "busy_gpus": [entry]}, seen_by="the node's")
    assert alone is not None and (alone.busy, alone.saw_gpu_work) == ((), False)


# =========================================================================== the watch


@pytest.mark.parametrize(
    ("baseline", "sample", "busy"),
    [
        pytest.param(
            (gpu("GPU-2", 1),),
            (gpu("GPU-1", 0, pids=(9,)), gpu("GPU-2", 1, pids=(9,))),
            ("GPU-2",),
            id="a-gpu-not-in-the-baseline-listed-first",
        ),
        pytest.param(
            (gpu("GPU-3", 2),),
            (gpu("GPU-1", 0), gpu("GPU-2", 1), gpu("GPU-3", 2, mem=100 + RISE)),
            ("GPU-3",),
            id="two-gpus-not-in-the-baseline-listed-first",
        ),
    ],
)
def test_a_gpu_without_baseline_skips_only_itself(
    baseline: tuple[GpuInfo, ...], sample: tuple[GpuInfo, ...], busy: tuple[str, ...]
) -> None:
    assert watched(report(*baseline), report(*sample)).busy == busy


@pytest.mark.parametrize(
    ("baseline", "said"),
    [
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1, mem=None)),
            "no baseline memory reading for GPU-2: its memory is not counted",
            id="the-second-unread",
        ),
        pytest.param(
            (gpu("GPU-1", 0), gpu("GPU-2", 1), gpu("GPU-3", 2, mem=None), gpu("GPU-4", 3, mem=None)),
            "no baseline memory reading for GPU-3, GPU-4: its memory is not counted",
            id="the-third-and-fourth-unread",
        ),
    ],
)
def test_the_detail_names_every_gpu_whose_baseline_memory_is_unread(
    baseline: tuple[GpuInfo, ...], said: str
) -> None:
    sample = tuple(replace(g, memory_used_mib=100) for g in baseline)
    assert watched(report(*baseline), report(*sample)).detail == said


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


# =========================================================================== the kernel inventory


def _inventory(metrics: Doc) -> Doc:
    return {"kind": "step", "name": "kernel_inventory", "status": "pass", "metrics": metrics}


@pytest.mark.parametrize(
    "before",
    [[], ["kernel_inventory"], [None, 3], [["kernel_inventory"]], [{"name": "host"}]],
    ids=["first", "a-string-before", "null-and-int-before", "a-list-before", "another-step-before"],
)
def test_the_inventory_step_is_found_past_records_that_are_no_step(before: list[Any]) -> None:
    metrics = {"libraries": [lib("a.so", ["sm_90"])]}
    assert inventory_of({"steps": [*before, _inventory(metrics)]}) == metrics


@pytest.mark.parametrize(
    ("entry", "covered", "warned"),
    [
        pytest.param({"sass": ["sm_90"]}, "a.so: sm_90 on H100", "", id="sass-no-ptx-key"),
        pytest.param({"sass": ["sm_90"], "ptx": None}, "a.so: sm_90 on H100", "", id="sass-ptx-null"),
        pytest.param(
            {"ptx": [{"arch": "compute_90", "isa": "8.0"}]},
            "a.so: compute_90 on H100",
            "",
            id="ptx-no-sass-key",
        ),
        pytest.param(
            {"sass": None, "ptx": [{"arch": "compute_90", "isa": "8.0"}]},
            "a.so: compute_90 on H100",
            "",
            id="ptx-sass-null",
        ),
        pytest.param(
            {"sass": ["compute_90"]},
            "a.so: compute_90 on H100",
            "only through PTX compute_90, whose ISA could not be read",
            id="ptx-named-in-sass-no-ptx-key",
        ),
    ],
)
def test_a_library_with_one_kind_of_device_code_is_judged_on_it(
    entry: Doc, covered: str, warned: str
) -> None:
    v = judge_inventory(
        load_matrix(),
        {"libraries": [{"library": "a.so", "owner": "torch", **entry}]},
        [("H100", "9.0")],
        NEW_DRIVER,
    )
    assert (v.failures, v.covered) == ((), (covered,))
    assert (warned in " ".join(v.warnings)) and bool(v.warnings) is bool(warned), v.warnings


def test_the_isa_is_read_past_ptx_records_that_are_no_mapping() -> None:
    ptx: list[Any] = ["compute_90", None, {"arch": "compute_90", "isa": "8.3"}]
    v = judge_inventory(load_matrix(), {"libraries": [lib("a.so", [], ptx)]}, [("H100", "9.0")], NEW_DRIVER)
    assert (v.failures, v.warnings, v.covered) == ((), (), ("a.so: compute_90 on H100",))


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


@pytest.mark.parametrize("ptx", [["9.0", "12.0"], ["12.0", "9.0"]], ids=["in-order", "another-order"])
def test_the_matrix_rows_ptx_is_compared_as_a_whole(ptx: list[str]) -> None:
    code = lib("a.so", ["sm_80"], [{"arch": "compute_90"}, {"arch": "compute_120"}])
    assert disagreements(["8.0"], ptx, "row", {"libraries": [code]}, "torch") == []
    assert disagreements(["8.0"], ptx[:1], "row", {"libraries": [code]}, "torch") != []


def test_no_gpu_judges_no_kernel_and_needs_no_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    import envbuilder.certify.kernels as kernels
    from envbuilder.errors import MatrixError

    def broken() -> Any:
        raise MatrixError("the matrix did not load")

    monkeypatch.setattr(kernels, "load_matrix", broken)
    doc = node_result([], [lib("libtorch_cuda.so", ["sm_90"])])
    got = judge_kernels(doc, gpus=[], driver=NEW_DRIVER, access="toolkit", stack=None)
    assert (got.failures, got.warnings, got.covered) == ((), (), ())
    said = judge_kernels(doc, gpus=[H100], driver=NEW_DRIVER, access="toolkit", stack=None)
    assert said.warnings == ("kernel inventory not judged: the matrix did not load",)


# =========================================================================== the name a user typed


@pytest.mark.parametrize(
    ("typed", "first"),
    [
        pytest.param(
            "localhost:5000/mine", "localhost:5000/mine:latest", id="a-port-then-the-implied-latest"
        ),
        pytest.param("localhost:5000/mine:2", "localhost:5000/mine:2", id="a-port-and-a-tag"),
        pytest.param("reg.io:443/team/mine", "reg.io:443/team/mine:latest", id="a-port-two-levels-up"),
    ],
)
def test_a_registry_port_is_no_tag_of_the_name_typed(typed: str, first: str) -> None:
    info = ImageInfo(
        id="sha256:" + "a" * 64,
        tags=(
            "other/check:1",
            "localhost:5000/mine:2",
            "localhost:5000/mine:latest",
            "reg.io:443/team/mine:latest",
        ),
        repo_digests=(),
    )
    named = info.named_as(typed)
    assert named.tags[0] == first and sorted(named.tags) == sorted(info.tags)


# =========================================================================== the host probe


def _smi(query: str, apps: str = "", *, code: int = 0, stderr: str = "") -> Any:
    """probe_nvidia_smi answering `query` (exit `code`, `stderr`) and the compute apps `apps`."""
    run = FakeRunner(
        {
            SMI_QUERY_ARGV: CommandResult(returncode=code, stdout=query, stderr=stderr),
            ("nvidia-smi",): ok(
                "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\n"
            ),
            SMI_APPS_ARGV: ok(apps),
        }
    )
    return probe_nvidia_smi(run)


ROW = "NVIDIA X, GPU-u, 9.0, 580.159.04, 10, 20, 30, 40.5, 50.5"
ROW2 = "NVIDIA Y, GPU-v, 8.0, 580.159.04, 11, 21, 31, 41.5, 51.5"


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "said"),
    [
        pytest.param(9, "first\nsecond", "err", "nvidia-smi: exit 9: first", id="stdout-first-line"),
        pytest.param(9, "", "boom\nmore", "nvidia-smi: exit 9: boom", id="stderr-when-no-stdout"),
        pytest.param(9, "  \n", "", "nvidia-smi: exit 9: no output", id="neither"),
    ],
)
def test_what_a_failed_nvidia_smi_said(code: int, stdout: str, stderr: str, said: str) -> None:
    assert _smi(stdout, code=code, stderr=stderr) == said


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("", id="no-row"),
        pytest.param("\n \n", id="blank-rows-only"),
        pytest.param(f"{ROW}\n{ROW2.rsplit(',', 1)[0]}\n", id="the-second-row-short"),
        pytest.param(f"{ROW.rsplit(',', 1)[0]}\n{ROW2}\n", id="the-first-row-short"),
        pytest.param(f"{ROW}\n{ROW2}\n{ROW2}, 1\n", id="the-third-row-long"),
    ],
)
def test_an_nvidia_smi_table_not_of_nine_cells_a_row_is_refused(query: str) -> None:
    said = _smi(query)
    assert isinstance(said, str) and said.startswith("nvidia-smi: unexpected --query-gpu output")


def test_every_cell_of_every_nvidia_smi_row_is_read_from_its_column() -> None:
    got = _smi(f"{ROW}\n\n{ROW2}\n", "GPU-v, 77, python3, 900\nGPU-u, 78, , 5\n")
    assert isinstance(got, HostReport)
    assert (got.driver, got.cuda_driver) == ("580.159.04", "13.0")
    cells = [(g.index, g.name, g.uuid, g.cc, g.memory_used_mib, g.memory_total_mib) for g in got.gpus]
    more = [(g.temperature_c, g.power_draw_w, g.power_limit_w) for g in got.gpus]
    procs = [[(p.pid, p.name, p.used_mib) for p in g.processes or ()] for g in got.gpus]
    fields = [(*c, *m, ps) for c, m, ps in zip(cells, more, procs, strict=True)]
    assert fields == [
        (0, "NVIDIA X", "GPU-u", "9.0", 10, 20, 30, 40.5, 50.5, [(78, None, 5)]),
        (1, "NVIDIA Y", "GPU-v", "8.0", 11, 21, 31, 41.5, 51.5, [(77, "python3", 900)]),
    ]


@pytest.mark.parametrize(
    ("uuid", "cc", "want"),
    [
        pytest.param("", "9.0", (None, "9.0"), id="no-uuid"),
        pytest.param("GPU-u", "[N/A]", ("GPU-u", None), id="cc-not-available"),
        pytest.param("GPU-u", "9", ("GPU-u", None), id="cc-one-number"),
    ],
)
def test_an_nvidia_smi_cell_it_cannot_read_is_none(uuid: str, cc: str, want: tuple[Any, Any]) -> None:
    got = _smi(f"NVIDIA X, {uuid}, {cc}, 580.159.04, 10, 20, 30, 40.5, 50.5\n")
    assert isinstance(got, HostReport) and [(g.uuid, g.cc) for g in got.gpus] == [want]


def test_every_nvml_gpu_is_read_each_its_own(tmp_path: Path) -> None:
    nvml = FakeNvml(
        [FakeGpu(uuid="GPU-1"), FakeGpu(name="NVIDIA H100", uuid="GPU-2", cc=(9, 0), used_mib=7, temp_c=40)]
    )
    got = probe_nvml(nvml, root=tmp_path)
    assert isinstance(got, HostReport)
    assert [(g.index, g.name, g.uuid, g.memory_used_mib, g.temperature_c) for g in got.gpus] == [
        (0, "NVIDIA H200", "GPU-1", 0, 31),
        (1, "NVIDIA H100", "GPU-2", 7, 40),
    ]
    assert got.to_dict()["gpus"][1]["uuid"] == "GPU-2" and len(got.to_dict()["gpus"]) == 2


class _Breaks(FakeNvml):
    def nvmlDeviceGetCount(self) -> int:
        raise FakeNVMLError("GPU is lost")


def test_an_nvml_error_after_init_is_said_not_raised(tmp_path: Path) -> None:
    nvml = _Breaks([FakeGpu()])
    assert probe_nvml(nvml, root=tmp_path) == "NVML: GPU is lost" and nvml.shutdowns == 1


@pytest.mark.parametrize(
    ("comm", "name"), [("python3\n", "python3"), ("\n", None), (None, None)], ids=["named", "blank", "absent"]
)
def test_an_nvml_processs_name_is_its_comm_file(tmp_path: Path, comm: str | None, name: str | None) -> None:
    if comm is not None:
        (tmp_path / "proc/42").mkdir(parents=True)
        (tmp_path / "proc/42/comm").write_text(comm)
    got = probe_nvml(FakeNvml([FakeGpu(compute=[(42, None)])]), root=tmp_path)
    assert isinstance(got, HostReport) and [p.name for p in got.gpus[0].processes or ()] == [name]


def test_the_resolvers_view_keeps_every_gpu_and_an_unread_cc_is_empty() -> None:
    two = (replace(gpu("GPU-1"), cc=None), replace(gpu("GPU-2", 1), cc="9.0"))
    host = report(*two).to_host()
    assert [(g.uuid, g.cc) for g in host.gpus] == [("GPU-1", ""), ("GPU-2", "9.0")]


@pytest.mark.parametrize(
    ("given", "platform", "machine"),
    [
        pytest.param(None, "aarch64", "aarch64", id="this-machines"),
        pytest.param(None, "", None, id="this-machine-says-nothing"),
        pytest.param("x86_64", "aarch64", "x86_64", id="the-one-given"),
    ],
)
def test_the_probes_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str | None, platform: str, machine: str | None
) -> None:
    import platform as platform_module

    monkeypatch.setattr(platform_module, "machine", lambda: platform)
    got = probe_host(nvml=FakeNvml([FakeGpu()]), run=FakeRunner(), root=tmp_path, machine=given)
    assert got.machine == machine


def test_the_proc_driver_is_the_version_alone(tmp_path: Path) -> None:
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Release Build  (dvs-builder@U22)\n"
    )
    got = probe_proc(tmp_path)
    assert isinstance(got, HostReport) and got.driver == "580.159.04"


# =========================================================================== second operator set's survivors


def test_a_node_host_record_is_read_as_text_whatever_its_json_types() -> None:
    doc = {
        "host": {
            "driver_version": 580,
            "cuda_driver_version": 13.0,
            "gpus": [{"name": 5090, "uuid": 7, "compute_capability": 12.0}, {"name": None}],
        }
    }
    host = host_from_result(doc, "toolkit")
    assert (host["driver"], host["cuda_driver"]) == ("580", "13.0")
    assert host["gpus"] == [
        {"name": "5090", "uuid": "7", "cc": "12.0"},
        {"name": None, "uuid": None, "cc": None},
    ]


def test_judge_kernels_holds_ptx_to_the_driver_it_is_given() -> None:
    doc = node_result([], [lib("libx.so", [], [{"arch": "compute_90", "isa": "8.3"}])])
    got = judge_kernels(doc, gpus=[("RTX 5090", "12.0")], driver="535.104.05", access="toolkit", stack=None)
    assert got.failures == (
        "libx.so runs on RTX 5090 (sm_120) only through PTX compute_90 of ISA 8.3 (CUDA 12.3): driver "
        "535.104.05 < 545.23.06 cannot JIT-compile it",
    )


def test_nvmls_bytes_are_text(tmp_path: Path) -> None:
    raw = FakeGpu()
    raw.name, raw.uuid = b"NVIDIA H200", b"GPU-1"  # type: ignore[assignment]  # older nvidia-ml-py: bytes
    got = probe_nvml(FakeNvml([raw], driver=b"580.159.04"), root=tmp_path)
    assert isinstance(got, HostReport) and got.driver == "580.159.04"
    assert [(g.name, g.uuid) for g in got.gpus] == [("NVIDIA H200", "GPU-1")]


@pytest.mark.parametrize("cell", ["[N/A]", "[Not Supported]", "", "-1", "1e3"])
def test_an_nvidia_smi_number_it_cannot_read_is_none(cell: str) -> None:
    got = _smi(f"NVIDIA X, GPU-u, 9.0, 580.159.04, {cell}, {cell}, {cell}, {cell}, {cell}\n")
    assert isinstance(got, HostReport)
    (g,) = got.gpus
    assert (g.memory_used_mib, g.memory_total_mib, g.temperature_c, g.power_draw_w, g.power_limit_w) == (
        (None,) * 5
    )


@pytest.mark.parametrize("text", ["garbage", "580", "580.159.04.1", "v580.159.04"])
def test_a_sys_module_version_that_is_no_driver_version_is_no_driver(tmp_path: Path, text: str) -> None:
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text(text + "\n")
    assert isinstance(probe_proc(tmp_path), str)


def test_every_process_of_each_nvml_list_is_kept(tmp_path: Path) -> None:
    raw = FakeGpu(compute=[(7, None), (8, 2 * MIB)], graphics=[(9, None), (10, None)])
    got = probe_nvml(FakeNvml([raw]), root=tmp_path)
    assert isinstance(got, HostReport)
    assert [(p.pid, p.kind, p.used_mib) for p in got.gpus[0].processes or ()] == [
        (7, "compute", None),
        (8, "compute", 2),
        (9, "graphics", None),
        (10, "graphics", None),
    ]


# =========================================================================== third operator set's survivors


def test_a_failed_node_certificate_stands_even_over_a_passing_result() -> None:
    """The node may have judged more strictly (kernels, package drift): failed claims nothing."""
    assert certificate_refusal(node_certificate("failed", gpu_result()), gpu_facts()) is None


@pytest.mark.parametrize("smoke", ["pass", ["pass"], 1, None], ids=["text", "list", "int", "null"])
def test_a_node_smoke_record_that_is_no_mapping_is_no_record(smoke: Any) -> None:
    cert = node_certificate("certified", gpu_result(), run={"project_smoke": smoke})
    assert certificate_refusal(cert, gpu_facts()) is None
    failed = gpu_facts(project_smoke={"status": "fail", "reason": "boom"})  # this host's own record
    why = certificate_refusal(cert, failed)
    assert why is not None and "the project's smoke command failed" in why


def test_a_proc_version_that_names_no_driver_falls_back_to_sys_module(tmp_path: Path) -> None:
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text("NVRM version: something else entirely\n")
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("580.159.04\n")
    got = probe_proc(tmp_path)
    assert isinstance(got, HostReport) and got.driver == "580.159.04"


def test_without_an_nvml_module_given_the_probe_imports_pynvml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    asked: list[str] = []

    def imported(name: str) -> Any:
        asked.append(name)
        return FakeNvml([FakeGpu(uuid="GPU-1")])

    monkeypatch.setattr(importlib, "import_module", imported)
    got = probe_host(run=FakeRunner(), root=tmp_path, machine="x86_64")
    assert (asked, got.source, [g.uuid for g in got.gpus]) == (["pynvml"], "nvml", ["GPU-1"])


@pytest.mark.parametrize(
    ("apps", "processes"),
    [
        # a row whose pid nvidia-smi cannot show: that GPU's processes are unknown, not none
        pytest.param("GPU-u, [N/A], python3, 900\n", [None, ()], id="pid-unreadable"),
        # a process name with a comma in it: the name is what lies between the pid and the memory
        pytest.param(
            "GPU-v, 77, train, resnet, 900\n", [(), [(77, "train, resnet", 900)]], id="comma-in-name"
        ),
        # a row not in the asked shape: no GPU's list can be trusted
        pytest.param("GPU-v, 77\n", [None, None], id="short-row"),
    ],
)
def test_an_nvidia_smi_compute_app_row_is_never_dropped_silently(apps: str, processes: list[Any]) -> None:
    got = _smi(f"{ROW}\n{ROW2}\n", apps)
    assert isinstance(got, HostReport)
    seen = [
        None if g.processes is None else [(p.pid, p.name, p.used_mib) for p in g.processes] or ()
        for g in got.gpus
    ]
    assert seen == processes
