"""The multi_gpu step at 4 and 8 ranks (issue 17): the busbw factor, the sweep's size cap and the
gated size, value checks in chunks, whose contribution arrived wrong, which rank drifted, which rank
hung. merge() over SYNTHETIC 8-rank files (exact and cheap), then real gloo runs of 4 and 8 CPU
processes through the launch path; the report of a SYNTHETIC 8-rank certificate, labelled as a
fixture; the floors rule of thresholds.yaml replayed on the committed 2-GPU runs."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import yaml
from mg_runs import GIB, ROOT, launch_result, run_harness, write_ranks

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.harness.multigpu.env import fault_plan
from envbuilder.harness.multigpu.merge import merge, odd_ranks
from envbuilder.harness.multigpu.sweep import (
    CHECK_SCRATCH_BYTES,
    bandwidths,
    bus_factor,
    human_bytes,
    size_cap,
    sweep_sizes,
)
from envbuilder.harness.multigpu.worker import int_pattern, mismatch
from envbuilder.harness.thresholds import judge_multi_gpu, pick_multi_gpu, select_thresholds
from envbuilder.report.html import render_html
from envbuilder.report.model import build_report
from envbuilder.report.terminal import format_terminal

RESULTS_X2 = ROOT / "benchmarks" / "results" / "multigpu-h200x2-2026-11-30"


def h200(world: int) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "matrices" / "thresholds.yaml").read_text())
    return pick_multi_gpu(select_thresholds(doc, "NVIDIA H200"), "nvlink", world)


def gates_of(spec: dict[str, Any], m: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["name"]: g for g in judge_multi_gpu(spec, m)}


# ---------------------------------------------------------------- arithmetic and the size cap
@pytest.mark.parametrize(("world", "factor"), [(2, 1.0), (4, 1.5), (8, 1.75)])
def test_busbw_factor_is_2_n_minus_1_over_n(world: int, factor: float) -> None:
    assert bus_factor(world) == factor
    alg, bus = bandwidths(8 * GIB, 0.040, world)
    assert alg == pytest.approx(8 * GIB / 0.040 / 1e9) and bus == pytest.approx(alg * factor)


def test_the_sweep_reaches_8_gib_where_memory_allows_and_records_why_it_stopped() -> None:
    assert len(sweep_sizes(8 * GIB)) == 31 and sweep_sizes(8 * GIB)[27] == GIB  # 8 B .. 1 GiB unchanged
    h200 = size_cap(8 * GIB, 139 * GIB)  # an idle H200 (143,771 MiB, ~139 GiB free after CUDA init)
    assert h200["max_bytes"] == 8 * GIB and h200["limited_by"] == "request"
    assert h200["margin_bytes"] == int(139 * GIB / 8) and h200["memory_cap_bytes"] == 64 * GIB
    small = size_cap(8 * GIB, 10 * GIB)  # 10 GiB free: 10 - 1.25 margin - scratch = 8.25 GiB
    assert small["max_bytes"] == 8 * GIB
    busy = size_cap(8 * GIB, 6 * GIB)  # someone holds most of the GPU: 6 - 1 - 0.5 -> 4 GiB
    assert busy["max_bytes"] == 4 * GIB and busy["limited_by"] == "memory"
    assert busy["margin_bytes"] == GIB and busy["scratch_bytes"] == CHECK_SCRATCH_BYTES
    full = size_cap(8 * GIB, GIB)  # nothing fits beside the margin: the smallest size only
    assert full["max_bytes"] == 8 and full["memory_cap_bytes"] == 0 and full["limited_by"] == "memory"
    cpu = size_cap(4 << 20, None)  # the CPU test mode: no GPU memory to ask
    assert cpu == {"requested_bytes": 4 << 20, "free_bytes_min": None, "max_bytes": 4 << 20} | {
        "limited_by": "request"
    }
    assert human_bytes(8 * GIB) == "8 GiB" and human_bytes(3 << 20) == "3 MiB" and human_bytes(12) == "12 B"


def test_value_checks_work_in_chunks_and_give_the_global_index() -> None:
    n = 1000
    got = torch.full((n,), 36.0)
    assert mismatch(got, 36.0, exact=False, chunk=64) == ""
    got[700] = 37.0
    got[900] = float("nan")
    msg = mismatch(got, 36.0, exact=False, chunk=64)  # 16 chunks: the first wrong one is the 11th
    assert msg == "2 of 1000 elements wrong (first at index 700: got 37.0, want 36.0)"
    pattern = int_pattern(torch.device("cpu"))
    assert pattern(5, 4).tolist() == [6, 7, 1, 2]  # (i mod 7) + 1 from i = 5
    whole = pattern(0, n) * 36
    assert mismatch(whole, lambda at, k: pattern(at, k).mul_(36), exact=True, chunk=100) == ""
    whole[333] += 1
    assert "1 of 1000 elements wrong (first at index 333" in mismatch(
        whole, lambda at, k: pattern(at, k).mul_(36), exact=True, chunk=100
    )


def test_fault_plan_names_the_ranks() -> None:
    assert fault_plan("allreduce", 8) == ({7: {"allreduce"}}, [])  # the last rank, as before
    assert fault_plan("allreduce@3,hang@7", 8) == ({3: {"allreduce"}, 7: {"hang"}}, [])
    assert fault_plan("params@0, hang", 4) == ({0: {"params"}, 3: {"hang"}}, [])
    assert fault_plan("explode,params@9,hang@x", 8) == ({}, ["explode", "params@9", "hang@x"])


# ---------------------------------------------------------------- merge over SYNTHETIC 8-rank files
def test_eight_ranks_busbw_and_the_gate_at_the_size_thresholds_name(tmp_path: Path) -> None:
    write_ranks(tmp_path, 8)
    m, problems = merge(8, tmp_path, launch_result(8))
    assert problems == [] and m["params_identical"] is True and m["bus_factor"] == 1.75
    assert all(r["busbw_gbs"] == pytest.approx(r["algbw_gbs"] * 1.75) for r in m["sweep"])
    assert m["max_bytes"] == 8 * GIB and m["sweep_cap"]["limited_by"] == "request"
    at_8 = m["sweep"][-1]["busbw_gbs"]
    at_1 = next(r["busbw_gbs"] for r in m["sweep"] if r["bytes"] == GIB)
    spec = {**h200(8), "min_busbw_gbs": 300.0}  # a floor, as the x8 entry will have one
    gate = gates_of(spec, m)["multi_gpu:busbw"]
    assert gate["at_bytes"] == 8 * GIB and gate["value"] == at_8 and gate["status"] == "pass"
    assert gate["reason"].startswith("busbw ") and " at 8 GiB >= 300 GB/s" in gate["reason"]
    two = gates_of({**h200(2)}, m)["multi_gpu:busbw"]  # the x2 entry judges the 1 GiB row
    assert two["at_bytes"] == GIB and two["value"] == at_1
    assert gates_of(h200(8), m)["multi_gpu:busbw"]["status"] == "skip"  # no floor yet: report only


def test_a_sweep_cut_short_by_memory_does_not_meet_a_floor_at_8_gib(tmp_path: Path) -> None:
    write_ranks(tmp_path, 8, max_bytes=2 * GIB, memory_capped=True)
    m, _ = merge(8, tmp_path, launch_result(8))
    short = "busbw not measured at 8 GiB: the sweep stopped at 2 GiB (memory cap)"
    failed = gates_of({**h200(8), "min_busbw_gbs": 300.0}, m)["multi_gpu:busbw"]
    assert failed["status"] == "fail" and failed["reason"] == short
    report_only = gates_of(h200(8), m)["multi_gpu:busbw"]
    assert report_only["status"] == "skip" and report_only["reason"] == short


def test_a_wrong_contribution_from_one_of_eight_ranks_is_named(tmp_path: Path) -> None:
    seen = "float32 8 B: 2 of 2 elements wrong (first at index 0: got 37.0, want 36.0)"
    solo = {r: {"3": "2 of 2 elements wrong (first at index 0: got 5.0, want 4.0)"} for r in range(8)}
    write_ranks(tmp_path, 8, value_problems={r: [seen] for r in range(8)}, solo_wrong=solo)
    m, problems = merge(8, tmp_path, launch_result(8))
    assert m["allreduce_values_ok"] is False and m["allreduce_culprits"] == [3]
    assert problems[0].startswith(f"all-reduce values wrong: rank 0: {seen} (8 problem(s)); ")
    assert problems[0].endswith(
        "contribution of rank(s) 3 arrived wrong (solo round at 8 B: rank 0 saw "
        "2 of 2 elements wrong (first at index 0: got 5.0, want 4.0))"
    )
    every = tmp_path / "every"
    every.mkdir()
    write_ranks(every, 8, value_problems={0: [seen]}, solo_wrong={0: {str(k): "x" for k in range(8)}})
    assert "the reduction itself, not one rank's data" in merge(8, every, launch_result(8))[1][0]
    none = tmp_path / "none"
    none.mkdir()
    write_ranks(none, 8, value_problems={0: [seen]}, solo_wrong={})
    assert "several ranks at once" in merge(8, none, launch_result(8))[1][0]


def test_the_rank_whose_parameters_drifted_is_named_against_the_majority(tmp_path: Path) -> None:
    # rank 5 drifted: only its diff against rank 0 is non-zero, and its checksum is the odd one
    write_ranks(tmp_path, 8, diffs={5: 1e-3}, checksums={5: 999.0})
    m, problems = merge(8, tmp_path, launch_result(8))
    assert m["params_identical"] is False and m["ranks_with_differing_params"] == [5]
    assert problems == [
        "parameters differ across ranks after DDP training: rank 5 max abs diff 0.001 in 1 of 62 "
        "tensors (rank(s) 5 differ from the other 7)"
    ]
    # rank 0 drifted: every diff is taken against rank 0, so all 7 others differ from it; the
    # checksums still name rank 0
    zero = tmp_path / "zero"
    zero.mkdir()
    write_ranks(zero, 8, diffs={r: 1e-3 for r in range(1, 8)}, checksums={0: 999.0})
    m0, p0 = merge(8, zero, launch_result(8))
    assert m0["ranks_with_differing_params"] == [0] and "(rank(s) 0 differ from the other 7)" in p0[0]
    assert odd_ranks({0: 1.0, 1: 2.0}) == []  # two ranks that disagree: no majority to name one
    assert odd_ranks({0: 1.0, 1: 1.0, 2: 2.0, 3: 2.0}) == []  # half and half: none either


def test_a_hung_rank_among_eight_is_named_and_a_slow_exit_is_not_a_hang(tmp_path: Path) -> None:
    timeout = "RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for recv"
    errors = {r: timeout for r in range(8) if r != 6}
    write_ranks(tmp_path, 8, errors=errors, missing=(6,))  # rank 6 never wrote its result
    codes = [1, 1, -9, 1, 1, 1, -9, 1]  # rank 2 was killed with its result written: slow to exit
    m, problems = merge(8, tmp_path, launch_result(8, hung=(6,), slow=(2,), codes=codes))
    assert problems[0] == "hang: rank(s) 6 still running 5 s after another rank failed: killed"
    assert m["hung_ranks"] == [6] and m["slow_exit_ranks"] == [2]
    assert problems[1:] == [  # the 7 that timed out alike in one line, the slow exit apart
        f"hang/timeout: ranks 0, 1, 3, 4, 5, 7 exited with code 1: {timeout}",
        f"hang/timeout: rank 2 was killed while exiting (its result was written): {timeout}",
    ]


# ---------------------------------------------------------------- real gloo runs: 4 and 8 processes
# Real torch processes (about 25 s and 65 s on this 2-core machine): the `harness` marker, which
# `make test` runs and `make check` does not (issue 13 item 10).
@pytest.mark.harness
def test_four_ranks_through_the_cli_name_the_rank_whose_parameters_drifted(tmp_path: Path) -> None:
    """4 gloo processes through the harness's CLI; rank 2 perturbs one parameter after training."""
    result = run_harness(tmp_path, fault="params@2", ranks=4)
    mg = result["multi_gpu"]
    assert result["verdict"] == "failed" and mg["status"] == "fail" and mg["world_size"] == 4
    # the sweep: every value right, busbw = algbw x 2(n-1)/n = x 1.5 on every row (the document
    # rounds to 6 decimals: tiny sizes on a loaded machine are ~1e-4 GB/s)
    assert mg["allreduce_values_ok"] is True and mg["bus_factor"] == 1.5
    assert all(r["busbw_gbs"] == pytest.approx(r["algbw_gbs"] * 1.5, abs=2e-6) for r in mg["sweep"])
    assert mg["sweep"][-1]["busbw_gbs"] > 0 and mg["max_bytes"] == 4 << 20
    assert mg["sweep_cap"] == {"requested_bytes": 4 << 20, "free_bytes_min": None, "max_bytes": 4 << 20} | {
        "limited_by": "request"
    }
    # the parameters: ranks 0, 1, 3 identical (diff 0, one checksum), rank 2 named
    assert mg["params_identical"] is False and mg["ranks_with_differing_params"] == [2]
    assert mg["reason"] == (
        "parameters differ across ranks after DDP training: rank 2 max abs diff 0.001 in 1 of 62 "
        "tensors (rank(s) 2 differ from the other 3)"
    )
    drifts = [r["max_param_abs_diff"] for r in mg["ranks"]]
    assert drifts[2] == pytest.approx(1e-3, rel=1e-3) and drifts[:2] + drifts[3:] == [0.0] * 3
    sums = mg["param_checksums_f64"]
    assert len({sums[0], sums[1], sums[3]}) == 1 and sums[2] != sums[0]
    gates = {g["name"]: g["status"] for g in result["gates"]}
    assert gates["multi_gpu:allreduce_values"] == "pass" and gates["multi_gpu:params_identical"] == "fail"
    assert [r["rank"] for r in mg["ranks"]] == [0, 1, 2, 3] and mg["hung_ranks"] == []
    assert all({"start", "init", "sweep", "ddp"} <= set(r["phase_s"]) for r in mg["ranks"])
    assert "baseline" in mg["ranks"][0]["phase_s"]  # rank 0 alone runs the one-device baseline
    assert mg["env"]["fault_ranks"] == {"2": ["params"]}


