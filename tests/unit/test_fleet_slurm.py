"""Slurm's node classes, a class's coverage by an image's stack, the certification job's script,
and what a finished job leaves: from output recorded on the real two-class test cluster."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fake_engine import cpu_stack
from fake_slurm import FakeSlurm, cluster, recorded
from test_certify import harness_result

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.harness_plan import HarnessPlan
from envbuilder.certify.scheduler import scheduler_record
from envbuilder.engine import ImageInfo
from envbuilder.errors import SchedulerError, UsageError
from envbuilder.fleet.classes import NodeClass, class_coverage, facts_from_features, select_classes
from envbuilder.fleet.image import FleetImage, pyxis_image, registry_reference
from envbuilder.fleet.jobs import JobOptions, collect_job, load_runs, plan_run, save_run
from envbuilder.fleet.slurm import (
    JobState,
    class_request,
    job_state,
    node_classes,
    parse_fields,
    parse_gres,
    parse_nodes,
    probe_class,
    read_nodes,
    submit,
)
from envbuilder.harness.digest import tree_digest
from envbuilder.hashing import canonical_json
from envbuilder.host import SMI_QUERY
from envbuilder.image.metadata import LABEL_HARNESS, LABEL_STACK
from envbuilder.matrix import load_matrix
from envbuilder.resolve.gpus import find_gpu
from envbuilder.resources import harness_dir

MATRIX = load_matrix()
GPU_STACK = cpu_stack(
    id="torch2.11.0-cu130-py3.12-bundled",
    version="2.11.0",
    variant="cu130",
    cuda="13.0",
    min_driver="580.65.06",
    sass=("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"),
    ptx=("12.0",),
)


def options(nonce: str | None) -> dict[str, str | None]:
    """A result's options as the real harness echoes them: the nonce and the framework."""
    return {"nonce": nonce, "framework": "torch"}


def gpu_classes() -> tuple[NodeClass, ...]:
    """The recorded cluster's GPU classes: a100, h200."""
    return select_classes(node_classes(read_nodes(cluster()), MATRIX), [])


def image(stack: object = GPU_STACK, image_id: str = "sha256:" + "ab" * 32) -> ImageInfo:
    labels = {LABEL_HARNESS: "/opt/envbuilder/harness"}
    if stack is not None:
        labels[LABEL_STACK] = canonical_json(stack.to_dict())  # type: ignore[attr-defined]
    return ImageInfo(id=image_id, tags=("team/train:1",), repo_digests=(), labels=labels)


def test_scontrol_fields_keep_values_with_spaces() -> None:
    f = parse_fields(
        "NodeName=a OS=Linux 6.18.44-fc #1 SMP PREEMPT_DYNAMIC @0  RealMemory=4000 Gres=gpu:h200:2"
    )
    assert f["OS"] == "Linux 6.18.44-fc #1 SMP PREEMPT_DYNAMIC @0"
    assert f["RealMemory"] == "4000" and f["Gres"] == "gpu:h200:2"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("gpu:h200:2", [("gpu", "h200", 2)]),
        ("gpu:h100:8(S:0-1),nic:2", [("gpu", "h100", 8), ("nic", None, 2)]),
        ("gpu:4", [("gpu", None, 4)]),
        ("gpu", [("gpu", None, 1)]),
        ("(null)", []),
        ("", []),
    ],
)
def test_gres(text: str, want: list[tuple[str, str | None, int]]) -> None:
    assert [(g.name, g.type, g.count) for g in parse_gres(text)] == want


def test_the_recorded_cluster_reads_as_two_classes_each_fact_with_its_source() -> None:
    classes = node_classes(read_nodes(cluster()), MATRIX)
    assert [c.name for c in classes] == ["a100", "cpu", "h200"]
    a100, cpu, h200 = classes
    assert (cpu.gpus_per_node, cpu.partitions, class_request(cpu)) == (0, ("cpu",), (None, None))
    assert (h200.nodes, h200.gpus_per_node, h200.gpu_type, h200.gpu_model) == (
        ("h200-0",),
        2,
        "h200",
        "NVIDIA H200",
    )
    assert (h200.cc, h200.driver, h200.partitions) == ("9.0", "580.95.05", ("gpu",))
    assert (a100.cc, a100.driver, a100.gpus_per_node) == ("8.0", "550.54.14", 1)
    assert "driver 580.95.05: node feature nvidia_driver_580.95.05" in h200.facts
    assert "GPU model NVIDIA H200: GRES type 'h200' in the matrix" in h200.facts
    assert class_request(h200) == ("gpu:h200:2", "nvidia_driver_580.95.05&sm_90")


