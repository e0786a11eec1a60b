"""`envbuilder certify` and `envbuilder certs`: exit codes, messages, stdout vs stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import envbuilder.certify.certify
from envbuilder.certify.certificate import Certificate, build_certificate
from envbuilder.certify.record import StepRecord
from envbuilder.cli import cli
from envbuilder.cli.certify_cmd import key_metric
from envbuilder.errors import DockerUnavailableError, NoGpuError

IMAGE_ID = "sha256:" + "ab" * 32
MP = pytest.MonkeyPatch


def make(verdict: str, reason: str = "loader starves the GPU") -> Certificate:
    steps = [
        {"name": "host", "status": "pass", "seconds": 1.0, "reason": "", "metrics": {"gpus": []}},
        {"name": "train_rn18_bf16_bs32", "status": "pass", "seconds": 9.5, "reason": "",
         "metrics": {"images_per_s": 3120.4, "val_accuracy": 0.93}},
        {"name": "input_pipeline", "status": "fail" if verdict == "failed" else "pass", "seconds": 2.0,
         "reason": reason,
         "metrics": {"loader_fed_img_s": 900.0, "resident_img_s": 3000.0}},
    ]  # fmt: skip
    return build_certificate(
        image={"id": IMAGE_ID, "ref": "img:1", "stack": None, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": "580.159.04", "gpus": [], "gpu_access": "devices"},
        run={},
        harness={"kind": "result", "verdict": verdict, "steps": steps, "gates": []},
        thresholds={},
        verdict=verdict,
        verdict_reason=f"reason for {verdict}",
    )


@pytest.fixture
def store_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def fake_certify(
    verdict: str | None = None, error: Exception | None = None, reason: str | None = None
) -> Any:
    def certify_image(image: str, **kw: Any) -> Certificate:
        kw["progress"]("certify: GPU access devices (fake)")
        if error is not None:
            raise error
        assert verdict is not None
        return make(verdict, reason) if reason else make(verdict)

    return certify_image


def run(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args)


@pytest.mark.parametrize(("verdict", "code"), [("certified", 0), ("certified-cpu-only", 0), ("failed", 11)])
def test_certify_exit_codes_and_summary(
    verdict: str, code: int, store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify(verdict))
    res = run(["certify", "img:1"])
    assert res.exit_code == code, res.output
    assert "train_rn18_bf16_bs32" in res.stdout and "3,120 img/s, val acc 0.93" in res.stdout
    assert f"verdict  {verdict.upper()}" in res.stdout
    assert "certify: GPU access devices (fake)" in res.stderr
    if verdict == "certified-cpu-only":
        assert "NOT GPU-certified" in res.stdout
    if verdict == "failed":
        assert "envbuilder: error: img:1 failed certification: reason for failed" in res.stderr
        assert "loader starves the GPU" in res.stdout
    # stored in every case, failures too (the evidence)
    listed = json.loads(run(["certs", "list", "--json"]).stdout)
    assert [r["verdict"] for r in listed] == [verdict]


@pytest.mark.parametrize(("verdict", "code"), [("certified", 0), ("certified-cpu-only", 22), ("failed", 11)])
def test_certify_require_gpu_exit_code_per_verdict(
    verdict: str, code: int, store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify(verdict))
    res = run(["certify", "img:1", "--require-gpu"])
    assert res.exit_code == code, res.output
    if verdict == "certified-cpu-only":
        assert "envbuilder: error: --require-gpu: img:1 is certified-cpu-only" in res.stderr
        assert "hint: certify on a host with an NVIDIA GPU" in res.stderr


def test_certify_summary_cuts_a_long_reason_at_a_word(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = "the runtime refused: error setting rlimits for ready process: error setting rlimit type 8"
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify("failed", reason=reason))
    res = run(["certify", "img:1"])
    assert res.exit_code == 11
    row = next(line for line in res.stdout.splitlines() if line.startswith("input_pipeline"))
    shown = row.split(None, 3)[3]
    assert shown.endswith(" ...") and reason.startswith(shown.removesuffix(" ...")), row
    assert shown.removesuffix(" ...").split()[-1] in reason.split()  # a whole word, never `rlimi`


def test_certify_json_out_and_no_store(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify("certified"))
    out = tmp_path / "cert.json"
    res = run(["certify", "img:1", "--json", "--no-store", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["kind"] == "envbuilder-certificate" and json.loads(out.read_text()) == doc
    assert json.loads(run(["certs", "list", "--json"]).stdout) == []


@pytest.mark.parametrize(
    ("error", "code"),
    [(NoGpuError("GPU access mode 'cdi' is not available"), 5), (DockerUnavailableError("daemon down"), 7)],
)
def test_certify_error_families(
    error: Exception, code: int, store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify(error=error))
    res = run(["certify", "img:1"])
    assert res.exit_code == code and f"envbuilder: error: {error}" in res.stderr


def test_bad_gpu_access_choice_is_a_usage_error(store_dir: Path) -> None:
    res = run(["certify", "img:1", "--gpu-access", "magic"])
    assert res.exit_code == 2 and "magic" in res.output


def test_certs_show_verify_export_import(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify("certified"))
    assert run(["certify", "img:1"]).exit_code == 0
    cid = json.loads(run(["certs", "list", "--json"]).stdout)[0]["id"]
    show = run(["certs", "show", cid[:8]])
    assert show.exit_code == 0 and "verdict  CERTIFIED" in show.stdout
    assert json.loads(run(["certs", "show", cid[:8], "--json"]).stdout)["content_hash"] == f"sha256:{cid}"
    ok = run(["certs", "verify", cid[:8], "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    moved = run(["certs", "verify", cid[:8], "--image", "cd" * 32])
    assert moved.exit_code == 12 and "certificate is for image abababababab" in moved.stderr
    dest = tmp_path / "out.json"
    assert run(["certs", "export", cid[:8], str(dest)]).exit_code == 0
    doc = json.loads(dest.read_text())
    doc["verdict"] = "failed"
    dest.write_text(json.dumps(doc))
    bad = run(["certs", "import", str(dest)])
    assert bad.exit_code == 12 and "content hash mismatch" in bad.stderr and "changed: verdict" in bad.stderr
    assert run(["certs", "show", "ffff"]).exit_code == 2
    empty = run(["certs", "list", "--image", "nothing"])
    assert empty.exit_code == 0 and "no certificates stored" in empty.stderr


def test_key_metric_picks_the_telling_number() -> None:
    def metric(name: str, metrics: dict[str, Any]) -> str:
        return key_metric(StepRecord.read({"name": name, "metrics": metrics}))

    assert metric("batch_ramp", {"largest_batch": 512}) == "largest batch 512"
    assert metric("telemetry_overhead", {"overhead": 0.004}) == "overhead 0.40%"
    assert metric("host", {"gpus": [{"name": "NVIDIA H200"}]}) == "NVIDIA H200"
    assert metric("x", {}) == ""


def _full_disk(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """The store's insert fails as on a full data folder (issue 23, D5)."""
    import errno
    import sqlite3

    import envbuilder.certify.store as store

    def insert(*_a: Any, **_k: Any) -> None:
        if how == "oserror":
            raise OSError(errno.ENOSPC, "No space left on device")
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(store, "_insert", insert)