@pytest.mark.harness
def test_eight_ranks_name_the_wrong_contribution_and_the_hung_rank(tmp_path: Path) -> None:
    """8 gloo processes through the harness's CLI: rank 3 adds 1 to its contributions, rank 7
    hangs before the DDP run. The collectives' timeout (30 s), which the others' last all-reduce
    runs into, leaves room for 8 processes on a loaded 2-core machine (the rendezvous waits with
    the parent's deadline). About 100 s here at load 10, 30 s + grace of it the hang."""
    result = run_harness(tmp_path, "--multi-gpu-timeout", "30", fault="allreduce@3,hang@7", ranks=8)
    mg = result["multi_gpu"]
    assert result["verdict"] == "failed" and mg["status"] == "fail" and mg["world_size"] == 8
    assert mg["bus_factor"] == 1.75 and len(mg["sweep"]) == len(sweep_sizes(4 << 20))
    assert all(r["busbw_gbs"] == pytest.approx(r["algbw_gbs"] * 1.75, abs=2e-6) for r in mg["sweep"])
    problems = mg["reason"].split("; ")
    # rank 7: named as hung, killed by the watchdog after the others timed out on the last
    # collective (not at the deadline)
    assert problems[0].startswith("hang: rank(s) 7 still running"), problems
    assert problems[0].endswith("after another rank failed: killed"), problems
    assert mg["hung_ranks"] == [7] and mg["ranks"][7]["exit_code"] == -9
    lists = [re.match(r"hang/timeout: ranks? ([\d, ]+) ", p) for p in problems]
    timed_out = {int(n) for m in lists if m for n in m.group(1).split(", ")}
    assert timed_out and timed_out <= set(range(7)), problems  # some of the others; never rank 7
    # rank 3: every rank saw the wrong sums, the solo rounds name whose contribution it was
    assert mg["allreduce_values_ok"] is False and mg["allreduce_culprits"] == [3], problems
    wrong = mg["reason"][mg["reason"].index("all-reduce values wrong") :]
    assert wrong.startswith("all-reduce values wrong: rank 0: float32 8 B: 2 of 2 elements wrong ")
    assert "(first at index 0: got 37.0, want 36.0)" in wrong  # 1 + 2 + ... + 8 = 36, + 1
    assert "; contribution of rank(s) 3 arrived wrong (solo round at 8 B: rank 0 saw" in wrong
    assert "got 5.0, want 4.0))" in wrong  # rank 3 alone gave 4 + 1
    assert mg["ddp"]["skipped"] and mg["params_identical"] is None
    gates = {g["name"]: g["status"] for g in result["gates"]}
    assert gates["multi_gpu:allreduce_values"] == "fail" and gates["multi_gpu:params_identical"] == "skip"