def test_classes_split_by_count_skip_unusable_nodes_and_keep_cpu_nodes() -> None:
    lines = [
        "NodeName=g1 Gres=gpu:a100:8(S:0-1) AvailableFeatures=ib State=IDLE Partitions=gpu",
        "NodeName=g2 Gres=gpu:a100:4 AvailableFeatures=ib State=MIXED Partitions=gpu",
        "NodeName=g3 Gres=gpu:a100:4 AvailableFeatures=ib State=IDLE+DRAIN Partitions=gpu",
        "NodeName=c1 Gres=(null) AvailableFeatures=(null) State=IDLE Partitions=cpu",
        "NodeName=x1 Gres=gpu:mystery:2 AvailableFeatures=sm_86,drv_550 State=ALLOCATED Partitions=gpu",
    ]
    classes = {c.name: c for c in node_classes(parse_nodes("\n".join(lines)), MATRIX)}
    assert sorted(classes) == ["a100x4", "a100x8", "cpu", "mystery"]
    assert classes["a100x4"].nodes == ("g2",)  # g3 drains
    mystery = classes["mystery"]
    assert (mystery.gpu_model, mystery.cc, mystery.driver) == (None, "8.6", "550")
    assert any("'mystery' is no model the matrix knows" in f for f in mystery.facts)
    assert any("a branch: its oldest driver is assumed" in f for f in mystery.facts)
    assert [c.name for c in select_classes(tuple(classes.values()), [])] == ["a100x4", "a100x8", "mystery"]
    with pytest.raises(UsageError, match="no node class 'v100'"):
        select_classes(tuple(classes.values()), ["v100"])


def test_class_names_are_matched_as_written() -> None:
    classes = (
        NodeClass(name="A100-Nodes", scheduler="slurm", nodes=("n1",), gpus_per_node=8),
        NodeClass(name="h100", scheduler="slurm", nodes=("n2",), gpus_per_node=8),
    )
    assert [c.name for c in select_classes(classes, ["A100-Nodes"])] == ["A100-Nodes"]
    assert [c.name for c in select_classes(classes, ["h100", "A100-Nodes", "h100"])] == ["h100", "A100-Nodes"]
    with pytest.raises(UsageError, match="no node class 'a100-nodes'") as err:
        select_classes(classes, ["a100-nodes"])
    assert err.value.hint is not None and err.value.hint.startswith("the classes are: A100-Nodes, h100 (")


def test_features_state_driver_and_compute_capability() -> None:
    assert facts_from_features(("sm_120", "driver_580.95.05"))[:2] == ("580.95.05", "12.0")
    assert facts_from_features(("sm_100", "ib"))[:2] == (None, "10.0")
    assert facts_from_features(("nvme",))[:2] == (None, None)
    # two driver features: the first stated is the class's driver, as for two sm_ features (set
    # S's S39 took the last driver)
    assert facts_from_features(("driver_580.95.05", "driver_550.54.14"))[:2] == ("580.95.05", None)


def test_coverage_is_runs_own_checks_applied_to_the_class() -> None:
    a100, _, h200 = node_classes(read_nodes(cluster()), MATRIX)
    assert class_coverage(h200, image(), MATRIX).status == "covered"
    old = class_coverage(a100, image(), MATRIX)
    assert old.status == "not-covered"
    assert "needs NVIDIA driver >= 580.65.06; this host has 550.54.14 [driver-too-old]" in old.reasons[0]
    sm80_only = cpu_stack(id="x", variant="cu130", cuda="13.0", min_driver="580.65.06", sass=("8.0",), ptx=())
    arch = class_coverage(h200, image(sm80_only), MATRIX)
    assert arch.status == "not-covered" and "[gpu-arch]" in arch.reasons[0]
    blind = NodeClass(name="x", scheduler="slurm", nodes=("n",), gpus_per_node=1, gpu_type="mystery")
    assert class_coverage(blind, image(), MATRIX).status == "unknown"
    assert class_coverage(h200, image(cpu_stack()), MATRIX).reasons == ("a CPU-only stack: no GPU runs",)
    assert class_coverage(h200, image(None), MATRIX).status == "unknown"
    # a check that fails is not-covered even where another fact is unknown: no driver can give
    # an sm_90 GPU the kernels an sm_80-only build lacks (set S's S37 said unknown)
    no_driver = class_coverage(replace(h200, driver=None), image(sm80_only), MATRIX)
    assert no_driver.status == "not-covered" and "[gpu-arch]" in no_driver.reasons[0]
    assert any("driver unknown" in r for r in no_driver.reasons)
    # the image's NVIDIA_REQUIRE_CUDA is run's check too (set T's T38 held the driver against the
    # stack's floor only): a class whose driver's CUDA is older than the image requires is refused
    strict = replace(image(), env=("NVIDIA_REQUIRE_CUDA=cuda>=99.0",))
    required = class_coverage(h200, strict, MATRIX)
    assert required.status == "not-covered" and "[require-cuda]" in required.reasons[0], required.reasons


