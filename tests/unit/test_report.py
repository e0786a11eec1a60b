"""Reports: the terminal table, JSON, the HTML page's sections and charts, escaping of hostile
certificate strings, the CPU-only page, compare highlighting, and the CLI's exit codes."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.store import load_certificate
from envbuilder.cli import cli
from envbuilder.report.charts import band_label, size_label
from envbuilder.report.compare import compare_reports, format_compare, render_compare_html
from envbuilder.report.html import render_html
from envbuilder.report.model import Report, build_report, step_counts
from envbuilder.report.terminal import format_terminal

CERTS = Path(__file__).resolve().parent.parent / "data" / "certs"
GPU, CPU = CERTS / "sample-gpu.json", CERTS / "sample-cpu.json"
# A real certificate: `envbuilder certify` of an image on both GPUs of the 2-GPU H200 machine.
H200X2 = (
    CERTS.parent.parent.parent
    / "benchmarks"
    / "results"
    / "multigpu-h200x2-2026-11-30"
    / "cert-container.json"
)
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


def report_of(doc: dict[str, Any]) -> Report:
    return build_report(Certificate(doc))


def doc(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def hostile(text: str = EVIL) -> dict[str, Any]:
    """A validly sealed certificate whose strings (`text`: markup by default) are everywhere a
    stored string can be."""
    base = doc(GPU)
    harness = dict(base["harness"])
    steps = [dict(s) for s in harness["steps"]]
    steps[0] = {**steps[0], "name": text, "reason": text, "status": "fail", "warnings": [text]}
    fp32 = next(i for i, s in enumerate(steps) if s["name"] == "train_rn18_fp32_bs32")
    steps[fp32] = {**steps[fp32], "name": text}  # reaches the SVG charts as a band and a segment
    windows = dict(harness["telemetry"]["windows"])
    windows[text] = windows.pop("train_rn18_fp32_bs32")
    harness["telemetry"] = {**harness["telemetry"], "windows": windows}
    harness["steps"] = steps
    harness["notes"] = [text]
    image = {**base["image"], "ref": text, "stack": {**base["image"]["stack"], "id": text}}
    return build_certificate(
        image=image,
        host={**base["host"], "gpu_access": text},
        run={},
        harness=harness,
        thresholds={},
        verdict="failed",
        verdict_reason=text,
    ).to_dict()


def test_fixtures_verify_and_the_gpu_one_says_it_is_synthetic() -> None:
    gpu, cpu = report_of(doc(GPU)), report_of(doc(CPU))
    assert gpu.integrity == () and cpu.integrity == ()
    assert gpu.fixture == "synthetic test data, not a measurement"
    assert cpu.fixture is None  # a real certificate, made by `envbuilder certify` on the CI machine


def test_terminal_has_stack_verdict_steps_and_the_field_guide_table() -> None:
    text = format_terminal(report_of(doc(GPU)))
    assert text.startswith("certificate a2acafccd8b4  CERTIFIED  (13 checks passed on the GPU)")
    assert "FIXTURE: synthetic test data" in text
    assert "torch 2.11.0 (cu130)" in text and "integrity     intact" in text
    assert re.search(r"train_rn18_fp32_bs32\s+pass\s+8\.0\s+2,712\s+11\.8\s+3,588\s+0\.962", text)
    assert re.search(r"GPU FP32\s+11\.8 \(13\.2\)\s+2,712\s+3,588 MiB\s+48 C\s+0\.962\s+-\s+batch 32", text)
    assert re.search(
        r"GPU mixed precision \(bf16\)\s+9\.6 \(10\.8\)\s+3,333\s+2,392 MiB\s+53 C\s+0\.958\s+3072", text
    )
    assert re.search(r"CPU\s+-.*not run in this certification", text)


def test_cpu_certificate_says_no_gpu_telemetry() -> None:
    r = report_of(doc(CPU))
    assert r.telemetry is None
    assert r.telemetry_why == "no GPU telemetry (no GPU)"  # not the missing pynvml a GPU-less run reports
    cpu_row = r.comparison[0]
    assert cpu_row.step == "train_cpu_rn18w16_fp32_bs32" and cpu_row.images_per_s is not None
    assert "telemetry: no GPU telemetry" in format_terminal(r)
    html = render_html(r)
    assert 'id="no-telemetry"' in html and "no GPU telemetry" in html
    assert html.count("<svg") == 1  # the step-time chart only, laid out on the harness's clock


def test_html_is_self_contained_with_every_section_and_chart() -> None:
    html = render_html(report_of(doc(GPU)))
    for section in ('id="steps"', 'id="comparison"', 'id="fixture"', "Image and stack", "Host"):
        assert section in html
    titles = re.findall(r"<svg[^>]*><title>([^<]*)</title>", html)
    assert titles == [
        "Step time per training run (mean: this certificate kept no per-step times)",
        "GPU memory used",
        "GPU utilization",
        "Power draw",
        "Temperature",
        "SM clock and clock-event reasons",
    ]
    assert "sw_power_cap" in html  # the clock-event row the fixture's power cap produced
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html and "<link" not in html


def test_hostile_strings_are_escaped_in_html_and_svg() -> None:
    r = report_of(hostile())
    html = render_html(r)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "&amp;amp;" in html  # an entity in the data stays text, it is not decoded
    svg_titles = re.findall(r"<rect class=\"band\d\"[^>]*><title>([^<]*)</title>", html)
    assert any("&lt;script&gt;" in t for t in svg_titles)  # step names reach the SVG escaped
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;amp; 11.8 ms" in html  # the segment key
    rows = compare_reports(r, report_of(doc(GPU)))
    page = render_compare_html(r, report_of(doc(GPU)), rows)
    assert "<script>" not in page and "<img" not in page


def test_control_characters_and_bidi_overrides_reach_the_page_as_their_escapes() -> None:
    """Stored fields with a right-to-left override, an ANSI sequence and a newline: shown as
    `\\u202e`, `\\x1b[31m`, `\\n` on the page and in its SVG (as the terminal report shows them),
    never as the raw characters that would reorder or hide the text around them."""
    bad = "evil\u202egpj.exe\x1b[31m\nx"
    html = render_html(report_of(hostile(bad)))
    assert not any(c in html for c in "\u202e\x1b")
    shown = "evil\\u202egpj.exe\\x1b[31m\\nx"
    assert html.count(shown) >= 4  # the image ref, the verdict's reason, a step's reason, ...
    assert re.search(r"<title>[^<]*" + re.escape(shown), html)  # ... and a chart's labels


def test_multi_gpu_section_from_the_real_2gpu_h200_certificate() -> None:
    r = report_of(doc(H200X2))
    assert r.integrity == () and r.verdict == "certified" and r.multi_gpu is not None
    text = format_terminal(r)
    assert "multi-GPU: pass" in text
    assert "  ranks         2 x nccl, NCCL 2.28.9" in text
    # nvidia-smi printed no topology in that container (the harness now asks NVML too)
    assert "  interconnect  unknown, NCCL_NVLS_ENABLE=0" in text
    assert "busbw 328.5 GB/s at 1 GiB (floor -); every value checked" in text  # certified before the floor
    assert "25,153 img/s vs 12,980 on one GPU: scaling 0.969 (floor 0.50); parameters identical" in text
    assert re.search(r"1 GiB\s+3,269\.0\s+328\.46\s+328\.46", text), text
    assert "gate multi_gpu:params_identical: pass (max abs difference 0 on every rank)" in text
    page = render_html(r)
    section = page[page.index('<section id="multi-gpu">') : page.index("<h2>Over time</h2>")]
    assert "NCCL all-reduce bus bandwidth by message size" in section and "<svg" in section
    busbw = section[section.index('<table id="busbw">') :].split("</table>")[0]
    assert busbw.count("<tr>") == 1 + 6  # header, 1 KiB ... 1 GiB
    assert json.loads(json.dumps(r.to_dict()))["multi_gpu"]["status"] == "pass"


def test_single_gpu_certificates_show_no_or_a_skipped_multi_gpu_section() -> None:
    cpu = report_of(doc(CPU))  # a harness from before the multi_gpu section
    assert cpu.multi_gpu is None and "multi-GPU" not in format_terminal(cpu)
    assert '<section id="multi-gpu">' not in render_html(cpu)
    one = doc(GPU)
    one["harness"] = {
        **one["harness"],
        "multi_gpu": {"status": "skip", "reason": "fewer than 2 GPUs visible"},
    }
    r = report_of(one)
    assert r.multi_gpu is not None and r.multi_gpu.summary == () and r.multi_gpu.sweep == ()
    assert "multi-GPU: skip (fewer than 2 GPUs visible)" in format_terminal(r)
    page = render_html(r)
    assert (
        '<section id="multi-gpu">' in page
        and "<svg" not in page[page.index('id="multi-gpu"') :].split("<h2>Over time")[0]
    )


def test_a_tampered_certificate_file_is_shown_with_its_failure() -> None:
    bad = doc(GPU)
    bad["verdict_reason"] = "edited"
    html = render_html(report_of(bad))
    assert 'id="integrity"' in html and "INTEGRITY CHECK FAILED" in html and "verdict_reason" in html


def test_compare_marks_differences_and_not_noise() -> None:
    a = report_of(doc(GPU))
    edited = doc(GPU)
    steps = edited["harness"]["steps"]
    fp32 = next(s for s in steps if s["name"] == "train_rn18_fp32_bs32")
    fp32["metrics"]["images_per_s"] *= 1.02  # noise: within tolerance
    bf16 = next(s for s in steps if s["name"] == "train_rn18_bf16_bs32")
    bf16["metrics"]["images_per_s"] *= 1.5  # a real difference
    edited["host"] = {**edited["host"], "driver": "570.86.15"}
    b_doc = build_certificate(
        **{k: edited[k] for k in ("image", "host", "run", "harness", "thresholds")},
        verdict="certified",
        verdict_reason=edited["verdict_reason"],
        issued_at=edited["issued_at"],
    ).to_dict()
    rows = compare_reports(a, report_of(b_doc))
    by = {(r.section, r.field): r for r in rows}
    assert by[("step train_rn18_bf16_bs32", "images/s")].differs
    assert by[("step train_rn18_bf16_bs32", "images/s")].delta == "+50.0%"
    assert not by[("step train_rn18_fp32_bs32", "images/s")].differs
    assert by[("host", "driver")].differs and not by[("summary", "verdict")].differs
    text = format_compare(a, report_of(b_doc), rows)
    assert re.search(r"^\s+\*\s+host\s+driver\s+580\.159\.04 \(CUDA 13\.0\)\s+570\.86\.15", text, re.M)
    html = render_compare_html(a, report_of(b_doc), rows)
    assert html.count('class="diff"') == sum(r.differs for r in rows) >= 2


def test_compare_of_gpu_and_cpu_certificates_pairs_absent_steps() -> None:
    rows = compare_reports(report_of(doc(GPU)), report_of(doc(CPU)))
    by = {(r.section, r.field): r for r in rows}
    assert by[("step cuda_smoke", "status")].a == "pass" and by[("step cuda_smoke", "status")].b == "skip"
    assert by[("step train_cpu_rn18w16_fp32_bs32", "status")].a == "absent"
    assert by[("summary", "verdict")].differs


def test_load_certificate_from_the_store_and_from_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envbuilder.certify.store import CertStore
    from envbuilder.errors import UsageError

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path))
    cid = CertStore().add(Certificate(doc(GPU)))
    assert load_certificate(cid[:8]).content_hash == f"sha256:{cid}"
    assert load_certificate(str(CPU)).verdict == "certified-cpu-only"
    with pytest.raises(UsageError):
        load_certificate("ffffffff")


def test_cli_writes_html_prints_the_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", str(GPU), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "CERTIFIED" in res.output and f"wrote {out}" in res.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    res = CliRunner().invoke(cli, ["report", str(CPU), "--json", "--no-html"])
    assert res.exit_code == 0
    assert json.loads(res.output)["verdict"] == "certified-cpu-only"


def test_cli_compare_and_usage_errors(tmp_path: Path) -> None:
    out = tmp_path / "c.html"
    res = CliRunner().invoke(cli, ["report", "--compare", str(GPU), str(CPU), "--html", str(out)])
    assert res.exit_code == 0, res.output
    assert "fields differ (*)" in res.output and 'class="diff"' in out.read_text()
    res = CliRunner().invoke(cli, ["report", "--compare", str(GPU)])
    assert res.exit_code == 2 and "--compare needs exactly two certificates" in res.output
    not_cert = tmp_path / "x.json"
    not_cert.write_text("[1, 2]")
    res = CliRunner().invoke(cli, ["report", str(not_cert), "--no-html"])
    assert res.exit_code == 12 and "is not a JSON object" in res.output


ISSUE16 = CERTS.parent.parent.parent / "benchmarks" / "results" / "issue16-h200-2026-12-01"


def h200_certificate(result: str) -> dict[str, Any]:
    """A certificate sealed around a real harness result of the H200 (issue16-h200-2026-12-01:
    torch default level and JAX, native, one host, 2026-12-01); the image fields are the run's."""
    harness = doc(ISSUE16 / result)
    gpu = harness["host"]["gpus"][0]
    return build_certificate(
        image={"ref": f"native:{harness['options']['framework']}", "id": "sha256:" + "0" * 64},
        host={"gpus": [{"name": gpu["name"], "cc": "9.0"}], "driver": "580.159.04", "gpu_access": "native"},
        run={},
        harness=harness,
        thresholds=harness["thresholds"],
        verdict="certified" if harness["verdict"] == "certified" else "failed",
        verdict_reason=harness["verdict_reason"],
    ).to_dict()


