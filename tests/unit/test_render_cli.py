"""CLI tests for `envbuilder render`: output, the written context, and each error's exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_golden import ROOT

from envbuilder.cli import cli

HOST = ("--driver", "580.159.04", "--gpu", "NVIDIA H200")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_print_matches_the_committed_render(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = run("render", "images/pytorch-train.yaml", *HOST, "--print")
    assert code == 0
    assert out == (ROOT / "images" / "pytorch-train.Dockerfile").read_text(encoding="utf-8")


def test_writes_the_context_and_reports_json(tmp_path: Path) -> None:
    out_dir = tmp_path / "ctx"
    spec = str(ROOT / "images" / "pytorch-train.yaml")
    code, out, _ = run("render", spec, *HOST, "--out", str(out_dir), "--secret", "ca", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["dockerfile"] == str(out_dir / "Dockerfile")
    assert doc["secrets"] == ["ca"]
    assert doc["stack"]["framework"]["name"] == "torch"
    text = (out_dir / "Dockerfile").read_text(encoding="utf-8")
    assert "--mount=type=secret,id=ca,required=true" in text
    assert doc["lock_hash"] in text
    assert (out_dir / "context" / "lock" / "framework" / "requirements.txt").is_file()


def test_bad_spec_value_exits_10_naming_the_field(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text('name: bad\nframework: torch\napt: ["git\\nRUN curl evil"]\n', encoding="utf-8")
    code, _, err = run("render", str(spec), *HOST, "--print")
    assert code == 10
    assert "apt[0]" in err and "hint:" in err


def test_missing_spec_exits_10(tmp_path: Path) -> None:
    code, _, err = run("render", str(tmp_path / "none.yaml"), *HOST)
    assert code == 10 and "cannot read" in err


def test_no_compatible_stack_exits_4() -> None:
    spec = str(ROOT / "images" / "jax-train.yaml")
    code, _, err = run("render", spec, "--driver", "470.57.02", "--gpu", "NVIDIA H200", "--print")
    assert code == 4 and "--explain" in err


def test_unknown_framework_version_exits_2(tmp_path: Path) -> None:
    spec = tmp_path / "old.yaml"
    spec.write_text('name: old\nframework: "torch==0.1"\n', encoding="utf-8")
    code, _, err = run("render", str(spec), *HOST, "--print")
    assert code == 2 and "torch==0.1" in err


def test_out_folder_not_ours_exits_2(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    code, _, err = run("render", str(ROOT / "images" / "jax-train.yaml"), *HOST, "--out", str(tmp_path))
    assert code == 2 and "not written by envbuilder" in err