@pytest.mark.parametrize("how", ["oserror", "sqlite"])
def test_a_full_data_folder_keeps_the_named_outputs_and_names_a_fallback(
    how: str, store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import envbuilder.pipeline.certify as pipeline_certify

    monkeypatch.setattr(envbuilder.certify.certify, "certify_image", fake_certify("certified"))
    _full_disk(monkeypatch, how)
    out = tmp_path / "elsewhere" / "cert.json"  # another disk, with room
    out.parent.mkdir()
    res = run(["certify", "img:1", "--json", "--out", str(out)])
    assert res.exit_code == 17, res.output
    doc = json.loads(res.stdout)  # --json printed in full before the store failed
    assert json.loads(out.read_text()) == doc  # --out written before the store insert
    assert "the certified certificate was not stored" in res.stderr
    assert f"it is kept in {out} (--out)" in res.stderr and "Traceback" not in res.output

    # nothing named: a fallback file, named in the error
    fallback = tmp_path / "tmp"
    fallback.mkdir()
    monkeypatch.setattr(pipeline_certify, "fallback_dirs", lambda: (tmp_path / "missing" / "no", fallback))
    (tmp_path / "missing").write_text("a file, so no folder can be made under it")
    res = run(["certify", "img:1"])
    assert res.exit_code == 17, res.output
    [kept] = fallback.iterdir()
    assert f"it was written to {kept} instead" in res.stderr
    assert json.loads(kept.read_text())["verdict"] == "certified"
    assert "envbuilder certs import FILE" in res.stderr

    # nowhere to write: said so, with why
    monkeypatch.setattr(pipeline_certify, "fallback_dirs", lambda: (tmp_path / "missing" / "no",))
    res = run(["certify", "img:1"])
    assert res.exit_code == 17 and "could not be written anywhere" in res.stderr, res.output
