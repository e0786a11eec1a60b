"""The image's entrypoint (envbuilder/image/entrypoint.sh): the driver check at start-up, run here
under dash and bash in POSIX mode against fake /proc/driver/nvidia/version files, and driven by the
same case table (tests/data/driver_check_cases.yaml) as `envbuilder run`'s own driver check and
the host probe's parse of that file, so the two copies of the rule cannot drift apart."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cert_factory import H200, IMAGE_ID, cert

from envbuilder import resources
from envbuilder.engine import ImageInfo
from envbuilder.host import probe_proc
from envbuilder.run.coverage import RunHost, check_min_driver

CASES: dict[str, Any] = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "data" / "driver_check_cases.yaml").read_text()
)
SCRIPT = resources.entrypoint_script()
SHELLS = [s for s in (["dash"], ["bash", "--posix"]) if shutil.which(s[0])]
REFUSED = 78


def proc_line(driver: str) -> str:
    return f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Thu Oct 30 19:02:11 UTC 2025\n"


def entry(
    shell: list[str], tmp: Path, *command: str, text: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    version = tmp / "version"
    if text is not None:
        version.write_text(text)
    full = {"PATH": os.environ["PATH"], "ENVBUILDER_DRIVER_VERSION_FILE": str(version), **env}
    return subprocess.run(
        [*shell, str(SCRIPT), *command], env=full, capture_output=True, text=True, timeout=30, check=False
    )


def test_the_script_is_executable_and_posix() -> None:
    assert SCRIPT.read_text().startswith("#!/bin/sh\n")
    assert os.access(SCRIPT, os.X_OK)
    assert SHELLS, "no POSIX shell to run the entrypoint with"


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
@pytest.mark.parametrize("case", CASES["compare"], ids=lambda c: f"{c['driver']}-vs-{c['min']}")
def test_entrypoint_and_run_agree_on_every_case(
    shell: list[str], case: dict[str, Any], tmp_path: Path
) -> None:
    res = entry(shell, tmp_path, "true", text=proc_line(case["driver"]), ENVBUILDER_MIN_DRIVER=case["min"])
    assert res.returncode == (0 if case["ok"] else REFUSED), res.stderr
    # `envbuilder run`'s check on the same pair: a certificate with that minimum, a host with that driver.
    image = ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=(), env=())
    host = RunHost(driver=case["driver"], cuda_driver="13.0", gpus=(H200,), access="cdi", requested="cdi")
    refusal = check_min_driver(cert(min_driver=case["min"]), image, host)
    assert (refusal is None) == case["ok"]


@pytest.mark.parametrize("case", CASES["parse"], ids=lambda c: str(c["driver"]))
def test_entrypoint_and_the_host_probe_read_the_same_version(case: dict[str, Any], tmp_path: Path) -> None:
    proc = tmp_path / "root/proc/driver/nvidia/version"
    proc.parent.mkdir(parents=True)
    proc.write_text(case["text"])
    got = probe_proc(tmp_path / "root")
    assert (got.driver if not isinstance(got, str) else None) == case["driver"]
    # The entrypoint refuses exactly when it read a version below the minimum: a floor just above
    # the version shows whether it read one.
    for shell in SHELLS:
        res = entry(shell, tmp_path, "true", text=case["text"], ENVBUILDER_MIN_DRIVER="99999")
        assert res.returncode == (REFUSED if case["driver"] else 0), res.stderr
        if case["driver"]:
            assert f"the host's driver is {case['driver']} (" in res.stderr


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_refusal_is_one_error_line_and_a_hint(shell: list[str], tmp_path: Path) -> None:
    res = entry(
        shell, tmp_path, "echo", "never", text=proc_line("535.104.05"), ENVBUILDER_MIN_DRIVER="580.65.06"
    )
    assert res.returncode == REFUSED and res.stdout == ""
    err = res.stderr.splitlines()
    assert len(err) == 2
    assert err[0].startswith(
        "envbuilder: error: this image needs NVIDIA driver >= 580.65.06, but the host's driver is 535.104.05"
    )
    assert (
        err[1].startswith("hint: upgrade the host's driver to >= 580.65.06")
        and "--driver 535.104.05" in err[1]
    )


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_the_command_runs_with_its_arguments_and_exit_code(shell: list[str], tmp_path: Path) -> None:
    new = entry(
        shell,
        tmp_path,
        "sh",
        "-c",
        'echo "$0 $1"; exit 7',
        "a b",
        "c",
        text=proc_line("580.159.04"),
        ENVBUILDER_MIN_DRIVER="580",
    )
    assert (new.returncode, new.stdout, new.stderr) == (7, "a b c\n", "")
    cpu = entry(shell, tmp_path / "no-driver", "echo", "cpu", ENVBUILDER_MIN_DRIVER="580")  # no version file
    assert (cpu.returncode, cpu.stdout) == (0, "cpu\n")
    no_floor = entry(shell, tmp_path, "echo", "cpu stack", text=proc_line("450.80.02"))
    assert (no_floor.returncode, no_floor.stdout) == (0, "cpu stack\n")


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_disable_starts_anyway_with_a_warning(shell: list[str], tmp_path: Path) -> None:
    res = entry(
        shell, tmp_path, "echo", "ran", text=proc_line("535.104.05"),
        ENVBUILDER_MIN_DRIVER="580", ENVBUILDER_DISABLE_DRIVER_CHECK="1",
    )  # fmt: skip
    assert (res.returncode, res.stdout) == (0, "ran\n")
    assert res.stderr.startswith("envbuilder: warning: NVIDIA driver 535.104.05 is older than the 580")


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_no_command_starts_a_shell(shell: list[str], tmp_path: Path) -> None:
    version = tmp_path / "version"
    version.write_text(proc_line("580.159.04"))
    res = subprocess.run(
        [*shell, str(SCRIPT)], input="echo from-shell\n", capture_output=True, text=True, timeout=30,
        check=False, env={"PATH": os.environ["PATH"], "ENVBUILDER_DRIVER_VERSION_FILE": str(version)},
    )  # fmt: skip
    assert (res.returncode, res.stdout) == (0, "from-shell\n")


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
@pytest.mark.parametrize(
    ("driver", "compat_first"),
    [("535.104.05", True), ("580.65.05", True), ("580.65.06", False), ("590.44.01", False), ("580.00", True)],
)
def test_forward_compat_libraries_go_first_only_below_their_driver(
    shell: list[str], driver: str, compat_first: bool, tmp_path: Path
) -> None:
    compat = tmp_path / "compat"
    compat.mkdir()
    res = entry(
        shell,
        tmp_path,
        "sh",
        "-c",
        'printf "%s" "${LD_LIBRARY_PATH:-}"',
        text=proc_line(driver),
        ENVBUILDER_MIN_DRIVER="535",
        ENVBUILDER_COMPAT_DRIVER="580.65.06",
        ENVBUILDER_COMPAT_DIR=str(compat),
        LD_LIBRARY_PATH="/usr/local/nvidia/lib64",
    )
    assert res.returncode == 0, res.stderr
    expected = f"{compat}:/usr/local/nvidia/lib64" if compat_first else "/usr/local/nvidia/lib64"
    assert res.stdout == expected


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_forward_compat_without_its_folder_changes_nothing(shell: list[str], tmp_path: Path) -> None:
    res = entry(
        shell,
        tmp_path,
        "sh",
        "-c",
        'printf "%s" "${LD_LIBRARY_PATH:-unset}"',
        text=proc_line("535.104.05"),
        ENVBUILDER_COMPAT_DRIVER="580.65.06",
        ENVBUILDER_COMPAT_DIR=str(tmp_path / "absent"),
    )
    assert (res.returncode, res.stdout) == (0, "unset")