def test_a_class_whose_gpu_model_the_matrix_knows_has_that_models_brand_for_require_cuda() -> None:
    """Set U's survivor U15: a class read from a GRES type the matrix knows takes the model's
    brand, so an image whose NVIDIA_REQUIRE_CUDA exempts that brand on the class's driver branch
    is covered there (not 'unknown' for a brand nobody stated), and one that exempts another
    brand is refused."""
    _, _, h200 = node_classes(read_nodes(cluster()), MATRIX)
    match = find_gpu(MATRIX, h200.gpu_model or "")
    assert match is not None
    model = match.model
    assert model.brand and h200.brand == model.brand
    exempt = f"NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand={model.brand},driver>=580,driver<581"
    covered = class_coverage(h200, replace(image(), env=(exempt,)), MATRIX)
    assert covered.status == "covered", covered.reasons
    other = "NVIDIA_REQUIRE_CUDA=cuda>=99.0 brand=geforce,driver>=580,driver<581"
    refused = class_coverage(h200, replace(image(), env=(other,)), MATRIX)
    assert refused.status == "not-covered" and "[require-cuda]" in refused.reasons[0], refused.reasons


def test_probe_replaces_guesses_with_what_nvidia_smi_said_on_the_node() -> None:
    h200 = node_classes(read_nodes(cluster()), MATRIX)[2]
    row = "NVIDIA H200, GPU-1, 9.0, 580.159.04, 0, 143771, 30, 70.5, 700.00\n"
    fake = FakeSlurm().on("srun", stdout=row)
    probed = probe_class(h200, fake)
    assert probed.driver == "580.159.04" and probed.nvml_names[0] == "NVIDIA H200"
    first = fake.calls[0]
    assert first[:4] == ["srun", "--nodes=1", "--nodelist=h200-0", "--ntasks=1"]
    assert "--gres=gpu:h200:1" in first
    assert first[-3:] == ["nvidia-smi", f"--query-gpu={SMI_QUERY}", "--format=csv,noheader,nounits"]
    failed = probe_class(h200, FakeSlurm().on("srun", code=127, stderr="nvidia-smi: not found"))
    assert failed.driver == "580.95.05" and "probe on h200-0 failed: nvidia-smi: exit 127" in failed.facts[-1]


@pytest.mark.parametrize("cell", ["[N/A]", ""])
def test_a_probed_driver_that_is_no_version_leaves_the_classs_and_says_which_node(cell: str) -> None:
    """nvidia-smi prints [N/A] (or nothing) for a driver it cannot read: the class keeps the driver
    its features named, and its facts say which node gave what, instead of a later
    'malformed driver version' that names no node."""
    h200 = node_classes(read_nodes(cluster()), MATRIX)[2]
    row = f"NVIDIA H200, GPU-1, 9.0, {cell}, 0, 143771, 30, 70.5, 700.00\n"
    probed = probe_class(h200, FakeSlurm().on("srun", stdout=row))
    assert probed.driver == h200.driver == "580.95.05" and probed.nvml_names[0] == "NVIDIA H200"
    assert (
        f"probe on h200-0: driver {cell!r} is no driver version; the class's 580.95.05 stands" in probed.facts
    )


def test_job_states_from_scontrol_then_sacct() -> None:
    fake = FakeSlurm().on("scontrol", "show", "job", "5", stdout=recorded("scontrol-show-job-failed.txt"))
    failed = job_state("5", fake)
    assert (failed.state, failed.exit_code, failed.done, failed.reason) == (
        "FAILED",
        "3:0",
        True,
        "NonZeroExitCode",
    )
    running = job_state("4", FakeSlurm().on("scontrol", stdout=recorded("scontrol-show-job-running.txt")))
    assert (running.state, running.node, running.done) == ("RUNNING", "h200-0", False)
    gone = (
        FakeSlurm()
        .on("scontrol", code=1, stderr="Invalid job id specified")
        .on("sacct", stdout="9|COMPLETED|0:0|h200-0\n")
    )
    assert job_state("9", gone).to_dict()["source"] == "sacct"
    assert job_state("9", FakeSlurm()).state == "UNKNOWN"