def test_compare_pairs_a_torch_and_a_jax_certificate_of_one_host() -> None:
    """The two frameworks name their tuned runs differently (tuned_rn50_compiled vs tuned_rn50_jit):
    compare pairs the fastest tuned run per model, and the accuracy runs by their shared names."""
    torch_r, jax_r = (
        report_of(h200_certificate("torch-default.json")),
        report_of(h200_certificate("jax-native.json")),
    )
    tuned = {c.label: c for c in jax_r.comparison if c.label.startswith("GPU tuned")}
    assert tuned["GPU tuned ResNet-50"].step == "tuned_rn50_jit"
    assert tuned["GPU tuned ResNet-50"].peak_vram_mib  # JAX's allocator peak stands in for reserved
    assert dict(jax_r.stack)["framework"].startswith("jax (certified for")
    rows = {(r.section, r.field): r for r in compare_reports(torch_r, jax_r)}
    run = rows[("guide GPU tuned ResNet-50", "run")]
    assert (run.a, run.b, run.differs) == ("tuned_rn50_compiled", "tuned_rn50_jit", True)
    speed = rows[("guide GPU tuned ResNet-50", "images/s")]
    assert (speed.a, speed.b, speed.delta) == ("6,749", "6,146", "-8.9%") and speed.differs
    rn18 = rows[("guide GPU tuned ResNet-18", "run")]
    assert (rn18.a, rn18.b) == ("tuned_rn18_compiled", "tuned_rn18_jit")
    fp32 = rows[("step train_rn18_fp32_bs32", "images/s")]
    assert fp32.a == "3,362" and fp32.b == "6,372"
    assert rows[("summary", "verdict")].b == "failed"  # the JAX gates failed on that run
    text = format_terminal(jax_r)
    assert re.search(r"GPU tuned ResNet-50\s.*6,146.*tuned_rn50_jit", text), text