# ---------------------------------------------------------------- the report of 8 ranks (SYNTHETIC)
SYNTHETIC = "SYNTHETIC 8-rank multi_gpu section made by a unit test (issue 17): not a measurement"


def synthetic_eight_rank_certificate(tmp_path: Path) -> Certificate:
    """The real 2-GPU container certificate with its multi_gpu section replaced by merge() and the
    gates over synthetic 8-rank files (rank 6 hung), sealed again and labelled as a fixture."""
    real = json.loads((RESULTS_X2 / "cert-container-2.json").read_text())
    write_ranks(tmp_path, 8, missing=(6,), errors={r: "RuntimeError: Timed out" for r in range(8) if r != 6})
    m, problems = merge(8, tmp_path, launch_result(8, hung=(6,), codes=[1] * 6 + [-9, 1]))
    spec = h200(8)
    m.update(status="fail", reason="; ".join(problems), backend="nccl", interconnect="nvlink")
    m.update(nccl_version="2.28.9", env={"nvls_enable": "0"}, thresholds=spec, gates=judge_multi_gpu(spec, m))
    harness = {**real["harness"], "multi_gpu": m, "_fixture": SYNTHETIC}
    return build_certificate(
        image=real["image"],
        host=real["host"],
        run=real["run"],
        harness=harness,
        thresholds=real["thresholds"],
        verdict="failed",
        verdict_reason="multi_gpu: " + problems[0],
    )


