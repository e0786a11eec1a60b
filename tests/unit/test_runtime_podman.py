"""The podman runtime's pure parts: the command lines it gives podman (create/run flags, build),
how `podman image inspect` becomes ImageInfo (the IDs certificates bind), `podman build`'s output
as build events, the CDI grant, and the one-line errors (podman missing, a refused container).
A fake `podman` program (a shell script in tmp_path) stands in where the engine calls it."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from envbuilder import runtime
from envbuilder.engine.container import ContainerSpec, GpuRequest, Mount, Ulimit
from envbuilder.engine.model import BuildSecret
from envbuilder.errors import BuildFailedError, ContainerRuntimeError, NoGpuError, UsageError
from envbuilder.host import GpuInfo
from envbuilder.host.access import AccessMode
from envbuilder.runtime.base import Availability
from envbuilder.runtime.gpu_selection import GpuSelection
from envbuilder.runtime.podman import (
    PODMAN_HINT,
    PodmanEngine,
    PodmanProgress,
    PodmanRuntime,
    cdi_mode,
    find_podman,
    image_info,
    podman_build_argv,
    podman_run_argv,
)

HEX = "432dee53443f5d10ece07dbccb59cab709587088ef3201ac1e9ddb64d3fd67af"


def test_registered_once_with_cdi_as_its_only_mode() -> None:
    assert "podman" in runtime.names()
    rt = runtime.get("podman")
    assert isinstance(rt, PodmanRuntime)
    assert (rt.name, rt.modes, rt.runs) == ("podman", ("cdi",), "image")
    assert "cdi" in runtime.gpu_access_choices()


def test_run_argv_is_dockers_flags_under_podman_with_cdi_devices() -> None:
    spec = ContainerSpec(
        image="sha256:" + HEX,
        command=("python3", "-c", "print(1)"),
        cdi_devices=("nvidia.com/gpu=all",),
        ulimits=(Ulimit(name="memlock", soft=-1, hard=-1),),
        mounts=(Mount(source="/data", target="/data", read_only=True),),
        env={"B": "2", "A": "1"},
        shm_size=1024,
    )
    assert podman_run_argv(spec) == [
        "podman", "run", "--rm", "--network", "none", "--shm-size", "1024",
        "--ulimit", "memlock=-1:-1", "--device", "nvidia.com/gpu=all", "-v", "/data:/data:ro",
        "-e", "A=1", "-e", "B=2", "sha256:" + HEX, "python3", "-c", "print(1)",
    ]  # fmt: skip
    assert PodmanRuntime().argv(spec) == podman_run_argv(spec)


def test_the_toolkits_gpus_request_is_refused_with_the_cdi_hint() -> None:
    with pytest.raises(UsageError) as err:
        podman_run_argv(ContainerSpec(image="x", gpus=GpuRequest()))
    assert "--gpus" in err.value.message and "--gpu-access cdi" in (err.value.hint or "")


def test_create_argv_names_and_labels_the_container_as_envbuilders(tmp_path: Path) -> None:
    argv = PodmanEngine(program="/usr/bin/podman").create_argv(
        ContainerSpec(image="img", command=("true",), purpose="certify")
    )
    assert argv[:2] == ["/usr/bin/podman", "create"] and argv[-2:] == ["img", "true"]
    name = argv[argv.index("--name") + 1]
    assert name.startswith("envbuilder-certify-")
    labels = [argv[i + 1] for i, a in enumerate(argv) if a == "--label"]
    assert any(lb.startswith("io.envbuilder.owner=") for lb in labels)
    assert "io.envbuilder.purpose=certify" in labels


def test_build_argv(tmp_path: Path) -> None:
    argv = podman_build_argv(
        "podman", tmp_path / "ctx", tmp_path / "Dockerfile", tmp_path / "iid",
        secrets=(BuildSecret(id="ca", src=tmp_path / "ca,1.pem"),), build_args={"Z": "1", "A": "2"},
        build_contexts={"base": tmp_path / "b"}, no_cache=True, network="host", source_date_epoch=0,
    )  # fmt: skip
    assert argv == [
        "podman", "build", "--layers=false", "--iidfile", str(tmp_path / "iid"),
        "-f", str(tmp_path / "Dockerfile"),
        "--secret", f'id=ca,"src={tmp_path}/ca,1.pem"', "--build-arg", "A=2", "--build-arg", "Z=1",
        "--build-context", f"base={tmp_path / 'b'}", "--no-cache", "--network", "host", "--timestamp", "0",
        str(tmp_path / "ctx"),
    ]  # fmt: skip
    default = podman_build_argv("podman", tmp_path, tmp_path / "D", tmp_path / "i", network="default")
    assert "--network" not in default and "--timestamp" not in default and "--no-cache" not in default
    with pytest.raises(UsageError, match="bridge0"):
        podman_build_argv("podman", tmp_path, tmp_path / "D", tmp_path / "i", network="bridge0")


def test_image_info_gives_dockers_id_form_and_short_names() -> None:
    """Podman's Id is the config digest without `sha256:`; names without a registry are
    localhost/NAME; never-pushed images carry localhost/NAME@sha256:<manifest> digests."""
    info = image_info(
        {
            "Id": HEX,
            "Digest": "sha256:817d",
            "RepoTags": ["localhost/podman-it/certify:1", "127.0.0.1:5000/x:1"],
            "RepoDigests": ["localhost/podman-it/certify@sha256:817d", "127.0.0.1:5000/x@sha256:aaaa"],
            "Config": {"Labels": {"io.envbuilder.lock-hash": "abc"}, "Env": ["A=1"]},
            "Size": 12,
        }
    )
    assert info.id == "sha256:" + HEX
    assert info.tags == ("podman-it/certify:1", "127.0.0.1:5000/x:1")
    assert info.repo_digests == ("127.0.0.1:5000/x@sha256:aaaa",)
    assert (dict(info.labels), info.env, info.size) == ({"io.envbuilder.lock-hash": "abc"}, ("A=1",), 12)
    assert image_info({"Id": "sha256:" + HEX}).id == "sha256:" + HEX


BUILD_OUTPUT = """\
STEP 1/4: FROM envbuilder-test/debian:bookworm
STEP 2/4: RUN python3 -m venv /opt/venv
--> Using cache 34f29574b59aa
STEP 3/4: COPY harness /opt/envbuilder/harness
STEP 4/4: LABEL a="b"
COMMIT
--> 432dee53443
"""


def test_build_output_becomes_steps_and_events() -> None:
    progress = PodmanProgress.new()
    events = [e for line in BUILD_OUTPUT.splitlines() for e in progress.feed(line)]
    assert [(s.index, s.total, s.state) for s in progress.steps] == [
        (1, 4, "done"), (2, 4, "cached"), (3, 4, "done"), (4, 4, "done"),
    ]  # fmt: skip
    assert [e.kind for e in events if e.kind != "log"] == [
        "start", "done", "start", "cached", "start", "done", "start", "done",
    ]  # fmt: skip
    assert progress.steps[1].name == "[2/4] RUN python3 -m venv /opt/venv"
    assert all(e.is_step for e in events)


def test_a_failing_step_is_marked_error() -> None:
    progress = PodmanProgress.new()
    for line in ("STEP 1/2: FROM x", "STEP 2/2: RUN false", "Error: building at STEP"):
        progress.feed(line)
    assert [e.kind for e in progress.fail()] == ["error"]
    assert progress.steps[-1].state == "error"


def _gpu(index: int) -> GpuInfo:
    return GpuInfo(index=index, name="NVIDIA H200", uuid=f"GPU-{index}", cc="9.0", brand="nvidia")


def test_cdi_grant_all_or_the_selected_indexes() -> None:
    rt = PodmanRuntime()
    cdi = AccessMode(name="cdi", available=True, detail="spec /etc/cdi/nvidia.yaml")
    assert rt.grant(cdi).cdi_devices == ("nvidia.com/gpu=all",)
    sel = GpuSelection(
        text="0,2",
        gpus=(_gpu(0), _gpu(2)),
    )
    assert rt.grant(cdi, sel).cdi_devices == ("nvidia.com/gpu=0", "nvidia.com/gpu=2")
    assert rt.mode_flags(cdi) == ("--device", "nvidia.com/gpu=all")
    assert rt.mode_flags(AccessMode(name="cdi", available=False, detail="no spec")) == ()
    with pytest.raises(UsageError, match="not one of the podman runtime's"):
        rt.grant(AccessMode(name="toolkit", available=True, detail="x"))


def test_podman_missing_is_one_line_with_a_hint_and_exit_24(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("ENVBUILDER_PODMAN", raising=False)
    with pytest.raises(ContainerRuntimeError) as err:
        PodmanEngine().ping()
    assert err.value.exit_code == 24
    assert err.value.message == "Podman is not installed (podman is not on PATH)"
    assert err.value.hint == PODMAN_HINT
    avail = PodmanRuntime().available()
    assert not avail.ok and "Podman is not installed" in avail.reason
    assert [m.available for m in PodmanRuntime().probe_modes()] == [False]


def test_envbuilder_podman_names_the_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_PODMAN", str(tmp_path / "nope"))
    with pytest.raises(ContainerRuntimeError, match="is not an executable"):
        find_podman()
    fake = _fake_podman(tmp_path, "echo 4.3.1")
    monkeypatch.setenv("ENVBUILDER_PODMAN", str(fake))
    assert find_podman() == str(fake)


def _fake_podman(tmp_path: Path, body: str) -> Path:
    """A `podman` that logs its arguments to calls.log and runs `body`."""
    path = tmp_path / "fake-podman"  # not `podman`: conftest.py keeps unit tests off the real one
    path.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls.log\n{body}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_inspect_not_found_is_none_and_other_failures_raise(tmp_path: Path) -> None:
    body = (
        'case "$*" in *nope*) echo "Error: inspecting object: nope:1: image not known" >&2; exit 125;; '
        '*broken*) echo "Error: database is locked" >&2; exit 125;; esac\n'
        f'echo \'[{{"Id": "{HEX}", "RepoTags": ["localhost/a:1"]}}]\''
    )
    eng = PodmanEngine(program=str(_fake_podman(tmp_path, body)))
    assert eng.inspect_image("nope:1") is None
    found = eng.inspect_image("a:1")
    assert found is not None and found.id == "sha256:" + HEX and found.tags == ("a:1",)
    with pytest.raises(ContainerRuntimeError, match="database is locked"):
        eng.inspect_image("broken:1")


def test_daemon_info_names_the_store(tmp_path: Path) -> None:
    doc = {
        "host": {"ociRuntime": {"name": "crun"}, "security": {"rootless": True}},
        "store": {"graphDriverName": "overlay", "graphRoot": "/home/u/.local/share/containers/storage"},
        "version": {"Version": "4.3.1"},
    }
    eng = PodmanEngine(program=str(_fake_podman(tmp_path, f"echo '{json.dumps(doc)}'")))
    info = eng.daemon_info()
    assert (info.server_version, info.default_runtime, info.storage_driver) == ("4.3.1", "crun", "overlay")
    assert info.id == "podman:rootless:/home/u/.local/share/containers/storage"
    assert info.cdi_spec_dirs == ("/etc/cdi", "/var/run/cdi")


def test_a_refused_create_is_one_line_and_the_container_is_removed(tmp_path: Path) -> None:
    body = (
        'case "$1" in create) echo "Error: setting up CDI devices: unresolvable CDI devices '
        'nvidia.com/gpu=all" >&2; exit 125;; esac'
    )
    eng = PodmanEngine(program=str(_fake_podman(tmp_path, body)))
    with pytest.raises(NoGpuError) as err:
        eng.run(ContainerSpec(image="img", cdi_devices=("nvidia.com/gpu=all",)))
    assert "unresolvable CDI devices nvidia.com/gpu=all" in err.value.message
    assert "cdi-spec" in (err.value.hint or "")
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[0].startswith("create ") and calls[-1].startswith("rm --force --time 0 envbuilder-job-")
    body = 'case "$1" in create) echo "Error: invalid config provided: bad mount" >&2; exit 125;; esac'
    eng = PodmanEngine(program=str(_fake_podman(tmp_path, body)))
    with pytest.raises(UsageError, match="podman refused it: invalid config provided: bad mount"):
        eng.run(ContainerSpec(image="img"))


def test_a_failed_build_says_the_step_and_keeps_the_log(tmp_path: Path) -> None:
    body = 'echo "STEP 1/2: FROM x"; echo "STEP 2/2: RUN false"; echo "Error: building at STEP" >&2; exit 1'
    eng = PodmanEngine(program=str(_fake_podman(tmp_path, body)))
    with pytest.raises(BuildFailedError) as err:
        eng.build(tmp_path, tmp_path / "Dockerfile")
    assert err.value.message == "podman build failed (exit 1) at step [2/2] RUN false"
    assert "Error: building at STEP" in err.value.log


def test_cdi_is_offered_with_a_spec_and_a_podman_that_answers() -> None:
    up = Availability(ok=True, reason="Podman 4.3.1")
    offered = cdi_mode(up, ("/etc/cdi/nvidia.yaml",))
    assert (offered.name, offered.available, offered.detail) == ("cdi", True, "spec /etc/cdi/nvidia.yaml")
    assert offered.cdi_specs == ("/etc/cdi/nvidia.yaml",)
    no_spec = cdi_mode(up, ())
    assert (
        not no_spec.available
        and no_spec.detail == "no CDI spec for nvidia.com/gpu in /etc/cdi or /var/run/cdi"
    )
    no_podman = cdi_mode(Availability(ok=False, reason="Podman is not installed"), ("/etc/cdi/nvidia.yaml",))
    assert not no_podman.available and no_podman.detail.startswith("Podman is not installed; spec ")
