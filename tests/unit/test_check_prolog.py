"""The Slurm recipe's own logic (scripts/slurm/envbuilder-check-prolog.sh), with stand-ins for
`envbuilder check` and scontrol written into tmp_path: which image it checks (ENVBUILDER_CHECK_IMAGE,
pyxis's --container-image in enroot's REGISTRY#IMAGE form, the job's --comment), what each exit
code does (PASS/WARN go on, FAIL drains with the reason, a check that could not run follows
ENVBUILDER_CHECK_ON_ERROR). The real Slurm run is tests/integration/test_check_slurm_docker.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm" / "envbuilder-check-prolog.sh"


def stub(path: Path, body: str) -> Path:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)
    return path


def prolog(
    tmp_path: Path, *, rc: int, verdict: str | None, **env: str
) -> tuple[int, str, list[str], list[str]]:
    """Run the recipe with a fake `envbuilder check` (exit `rc`, a report with `verdict`) and a
    fake scontrol; returns (exit, stderr, the images checked, the drain commands)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    doc = json.dumps({"verdict": verdict, "reason": f"{verdict.lower()} reason"}) if verdict else "not json"
    stub(bin_dir / "fake-envbuilder", f"echo \"$@\" >> {tmp_path}/checked\necho '{doc}'\nexit {rc}\n")
    stub(
        bin_dir / "scontrol",
        'if [ "$1" = show ]; then '
        'echo "JobId=7 Comment=team,envbuilder-image=reg.io/team/job:3 Partition=gpu"; '
        f'else echo "$@" >> {tmp_path}/drains; fi\n',
    )
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("SPANK", "_SLURM", "ENVBUILDER", "SLURM"))
    }
    res = subprocess.run(
        ["bash", str(SCRIPT)],
        capture_output=True, text=True, timeout=60, check=False,
        env={**base, "PATH": f"{bin_dir}:/usr/bin:/bin", "SLURMD_NODENAME": "gpu-7",
             "ENVBUILDER_CHECK_CMD": str(bin_dir / "fake-envbuilder"), **env},
    )  # fmt: skip
    return res.returncode, res.stderr, lines(tmp_path / "checked"), lines(tmp_path / "drains")


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_the_image_comes_from_the_setting_then_pyxis_then_the_job_comment(tmp_path: Path) -> None:
    _, _, checked, _ = prolog(
        tmp_path, rc=0, verdict="PASS", ENVBUILDER_CHECK_IMAGE="team/a:1", SLURM_JOB_ID="7"
    )
    pyxis = {"SPANK__SLURM_SPANK_OPTION_pyxis_container_image": "nvcr.io#nvidia/pytorch:24.01-py3"}
    prolog(tmp_path, rc=0, verdict="PASS", SLURM_JOB_ID="7", **pyxis)
    prolog(tmp_path, rc=0, verdict="PASS", SLURM_JOB_ID="7")
    checked = (tmp_path / "checked").read_text().splitlines()
    assert checked == [
        "check team/a:1 --json",
        "check nvcr.io/nvidia/pytorch:24.01-py3 --json",
        "check reg.io/team/job:3 --json",
    ]


def test_no_image_named_is_nothing_to_check(tmp_path: Path) -> None:
    code, err, checked, drains = prolog(tmp_path, rc=2, verdict="FAIL")
    assert (code, checked, drains) == (0, [], []) and "nothing to check" in err


@pytest.mark.parametrize(("rc", "verdict"), [(0, "PASS"), (1, "WARN")])
def test_pass_and_warn_let_the_job_start(tmp_path: Path, rc: int, verdict: str) -> None:
    code, err, _, drains = prolog(tmp_path, rc=rc, verdict=verdict, ENVBUILDER_CHECK_IMAGE="team/a:1")
    assert (code, drains) == (0, []) and verdict in err


def test_fail_drains_this_node_with_the_checks_reason(tmp_path: Path) -> None:
    code, err, _, drains = prolog(tmp_path, rc=2, verdict="FAIL", ENVBUILDER_CHECK_IMAGE="team/a:1")
    assert code == 1 and "drained gpu-7" in err
    assert drains == ["update nodename=gpu-7 state=drain reason=envbuilder check: team/a:1: fail reason"]


def test_a_check_that_could_not_run_goes_on_unless_told_to_drain(tmp_path: Path) -> None:
    code, err, _, drains = prolog(tmp_path, rc=7, verdict=None, ENVBUILDER_CHECK_IMAGE="team/a:1")
    assert (code, drains) == (0, []) and "could not run (exit 7)" in err
    # exit 2 without a FAIL report is a usage error (could not run), never a FAIL
    code, _, _, drains = prolog(tmp_path, rc=2, verdict=None, ENVBUILDER_CHECK_IMAGE="team/a:1")
    assert (code, drains) == (0, [])
    code, _, _, drains = prolog(
        tmp_path, rc=7, verdict=None, ENVBUILDER_CHECK_IMAGE="team/a:1", ENVBUILDER_CHECK_ON_ERROR="drain"
    )
    assert code == 1 and drains == ["update nodename=gpu-7 state=drain reason=envbuilder check: team/a:1: "
                                    "the check could not run (exit 7)"]  # fmt: skip
