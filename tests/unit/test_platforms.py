"""The platform axis: names, the probe, the facts of matrices/platforms.yaml and the resolver's
use of them, the CLI's --platform, and what render writes for an arm64 stack."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_host import FakeGpu, FakeNvml, FakeRunner

from envbuilder.cli import cli
from envbuilder.doctor.checks import DockerState, assess_host
from envbuilder.errors import MatrixError, UsageError
from envbuilder.host import HostReport, probe_host
from envbuilder.host.model import Host, HostGpu
from envbuilder.matrix import load_matrix
from envbuilder.matrix.model import Matrix
from envbuilder.matrix.platforms import platform_build
from envbuilder.platforms import machine_of, parse_platform, platform_of_machine
from envbuilder.resolve.gpus import gpu_from_match, lookup_gpu
from envbuilder.resolve.model import Request, Stack
from envbuilder.resolve.resolver import resolve
from envbuilder.resources import matrices_dir

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


# --------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    ("given", "platform"),
    [
        ("linux/amd64", "linux/amd64"),
        ("x86_64", "linux/amd64"),
        ("AMD64", "linux/amd64"),
        ("linux/arm64", "linux/arm64"),
        ("aarch64", "linux/arm64"),
        ("arm64", "linux/arm64"),
        ("linux/arm64/v8", "linux/arm64"),
    ],
)
def test_every_spelling_reads_as_dockers_name(given: str, platform: str) -> None:
    assert parse_platform(given) == platform


def test_an_unknown_platform_is_refused_with_the_two_known() -> None:
    with pytest.raises(UsageError) as err:
        parse_platform("riscv64")
    assert "riscv64" in err.value.message
    assert "linux/amd64 or linux/arm64" in (err.value.hint or "")
    assert platform_of_machine("ppc64le") is None


def test_the_package_lock_names_the_machine() -> None:
    assert machine_of("linux/arm64") == "aarch64"
    assert machine_of("linux/amd64") == "x86_64"


# --------------------------------------------------------------------------- probe and records


def test_the_probe_reads_the_machine_and_the_host_carries_its_platform() -> None:
    report = probe_host(nvml=FakeNvml([FakeGpu(cc=(9, 0))]), run=FakeRunner(), machine="aarch64")
    assert report.machine == "aarch64"
    assert report.to_dict()["machine"] == "aarch64"
    host = report.to_host()
    assert host.platform == "linux/arm64"
    assert Host.from_dict(host.to_dict()).platform == "linux/arm64"


def test_doctor_reports_the_platform_and_warns_on_one_without_facts() -> None:
    docker = DockerState(reachable=False, detail="no daemon")
    for machine, status, said in (("aarch64", "ok", "linux/arm64"), ("riscv64", "warn", "riscv64")):
        host = HostReport(source="none", driver=None, cuda_driver=None, machine=machine)
        report = assess_host(
            host=host, docker=docker, tools={}, modes=(), frameworks=(), matrix=None, python="3.12"
        )
        check = next(c for c in report.checks if c.name == "platform")
        assert (check.status, said in check.detail) == (status, True)


def test_a_stack_names_its_platform_and_an_amd64_stack_reads_as_before() -> None:
    matrix = load_matrix()
    res = resolve(
        matrix,
        Request(framework="torch", specifier="==2.15.*", platform="linux/arm64", cpu_only=True),
        Host(driver=None),
    )
    assert res.stack is not None
    doc = res.stack.to_dict()
    assert doc["platform"] == "linux/arm64"
    assert res.stack.id.endswith("-arm64")
    assert Stack.from_dict(doc).platform == "linux/arm64"
    amd = resolve(matrix, Request(framework="torch", specifier="==2.15.*", cpu_only=True), Host(driver=None))
    assert amd.stack is not None and "platform" not in amd.stack.to_dict()  # ids, labels, hashes unchanged
    assert Stack.from_dict(amd.stack.to_dict()).platform == "linux/amd64"
    with pytest.raises(ValueError, match="riscv64"):
        Stack.from_dict(doc | {"platform": "riscv64"})


# --------------------------------------------------------------------------- facts


def test_is_there_an_aarch64_cu124_torch_26_for_cp312_is_a_lookup() -> None:
    matrix = load_matrix()
    assert platform_build(matrix, "linux/arm64", "torch", "2.6.0", "cu124", "3.12") is None
    cu126 = platform_build(matrix, "linux/arm64", "torch", "2.6.0", "cu126", "3.12")
    assert cu126 is not None and cu126.sass == ("9.0",)
    assert platform_build(matrix, "linux/arm64", "torch", "2.5.1", "cu124") is None


def test_pypis_torch_215_aarch64_wheel_serves_thor_and_not_t4g() -> None:
    build = platform_build(load_matrix(), "linux/arm64", "torch", "2.15.0", "cu132")
    assert build is not None
    assert build.sass == ("8.0", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1")
    assert build.ptx == ()
    assert build.index_url is None and build.own_index  # PyPI
    # the row `matrix refresh` read from PyPI's aarch64 wheel (generated/arm64/torch.yaml)
    assert build.generated and build.source.startswith("generated/arm64/torch.yaml")
    assert len(build.wheels) == 1
    assert re.fullmatch(
        r"torch-2\.15\.0-cp3\d+-cp3\d+-manylinux_2_28_aarch64\.whl sha256:[0-9a-f]{64}", build.wheels[0]
    )


def test_an_arm64_resolution_uses_only_arm64_facts() -> None:
    matrix = load_matrix()
    res = resolve(
        matrix,
        Request(framework="torch", specifier=">=2.0", platform="linux/arm64"),
        Host(driver="580.95.05", gpus=()),
    )
    host = Host(driver="580.95.05", gpus=load_host_gpus(matrix, "GH200"))
    res = resolve(matrix, Request(framework="torch", specifier="", platform="linux/arm64"), host)
    assert res.stack is not None
    for s in (res.stack, *res.alternatives):
        build = platform_build(matrix, "linux/arm64", s.framework, s.version, s.variant)
        assert build is not None, s.id
        assert s.sass == build.sass and s.platform == "linux/arm64"
    old = [r for r in res.rejected if r.candidate.startswith("torch 2.5.1+cu124")]
    assert old and old[0].component == "platform" and "before 2.6" in old[0].reason


def test_a_gpu_of_arm64_hosts_on_amd64_is_refused_with_the_option() -> None:
    matrix = load_matrix()
    host = Host(driver="580.95.05", gpus=load_host_gpus(matrix, "GH200"))
    res = resolve(matrix, Request(framework="torch", specifier="", platform="linux/amd64"), host)
    assert res.stack is None
    (why,) = res.rejected
    assert why.component == "platform" and "--platform linux/arm64" in why.reason


def load_host_gpus(matrix: Matrix, name: str) -> tuple[HostGpu, ...]:
    return (gpu_from_match(matrix, lookup_gpu(matrix, name)),)


_ROW = '  - {{platform: {p}, framework: torch, versions: "==2.6.*", variant: {v}, sass: [], ptx: []{src}}}\n'


@pytest.mark.parametrize(
    ("row", "field"),
    [
        (_ROW.format(p="linux/arm64", v="cu999", src=", source: x"), "variant"),
        (_ROW.format(p="linux/arm64", v="cu126", src=""), "source"),
        (_ROW.format(p="linux/amd64", v="cu126", src=", source: x"), "platform"),
        (_ROW.format(p="linux/arm64", v="cu126", src=', wheels: ["torch.whl"], source: x'), "wheels"),
    ],
)
def test_a_malformed_platform_row_is_refused_naming_the_field(tmp_path: Path, row: str, field: str) -> None:
    root = tmp_path / "matrices"
    shutil.copytree(matrices_dir(), root)
    text = (root / "platforms.yaml").read_text(encoding="utf-8")
    (root / "platforms.yaml").write_text(text.replace("builds:\n", "builds:\n" + row, 1), encoding="utf-8")
    with pytest.raises(MatrixError) as err:
        load_matrix(root)
    assert "platforms.yaml" in err.value.message and field in err.value.message


# --------------------------------------------------------------------------- CLI and render


def test_cli_platform_is_refused_at_parse_time() -> None:
    code, _, err = run("resolve", "--platform", "riscv64", "--cpu")
    assert code == 2
    assert "envbuilder: error: --platform 'riscv64' is not a platform" in err
    assert "hint: give linux/amd64 or linux/arm64" in err


def test_cli_resolve_names_the_platform_and_the_json_carries_it() -> None:
    code, out, err = run("resolve", "--driver", "580.95.05", "--gpu", "GH200", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["request"]["platform"] == "linux/arm64"
    assert doc["stack"]["platform"] == "linux/arm64"
    code, out, err = run("resolve", "--driver", "580.95.05", "--gpu", "GH200")
    assert out.startswith("host: driver 580.95.05, NVIDIA GH200 (9.0), linux/arm64 [given]")
    assert "warning: resolving for linux/arm64: NVIDIA GH200 is found only in linux/arm64 hosts" in err


def test_render_pins_the_base_of_an_arm64_stack_and_says_how_to_regenerate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, err = run(
        "render", "images/pytorch-train.yaml", "--driver", "580.95.05", "--gpu", "GH200", "--print"
    )
    assert code == 0, err
    assert "\nFROM --platform=linux/arm64 python:" in out
    assert "--platform linux/arm64" in out.splitlines()[1]  # the Regenerate: line
    assert '\\"platform\\":\\"linux/arm64\\"' in out  # the stack label
    code, out, _ = run(
        "render", "images/pytorch-train.yaml", "--driver", "580.95.05", "--gpu", "H100", "--print"
    )
    assert code == 0 and "\nFROM python:" in out and "--platform" not in out


def test_lock_also_platform_takes_any_spelling() -> None:
    from envbuilder.cli.lock_cmd import check_also_platforms, lock

    param = next(p for p in lock.params if p.name == "also")
    assert check_also_platforms(None, param, ("linux/arm64", "x86_64")) == ("aarch64", "x86_64")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        check_also_platforms(None, param, ("s390x",))  # type: ignore[arg-type]


def test_a_probed_host_resolves_for_its_own_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    """No --platform and nothing given: the probed machine's platform (uname -m) is the default."""
    import envbuilder.host

    report = HostReport(source="none", driver=None, cuda_driver=None, machine="aarch64")
    monkeypatch.setattr(envbuilder.host, "probe_host", lambda: report)
    code, out, err = run("resolve", "--cpu", "--framework", "torch==2.13.*", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["host"]["platform"] == "linux/arm64"
    assert doc["stack"]["platform"] == "linux/arm64" and doc["stack"]["id"].endswith("-arm64")
    code, out, err = run(
        "resolve", "--cpu", "--framework", "torch==2.13.*", "--platform", "linux/amd64", "--json"
    )
    assert code == 0, err
    assert "platform" not in json.loads(out)["stack"]  # --platform wins over the machine's


@pytest.mark.parametrize("version", ["2.8.*", "2.9.*", "2.10.*"])
def test_an_arm64_cuda_stack_never_installs_pypis_cpu_only_aarch64_torch(version: str) -> None:
    """Through 2.10 PyPI's aarch64 torch is a CPU build: a CUDA stack for arm64 names its index."""
    matrix = load_matrix()
    host = Host(driver="580.95.05", gpus=load_host_gpus(matrix, "GH200"))
    res = resolve(matrix, Request(framework="torch", specifier=f"=={version}", platform="linux/arm64"), host)
    assert res.stack is not None
    for s in (res.stack, *res.alternatives):
        assert s.index_url is not None and s.index_url.startswith("https://download.pytorch.org/whl/cu"), s.id


def test_a_generated_rows_python_range_is_not_widened_by_a_curated_row() -> None:
    """torch 2.15.0's aarch64 wheels start at cp311 (generated/arm64/torch.yaml); platforms.yaml's
    `==2.15.*` cu132 row gives no range, but it does not stand in for a CPython the wheels lack."""
    matrix = load_matrix()
    built = platform_build(matrix, "linux/arm64", "torch", "2.15.0", "cu132", "3.12")
    assert built is not None and built.generated and built.python == ">=3.11,<3.16"
    assert platform_build(matrix, "linux/arm64", "torch", "2.15.0", "cu132", "3.10") is None


def test_jax_on_arm64_takes_x86_64s_lists_and_says_so_unless_an_aarch64_wheel_checked_them(
    tmp_path: Path,
) -> None:
    matrix = load_matrix()
    host = Host(driver="580.95.05", gpus=load_host_gpus(matrix, "GH200"))
    read = resolve(matrix, Request(framework="jax", specifier="==0.11.2", platform="linux/arm64"), host)
    also = resolve(matrix, Request(framework="jax", specifier="==0.8.*", platform="linux/arm64"), host)
    assert read.stack is not None and also.stack is not None
    # every release with an aarch64 plugin wheel is read (generated/arm64/jax.yaml)
    assert not any("were not read" in n for n in (*read.stack.notes, *also.stack.notes))
    built = platform_build(matrix, "linux/arm64", "jax", also.stack.version, also.stack.variant)
    assert built is not None and built.generated and all("aarch64" in w for w in built.wheels)
    # without the generated rows, platforms.yaml's `archs_from: linux/amd64` lends x86_64's lists
    folder = tmp_path / "m"
    shutil.copytree(matrices_dir(), folder)
    (folder / "generated" / "arm64" / "jax.yaml").unlink()
    curated = load_matrix(folder)
    lent = resolve(curated, Request(framework="jax", specifier="==0.8.*", platform="linux/arm64"), host)
    assert lent.stack is not None and any("were not read" in n for n in lent.stack.notes)
    tf = resolve(matrix, Request(framework="tensorflow", specifier="", platform="linux/arm64"), host)
    assert tf.stack is None and {r.component for r in tf.rejected} == {"platform"}
    assert "tensorflow/issues/121157" in tf.rejected[0].reason


def test_a_jax_release_without_an_aarch64_plugin_wheel_is_refused_though_a_curated_row_covers_it() -> None:
    """PyPI has no aarch64 jax-cuda12-plugin 0.4.26 (nor 0.4.38): the refresh read the listing
    (generated/arm64/jax.yaml `missing`), which wins over platforms.yaml's `>=0.4.26` row."""
    matrix = load_matrix()
    assert platform_build(matrix, "linux/arm64", "jax", "0.4.30", "cuda12") is not None
    assert platform_build(matrix, "linux/arm64", "jax", "0.4.26", "cuda12") is None
    host = Host(driver="580.95.05", gpus=load_host_gpus(matrix, "GH200"))
    res = resolve(matrix, Request(framework="jax", specifier="==0.4.26", platform="linux/arm64"), host)
    assert res.stack is None
    assert any(
        r.component == "platform" and "jax-cuda12-plugin 0.4.26 has no Linux aarch64 wheel" in r.reason
        for r in res.rejected
    ), [r.reason for r in res.rejected]


def test_matrix_list_platforms_shows_each_build_and_where_its_archs_come_from() -> None:
    code, out, _ = run("matrix", "list", "platforms", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["file"] == "platforms.yaml"
    pypi_215 = [
        i
        for i in doc["items"]
        if i["framework"] == "torch" and i["versions"] == "==2.15.*" and i["variant"] == "cu132"
    ]
    assert len(pypi_215) == 1 and pypi_215[0]["wheels"][0].startswith(
        "torch-2.15.0-cp312-cp312-manylinux_2_28_aarch64.whl"
    )
    code, out, _ = run("matrix", "list", "platforms")
    assert code == 0 and "1 wheel(s) read" in out and "(linux/amd64's)" in out


def test_matrix_check_reads_and_counts_platforms_yaml() -> None:
    code, out, _ = run("matrix", "check", "--json")
    assert code == 0
    counts = json.loads(out)["counts"]["platforms"]
    assert counts["builds"] >= 15 and counts["gpus"] >= 6
    # the rows read from PyPI's aarch64 wheels, and where a curated row says otherwise
    assert counts["generated_builds"] >= 50
    assert any(
        d.startswith("jax 0.4.26 cuda12 linux/arm64: platforms.yaml") for d in counts["curated_vs_wheel"]
    )
