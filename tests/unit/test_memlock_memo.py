"""The memlock ulimit a Docker daemon refuses (rootless or nested Docker) is said once per daemon
(issue 26 item 9): its answer to the probe is remembered a day in the data folder, keyed by the
daemon's ID; meanwhile the probe is not repeated, certify and run say nothing (the certificate
and the run log still record it), and `certify --verbose` prints it as a note."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert
from click.testing import CliRunner
from fake_engine import FakeEngine
from test_certify import certify, engine
from test_runner import engine as run_engine
from test_runner import go

import envbuilder.certify.certify
from envbuilder.certify.gpu_access import (
    MEMLOCK_MEMO_S,
    TRAINING_ULIMITS,
    drop_refused_memlock,
    memlock_memo_path,
)
from envbuilder.cli import cli
from envbuilder.engine import ContainerSpec
from envbuilder.resources import user_data_dir

WARNING = (
    "the container runtime refuses the memlock ulimit "
    "(error setting rlimit type 8: operation not permitted); running without it"
)


def spec_for(eng: FakeEngine) -> ContainerSpec:
    image = next(iter(eng.images))
    return ContainerSpec(image=image, network=None, ulimits=TRAINING_ULIMITS)


def probes(eng: FakeEngine) -> int:
    return sum(1 for c in eng.calls if c[0] == "ulimit_probe")


def test_a_refusal_is_found_once_then_remembered_for_a_day(tmp_path: Path) -> None:
    eng = engine()
    eng.refuse_memlock = True
    t = [1_000_000.0]
    first, dropped = drop_refused_memlock(eng, spec_for(eng), data_dir=tmp_path, now=lambda: t[0])
    assert dropped is not None and not dropped.said_before and dropped.warning == WARNING
    assert [u.name for u in first.ulimits] == ["stack"] and probes(eng) == 1
    memo = memlock_memo_path("FAKE:DAEMON", tmp_path)
    assert memo is not None and memo.parent == tmp_path / "daemons" and memo.is_file()
    t[0] += MEMLOCK_MEMO_S - 1
    again, dropped = drop_refused_memlock(eng, spec_for(eng), data_dir=tmp_path, now=lambda: t[0])
    assert dropped is not None and dropped.said_before and dropped.warning == WARNING
    assert [u.name for u in again.ulimits] == ["stack"] and probes(eng) == 1  # no second probe
    t[0] += 2  # a day after the probe: asked again
    _, dropped = drop_refused_memlock(eng, spec_for(eng), data_dir=tmp_path, now=lambda: t[0])
    assert dropped is not None and not dropped.said_before and probes(eng) == 2


def test_each_daemon_is_asked_for_itself(tmp_path: Path) -> None:
    rootless = engine()
    rootless.refuse_memlock = True
    drop_refused_memlock(rootless, spec_for(rootless), data_dir=tmp_path)
    other = replace(engine(), daemon_id="OTHER:DAEMON/../x")  # an ID is a file name, never a path
    kept, dropped = drop_refused_memlock(other, spec_for(other), data_dir=tmp_path)
    assert dropped is None and [u.name for u in kept.ulimits] == ["memlock", "stack"] and probes(other) == 1
    assert sorted(p.name for p in (tmp_path / "daemons").iterdir()) == [
        "FAKE_DAEMON.json",
        "OTHER_DAEMON_.._x.json",
    ]
    # the daemon that allows memlock is remembered too: not probed again
    drop_refused_memlock(other, spec_for(other), data_dir=tmp_path)
    assert probes(other) == 1


def test_nothing_is_remembered_without_a_daemon_id_or_from_a_bad_memo(tmp_path: Path) -> None:
    anonymous = replace(engine(), daemon_id="")
    anonymous.refuse_memlock = True
    for _ in range(2):
        _, dropped = drop_refused_memlock(anonymous, spec_for(anonymous), data_dir=tmp_path)
        assert dropped is not None and not dropped.said_before
    assert probes(anonymous) == 2 and not (tmp_path / "daemons").exists()
    eng = engine()
    eng.refuse_memlock = True
    memo = memlock_memo_path("FAKE:DAEMON", tmp_path)
    assert memo is not None
    memo.parent.mkdir(parents=True)
    for bad in ("{", '{"memlock": {"checked": "x", "refused": null}}', '{"memlock": {"checked": 1e18}}'):
        memo.write_text(bad)
        _, dropped = drop_refused_memlock(eng, spec_for(eng), data_dir=tmp_path)
        assert dropped is not None and not dropped.said_before
    assert probes(eng) == 3
    assert json.loads(memo.read_text())["memlock"]["refused"].startswith("error setting rlimit type 8")


def test_certify_warns_the_first_time_only_and_the_certificate_always_records_it() -> None:
    warned = []
    for _ in range(2):
        eng = engine()
        eng.refuse_memlock = True
        got, lines = certify(eng)
        assert WARNING in got.data["run"]["warnings"]
        assert [u.name for u in eng.runs[0].ulimits] == ["stack"]
        warned.append(sum(WARNING in line for line in lines))
        assert got.verdict == "certified"
    assert warned == [1, 0]
    assert (user_data_dir() / "daemons" / "FAKE_DAEMON.json").is_file()


def test_run_warns_the_first_time_only_and_its_log_always_records_it(tmp_path: Path) -> None:
    said = []
    for n in range(2):
        eng = run_engine(refuse_memlock=True)
        outcome, lines = go(tmp_path / str(n), eng, cert())
        assert outcome.warnings[0] == WARNING
        said.append(sum("refuses the memlock ulimit" in line for line in lines))
        assert probes(eng) == 1 - n
    assert said == [1, 0]


def test_certify_verbose_prints_the_certificates_warnings_as_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    from test_cli_certify import make

    def certify_image(image: str, **kw: Any) -> Any:
        return _with_warnings(make("certified"), [WARNING])

    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", certify_image)
    quiet = CliRunner().invoke(cli, ["certify", "img:1", "--no-store"])
    loud = CliRunner().invoke(cli, ["certify", "img:1", "--no-store", "--verbose"])
    assert quiet.exit_code == loud.exit_code == 0, loud.output
    assert f"note: {WARNING}" not in quiet.output
    assert loud.output.count(f"note: {WARNING}") == 1


def _with_warnings(made: Any, warnings: list[str]) -> Any:
    from envbuilder.certify.certificate import build_certificate

    d = made.to_dict()
    return build_certificate(
        image=d["image"],
        host=d["host"],
        run={"warnings": warnings},
        harness=d["harness"],
        thresholds=d["thresholds"],
        verdict=d["verdict"],
        verdict_reason=d["verdict_reason"],
    )
