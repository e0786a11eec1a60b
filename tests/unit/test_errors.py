"""Error families: each has its own exit code, the README's table lists exactly those codes, and
errors keep their place (file, line, field, value) as fields, not only inside the message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envbuilder import errors
from envbuilder.cli import cli
from envbuilder.errors import EnvbuilderError, MatrixError, SpecError, StoreError
from envbuilder.resolve.model import NoCompatibleStackError

ROOT = Path(__file__).resolve().parents[2]
RESERVED = {0: "success", 1: "internal error"}  # 1 is the base class: nothing expected uses it


def readme_codes() -> dict[int, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m[1]): m[2] for m in re.finditer(r"^\| (\d+) \| (.+) \|$", section, re.MULTILINE)}


def families() -> list[type[EnvbuilderError]]:
    found = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, EnvbuilderError)]
    return [c for c in [*found, NoCompatibleStackError] if c is not EnvbuilderError]


def test_every_family_has_its_own_documented_exit_code() -> None:
    codes = [c.exit_code for c in families()]
    assert len(codes) == len(set(codes)), sorted(codes)
    documented = readme_codes()
    assert set(codes) | set(RESERVED) == set(documented), "README.md's exit-code table and errors differ"
    assert StoreError.exit_code not in RESERVED


def test_store_error_exits_with_its_code_and_names_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    res = CliRunner().invoke(cli, ["certs", "list"], env={"ENVBUILDER_DATA_DIR": str(blocker)})
    assert res.exit_code == StoreError.exit_code == 17
    assert f"envbuilder: error: cannot open the certificate store {blocker}/certs.sqlite" in res.stderr
    assert "\nhint: " in res.stderr and "Traceback" not in res.output


def test_no_compatible_stack_carries_the_resolution() -> None:
    from envbuilder.image.spec import load_spec
    from envbuilder.pipeline.resolution import resolve_spec

    spec = load_spec(ROOT / "images" / "pytorch-train.yaml")
    with pytest.raises(NoCompatibleStackError) as caught:
        resolve_spec(spec, "535.104.05", ("NVIDIA GeForce RTX 5090",), (), False)
    err = caught.value
    assert err.exit_code == 4 and err.resolution.stack is None and err.resolution.rejected
    assert err.file == spec.path and err.message.startswith(f"{spec.path}: no compatible torch")
    assert f"{len(err.resolution.rejected)} candidates rejected" in err.message


def test_spec_errors_keep_file_field_and_value() -> None:
    from envbuilder.image.spec import parse_spec

    with pytest.raises(SpecError) as caught:
        raw = {"schema_version": 1, "name": "x", "framework": "torch", "user": {"uid": "root"}}
        parse_spec(raw, "x.yaml")
    assert caught.value.fields() == {"file": "x.yaml", "field": "user.uid", "value": "root"}


def test_matrix_errors_keep_file_line_and_field(tmp_path: Path) -> None:
    from envbuilder.matrix.reader import Ctx

    err = Ctx("cuda.yaml").at("releases[3] (12.8.1)", None).fail("min_driver", "lower than before")
    assert isinstance(err, MatrixError)
    assert err.fields() == {"file": "cuda.yaml", "field": "releases[3] (12.8.1) min_driver"}


SPEC = str(ROOT / "images" / "pytorch-train.yaml")


@pytest.mark.parametrize(
    ("argv", "family", "says"),
    [
        (
            ["--lock-out", "/nonexistent/x.lock.json"],
            errors.OutputError,
            "/nonexistent is not a writable folder",
        ),
        (
            ["--tag", "me/train:v1\n"],
            errors.UsageError,
            "--tag 'me/train:v1\\n' is not a valid image reference",
        ),
        (["--tag", "me/" + "t" * 300], errors.UsageError, "is not a valid image reference"),
        (["--push", "127.0.0.1:5000\n"], errors.UsageError, "is not a registry address"),
    ],
)
def test_hostile_build_options_exit_with_the_readme_code_of_their_family_before_building(
    argv: list[str], family: type[EnvbuilderError], says: str, tmp_path: Path
) -> None:
    """Issue 18 (4, 6): refused before any build starts, with the code README's table gives the
    family, one error line and a hint, never a traceback."""
    lock = ["--lock-out", str(tmp_path / "x.lock.json")] if "--lock-out" not in argv else []
    res = CliRunner().invoke(cli, ["build", SPEC, "--cpu", *lock, *argv])
    assert res.exit_code == family.exit_code and family.exit_code in readme_codes(), res.output
    lines = res.stderr.splitlines()
    assert lines[0].startswith("envbuilder: error: ") and says in lines[0] and lines[1].startswith("hint: ")
    assert "Traceback" not in res.output and not list(tmp_path.iterdir())
