"""What `envbuilder check` found, and the one verdict it gives: each Finding says what was looked
at, its status, why and what to do; the verdict is the worst status (FAIL > WARN > PASS; a skip
or a note never changes it). Exit codes 0 / 1 / 2 for PASS / WARN / FAIL. Also the thresholds
the check judges with (matrices/thresholds.yaml `check`). Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envbuilder.errors import MatrixError

Status = Literal["pass", "warn", "fail", "skip", "note"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "skip", "note")
VERDICTS = ("PASS", "WARN", "FAIL")
EXIT_CODES = {"PASS": 0, "WARN": 1, "FAIL": 2}
SCHEMA_VERSION = 1
KIND = "envbuilder-check"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One thing the check looked at. `check`: its dotted name (certificate.coverage, node.ecc,
    image.gemm, ...); `gpu`: the NVML index it concerns (None: the node or the image); `remedy`:
    what to do (empty for a pass); `value`: the figure or answer behind it."""

    check: str
    status: Status
    message: str
    remedy: str = ""
    gpu: int | None = None
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "gpu": self.gpu,
            "message": self.message,
            "remedy": self.remedy,
            "value": self.value,
        }


def verdict_of(findings: Iterable[Finding]) -> str:
    """FAIL when any finding failed, else WARN when any warned, else PASS."""
    statuses = {f.status for f in findings}
    if "fail" in statuses:
        return "FAIL"
    if "warn" in statuses:
        return "WARN"
    return "PASS"


def verdict_reason(findings: Sequence[Finding]) -> str:
    """The verdict's reason in one line: the failures (else the warnings), at most three."""
    verdict = verdict_of(findings)
    if verdict == "PASS":
        ran = sum(1 for f in findings if f.status == "pass")
        skipped = sum(1 for f in findings if f.status == "skip")
        return f"{ran} check(s) passed" + (f", {skipped} skipped" if skipped else "")
    worst = "fail" if verdict == "FAIL" else "warn"
    hits = [f for f in findings if f.status == worst]
    shown = "; ".join(f"{f.check}{'' if f.gpu is None else f' (GPU {f.gpu})'}: {f.message}" for f in hits[:3])
    return shown + (f"; and {len(hits) - 3} more" if len(hits) > 3 else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    """A measured figure against the certificate's: WARN below `warn_below` x it, FAIL below
    `fail_below` x it."""

    warn_below: float
    fail_below: float

    def judge(self, measured: float, reference: float) -> Status:
        if reference <= 0:
            return "skip"
        share = measured / reference
        if share < self.fail_below:
            return "fail"
        if share < self.warn_below:
            return "warn"
        return "pass"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckThresholds:
    gemm: Band
    copy: Band
    busbw: Band
    memory_held_warn_fraction: float
    memory_held_fail_fraction: float
    temperature_margin_c: float
    pcie_width_fail: bool
    time_target_s: float
    time_limit_s: float


def parse_thresholds(doc: Mapping[str, Any], where: str = "matrices/thresholds.yaml") -> CheckThresholds:
    """The `check` section of the thresholds document. Raises MatrixError naming the field."""
    section = doc.get("check")
    if not isinstance(section, Mapping):
        raise MatrixError(f"{where}: no `check` mapping", hint="restore the check section of thresholds.yaml")

    def num(obj: Mapping[str, Any], key: str, path: str) -> float:
        value = obj.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise MatrixError(f"{where}: check.{path}{key} must be a number >= 0, not {value!r}")
        return float(value)

    def band(name: str) -> Band:
        obj = section.get(name)
        if not isinstance(obj, Mapping):
            raise MatrixError(f"{where}: check.{name} must be a mapping with warn_below and fail_below")
        warn, fail = num(obj, "warn_below", f"{name}."), num(obj, "fail_below", f"{name}.")
        if not fail <= warn <= 1.5:
            raise MatrixError(
                f"{where}: check.{name}: fail_below {fail} must be <= warn_below {warn} (<= 1.5)"
            )
        return Band(warn_below=warn, fail_below=fail)

    held_warn = num(section, "memory_held_warn_fraction", "")
    held_fail = num(section, "memory_held_fail_fraction", "")
    if not held_warn <= held_fail <= 1:
        raise MatrixError(
            f"{where}: check.memory_held_warn_fraction must be <= memory_held_fail_fraction <= 1"
        )
    target, limit = num(section, "time_target_s", ""), num(section, "time_limit_s", "")
    if not 0 < target <= limit:
        raise MatrixError(f"{where}: check.time_target_s must be > 0 and <= time_limit_s")
    width_fail = section.get("pcie_width_fail")
    if not isinstance(width_fail, bool):
        raise MatrixError(f"{where}: check.pcie_width_fail must be true or false")
    return CheckThresholds(
        gemm=band("gemm"),
        copy=band("copy"),
        busbw=band("busbw"),
        memory_held_warn_fraction=held_warn,
        memory_held_fail_fraction=held_fail,
        temperature_margin_c=num(section, "temperature_margin_c", ""),
        pcie_width_fail=width_fail,
        time_target_s=target,
        time_limit_s=limit,
    )


def load_check_thresholds() -> CheckThresholds:
    """matrices/thresholds.yaml's `check` section. Raises MatrixError."""
    from envbuilder.certify.harness_plan import load_thresholds

    doc, _ = load_thresholds()
    return parse_thresholds(doc)


def time_findings(seconds: float, t: CheckThresholds) -> list[Finding]:
    """The check's own wall time against its target and Slurm's hard limit: past the target a
    note; within 10 s of the limit (or past it) a warning, so a prolog that creeps up is seen."""
    value = round(seconds, 2)
    if seconds >= t.time_limit_s - 10:
        return [
            Finding(
                check="check.time",
                status="warn",
                message=f"the check took {seconds:.1f} s, near or past the hard limit of "
                f"{t.time_limit_s:.0f} s (Slurm kills a HealthCheckProgram at 60 s)",
                remedy="look at the timings in --json; pull the image before the job (a cold pull "
                "counts), or raise the scheduler's limit",
                value=value,
            )
        ]
    if seconds > t.time_target_s:
        return [
            Finding(
                check="check.time",
                status="note",
                message=f"the check took {seconds:.1f} s, past its {t.time_target_s:.0f} s target",
                value=value,
            )
        ]
    return []


# The --json document's fields and their types (docs/check.md shows one); validate_report checks
# a document against it, so the schema written in the docs and the one produced stay one.
REPORT_FIELDS: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "schema_version": (int,),
    "verdict": (str,),
    "exit_code": (int,),
    "reason": (str,),
    "image": (str,),
    "image_id": (str, type(None)),
    "started": (str,),
    "node": (dict,),
    "certificate": (dict, type(None)),
    "findings": (list,),
    "image_run": (dict, type(None)),
    "timings": (dict,),
    "limits": (dict,),
}
FINDING_FIELDS: dict[str, tuple[type, ...]] = {
    "check": (str,),
    "status": (str,),
    "gpu": (int, type(None)),
    "message": (str,),
    "remedy": (str,),
}