def test_the_report_lays_out_eight_ranks(tmp_path: Path) -> None:
    r = build_report(synthetic_eight_rank_certificate(tmp_path))
    assert r.fixture == SYNTHETIC and r.multi_gpu is not None and len(r.multi_gpu.ranks) == 8
    text = format_terminal(r)
    assert f"FIXTURE: {SYNTHETIC}" in text  # never shown as a measurement
    assert "multi-GPU: fail (hang: rank(s) 6 still running 5 s after another rank failed: killed" in text
    assert "  ranks         8 x nccl, NCCL 2.28.9" in text
    # rank 6 died before writing its values: not "every value checked", not "WRONG" either
    assert re.search(r"all-reduce    busbw [\d,.]+ GB/s at 8 GiB \(floor -\); -\n", text), text
    assert "  sweep         8 B - 8 GiB, 31 sizes (as asked: 8 GiB)" in text
    assert "  busbw         algbw x 2(n-1)/n = x 1.75 at n = 8" in text
    assert "  hung ranks    rank 6" in text
    assert re.search(r"\n  4 GiB\s+[\d,.]+\s+[\d,.]+\s+[\d,.]+\n  8 GiB\s", text)  # rows past 1 GiB
    rank_lines = [ln for ln in text.splitlines() if re.match(r"  [0-7]  +(-?\d|-) ", ln)]
    assert len(rank_lines) == 8 and rank_lines[6].split()[1] == "-9" and "8.25 GiB" in rank_lines[0]
    page = render_html(r)
    assert f'<div class="banner" id="fixture">FIXTURE: {SYNTHETIC}</div>' in page
    section = page[page.index('<section id="multi-gpu">') : page.index("<h2>Over time</h2>")]
    ranks = section[section.index('<table id="ranks">') :].split("</table>")[0]
    assert ranks.count("<tr>") == 1 + 8
    busbw = section[section.index('<table id="busbw">') :].split("</table>")[0]
    assert busbw.count("<tr>") == 1 + 8  # header, 1 KiB ... 1 GiB, 4 GiB, 8 GiB


