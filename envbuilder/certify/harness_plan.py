"""How the harness runs for a certification, wherever it runs: the host's payload (mounted
read-only, its digest known), this run's nonce, the thresholds and level, the command line; and
how its result is read back. `certify` on this host and every fleet job (Slurm, Kubernetes,
Apptainer, enroot) are planned by `plan_harness`, so the host can judge each the same way
(certify/verdict.py)."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from envbuilder.bounded import MAX_BYTES, Refused, load_json, read_bounded
from envbuilder.errors import MatrixError
from envbuilder.harness.digest import tree_digest
from envbuilder.image.metadata import ImageMetadata
from envbuilder.image.spec import CertifySettings
from envbuilder.resources import harness_dir as harness_source_dir
from envbuilder.resources import matrices_dir

HOST_HARNESS_DIR = "/opt/envbuilder-host/harness"  # where the host's copy goes (read-only), always
# A result goes into a certificate, whose loader allows bounded.MAX_BYTES: no result may be larger.
RESULT_MAX_BYTES = MAX_BYTES
IO_DIR = "/envbuilder-io"  # mounted read-write: thresholds.json in, result.json out
TIMEOUT_S = {"full": 1800.0, "quick": 600.0}
# Python must not write byte caches into the read-only payload; results stream as they come.
HARNESS_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def new_nonce() -> str:
    return secrets.token_hex(16)


def harness_command(
    harness_dir: str,
    *,
    quick: bool,
    cpu: bool,
    watchdog_s: float,
    budget_s: float | None = None,
    steps: int | None = None,
    framework: str | None = None,
    nonce: str | None = None,
) -> tuple[str, ...]:
    """The payload's command line inside the container (envbuilder/harness/cli.py). Its watchdog
    fires before our container timeout, so a hung run still leaves a failed result behind."""
    argv = ["python3", f"{harness_dir}/run.py", "--out", f"{IO_DIR}/result.json"]
    if nonce is not None:
        argv += ["--nonce", nonce]
    argv += ["--thresholds", f"{IO_DIR}/thresholds.json", "--watchdog-seconds", f"{watchdog_s:g}"]
    if quick:
        argv.append("--quick")
    if cpu:
        argv.append("--cpu-only")
    if budget_s is not None:
        argv += ["--budget-seconds", f"{budget_s:g}"]
    if steps is not None:
        argv += ["--steps", str(steps)]
    if framework is not None:
        argv += ["--framework", framework]
    return tuple(argv)


def load_thresholds(overrides: Mapping[str, float] | None = None) -> tuple[dict[str, Any], list[str]]:
    """matrices/thresholds.yaml with an image's overrides applied, and warnings for overrides that
    matched nothing. A plain key overrides `defaults`; `throughput.RUN.FIELD` overrides that field
    of RUN in every GPU entry that has RUN. Raises MatrixError when the file is unreadable."""
    path = matrices_dir() / "thresholds.yaml"
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise MatrixError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("defaults"), dict):
        raise MatrixError(f"{path}: expected a mapping with a `defaults` mapping")
    doc["source_path"] = "matrices/thresholds.yaml"
    warnings: list[str] = []
    for key, value in sorted((overrides or {}).items()):
        parts = key.split(".")
        if len(parts) == 1:
            doc["defaults"][key] = value
        elif len(parts) == 3 and parts[0] == "throughput":
            hits = [g for g in doc.get("gpus") or [] if parts[1] in (g.get("throughput") or {})]
            for entry in hits:
                entry["throughput"][parts[1]][parts[2]] = value
            if not hits:
                warnings.append(f"threshold override {key} matched no GPU entry")
        else:
            warnings.append(f"threshold override {key} ignored (use NAME or throughput.RUN.FIELD)")
    doc["overrides"] = dict(overrides or {})
    return doc, warnings


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessPlan:
    """One harness run: the host's payload (`host_harness`, mounted read-only at `harness_dir`,
    never the image's own copy) and its digest, the nonce the result must echo, the thresholds
    document, level and time limit, and the warnings on the way. `command` is its command line."""

    thresholds: dict[str, Any]
    host_harness: str
    harness_sha256: str
    nonce: str
    quick: bool
    cpu: bool
    limit_s: float
    budget_s: float | None = None
    steps: int | None = None
    framework: str | None = None
    harness_dir: str = HOST_HARNESS_DIR
    warnings: tuple[str, ...] = ()

    @property
    def command(self) -> tuple[str, ...]:
        return harness_command(
            self.harness_dir,
            quick=self.quick,
            cpu=self.cpu,
            watchdog_s=max(10.0, self.limit_s - 30.0),
            budget_s=self.budget_s,
            steps=self.steps,
            framework=self.framework,
            nonce=self.nonce,
        )

    def for_job(self, *, cpu: bool) -> HarnessPlan:
        """The same plan for another run (a fleet's job): a nonce of its own; `cpu` for the CPU path."""
        return replace(self, nonce=new_nonce(), cpu=self.cpu or cpu)


def plan_harness(
    meta: ImageMetadata,
    *,
    quick: bool,
    cpu: bool,
    thresholds: Mapping[str, float] | None = None,
    timeout_s: float | None = None,
    budget_s: float | None = None,
    steps: int | None = None,
    framework: str | None = None,
    nonce: str | None = None,
) -> HarnessPlan:
    """The harness run for an image with these labels: the spec's certify settings (level,
    threshold overrides, which `thresholds` override in turn), the watchdog before the limit;
    `framework` where the stack label names none; a fresh nonce unless given. Raises MatrixError
    (thresholds file)."""
    settings = meta.certify or CertifySettings()
    doc, warnings = load_thresholds({**dict(settings.thresholds), **(thresholds or {})})
    run_quick = quick or settings.level == "quick"
    host_harness = harness_source_dir()
    return HarnessPlan(
        thresholds=doc,
        host_harness=str(host_harness),
        harness_sha256=tree_digest(host_harness),
        nonce=nonce or new_nonce(),
        quick=run_quick,
        cpu=cpu,
        limit_s=timeout_s or TIMEOUT_S["quick" if run_quick else "full"],
        budget_s=budget_s,
        steps=steps,
        framework=meta.framework or framework,
        warnings=(*(f"image {p}" for p in meta.problems), *warnings),
    )


def parse_harness_output(
    io_dir: Path | None,
    stdout: str,
    *,
    filename: str = "result.json",
    kind: str = "result",
    nonce: str | None = None,
    max_bytes: int = RESULT_MAX_BYTES,
) -> dict[str, Any] | None:
    """The harness's document: `filename` in the io folder (None: there is none, e.g. a pod's
    log alone), else the last JSON line of stdout; the first of them that is a `kind` document
    (and, `nonce` given, carries it). certify reads the result this way, check its short mode's
    gate.json. Both come from the image under test, so both go through envbuilder.bounded (size,
    depth, digits) and the file is read only as a regular file the container did not swap for a
    symlink or a FIFO (O_NOFOLLOW, non-blocking); whatever fails those is no result (the caller's
    "no result" failure), never a traceback or a hang."""
    candidates: list[str | bytes] = []
    out = io_dir / filename if io_dir is not None else None
    if out is not None:
        with contextlib.suppress(OSError, Refused):
            candidates.append(read_bounded(out, max_bytes, follow_symlinks=False))
    candidates += [line for line in reversed(stdout.splitlines()) if line.startswith("{")][:1]
    for text in candidates:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        try:
            doc = load_json(text, max_bytes=max_bytes)
        except ValueError:  # JSONDecodeError, bounded.TooLarge
            continue
        if isinstance(doc, dict) and doc.get("kind") == kind and (nonce is None or doc.get("nonce") == nonce):
            return doc
    return None
