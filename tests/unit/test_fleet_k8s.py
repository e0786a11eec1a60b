"""Kubernetes, offline: node classes from GFD labels, node affinity from label sets (golden files),
the certification Job in both GPU variants validated against the Kubernetes 1.34 schemas
(kubernetes-validate), kubectl's exact command lines, a Job's log sealed into a certificate, and
the constraints (Slurm, affinity, NFD) a certified image asks for."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from cert_factory import H200, RTX, cert
from fake_slurm import FakeSlurm
from test_certify import _inventory_step, _lib, harness_result
from test_fleet_slurm import GPU_STACK, fleet_image, harness_plan, image

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.store import CertStore
from envbuilder.errors import SchedulerError, UsageError
from envbuilder.fleet.image import FleetImage
from envbuilder.fleet.jobs import JobRecord, load_runs, save_run
from envbuilder.fleet.k8s_api import Kubectl
from envbuilder.fleet.k8s_jobs import certify_manifests, collect_k8s_job, plan_k8s_run, wait_k8s
from envbuilder.fleet.kubernetes import (
    DRV_MAJOR,
    GpuTarget,
    K8sNode,
    driver_at_least,
    gfd_product,
    node_affinity,
    node_classes,
    read_nodes_file,
    validate_manifests,
    yaml_text,
)
from envbuilder.fleet.schedulers.kubernetes import k8s_affinity, nfd_spec, nfd_yaml
from envbuilder.fleet.schedulers.slurm import slurm_constraints
from envbuilder.fleet.status import class_status, key_throughput
from envbuilder.matrix import load_matrix
from envbuilder.resources import harness_dir

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "fleet"
NODES = ROOT / "tests" / "data" / "k8s" / "nodes.json"
MATRIX = load_matrix()


def golden(name: str, text: str, update: bool) -> None:
    path = GOLDEN / name
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"{path} is missing: run pytest --update-golden"
    assert text == path.read_text(), (
        f"{name} differs from its golden file (pytest --update-golden, then review)"
    )


def test_gfd_labels_make_one_class_per_gpu_product_count_and_driver() -> None:
    classes = node_classes(read_nodes_file(NODES), MATRIX)
    assert [(c.name, c.nodes, c.gpus_per_node, c.cc, c.driver) for c in classes] == [
        ("nvidia-a100-sxm4-80gb", ("gpu-a100-a",), 8, "8.0", "550.54.15"),
        ("nvidia-h100-80gb-hbm3", ("gpu-h100-a", "gpu-h100-b"), 8, "9.0", "570.124.06"),
    ]
    a100 = classes[0]
    assert a100.gpu_model == "NVIDIA A100" and a100.nvml_names == ("NVIDIA A100-SXM4-80GB",)
    assert (
        "driver 550.54.15: labels nvidia.com/cuda.driver.major/nvidia.com/cuda.driver.minor/"
        "nvidia.com/cuda.driver.rev" in a100.facts
    )


def test_a_nodes_file_that_is_not_one_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"items": [{"kind": "Node"}]}))
    with pytest.raises(UsageError, match=r"without metadata\.name"):
        read_nodes_file(bad)


@pytest.mark.parametrize(
    ("driver", "want"),
    [
        ("580.65.06", [[("Gt", 580)], [("In", 580), ("Gt", 65)], [("In", 580), ("In", 65), ("Gt", 5)]]),
        ("570.86.10", [[("Gt", 570)], [("In", 570), ("Gt", 86)], [("In", 570), ("In", 86), ("Gt", 9)]]),
        ("580.65.00", [[("Gt", 580)], [("In", 580), ("Gt", 64)]]),
        ("525.60", [[("Gt", 525)], [("In", 525), ("Gt", 59)]]),
        ("580", [[("Gt", 579)]]),
    ],
)
def test_a_driver_floor_is_exact_on_integer_labels(driver: str, want: list[list[tuple[str, int]]]) -> None:
    alts = driver_at_least(driver)
    assert [[(e["operator"], int(e["values"][0])) for e in alt] for alt in alts] == want
    assert alts[0][0]["key"] == DRV_MAJOR


def admits(affinity: dict[str, Any], labels: dict[str, str]) -> bool:
    """Kubernetes' own reading: terms ORed, expressions ANDed; Gt compares integers."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]

    def holds(e: dict[str, Any]) -> bool:
        have = labels.get(e["key"])
        if have is None:
            return False
        if e["operator"] == "In":
            return have in e["values"]
        return int(have) > int(e["values"][0])

    return any(all(holds(e) for e in t["matchExpressions"]) for t in terms)