def _typed(value: Any, types: Any) -> bool:
    """isinstance(value, types), a bool never counting as a number (Python's bool is an int)."""
    return isinstance(value, types) and not isinstance(value, bool)


def validate_report(doc: Any) -> list[str]:
    """The problems of a `check --json` document against REPORT_FIELDS (empty: valid): every
    field present with its type, a known verdict whose exit code matches, findings well formed and
    the verdict the one they give."""
    if not isinstance(doc, dict):
        return ["not an object"]
    problems = [
        f"{key}: missing or not {'/'.join(t.__name__ for t in types)}"
        for key, types in REPORT_FIELDS.items()
        if key not in doc or not _typed(doc[key], types)
    ]
    if problems:
        return problems
    if doc["kind"] != KIND or doc["schema_version"] != SCHEMA_VERSION:
        problems.append(f"kind/schema_version: expected {KIND} {SCHEMA_VERSION}")
    if doc["verdict"] not in VERDICTS or EXIT_CODES.get(doc["verdict"]) != doc["exit_code"]:
        problems.append(f"verdict {doc['verdict']!r} with exit code {doc['exit_code']}")
    statuses = []
    for n, f in enumerate(doc["findings"]):
        bad = [
            k for k, types in FINDING_FIELDS.items() if not isinstance(f, dict) or not _typed(f.get(k), types)
        ]
        if bad or f["status"] not in STATUSES or "value" not in f:
            problems.append(f"findings[{n}]: bad {', '.join(bad) or 'status or value'}")
        else:
            statuses.append(Finding(check=f["check"], status=f["status"], message=f["message"]))
    if not problems and verdict_of(statuses) != doc["verdict"]:
        problems.append(f"verdict {doc['verdict']} is not what the findings give ({verdict_of(statuses)})")
    for key in ("total_s",):
        if not _typed(doc["timings"].get(key), int | float):
            problems.append(f"timings.{key}: missing")
    return problems
