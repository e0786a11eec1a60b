"""Issue 18, defect 7: stored fields reach the terminal escaped (an imported certificate's
image.ref cannot add a row or send an escape sequence; an image's harness cannot drive rich
markup), and an issued_at that is no timestamp cannot sort as newest forever."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert_doc
from click.testing import CliRunner

from envbuilder.certify.certificate import Certificate, build_certificate, parse_timestamp
from envbuilder.certify.store import CertStore
from envbuilder.cli import cli
from envbuilder.report.model import build_report
from envbuilder.report.terminal import format_terminal
from envbuilder.tables import printable, table

EVIL = "team/train:1\nffffffffffff  2099-01-01T00:00:00Z  certified  fake-row\x1b[2J\x1b]0;pwned\x07\u202e"


def evil_cert(issued_at: str | None = "2026-11-30T00:00:00Z", ref: str = EVIL) -> Certificate:
    return build_certificate(
        image={"id": "sha256:" + "ab" * 32, "ref": ref, "stack": None, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": "580.159.04\x1b[31m", "gpus": [], "gpu_access": "none"},
        run={},
        harness={
            "steps": [{"name": "smoke\x1b[5m", "status": "fail", "seconds": 1.0, "reason": "bad\nrow"}],
            "gates": [],
            "verdict": "failed",
        },
        thresholds={},
        verdict="failed",
        verdict_reason="failed steps: smoke\r\x1b[Kcertified",
        issued_at=issued_at,
    )


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def _import(tmp_path: Path, cert: Certificate) -> Any:
    path = tmp_path / f"{cert.id[:12]}.json"
    path.write_text(cert.to_json(indent=2))
    return CliRunner().invoke(cli, ["certs", "import", str(path)])


def _assert_inert(text: str) -> None:
    for bad in ("\x1b", "\x07", "\r", "\u202e"):
        assert bad not in text
    assert "fake-row" not in text or "\\n" in text


def test_certs_list_prints_one_row_per_certificate_with_the_ref_escaped(data: Path, tmp_path: Path) -> None:
    assert _import(tmp_path, evil_cert()).exit_code == 0
    res = CliRunner().invoke(cli, ["certs", "list"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert len(lines) == 2  # the header and the one certificate: no fake row
    _assert_inert(res.output)
    assert lines[1].endswith("team/train:1\\nffffffffffff  2099-01-01T00:00:00Z  certified  fake-row"
                             "\\x1b[2J\\x1b]0;pwned\\x07\\u202e")  # fmt: skip
    listed = json.loads(CliRunner().invoke(cli, ["certs", "list", "--json"]).output)
    assert listed[0]["image_ref"] == EVIL  # --json keeps the value itself (JSON escapes it)


def test_certs_show_and_the_report_escape_every_stored_field(data: Path, tmp_path: Path) -> None:
    cert = evil_cert()
    assert _import(tmp_path, cert).exit_code == 0
    shown = CliRunner().invoke(cli, ["certs", "show", cert.id[:12]])
    assert shown.exit_code == 0, shown.output
    _assert_inert(shown.output)
    assert "smoke\\x1b[5m" in shown.output and "580.159.04\\x1b[31m" in shown.output
    assert "failed steps: smoke\\r\\x1b[Kcertified" in shown.output
    text = format_terminal(build_report(cert))
    _assert_inert(text)
    assert "bad\\nrow" in text
    page = tmp_path / "report.html"  # not the default ./envbuilder-report-ID.html of the cwd
    reported = CliRunner().invoke(cli, ["report", cert.id[:12], "--html", str(page)])
    assert reported.exit_code == 0, reported.output
    _assert_inert(reported.output)
    assert page.is_file()


def test_an_error_that_quotes_a_stored_field_is_one_line(data: Path) -> None:
    res = CliRunner().invoke(cli, ["certs", "show", "zz\x1b[2J\nzz"])
    assert res.exit_code == 2
    assert "\x1b" not in res.output
    assert len([line for line in res.output.splitlines() if line.startswith("envbuilder: error:")]) == 1


def test_printable_escapes_what_a_terminal_acts_on_and_keeps_text() -> None:
    assert printable("NVIDIA H200 é 中 ok") == "NVIDIA H200 é 中 ok"
    assert (
        printable("a\nb\tc\x1b[31m\x00\x7f\x9b\u2028\u202e")
        == "a\\nb\\tc\\x1b[31m\\x00\\x7f\\x9b\\u2028\\u202e"
    )
    assert printable(printable("x\ny")) == "x\\ny"  # idempotent: printing twice changes nothing
    assert table(("A",), [["x\ny"]]) == ["  A", "  x\\ny"]


def test_rich_reads_no_markup_in_the_live_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import rich.console
    from rich.text import Text

    from envbuilder.cli.progress_view import StepProgress

    shown: list[object] = []

    class _Status:
        def __init__(self, renderable: object) -> None:
            shown.append(renderable)

        def start(self) -> None: ...
        def stop(self) -> None: ...
        def update(self, renderable: object) -> None:
            shown.append(renderable)

    monkeypatch.setattr(rich.console.Console, "status", lambda self, r, **kw: _Status(r))
    p = StepProgress(("certify",), stream=io.StringIO(), tty=True)
    with p.step("certify"):
        p.say("[blink][link=https://evil.example]click[/link][/blink]\x1b[2J")
        p.view.tick()
    assert shown and all(isinstance(r, Text) for r in shown)
    last = shown[-1]
    assert isinstance(last, Text) and "[blink][link=https://evil.example]click" in last.plain
    assert "\x1b" not in last.plain


@pytest.mark.parametrize(
    "issued_at",
    [
        "\uff12\uff10\uff19\uff19-01-01T00:00:00Z",  # full-width digits: strptime took them
        "\u0662\u0660\u0669\u0669-01-01T00:00:00Z",
        "zzzz",
        "2099-13-01T00:00:00Z",
        "2099-01-01 00:00:00",
    ],
)
def test_an_issued_at_that_is_no_rfc3339_timestamp_is_refused_at_import(
    issued_at: str, data: Path, tmp_path: Path
) -> None:
    res = _import(tmp_path, evil_cert(issued_at=issued_at, ref="team/train:1"))
    assert res.exit_code == 12, res.output
    assert "issued_at is not an RFC 3339 timestamp" in res.output
    assert parse_timestamp(issued_at) is None


def test_a_stored_malformed_issued_at_sorts_last(data: Path) -> None:
    store = CertStore()
    old = Certificate(cert_doc(issued_at="2026-01-01T00:00:00Z"))
    new = Certificate(cert_doc(issued_at="2026-06-01T00:00:00+02:00", image_id="sha256:" + "cd" * 32))
    bad = Certificate(
        cert_doc(issued_at="\uff12\uff10\uff19\uff19-01-01T00:00:00Z", image_id="sha256:" + "ef" * 32)
    )
    for c in (old, new, bad):
        store.add(c)  # a store written before import checked the time
    assert [r.id for r in store.list()] == [new.id, old.id, bad.id]
    with sqlite3.connect(store.path) as db:  # SQL's text order alone put the full-width year first
        first = db.execute("SELECT id FROM certificates ORDER BY issued_at DESC").fetchone()[0]
    assert first == bad.id


def test_parse_timestamp() -> None:
    ts = parse_timestamp("2026-12-01T15:00:00Z")
    assert ts is not None and ts.isoformat() == "2026-12-01T15:00:00+00:00"
    offset = parse_timestamp("2026-12-01T17:00:00.5+02:00")
    assert offset is not None and offset.isoformat() == "2026-12-01T15:00:00.500000+00:00"
    assert parse_timestamp(None) is None and parse_timestamp("2026-12-01T15:00:00Z\n") is None