# ---------------------------------------------------------------- issue 13 item 8 (a REAL certificate)
SERIES = CERTS / "real-cpu-series.json"  # certify --gpu-access none on this machine, 2026-12-01


def test_the_terminal_shows_the_input_pipeline_warning_the_html_shows() -> None:
    r = report_of(doc(SERIES))
    (step,) = [s for s in r.steps if s.name == "input_pipeline"]
    assert step.warnings and step.warnings[0].startswith("PIL is not installed")
    line = f"  warning (input_pipeline): {step.warnings[0]}"
    assert line in format_terminal(r).splitlines()
    assert f"warning: {step.warnings[0]}" in render_html(r)


def test_the_step_time_chart_draws_the_recorded_step_times_not_a_flat_mean() -> None:
    r = report_of(doc(SERIES))
    (run,) = [s for s in r.steps if s.series]
    assert run.name == "train_cpu_rn18w16_fp32_bs32" and len(run.series) == 55 and run.series_per_point == 1
    times = [t for t, _ in run.series]
    assert times == sorted(times) and times[-1] == pytest.approx(14.6705)
    html = render_html(r)
    svg = next(s for s in html.split("<svg")[1:] if "Step time over each training run" in s)
    assert "(recorded per step)" in svg and "seconds into the run&#x27;s timed steps" in svg
    path = re.search(r'<path class="line" d="([^"]+)"', svg)
    assert path is not None
    ys = {float(p.split(",")[1]) for p in path.group(1).replace("M", "").split(" L")}
    assert len(path.group(1).split(" L")) == 55 and len(ys) > 20  # one point per step, not flat
    assert "train_cpu_rn18w16_fp32_bs32" in svg  # named in the key under the plot
    assert "Step time per training run (mean" not in html  # the mean chart only without a series


