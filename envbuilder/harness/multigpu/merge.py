"""The multi_gpu step's merge: the ranks' JSON files and logs -> the step's metrics and the
problems that fail it (step.py launches the ranks, worker.py is one rank)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .sweep import bandwidths, bus_factor, human_bytes


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
    slow = list(run.get("slow_exit") or [])
    if run["hung"]:
        problems.append(f"hang: rank(s) {', '.join(map(str, run['hung']))} {run['hung_why']}: killed")
    codes = run["codes"]
    # One problem per way of dying: with 8 ranks timing out alike, one line names the 7 of them.
    # Ranks group when their reasons match but for numbers (NCCL's lines carry rank and time).
    dead: dict[tuple[str, str, str], tuple[list[int], str]] = {}
    for r, doc in enumerate(ranks):
        code = codes[r]
        if r in run["hung"] or code == 0 or (r in slow and not doc.get("error")):
            continue
        err = str(doc.get("error") or log_error(workdir / f"rank{r}.log"))[:300]
        tag = "hang/timeout: " if re.search(r"time[sd]? ?out|timed out", err, re.I) else ""
        if r in slow:
            how = "was killed while exiting (its result was written)"
        elif code is not None and code < 0:
            how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        dead.setdefault((tag, how, re.sub(r"\d+", "#", err)), ([], err))[0].append(r)
    for (tag, how, _), (who, err) in dead.items():
        named = f"rank {who[0]}" if len(who) == 1 else f"ranks {', '.join(map(str, who))}"
        problems.append(f"{tag}{named} {how}: {err}")
    r0 = ranks[0]
    m: dict[str, Any] = {
        "world_size": world,
        "ranks": [_rank_summary(d, codes[r]) for r, d in enumerate(ranks)],
    }
    m["launch_wall_s"] = run["wall_s"]
    m["hung_ranks"], m["slow_exit_ranks"] = list(run["hung"]), slow
    m["sweep_cap"] = r0.get("sweep_cap")
    m["bus_factor"] = bus_factor(world)  # busbw = algbw x 2(n-1)/n
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
        culprit = _solo_rounds(m, ranks, world)
        problems.append(
            f"all-reduce values wrong: {value_problems[0]} ({len(value_problems)} problem(s))"
            + (f"; {culprit}" if culprit else "")
        )
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
        odd = odd_ranks({r: x.get("param_checksum_f64") for r, x in diffs.items()})
        worst = max(diffs, key=lambda r: float(diffs[r]["max_param_abs_diff"]))
        if odd:  # against the majority's checksum, so a rank 0 that drifted is named too
            worst = max(odd, key=lambda r: float(diffs[r]["max_param_abs_diff"]))
        w = diffs[worst]
        m["ranks_with_differing_params"] = odd or sorted(
            r for r in diffs if float(diffs[r]["max_param_abs_diff"]) != 0
        )
        others = len(diffs) - len(odd)
        problems.append(
            f"parameters differ across ranks after DDP training: rank {worst} max abs diff "
            f"{w['max_param_abs_diff']:.3g} in {w['param_tensors_differing']} of {w['param_tensors']} tensors"
            + (f" (rank(s) {', '.join(map(str, odd))} differ from the other {others})" if odd else "")
        )
    if not all(d["ddp"].get("losses_finite") for d in ranks):
        problems.append("non-finite loss in the DDP run")


def odd_ranks(checksums: dict[int, Any]) -> list[int]:
    """The ranks whose parameter checksum differs from the one most ranks share, when more than
    half share one (a rank 0 that drifted is named too, though the diffs are taken against it);
    [] when there is no such majority (2 ranks that disagree, or no two alike)."""
    counts: dict[Any, int] = {}
    for v in checksums.values():
        counts[v] = counts.get(v, 0) + 1
    common, n = max(counts.items(), key=lambda kv: kv[1], default=(None, 0))
    if common is None or n * 2 <= len(checksums):
        return []
    return sorted(r for r, v in checksums.items() if v != common)


def _solo_rounds(m: dict[str, Any], ranks: list[dict[str, Any]], world: int) -> str:
    """Whose contribution arrived wrong, from the solo rounds (worker.solo_rounds) of every rank
    that ran them; '' when none did (a rank died first)."""
    seen = [d["solo_rounds"] for d in ranks if isinstance(d.get("solo_rounds"), dict)]
    if not seen:
        return ""
    wrong: dict[int, str] = {}
    for doc in ranks:
        for k, why in ((doc.get("solo_rounds") or {}).get("wrong") or {}).items():
            wrong.setdefault(int(k), f"rank {doc.get('rank')} saw {why}")
    size = int(seen[0].get("bytes") or 0)
    m["allreduce_culprits"] = sorted(wrong)
    named = {str(k): why for k, why in wrong.items()}
    m["solo_rounds"] = {"bytes": size, "ranks_reporting": len(seen), "wrong": named}
    at = human_bytes(size)
    if not wrong:
        return f"each rank's solo round at {at} was right: the sums go wrong only with several ranks at once"
    if len(wrong) == world:
        return f"every rank's solo round at {at} came out wrong: the reduction itself, not one rank's data"
    first = min(wrong)
    return (
        f"contribution of rank(s) {', '.join(map(str, sorted(wrong)))} arrived wrong "
        f"(solo round at {at}: {wrong[first]})"
    )


def _rank_summary(doc: dict[str, Any], code: int | None) -> dict[str, Any]:
    keys = ("rank", "init_s", "error", "nccl_env", "phase_s", "sweep_memory")
    summary = dict({k: doc.get(k) for k in keys}, exit_code=code)
    ddp = doc.get("ddp") or {}
    summary["max_param_abs_diff"] = ddp.get("max_param_abs_diff")
    summary["param_checksum_f64"] = ddp.get("param_checksum_f64")
    return summary


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