def gfd_labels(product: str, cc: str, driver: str) -> dict[str, str]:
    a, b, c = driver.split(".")
    major, minor = cc.split(".")
    return {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
        "nvidia.com/cuda.driver.major": a,
        "nvidia.com/cuda.driver.minor": b,
        "nvidia.com/cuda.driver.rev": c,
    }


AFFINITY_CASES = {
    "h200-580.65.06": ([GpuTarget(products=("NVIDIA-H200",), cc="9.0")], "580.65.06"),
    "a100-h100-570.86.10": (
        [
            GpuTarget(products=("NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-SXM4-40GB"), cc="8.0"),
            GpuTarget(products=("NVIDIA-H100-80GB-HBM3",), cc="9.0"),
        ],
        "570.86.10",
    ),
    "rtx4090-branch-550": ([GpuTarget(products=("NVIDIA-GeForce-RTX-4090",), cc="8.9")], "550"),
}


@pytest.mark.parametrize("case", sorted(AFFINITY_CASES))
def test_affinity_golden(case: str, update_golden: bool) -> None:
    targets, floor = AFFINITY_CASES[case]
    aff = node_affinity(targets, floor)
    golden(f"affinity-{case}.yaml", yaml_text({"affinity": aff}), update_golden)


def test_the_affinity_admits_exactly_new_enough_drivers_on_certified_models() -> None:
    aff = node_affinity(*AFFINITY_CASES["h200-580.65.06"])
    assert admits(aff, gfd_labels("NVIDIA-H200", "9.0", "580.65.06"))
    assert admits(aff, gfd_labels("NVIDIA-H200", "9.0", "580.65.10"))
    assert admits(aff, gfd_labels("NVIDIA-H200", "9.0", "580.105.08"))
    assert admits(aff, gfd_labels("NVIDIA-H200", "9.0", "590.10.01"))
    assert not admits(aff, gfd_labels("NVIDIA-H200", "9.0", "580.65.05"))
    assert not admits(aff, gfd_labels("NVIDIA-H200", "9.0", "575.99.99"))
    assert not admits(aff, gfd_labels("NVIDIA-H100-80GB-HBM3", "9.0", "580.95.05"))


def job_pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    job = next(d for d in docs if d["kind"] == "Job")
    return dict(job["spec"]["template"]["spec"])


def test_the_certification_job_for_a_class_validates_and_asks_for_its_gpus() -> None:
    h100 = node_classes(read_nodes_file(NODES), MATRIX)[1]
    docs = certify_manifests(
        fleet_image(), h100, harness_plan(), run_id="R1-abc123", namespace="ml", dra=False, gpu=True
    )
    validate_manifests(docs)
    assert [d["kind"] for d in docs] == ["ConfigMap", "ConfigMap", "Job"]
    pod = job_pod(docs)
    (container,) = pod["containers"]
    assert container["image"] == "127.0.0.1:5000/team/train@sha256:" + "11" * 32
    assert container["command"] == list(harness_plan().command)
    assert (
        "--nonce" in container["command"] and container["command"][1] == "/opt/envbuilder-host/harness/run.py"
    )
    # this host's payload, read-only where the command runs it (never the image's own copy)
    assert {"name": "harness", "mountPath": "/opt/envbuilder-host/harness", "readOnly": True} in container[
        "volumeMounts"
    ]
    volume = next(v for v in pod["volumes"] if v["name"] == "harness")
    assert volume["configMap"]["name"] == docs[1]["metadata"]["name"]
    items = {i["path"]: i["key"] for i in volume["configMap"]["items"]}
    assert items["steps/smoke.py"] == "steps_smoke.py" and "run.py" in items
    assert docs[1]["data"][items["digest.py"]] == (harness_dir() / "digest.py").read_text()
    assert container["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    exprs = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert {e["key"]: e["values"] for e in exprs[0]["matchExpressions"]}["nvidia.com/gpu.product"] == [
        "NVIDIA-H100-80GB-HBM3"
    ]
    assert json.loads(docs[0]["data"]["thresholds.json"]) == {"defaults": {}}
    assert {"name": "ENVBUILDER_NODE_CLASS", "value": "nvidia-h100-80gb-hbm3"} in container["env"]
    assert docs[-1]["metadata"]["name"] == "envbuilder-certify-nvidia-h100-80gb-hbm3-abc123"


