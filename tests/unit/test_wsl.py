"""WSL2: detected from /proc/version, /dev/dxg or /usr/lib/wsl/lib; nvidia-smi found in
/usr/lib/wsl/lib when it is not on PATH; the Windows driver it prints mapped to the Linux driver of
the same CUDA (cuda.yaml's Windows column, then the branch its number falls in); resolve --wsl and
doctor say so, with what WSL2 lacks. Every path is under tmp_path."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_host import SMI_FMT, FakeGpu, FakeNvml, FakeRunner, ok

from envbuilder.cli import cli
from envbuilder.doctor.checks import DoctorInputs, run_doctor
from envbuilder.errors import UsageError
from envbuilder.host import SMI_QUERY, probe_host
from envbuilder.host.model import Host
from envbuilder.host.probe import detect_wsl
from envbuilder.matrix import load_matrix
from envbuilder.pipeline.resolution import target_host
from envbuilder.resolve.wsl import host_under_wsl, windows_driver, wsl_warning

MATRIX = load_matrix()
WSL_KERNEL = (
    "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc (GCC) 11.2.0) #1 SMP\n"
)


def wsl_root(tmp: Path, *, version: str = WSL_KERNEL, dxg: bool = False, lib: bool = False) -> Path:
    (tmp / "proc").mkdir(parents=True, exist_ok=True)
    (tmp / "proc/version").write_text(version)
    if dxg:
        (tmp / "dev").mkdir(exist_ok=True)
        (tmp / "dev/dxg").touch()
    if lib:
        (tmp / "usr/lib/wsl/lib").mkdir(parents=True)
    return tmp


def test_wsl_is_detected_from_proc_version(tmp_path: Path) -> None:
    assert detect_wsl(wsl_root(tmp_path)) == "/proc/version says 5.15.167.4-microsoft-standard-WSL2"


def test_proc_version_names_microsoft_in_any_case(tmp_path: Path) -> None:
    # Microsoft's kernels have spelled it both ways (4.4.0-19041-Microsoft, ...-microsoft-standard-WSL2).
    capital = "Linux version 4.19.128-Microsoft-standard (oe-user@oe-host) (gcc version 8.2.0 (GCC)) #1 SMP\n"
    assert detect_wsl(wsl_root(tmp_path, version=capital)) == "/proc/version says 4.19.128-Microsoft-standard"


def test_wsl_is_detected_from_dxg_or_the_driver_folder(tmp_path: Path) -> None:
    plain = "Linux version 6.8.0-49-generic (buildd@lcy02-amd64-103) #49-Ubuntu SMP\n"
    assert detect_wsl(wsl_root(tmp_path / "a", version=plain)) is None
    assert detect_wsl(wsl_root(tmp_path / "b", version=plain, dxg=True)) == "/dev/dxg exists"
    assert detect_wsl(wsl_root(tmp_path / "c", version=plain, lib=True)) == "/usr/lib/wsl/lib exists"
    assert detect_wsl(tmp_path / "nothing") is None


def test_probe_reports_wsl_and_the_windows_driver_as_printed(tmp_path: Path) -> None:
    gpu = FakeGpu(name="NVIDIA GeForce RTX 4090", cc=(8, 9), brand=5)
    report = probe_host(
        nvml=FakeNvml([gpu], driver="577.00", cuda=12090), run=FakeRunner(), root=wsl_root(tmp_path)
    )
    assert (report.wsl, report.driver, report.cuda_driver) == (
        "/proc/version says 5.15.167.4-microsoft-standard-WSL2",
        "577.00",
        "12.9",
    )
    assert report.to_dict()["wsl"] == report.wsl


def test_nvidia_smi_is_found_in_the_wsl_folder_when_not_on_path(tmp_path: Path) -> None:
    root = wsl_root(tmp_path, lib=True)
    smi = str(root / "usr/lib/wsl/lib/nvidia-smi")
    row = "NVIDIA GeForce RTX 4090, GPU-1, 8.9, 573.76, 1200, 24564, 45, 30.1, 450.0\n"
    runner = FakeRunner(
        {
            (smi, f"--query-gpu={SMI_QUERY}", SMI_FMT): ok(row),
            (smi,): ok("| NVIDIA-SMI 570.133.07   Driver Version: 573.76   CUDA Version: 12.8 |\n"),
        }
    )
    report = probe_host(nvml=FakeNvml(init_error="Driver Not Loaded"), run=runner, root=root)
    assert (report.source, report.driver, report.cuda_driver, report.wsl) == (
        "nvidia-smi",
        "573.76",
        "12.8",
        "/proc/version says 5.15.167.4-microsoft-standard-WSL2",
    )
    assert ("nvidia-smi", f"--query-gpu={SMI_QUERY}", SMI_FMT) in runner.calls  # PATH first


@pytest.mark.parametrize(
    ("windows", "linux", "cuda"),
    [
        ("577.00", "575.57.08", "12.9.1"),  # R575: reaches 576.57, the Windows driver of 12.9 Update 1
        (
            "576.52",
            "575.51.03",
            "12.9.0",
        ),  # a public WSL2 log: "Driver Version: 576.52 ... CUDA Version: 12.9"
        ("573.76", "570.124.06", "12.8.1"),  # R570
        ("570.65", "570.26", "12.8.0"),
        ("566.36", "560.35.05", "12.6.3"),  # R565 (nvidia-smi says 12.7; no 12.7 toolkit exists)
        ("552.22", "550.54.15", "12.4.1"),
        ("537.13", "535.104.05", "12.2.2"),
        ("472.12", "470.57.02", "11.4.2"),  # 11.4 Updates 1 and 2 share 471.41: the newer
        ("581.57", "580.65.06", "13.0.0"),  # R580 (Table 3 has no Windows column from 13.0: the branch)
        ("580.88", "580.65.06", "13.0.0"),
        ("591.44", "590.44.01", "13.1.0"),
    ],
)
def test_a_windows_driver_counts_as_the_linux_driver_of_its_cuda(windows: str, linux: str, cuda: str) -> None:
    got = windows_driver(MATRIX, windows)
    assert got is not None and (got.linux, got.release.version) == (linux, cuda)


def test_a_windows_driver_older_than_any_release_is_refused() -> None:
    assert windows_driver(MATRIX, "441.22") is None
    with pytest.raises(UsageError, match=r"Windows driver 441\.22 \(WSL2\) is older") as err:
        host_under_wsl(MATRIX, Host(driver="441.22"))
    assert err.value.hint is not None and "R470" in err.value.hint


def test_given_wsl_host_keeps_the_windows_driver_and_round_trips() -> None:
    host = target_host(MATRIX, "577.00", ("NVIDIA GeForce RTX 4090",), (), wsl=True)
    assert (host.driver, host.windows_driver) == ("575.57.08", "577.00")
    assert Host.from_dict(host.to_dict()) == host
    assert host_under_wsl(MATRIX, host) is host  # mapped once
    assert "windows_driver" not in replace(host, windows_driver=None).to_dict()


def test_resolve_wsl_says_the_mapping_and_what_wsl2_lacks() -> None:
    res = CliRunner().invoke(
        cli, ["resolve", "--framework", "torch==2.5.1", "--wsl", "--driver", "577.00", "--gpu", "RTX 4090"]
    )
    assert res.exit_code == 0, res.output
    assert "host: driver 577.00 (Windows, WSL2; as Linux 575.57.08), " in res.output
    assert "WSL2: driver 577.00 is the Windows driver; it supports CUDA 12.9" in res.output
    assert "no MIG" in res.output and "no /dev/nvidia*" in res.output


def test_the_wsl_warning_says_what_the_windows_driver_supports_and_why() -> None:
    """The warning maps the Windows driver (577.00: Table 3's 12.9 Update 1 column), not the Linux
    driver it counts as (575.57.08, whose branch alone would give 12.9.0 and another reason)."""
    host = target_host(MATRIX, "577.00", ("NVIDIA GeForce RTX 4090",), (), wsl=True)
    said = wsl_warning(MATRIX, host)
    assert said is not None and said.startswith(
        "WSL2: driver 577.00 is the Windows driver; it supports CUDA 12.9 (the Windows driver of CUDA "
        "12.9 Update 1 is 576.57) and is checked as the Linux driver 575.57.08."
    )
    assert wsl_warning(MATRIX, Host(driver="575.57.08")) is None
    # a host document with a Windows driver and no driver (Host.from_dict reads either alone): no warning
    assert wsl_warning(MATRIX, Host.from_dict({"windows_driver": "577.00", "gpus": []})) is None
    # a Windows driver older than any CUDA release (a host document; host_under_wsl refuses it):
    # said as given, never a crash
    old = wsl_warning(MATRIX, Host(driver="575.57.08", windows_driver="400.00"))
    assert old is not None and "it supports CUDA ? (given)" in old
    # an empty Windows driver (a hand-written document) is a malformed driver, never "not WSL2";
    # an empty Linux driver beside a Windows one still gets the warning
    with pytest.raises(UsageError, match="malformed driver version"):
        wsl_warning(MATRIX, Host(driver="575.57.08", windows_driver=""))
    assert wsl_warning(MATRIX, Host(driver="", windows_driver="577.00")) is not None


def test_without_wsl_the_same_driver_is_a_linux_driver() -> None:
    host = target_host(MATRIX, "577.00", ("NVIDIA GeForce RTX 4090",), ())
    assert (host.driver, host.windows_driver) == ("577.00", None)


def test_doctor_says_wsl2_with_the_mapping_and_the_limits(tmp_path: Path) -> None:
    gpu = FakeGpu(name="NVIDIA GeForce RTX 4090", cc=(8, 9), brand=5)
    inputs = DoctorInputs(
        nvml=FakeNvml([gpu], driver="577.00", cuda=12090),
        run=FakeRunner(),
        root=wsl_root(tmp_path, dxg=True, lib=True),
        which=lambda _name: None,
        env={},
        installed=lambda _name: False,
        matrix=lambda: MATRIX,
    )
    report = run_doctor(inputs)
    (wsl,) = [c for c in report.checks if c.name == "wsl2"]
    assert wsl.detail.startswith(
        "WSL2 (/proc/version says 5.15.167.4-microsoft-standard-WSL2); driver 577.00 is "
    )
    assert "CUDA 12.9" in wsl.detail and "checked as the Linux driver 575.57.08" in wsl.detail
    assert "no MIG: " in wsl.detail and "nvidia-ctk cdi generate --mode=wsl" in wsl.detail