def test_a_certificate_without_a_series_keeps_the_mean_chart_and_says_why() -> None:
    r = report_of(doc(CPU))
    assert not any(s.series for s in r.steps)
    assert "Step time per training run (mean: this certificate kept no per-step times)" in render_html(r)


def test_a_malformed_series_is_ignored_not_raised() -> None:
    d = doc(SERIES)
    run = next(s for s in d["harness"]["steps"] if s["name"] == "train_cpu_rn18w16_fp32_bs32")
    run["metrics"]["step_series"] = {"t_s": [1, 2], "mean_ms": ["x"], "per_point": "?"}
    r = report_of(d)
    assert not any(s.series for s in r.steps) and "kept no per-step times" in render_html(r)


def test_the_2gpu_page_labels_sizes_gpus_steps_and_windows() -> None:
    """Issue 26 item 9: NCCL sizes as sizes (not log2 numbers), the telemetry's GPU named on a
    2-GPU certificate, the step count beside the verdict in the verdict's own terms, step names
    broken only after an underscore, the shaded step windows labelled."""
    r = report_of(doc(H200X2))
    assert r.step_counts == "17 steps: the host record, 14 pass, 2 skip"
    assert r.verdict_reason == "14 checks passed on the GPU"
    assert r.telemetry_gpu == "GPU 0 of 2"
    page = render_html(r)
    section = page[page.index('<section id="multi-gpu">') : page.index("<h2>Over time</h2>")]
    ticks = re.findall(r'<text class="tick"[^>]*text-anchor="middle">([^<]*)</text>', section)
    assert {"1 KiB", "1 MiB", "1 GiB"} <= set(ticks) and "log2" not in section
    over_time = page[page.index("<h2>Over time</h2>") :]
    assert "GPU memory used (GPU 0 of 2, the GPU the harness samples)" in over_time
    assert "<title>GPU 0 of 2: memory used</title>" in over_time
    assert "train_<wbr>rn18_<wbr>fp32_<wbr>bs32" in page
    labels = re.findall(r'<text class="bandlabel"[^>]*>([^<]*)</text>', over_time)
    assert "tuned_rn50_compiled" in labels and any(x.endswith("\u2026") for x in labels)


def test_a_single_gpu_page_names_no_gpu_index_and_counts_a_failed_host() -> None:
    r = report_of(doc(CERTS / "sample-gpu.json"))
    assert r.telemetry_gpu == "" and "of 1" not in render_html(r)
    assert step_counts(()) == ""
    rows = tuple(replace(x, status="fail") if x.name == "host" else x for x in r.steps)
    assert step_counts(rows).startswith(f"{len(rows)} steps: the host record (fail), ")


def test_band_labels_fit_their_band_or_are_left_to_the_title() -> None:
    assert band_label("tuned_rn50_compiled", 500) == "tuned_rn50_compiled"
    assert band_label("tuned_rn50_compiled", 40) == "tuned_\u2026"
    assert band_label("tuned_rn50_compiled", 15) is None
    assert [size_label(2.0**e) for e in (5, 10, 20, 29, 33)] == ["32 B", "1 KiB", "1 MiB", "512 MiB", "8 GiB"]
