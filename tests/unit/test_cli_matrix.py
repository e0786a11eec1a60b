"""`envbuilder matrix list KIND` and `matrix show NAME`: text and --json, exit codes and messages."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envbuilder.cli import cli
from envbuilder.matrix import load_matrix

MATRIX = load_matrix()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("kind", "count", "header", "row"),
    [
        ("gpus", len(MATRIX.gpus.models), "MODEL", "GeForce RTX 4090"),
        ("torch", len(MATRIX.frameworks[0].releases), "VERSION", "2.11.0"),
        ("tensorflow", len(MATRIX.frameworks[1].releases), "VERSION", "2.16.1"),
        ("jax", len(MATRIX.frameworks[2].releases), "VERSION", "0.11.2"),
        ("cuda", len(MATRIX.cuda.releases), "TOOLKIT DRIVER", "13.4.1"),
        ("images", len(MATRIX.base_images), "REQUIRES", "nvidia/cuda:12.8.1-runtime-ubuntu24.04"),
    ],
)
def test_list_text_and_json(kind: str, count: int, header: str, row: str) -> None:
    code, out, err = run("matrix", "list", kind)
    assert code == 0, err
    lines = out.splitlines()
    assert header in lines[0] and len(lines) == count + 1
    assert any(line.startswith(row + " ") for line in lines[1:]), row
    assert f"{count} {kind} from matrices/" in err  # the provenance goes to stderr, not into the table
    code, out, _ = run("matrix", "list", kind, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["kind"] == kind and doc["count"] == count == len(doc["items"])
    assert doc["reviewed"] and doc["file"].endswith(".yaml")


def test_list_gpus_json_carries_what_the_resolver_reads() -> None:
    _, out, _ = run("matrix", "list", "gpus", "--json")
    items = {g["name"]: g for g in json.loads(out)["items"]}
    h200 = items["NVIDIA H200"]
    assert (h200["cc"], h200["brand"], h200["segment"], h200["last_branch"]) == (
        "9.0",
        "nvidia",
        "datacenter",
        None,
    )
    assert "NVIDIA H200" in h200["nvml_names"] and h200["record"] == "gpu"
    assert items["GeForce GTX 1080"]["drivers"] == "up to R580"


def test_list_framework_marks_the_pypi_default() -> None:
    _, out, _ = run("matrix", "list", "torch")
    line = next(ln for ln in out.splitlines() if ln.startswith("2.11.0 "))
    assert "cu130*" in line and "cu126 " in line


def test_list_unknown_kind_is_a_usage_error() -> None:
    code, _, err = run("matrix", "list", "caffe")
    assert code == 2 and "Invalid value" in err and "gpus" in err


@pytest.mark.parametrize(
    ("name", "first_line", "field"),
    [
        ("RTX 4090", "gpu GeForce RTX 4090", "cc            8.9"),
        ("NVIDIA A100-SXM4-80GB", "gpu NVIDIA A100", "brand         nvidia"),
        ("torch==2.11.0", "torch 2.11.0   python >=3.10,<3.15", "cu130*"),
        ("tensorflow==2.21.0", "tensorflow 2.21.0   python >=3.10,<3.14", "kernel sets: 1,149 with SASS"),
        ("jax==0.4.26", "jax 0.4.26   python >=3.9,<3.13", "XLA (always): targets up to 9.0"),
        ("cuda 12.8.1", "cuda 12.8.1", "min driver      570.124.06"),
        ("sm_90", "arch Hopper", "NVIDIA H200"),
        ("cc 10.7", "arch Rubin", "13.4.1"),
        ("nvidia/cuda:12.8.1-runtime-ubuntu24.04", "image nvidia/cuda:12.8.1-runtime-ubuntu24.04", "tesla"),
    ],
)
def test_show_text(name: str, first_line: str, field: str) -> None:
    code, out, err = run("matrix", "show", name)
    assert code == 0, err
    assert out.splitlines()[0] == first_line
    assert field in out


def test_show_json_is_the_record_or_a_list_of_them() -> None:
    _, out, _ = run("matrix", "show", "H100 SXM", "--json")
    doc = json.loads(out)
    assert doc["record"] == "gpu" and doc["name"] == "NVIDIA H100" and "H100 SXM" in doc["aliases"]
    _, out, _ = run("matrix", "show", "12.8", "--json")  # a CUDA line: every release of it
    assert [r["version"] for r in json.loads(out)] == ["12.8.0", "12.8.1"]
    _, out, _ = run("matrix", "show", "jax 0.11", "--json")
    assert {r["version"] for r in json.loads(out)} >= {"0.11.0", "0.11.2"}


@pytest.mark.parametrize(
    ("name", "message", "hint"),
    [
        ("RTX 6000", "GPU 'RTX 6000' fits 5 models: ", "give the full name"),
        ("RTX 4909", "the matrix has no GPU", "did you mean 'GeForce RTX 4090'"),
        (
            "foo",
            "the matrix has no GPU, framework release, CUDA release, compute capability or base image",
            "matrix list",
        ),
        ("torch==9.9", "no torch release matches '==9.9'", "matrix list torch"),
        ("cuda 10.2", "no CUDA release '10.2' in the matrix", "matrix list cuda"),
        ("sm_99", "unknown compute capability '9.9'", "matrix list cuda"),
        ("torch==2.x!", "malformed torch requirement", "PEP 440"),
    ],
)
def test_show_errors_exit_2_one_line_and_hint(name: str, message: str, hint: str) -> None:
    code, out, err = run("matrix", "show", name)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("envbuilder: error: ") and message in lines[0]
    assert lines[1].startswith("hint: ") and hint in lines[1]


def test_show_a_short_name_of_several_models_of_one_capability_shows_each() -> None:
    code, out, err = run("matrix", "show", "4090", "--json")
    assert code == 0, err
    assert [r["name"] for r in json.loads(out)] == [
        "GeForce RTX 4090",
        "GeForce RTX 4090 D",
        "GeForce RTX 4090 Laptop GPU",
    ]
