"""The CDI spec writer (`envbuilder gpu cdi-spec`): what it finds on a fake driver host (the H200
test machine's layout), that every spec it writes validates against the real CDI JSON schema
(vendored in tests/data/cdi-schema), the oldest cdiVersion rule, atomic writes, the CLI's outputs
and exit codes, and reading a spec back (stale after a driver update)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from fake_host import FakeRunner, driver_tree
from referencing import Registry
from referencing.jsonschema import DRAFT7

from envbuilder.cli import cli
from envbuilder.cli.gpu_cmd import GpuInputs
from envbuilder.errors import NoGpuError, UsageError
from envbuilder.host import GpuInfo, HostReport
from envbuilder.host.cdi import (
    build_cdi_spec,
    check_spec_file,
    minimum_cdi_version,
    require_files,
    write_cdi_spec,
)
from envbuilder.host.driver_files import DriverFiles, find_driver_files, find_programs, ldconfig_entries

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data" / "cdi-schema"
UUIDS = ("GPU-3f1c9e0a-7b2d-4c5e-9a81-0d6f2b4e8c17", "GPU-8a2b7c6d-1e0f-4a3b-9c8d-7e6f5a4b3c2d")
LIB = "/usr/lib/x86_64-linux-gnu"


def validator() -> jsonschema.Draft7Validator:
    """The CDI schema with its `defs.json#/...` references resolved from the vendored folder."""
    defs = json.loads((SCHEMA_DIR / "defs.json").read_text())
    schema = json.loads((SCHEMA_DIR / "schema.json").read_text())
    registry: Registry[Any] = Registry().with_resource("defs.json", DRAFT7.create_resource(defs))
    return jsonschema.Draft7Validator(schema, registry=registry)


def report(n: int = 1, driver: str | None = "580.159.04") -> HostReport:
    gpus = tuple(
        GpuInfo(index=i, name="NVIDIA H200", uuid=UUIDS[i], cc="9.0", brand="nvidia") for i in range(n)
    )
    return HostReport(source="nvml", driver=driver, cuda_driver="13.0", gpus=gpus)


def which(name: str) -> str | None:
    return "ldconfig" if name == "ldconfig" else None


def files_for(tmp: Path, n: int = 1, **kw: Any) -> DriverFiles:
    tree = driver_tree(tmp, uuids=UUIDS[:n], **kw)
    got = find_driver_files(
        report(n), run=tree.ldconfig, which=which, env={"PATH": "/usr/bin"}, root=tmp, machine="x86_64"
    )
    assert isinstance(got, DriverFiles), got
    return got


# --------------------------------------------------------------------------- what is found


def test_finds_the_driver_libraries_by_version_suffix_only(tmp_path: Path) -> None:
    files = files_for(tmp_path)
    libs = {Path(lib.path).name: lib.names for lib in files.libraries}
    assert sorted(libs) == sorted(
        f"{stem}.so.580.159.04"
        for stem in (
            "libcuda",
            "libnvidia-ml",
            "libnvidia-ptxjitcompiler",
            "libnvidia-nvvm",
            "libcudadebugger",
            "libGLX_nvidia",
        )
    )
    assert libs["libcuda.so.580.159.04"] == ("libcuda.so", "libcuda.so.1", "libcuda.so.580.159.04")
    paths = [lib.path for lib in files.libraries]
    assert all(p.startswith("/usr/local/nvidia/lib64/") for p in paths)  # not the i386 libcuda
    assert not any("wayland" in p or "libz" in p for p in paths)


def test_nvidia_smi_is_the_elf_binary_not_the_wrapper_script(tmp_path: Path) -> None:
    files = files_for(tmp_path)
    assert dict(files.programs)["nvidia-smi"] == "/usr/local/nvidia/bin/nvidia-smi"
    # Without the driver's lib folder to look beside, and only a wrapper on PATH: not found.
    (tmp_path / "usr/local/nvidia/bin/nvidia-smi").unlink()
    assert find_programs(("nvidia-smi",), env={"PATH": "/usr/bin"}, root=tmp_path) == ()


def test_gpu_nodes_follow_the_device_minor_not_the_index(tmp_path: Path) -> None:
    files = files_for(tmp_path, n=2, minors=[1, 0])
    assert [(g.index, g.uuid, g.path) for g in files.gpus] == [
        (0, UUIDS[0], "/dev/nvidia1"),
        (1, UUIDS[1], "/dev/nvidia0"),
    ]
    assert files.notes == ()


def test_without_proc_minors_the_nodes_are_assumed_in_order_and_said_so(tmp_path: Path) -> None:
    files = files_for(tmp_path, n=2, proc_gpus=False)
    assert [g.path for g in files.gpus] == ["/dev/nvidia0", "/dev/nvidia1"]
    assert len(files.notes) == 2 and "assumed /dev/nvidia0" in files.notes[0]


def test_control_nodes_firmware_and_ipc(tmp_path: Path) -> None:
    files = files_for(tmp_path)
    assert files.control_nodes == ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
    assert files.firmware == (
        "/lib/firmware/nvidia/580.159.04/gsp_ga10x.bin",
        "/lib/firmware/nvidia/580.159.04/gsp_tu10x.bin",
    )
    assert files.ipc == ("/var/run/nvidia-persistenced/socket",)


def test_ldconfig_entries_parse_names_flags_and_paths(tmp_path: Path) -> None:
    tree = driver_tree(tmp_path)
    entries = ldconfig_entries(run=tree.ldconfig, which=which, root=tmp_path)
    assert entries[0].name == "libcuda.so.1" and entries[0].flags == "libc6,x86-64"
    assert entries[-1].flags == "libc6" and entries[-1].path == "/usr/lib/i386-linux-gnu/libcuda.so.1"
    assert ldconfig_entries(run=FakeRunner(), which=lambda _n: None, root=tmp_path) == ()


@pytest.mark.parametrize(
    ("driver", "gpus", "said"),
    [
        (None, 1, "no NVIDIA driver found"),
        ("580.159.04", 0, "no GPU device node"),
        ("575.51.03", 1, "no library in the ldconfig cache"),  # the cache holds another driver's files
    ],
)
def test_why_no_spec_can_be_written(tmp_path: Path, driver: str | None, gpus: int, said: str) -> None:
    tree = driver_tree(tmp_path)
    got = find_driver_files(
        report(gpus, driver=driver), run=tree.ldconfig, which=which, env={}, root=tmp_path
    )
    assert isinstance(got, str) and said in got
    with pytest.raises(NoGpuError, match="cannot write a CDI spec"):
        require_files(got)


# --------------------------------------------------------------------------- the spec


def test_spec_validates_against_the_cdi_schema_and_names_every_device(tmp_path: Path) -> None:
    files = files_for(tmp_path, n=2)
    doc = build_cdi_spec(files, root=Path("/"), machine="x86_64").doc
    validator().validate(doc)
    assert doc["kind"] == "nvidia.com/gpu" and doc["cdiVersion"] == "0.5.0"
    assert [d["name"] for d in doc["devices"]] == ["0", UUIDS[0], "1", UUIDS[1], "all"]
    assert doc["devices"][-1]["containerEdits"]["deviceNodes"] == [
        {"path": "/dev/nvidia0"},
        {"path": "/dev/nvidia1"},
    ]
    edits = doc["containerEdits"]
    assert edits["deviceNodes"] == [
        {"path": p} for p in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools")
    ]
    assert edits["env"] == ["NVIDIA_VISIBLE_DEVICES=void", f"TRITON_LIBCUDA_PATH={LIB}"]
    mounts = {m["containerPath"]: m["hostPath"] for m in edits["mounts"]}
    real = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
    for name in ("libcuda.so.580.159.04", "libcuda.so.1", "libcuda.so"):
        assert mounts[f"{LIB}/{name}"] == real  # every name the loader and -lcuda look for
    assert mounts["/usr/bin/nvidia-smi"] == "/usr/local/nvidia/bin/nvidia-smi"
    assert mounts["/var/run/nvidia-persistenced/socket"] == "/var/run/nvidia-persistenced/socket"
    assert all(m["options"] == ["ro", "nosuid", "nodev", "rbind", "rprivate"] for m in edits["mounts"])


def test_schema_validation_can_fail() -> None:
    """The validator is live: documents the schema forbids are refused."""
    good = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0", "containerEdits": {}}]}
    validator().validate(good)
    for broken in (
        {k: v for k, v in good.items() if k != "devices"},
        {**good, "devices": [{"name": "0"}]},
        {**good, "containerEdits": {"mounts": [{"hostPath": "/x"}]}},
        {**good, "containerEdits": {"deviceNodes": [{"path": "/dev/x", "uid": -1}]}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validator().validate(broken)


def test_a_driver_root_gives_host_paths_and_still_validates(tmp_path: Path) -> None:
    files = files_for(tmp_path)
    doc = build_cdi_spec(files, root=tmp_path, machine="x86_64").doc
    validator().validate(doc)
    node = doc["devices"][0]["containerEdits"]["deviceNodes"][0]
    assert node == {"path": "/dev/nvidia0", "hostPath": f"{tmp_path}/dev/nvidia0"}
    assert all(Path(m["hostPath"]).exists() for m in doc["containerEdits"]["mounts"])
    assert doc["cdiVersion"] == "0.5.0"


def test_aarch64_mounts_into_its_own_multiarch_folder(tmp_path: Path) -> None:
    files = files_for(tmp_path)
    doc = build_cdi_spec(files, machine="aarch64").doc
    assert any(
        m["containerPath"] == "/usr/lib/aarch64-linux-gnu/libcuda.so.1"
        for m in doc["containerEdits"]["mounts"]
    )


def test_minimum_cdi_version_follows_the_features_used() -> None:
    base: dict[str, Any] = {"kind": "nvidia.com/gpu", "devices": [{"name": "all", "containerEdits": {}}]}
    assert minimum_cdi_version(base) == "0.3.0"
    typed = copy.deepcopy(base)
    typed["containerEdits"] = {"mounts": [{"hostPath": "/a", "containerPath": "/a", "type": "bind"}]}
    assert minimum_cdi_version(typed) == "0.4.0"
    assert minimum_cdi_version({**base, "devices": [{"name": "0"}]}) == "0.5.0"
    host_path = copy.deepcopy(base)
    host_path["devices"][0]["containerEdits"] = {"deviceNodes": [{"path": "/dev/a", "hostPath": "/x/dev/a"}]}
    assert minimum_cdi_version(host_path) == "0.5.0"
    assert minimum_cdi_version({**base, "annotations": {"a": "b"}}) == "0.6.0"
    assert minimum_cdi_version({**base, "kind": "nvidia.com/gpu.mig"}) == "0.6.0"


# --------------------------------------------------------------------------- writing


def test_write_yaml_and_json_round_trip(tmp_path: Path) -> None:
    spec = build_cdi_spec(files_for(tmp_path / "host"), machine="x86_64")
    out = tmp_path / "etc/cdi/nvidia.yaml"
    write_cdi_spec(spec, out)
    text = out.read_text()
    assert text.startswith("# CDI spec for nvidia.com/gpu, written by `envbuilder gpu cdi-spec`")
    assert "&id" not in text and "*id" not in text  # no YAML aliases for runtimes to trip on
    assert yaml.safe_load(text) == spec.doc
    write_cdi_spec(spec, tmp_path / "nvidia.json")
    assert json.loads((tmp_path / "nvidia.json").read_text()) == spec.doc
    assert sorted(p.name for p in out.parent.iterdir()) == ["nvidia.yaml"]  # no temp file left


def test_write_refuses_other_suffixes_and_unwritable_places(tmp_path: Path) -> None:
    spec = build_cdi_spec(files_for(tmp_path / "host"), machine="x86_64")
    with pytest.raises(UsageError, match=r"must end in \.yaml, \.yml or \.json"):
        write_cdi_spec(spec, tmp_path / "nvidia.txt")
    blocker = tmp_path / "file"
    blocker.write_text("old")
    with pytest.raises(UsageError, match="cannot write"):
        write_cdi_spec(spec, blocker / "nvidia.yaml")
    assert blocker.read_text() == "old"


def test_a_failed_write_leaves_the_old_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = build_cdi_spec(files_for(tmp_path / "host"), machine="x86_64")
    out = tmp_path / "nvidia.yaml"
    out.write_text("old spec\n")

    def boom(self: Path, target: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", boom)
    with pytest.raises(UsageError, match="No space left on device"):
        write_cdi_spec(spec, out)
    assert out.read_text() == "old spec\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# --------------------------------------------------------------------------- reading back


def test_check_spec_file_lists_what_a_driver_update_removed(tmp_path: Path) -> None:
    files = files_for(tmp_path)
    write_cdi_spec(build_cdi_spec(files, machine="x86_64"), tmp_path / "etc/cdi/nvidia.yaml")
    fresh = check_spec_file("/etc/cdi/nvidia.yaml", tmp_path)
    assert fresh.error is None and fresh.missing == () and fresh.devices == ("0", UUIDS[0], "all")
    (tmp_path / "usr/local/nvidia/lib64/libcuda.so.580.159.04").unlink()
    stale = check_spec_file("/etc/cdi/nvidia.yaml", tmp_path)
    assert stale.missing == ("/usr/local/nvidia/lib64/libcuda.so.580.159.04",)
    (tmp_path / "etc/cdi/bad.yaml").write_text("kind: [unclosed\n")
    assert "unreadable" in str(check_spec_file("/etc/cdi/bad.yaml", tmp_path).error)


# --------------------------------------------------------------------------- the CLI


def inputs(tmp: Path, n: int = 1, driver: str | None = "580.159.04") -> GpuInputs:
    tree = driver_tree(tmp / "host", uuids=UUIDS[:n])
    return GpuInputs(
        probe=lambda: report(n, driver=driver),
        run=tree.ldconfig,
        which=which,
        env={},
        root=tree.root,
        machine="x86_64",
    )


def test_cli_prints_the_spec_to_stdout(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["gpu", "cdi-spec"], obj=inputs(tmp_path))
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(res.stdout)
    validator().validate(doc)
    assert [d["name"] for d in doc["devices"]] == ["0", UUIDS[0], "all"]


def test_cli_writes_the_file_and_says_so_or_answers_json(tmp_path: Path) -> None:
    out = tmp_path / "cdi/nvidia.yaml"
    res = CliRunner().invoke(cli, ["gpu", "cdi-spec", "--out", str(out)], obj=inputs(tmp_path))
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(f"wrote {out}: 3 devices (0, {UUIDS[0]}, all), ")
    validator().validate(yaml.safe_load(out.read_text()))
    res = CliRunner().invoke(
        cli, ["gpu", "cdi-spec", "--out", str(out), "--json"], obj=inputs(tmp_path / "b", n=2)
    )
    doc = json.loads(res.stdout)
    assert doc["path"] == str(out) and doc["devices"] == ["0", UUIDS[0], "1", UUIDS[1], "all"]
    assert doc["spec"] == yaml.safe_load(out.read_text()) and doc["cdi_version"] == "0.5.0"


def test_cli_without_a_driver_exits_5_with_one_error_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        cli, ["gpu", "cdi-spec", "--out", str(tmp_path / "x.yaml")], obj=inputs(tmp_path, driver=None)
    )
    assert res.exit_code == 5
    assert res.stderr.splitlines()[0].startswith(
        "envbuilder: error: cannot write a CDI spec: no NVIDIA driver found"
    )
    assert res.stderr.splitlines()[1].startswith("hint: ")
    assert not (tmp_path / "x.yaml").exists()


def test_cli_unwritable_out_exits_2(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    res = CliRunner().invoke(
        cli, ["gpu", "cdi-spec", "--out", str(tmp_path / "f/nvidia.yaml")], obj=inputs(tmp_path)
    )
    assert res.exit_code == 2 and "envbuilder: error: cannot write" in res.stderr