# ---------------------------------------------------------------- the floors rule (thresholds.yaml)
def gpu_script(name: str) -> ModuleType:
    path = ROOT / "benchmarks" / "gpu" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_floors_rule_gives_the_committed_2gpu_floors(capsys: pytest.CaptureFixture[str]) -> None:
    """The rule next to the thresholds, replayed on the three runs the H200 x2 floors came from."""
    f = gpu_script("multigpu_floors")
    runs = [RESULTS_X2 / n for n in ("cert-native-1.json", "cert-container.json", "cert-native-2.json")]
    assert f.main(["--at", "1G", *map(str, runs)]) == 0
    out = capsys.readouterr().out
    x2 = h200(2)
    assert f"min_busbw_gbs: {x2['min_busbw_gbs']}" in out and x2["min_busbw_gbs"] == 293.0
    assert f"min_scaling_efficiency: {x2['min_scaling_efficiency']}" in out
    assert f"reference_busbw_gbs: {x2['reference_busbw_gbs']}" in out and "busbw_at_bytes: 1073741824" in out
    # those runs stopped at 1 GiB: at 8 GiB they set no floor, and say why
    assert f.main(["--at", "8G", str(runs[0])]) == 1
    assert "no sweep row at 8589934592 B (the sweep stopped at 1073741824 B)" in capsys.readouterr().err
    assert f.parse_size("8G") == 8 * GIB and f.parse_size("1MiB") == 1 << 20 and f.parse_size("4096") == 4096


def test_the_proof_summary_reads_a_real_2gpu_certificate(capsys: pytest.CaptureFixture[str]) -> None:
    """multigpu_summary.py (run_multigpu_proof.sh's summary.txt) on the committed native run."""
    summary = gpu_script("multigpu_summary")
    assert summary.main([str(RESULTS_X2 / "cert-native-1.json"), str(RESULTS_X2 / "missing.json")]) == 1
    out = capsys.readouterr().out
    assert "2 x nccl, NCCL 2.28.9, interconnect nvlink, NCCL_NVLS_ENABLE=0" in out
    assert "512 MiB 316.0, 1 GiB 329.1" in out and "scaling 0.972413" in out
    assert "missing.json: unreadable (FileNotFoundError" in out
    assert summary.label(8 << 30) == "8 GiB" and summary.label(8) == "8 B"
