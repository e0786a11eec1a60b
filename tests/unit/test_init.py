"""`envbuilder init`: a spec drafted from the project in a folder, each finding said, the draft
loadable, an existing spec never replaced."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from envbuilder.cli import cli
from envbuilder.errors import SpecError
from envbuilder.image.draft import draft_spec
from envbuilder.image.spec import load_spec


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "My Project"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    folder.mkdir(exist_ok=True)
    return folder


def test_requirements_txt_with_a_pinned_framework_and_companion(tmp_path: Path) -> None:
    folder = _project(
        tmp_path,
        {
            "requirements.txt": "torch==2.13.0\ntorchvision\nnumpy>=1.26  # math\n-r extra.txt\n",
            "train.py": "",
        },
    )
    draft = draft_spec(folder)
    doc = yaml.safe_load(draft.text)
    assert doc["name"] == "my-project"
    assert doc["framework"] == "torch==2.13.0"
    assert doc["companions"] == ["torchvision"]
    assert doc["requirements"] == "requirements.txt"
    assert doc["context"] == "."
    assert doc["cmd"] == ["python", "train.py"]
    assert "framework: torch==2.13.0 (from torch in requirements.txt)" in draft.findings


def test_pyproject_with_jax_and_flax_and_no_entry_point(tmp_path: Path) -> None:
    folder = _project(
        tmp_path, {"pyproject.toml": '[project]\nname="x"\ndependencies=["flax>=0.10","jax"]\n'}
    )
    draft = draft_spec(folder)
    doc = yaml.safe_load(draft.text)
    assert doc["framework"] == "jax" and doc["pyproject"] == "pyproject.toml" and "cmd" not in doc
    assert any(f.startswith("command: none found") for f in draft.findings)


def test_uv_lock_wins_and_two_frameworks_are_said(tmp_path: Path) -> None:
    lock = "".join(
        f'[[package]]\nname = "{n}"\nversion = "{v}"\n'
        for n, v in (("tensorflow", "2.21.0"), ("torch", "2.15.0"))
    )
    folder = _project(tmp_path, {"uv.lock": lock, "pyproject.toml": '[project]\nname="x"\ndependencies=[]\n'})
    draft = draft_spec(folder)
    doc = yaml.safe_load(draft.text)
    assert doc["uv_lock"] == "uv.lock" and doc["framework"] == "torch==2.15.0"
    assert any("also named: tensorflow" in f for f in draft.findings)


def test_no_package_list_assumes_torch_and_says_so(tmp_path: Path) -> None:
    draft = draft_spec(_project(tmp_path, {"main.py": ""}))
    assert yaml.safe_load(draft.text)["framework"] == "torch"
    assert any("assumed" in f for f in draft.findings)


def test_a_broken_pyproject_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not valid TOML"):
        draft_spec(_project(tmp_path, {"pyproject.toml": "[project\n"}))


def test_cli_writes_a_loadable_spec_with_its_schema_and_never_replaces_it(tmp_path: Path) -> None:
    folder = _project(tmp_path, {"requirements.txt": "filelock\n", "train.py": ""})
    out, schema = folder / "envbuilder.yaml", folder / "spec.schema.json"
    result = CliRunner().invoke(cli, ["init", str(folder), "--schema", str(schema)])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# yaml-language-server: $schema=spec.schema.json\n")
    spec = load_spec(out)
    assert spec.requirements_file == "requirements.txt" and spec.cmd == ("python", "train.py")
    jsonschema.validate(yaml.safe_load(text), json.loads(schema.read_text(encoding="utf-8")))
    again = CliRunner().invoke(cli, ["init", str(folder)])
    assert again.exit_code == 18 and "never replaces" in again.output
    assert out.read_text(encoding="utf-8") == text


def test_cli_json_and_print_write_nothing(tmp_path: Path) -> None:
    folder = _project(tmp_path, {"requirements.txt": "filelock\n"})
    result = CliRunner().invoke(cli, ["init", str(folder), "--print", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["written"] == [] and 'framework: "torch"' in doc["spec"]
    assert not (folder / "envbuilder.yaml").exists()
