"""Issue 24 item 9: one image for a whole partition. The node classes come from the fake Slurm
(the recorded two-class cluster; its a100 node turned into a V100 node for the V100 + H200 case):
the stack has kernels for every class's GPU and runs on the oldest driver, and each class's own
newer stack is named with the reason it was dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_engine import make_spec
from fake_slurm import FakeSlurm, recorded

from envbuilder.cli import cli
from envbuilder.errors import UsageError
from envbuilder.fleet.bake import plan_targets
from envbuilder.fleet.classes import NodeClass
from envbuilder.fleet.one_image import one_stack, partition_host, plan_one_image_targets
from envbuilder.fleet.slurm import node_classes, read_nodes
from envbuilder.image.build import BuildOptions
from envbuilder.matrix import load_matrix
from envbuilder.resolve.model import NoCompatibleStackError

MATRIX = load_matrix()


def volta_cluster() -> FakeSlurm:
    """The recorded cluster with its A100 node replaced by a V100 node (GRES v100, sm_70, R550)."""
    nodes = recorded("scontrol-show-node.txt").replace("a100-0", "v100-0").replace("sm_80", "sm_70")
    nodes = nodes.replace("Gres=gpu:a100:1", "Gres=gpu:v100:1")
    parts = recorded("scontrol-show-partition.txt").replace("a100-0", "v100-0")
    return (
        FakeSlurm()
        .on("scontrol", "show", "node", stdout=nodes)
        .on("scontrol", "show", "partition", stdout=parts)
    )


def gpu_partition(run: FakeSlurm) -> list[NodeClass]:
    return [c for c in node_classes(read_nodes(run), MATRIX) if "gpu" in c.partitions]


def test_v100_and_h200_get_the_newest_build_with_kernels_for_both_and_why_cu130_was_dropped(
    tmp_path: Path,
) -> None:
    classes = gpu_partition(volta_cluster())
    assert sorted(c.name for c in classes) == ["h200", "v100"]
    choice = one_stack(MATRIX, make_spec("train").to_request(), classes)
    stack = choice.resolution.stack
    assert stack is not None
    assert "7.0" in stack.sass and "9.0" in stack.sass  # native kernels for both GPUs
    assert choice.host.driver == "550.54.14"  # the V100 nodes' driver: the oldest
    # each class alone: the V100 class gets this same stack; the H200 class would get a CUDA 13 build
    alone = {
        c.name: one_stack(MATRIX, make_spec("train").to_request(), [c]).resolution.stack for c in classes
    }
    assert alone["v100"] is not None and alone["v100"].id == stack.id
    assert alone["h200"] is not None and alone["h200"].id != stack.id
    [dropped] = choice.dropped
    assert dropped.node_class == "h200" and dropped.stack == alone["h200"].id
    assert any(r.startswith("arch: no kernels for") and "sm_70" in r for r in dropped.reasons), dropped
    assert any("550.54.14" in n and "oldest" in n for n in choice.notes)


def test_one_image_plan_makes_one_target_tagged_for_every_class(tmp_path: Path) -> None:
    classes = gpu_partition(volta_cluster())
    spec = make_spec("train")
    targets, choices = plan_one_image_targets(
        [(spec, tmp_path / "train.yaml")], classes, MATRIX, BuildOptions(), tmp_path, "gpu"
    )
    [t] = targets
    assert t.name == "train-gpu" and set(t.classes) == {"h200", "v100"}
    assert set(t.options.tags) == {"envbuilder/train:h200", "envbuilder/train:v100"}
    assert t.plan.stack.id == choices[0].resolution.stack.id  # type: ignore[union-attr]
    assert t.plan.lock_out == tmp_path / "train-gpu.lock.json"
    # without --one-image: one target per distinct stack (two here)
    assert (
        len(plan_targets([(spec, tmp_path / "train.yaml")], classes, MATRIX, BuildOptions(), tmp_path)) == 2
    )


def test_the_recorded_a100_h200_partition_shares_one_stack_and_drops_nothing() -> None:
    from fake_slurm import cluster

    classes = gpu_partition(cluster())
    choice = one_stack(MATRIX, make_spec("train").to_request(), classes)
    assert choice.resolution.stack is not None
    h200 = next(c for c in classes if c.name == "h200")
    own = one_stack(MATRIX, make_spec("train").to_request(), [h200]).resolution.stack
    assert own is not None and own.cuda is not None and choice.resolution.stack.cuda is not None
    # the A100 nodes' R550 driver caps the partition below CUDA 13: the H200's cu130 is dropped for it
    [d] = choice.dropped
    assert d.node_class == "h200" and any(r.startswith("driver: driver 550.54.14 < ") for r in d.reasons)


def test_no_stack_fits_every_class_names_the_classes(tmp_path: Path) -> None:
    k80 = NodeClass(
        name="k80", scheduler="slurm", nodes=("k",), gpus_per_node=1, gpu_model="NVIDIA Tesla K80",
        cc="3.7", driver="470.256.02",
    )  # fmt: skip
    classes = [*gpu_partition(volta_cluster()), k80]
    with pytest.raises(NoCompatibleStackError) as err:
        plan_one_image_targets(
            [(make_spec("t"), tmp_path / "t.yaml")], classes, MATRIX, BuildOptions(), tmp_path, "p"
        )
    assert err.value.hint is not None and "h200, v100, k80" in err.value.hint.replace(
        "v100, h200", "h200, v100"
    )
    with pytest.raises(UsageError, match="no node classes"):
        one_stack(MATRIX, make_spec("t").to_request(), [])


def test_cpu_classes_bring_no_gpu_and_an_all_cpu_partition_gets_a_cpu_stack() -> None:
    from fake_slurm import cluster

    every = node_classes(read_nodes(cluster()), MATRIX)
    host, notes = partition_host(MATRIX, every)
    assert {g.cc for g in host.gpus} == {"8.0", "9.0"} and any("cpu has no GPUs" in n for n in notes)
    cpu_only = one_stack(MATRIX, make_spec("t").to_request(), [c for c in every if c.name == "cpu"])
    assert cpu_only.resolution.stack is not None and cpu_only.resolution.stack.cuda is None


def test_the_partitions_oldest_driver_is_the_oldest_version_not_the_first_text() -> None:
    # 535.54.03 is older than 535.104.05, though its text sorts after it (set S's S38 took the
    # text's minimum: the newer driver, so stacks were checked against a driver some nodes lack)
    from dataclasses import replace

    from fake_slurm import cluster

    gpu = [c for c in node_classes(read_nodes(cluster()), MATRIX) if c.gpus_per_node][:2]
    classes = [replace(gpu[0], driver="535.104.05"), replace(gpu[1], driver="535.54.03")]
    host, notes = partition_host(MATRIX, classes)
    assert host.driver == "535.54.03"
    assert any(n.startswith(f"driver 535.54.03 ({gpu[1].name}) is the oldest") for n in notes)


def test_fleet_plan_one_image_prints_the_stack_and_the_dropped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envbuilder.cli.fleet_plan_cmd as plan_cmd

    classes = tuple(gpu_partition(volta_cluster()))
    monkeypatch.setattr(plan_cmd, "cluster_classes", lambda *a, **k: classes)
    spec = tmp_path / "train.yaml"
    spec.write_text('schema_version: 1\nname: train\ndescription: t\nframework: "torch"\nstrategy: bundled\n')
    r = CliRunner().invoke(cli, ["fleet", "plan", "--slurm", "--partition", "gpu", "--one-image", str(spec)])
    assert r.exit_code == 0, r.output
    assert "one image for " in r.output and "driver 550.54.14" in r.output
    assert "h200 alone would get " in r.output and "dropped: arch: no kernels for" in r.output
    j = CliRunner().invoke(cli, ["fleet", "plan", "--slurm", "--one-image", str(spec), "--json"])
    doc = json.loads(j.stdout)["one_image"]
    assert doc["stack"]["id"] and doc["dropped"][0]["class"] == "h200"


def test_fleet_build_one_image_bakes_one_target_for_the_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI path: classes from the (fake) cluster, one bake target, the dropped stack said on
    stderr. Bake, buildx and the engine are stand-ins: what is checked is what is asked of them."""
    from types import SimpleNamespace

    import envbuilder.cli.fleet_build_cmd as build_cmd
    import envbuilder.engine as engine
    import envbuilder.engine.buildkit as buildkit
    import envbuilder.fleet.bake as bake

    classes = tuple(gpu_partition(volta_cluster()))
    monkeypatch.setattr(build_cmd, "cluster_classes", lambda *a, **k: classes)
    monkeypatch.setattr(buildkit, "find_buildx", lambda: buildkit.Buildx(argv=("buildx",), version="0"))
    monkeypatch.setattr(engine, "DockerEngine", lambda: None)
    baked: list[list[str]] = []

    def fake_bake(targets: list[object], *_a: object, **_k: object) -> list[object]:
        baked.append([t.name for t in targets])  # type: ignore[attr-defined]
        image = SimpleNamespace(id="sha256:" + "0" * 64)
        return [SimpleNamespace(image=image, tags=(), pushed=(), warnings=()) for _ in targets]

    monkeypatch.setattr(bake, "bake", fake_bake)
    spec = tmp_path / "train.yaml"
    spec.write_text('schema_version: 1\nname: train\ndescription: t\nframework: "torch"\nstrategy: bundled\n')
    args = ["fleet", "build", str(spec), "--slurm", "--partition", "gpu", "--out", str(tmp_path / "o")]
    res = CliRunner().invoke(cli, [*args, "--one-image", "--json"])
    assert res.exit_code == 0, res.output
    assert baked == [["train-gpu"]]
    [row] = json.loads(res.stdout)["targets"]
    assert sorted(row["classes"]) == ["h200", "v100"] and "-cu126-" in row["stack"]
    assert "one image: h200 alone would get " in res.stderr and "dropped: arch: no kernels for" in res.stderr
    per_class = CliRunner().invoke(cli, [*args, "--json"])
    assert per_class.exit_code == 0 and sorted(baked[-1]) == ["train-h200", "train-v100"]  # one per class


def test_classes_of_two_platforms_cannot_share_one_image() -> None:
    from dataclasses import replace

    v100, h200 = sorted(gpu_partition(volta_cluster()), key=lambda c: c.name, reverse=True)
    gh200 = replace(h200, name="gh200", platform="linux/arm64")
    with pytest.raises(UsageError, match="linux/amd64 and linux/arm64 cannot share one image"):
        one_stack(MATRIX, make_spec("t").to_request(), [replace(v100, platform="linux/amd64"), gh200])
    host, _ = partition_host(MATRIX, [gh200])
    assert host.platform == "linux/arm64"
