"""The multi_gpu step's merge: the ranks' JSON files and logs -> the step's metrics and the
problems that fail it (step.py launches the ranks, worker.py is one rank)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .sweep import bandwidths


def merge(world: int, workdir: Path, run: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The step's metrics from the ranks' files, and the problems that fail the step."""
    ranks: list[dict[str, Any]] = []
    for r in range(world):
        f = workdir / f"rank{r}.json"
        try:
            ranks.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            ranks.append({"rank": r})
    problems: list[str] = []
    if run["hung"]:
        problems.append(f"hang: rank(s) {', '.join(map(str, run['hung']))} {run['hung_why']}: killed")
    codes = run["codes"]
    for r, doc in enumerate(ranks):
        code = codes[r]
        if r in run["hung"] or code == 0:
            continue
        err = str(doc.get("error") or log_error(workdir / f"rank{r}.log"))
        tag = "hang/timeout: " if re.search(r"time[sd]? ?out|timed out", err, re.I) else ""
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        problems.append(f"{tag}rank {r} {how}: {err[:300]}")
    r0 = ranks[0]
    m: dict[str, Any] = {
        "world_size": world,
        "ranks": [_rank_summary(d, codes[r]) for r, d in enumerate(ranks)],
    }
    m["launch_wall_s"] = run["wall_s"]
    sweep = r0.get("sweep") or []
    rows = []
    for row in sweep:
        alg, bus = bandwidths(int(row["bytes"]), float(row["seconds"]), world)
        rows.append(
            {"bytes": row["bytes"], "time_us": row["seconds"] * 1e6, "algbw_gbs": alg, "busbw_gbs": bus}
        )
    m["sweep"] = rows
    m["sweep_iters"] = r0.get("sweep_iters")
    if rows:
        m.update(
            max_bytes=rows[-1]["bytes"],
            busbw_at_max_gbs=rows[-1]["busbw_gbs"],
            algbw_at_max_gbs=rows[-1]["algbw_gbs"],
            peak_busbw_gbs=max(x["busbw_gbs"] for x in rows),
        )
    value_problems = [f"rank {d.get('rank')}: {p}" for d in ranks for p in d.get("value_problems") or []]
    swept = all("value_problems" in d for d in ranks)
    m["allreduce_values_ok"] = (not value_problems) if swept or value_problems else None
    m["allreduce_problems"] = value_problems[:20]
    if value_problems:
        problems.append(f"all-reduce values wrong: {value_problems[0]} ({len(value_problems)} problem(s))")
    _merge_ddp(m, ranks, problems)
    if not problems and (not rows or m.get("params_identical") is None):
        problems.append("no result: the ranks exited without a sweep table or a DDP result")
    return m, problems


def _merge_ddp(m: dict[str, Any], ranks: list[dict[str, Any]], problems: list[str]) -> None:
    r0 = ranks[0]
    ddp, base = r0.get("ddp"), r0.get("baseline")
    m["ddp"] = {"config": r0.get("ddp_config"), "baseline": base, "skipped": r0.get("ddp_skipped")}
    if not ddp or not all(d.get("ddp") for d in ranks):
        m["params_identical"] = None
        return
    m["ddp"].update(rank0=ddp, model=ddp.get("model"))
    m["ddp_images_per_s"] = ddp["images_per_s_all"]
    if base and base.get("images_per_s"):
        m["single_gpu_images_per_s"] = base["images_per_s"]
        m["scaling_efficiency"] = ddp["images_per_s_all"] / (m["world_size"] * base["images_per_s"])
    diffs = {d["rank"]: d["ddp"] for d in ranks}
    m["max_param_abs_diff"] = max(float(x["max_param_abs_diff"]) for x in diffs.values())
    m["param_checksums_f64"] = [x.get("param_checksum_f64") for x in diffs.values()]
    m["params_identical"] = m["max_param_abs_diff"] == 0
    if not m["params_identical"]:
        worst = max(diffs, key=lambda r: float(diffs[r]["max_param_abs_diff"]))
        w = diffs[worst]
        problems.append(
            f"parameters differ across ranks after DDP training: rank {worst} max abs diff "
            f"{w['max_param_abs_diff']:.3g} in {w['param_tensors_differing']} of {w['param_tensors']} tensors"
        )
    if not all(d["ddp"].get("losses_finite") for d in ranks):
        problems.append("non-finite loss in the DDP run")


def _rank_summary(doc: dict[str, Any], code: int | None) -> dict[str, Any]:
    return dict({k: doc.get(k) for k in ("rank", "init_s", "error", "nccl_env")}, exit_code=code)


# The line that says why a rank died. A Python failure ends in its exception line ("RuntimeError:
# ... Timed out waiting 20000ms"); NCCL's watchdog logs "Watchdog caught collective operation
# timeout: WorkNCCL(...) ran for 20000 milliseconds before timing out.", aborts the process
# (SIGABRT) and torch prints C++ frames after it.
_PY_EXCEPTION = re.compile(r"^[\w.]*(Error|Exception)\b[^:]*:")
_TIMEOUT_LINE = re.compile(r"timed? ?out|timing out|watchdog", re.I)
_ERROR_LINE = re.compile(r"error|exception|abort", re.I)
_NOISE_LINE = re.compile(r"^(frame #\d+|Exception raised from)")


def tail(path: Path, n: int) -> str:
    """The last `n` characters of a rank's log (whole lines), or "no output"."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return "no output"
    if len(text) > n:
        text = text[-n:].split("\n", 1)[-1]
    return text or "no output"


def log_error(path: Path, n: int = 600) -> str:
    """The line of a rank's log that says why it died (see above), else its last lines."""
    text = tail(path, 200_000)
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not _NOISE_LINE.match(ln)]
    python = [ln for ln in lines if _PY_EXCEPTION.match(ln)]
    if python:
        return python[-1][:n]
    for pattern in (_TIMEOUT_LINE, _ERROR_LINE):
        hits = [ln for ln in lines if pattern.search(ln)]
        if hits:
            return hits[0][:n]
    return " | ".join(text[-n:].splitlines()[-4:])
