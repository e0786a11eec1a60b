"""`envbuilder run` where users expect `docker run`: the image's own CMD, -it, --rm, -p, -u,
--name, and --gpus (a subset of GPUs, handed in by every access mode and covered by the
certificate check for exactly those GPUs). FakeEngine; no Docker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cert_factory import IMAGE_ID, cert
from click.testing import CliRunner
from fake_engine import FakeEngine

from envbuilder.certify.certificate import Certificate
from envbuilder.cli import cli
from envbuilder.engine import ContainerSpec, ImageInfo, PortBinding
from envbuilder.errors import CertificateRefusedError, NoGpuError, UsageError
from envbuilder.host import AccessMode, GpuInfo, HostReport
from envbuilder.run.launch import RunOptions, RunOutcome, parse_name, parse_publish, parse_user, run_image
from envbuilder.runtime.gpu_selection import parse_gpus

H100_UUID = "GPU-11111111-2222-3333-4444-555555555555"
T4_UUID = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
H100 = GpuInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid=H100_UUID, cc="9.0", brand="nvidia")
T4 = GpuInfo(index=1, name="Tesla T4", uuid=T4_UUID, cc="7.5", brand="tesla")
TOOLKIT = AccessMode(name="toolkit", available=True, detail="the daemon has the nvidia runtime")
CDI = AccessMode(name="cdi", available=True, detail="spec /etc/cdi/nvidia.yaml")
CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm")
DEVICES = AccessMode(
    name="devices",
    available=True,
    detail="4 device nodes",
    devices=("/dev/nvidia0", "/dev/nvidia1", *CONTROL),
    lib_dir="/usr/local/nvidia/lib64",
)


def engine(**kw: Any) -> FakeEngine:
    image = ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=())
    return FakeEngine(images={"team/train:1": image, IMAGE_ID: image}, **kw)


def two_gpu_host(root: Path) -> Path:
    """A host root whose /proc says the H100 (index 0) is /dev/nvidia1 and the T4 /dev/nvidia0 (the
    minor is not the index), with those nodes in its /dev (plain files: only names are read)."""
    for bus, uuid, minor in (("0000:3b:00.0", H100_UUID, 1), ("0000:86:00.0", T4_UUID, 0)):
        folder = root / "proc/driver/nvidia/gpus" / bus
        folder.mkdir(parents=True)
        (folder / "information").write_text(f"Model: \t x\nGPU UUID: \t {uuid}\nDevice Minor: \t {minor}\n")
    (root / "dev").mkdir()
    for node in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (root / "dev" / node).write_text("")
    return root


def go(
    tmp_path: Path,
    eng: FakeEngine,
    certificate: Certificate | None,
    mode: AccessMode | None = TOOLKIT,
    host_gpus: tuple[GpuInfo, ...] = (H100, T4),
    monitor_factory: Any = None,
    **opts: Any,
) -> tuple[RunOutcome, list[str]]:
    lines: list[str] = []
    root = tmp_path / "host"
    if not root.exists():
        two_gpu_host(root)
    extra = {"monitor_factory": monitor_factory} if monitor_factory is not None else {}
    outcome = run_image(
        RunOptions(image="team/train:1", **{"command": ("python", "train.py"), **opts}),
        find_certificate=lambda _info: [certificate] if certificate is not None else [],
        eng=eng,
        probe=lambda: HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=host_gpus),
        access_modes=lambda _daemon: (mode,) if mode is not None else (),
        say=lines.append,
        log_dir=tmp_path,
        host_root=root,
        **extra,
    )
    return outcome, lines


def log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]


# --------------------------------------------------------------------------- the image's own CMD


def test_no_command_runs_the_images_own_cmd(tmp_path: Path) -> None:
    eng = engine()
    outcome, _ = go(tmp_path, eng, cert(gpus=(H100, T4)), command=())
    (spec,) = eng.runs
    assert outcome.exit_code == 0
    assert (spec.command, spec.entrypoint) == ((), None)  # the engine gives Docker no Cmd: the image's
    assert log(tmp_path)[0]["command"] == []


# --------------------------------------------------------------------------- -p, -u, --name


def test_ports_user_and_name_reach_the_container(tmp_path: Path) -> None:
    eng = engine()
    go(
        tmp_path, eng, cert(gpus=(H100, T4)), publish=("8888:8888", "127.0.0.1::53/udp"),
        user="1000:1000", name="my-notebook",
    )  # fmt: skip
    (spec,) = eng.runs
    assert spec.ports == (
        PortBinding(container_port=8888, host_port=8888),
        PortBinding(container_port=53, protocol="udp", host_ip="127.0.0.1"),
    )
    assert (spec.user, spec.name) == ("1000:1000", "my-notebook")
    assert spec.labels["io.envbuilder.run"] == "1"  # still envbuilder's: the janitor finds it by labels


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("80", PortBinding(container_port=80)),
        ("8888:8888", PortBinding(container_port=8888, host_port=8888)),
        ("8080:80/tcp", PortBinding(container_port=80, host_port=8080)),
        ("5353:53/udp", PortBinding(container_port=53, protocol="udp", host_port=5353)),
        ("0.0.0.0:90:9/sctp", PortBinding(container_port=9, protocol="sctp", host_port=90, host_ip="0.0.0.0")),  # noqa: E501
        ("127.0.0.1::80", PortBinding(container_port=80, host_ip="127.0.0.1")),
        ("[::1]:8080:80", PortBinding(container_port=80, host_port=8080, host_ip="::1")),
        ("65535:1", PortBinding(container_port=1, host_port=65535)),
    ],
)  # fmt: skip
def test_publish_reads_dockers_syntax(text: str, want: PortBinding) -> None:
    assert parse_publish(text) == want


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("0:80", "is not a port"),
        ("8080:65536", "is not a port"),
        ("8000-8010:8000-8010", "is not a port"),
        ("http:80", "is not a port"),
        ("8080:80/icmp", "unknown protocol"),
        ("999.1.1.1:80:80", "is not an IP address"),
        ("::1:8080:80", "malformed"),
        (":80", "malformed"),
        ("", "is not a port"),
        ("[::1]80", "malformed"),
    ],
)
def test_publish_refuses_what_docker_would_misread(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=said) as err:
        parse_publish(text)
    assert err.value.exit_code == 2 and err.value.hint


def test_publish_needs_a_network_that_publishes(tmp_path: Path) -> None:
    for network in ("none", "host"):
        with pytest.raises(UsageError, match=f"-p publishes nothing with --network {network}"):
            go(tmp_path, engine(), cert(gpus=(H100, T4)), publish=("80:80",), network=network)


def test_user_and_name_are_validated() -> None:
    for good in ("1000", "1000:1000", "0:0", "ubuntu", "ubuntu:users", "_svc.x-1"):
        assert parse_user(good) == good
    # Each part is checked: a group ID of (gid_t)-1 is refused as a user ID of it is; and the whole
    # value is matched, a final line break included (`$` alone would take "ubuntu\n").
    for bad in (
        *("", ":", "1000:", "-1", "a b", "user;rm", "99999999999", "4294967295", "1:2:3"),
        *("1000:4294967295", "ubuntu:4294967295", "ubuntu\n", "1000:1000\n"),
    ):
        with pytest.raises(UsageError, match="malformed -u") as err:
            parse_user(bad)
        assert "$(id -u):$(id -g)" in (err.value.hint or "")
    assert parse_name("my-job_1.a") == "my-job_1.a"
    for bad in ("x", "-job", "a/b", "job name", "j" * 129, "job\n"):
        with pytest.raises(UsageError, match="malformed --name"):
            parse_name(bad)


# --------------------------------------------------------------------------- --gpus


def test_gpus_parses_dockers_syntax() -> None:
    assert parse_gpus("all").all and parse_gpus('"all"').all
    assert parse_gpus("2").count == 2 and parse_gpus("count=2").count == 2
    assert parse_gpus("device=0,2").ids == ("0", "2")
    assert parse_gpus('"device=0,2"').ids == ("0", "2")  # docker's CLI needs the quotes for a list
    assert parse_gpus(f"device={T4_UUID}").ids == (T4_UUID,)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("0", "whole number from 1"),
        ("-1", "whole number from 1"),
        ("two", "whole number from 1"),
        ("device=", "neither a GPU index nor a GPU UUID"),
        ("device=0,,1", "neither a GPU index nor a GPU UUID"),
        ("device=GPU-1", "neither a GPU index nor a GPU UUID"),
        ("device=0,0", "listed twice"),
        ("device=MIG-11111111-2222-3333-4444-555555555555", "MIG devices"),
        ("device=0:1", "MIG devices"),  # a MIG device by its GPU and instance index
        ("device=0,1,1", "1 listed twice"),  # not only the first ID is looked for again
        ("capabilities=compute", "reads all, N, count=N or device"),
        ("driver=nvidia,count=1", "reads all, N, count=N or device"),
    ],
)
def test_gpus_refuses_bad_values_with_a_hint(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=said) as err:
        parse_gpus(text)
    assert "--gpus device=0,2" in (err.value.hint or "")


def test_a_subset_on_the_certified_gpu_is_covered_though_the_host_has_another(tmp_path: Path) -> None:
    """An H100 and a T4; the image is certified on an H100 only. All GPUs: refused (the T4 was not
    certified). --gpus device=0: the job gets the H100 alone, and the certificate covers that."""
    h100_only = cert(gpus=(H100,))
    with pytest.raises(CertificateRefusedError, match=r"this host's Tesla T4 was not part") as err:
        go(tmp_path, engine(), h100_only)
    assert "this host's NVIDIA H100" not in err.value.message
    eng = engine()
    outcome, lines = go(tmp_path, eng, h100_only, gpus="device=0")
    assert outcome.refusals == () and any("covers this run" in line for line in lines)
    (spec,) = eng.runs
    assert spec.gpus is not None and spec.gpus.device_ids == (H100_UUID,)  # the Toolkit: this GPU only
    assert log(tmp_path)[-1]["gpus"] == ["0"] and log(tmp_path)[-1]["outcome"] == "exited"
    # the first one (--gpus 1) and by UUID are the same GPU
    for value in ("1", f"device={H100_UUID}", f'"device={H100_UUID}"'):
        eng = engine()
        go(tmp_path, eng, h100_only, gpus=value)
        assert eng.runs[0].gpus is not None and eng.runs[0].gpus.device_ids == (H100_UUID,)
    # the T4 alone is not covered, and only the T4 is named
    with pytest.raises(CertificateRefusedError, match="Tesla T4 was not part") as err:
        go(tmp_path, engine(), h100_only, gpus=f"device={T4_UUID}")
    assert log(tmp_path)[-1]["outcome"] == "refused" and log(tmp_path)[-1]["gpus"] == ["1"]


def _spec_in(tmp_path: Path, mode: AccessMode, gpus: str | None) -> ContainerSpec:
    eng = engine()
    go(tmp_path, eng, cert(gpus=(H100, T4)), mode=mode, gpus=gpus)
    return eng.runs[0]


def test_every_access_mode_hands_in_exactly_the_selected_gpus(tmp_path: Path) -> None:
    toolkit = _spec_in(tmp_path, TOOLKIT, "device=1")
    assert toolkit.gpus is not None and toolkit.gpus.device_ids == (T4_UUID,)
    assert toolkit.gpus.cli_value() == f"device={T4_UUID}"
    upper = _spec_in(tmp_path, TOOLKIT, f"device={T4_UUID.upper()}").gpus
    assert upper is not None and upper.device_ids == (T4_UUID,)  # a UUID matches in either case
    assert _spec_in(tmp_path, TOOLKIT, "all").gpus == _spec_in(tmp_path, TOOLKIT, None).gpus
    assert _spec_in(tmp_path, TOOLKIT, None).gpus.cli_value() == "all"  # type: ignore[union-attr]
    # cdi: the per-index names nvidia-ctk and `envbuilder gpu cdi-spec` both write
    assert _spec_in(tmp_path, CDI, "device=1").cdi_devices == ("nvidia.com/gpu=1",)
    assert _spec_in(tmp_path, CDI, "2").cdi_devices == ("nvidia.com/gpu=0", "nvidia.com/gpu=1")
    assert _spec_in(tmp_path, CDI, None).cdi_devices == ("nvidia.com/gpu=all",)
    # devices: the control nodes and the selected GPU's node, found by its minor (not its index)
    h100 = _spec_in(tmp_path, DEVICES, "device=0")
    assert h100.devices == (*CONTROL, "/dev/nvidia1")
    assert h100.env["NVIDIA_VISIBLE_DEVICES"] == H100_UUID
    t4 = _spec_in(tmp_path, DEVICES, f"device={T4_UUID}")
    assert t4.devices == (*CONTROL, "/dev/nvidia0")
    every = _spec_in(tmp_path, DEVICES, None)
    assert every.devices == DEVICES.devices and every.env["NVIDIA_VISIBLE_DEVICES"] == "all"


def test_devices_mode_refuses_a_selected_gpu_without_a_node(tmp_path: Path) -> None:
    root = two_gpu_host(tmp_path / "host")
    (root / "dev" / "nvidia1").unlink()  # the H100's node
    with pytest.raises(NoGpuError, match=r"no /dev/nvidia device node found for GPU 0 \(NVIDIA H100"):
        go(tmp_path, engine(), cert(gpus=(H100, T4)), mode=DEVICES, gpus="device=0")


def test_gpus_this_host_lacks_or_without_gpu_access_are_refused(tmp_path: Path) -> None:
    c = cert(gpus=(H100, T4))
    for value, said in (("device=2", "this host has no GPU 2"), ("3", "this host has 2 GPU"), (
        "device=GPU-00000000-0000-0000-0000-000000000000", "no GPU GPU-0000",
    )):  # fmt: skip
        with pytest.raises(UsageError, match=said) as err:
            go(tmp_path, engine(), c, gpus=value)
        assert f"this host's GPUs are 0: NVIDIA H100 80GB HBM3 {H100_UUID}, 1: Tesla T4" in (
            err.value.hint or ""
        )
    with pytest.raises(UsageError, match="--gpu-access none for none"):
        go(tmp_path, engine(), c, gpu_access="none", gpus="1")
    with pytest.raises(NoGpuError, match="this host offers no GPU access mode"):
        go(tmp_path, engine(), c, mode=None, gpus="1")
    with pytest.raises(NoGpuError, match="lists no NVIDIA GPU"):
        go(tmp_path, engine(), c, host_gpus=(), gpus="1")
    assert not (tmp_path / "runs.jsonl").exists()  # refused before any check or container


def test_monitor_samples_the_selected_gpus_only(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class Recorded:
        available, why, interval = False, "fake", 1.0

        def __init__(self, **kw: Any) -> None:
            seen.append(kw)

        def __getattr__(self, name: str) -> Any:
            raise AttributeError(name)

    with pytest.raises(AttributeError):  # the fake stops the run as soon as it is used
        go(
            tmp_path,
            engine(),
            cert(gpus=(H100, T4)),
            monitor=True,
            monitor_factory=Recorded,
            gpus="device=1",
        )
    assert seen == [{"gpus": True, "indices": [1]}]


# --------------------------------------------------------------------------- the command line


def parsed(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[RunOptions, Any]:
    import envbuilder.cli.run_cmd as run_cmd

    seen: list[RunOptions] = []

    class Outcome:
        exit_code = 0

    def fake_run_image(options: RunOptions, **_kw: object) -> Outcome:
        seen.append(options)
        return Outcome()

    monkeypatch.setattr(run_cmd, "run_image", fake_run_image)
    monkeypatch.setattr(run_cmd, "find_certificates", lambda *_a: None)
    monkeypatch.setattr(run_cmd, "pull_if_missing", lambda _image, _engine: None)
    res = CliRunner().invoke(cli, ["run", *args])
    assert res.exit_code == 0, res.output
    return seen[0], res


def test_options_before_image_are_ours_and_after_it_the_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    before, res = parsed(["-t", "img:1", "python", "-V"], monkeypatch)
    assert (before.tty, before.command) == (True, ("python", "-V")) and "note" not in res.output
    # as docker: after IMAGE everything is the command's (an ENTRYPOINT image takes its flags so)
    after, res = parsed(["img:1", "-t", "python", "-V"], monkeypatch)
    assert (after.tty, after.command) == (False, ("-t", "python", "-V"))
    assert "envbuilder: note: '-t' after IMAGE is part of the command (as with docker run)" in res.output
    ep, res = parsed(["img:1", "--epochs", "3"], monkeypatch)
    assert ep.command == ("--epochs", "3") and "note" not in res.output
    bare, _ = parsed(["img:1"], monkeypatch)
    assert bare.command == ()


def test_grouped_short_flags_and_attached_values(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    opts, _ = parsed(["-it", "--rm", "-eA=1", "-vsrc:/dst", "-u0:0", "img:1", "bash"], monkeypatch)
    assert (opts.interactive, opts.tty, opts.env, opts.volumes, opts.user) == (
        True, True, ("A=1",), ("src:/dst",), "0:0",
    )  # fmt: skip
    assert opts.command == ("bash",)


def test_the_older_form_options_up_to_dashes_still_reads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    opts, _ = parsed(["img:1", "-v", "a:/b", "-it", "--gpus", "1", "--", "python", "-V"], monkeypatch)
    assert (opts.volumes, opts.interactive, opts.tty, opts.gpus) == (("a:/b",), True, True, "1")
    assert opts.command == ("python", "-V")
    # a word there that is not ours makes it all the command, as docker would read it
    cmd, _ = parsed(["img:1", "-v", "a:/b", "--epochs", "--", "x"], monkeypatch)
    assert (cmd.volumes, cmd.command) == ((), ("-v", "a:/b", "--epochs", "--", "x"))
    dashed, _ = parsed(["img:1", "--", "-t"], monkeypatch)
    assert dashed.command == ("-t",)


def test_the_new_options_reach_run_image(monkeypatch: pytest.MonkeyPatch) -> None:
    opts, _ = parsed(
        ["--rm", "-p", "8888:8888", "--publish", "80", "-u", "1000:1000", "--name", "nb", "--gpus",
         '"device=0,1"', "img:1"],
        monkeypatch,
    )  # fmt: skip
    assert (opts.publish, opts.user, opts.name, opts.gpus, opts.command) == (
        ("8888:8888", "80"), "1000:1000", "nb", '"device=0,1"', (),
    )  # fmt: skip


def test_cli_bad_gpus_and_unknown_options_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    import envbuilder.cli.run_cmd as run_cmd

    pulled: list[str] = []
    monkeypatch.setattr(run_cmd, "find_certificates", lambda *_a: None)
    monkeypatch.setattr(run_cmd, "pull_if_missing", lambda image, _engine: pulled.append(image))
    res = CliRunner().invoke(cli, ["run", "--gpus", "device=x", "localhost:5000/team/train:1"])
    assert res.exit_code == 2, res.output
    assert "envbuilder: error: --gpus 'device=x': 'x' is neither a GPU index nor a GPU UUID" in res.output
    assert "hint: write --gpus all" in res.output
    res = CliRunner().invoke(cli, ["run", "-p", "70000:80", "localhost:5000/team/train:1"])
    assert res.exit_code == 2 and "'70000' is not a port" in res.output
    assert pulled == []  # said before anything is pulled
    res = CliRunner().invoke(cli, ["run", "--bogus", "img:1"])
    assert res.exit_code == 2 and "No such option '--bogus'" in res.output


def test_docker_only_options_are_refused_with_another_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    for extra in (["--gpus", "1"], ["-p", "80:80"], ["-u", "0"], ["--name", "nb"]):
        res = CliRunner().invoke(cli, ["run", "--runtime", "apptainer", *extra, "job.sif", "true"])
        assert res.exit_code == 2, res.output
        assert "only apply to --runtime docker" in res.output


# --------------------------------------------------------------------------- set L (2026-12-06)


def test_the_first_n_gpus_are_the_lowest_indexes_whatever_order_the_probe_listed_them(tmp_path: Path) -> None:
    from envbuilder.runtime.gpu_selection import select_gpus

    report = HostReport(source="nvml", driver="570.86.15", cuda_driver="12.8", gpus=(T4, H100))
    got = select_gpus(parse_gpus("1"), report, root=tmp_path)
    assert got.gpus == (H100,) and got.indexes == ("0",)
    assert select_gpus(parse_gpus("device=1,0"), report, root=tmp_path).gpus == (H100, T4)


def test_the_toolkit_is_told_indexes_unless_every_selected_gpus_uuid_was_read() -> None:
    from dataclasses import replace

    from envbuilder.runtime.gpu_selection import GpuSelection

    assert GpuSelection(text="all", gpus=(H100, T4)).ids == (H100_UUID, T4_UUID)
    unread = replace(T4, uuid=None)
    assert GpuSelection(text="all", gpus=(H100, unread)).ids == ("0", "1")


def test_the_runs_driver_cuda_is_the_probes_reading_before_the_matrixs_fallback() -> None:
    from envbuilder.run.launch import run_host
    from envbuilder.runtime.base import AccessChoice

    choice = AccessChoice(name="toolkit", reason="the daemon has it", mode=TOOLKIT)
    read = HostReport(source="nvml", driver="570.86.15", cuda_driver="12.8", gpus=(H100,))
    assert run_host(read, choice, "auto", "12.4").cuda_driver == "12.8"
    unread = HostReport(source="proc", driver="570.86.15", cuda_driver=None)
    assert run_host(unread, choice, "auto", "12.4").cuda_driver == "12.4"


# --------------------------------------------------------------------------- --auto attest (2026-12-06)


@pytest.mark.parametrize(
    ("text", "count", "said"),
    [
        ("11", 11, None),  # the same first and last character, not a quote: kept whole
        ("'2'", 2, None),  # single quotes are taken off like double ones
        ("", None, "whole number from 1"),  # nothing: refused, never an IndexError
        ("\"all'", None, "whole number from 1"),  # mismatched quotes are kept, so refused
        ("'2\"", None, "whole number from 1"),
    ],
)
def test_gpus_takes_off_one_pair_of_matching_quotes_only(
    text: str, count: int | None, said: str | None
) -> None:
    if said is None:
        assert parse_gpus(text).count == count
    else:
        with pytest.raises(UsageError, match=said):
            parse_gpus(text)


def test_devices_mode_hands_in_the_node_of_every_selected_gpu_and_names_each_one_missing(
    tmp_path: Path,
) -> None:
    both = _spec_in(tmp_path, DEVICES, "2")  # the H100 (index 0) is /dev/nvidia1, the T4 /dev/nvidia0
    assert both.devices == (*CONTROL, "/dev/nvidia1", "/dev/nvidia0")
    root = two_gpu_host(tmp_path / "bare")
    (root / "dev" / "nvidia0").unlink()  # the T4's node, the second GPU selected
    from envbuilder.runtime.gpu_selection import select_gpus

    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H100, T4))
    with pytest.raises(NoGpuError, match=r"for GPU 1 \(Tesla T4\)$"):
        select_gpus(parse_gpus("2"), report, root=root).node_paths()
    (root / "dev" / "nvidia1").unlink()
    with pytest.raises(NoGpuError, match=r"for GPU 0 \(NVIDIA H100 80GB HBM3\), 1 \(Tesla T4\)$"):
        select_gpus(parse_gpus("2"), report, root=root).node_paths()


def test_one_gpu_named_by_its_index_and_by_its_uuid_is_refused_as_named_twice(tmp_path: Path) -> None:
    from envbuilder.runtime.gpu_selection import select_gpus

    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H100, T4))
    spec = parse_gpus(f"device=0,{H100_UUID.upper()}")  # two IDs to the parser, one GPU on the host
    with pytest.raises(UsageError, match="GPU 0 is named twice"):
        select_gpus(spec, report, root=tmp_path)


def test_gpus_reads_spaces_count_all_and_a_uuid_in_either_case_as_docker_does() -> None:
    assert parse_gpus(" 2 ").count == 2
    assert parse_gpus("count=all").all and parse_gpus("count=all").count is None
    assert parse_gpus("device=0 , 1").ids == ("0", "1")
    shouted = "GPU-" + T4_UUID.removeprefix("GPU-").upper()  # the same UUID, its hex digits in upper case
    with pytest.raises(UsageError, match=f"{T4_UUID.lower()} listed twice"):  # named as compared
        parse_gpus(f"device={T4_UUID},{shouted}")
    with pytest.raises(UsageError, match="whole number from 1"):  # the first `=` splits
        parse_gpus("count=device=1")


def test_gpus_listed_twice_are_named_in_order() -> None:
    eight = ",".join(str(i) for i in (7, 3, 5, 1, 6, 0, 4, 2))
    with pytest.raises(UsageError, match="0, 1, 2, 3, 4, 5, 6, 7 listed twice"):
        parse_gpus(f"device={eight},{eight}")


def test_a_selection_keeps_the_device_nodes_of_its_own_gpus_only(tmp_path: Path) -> None:
    from envbuilder.runtime.gpu_selection import select_gpus

    root = two_gpu_host(tmp_path / "host")
    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H100, T4))
    assert select_gpus(parse_gpus("device=0"), report, root=root).nodes == ((0, "/dev/nvidia1"),)
    assert select_gpus(parse_gpus(f"device={T4_UUID}"), report, root=root).nodes == ((1, "/dev/nvidia0"),)


def test_a_long_gpus_value_is_shown_in_its_first_80_characters() -> None:
    with pytest.raises(UsageError) as err:
        parse_gpus("12345678" * 12)
    assert f"--gpus {('12345678' * 10)!r}:" in err.value.message


def test_all_selects_every_gpu_in_index_order(tmp_path: Path) -> None:
    from envbuilder.runtime.gpu_selection import select_gpus

    report = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(T4, H100))
    assert select_gpus(parse_gpus("all"), report, root=tmp_path).gpus == (H100, T4)


def test_a_gpu_whose_uuid_was_not_read_is_still_selected_by_its_index(tmp_path: Path) -> None:
    from dataclasses import replace

    from envbuilder.runtime.gpu_selection import select_gpus

    unread = replace(T4, uuid=None)
    report = HostReport(source="proc", driver="580.159.04", cuda_driver=None, gpus=(H100, unread))
    assert select_gpus(parse_gpus("device=1"), report, root=tmp_path).gpus == (unread,)
    assert select_gpus(parse_gpus(f"device={H100_UUID}"), report, root=tmp_path).gpus == (H100,)


@pytest.mark.parametrize(
    "uuid",
    [
        "GPU-1111111-2222-3333-4444-555555555555",
        "GPU-111111111-2222-3333-4444-555555555555",
        "GPU-11111111-222-3333-4444-555555555555",
        "GPU-11111111-22222-3333-4444-555555555555",
        "GPU-11111111-2222-3333-555555555555",
        "GPU-11111111-2222-3333-4444-5555-555555555555",
        "GPU-11111111-2222-3333-4444-55555555555",
        "GPU-11111111-2222-3333-4444-5555555555555",
        "12345",
        "GPU-MIG-0",
    ],
)
def test_gpus_takes_only_nvmls_uuid_shape_and_an_index_of_at_most_four_digits(uuid: str) -> None:
    with pytest.raises(UsageError, match="neither a GPU index nor a GPU UUID"):
        parse_gpus(f"device={uuid}")


def test_gpus_strips_tabs_and_newlines_as_well_as_spaces() -> None:
    assert parse_gpus("\t2").count == 2
    assert parse_gpus("device=0,\t1\n").ids == ("0", "1")


# --------------------------------------------------------------------- --auto attest, eighth set (2026-12-06)


def test_each_gpus_refusal_names_the_value_as_given(tmp_path: Path) -> None:
    """Every refusal of select_gpus and node_paths starts with `--gpus VALUE:`, the value the user
    wrote, whichever of its forms (all, a count, a device list) was read."""
    from envbuilder.runtime.gpu_selection import select_gpus

    both = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=(H100, T4))
    none = HostReport(source="nvml", driver="580.159.04", cuda_driver="13.0", gpus=())
    with pytest.raises(NoGpuError) as no_gpu:
        select_gpus(parse_gpus("all"), none, root=tmp_path)
    assert no_gpu.value.message.startswith("--gpus all: the host probe lists no NVIDIA GPU")
    with pytest.raises(UsageError) as too_many:
        select_gpus(parse_gpus("3"), both, root=tmp_path)
    assert too_many.value.message == "--gpus 3: this host has 2 GPU(s)"
    with pytest.raises(UsageError) as lacking:
        select_gpus(parse_gpus("device=0,7"), both, root=tmp_path)
    assert lacking.value.message == "--gpus device=0,7: this host has no GPU 7"
    root = two_gpu_host(tmp_path / "host")
    (root / "dev" / "nvidia1").unlink()  # the H100's node
    with pytest.raises(NoGpuError) as no_node:
        select_gpus(parse_gpus("device=0"), both, root=root).node_paths()
    assert no_node.value.message.startswith("--gpus device=0: no /dev/nvidia device node found")


def test_every_id_of_a_device_list_is_read_by_itself(tmp_path: Path) -> None:
    """A MIG device after a whole GPU is refused as one (by its UUID or by GPU:instance); a UUID
    after an index is compared in lower case, so named twice in two cases it is refused."""
    for mig in ("MIG-11111111-2222-3333-4444-555555555555", "0:1"):
        with pytest.raises(UsageError, match="MIG devices are not supported"):
            parse_gpus(f"device=1,{mig}")
    shouted = "GPU-" + T4_UUID.removeprefix("GPU-").upper()
    with pytest.raises(UsageError, match=f"{T4_UUID.lower()} listed twice"):
        parse_gpus(f"device=0,{T4_UUID},{shouted}")


# --------------------------------------------------------------------------- the CUDA JIT cache


@pytest.mark.parametrize(
    ("opts", "mounted"),
    [
        ({}, True),
        ({"jit_cache": False}, False),
        ({"user": "4242:4242"}, False),
        ({"gpu_access": "none"}, False),
    ],
)
def test_a_gpu_job_of_a_declaring_image_gets_its_jit_cache_volume(
    tmp_path: Path, opts: dict[str, Any], mounted: bool
) -> None:
    """run hands training_container the choice (certify/jit_cache.py decides): the image's volume and
    CUDA_CACHE_PATH by default; none with --no-jit-cache, -u (the folder is the image user's) or no GPU."""
    from envbuilder.certify.jit_cache import CACHE_ENV, volume_name
    from envbuilder.engine import Volume
    from envbuilder.image.metadata import JIT_CACHE_DIR, LABEL_JIT_CACHE

    image = ImageInfo(
        id=IMAGE_ID, tags=("team/train:1",), repo_digests=(), labels={LABEL_JIT_CACHE: JIT_CACHE_DIR}
    )
    eng = FakeEngine(images={"team/train:1": image, IMAGE_ID: image})
    cpu = opts.get("gpu_access") == "none"
    go(tmp_path, eng, cert(gpus=() if cpu else (H100, T4)), force=cpu, **opts)
    (spec,) = eng.runs
    want = (Volume(name=volume_name(IMAGE_ID, "run"), target=JIT_CACHE_DIR),) if mounted else ()
    assert spec.volumes == want
    assert (spec.env.get(CACHE_ENV) == JIT_CACHE_DIR) is mounted
    assert spec.user == opts.get("user")
