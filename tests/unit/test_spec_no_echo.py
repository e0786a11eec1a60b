"""Issue 18, defect 9: a spec path that is a symlink to a secret file (a CI checkout pointing
images/x.yaml at ~/.docker/config.json) must not print a word of it: errors name the file's
kind, a line and column, never its text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from envbuilder.bounded import yaml_error_message
from envbuilder.cli import cli

SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (f"{SECRET}\n", "not an image spec: the file holds a YAML string, not a mapping of fields"),
        (f"TOKEN={SECRET}\nsecond line\n", "not an image spec: the file holds a YAML string"),
        (f"- {SECRET}\n", "not an image spec: the file holds a YAML list"),
        (f'{{"auths": {{"reg": {{"auth": "{SECRET}"}}}}}}\n', "line 1: unknown field"),
        (f"name: x\n{SECRET}: 1\n", "line 2: unknown field"),
        (f"password: [{SECRET}\n", "not valid YAML: line 2, column 1: expected ',' or ']'"),
        (f"key: *{SECRET}\n", "not valid YAML: line 1, column 6: found undefined alias '...'"),
        (f'token: "{SECRET}\n', "not valid YAML: line 2, column 1: found unexpected end of stream"),
        (f"a: b: {SECRET}\n", "not valid YAML: line 1, column 5: mapping values are not allowed here"),
        (f"x: !{SECRET} 1\n", "could not determine a constructor for the tag '...'"),
    ],
)
def test_a_spec_symlinked_to_a_secret_never_prints_it(
    content: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(content)
    link = tmp_path / "images" / "x.yaml"
    link.parent.mkdir()
    link.symlink_to(secret)
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    res = CliRunner().invoke(cli, ["render", str(link), "--cpu"])
    assert res.exit_code == 10, res.output
    assert res.output.startswith(f"envbuilder: error: {link}: ")
    assert message in res.output
    assert SECRET not in res.output
    assert "hunter2" not in res.output and "s3cr3t" not in res.output


def test_a_typo_is_still_easy_to_find(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.yaml"
    path.write_text('schema_version: 1\nname: x\nframework: "torch"\nrequirments: ["numpy"]\n')
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    res = CliRunner().invoke(cli, ["render", str(path), "--cpu"])
    assert res.exit_code == 10
    assert f"{path}: line 4: unknown field" in res.output
    assert "hint: did you mean 'requirements'?" in res.output


def test_a_binary_file_is_named_by_the_byte_that_is_not_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"name: \xff" + SECRET.encode())
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    res = CliRunner().invoke(cli, ["render", str(path), "--cpu"])
    assert res.exit_code == 10
    assert "not a text file (byte 6 is not UTF-8)" in res.output and SECRET not in res.output


def test_yaml_error_message_keeps_tokens_and_punctuation_but_no_words() -> None:
    with pytest.raises(yaml.YAMLError) as info:
        yaml.safe_load("a:\n  - x\n b secret\n")
    assert yaml_error_message(info.value) == "line 3, column 2: expected <block end>, but found '<scalar>'"
    with pytest.raises(yaml.YAMLError) as info:
        yaml.safe_load("a: 1\n\tb: 2\n")
    assert (
        yaml_error_message(info.value)
        == "line 2, column 1: found character '\\t' that cannot start any token"
    )