def test_sbatch_refusal_is_a_scheduler_error_naming_slurms_words() -> None:
    refuse = FakeSlurm().on(
        "sbatch",
        code=1,
        stderr="sbatch: error: Batch job submission failed: Requested node configuration is not available",
    )
    with pytest.raises(SchedulerError, match="Requested node configuration is not available"):
        submit("/x/job.sbatch", refuse)
    assert submit("/x", FakeSlurm().on("sbatch", stdout="42\n")) == "42"
    assert submit("/x", FakeSlurm().on("sbatch", stdout="42;cluster\n")) == "42"


def harness_plan() -> HarnessPlan:
    return HarnessPlan(
        thresholds={"defaults": {}},
        host_harness=str(harness_dir()),
        harness_sha256=tree_digest(harness_dir()),
        nonce="0" * 32,
        quick=True,
        cpu=False,
        limit_s=600.0,
    )


def fleet_image() -> FleetImage:
    ref = registry_reference("127.0.0.1:5000/team/train:1")
    return FleetImage(
        ref="127.0.0.1:5000/team/train:1", info=image(), registry=ref, digest="sha256:" + "11" * 32
    )


def test_the_job_script_asks_for_the_class_and_certifies_on_it(tmp_path: Path) -> None:
    classes = gpu_classes()
    opts = JobOptions(gpu_access="none", quick=True, envbuilder=("/venv/bin/python", "-m", "envbuilder"))
    run = plan_run(fleet_image(), classes, harness_plan(), opts, work_dir=tmp_path, run_id="R1-abc123")
    h200 = run.jobs[1]
    script = Path(h200.script).read_text()
    assert script.startswith("#!/bin/bash\n")
    for line in (
        "#SBATCH --gres=gpu:h200:2",
        "#SBATCH '--constraint=nvidia_driver_580.95.05&sm_90'",
        "#SBATCH --exclusive",
        "#SBATCH --partition=gpu",
        "export ENVBUILDER_NODE_CLASS=h200",
        "export ENVBUILDER_SLURM_GRES=gpu:h200:2",
        "export ENVBUILDER_FLEET_RUN=R1-abc123",
    ):
        assert line in script.splitlines(), line
    pull = "127.0.0.1:5000/team/train@sha256:" + "11" * 32
    assert f"docker image inspect {pull} >/dev/null 2>&1 || docker pull {pull}" in script
    assert (
        f"/venv/bin/python -m envbuilder certify {pull} --gpu-access none --nonce {h200.nonce} --no-store "
        f"--out {tmp_path}/R1-abc123/h200/certificate.json --quick"
    ) in script
    assert len({j.nonce for j in run.jobs}) == len(run.jobs) and h200.access == "none"
    assert f"#SBATCH --output={tmp_path}/R1-abc123/h200/slurm-%j.out" in script


def test_apptainer_and_enroot_jobs_run_the_harness_itself(tmp_path: Path) -> None:
    classes = gpu_classes()[1:]
    app = plan_run(
        fleet_image(),
        classes,
        harness_plan(),
        JobOptions(runtime="apptainer", image_file="/s/t.sif"),
        work_dir=tmp_path,
        run_id="R2-aaaaaa",
    )
    folder = f"{tmp_path}/R2-aaaaaa/h200"
    staged = f"{tmp_path}/R2-aaaaaa/harness"  # this host's payload, never the image's copy
    job = app.jobs[0]
    assert job.command == (
        "apptainer",
        "exec",
        "--containall",
        "--nv",
        "--bind",
        f"{folder}:/envbuilder-io",
        "--bind",
        f"{staged}:/opt/envbuilder-host/harness:ro",
        "--env",
        "PYTHONDONTWRITEBYTECODE=1",
        "--env",
        "PYTHONUNBUFFERED=1",
        "/s/t.sif",
        *replace(harness_plan(), nonce=str(job.nonce)).command,
    )
    assert job.nonce != harness_plan().nonce and job.access == "apptainer --nv"
    assert tree_digest(staged) == harness_plan().harness_sha256
    assert app.options["harness_sha256"] == harness_plan().harness_sha256
    assert json.loads(Path(folder, "thresholds.json").read_text()) == {"defaults": {}}
    enr = plan_run(
        fleet_image(),
        classes,
        harness_plan(),
        JobOptions(runtime="enroot", gpu_access="none"),
        work_dir=tmp_path,
        run_id="R3-bbbbbb",
    )
    assert enr.jobs[0].command == (
        "env",
        "NVIDIA_VISIBLE_DEVICES=void",
        "srun",
        "--container-image=127.0.0.1:5000#team/train:1",
        "--no-container-mount-home",
        "--container-workdir=/",
        f"--container-mounts={tmp_path}/R3-bbbbbb/h200:/envbuilder-io,"
        f"{tmp_path}/R3-bbbbbb/harness:/opt/envbuilder-host/harness:ro",
        "--container-env=NVIDIA_VISIBLE_DEVICES",
        *replace(harness_plan(), nonce=str(enr.jobs[0].nonce), cpu=True).command,
    )


