"""Issue 18, the run log on kill: a run whose client was SIGKILLed is recorded by the janitor that
removes its container (the record rides on the container's labels); a stopped run records the
exit code the CLI ends with. The real processes and daemon: tests/integration/test_run_docker.py."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from envbuilder.engine import DockerEngine
from envbuilder.engine.ownership import (
    DATA_LABEL,
    LOG_LABEL,
    OWNER_LABEL,
    RECORD_LABEL,
    OwnedContainer,
    data_mark,
    orphan_record,
    record_labels,
)
from envbuilder.lifecycle import Stopped, owner_mark, stop_error

RECORD = {"run_id": "20261201T160000Z-abc123", "image": "sha256:" + "ab" * 32, "command": ["sleep", "60"]}
NOW = datetime(2026, 12, 1, 16, 1, 0, tzinfo=timezone.utc)


def box(status: str, labels: dict[str, str]) -> OwnedContainer:
    return OwnedContainer(id="c" * 64, name="envbuilder-run-x", status=status, labels=labels)


def test_a_running_orphan_is_recorded_as_killed_by_its_removal(tmp_path: Path) -> None:
    labels = record_labels(tmp_path / "runs.jsonl", RECORD)
    got = orphan_record(box("running", labels), {"StartedAt": "2026-12-01T16:00:00.123456789Z"}, now=NOW)
    assert got is not None
    log, line = got
    assert log == tmp_path / "runs.jsonl"
    assert line == {
        **RECORD,
        "outcome": "orphaned",
        "exit_code": 137,
        "seconds": 59.877,
        "container_status": "running",
        "recorded_by": "janitor",
    }


def test_an_exited_orphan_keeps_the_jobs_exit_code_and_time(tmp_path: Path) -> None:
    state = {"ExitCode": 3, "StartedAt": "2026-12-01T16:00:00Z", "FinishedAt": "2026-12-01T16:00:42.5Z"}
    got = orphan_record(box("exited", record_labels(tmp_path / "r.jsonl", RECORD)), state, now=NOW)
    assert got is not None and (got[1]["exit_code"], got[1]["seconds"]) == (3, 42.5)


def test_no_record_no_line() -> None:
    assert orphan_record(box("exited", {}), {}) is None
    assert orphan_record(box("exited", {RECORD_LABEL: json.dumps(RECORD)}), {}) is None  # no log path
    assert orphan_record(box("exited", {LOG_LABEL: "", RECORD_LABEL: json.dumps(RECORD)}), {}) is None
    assert orphan_record(box("exited", {LOG_LABEL: "/x", RECORD_LABEL: "not json"}), {}) is None
    assert orphan_record(box("exited", {LOG_LABEL: "/x", RECORD_LABEL: "[1]"}), {}) is None
    never = orphan_record(
        box("created", record_labels(Path("/x"), RECORD)), {"StartedAt": "0001-01-01T00:00:00Z"}
    )
    assert never is not None and never[1]["seconds"] is None


class _Container:
    def __init__(self, labels: dict[str, str], status: str, cid: str = "d" * 64) -> None:
        self.id, self.name, self.status, self.labels = cid, f"envbuilder-run-{cid[:1]}", status, labels
        self.attrs = {"State": {"ExitCode": 0, "StartedAt": "2026-12-01T16:00:00Z"}}


class _Client:
    """The SDK client as the janitor uses it. Like the daemon, it ignores nothing it is given, but
    it does not apply the label filter either: the janitor must not rely on the filter alone."""

    def __init__(self, found: list[_Container]) -> None:
        self.removed: list[str] = []
        self.filters: list[Any] = []
        client = self

        class _Containers:
            def list(self, **kw: Any) -> list[_Container]:
                client.filters.append(kw.get("filters"))
                return found

        class _Api:
            def remove_container(self, cid: str, force: bool) -> None:
                assert force, "a running orphan is removed only with force (docker rm -f)"
                client.removed.append(cid)

        self.containers, self.api = _Containers(), _Api()


def test_the_janitor_writes_the_orphans_line_after_removing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone_mark = f"{owner_mark().rsplit('/', 2)[0]}/{dead.pid}/1"  # this host, a process that is gone
    log = tmp_path / "runs.jsonl"
    labels = {OWNER_LABEL: gone_mark, DATA_LABEL: data_mark(), **record_labels(log, RECORD)}
    client = _Client([_Container(labels, "running")])
    notices: list[str] = []
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its temp-folder sweep: not the real /tmp
    engine = DockerEngine(janitor=False, notice=notices.append)
    engine._docker = client  # the SDK client, replaced (no daemon in unit tests)
    assert engine.sweep_leftovers() == ("envbuilder-run-d",) and client.removed == ["d" * 64]
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert (line["run_id"], line["outcome"], line["exit_code"]) == (RECORD["run_id"], "orphaned", 137)
    assert any(f"recorded run {RECORD['run_id']} in {log} as orphaned" in n for n in notices)


def test_a_stop_ends_with_the_clis_exit_code() -> None:
    assert stop_error(KeyboardInterrupt()).exit_code == 130
    assert stop_error(Stopped(signal.SIGTERM)).exit_code == 143
    assert stop_error(Stopped(signal.SIGHUP)).message == "terminated by SIGHUP"


def test_an_orphans_times_and_exit_code_are_never_invented(tmp_path: Path) -> None:
    labels = record_labels(tmp_path / "r.jsonl", RECORD)
    # A running job: Docker's ExitCode 0 is a placeholder, not the job's; the removal kills it.
    running = orphan_record(
        box("running", labels), {"ExitCode": 0, "StartedAt": "2026-12-01T16:00:00Z"}, now=NOW
    )
    assert running is not None and running[1]["exit_code"] == 137
    # An exited job without a readable exit code, or whose clock ran backwards.
    odd = {"ExitCode": "3", "StartedAt": "2026-12-01T16:00:10Z", "FinishedAt": "2026-12-01T16:00:00Z"}
    got = orphan_record(box("exited", labels), odd, now=NOW)
    assert got is not None and (got[1]["exit_code"], got[1]["seconds"]) == (137, None)
    assert got[1]["container_status"] == "exited" and got[1]["recorded_by"] == "janitor"


def test_a_job_that_never_started_is_not_recorded_as_a_success(tmp_path: Path) -> None:
    zero = "0001-01-01T00:00:00Z"
    state = {"ExitCode": 0, "StartedAt": zero, "FinishedAt": zero}
    got = orphan_record(box("created", record_labels(tmp_path / "r.jsonl", RECORD)), state, now=NOW)
    assert got is not None and (got[1]["exit_code"], got[1]["seconds"]) == (137, None)


def test_a_container_purpose_is_one_short_word() -> None:
    from envbuilder.engine.ownership import container_name

    for bad in ("run\n", "run;rm", "run x", "Run", "-run", "a" * 33):
        with pytest.raises(ValueError, match="purpose"):
            container_name(bad)
    assert container_name("a" * 32).startswith("envbuilder-" + "a" * 32 + "-")


def test_a_records_label_is_the_same_text_whatever_order_its_fields_came_in(tmp_path: Path) -> None:
    """The record label is canonical JSON (keys sorted), as the run log's lines are: the same
    record gives the same label (what `docker ps --filter label=...=VALUE` and `docker inspect`
    show), and it reads back as that record."""
    log = tmp_path / "runs.jsonl"
    forward = record_labels(log, {"a": 1, "b": {"y": 2, "x": 3}, "c": "é"})
    backward = record_labels(log, {"c": "é", "b": {"x": 3, "y": 2}, "a": 1})
    assert forward == backward
    assert forward[RECORD_LABEL] == '{"a": 1, "b": {"x": 3, "y": 2}, "c": "\\u00e9"}'
    assert json.loads(forward[RECORD_LABEL]) == {"a": 1, "b": {"x": 3, "y": 2}, "c": "é"}


# --------------------------------------------------------------------------- the seventh operator set
# benchmarks/mutants.py --auto janitor --ops seventh (2026-12-05): what an engine's inspect feeds in.


@pytest.mark.parametrize(
    ("started", "finished"),
    [
        ("2026-12-01T17:00:00+01:00", "2026-12-01T16:00:42.5Z"),
        ("2026-12-01T11:00:00.000000001-05:00", "2026-12-01T17:00:42.500000001+01:00"),
        ("2026-12-01T16:00:00", "2026-12-01T16:00:42.5"),  # no zone: UTC, as before
    ],
)
def test_an_orphans_times_written_with_an_offset_are_read_in_utc(
    tmp_path: Path, started: str, finished: str
) -> None:
    """An engine may write the host's own zone (Podman's compatible API: podman#10267): the offset
    was dropped, so a job that ran 42.5 s was recorded with no time (an hour negative), or with
    an hour too many the other way."""
    state = {"ExitCode": 3, "StartedAt": started, "FinishedAt": finished}
    got = orphan_record(box("exited", record_labels(tmp_path / "r.jsonl", RECORD)), state, now=NOW)
    assert got is not None and got[1]["seconds"] == 42.5


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("2026-12-01T11:00:00.0001-05:00", datetime(2026, 12, 1, 16, 0, 0, 100, tzinfo=timezone.utc)),
        ("2026-12-01T16:00:00.123456789Z", datetime(2026, 12, 1, 16, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-12-01T16:00:00.123456789+01:00", datetime(2026, 12, 1, 15, 0, 0, 123456, tzinfo=timezone.utc)),
        ("2026-12-01T16:00:00.Z", None),  # a point with no digits
        ("2026-12-01T16:00:00.1234567891Z", None),  # past nanoseconds
        ("0001-01-01T00:00:00Z", None),  # the zero time: never started
        ("9999-12-31T23:00:00-05:00", None),  # past year 9999 in UTC: no time, not an OverflowError
        ("2026-02-30T16:00:00Z", None),
        ("2026-12-01T16:00:00Zjunk", None),
        (1764604800, None),  # a number: no time, not an AttributeError
        (None, None),
    ],
)
def test_an_engines_time_is_read_or_is_no_time(text: object, when: datetime | None) -> None:
    from envbuilder.engine.ownership import _docker_time

    assert _docker_time(text) == when


@pytest.mark.parametrize("exit_code", [True, 3.0, "3", None])
def test_an_exit_code_that_is_no_integer_is_no_exit_code(tmp_path: Path, exit_code: object) -> None:
    """A true (JSON's, which Python counts as the int 1) was recorded as the job's exit code."""
    state = {"ExitCode": exit_code, "StartedAt": "2026-12-01T16:00:00Z", "FinishedAt": "2026-12-01T16:00:01Z"}
    got = orphan_record(box("exited", record_labels(tmp_path / "r.jsonl", RECORD)), state, now=NOW)
    assert got is not None and got[1]["exit_code"] == 137


def test_a_record_label_nested_past_the_stack_is_no_record() -> None:
    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError, not ValueError
    assert orphan_record(box("exited", {LOG_LABEL: "/x", RECORD_LABEL: deep}), {}) is None


def test_a_leftover_whose_state_is_null_is_removed_and_recorded_without_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone_mark = f"{owner_mark().rsplit('/', 2)[0]}/{dead.pid}/1"
    log = tmp_path / "runs.jsonl"
    box_ = _Container(
        {OWNER_LABEL: gone_mark, DATA_LABEL: data_mark(), **record_labels(log, RECORD)}, "exited"
    )
    box_.attrs = {"State": None}  # type: ignore[dict-item]
    client = _Client([box_])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    engine = DockerEngine(janitor=False, notice=lambda _: None)
    engine._docker = client
    assert engine.sweep_leftovers() == ("envbuilder-run-d",)
    (line,) = [json.loads(x) for x in log.read_text().splitlines()]
    assert (line["exit_code"], line["seconds"]) == (137, None)
