"""`fleet build`'s plan: one target per spec and distinct stack (classes resolved for their GPU and
driver), the docker-bake.hcl written for them, and bake's metadata read back."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fake_engine import make_spec
from fake_slurm import cluster

from envbuilder.engine import BuildSecret
from envbuilder.engine.buildkit import Buildx, buildx_bake, find_buildx
from envbuilder.errors import BuildFailedError, BuildKitMissingError, UsageError
from envbuilder.fleet.bake import bake_file, class_host, plan_targets
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.slurm import node_classes, read_nodes
from envbuilder.image.build import BuildOptions
from envbuilder.matrix import load_matrix
from envbuilder.resolve.model import NoCompatibleStackError

MATRIX = load_matrix()
CLASSES = {c.name: c for c in node_classes(read_nodes(cluster()), MATRIX)}


def test_each_class_gets_the_stack_of_its_own_gpu_and_driver(tmp_path: Path) -> None:
    spec = make_spec("train")
    classes = [CLASSES["h200"], CLASSES["a100"], CLASSES["cpu"]]
    targets = plan_targets([(spec, tmp_path / "train.yaml")], classes, MATRIX, BuildOptions(), tmp_path)
    stacks = {t.classes: t.plan.stack.id for t in targets}
    assert stacks == {
        ("h200",): "torch2.13.0-cu130-py3.11-bundled-debian12",  # driver 580.95.05
        ("a100",): "torch2.13.0-cu126-py3.11-bundled-debian12",  # driver 550.54.14: no CUDA 13 there
        ("cpu",): "torch2.13.0-cpu-py3.11-bundled-debian12",
    }
    h200 = targets[0]
    assert h200.name == "train-h200" and h200.plan.lock_out == tmp_path / "train-h200.lock.json"
    assert h200.options.tags == ("envbuilder/train:h200",)


def test_classes_with_the_same_stack_share_one_target(tmp_path: Path) -> None:
    twin = replace(CLASSES["h200"], name="h200-b", nodes=("h200-9",))
    targets = plan_targets(
        [(make_spec("train"), tmp_path / "t.yaml")],
        [CLASSES["h200"], twin],
        MATRIX,
        BuildOptions(tags=("team/x:1",)),
        tmp_path,
    )
    assert [(t.classes, t.options.tags) for t in targets] == [
        (("h200", "h200-b"), ("team/x:1", "envbuilder/train:h200", "envbuilder/train:h200-b"))
    ]


def test_a_class_no_stack_fits_names_itself(tmp_path: Path) -> None:
    old = NodeClass(
        name="k80",
        scheduler="slurm",
        nodes=("n",),
        gpus_per_node=4,
        gpu_model="NVIDIA Tesla K80",
        cc="3.7",
        driver="470.256.02",
    )
    with pytest.raises(NoCompatibleStackError) as err:
        plan_targets([(make_spec("train"), tmp_path / "t.yaml")], [old], MATRIX, BuildOptions(), tmp_path)
    assert err.value.hint is not None and "node class k80" in err.value.hint
    blind = NodeClass(name="x", scheduler="slurm", nodes=("n",), gpus_per_node=1, gpu_model="NVIDIA H200")
    with pytest.raises(UsageError, match="states no driver"):
        class_host(MATRIX, blind)


def test_the_bake_file_has_one_target_per_entry_and_no_tags(tmp_path: Path) -> None:
    opts = BuildOptions(
        secrets=(BuildSecret(id="ca", src=Path("/etc/ssl/ca.pem")),), network="host", no_cache=True
    )
    text = bake_file(
        [
            ("a-h200", tmp_path / "a" / "context", tmp_path / "a" / "Dockerfile"),
            ("b-${x}", Path("/c"), Path("/c/Dockerfile")),
        ],
        opts,
    )
    assert 'targets = ["a-h200", "b-$${x}"]' in text
    assert f'context = "{tmp_path}/a/context"' in text and 'output = ["type=docker"]' in text
    assert 'secret = ["id=ca,src=/etc/ssl/ca.pem"]' in text and 'network = "host"' in text
    assert "no-cache = true" in text and "tags" not in text


def test_buildx_is_found_where_it_is_said_to_be(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "docker-buildx"
    fake.write_text("#!/bin/sh\necho 'github.com/docker/buildx 0.13.1'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("ENVBUILDER_BUILDX", str(fake))
    assert find_buildx() == Buildx(argv=(str(fake),), version="github.com/docker/buildx 0.13.1")
    monkeypatch.setenv("ENVBUILDER_BUILDX", str(tmp_path / "missing"))
    with pytest.raises(
        BuildKitMissingError, match=r"no buildx \(fleet bakes and reproducible builds need it\)"
    ):
        find_buildx()


def test_bake_reads_each_targets_image_from_its_metadata(tmp_path: Path) -> None:
    """A stand-in buildx that prints plain progress and writes the metadata file bake writes."""
    fake = tmp_path / "docker-buildx"
    meta = {
        "a": {"containerimage.digest": "sha256:" + "a" * 64},
        "b": {"containerimage.config.digest": "sha256:" + "b" * 64},
    }
    fake.write_text(
        '#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --metadata-file ] && out=$2; shift; done\n'
        f"echo '#1 [a 1/2] FROM base'\necho '#1 DONE 0.1s'\necho '{json.dumps(meta)}' > \"$out\"\n"
    )
    fake.chmod(0o755)
    ids = buildx_bake(Buildx(argv=(str(fake),), version="x"), tmp_path / "bake.hcl", ["a", "b"])
    assert ids == {"a": "sha256:" + "a" * 64, "b": "sha256:" + "b" * 64}
    fail = tmp_path / "fail"
    fail.write_text(
        "#!/bin/sh\necho '#3 [b 2/2] RUN pip install nope'\necho '#3 ERROR: exit code: 1'\nexit 1\n"
    )
    fail.chmod(0o755)
    with pytest.raises(BuildFailedError, match=r"docker build failed \(exit 1\)") as err:
        buildx_bake(Buildx(argv=(str(fail),), version="x"), tmp_path / "bake.hcl", ["a", "b"])
    assert err.value.log == ("#3 [b 2/2] RUN pip install nope", "#3 ERROR: exit code: 1")


def test_fleet_build_takes_builds_own_build_options(tmp_path: Path) -> None:
    """One declaration (cli/build_cmd.py image_build_options) and one settings builder: the same
    options, the same help, the same refusals, before any scheduler is asked."""
    from click.testing import CliRunner

    from envbuilder.cli import cli
    from envbuilder.cli.build_cmd import BUILD_OPTION_NAMES, build
    from envbuilder.cli.fleet_build_cmd import build_cmd

    mine = {p.name: p.to_info_dict() for p in build.params}
    fleets = {p.name: p.to_info_dict() for p in build_cmd.params}
    shared = set(BUILD_OPTION_NAMES)
    assert {"base_image", "secrets", "pip_index_url_file", "index_url"} <= shared
    assert shared <= set(mine) & set(fleets)
    # --platform is the target host's (host_options): build resolves for it; a fleet's classes
    # are hosts of their own
    assert "platform" in mine and "platform" not in shared
    assert all(mine[n] == fleets[n] for n in shared)
    spec = tmp_path / "s.yaml"
    spec.write_text("x")
    token = tmp_path / "token"
    token.write_text("t")
    twice = ["--secret", f"id=a,src={token}", "--secret", f"id=a,src={token}"]
    for args in (["build", str(spec), *twice], ["fleet", "build", str(spec), "--slurm", *twice]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 2 and "envbuilder: error: secret id 'a' given twice" in res.stderr, res.output


def test_a_class_of_aarch64_nodes_gets_an_arm64_stack_and_the_aarch64_package_lock(tmp_path: Path) -> None:
    """GH200 nodes (Grace: aarch64) resolve for linux/arm64, and their target installs the aarch64
    package lock (image/build.py for_stack_platform), not the x86_64 default of BuildOptions."""
    gh200 = NodeClass(
        name="gh200",
        scheduler="slurm",
        nodes=("g1",),
        gpus_per_node=1,
        gpu_model="NVIDIA GH200",
        cc="9.0",
        driver="580.95.05",
    )
    (target,) = plan_targets(
        [(make_spec("train"), tmp_path / "t.yaml")], [gh200], MATRIX, BuildOptions(), tmp_path
    )
    assert target.plan.stack.platform == "linux/arm64"
    assert target.options.platform == "aarch64"


def test_a_schedulers_arch_makes_the_classes_platform_and_its_stacks() -> None:
    """Slurm's Arch= and Kubernetes' kubernetes.io/arch say the nodes' platform: an H100 class of
    aarch64 nodes resolves for linux/arm64 (the GPU alone would say linux/amd64), and nodes of two
    platforms are two classes."""
    from envbuilder.fleet import kubernetes
    from envbuilder.fleet.slurm import parse_nodes

    line = (
        "NodeName={n} Arch={a} CPUTot=72 AvailableFeatures=nvidia_driver_580.95.05 "
        "Gres=gpu:h100:4 State=IDLE Partitions=gpu"
    )
    nodes = parse_nodes("\n".join(line.format(n=n, a=a) for n, a in (("g1", "aarch64"), ("x1", "x86_64"))))
    by_platform = {c.platform: c for c in node_classes(nodes, MATRIX)}
    assert set(by_platform) == {"linux/arm64", "linux/amd64"}
    arm = by_platform["linux/arm64"]
    assert arm.nodes == ("g1",) and "platform linux/arm64: Slurm Arch=aarch64" in arm.facts
    host = class_host(MATRIX, arm)
    assert host.platform == "linux/arm64"
    labels = {
        "kubernetes.io/arch": "arm64",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "4",
    }
    (k8s,) = kubernetes.node_classes([kubernetes.K8sNode(name="n", labels=labels)], MATRIX)
    assert k8s.platform == "linux/arm64" and "kubernetes.io/arch" not in k8s.labels  # affinity unchanged