def test_pyxis_names_images_its_own_way() -> None:
    assert pyxis_image("127.0.0.1:5000/team/train:1") == "127.0.0.1:5000#team/train:1"
    assert pyxis_image("nvcr.io/nvidia/pytorch:25.01-py3") == "nvcr.io#nvidia/pytorch:25.01-py3"
    assert pyxis_image("python:3.12") == "python:3.12"
    assert pyxis_image("/shared/images/train.sqsh") == "/shared/images/train.sqsh"
    assert registry_reference("envbuilder/train:x") is None
    assert registry_reference("localhost:5000/a:b") is not None


def sealed(
    job_id: str,
    node_class: str,
    image_id: str = "sha256:" + "ab" * 32,
    *,
    nonce: str | None = None,
    result: dict[str, object] | None = None,
    access: str = "none",
) -> Certificate:
    """What a node's `envbuilder certify --out` writes: a sealed certificate over a harness result
    (by default an honest CPU-path one echoing `nonce`)."""
    sched = scheduler_record(
        {"SLURM_JOB_ID": job_id, "SLURMD_NODENAME": "h200-0", "ENVBUILDER_NODE_CLASS": node_class}
    )
    doc = result or {**harness_result("certified-cpu-only"), "options": options(nonce)}
    return build_certificate(
        image={"id": image_id, "ref": "x", "stack": None, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": None, "gpus": [], "gpu_access": access},
        run={"scheduler": sched, "exit_code": 0},
        harness=doc,
        thresholds={},
        verdict=str(doc["verdict"]),
        verdict_reason="CPU path passed",
    )


def test_a_finished_job_gives_its_certificate_only_if_it_is_for_this_image_job_and_class(
    tmp_path: Path,
) -> None:
    classes = gpu_classes()[1:]
    run = plan_run(
        fleet_image(), classes, harness_plan(), JobOptions(), work_dir=tmp_path, run_id="R4-cccccc"
    )
    job = replace(run.jobs[0], job_id="7")
    done = JobState(job_id="7", state="COMPLETED", exit_code="0:0", node="h200-0")
    cert_path = Path(job.job_dir) / "certificate.json"
    assert collect_job(run, job, done).job.state == "NO-RESULT"  # nothing written
    nonce = job.nonce
    cert_path.write_text(sealed("7", "h200", nonce=nonce).to_json())
    got = collect_job(run, job, done)
    assert (
        got.job.state == "COLLECTED"
        and got.certificate is not None
        and got.job.verdict == "certified-cpu-only"
    )
    cert_path.write_text(sealed("8", "h200", nonce=nonce).to_json())
    assert "not job 7 for class h200" in str(collect_job(run, job, done).job.problem)
    cert_path.write_text(sealed("7", "h200", image_id="sha256:" + "cd" * 32, nonce=nonce).to_json())
    assert "certificate is for image cdcdcdcdcdcd" in str(collect_job(run, job, done).job.problem)
    cert_path.write_text(sealed("7", "h200", nonce="another run's").to_json())  # replayed
    assert "does not carry this run's nonce" in str(collect_job(run, job, done).job.problem)
    edited = json.loads(sealed("7", "h200", nonce=nonce).to_json())
    edited["verdict"] = "certified"
    cert_path.write_text(json.dumps(edited))
    assert "changed: verdict" in str(collect_job(run, job, done).job.problem)


def cpu_class() -> tuple[NodeClass, ...]:
    return select_classes(node_classes(read_nodes(cluster()), MATRIX), ["cpu"])


def test_a_forged_result_claiming_gpu_steps_on_a_cpu_class_is_refused(tmp_path: Path) -> None:
    """Judged here as certify judges (host_verdict), whatever the node wrote: a class without GPUs
    is the CPU path even with --gpu-access auto, so a result with GPU steps is not accepted."""
    done = JobState(job_id="9", state="COMPLETED", exit_code="0:0", node="cpu-0")
    run = plan_run(fleet_image(), cpu_class(), harness_plan(), JobOptions(), work_dir=tmp_path, run_id="R6-a")
    job = replace(run.jobs[0], job_id="9")
    assert job.access == "none" and "--gpu-access none" in Path(job.script).read_text()
    forged = {**harness_result("certified"), "options": options(job.nonce)}  # cuda_smoke passed
    Path(job.job_dir, "certificate.json").write_text(
        sealed("9", "cpu", result=forged, access="toolkit").to_json()
    )
    got = collect_job(run, job, done)
    assert got.certificate is None and got.job.state == "NO-RESULT"
    assert "it says certified, but its own result gives failed here" in str(got.job.problem)
    assert "claims the GPU path" in str(got.job.problem)
    # apptainer: the harness's result.json is sealed here; the refusal is the certificate's verdict
    app = plan_run(
        fleet_image(),
        cpu_class(),
        harness_plan(),
        JobOptions(runtime="apptainer"),
        work_dir=tmp_path,
        run_id="R6-b",
    )
    job = replace(app.jobs[0], job_id="9")
    assert "--nv" not in job.command and "--cpu-only" in job.command
    Path(job.job_dir, "result.json").write_text(json.dumps({**forged, "options": options(job.nonce)}))
    cert = collect_job(app, job, done).certificate
    assert cert is not None and cert.verdict == "failed"
    assert cert.verdict_reason.startswith("refused: ") and "claims the GPU path" in cert.verdict_reason
    honest = {**harness_result("certified-cpu-only"), "options": options(job.nonce)}
    Path(job.job_dir, "result.json").write_text(json.dumps(honest))
    cert = collect_job(app, job, done).certificate
    assert cert is not None and cert.verdict == "certified-cpu-only"
    observed = cert.run["host_observation"]
    assert observed["source"] == "none" and observed["samples"] == 0
    assert "slurm job 9 on cpu-0: not observed by the submitting host" in observed["detail"]
    Path(job.job_dir, "result.json").write_text(json.dumps({**honest, "options": options("old")}))
    cert = collect_job(app, job, done).certificate
    assert cert is not None and "does not carry this run's nonce" in cert.verdict_reason


def test_the_run_record_is_written_whole_and_read_back_by_image(tmp_path: Path) -> None:
    classes = gpu_classes()
    run = plan_run(
        fleet_image(), classes, harness_plan(), JobOptions(), work_dir=tmp_path, run_id="R5-dddddd"
    )
    data = tmp_path / "data"
    saved = save_run(replace(run, path=data / "fleet" / "runs" / "R5-dddddd.json"))
    saved = save_run(saved.with_job(replace(saved.jobs[0], job_id="3", state="RUNNING")))
    (data / "fleet" / "runs" / "junk.json").write_text("{not json")
    back = load_runs("sha256:" + "ab" * 32, data=data)
    assert [r.run_id for r in back] == ["R5-dddddd"]
    assert back[0].jobs[0].to_dict() == saved.jobs[0].to_dict() and back[0].jobs[0].state == "RUNNING"
    assert back[0].image_info.labels == fleet_image().info.labels
    assert load_runs("sha256:" + "ef" * 32, data=data) == []


def test_the_scheduler_record_says_where_a_certification_ran() -> None:
    assert scheduler_record({}) is None
    rec = scheduler_record(
        {
            "SLURM_JOB_ID": "12",
            "SLURMD_NODENAME": "n1",
            "SLURM_JOB_PARTITION": "gpu",
            "ENVBUILDER_NODE_CLASS": "h200",
            "ENVBUILDER_SLURM_GRES": "gpu:h200:8",
        }
    )
    assert rec == {
        "kind": "slurm",
        "job_id": "12",
        "node": "n1",
        "partition": "gpu",
        "class": "h200",
        "gres": "gpu:h200:8",
    }
    k8s = scheduler_record(
        {"ENVBUILDER_K8S_POD": "p", "ENVBUILDER_K8S_NODE": "n", "ENVBUILDER_NODE_CLASS": "c"}
    )
    assert k8s == {"kind": "kubernetes", "pod": "p", "node": "n", "class": "c"}
