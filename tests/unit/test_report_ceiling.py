"""The report's ResNet-50 share of the MLPerf Training per-GPU figure (matrices/ceilings.yaml):
the shipped figures and their sources, the GPU matching, the malformed file, and what the
terminal and HTML reports show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from envbuilder.certify.certificate import Certificate
from envbuilder.errors import MatrixError
from envbuilder.matrix.ceilings import ceiling_for, load_ceilings, parse_ceilings
from envbuilder.report.html import render_html
from envbuilder.report.model import build_report
from envbuilder.report.terminal import format_terminal
from envbuilder.resources import matrices_dir

ROOT = Path(__file__).resolve().parents[2]
GPU_CERT = ROOT / "tests" / "data" / "certs" / "sample-gpu.json"  # H200: eager 4,723, compiled 6,667 img/s
JAX_CERT = ROOT / "benchmarks" / "results" / "h200-2026-12-01-s3" / "container-jax" / "cert-jax.json"


def cert(path: Path, gpu: str | None = None) -> Certificate:
    doc = json.loads(path.read_text())
    if gpu is not None:
        doc["host"]["gpus"][0]["name"] = gpu
    return Certificate(doc)


def test_the_shipped_figures_with_their_sources() -> None:
    ceilings = {c.model: c for c in load_ceilings()}
    assert ceilings["NVIDIA H200"].images_per_s == 7944 and ceilings["NVIDIA H100 SXM"].images_per_s == 7156
    assert all(c.source and c.checked and "MLPerf Training v4.0" in c.benchmark for c in ceilings.values())
    assert "h200_ngc24.04_mxnet/resnet/result_0.txt" in ceilings["NVIDIA H200"].source


def test_a_gpu_matches_by_its_exact_nvml_name() -> None:
    ceilings = load_ceilings()
    assert ceiling_for("nvidia h200", ceilings) is not None
    assert ceiling_for("NVIDIA H100 80GB HBM3", ceilings).model == "NVIDIA H100 SXM"  # type: ignore[union-attr]
    # a PCIe or NVL part is another power and clock class: it borrows no SXM figure
    assert ceiling_for("NVIDIA H100 PCIe", ceilings) is None
    assert ceiling_for("NVIDIA H200 NVL", ceilings) is None
    assert ceiling_for(None, ceilings) is None


def test_the_report_shows_each_resnet50_run_as_a_share_of_the_h200_figure() -> None:
    r = build_report(cert(GPU_CERT))
    assert "7,944 img/s" in r.ceiling and "result_0.txt" in r.ceiling
    shares = {name: round(share, 3) for name, _ips, share in r.ceiling_runs}
    assert shares == {"tuned_rn50_eager": round(4723 / 7944, 3), "tuned_rn50_compiled": round(6667 / 7944, 3)}
    text = format_terminal(r)
    assert "ResNet-50 against its ceiling" in text and "59.5%" in text and "83.9%" in text
    html = render_html(r)
    assert 'id="ceiling"' in html and "83.9%" in html
    jax = build_report(cert(JAX_CERT))
    assert [(n, round(s, 3)) for n, _i, s in jax.ceiling_runs] == [
        ("tuned_rn50_jit", round(6945.354096 / 7944, 3))
    ]


def test_a_gpu_without_a_figure_says_so_and_shows_no_share() -> None:
    r = build_report(cert(GPU_CERT, gpu="NVIDIA A100-SXM4-80GB"))
    assert r.ceiling == "no ResNet-50 ceiling on file for NVIDIA A100-SXM4-80GB (matrices/ceilings.yaml)"
    assert r.ceiling_runs == () and "no ResNet-50 ceiling on file" in format_terminal(r)


def test_a_failed_run_or_no_resnet50_shows_nothing() -> None:
    doc = json.loads(GPU_CERT.read_text())
    for s in doc["harness"]["steps"]:
        if s["name"].startswith("tuned_rn50"):
            s["status"] = "fail"
    r = build_report(Certificate(doc))
    assert (r.ceiling, r.ceiling_runs) == ("", ())
    assert "against its ceiling" not in format_terminal(r)


def test_the_report_given_its_own_figures() -> None:
    ceilings = parse_ceilings(
        {
            "schema_version": 1,
            "resnet50_training": {
                "benchmark": "B",
                "gpus": [
                    {
                        "model": "M",
                        "nvml_names": ["NVIDIA H200"],
                        "images_per_s": 6667,
                        "source": "S",
                        "checked": "C",
                    }
                ],
            },
        }
    )
    r = build_report(cert(GPU_CERT), ceilings)
    assert r.ceiling.startswith("B, per GPU on M: 6,667 img/s (source: S; checked: C)")
    assert dict((n, s) for n, _i, s in r.ceiling_runs)["tuned_rn50_compiled"] == 1.0


def _shipped() -> dict[str, Any]:
    return yaml.safe_load((matrices_dir() / "ceilings.yaml").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("images_per_s", 0, "positive number"),
        ("images_per_s", True, "positive number"),
        ("nvml_names", [], "non-empty list"),
        ("source", "", "missing"),
        ("checked", None, "missing"),
    ],
)
def test_a_malformed_figure_is_refused_naming_its_field(field: str, value: Any, says: str) -> None:
    doc = _shipped()
    doc["resnet50_training"]["gpus"][0][field] = value
    with pytest.raises(MatrixError, match=says) as err:
        parse_ceilings(doc)
    assert err.value.field == f"resnet50_training.gpus[0].{field}" and err.value.exit_code == 3


def test_a_name_with_two_figures_and_a_wrong_schema_are_refused() -> None:
    doc = _shipped()
    doc["resnet50_training"]["gpus"][1]["nvml_names"] = ["nvidia H200"]
    with pytest.raises(MatrixError, match="has a ceiling already"):
        parse_ceilings(doc)
    with pytest.raises(MatrixError, match="schema_version"):
        parse_ceilings({"schema_version": 2})


def test_an_unreadable_file_is_a_matrix_error(tmp_path: Path) -> None:
    bad = tmp_path / "ceilings.yaml"
    bad.write_text("a: [unclosed\n")
    with pytest.raises(MatrixError, match="cannot be read"):
        load_ceilings(bad)
    with pytest.raises(MatrixError, match="cannot be read"):
        load_ceilings(tmp_path / "missing.yaml")
