"""`matrix refresh` offline: wheels read over real HTTP range requests from a loopback server (and
from one that ignores ranges), members checked against RECORD, generated rows from a wheelhouse of
wheels carrying real device code, laid over the curated matrix, cached by sha256."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from wheel_factory import DATA, make_wheel, serve

from envbuilder.cli import cli
from envbuilder.errors import PackageIndexError
from envbuilder.matrix import load_matrix
from envbuilder.matrix.index import IndexFile, SimpleIndex, Wheelhouse
from envbuilder.matrix.platforms import disagreements, platform_build
from envbuilder.matrix.rederive import check_generated
from envbuilder.matrix.refresh import python_range, refresh_matrix, write_result
from envbuilder.matrix.wheel import WheelReader
from envbuilder.resources import matrices_dir

TORCH_SO = (DATA / "torch-2.15.0-libtorch_nvshmem.so").read_bytes()
TORCH_DIST = (
    'cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"',
    'nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"',
    'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"',
)


def _torch_wheel(folder: Path, version: str, cp: str = "cp312") -> Path:
    return make_wheel(
        folder,
        f"torch-{version}-{cp}-{cp}-manylinux_2_28_x86_64.whl",
        requires_python=">=3.11",
        requires_dist=TORCH_DIST,
        members={"torch/lib/libtorch_cuda.so": TORCH_SO, "torch/__init__.py": b""},
    )


@pytest.fixture
def matrix_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "matrices"
    shutil.copytree(matrices_dir(), dest)
    shutil.rmtree(dest / "generated", ignore_errors=True)
    return dest


def test_range_reads_fetch_only_the_members_needed(tmp_path: Path) -> None:
    filler = os.urandom(4 << 20)  # incompressible: the wheel is mostly this member
    wheel = make_wheel(
        tmp_path,
        "jax_cuda13_plugin-0.11.2-cp312-cp312-manylinux_2_27_x86_64.whl",
        members={"big/filler.bin": filler, "jax_cuda13_plugin/_prng.so": TORCH_SO[:0] or b"x" * 10},
    )
    with serve(tmp_path) as (base, ranges):
        with WheelReader(f"{base}/{wheel.name}", wheel.name) as w:
            assert w.metadata().name == "jax_cuda13_plugin"
            with w.extracted("jax_cuda13_plugin/_prng.so", tmp_path / "x") as path:
                assert path.read_bytes() == b"x" * 10
            assert w.transfer.ranges
            assert w.transfer.fetched < wheel.stat().st_size / 4
        assert ranges and all(r.startswith("bytes=") for r in ranges)


def test_a_server_without_ranges_gets_the_whole_wheel_once(tmp_path: Path) -> None:
    wheel = _torch_wheel(tmp_path, "2.15.0")
    with serve(tmp_path, ranges=False) as (base, _seen), WheelReader(f"{base}/{wheel.name}", wheel.name) as w:
        with w.extracted("torch/lib/libtorch_cuda.so", tmp_path / "x") as path:
            assert path.read_bytes() == TORCH_SO
        assert not w.transfer.ranges
        assert w.transfer.fetched == wheel.stat().st_size


def test_a_member_that_does_not_match_record_is_refused(tmp_path: Path) -> None:
    wheel = _torch_wheel(tmp_path, "2.15.0")
    bad = tmp_path / "bad"
    bad.mkdir()
    import zipfile

    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(bad / wheel.name, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("libtorch_cuda.so"):
                data = data[:100] + bytes([data[100] ^ 1]) + data[101:]  # RECORD's sha256 no longer holds
            dst.writestr(info, data)
    with WheelReader((bad / wheel.name).as_uri(), wheel.name) as w:
        extracted = w.extracted("torch/lib/libtorch_cuda.so", tmp_path / "x")
        with pytest.raises(PackageIndexError, match="RECORD"), extracted:
            pass
    assert not list((tmp_path / "x").glob("*")), "no temporary file is left behind"


def test_simple_index_links_carry_their_sha256(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    wheel = _torch_wheel(tmp_path / "files", "2.15.0")
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (tmp_path / "simple" / "torch").mkdir(parents=True)
    (tmp_path / "simple" / "torch" / "index.html").write_text(
        f'<a href="../../files/{wheel.name}#sha256={sha}" data-requires-python="&gt;=3.11">{wheel.name}</a>'
    )
    with serve(tmp_path) as (base, _seen):
        files = SimpleIndex(f"{base}/simple").files("torch")
        assert SimpleIndex(f"{base}/simple").files("no-such-project") == []
    assert [(f.filename, f.sha256, f.requires_python) for f in files] == [(wheel.name, sha, ">=3.11")]
    assert files[0].url == f"{base}/files/{wheel.name}"


def test_python_range_comes_from_the_cpython_wheels() -> None:
    files = [
        IndexFile(filename=f"torch-2.15.0-cp3{m}-cp3{m}-manylinux_2_28_x86_64.whl", url="", sha256="0")
        for m in (11, 12, 15)
    ] + [IndexFile(filename="torch-2.15.0-cp313-cp313t-manylinux_2_28_x86_64.whl", url="", sha256="0")]
    assert python_range(files, ">=3.11") == ">=3.11,<3.16"
    assert python_range([], ">=3.10") == ">=3.10"


def test_refresh_writes_rows_from_the_wheels_and_the_matrix_takes_them(
    matrix_copy: Path, tmp_path: Path
) -> None:
    house = tmp_path / "house"
    house.mkdir()
    _torch_wheel(house, "2.15.0", "cp311")
    w = _torch_wheel(house, "2.15.0", "cp312")
    _torch_wheel(house, "2.16.0", "cp312")  # newer than the curated file: a new release
    sha = hashlib.sha256(w.read_bytes()).hexdigest()
    before = load_matrix(matrix_copy)
    cache = tmp_path / "cache"
    result = refresh_matrix(
        before, matrix_copy, Wheelhouse(house), frameworks=("torch",), cache=cache, today="2026-12-01"
    )
    assert result.report.scanned == 2 and result.report.new_releases == ["torch 2.16.0"]
    assert "torch 2.0.0: not on the index" in result.report.skipped
    assert "+  - name: cu132" in result.diff()
    write_result(result, matrix_copy)
    gen = yaml.safe_load((matrix_copy / "generated" / "torch.yaml").read_text())
    row = next(r for r in gen["releases"] if r["version"] == "2.15.0")
    assert row["python"] == ">=3.11,<3.13"  # the two CPython wheels in this wheelhouse
    v = row["variants"][0]
    assert (v["name"], v["cuda"], v["cudnn"], v["nccl"]) == ("cu132", "13.2", "9.26.0.51", "2.30.7")
    assert (
        v["sass"] == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"] and v["ptx"] == [] and v["ptx_isa"] is None
    )
    assert v["wheels"] == [{"file": w.name, "sha256": sha}]

    after = load_matrix(matrix_copy)
    torch = next(f for f in after.frameworks if f.name == "torch")
    rel = next(r for r in torch.releases if r.version == "2.15.0")
    cu132 = next(x for x in rel.variants if x.name == "cu132")
    assert cu132.ptx == () and cu132.arch_source == f"{w.name} sha256:{sha}"
    cu130 = next(x for x in rel.variants if x.name == "cu130")
    assert cu130.arch_source is None, "a variant no wheel was read for stays curated"
    new = next(r for r in torch.releases if r.version == "2.16.0")
    assert [x.name for x in new.variants] == ["cu132"] and new.variants[0].default
    assert new.variants[0].index_url == "https://download.pytorch.org/whl/cu132"

    again = refresh_matrix(
        after, matrix_copy, Wheelhouse(house), frameworks=("torch",), cache=cache, today="2026-12-01"
    )
    assert again.report.scanned == 0 and again.report.cached == 2 and again.changed == []


def test_cli_refresh_dry_run_and_a_missing_wheelhouse(matrix_copy: Path, tmp_path: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    _torch_wheel(house, "2.15.0")
    runner = CliRunner()
    args = [
        "matrix",
        "refresh",
        "--dir",
        str(matrix_copy),
        "--framework",
        "torch",
        "--cache",
        str(tmp_path / "c"),
    ]
    res = runner.invoke(cli, [*args, "--wheelhouse", str(house), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "+++ b/matrices/generated/torch.yaml" in res.stdout
    assert not (matrix_copy / "generated" / "torch.yaml").exists(), "--dry-run writes nothing"
    res = runner.invoke(cli, [*args, "--wheelhouse", str(tmp_path / "nowhere")])
    assert res.exit_code == 21
    assert "envbuilder: error: wheelhouse" in res.stderr and "hint:" in res.stderr


def test_refresh_reads_the_aarch64_wheels_into_their_own_file_and_they_win(
    matrix_copy: Path, tmp_path: Path
) -> None:
    house = tmp_path / "house"
    house.mkdir()
    x86 = _torch_wheel(house, "2.15.0")
    # PyPI's aarch64 torch through 2.10: a CPU build (its nvidia-* pins are for x86_64 only)
    cpu = make_wheel(
        house,
        "torch-2.10.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        requires_python=">=3.10",
        requires_dist=(
            'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',
        ),
        members={"torch/__init__.py": b""},
    )
    arm = make_wheel(
        house,
        "torch-2.15.0-cp313-cp313-manylinux_2_28_aarch64.whl",
        requires_python=">=3.11",
        requires_dist=TORCH_DIST,
        # not byte-identical to the x86_64 wheel (scans are cached by sha256)
        members={"torch/lib/libtorch_cuda.so": TORCH_SO, "torch/__init__.py": b"# aarch64"},
    )
    cache = tmp_path / "cache"
    result = refresh_matrix(
        load_matrix(matrix_copy),
        matrix_copy,
        Wheelhouse(house),
        frameworks=("torch",),
        platforms=("linux/amd64", "linux/arm64"),
        cache=cache,
        today="2026-12-05",
    )
    write_result(result, matrix_copy)
    amd64 = yaml.safe_load((matrix_copy / "generated" / "torch.yaml").read_text())
    assert [r["variants"][0]["wheels"][0]["file"] for r in amd64["releases"]] == [x86.name]
    gen = yaml.safe_load((matrix_copy / "generated" / "arm64" / "torch.yaml").read_text())
    assert gen["platform"] == "linux/arm64"
    rows = {r["version"]: (r["python"], r["variants"][0]) for r in gen["releases"]}
    assert set(rows) == {"2.10.0", "2.15.0"}
    py, v = rows["2.10.0"]
    assert (py, v["name"], v["cuda"], v["sass"], v["scanned"]) == (">=3.12,<3.13", "cpu", None, [], [])
    assert v["wheels"] == [{"file": cpu.name, "sha256": hashlib.sha256(cpu.read_bytes()).hexdigest()}]
    py, v = rows["2.15.0"]
    assert (py, v["name"], v["cuda"]) == (">=3.13,<3.14", "cu132", "13.2")
    assert v["sass"] == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
    assert v["scanned"] == ["torch/lib/libtorch_cuda.so"]

    # the generated row wins over platforms.yaml's curated `==2.15.*` cu132 row (another sass list)
    m = load_matrix(matrix_copy)
    build = platform_build(m, "linux/arm64", "torch", "2.15.0", "cu132")
    assert build is not None and build.generated and build.own_index and build.index_url is None
    assert build.sass == ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0") and build.python == ">=3.13,<3.14"
    assert build.wheels == (f"{arm.name} sha256:{hashlib.sha256(arm.read_bytes()).hexdigest()}",)
    curated = next(
        b for b in m.platforms.builds if not b.generated and b.variant == "cu132" and b.versions == "==2.15.*"
    )
    assert "11.0" in curated.sass and "11.0" not in build.sass
    assert any(
        d.startswith("torch 2.15.0 cu132 linux/arm64: platforms.yaml (==2.15.*) says sass")
        and d.endswith("the wheel wins")
        for d in disagreements(m)
    )
    # a release no aarch64 wheel was read for keeps its curated row
    older = platform_build(m, "linux/arm64", "torch", "2.14.0", "cu130")
    assert older is not None and not older.generated
    # the CPU row keeps its variant's index (download.pytorch.org/whl/cpu serves aarch64 too)
    cpu_build = platform_build(m, "linux/arm64", "torch", "2.10.0", "cpu")
    assert cpu_build is not None and cpu_build.generated and not cpu_build.own_index

    # `matrix check` re-derives the arm64 rows from the cached scans (the CPU row: its METADATA scan)
    known_cc = {a.cc for a in m.gpus.archs}
    got = check_generated(matrix_copy, known_cc, cache, frameworks=["torch"])
    assert (got.rows, got.checked, got.unchecked, got.differences) == (3, 3, [], [])


def test_a_plugin_release_without_an_aarch64_wheel_is_missing_and_rules_out_the_curated_row(
    matrix_copy: Path, tmp_path: Path
) -> None:
    house = tmp_path / "house"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "rederive" / "arm64" / "wheels", house)
    make_wheel(
        house,
        "jax-0.11.0-py3-none-any.whl",
        requires_python=">=3.11",
        requires_dist=("jaxlib==0.11.0", 'jax-cuda13-plugin[with-cuda]==0.11.0; extra == "cuda13"'),
    )
    make_wheel(house, "jaxlib-0.11.0-cp312-cp312-manylinux_2_27_aarch64.whl", requires_python=">=3.11")
    # this release's plugin was published for x86_64 only
    make_wheel(house, "jax_cuda13_plugin-0.11.0-cp312-cp312-manylinux_2_27_x86_64.whl")
    res = CliRunner().invoke(
        cli,
        [
            "matrix",
            "refresh",
            "--dir",
            str(matrix_copy),
            "--wheelhouse",
            str(house),
            "--framework",
            "jax",
            "--platform",
            "linux/arm64",
            "--cache",
            str(tmp_path / "cache"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert not (matrix_copy / "generated" / "jax.yaml").exists(), (
        "--platform linux/arm64 reads no x86_64 wheel"
    )
    gen = yaml.safe_load((matrix_copy / "generated" / "arm64" / "jax.yaml").read_text())
    rel = {r["version"]: r for r in gen["releases"]}
    assert rel["0.11.0"]["variants"] == []
    assert rel["0.11.0"]["missing"] == [
        {"variant": "cuda13", "reason": f"jax-cuda13-plugin 0.11.0 has no Linux aarch64 wheel on {house}"}
    ]
    assert [v["name"] for v in rel["0.11.2"]["variants"]] == ["cuda13"]

    m = load_matrix(matrix_copy)
    assert platform_build(m, "linux/arm64", "jax", "0.11.0", "cuda13") is None  # platforms.yaml: >=0.4.26
    built = platform_build(m, "linux/arm64", "jax", "0.11.2", "cuda13")
    assert built is not None and built.generated
    assert any(
        d.startswith("jax 0.11.0 cuda13 linux/arm64: platforms.yaml (>=0.4.26) says it is published")
        for d in disagreements(m)
    )
