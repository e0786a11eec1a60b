"""Typed loading at the boundary (issue 18, defect 4): a lock or certificate with a field of the
wrong type, a huge integer, nesting past the depth budget or a lone surrogate is one envbuilder
error line with its README exit code, never a traceback; the schema mechanism (envbuilder/typed.py)
names the field, not the value."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert_doc
from click.testing import CliRunner
from test_lock import built_lock

from envbuilder.certify.certificate import Certificate, seal
from envbuilder.cli import cli
from envbuilder.errors import CertificateRefusedError, SpecError
from envbuilder.image.lock import read_lock
from envbuilder.typed import (
    INT,
    MAX_INT,
    NONNEGATIVE,
    POSITIVE,
    STR,
    WrongType,
    check_document,
    list_of,
    map_of,
    obj,
    opt,
)

DATA = Path(__file__).parent.parent / "data"
REPO = Path(__file__).parent.parent.parent
HUGE = "1" + "0" * 5000  # the 5000-digit integer, as JSON text
DEEP = "[" * 100 + "]" * 100  # past bounded.MAX_DEPTH (64)


def lock_text(mutate: Callable[[dict[str, Any]], None]) -> str:
    doc = built_lock().to_dict()
    mutate(doc)
    return json.dumps(doc)


def resealed(mutate: Callable[[dict[str, Any]], None], base: dict[str, Any] | None = None) -> str:
    """A certificate edited and sealed again: its hashes verify, one field has the wrong type."""
    doc = json.loads(json.dumps(base or cert_doc()))
    mutate(doc)
    body = {k: v for k, v in doc.items() if k not in ("content_hash", "section_hashes")}
    return json.dumps(seal(body))


def sample(name: str) -> dict[str, Any]:
    return json.loads((DATA / "certs" / f"{name}.json").read_text())  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the schema itself


def test_check_document_names_the_field_and_the_type_never_the_value() -> None:
    shape = obj({"a": obj({"b": list_of(INT)}), "c": opt(STR)}, required=("a",))
    check_document({"a": {"b": [1, 2]}, "c": None, "extra": [1.5]}, shape)
    with pytest.raises(WrongType, match=r"'a\.b\[1\]': expected an integer, got a string"):
        check_document({"a": {"b": [1, "secret-token"]}}, shape)
    with pytest.raises(WrongType) as err:
        check_document({"a": {"b": [1, "secret-token"]}}, shape)
    assert "secret-token" not in str(err.value)
    with pytest.raises(WrongType, match=r"'a': .*missing"):
        check_document({}, shape)
    with pytest.raises(WrongType, match=r"'a\.b\[0\]': expected an integer, got a boolean"):
        check_document({"a": {"b": [True]}}, shape)  # a bool is no integer here


def test_a_minimum_is_inclusive_and_every_value_of_a_mapping_is_checked() -> None:
    check_document(1, POSITIVE)
    check_document(0, NONNEGATIVE)
    with pytest.raises(WrongType, match="expected a positive integer"):
        check_document(0, POSITIVE)
    with pytest.raises(WrongType, match="expected a non-negative integer"):
        check_document(-1, NONNEGATIVE)
    check_document({"a": "x"}, map_of(STR))
    with pytest.raises(WrongType, match=r"'b': expected a string, got a number"):
        check_document({"a": "x", "b": 1}, map_of(STR))
    with pytest.raises(WrongType, match=r"'extra': expected an integer, got a string"):
        check_document({"a": 1, "extra": "x"}, obj({"a": INT}, others=INT))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (MAX_INT + 1, "64 bits"),
        (-MAX_INT - 1, "64 bits"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        ("\ud800", "surrogate"),
        ({"\udfff": 1}, "surrogate"),
    ],
)
def test_every_json_value_is_checked_wherever_it_is(value: object, expected: str) -> None:
    with pytest.raises(WrongType, match=expected):
        check_document({"anything": [{"deep": value}]}, obj())
    check_document({"anything": [{"deep": MAX_INT}]}, obj())


# --------------------------------------------------------------------------- lock files


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["stack"].update(companions=["torchvision==0.26.0"]), "stack.companions"),
        (lambda d: d["stack"]["archs"].update(sass=[None]), "stack.archs.sass[0]"),
        (lambda d: d["stack"].update(python=3.12), "stack.python"),
        (lambda d: d["stack"].update(notes="one note"), "stack.notes"),
        (
            lambda d: d["resolution"]["host"].update(gpus=[{"name": "H200", "cc": 9.0}]),
            "resolution.host.gpus[0].cc",
        ),
        (lambda d: d["resolution"]["host"].update(driver=580), "resolution.host.driver"),
        (lambda d: d["build"].update(tags=[1]), "build.tags[0]"),
        (lambda d: d["build"]["installed"][0].update(record_sha256=7), "build.installed[0].record_sha256"),
        (lambda d: d["build"].update(source_date_epoch=-1), "build.source_date_epoch"),
        (lambda d: d["build"].update(source_date_epoch="0"), "build.source_date_epoch"),
        (lambda d: d["build"].update(source_date_epoch=True), "build.source_date_epoch"),
        (lambda d: d.update(spec_path=["a"]), "spec_path"),
        (lambda d: d.update(schema_version="2"), "schema_version"),
        (lambda d: d["stack"].update(cuda=2**70), "stack.cuda"),
        (lambda d: d["stack"].update(companions={"torchvision": 1}), "stack.companions.torchvision"),
        (lambda d: d.update(spec_path="\ud800"), "spec_path"),
    ],
)
def test_a_wrong_typed_lock_field_is_a_spec_error_naming_it(
    tmp_path: Path, mutate: Callable[[dict[str, Any]], None], field: str
) -> None:
    path = tmp_path / "bad.lock.json"
    path.write_text(lock_text(mutate))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert err.value.field == field and str(path) in err.value.message and err.value.hint


@pytest.mark.parametrize(
    "text",
    [
        lock_text(lambda d: None).replace('"schema_version": 2', f'"schema_version": {HUGE}'),
        lock_text(lambda d: d.update(spec_path="PLACEHOLDER")).replace('"PLACEHOLDER"', DEEP),
        '{"schema_version": 2, "x": ' + "[" * 5000 + "]" * 5000 + "}",
    ],
    ids=["5000-digit-integer", "nested-100-deep", "nested-5000-deep"],
)
def test_a_hostile_lock_file_is_one_error_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.lock.json"
    path.write_text(text)
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert "\n" not in err.value.message and len(err.value.message) < 400


def test_the_cli_refuses_a_wrong_typed_lock_with_exit_10_and_no_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.lock.json"
    path.write_text(lock_text(lambda d: d["stack"].update(companions=["x"])))
    res = CliRunner().invoke(cli, ["lock", str(path)])
    assert res.exit_code == 10, res.output
    assert isinstance(res.exception, SystemExit)  # a traceback would leave another exception
    assert "envbuilder: error:" in res.stderr and "stack.companions" in res.stderr and "hint:" in res.stderr


# --------------------------------------------------------------------------- certificates


def test_every_certificate_in_the_repository_passes_the_schema() -> None:
    """The schema is not stricter than what real harness runs wrote (H200 results, samples)."""
    found = 0
    for path in [*REPO.glob("benchmarks/results/**/*.json"), *DATA.glob("**/*.json")]:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
        if isinstance(doc, dict) and doc.get("kind") == "envbuilder-certificate":
            Certificate.from_json(text, str(path))
            found += 1
    assert found >= 5


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["harness"]["steps"][0].update(seconds="fast"), "harness.steps[0].seconds"),
        (lambda d: d["harness"]["steps"][0].update(warnings=[None]), "harness.steps[0].warnings[0]"),
        (lambda d: d["harness"]["telemetry"]["series"].update(t=["x"]), "harness.telemetry.series.t[0]"),
        (lambda d: d["harness"].update(notes="a note"), "harness.notes"),
        (lambda d: d["harness"]["steps"][0].update(metrics=[]), "harness.steps[0].metrics"),
        (lambda d: d["host"].update(gpus={"name": "H200"}), "host.gpus"),
        (lambda d: d["image"].update(ref=["a"]), "image.ref"),
        (lambda d: d["image"].update(id=None), "image.id"),
        (lambda d: d.update(verdict_reason=12), "verdict_reason"),
        (lambda d: d["image"]["stack"]["archs"].update(sass=[None]), "image.stack.archs.sass[0]"),
    ],
)
def test_a_sealed_certificate_with_a_wrong_typed_field_is_refused_at_load(
    mutate: Callable[[dict[str, Any]], None], field: str
) -> None:
    base = sample("sample-gpu")
    base["image"]["stack"] = cert_doc()["image"]["stack"]
    text = resealed(mutate, base)
    with pytest.raises(CertificateRefusedError) as err:
        Certificate.from_json(text, "c.json")
    assert err.value.field == field and err.value.hint


@pytest.mark.parametrize(
    "text",
    [
        resealed(lambda d: d["run"].update(x="PLACEHOLDER")).replace('"PLACEHOLDER"', DEEP),
        resealed(lambda d: d["run"].update(x="PLACEHOLDER")).replace('"PLACEHOLDER"', '"\\ud800"'),
        resealed(lambda d: d["run"].update(x="PLACEHOLDER")).replace('"PLACEHOLDER"', HUGE),
        resealed(lambda d: d["run"].update(x="PLACEHOLDER")).replace('"PLACEHOLDER"', "NaN"),
    ],
    ids=["nested-100", "lone-surrogate", "5000-digit-integer", "nan"],
)
def test_certs_import_and_report_of_a_hostile_file_exit_12_without_a_traceback(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "hostile.json"
    path.write_text(text, encoding="utf-8")
    for args in (["certs", "import", str(path)], ["report", "--no-html", str(path)]):
        res = CliRunner().invoke(cli, args)
        assert res.exit_code == 12, (args, res.output)
        assert isinstance(res.exception, SystemExit)
        assert "envbuilder: error:" in res.stderr and "hint:" in res.stderr


def test_report_of_a_sealed_certificate_with_a_wrong_typed_field_exits_12(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(
        resealed(lambda d: d["harness"]["telemetry"]["series"].update(t=["x"]), sample("sample-gpu"))
    )
    res = CliRunner().invoke(cli, ["report", "--no-html", str(path)])
    assert res.exit_code == 12 and isinstance(res.exception, SystemExit), res.output
    assert "harness.telemetry.series.t[0]" in res.stderr


# --------------------------------------------------------------------------- versions on the command line

LONG = "1" * 5000


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--python", f"3.{LONG}"], "malformed Python version '3.111"),
        (["--driver", f"580.{LONG}.1"], "malformed driver version '580.111"),
        (["--driver", "\uff15\uff18\uff10.95.05"], "non-ASCII character '\uff15' U+FF15"),
        (["--framework", f"torch==2.{LONG}"], "longer than 200 characters"),  # was a ValueError traceback
    ],
)
def test_a_hostile_version_on_the_command_line_is_exit_2_in_one_short_line(
    args: list[str], said: str
) -> None:
    res = CliRunner().invoke(cli, ["resolve", "--cc", "8.0", *args])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output[-300:]
    error = next(line for line in res.stderr.splitlines() if line.startswith("envbuilder: error:"))
    assert said in error and len(error) < 300 and "hint:" in res.stderr
