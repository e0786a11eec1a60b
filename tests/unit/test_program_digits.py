"""Numbers as other programs print them (nvidia-smi's PID cell, the kernel log's time, sacct's
exit code, sbatch's job ID, Podman's and Docker's PIDs, a registry's Content-Length): ASCII digits
only (typed.ascii_int). Each site read `str.isdigit()` and then `int()`, and "²".isdigit() holds
while int("²") raises: one odd cell was a ValueError traceback (the pattern found by the seventh
mutant set's survivors in run check)."""

from __future__ import annotations

import pytest
import requests
from fake_host import SMI_APPS_ARGV, FakeRunner, data, ok, smi_runner

from envbuilder.errors import RegistryError, SchedulerError
from envbuilder.fleet.jobs import _exit_status
from envbuilder.fleet.slurm import submit
from envbuilder.host import HostReport
from envbuilder.host.health import parse_kmsg
from envbuilder.host.probe import probe_nvidia_smi
from envbuilder.registry.client import _read_capped
from envbuilder.typed import MAX_INT, ascii_int


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0), ("4242", 4242), ("007", 7), (str(MAX_INT - 1), MAX_INT - 1)]
    + [(t, None) for t in ("", " 1", "1 ", "-1", "+1", "1.0", "²", "1²", "\u0663", "x", str(MAX_INT))]
    + [(v, None) for v in (None, 3, 3.0, True)],
)
def test_ascii_int(text: object, value: int | None) -> None:
    assert ascii_int(text) == value


def test_a_pid_cell_that_is_no_ascii_number_is_no_pid() -> None:
    """nvidia-smi's compute apps: a row whose PID cell is '²' is no number (it was a ValueError
    traceback from `doctor` and every probe), but it is a process: that GPU's processes are
    unknown (None), not the other rows alone (test_evidence_area: never dropped silently)."""
    run = smi_runner("h200")
    uuid = data("smi-h200-query.csv").split(",")[1].strip()
    run.table[SMI_APPS_ARGV] = ok(f"{uuid}, ², python, 100\n{uuid}, 4242, python, 200\n")
    report = probe_nvidia_smi(run)
    assert isinstance(report, HostReport)
    assert [g.processes for g in report.gpus] == [None]
    run.table[SMI_APPS_ARGV] = ok(f"{uuid}, 4242, python, 200\n")
    report = probe_nvidia_smi(run)
    assert isinstance(report, HostReport)
    assert [(p.pid, p.used_mib) for g in report.gpus for p in g.processes or ()] == [(4242, 200)]


def test_a_kmsg_time_that_is_no_ascii_number_is_no_time() -> None:
    line = "3,1200,7²00,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n"
    assert [(x.xid, x.seconds_since_boot) for x in parse_kmsg(line)] == [(79, None)]


@pytest.mark.parametrize(
    ("exit_code", "status"),
    [("0:0", 0), ("3:0", 3), ("0:9", 137), ("0:²", 0), ("²:0", 1), ("²:²", 1), (None, 0), ("", 0)],
)
def test_a_slurm_exit_code_with_other_digits_is_no_code(exit_code: str | None, status: int) -> None:
    assert _exit_status(exit_code) == status


def test_sbatch_answering_other_digits_is_refused() -> None:
    run = FakeRunner({("sbatch", "*"): ok("4²\n")})
    with pytest.raises(SchedulerError, match="not a job id"):
        submit("job.sh", run)


def _answer(length: str, body: bytes) -> requests.Response:
    resp = requests.Response()
    resp.status_code, resp._content = 200, body
    resp._content_consumed = True  # type: ignore[attr-defined]  # read already: not streamed
    resp.headers["Content-Length"] = length  # HTTP headers are Latin-1: '\xb2' is '²'
    return resp


def test_a_registry_content_length_of_other_digits_is_no_length() -> None:
    """A registry's Content-Length of '²' was read with int() after isdigit(): a traceback. Now it
    declares nothing: the body is read to the limit, as for a streamed answer."""
    assert _read_capped(_answer("\xb2", b"{}"), 10, "the manifest") == b"{}"
    with pytest.raises(RegistryError, match="is 99 bytes, over the 10-byte limit"):
        _read_capped(_answer("99", b"{}"), 10, "the manifest")