def test_the_payload_the_configmap_lays_out_has_this_hosts_digest(tmp_path: Path) -> None:
    """As the kubelet mounts a ConfigMap (its atomic writer: the files in a timestamped folder,
    `..data` pointing at it, each top-level entry a link through `..data`), the harness's own
    digest (digest.py, over the folder its file really lies in) is this host's: the check holds."""
    h100 = node_classes(read_nodes_file(NODES), MATRIX)[1]
    docs = certify_manifests(
        fleet_image(), h100, harness_plan(), run_id="R1-abc123", namespace="ml", dra=False, gpu=True
    )
    data = docs[1]["data"]
    items = next(v for v in job_pod(docs)["volumes"] if v["name"] == "harness")["configMap"]["items"]
    mount = tmp_path / "harness"
    stamped = mount / "..2026_12_01_15_00_00.000000001"
    for item in items:
        (stamped / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (stamped / item["path"]).write_text(data[item["key"]])
    (mount / "..data").symlink_to(stamped.name)
    for top in {i["path"].split("/")[0] for i in items}:
        (mount / top).symlink_to(f"..data/{top}")
    spec = importlib.util.spec_from_file_location("mounted_digest", mount / "digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.tree_digest() == harness_plan().harness_sha256


def test_the_dra_variant_claims_gpus_with_cel_selectors() -> None:
    h100 = node_classes(read_nodes_file(NODES), MATRIX)[1]
    docs = certify_manifests(
        fleet_image(), h100, harness_plan(), run_id="R1-abc123", namespace="ml", dra=True, gpu=True
    )
    validate_manifests(docs)
    claim = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    (request,) = claim["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com" and request["exactly"]["count"] == 8
    cel = [s["cel"]["expression"] for s in request["exactly"]["selectors"]]
    assert cel == [
        "device.attributes['gpu.nvidia.com'].productName in [\"NVIDIA H100 80GB HBM3\"]",
        "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('570.124.6')) >= 0",
    ]
    pod = job_pod(docs)
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": claim["metadata"]["name"]}]
    assert pod["containers"][0]["resources"] == {"claims": [{"name": "gpu"}]}


def test_the_cpu_path_asks_for_no_gpu_and_still_validates() -> None:
    h100 = node_classes(read_nodes_file(NODES), MATRIX)[1]
    docs = certify_manifests(
        fleet_image(), h100, harness_plan(), run_id="R", namespace="d", dra=True, gpu=False
    )
    validate_manifests(docs)
    assert "resources" not in job_pod(docs)["containers"][0] and len(docs) == 3


def test_validation_refuses_what_kubernetes_would() -> None:
    h100 = node_classes(read_nodes_file(NODES), MATRIX)[1]
    docs = certify_manifests(
        fleet_image(), h100, harness_plan(), run_id="R", namespace="d", dra=False, gpu=True
    )
    job = next(d for d in docs if d["kind"] == "Job")
    job["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    with pytest.raises(UsageError, match="'gpus' was unexpected"):
        validate_manifests(docs)
    del job["spec"]["template"]["spec"]["containers"][0]["gpus"]
    term = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    term["nodeSelectorTerms"][0]["matchExpressions"].append(
        {"key": DRV_MAJOR, "operator": "Gt", "values": ["5x"]}
    )
    with pytest.raises(UsageError, match="needs one integer value"):
        validate_manifests(docs)


def test_rendering_a_run_writes_one_file_per_class(tmp_path: Path) -> None:
    classes = node_classes(read_nodes_file(NODES), MATRIX)
    run = plan_k8s_run(
        fleet_image(),
        classes,
        harness_plan(),
        out_dir=tmp_path,
        namespace="ml",
        dra=False,
        gpu=True,
        quick=True,
        run_id="R9-aaaaaa",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "nvidia-a100-sxm4-80gb.yaml",
        "nvidia-h100-80gb-hbm3.yaml",
    ]
    docs = [d for d in yaml.safe_load_all((tmp_path / "nvidia-a100-sxm4-80gb.yaml").read_text()) if d]
    validate_manifests(docs)
    assert [j.job_id for j in run.jobs] == [
        "envbuilder-certify-nvidia-a100-sxm4-80gb-aaaaaa",
        "envbuilder-certify-nvidia-h100-80gb-hbm3-aaaaaa",
    ]


def test_kubectl_is_called_as_a_user_would() -> None:
    fake = FakeSlurm().on("kubectl", "get", stdout='{"items": []}').on("kubectl", "logs", stdout="log\n")
    fake.on("kubectl", "create", stdout="configmap/a\njob.batch/b\n")
    kc = Kubectl("kubectl", run=fake)
    assert kc.get_json(["nodes"]) == {"items": []}
    assert kc.get_json(["job", "j1"], "ml") == {"items": []}
    assert kc.job_logs("j1", "ml") == "log\n"
    assert kc.apply([{"kind": "Job", "metadata": {"name": "b"}}], "ml") == ["configmap/a", "job.batch/b"]
    assert fake.calls[:3] == [
        ["kubectl", "get", "nodes", "-o", "json"],
        ["kubectl", "get", "job", "j1", "--namespace", "ml", "-o", "json"],
        ["kubectl", "logs", "--namespace", "ml", "job/j1", "--tail=-1"],
    ]
    # create, not apply: the harness ConfigMap is over what apply's last-applied annotation holds
    assert fake.calls[3][:4] == ["kubectl", "create", "--namespace", "ml"] and fake.calls[3][-2:] == [
        "-o",
        "name",
    ]
    with pytest.raises(SchedulerError, match="Unauthorized"):
        Kubectl("kubectl", run=FakeSlurm().on("kubectl", code=1, stderr="error: Unauthorized")).get_json(
            ["nodes"]
        )


class FakeCluster:
    def __init__(self, log: str, node: str = "gpu-h100-a", code: int = 0) -> None:
        self.log, self.node, self.code = log, node, code

    def apply(self, docs: Any, namespace: str) -> list[str]:
        return []

    def get_json(self, what: Any, namespace: str | None = None) -> Any:
        term = {"terminated": {"exitCode": self.code}}
        return {
            "items": [{"spec": {"nodeName": self.node}, "status": {"containerStatuses": [{"state": term}]}}]
        }

    def job_logs(self, job: str, namespace: str) -> str:
        return self.log


def pod_result(nonce: str | None, verdict: str = "certified") -> dict[str, Any]:
    """What the harness prints last in the pod: a real-shaped result, its own host record."""
    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-9", "compute_capability": "9.0"}
    doc = harness_result(verdict)
    doc["steps"].append(
        {"kind": "step", "name": "tuned_rn50_eager", "status": "pass", "reason": "", "seconds": 60.0,
         "metrics": {"images_per_s": 3120.5}}
    )  # fmt: skip
    doc |= {
        "options": {"nonce": nonce, "framework": "torch"},
        "host": {"driver_version": "570.124.06", "cuda_driver_version": "12.8", "gpus": [gpu]},
    }
    return doc


def test_a_jobs_log_is_sealed_into_a_certificate_for_its_class(tmp_path: Path) -> None:
    classes = node_classes(read_nodes_file(NODES), MATRIX)[1:]
    found = FleetImage(
        ref=fleet_image().ref,
        info=image(GPU_STACK),
        registry=fleet_image().registry,
        digest=fleet_image().digest,
    )
    run = plan_k8s_run(
        found,
        classes,
        harness_plan(),
        out_dir=tmp_path,
        namespace="ml",
        dra=False,
        gpu=True,
        quick=False,
        run_id="R7-bbbbbb",
    )
    job = run.jobs[0]
    log = "[harness] ok host\nnot json\n" + json.dumps(pod_result(job.nonce)) + "\n"
    got = collect_k8s_job(run, job, FakeCluster(log), "SUCCEEDED")
    assert got.certificate is not None and got.job.state == "COLLECTED"
    c = got.certificate
    assert c.verdict == "certified" and c.host.driver == "570.124.06"
    assert [g.name for g in c.host.gpus] == [
        "NVIDIA H100 80GB HBM3"
    ] and c.host.gpu_access == "kubernetes nvidia.com/gpu"
    assert (
        c.run["scheduler"]["class"] == "nvidia-h100-80gb-hbm3" and c.run["scheduler"]["node"] == "gpu-h100-a"
    )
    assert c.run["host_observation"]["source"] == "none"  # the pod's GPUs are out of this host's reach
    assert c.run["harness_sha256"] == harness_plan().harness_sha256
    cpu_only = collect_k8s_job(
        run, job, FakeCluster(json.dumps(pod_result(job.nonce, "certified-cpu-only"))), "SUCCEEDED"
    )
    assert cpu_only.job.verdict == "failed"  # a GPU stack given a GPU that ran on the CPU only
    assert "only ran on the CPU" in cpu_only.certificate.verdict_reason  # type: ignore[union-attr]
    # the bare claim issue 15's first version accepted: refused, as certify refuses it
    bare = {"kind": "result", "verdict": "certified", "verdict_reason": "13 checks passed"}
    refused = collect_k8s_job(run, job, FakeCluster(json.dumps(bare)), "SUCCEEDED").certificate
    assert refused is not None and refused.verdict == "failed"
    assert refused.verdict_reason.startswith("refused: the harness result is malformed")
    replayed = collect_k8s_job(run, job, FakeCluster(json.dumps(pod_result("other"))), "SUCCEEDED")
    assert "does not carry this run's nonce" in replayed.certificate.verdict_reason  # type: ignore[union-attr]
    assert (
        collect_k8s_job(run, run.jobs[0], FakeCluster("Error: ImagePullBackOff"), "FAILED").job.state
        == "NO-RESULT"
    )


def gpu_cert(gpus: tuple[Any, ...], job: str, cls: str, issued: str) -> Certificate:
    base = cert("certified", gpus, issued_at=issued)
    body = {k: v for k, v in base.data.items() if k not in ("content_hash", "section_hashes")}
    run = {
        "scheduler": {
            "kind": "slurm",
            "job_id": job,
            "class": cls,
            "partition": "gpu",
            "gres": f"gpu:{cls}:8",
            "constraint": f"sm_{gpus[0].cc.replace('.', '')}",
        }
    }
    return build_certificate(
        **{k: body[k] for k in ("image", "host", "harness", "thresholds")},
        run=run,
        verdict="certified",
        verdict_reason="ok",
        issued_at=issued,
    )


def test_constraints_from_certified_classes(update_golden: bool) -> None:
    certs = [
        gpu_cert((H200,), "11", "h200", "2026-12-01T10:00:00Z"),
        gpu_cert((RTX,), "12", "rtx3090", "2026-12-01T10:01:00Z"),
    ]
    rows = class_status(certs)
    slurm = [s.to_dict()["sbatch"] for s in slurm_constraints(rows)]
    assert slurm == [
        "--partition=gpu --gres=gpu:h200:8 --constraint=sm_90",
        "--partition=gpu --gres=gpu:rtx3090:8 --constraint=sm_86",
    ]
    aff = k8s_affinity(certs)
    assert aff is not None and admits(aff, gfd_labels("NVIDIA-H200", "9.0", "580.95.05"))
    assert admits(aff, gfd_labels("NVIDIA-GeForce-RTX-3090", "8.6", "580.65.06"))
    assert not admits(aff, gfd_labels("NVIDIA-GeForce-RTX-3090", "8.6", "570.86.10"))
    spec = nfd_spec(certs, description="envbuilder: team/train:1 certified")
    assert spec is not None and spec["version"] == "v1alpha1" and len(spec["compatibilities"]) == 2
    golden("nfd-h200-rtx3090.yaml", nfd_yaml(spec), update_golden)
    assert k8s_affinity([cert("certified-cpu-only", ())]) is None
    assert gfd_product("NVIDIA  GeForce RTX 3090") == "NVIDIA-GeForce-RTX-3090"


def test_nodes_without_gfd_labels_are_no_class() -> None:
    assert node_classes([K8sNode(name="cpu", labels={"kubernetes.io/os": "linux"})], MATRIX) == ()


def test_job_records_keep_kubernetes_jobs_too() -> None:
    job = JobRecord(
        node_class="x", job_dir="/d", script="/d/x.yaml", request={}, job_id="envbuilder-certify-x-1"
    )
    assert JobRecord.from_dict(job.to_dict()) == job


class PhasedCluster(FakeCluster):
    """A Job that is pending, then active, then complete (one phase per look)."""

    def __init__(self, log: str) -> None:
        super().__init__(log)
        self.phases = [{}, {"active": 1}, {"conditions": [{"type": "Complete", "status": "True"}]}]

    def get_json(self, what: Any, namespace: str | None = None) -> Any:
        if what[0] == "job":
            return {"status": self.phases.pop(0) if len(self.phases) > 1 else self.phases[0]}
        return super().get_json(what, namespace)


def test_following_the_jobs_collects_each_as_it_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    classes = node_classes(read_nodes_file(NODES), MATRIX)[1:]
    run = plan_k8s_run(
        fleet_image(),
        classes,
        harness_plan(),
        out_dir=tmp_path / "k8s",
        namespace="ml",
        dra=False,
        gpu=True,
        quick=True,
        run_id="R8-cccccc",
    )
    run = save_run(replace(run, jobs=tuple(replace(j, state="SUBMITTED") for j in run.jobs)))
    log = json.dumps(pod_result(run.jobs[0].nonce))
    said: list[str] = []
    sleeps: list[float] = []
    done, certs = wait_k8s(
        run,
        PhasedCluster(log),
        store=CertStore(tmp_path / "certs.sqlite"),
        say=said.append,
        sleep=sleeps.append,
    )
    assert [j.state for j in done.jobs] == ["COLLECTED"] and [c.verdict for c in certs] == ["certified"]
    job = f"fleet: {classes[0].name}: Job {run.jobs[0].job_id}"
    assert said == [f"{job} PENDING", f"{job} ACTIVE", f"{job} SUCCEEDED: certified"]
    assert sleeps == [5.0, 5.0]  # between the looks, none after the last job ended
    assert load_runs(data=tmp_path / "data")[0].jobs[0].state == "COLLECTED"


def test_a_pods_kernel_inventory_is_judged_against_the_gpus_its_host_record_names(tmp_path: Path) -> None:
    """As certify judges kernels: the framework's library with no kernel for the node's H100
    (sm_90, from the pod's own NVML record) fails the certificate, naming it."""
    classes = node_classes(read_nodes_file(NODES), MATRIX)[1:]
    run = plan_k8s_run(
        fleet_image(),
        classes,
        harness_plan(),
        out_dir=tmp_path,
        namespace="ml",
        dra=False,
        gpu=True,
        quick=False,
        run_id="R9-dddddd",
    )
    job = run.jobs[0]
    doc = pod_result(job.nonce)
    libs = [_lib("torch/lib/libtorch_cuda.so", ["sm_80"], [])]
    doc["steps"].append(_inventory_step(libs))
    cert = collect_k8s_job(run, job, FakeCluster(json.dumps(doc)), "SUCCEEDED").certificate
    assert cert is not None and cert.verdict == "failed"
    assert cert.verdict_reason.startswith(
        "kernel inventory: torch/lib/libtorch_cuda.so has no kernel for NVIDIA H100 80GB HBM3 (sm_90)"
    )
    libs = [_lib("torch/lib/libtorch_cuda.so", ["sm_80", "sm_90"], [])]
    doc["steps"][-1] = _inventory_step(libs)
    cert = collect_k8s_job(run, job, FakeCluster(json.dumps(doc)), "SUCCEEDED").certificate
    assert cert is not None and cert.verdict == "certified"


def test_without_the_k8s_extra_validation_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """kubernetes-validate is the `k8s` extra's (108 MB): without it a Kubernetes command stops
    with one line naming the extra, never an ImportError traceback."""
    import sys

    monkeypatch.setitem(sys.modules, "kubernetes_validate", None)  # import raises ImportError
    with pytest.raises(SchedulerError) as err:
        validate_manifests([{"kind": "Job", "metadata": {"name": "x"}}])
    assert "kubernetes-validate" in err.value.message
    assert err.value.hint is not None and "gpu-envbuilder[k8s]" in err.value.hint


def test_a_failed_steps_throughput_is_never_the_classs_key_throughput() -> None:
    # A step that failed (a wrong loss, a crash after the timed window) may still have measured a
    # rate: it is no throughput the class is certified for.
    base = cert("certified", (H200,), issued_at="2026-01-01T00:00:00Z")
    body = {k: v for k, v in base.data.items() if k not in ("content_hash", "section_hashes")}
    steps = [
        {"name": "train_fp32", "status": "pass", "metrics": {"images_per_s": 1200.0}},
        {
            "name": "train_amp",
            "status": "fail",
            "reason": "loss diverged",
            "metrics": {"images_per_s": 3900.0},
        },
    ]
    c = build_certificate(
        **{k: body[k] for k in ("image", "host", "run", "thresholds")},
        harness={"steps": steps, "verdict": "certified"},
        verdict="certified",
        verdict_reason="ok",
        issued_at="2026-01-01T00:00:00Z",
    )
    assert key_throughput(c) == "1,200 img/s (train_fp32)"
    failed_only = build_certificate(
        **{k: body[k] for k in ("image", "host", "run", "thresholds")},
        harness={"steps": steps[1:], "verdict": "failed"},
        verdict="failed",
        verdict_reason="failed steps: train_amp",
        issued_at="2026-01-01T00:00:00Z",
    )
    assert key_throughput(failed_only) == "-"
