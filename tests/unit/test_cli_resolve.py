"""CLI tests for `resolve` and `matrix check`: exit codes and messages of every error family."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from envbuilder.cli import cli
from envbuilder.resources import matrices_dir


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_resolve_given_host_prints_stack_and_alternatives() -> None:
    code, out, _ = run(
        "resolve", "--driver", "580.95.05", "--gpu", "Tesla V100-SXM2-16GB", "--framework", "torch==2.11.*"
    )
    assert code == 0
    assert "stack torch2.11.0-cu126" in out
    assert "rejected" in out


def test_resolve_json_contract() -> None:
    code, out, _ = run("resolve", "--json", "--driver", "580.159.04", "--gpu", "NVIDIA H200")
    assert code == 0
    doc = json.loads(out)
    stack = doc["stack"]
    for key in ("id", "framework", "cuda", "cudnn", "python", "base_image", "min_driver", "strategy"):
        assert key in stack
    assert set(stack["framework"]) == {"name", "version", "variant"}
    assert doc["host"]["driver"] == "580.159.04"
    assert doc["host"]["gpus"][0]["cc"] == "9.0"
    assert isinstance(doc["alternatives"], list) and doc["alternatives"]
    assert all(set(r) == {"candidate", "component", "reason"} for r in doc["rejected"])


def test_explain_lists_every_rejection() -> None:
    code, out, _ = run(
        "resolve", "--explain", "--driver", "580.95.05", "--cc", "6.1", "--framework", "torch==2.11.*"
    )
    assert code == 0
    assert "arch: no kernels for" in out


def test_nothing_fits_exit_4_and_json_still_lists_rejections() -> None:
    code, out, err = run(
        "resolve",
        "--json",
        "--driver",
        "580.95.05",
        "--gpu",
        "Tesla V100-SXM2-16GB",
        "--framework",
        "torch==2.15.*",
    )
    assert code == 4
    doc = json.loads(out)
    assert doc["stack"] is None and doc["rejected"]
    assert "envbuilder: error: no compatible torch==2.15.* stack" in err
    assert "hint: run with --explain" in err


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["--gpu", "NVIDIA GeForce RTX 5900", "--driver", "580.95.05"],
            "unknown GPU 'NVIDIA GeForce RTX 5900': no known model has that name",
            "envbuilder matrix list gpus",
        ),
        (
            ["--gpu", "RTX 6000", "--driver", "580.95.05"],
            "GPU 'RTX 6000' fits 5 models: 'NVIDIA RTX 6000 Ada', ",
            "give the full name, e.g. --gpu 'NVIDIA RTX 6000 Ada'",
        ),
        (["--driver", "53x.1", "--cc", "8.0"], "malformed driver version '53x.1'", "nvidia-smi"),
        (["--cc", "eight", "--driver", "580.95.05"], "malformed compute capability 'eight'", "MAJOR.MINOR"),
        (
            ["--cc", "4.2", "--driver", "580.95.05"],
            "unknown compute capability '4.2'",
            "known compute capabilities",
        ),
        (["--framework", "torch==2.x!", "--cc", "8.0"], "malformed framework requirement", "NAME[SPECIFIER]"),
        (
            ["--framework", "torch==9.9", "--cc", "8.0"],
            "no torch release matches 'torch==9.9'",
            "envbuilder knows torch",
        ),
        (["--framework", "caffe", "--cc", "8.0"], "unknown framework 'caffe'", "torch, tensorflow, jax"),
        (["--python", "three", "--cc", "8.0"], "malformed Python version 'three'", "X.Y"),
        (["--python", "3", "--cc", "8.0"], "malformed Python version '3': give it as X.Y", "--python 3.12"),
        (["--python", "3.11.7", "--cc", "8.0"], "malformed Python version '3.11.7'", "X.Y"),
        (["--python", "py3.11", "--cc", "8.0"], "malformed Python version 'py3.11'", "X.Y"),
        (["--driver", "550.54.14.1", "--cc", "8.0"], "malformed driver version '550.54.14.1'", "nvidia-smi"),
        (
            ["--driver", "\uff15\uff15\uff10.54.14", "--cc", "8.0"],
            "malformed driver version '\uff15\uff15\uff10.54.14' (non-ASCII character '\uff15' U+FF15)",
            "nvidia-smi",
        ),
        (
            ["--framework", "tensorflow==2.16", "--cc", "8.0"],
            "no tensorflow release matches 'tensorflow==2.16'",
            "'tensorflow==2.16.*' (releases 2.16.1)",
        ),
        (
            ["--framework", "torch==\uff12.11.*", "--cc", "8.0"],
            "malformed framework requirement 'torch==\uff12.11.*' (non-ASCII character '\uff12' U+FF12)",
            "NAME[SPECIFIER]",
        ),
    ],
)
def test_bad_input_is_one_line_with_hint_and_exit_2(args: list[str], message: str, hint: str) -> None:
    code, _, err = run("resolve", *args)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[0].startswith("envbuilder: error: ") and message in lines[0]
    assert lines[1].startswith("hint: ") and hint in lines[1]
    assert "Traceback" not in err


def test_unknown_gpu_is_refused_with_did_you_mean_never_resolved() -> None:
    code, out, err = run("resolve", "--gpu", "NVIDIA GeForce RTX 4909", "--driver", "580.95.05")
    assert code == 2 and out == "" and "closest" not in err
    assert "hint: did you mean 'GeForce RTX 4090'" in err


def test_bare_driver_branch_is_accepted_and_the_output_states_the_rule() -> None:
    code, out, err = run("resolve", "--json", "--driver", "580", "--gpu", "NVIDIA H200")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["host"]["driver"] == "580"
    rule = "driver given as branch R580: checked as its oldest driver (580.0.0)"
    assert any(rule in w for w in doc["warnings"])
    code, _, err = run("resolve", "--driver", "580", "--gpu", "NVIDIA H200")
    assert code == 0 and "warning: driver given as branch R580" in err


def test_matrix_check_passes_on_bundled_matrix() -> None:
    code, out, _ = run("matrix", "check")
    assert code == 0
    assert "minimum drivers non-decreasing" in out


def _broken_copy(tmp_path: Path, file: str, old: str, new: str) -> Path:
    root = tmp_path / "m"
    shutil.copytree(matrices_dir(), root)
    path = root / file
    text = path.read_text()
    assert old in text, f"fixture text {old!r} not in {file}"
    path.write_text(text.replace(old, new, 1))
    return root


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("cuda.yaml", 'min_driver: "450.51.05"', "min_driver: 450.51", "cuda.yaml:"),
        ("cuda.yaml", 'min_driver: "450.51.05"', 'min_driver: "999.1"', "minimum drivers never decrease"),
        ("gpus.yaml", 'hopper: &hopper {cc: "9.0"', 'hopper: &hopper {cc: "9.9"', "not a known compute"),
        ("gpus.yaml", 'nvml_names: ["NVIDIA H20"]', 'nvml_names: ["Tesla T4"]', "duplicate GPU name"),
        ("frameworks/torch.yaml", "schema_version: 1", "schema_version: 7", "field 'schema_version'"),
        ("base_images.yaml", "reviewed:", "reviewedx:", "field 'reviewed'"),
        ("cuda.yaml", "releases:", "releases: [\n", "not valid YAML"),
    ],
)
def test_corrupt_matrix_names_file_row_field_exit_3(
    tmp_path: Path, file: str, old: str, new: str, message: str
) -> None:
    root = _broken_copy(tmp_path, file, old, new)
    code, _, err = run("matrix", "check", "--dir", str(root))
    assert code == 3, err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "text",
    [
        "torch",
        "torch==2.11.*",
        "Torch>=2.7",
        "tensorflow >=2.16, <2.20",
        " torch == 2.11.0 ",
        "torch!=2.9.0,>=2.7",
        "torch~=2.11",
        "torch===2.11.0",
        "torch (>=2.7)",
        "torch[cuda]",
        "torch; python_version>'3'",
        "torch==2.x!",
        "-torch",
        "torch==",
        "torch @ https://example.org/torch.whl",
        "torch>=2.7,",
        "torch<=2.7.*",
    ],
)
def test_framework_requirement_reads_as_packaging_reads_it(text: str) -> None:
    """The quick path for NAME+SPECIFIERS agrees with packaging.requirements on every input."""
    from packaging.requirements import InvalidRequirement, Requirement

    from envbuilder.cli.options import parse_framework_requirement
    from envbuilder.errors import UsageError

    try:
        req = Requirement(text)
        expected: tuple[str, str] | None = (
            None if (req.extras or req.url or req.marker) else (req.name.lower(), str(req.specifier))
        )
    except InvalidRequirement:
        expected = None
    if expected is None:
        with pytest.raises(UsageError):
            parse_framework_requirement(text)
    else:
        assert parse_framework_requirement(text) == expected


def test_no_stack_hint_follows_the_cause() -> None:
    # arch: the newest release that still has kernels for the GPU, not "change the driver"
    code, _out, err = run(
        "resolve", "--driver", "580.95.05", "--gpu", "Tesla V100-SXM2-16GB", "--framework", "torch==2.15.*"
    )
    assert code == 4
    assert (
        "no torch==2.15.* build has kernels for this GPU: the newest torch release that has is 2.14.1" in err
    )
    assert "--framework 'torch==2.14.1'" in err and "change the driver" not in err
    # driver: the driver that unlocks the newest stack
    code, _out, err = run("resolve", "--driver", "470.57.02", "--gpu", "A100", "--framework", "torch>=2.9")
    assert code == 4
    assert "hint: run with --explain to see each reason; driver 470.57.02 is too old for torch>=2.9" in err
    assert ": driver >= 580 unlocks torch" in err


def test_text_output_gives_the_runner_ups_notes() -> None:
    code, out, _err = run("resolve", "--driver", "580.95.05", "--gpu", "H100 SXM")
    assert code == 0
    runners = out.split("alternatives (runners-up)", 1)[1]
    assert "      note: torch wheels bring their own CUDA libraries" in runners
