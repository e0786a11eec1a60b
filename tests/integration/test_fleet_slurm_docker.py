"""A fleet certification through a real Slurm (Debian's slurmctld, two slurmd on one host with fake GPU
GRES: scripts/slurm.sh): `fleet plan --scheduler slurm` reads the two node classes from scontrol
(and, with --probe, from srun on each node); `fleet certify REF --slurm` (the hidden alias, kept)
submits one sbatch job per class, each runs `envbuilder certify` on the CPU path in a real
container, the certificates come back, are signed and attached to the image in the local registry;
"machine B" (another data dir that trusts the key) reads them back with `fleet status` and `fleet
constraints`. `fleet build` bakes two images (two specs for the cluster's CPU class) with a real
`docker buildx bake` (Debian trixie's buildx, scripts/buildx.sh, run as a standalone binary:
ENVBUILDER_BUILDX).

Why this module takes minutes: one build (cached layers), one push, and two quick CPU-path
certifications (`envbuilder certify --quick` in a container) running at once on two cores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import BUILDX, envbuilder_cli, unavailable
from packaging.utils import canonicalize_name

from envbuilder.engine import DockerEngine
from envbuilder.image.lock import read_lock

pytestmark = pytest.mark.docker


def cli(data: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return envbuilder_cli(*args, env={"ENVBUILDER_DATA_DIR": str(data), **(env or {})})


@pytest.fixture(scope="module")
def slurm() -> None:
    """The test cluster of scripts/slurm.sh, with both node classes up."""
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20, check=False)
        nodes = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        unavailable(f"no Slurm client here ({exc})")
    if "is UP" not in ping.stdout:
        unavailable(f"slurmctld is not up: {ping.stdout.strip() or ping.stderr.strip()}")
    states = dict(line.split() for line in nodes.stdout.splitlines() if line.strip())
    if not {"h200-0", "a100-0"} <= set(states) or any("down" in states[n] for n in ("h200-0", "a100-0")):
        unavailable(f"the test nodes h200-0 and a100-0 are not both up: {states}")


@dataclass(frozen=True)
class Fleet:
    ref: str
    data: Path
    run: dict[str, object]  # `fleet certify --json`
    stderr: str
    public_key: Path


@pytest.fixture(scope="module")
def certified_fleet(
    slurm: None,
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    registry: str,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Fleet:
    work = tmp_path_factory.mktemp("fleet")
    work.chmod(0o755)
    data = work / "data"
    spec = work / "images" / "fleet-it.yaml"
    spec.parent.mkdir()
    spec.write_text(
        "schema_version: 1\nname: fleet-it\n"
        f"description: envbuilder fleet test image {run_id}\n"
        'framework: "torch==2.13.0"\npython: "3.11"\nstrategy: bundled\n'
    )
    ref = f"{registry}/envbuilder-it/fleet:{run_id}"
    built = cli(
        data,
        "build",
        str(spec),
        "--cpu",
        "--base-image",
        base_image,
        "--wheelhouse",
        str(wheelhouse),
        "--tag",
        ref,
        "--lock-out",
        str(work / "lock.json"),
    )
    assert built.returncode == 0, built.stderr[-3000:]
    cleanup_refs.append(ref)
    assert cli(data, "push", ref).returncode == 0
    assert cli(data, "keys", "generate", "--name", "fleet-ci").returncode == 0
    # --quick: the smoke steps only. Two full CPU paths at once on a loaded 2-core machine squeeze the
    # training step out of its 100 s budget (the harness then fails it: loss did not fall).
    args = [
        "--slurm",
        "--gpu-access",
        "none",
        "--quick",
        "--time",
        "20",
        "--json",
        "--work-dir",
        str(work / "jobs"),
    ]
    res = cli(data, "fleet", "certify", ref, *args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return Fleet(
        ref=ref,
        data=data,
        run=json.loads(res.stdout),
        stderr=res.stderr,
        public_key=data / "keys" / "fleet-ci.pub",
    )


def test_plan_reads_both_classes_from_slurm(slurm: None, tmp_path: Path) -> None:
    res = cli(tmp_path, "fleet", "plan", "--scheduler", "slurm", "--json")
    assert res.returncode == 0, res.stderr
    assert res.stdout == cli(tmp_path, "fleet", "plan", "--slurm", "--json").stdout  # the old spelling
    classes = {c["name"]: c for c in json.loads(res.stdout)["classes"]}
    assert sorted(classes) == ["a100", "cpu", "h200"]
    assert (classes["h200"]["gpus_per_node"], classes["h200"]["gpu_model"], classes["h200"]["driver"]) == (
        2,
        "NVIDIA H200",
        "580.95.05",
    )
    assert (classes["a100"]["cc"], classes["a100"]["driver"]) == ("8.0", "550.54.14")


def test_probe_asks_each_node_through_srun(slurm: None, tmp_path: Path) -> None:
    """srun runs nvidia-smi on one node of each class (a stand-in on PATH: these nodes have no GPU;
    srun hands the job our environment, as it does by default)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--query-gpu*) ;; *) echo "CUDA Version: 13.0"; exit 0;; esac\n'
        'if [ "$SLURMD_NODENAME" = h200-0 ]; then\n'
        '  echo "NVIDIA H200, GPU-1, 9.0, 580.159.04, 0, 143771, 30, 70, 700"\n'
        'else echo "NVIDIA A100-SXM4-80GB, GPU-2, 8.0, 570.86.10, 0, 81920, 30, 60, 400"; fi\n'
    )
    fake.chmod(0o755)
    tmp_path.chmod(0o755)
    res = cli(
        tmp_path,
        "fleet",
        "plan",
        "--scheduler",
        "slurm",
        "--probe",
        "--json",
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert res.returncode == 0, res.stderr
    classes = {c["name"]: c for c in json.loads(res.stdout)["classes"]}
    assert classes["h200"]["driver"] == "580.159.04" and classes["a100"]["driver"] == "570.86.10"
    assert any(
        "probe on a100-0 (srun nvidia-smi): NVIDIA A100-SXM4-80GB" in f for f in classes["a100"]["facts"]
    )


def test_certify_runs_one_real_sbatch_job_per_class_and_signs_what_comes_back(certified_fleet: Fleet) -> None:
    jobs = {j["class"]: j for j in certified_fleet.run["jobs"]}  # type: ignore[attr-defined]
    assert sorted(jobs) == ["a100", "h200"]
    for name, node in (("a100", "a100-0"), ("h200", "h200-0")):
        job = jobs[name]
        assert job["state"] == "COLLECTED" and job["node"] == node and job["verdict"] == "certified-cpu-only"
        assert job["throughput"] is None or job["throughput"] == "-"  # --quick trains nothing
        script = Path(job["script"]).read_text()
        assert (
            f"#SBATCH --gres=gpu:{name}:{2 if name == 'h200' else 1}" in script
            and "#SBATCH --exclusive" in script
        )
    attached = certified_fleet.run["attestation"]["attached"]  # type: ignore[index]
    assert len(attached) == 4 and all(a["new"] for a in attached)  # two statements per certificate
    # Progress names each job and where it ran. RUNNING is said only when a poll (every 3 s) finds
    # the job running: a --quick job can start and end between two polls (PENDING, then COMPLETED
    # on the node), so either line counts.
    said = certified_fleet.stderr
    assert "submitted job" in said
    assert re.search(r"fleet: h200: job \d+ (RUNNING|COMPLETED) on h200-0", said), said


def test_another_machine_reads_the_fleet_back(certified_fleet: Fleet, tmp_path: Path) -> None:
    machine_b = tmp_path / "b"
    assert (
        cli(machine_b, "keys", "import", str(certified_fleet.public_key), "--name", "fleet-ci").returncode
        == 0
    )
    status = cli(machine_b, "fleet", "status", certified_fleet.ref, "--json")
    assert status.returncode == 0, status.stderr
    rows = {r["class"]: r for r in json.loads(status.stdout)["classes"]}
    assert sorted(rows) == ["a100", "h200"]
    assert all(
        r["source"] == "signed by fleet-ci" and r["verdict"] == "certified-cpu-only" for r in rows.values()
    )
    assert rows["h200"]["scheduler"]["node"] == "h200-0" and rows["h200"]["scheduler"]["kind"] == "slurm"
    table = cli(machine_b, "fleet", "status", certified_fleet.ref)
    assert "h200   certified-cpu-only" in table.stdout and "signed by fleet-ci" in table.stdout
    constraints = cli(machine_b, "fleet", "constraints", certified_fleet.ref, "--format", "slurm")
    assert constraints.returncode == 0, constraints.stderr
    assert "h200: sbatch --partition=gpu --gres=gpu:h200:2 '--constraint=nvidia_driver_580.95.05&sm_90'" in (
        constraints.stdout
    )
    stranger = cli(tmp_path / "c", "fleet", "status", certified_fleet.ref)
    assert (
        stranger.returncode == 12 and "nothing certifies" in stranger.stderr
    )  # its key is not trusted there


def test_bad_requests_fail_before_anything_is_submitted(certified_fleet: Fleet) -> None:
    res = cli(certified_fleet.data, "fleet", "certify", certified_fleet.ref, "--slurm", "--classes", "v100")
    assert res.returncode == 2 and "no node class 'v100' in this cluster" in res.stderr
    assert "hint: the classes are: a100, cpu, h200" in res.stderr and "Traceback" not in res.stderr
    res = cli(certified_fleet.data, "fleet", "certify", certified_fleet.ref)
    assert res.returncode == 2 and "say which scheduler: --scheduler slurm|k8s" in res.stderr


FORGE = """\
import json, os, sys
from envbuilder.certify.certificate import build_certificate
from envbuilder.certify.scheduler import scheduler_section
from envbuilder.harness import HARNESS_VERSION
from envbuilder.harness.digest import tree_digest
from envbuilder.resources import harness_dir

argv = sys.argv[1:]
step = {"kind": "step", "status": "pass", "reason": "", "seconds": 1.0, "metrics": {}}
result = {  # the payload's own digest and the job's nonce: only the GPU claim is false
    "kind": "result", "schema_version": 1, "harness_version": HARNESS_VERSION,
    "harness_sha256": tree_digest(harness_dir()), "mode": "full", "gpu_path": True,
    "started": "2026-12-01T00:00:00Z", "finished": "2026-12-01T00:01:00Z",
    "options": {"nonce": argv[argv.index("--nonce") + 1], "framework": "torch"},
    "steps": [{**step, "name": "host"}, {**step, "name": "cuda_smoke"}],
    "thresholds": {}, "gates": [], "verdict": "certified", "verdict_reason": "forged",
    "telemetry": {}, "host": {},
}
cert = build_certificate(
    image={"id": os.environ["FORGE_IMAGE_ID"], "ref": argv[1], "stack": None, "lock_hash": None},
    host={"fingerprint": "sha256:00", "driver": "580.95.05", "gpus": [], "gpu_access": "toolkit"},
    run={"exit_code": 0, **scheduler_section()},
    harness=result, thresholds={}, verdict="certified", verdict_reason="forged",
)
open(argv[argv.index("--out") + 1], "w").write(cert.to_json())
"""


def test_a_forged_gpu_certificate_from_a_cpu_class_job_is_refused(
    certified_fleet: Fleet, engine: DockerEngine, tmp_path: Path
) -> None:
    """A real sbatch job on the CPU class whose "envbuilder" writes a sealed certificate claiming
    GPU steps (nonce and payload digest right): the submitting host re-derives the verdict with
    certify's rule and refuses it; nothing is kept or attached."""
    info = engine.inspect_image(certified_fleet.ref)
    assert info is not None
    forge = tmp_path / "forge.py"
    forge.write_text(FORGE)
    tmp_path.chmod(0o755)
    jobs = tmp_path / "jobs"
    res = cli(
        certified_fleet.data,
        "fleet", "certify", certified_fleet.ref, "--slurm", "--classes", "cpu", "--time", "5",
        "--no-attest", "--json", "--work-dir", str(jobs),
        "--envbuilder", f"env FORGE_IMAGE_ID={info.id} {sys.executable} {forge}",
    )  # fmt: skip
    assert res.returncode == 11, res.stdout[-2000:] + res.stderr[-2000:]
    (job,) = json.loads(res.stdout)["jobs"]
    assert job["class"] == "cpu" and job["node"] == "cpu-0" and job["state"] == "NO-RESULT"
    assert "--gpu-access none" in Path(job["script"]).read_text()
    assert "it says certified, but its own result gives failed here" in job["problem"]
    assert "claims the GPU path" in job["problem"] and job["certificate"] is None


HOLD_LOCK = """\
import sys, time
from pathlib import Path
from envbuilder.image.commit import output_lock
with output_lock([Path(sys.argv[1])], [], print):
    print("held", flush=True)
    time.sleep(4)
"""


@pytest.fixture(scope="module")
def buildx() -> Path:
    if not BUILDX.is_file():
        unavailable(f"no docker-buildx at {BUILDX} (scripts/buildx.sh unpacks it)")
    return BUILDX


def bake_spec(folder: Path, name: str, run_id: str, extra: str = "") -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(
        f"schema_version: 1\nname: {name}\ndescription: envbuilder fleet bake test {run_id}\n"
        'framework: "torch==2.13.0"\npython: "3.11"\nstrategy: bundled\n'
        f'env:\n  FLEET_SPEC: "{name}"\n{extra}'
    )
    return path


def test_fleet_build_bakes_two_targets_each_with_its_tag_and_lock(
    slurm: None,
    buildx: Path,
    base_image: str,
    wheelhouse: Path,
    engine: DockerEngine,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
) -> None:
    specs = [bake_spec(tmp_path, f"bake-{x}-{run_id}", run_id) for x in ("a", "b")]
    out = tmp_path / "out"
    out.mkdir()
    data = tmp_path / "data"
    # Another writer holds the first target's lock file (as a second `build` of it would): the bake
    # waits for it, as `envbuilder build` waits (one writer per output, image/commit.py).
    first_lock = out.resolve() / f"bake-a-{run_id}-cpu.lock.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(first_lock)],
        env={**os.environ, "ENVBUILDER_DATA_DIR": str(data)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    args = [
        "--slurm",
        "--classes",
        "cpu",
        "--base-image",
        base_image,
        "--wheelhouse",
        str(wheelhouse),
        "--out",
        str(out),
        "--json",
    ]
    try:
        res = cli(data, "fleet", "build", *map(str, specs), *args, env={"ENVBUILDER_BUILDX": str(buildx)})
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"which is writing {first_lock}" in res.stderr and "waiting for envbuilder" in res.stderr
    targets = json.loads(res.stdout)["targets"]
    cleanup_refs.extend(t for target in targets for t in target["tags"])
    assert [t["target"] for t in targets] == [f"bake-a-{run_id}-cpu", f"bake-b-{run_id}-cpu"]
    assert len({t["image_id"] for t in targets}) == 2
    hcl = (out / "contexts" / "docker-bake.hcl").read_text()
    assert 'group "default" {' in hcl and hcl.count('output = ["type=docker"]') == 2
    for t in targets:
        lock = read_lock(Path(t["lock"]))
        assert lock.build is not None and lock.build.image_id == t["image_id"]
        assert sorted(lock.build.tags) == sorted(t["tags"])
        locked = lock.package_lock(lock.build.platform)  # every package pinned to one hashed wheel
        assert locked is not None and locked.packages
        assert all(len(p.sha256) == 64 for p in locked.packages if p.group != "base")
        installed = {canonicalize_name(d.name): d.version for d in lock.build.installed}
        assert all(installed.get(canonicalize_name(p.name)) == p.version for p in locked.packages)
        assert f"envbuilder/bake-{t['target'].split('-')[1]}-{run_id}:cpu" in t["tags"]
        info = engine.inspect_image(t["tags"][0])
        assert info is not None and info.id == t["image_id"]
        assert info.labels["io.envbuilder.lock-hash"] == lock.hash
        assert "FLEET_SPEC=" + t["target"].removesuffix("-cpu") in info.env
    assert "bake -f" in res.stderr and "2 targets" in res.stderr


def test_a_failed_bake_tags_nothing_and_writes_no_lock(
    slurm: None,
    buildx: Path,
    base_image: str,
    wheelhouse: Path,
    engine: DockerEngine,
    run_id: str,
    tmp_path: Path,
) -> None:
    good = bake_spec(tmp_path, f"bake-ok-{run_id}", run_id)
    # A Debian package no mirror has: it fails inside BuildKit (a Python requirement no index has
    # would fail the lock, before bake runs).
    bad = bake_spec(tmp_path, f"bake-bad-{run_id}", run_id, "apt:\n  - envbuilder-no-such-package\n")
    out = tmp_path / "out"
    res = cli(
        tmp_path / "data",
        "fleet",
        "build",
        str(good),
        str(bad),
        "--slurm",
        "--classes",
        "cpu",
        "--base-image",
        base_image,
        "--wheelhouse",
        str(wheelhouse),
        "--out",
        str(out),
        env={"ENVBUILDER_BUILDX": str(buildx)},
    )
    assert res.returncode == 9, res.stderr[-3000:]
    assert "envbuilder: error: docker build failed" in res.stderr and "nothing was tagged" in res.stderr
    assert "envbuilder-no-such-package" in res.stderr and "Traceback" not in res.stderr
    assert not list(out.glob("*.lock.json"))
    for name in (f"bake-ok-{run_id}", f"bake-bad-{run_id}"):
        assert engine.inspect_image(f"envbuilder/{name}:cpu") is None
