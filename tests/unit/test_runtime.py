"""The runtime registry and each runtime's GPU access modes (envbuilder/runtime): the registry
and the command line's choices agree, each runtime says what each of its modes hands a container
(Docker's flags, Apptainer's argv, enroot's hook), the mode choice follows the runtime's `auto`
order, and docs/architecture.md names exactly the registered runtimes and modes."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from envbuilder.cli import cli
from envbuilder.errors import ContainerRuntimeError, NoGpuError, UsageError
from envbuilder.host import AccessMode
from envbuilder.runtime import RUNTIMES, Runtime, choose_access, get, gpu_access_choices, modes_of, names
from envbuilder.runtime.docker import DockerRuntime

DOCKER = DockerRuntime()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def mode(name: str, available: bool = True) -> AccessMode:
    return AccessMode(name=name, available=available, detail=f"{name} detail")


# ------------------------------------------------------------------ mode choice


def test_auto_prefers_toolkit_then_cdi_then_devices() -> None:
    three = [mode("toolkit"), mode("cdi"), mode("devices")]
    assert choose_access(DOCKER, "auto", three).name == "toolkit"
    assert choose_access(DOCKER, "auto", [mode("toolkit", False), *three[1:]]).name == "cdi"
    assert (
        choose_access(DOCKER, "auto", [mode("toolkit", False), mode("cdi", False), three[2]]).name
        == "devices"
    )


def test_auto_without_any_mode_falls_back_to_the_cpu_path_and_says_why() -> None:
    choice = choose_access(
        DOCKER, "auto", [mode("toolkit", False), mode("cdi", False), mode("devices", False)]
    )
    assert choice.name == "none" and choice.mode is None
    assert "toolkit: toolkit detail" in choice.reason and "devices: devices detail" in choice.reason


def test_explicit_mode_that_is_not_offered_is_refused_with_exit_5() -> None:
    with pytest.raises(NoGpuError, match=r"'cdi' is not available.*cdi detail") as err:
        choose_access(DOCKER, "cdi", [mode("toolkit"), mode("cdi", False)])
    assert err.value.exit_code == 5
    with pytest.raises(UsageError):
        choose_access(DOCKER, "gpus", [])
    assert choose_access(DOCKER, "none", [mode("toolkit")]).name == "none"

    with pytest.raises(UsageError, match="'nv' is not one of the docker runtime's"):
        choose_access(DOCKER, "nv", [mode("toolkit")])  # another runtime's mode


# ------------------------------------------------------------------ the registry


def test_the_registry_lists_each_runtime_once_under_its_own_name() -> None:
    assert names() == tuple(RUNTIMES) and names()[0] == "docker"
    for name in names():
        rt: Runtime = get(name)  # every runtime can be made with no options
        assert rt.name == name and rt.modes and rt.runs in ("image", "sif", "sqsh")
        assert not {"auto", "none"} & set(rt.modes), "auto and none are every runtime's, never listed"
        assert len(set(rt.modes)) == len(rt.modes)
    assert modes_of()["docker"] == ("toolkit", "cdi", "devices")
    assert gpu_access_choices()[:4] == ("auto", "toolkit", "cdi", "devices")
    assert gpu_access_choices()[-1] == "none"
    with pytest.raises(UsageError, match="unknown container runtime 'rkt'") as err:
        get("rkt")
    assert "docker" in (err.value.hint or "")


def _choices(path: tuple[str, ...], option: str) -> tuple[str, ...]:
    command: click.Command | None = cli
    for word in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), word)
    assert command is not None
    (param,) = [p for p in command.params if p.name == option]
    assert isinstance(param.type, click.Choice)
    return tuple(param.type.choices)


@pytest.mark.parametrize("path", [("run",), ("certify",), ("fleet", "certify")])
def test_the_command_lines_choices_are_the_registrys(path: tuple[str, ...]) -> None:
    assert _choices(path, "runtime") == names()
    assert _choices(path, "gpu_access") == gpu_access_choices()


def test_an_image_runtime_and_a_file_runtime_say_what_they_cannot_do(tmp_path: Path) -> None:
    app = get("apptainer", binary=str(tmp_path / "none"))
    with pytest.raises(ContainerRuntimeError, match="runs exported sif files") as err:
        app.engine()
    assert err.value.exit_code == 24 and "envbuilder export IMAGE --sif FILE" in (err.value.hint or "")
    there = app.available()
    assert not there.ok and "is not a file" in there.reason and there.hint
    with pytest.raises(ContainerRuntimeError, match="no file to export to"):
        DOCKER.export("img:1", tmp_path / "x", source=object())  # type: ignore[arg-type]
    assert app.inspect(str(tmp_path / "missing.sif")) is None and not app.remove(str(tmp_path / "x"))


# ------------------------------------------------------------------ what each mode hands a container


def test_docker_modes_flags_and_none_for_an_unavailable_mode() -> None:
    assert DOCKER.mode_flags(mode("toolkit")) == ("--gpus", "all")
    assert DOCKER.mode_flags(mode("cdi")) == ("--device", "nvidia.com/gpu=all")
    assert DOCKER.mode_flags(mode("cdi", False)) == ()


def test_apptainer_modes_are_nv_and_nvccli_on_a_contained_exec(tmp_path: Path) -> None:
    from envbuilder.engine import ContainerSpec, Mount
    from envbuilder.host import GpuInfo, HostReport

    gpu = GpuInfo(index=0, name="NVIDIA H200", uuid="GPU-0", cc="9.0", brand="nvidia")
    app = get(
        "apptainer", probe=lambda: HostReport(source="nvml", driver="580.1", cuda_driver="13.0", gpus=(gpu,))
    )
    nv, nvccli = app.probe_modes()
    assert (nv.name, nv.available, nvccli.name) == ("nv", True, "nvccli")
    assert choose_access(app, "auto", (nv, nvccli)).name == "nv"  # auto: nv first
    assert app.mode_flags(nv) == ("--nv",) and app.mode_flags(mode("nvccli")) == ("--nv", "--nvccli")
    spec = ContainerSpec(
        image="/shared/train.sif",
        command=("python", "train.py"),
        env={"EPOCHS": "3", "A": "1"},
        gpu_flags=app.grant(nv).flags,
        mounts=(
            Mount(source="/data", target="/data", read_only=True),
            Mount(source="/scratch/run", target="/out"),
        ),
        workdir="/work",
    )
    assert app.argv(spec) == [
        "apptainer", "exec", "--containall", "--nv",
        "--bind", "/data:/data:ro", "--bind", "/scratch/run:/out",
        "--env", "A=1", "--env", "EPOCHS=3",
        "--pwd", "/work",
        "/shared/train.sif", "python", "train.py",
    ]  # fmt: skip
    cpu = get("apptainer", binary="/opt/apptainer/bin/apptainer").argv(
        ContainerSpec(image="docker://reg/x:1", command=("true",))
    )
    assert cpu == ["/opt/apptainer/bin/apptainer", "exec", "--containall", "docker://reg/x:1", "true"]
    no_gpu = get("apptainer", probe=lambda: HostReport(source="none", driver=None, cuda_driver=None))
    assert not any(m.available for m in no_gpu.probe_modes())


def test_enroot_start_hands_the_gpus_in_through_its_nvidia_hook() -> None:
    from envbuilder.engine import ContainerSpec, Mount

    enroot = get("enroot")
    (hook,) = enroot.modes
    grant = enroot.grant(mode(hook))
    spec = ContainerSpec(
        image="/shared/train.sqsh",
        command=("python", "train.py"),
        env={**grant.env, "X": "1"},
        mounts=(Mount(source="/data", target="/data", read_only=True),),
    )
    assert enroot.argv(spec) == [
        "enroot", "start", "--mount", "/data:/data:none,bind,ro",
        "--env", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "--env", "NVIDIA_VISIBLE_DEVICES=all",
        "--env", "X=1", "/shared/train.sqsh", "python", "train.py",
    ]  # fmt: skip
    assert enroot.argv(ContainerSpec(image="t.sqsh", command=("true",))) == [
        "enroot",
        "start",
        "t.sqsh",
        "true",
    ]
    with pytest.raises(UsageError, match="enroot start has no working-directory option"):
        enroot.argv(ContainerSpec(image="t.sqsh", workdir="/w"))


# ------------------------------------------------------------------ the docs


def _doc_rows(section: str) -> list[list[str]]:
    """The table rows (cells stripped, header and rule left out) of the docs' `## section`."""
    text = DOCS.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [
        [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        for line in body.splitlines()
        if line.startswith("|")
    ]
    return [r for r in rows[1:] if not re.fullmatch(r"[-: ]*", "".join(r))]


def test_the_architecture_doc_names_every_runtime_and_mode_and_no_other() -> None:
    runtimes = [row[0] for row in _doc_rows("How to add a runtime")]
    assert sorted(runtimes) == sorted(names()), "docs/architecture.md's runtime table vs runtime.RUNTIMES"
    modes = {(row[0], row[1]) for row in _doc_rows("How to add a GPU access mode")}
    registered = {(name, m) for name, ms in modes_of().items() for m in ms}
    assert modes == registered, "docs/architecture.md's access mode table vs each runtime's modes"


# ------------------------------------------------------------------ a runtime added by one line


class _NerdRuntime(DockerRuntime):
    """A second image runtime, registered by the test alone (as podman.py registers itself)."""

    name = "nerd"
    modes: tuple[str, ...] = ("cdi",)


def test_one_registry_line_carries_a_new_image_runtime_into_fleet_jobs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from envbuilder.engine import ImageInfo
    from envbuilder.fleet.classes import NodeClass
    from envbuilder.fleet.image import FleetImage
    from envbuilder.fleet.jobs import JobOptions, docker_body, job_access

    monkeypatch.setitem(RUNTIMES, "nerd", _NerdRuntime)
    assert "nerd" in names() and "cdi" in gpu_access_choices()
    image = FleetImage(
        ref="reg:5000/team/train:1", info=ImageInfo(id="sha256:" + "a" * 64, tags=(), repo_digests=())
    )
    pull, certify = docker_body(image, JobOptions(runtime="nerd"), tmp_path, access="cdi", nonce="n1")
    assert pull.startswith("nerd image inspect reg:5000/team/train:1") and "|| nerd pull " in pull
    assert "certify --runtime nerd reg:5000/team/train:1 --gpu-access cdi" in certify
    docker_pull, _ = docker_body(image, JobOptions(), tmp_path, access="auto", nonce="n1")
    assert docker_pull.startswith("docker image inspect ")  # docker's script is as it was
    gpu_class = NodeClass(name="h200", scheduler="slurm", nodes=("n1",), gpus_per_node=8)
    assert job_access("nerd", "auto", gpu_class) == "auto"  # the node's certify chooses
    assert job_access("apptainer", "auto", gpu_class) == "apptainer --nv"
    with pytest.raises(UsageError, match="--gpu-access cdi is not one of the enroot runtime's modes"):
        job_access("enroot", "cdi", gpu_class)


def test_certify_with_a_file_runtime_is_one_line_exit_24() -> None:
    from click.testing import CliRunner

    res = CliRunner().invoke(cli, ["certify", "--runtime", "apptainer", "team/train:1"])
    assert res.exit_code == 24, res.output
    assert "the apptainer runtime runs exported sif files" in res.output and "Traceback" not in res.output
