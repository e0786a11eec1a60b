"""`envbuilder up` for real on this GPU-less machine: no registry reachable, so the local base
(made with debootstrap when missing, as a fresh machine does) and the framework wheel from a
find-links folder; built offline, certified certified-cpu-only, report written, one summary line.

About 1-2 min with the layers cached (certify --quick keeps the harness to its smoke tests);
a first run on a fresh machine adds the debootstrap (about a minute) and the torch install.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import envbuilder_cli

from envbuilder.certify.certificate import verify_certificate
from envbuilder.engine import DockerEngine
from envbuilder.image.offline import index_unreachable

pytestmark = pytest.mark.docker


def test_up_builds_certifies_and_reports_without_registry(
    engine: DockerEngine,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    name = f"up-it-{run_id}"
    spec = tmp_path / f"{name}.yaml"
    # No Python given: `up` must re-resolve for the local base's Python (read from the image).
    spec.write_text(f'schema_version: 1\nname: {name}\ndescription: up test\nframework: "torch"\n')
    out = tmp_path / "out"
    res = envbuilder_cli("up", str(spec), "--quick", "--find-links", str(wheelhouse), "--out", str(out))
    assert res.returncode == 0, res.stderr[-4000:]
    image, verdict, report, _secs = res.stdout.strip().splitlines()[-1].split(None, 3)
    cleanup_refs.append(image)
    assert image.startswith(f"envbuilder/{name}:torch") and "cpu" in image
    assert verdict == "certified-cpu-only" and report == str(out / "report.html")
    assert "run `envbuilder up` on a GPU host for the GPU certificate" in res.stdout
    assert "no container registry is reachable" in res.stdout and "envbuilder/local-base:" in res.stdout
    # consistent step counters, each step started and done once, in order
    heads = [ln.split()[0:3] for ln in res.stderr.splitlines() if ln.startswith("[")]
    started = [h[1] for h in heads if h[2] == "..."]
    done = [h[1] for h in heads if h[2] == "done"]
    assert started == done == ["doctor", "base", "resolve", "build", "certify", "report"]
    # one stack announced, the one built (the local base's Python), named on the final line too
    (said,) = [ln.strip() for ln in res.stderr.splitlines() if ln.strip().startswith("stack ")]
    built = json.loads(info_labels(engine, image)["io.envbuilder.stack"])["id"]
    assert said.startswith(f"stack {built}, FROM envbuilder/local-base:") and f"(stack {built}, " in _secs
    assert [h[0] for h in heads if h[2] == "..."] == [f"[{k}/6]" for k in range(1, 7)]

    cert = json.loads((out / "certificate.json").read_text())
    assert cert["verdict"] == "certified-cpu-only" and verify_certificate(cert) == []
    info = engine.inspect_image(image)
    assert info is not None and cert["image"]["id"] == info.id
    assert cert["image"]["stack"]["python"] == "3.11"  # the local base's
    html = (out / "report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and info.id[:19] in html
    lock = json.loads((out / "lock.json").read_text())
    assert lock["build"]["image_id"] == info.id

    # --require-gpu: the same job, but CI wants a GPU certificate: exit 22 before any build
    again = envbuilder_cli("up", str(spec), "--require-gpu", "--out", str(out))
    assert again.returncode == 22, again.stderr[-2000:]
    assert "envbuilder: error: --require-gpu: this machine has no NVIDIA GPU" in again.stderr


def info_labels(engine: DockerEngine, image: str) -> dict[str, str]:
    info = engine.inspect_image(image)
    assert info is not None
    return dict(info.labels)


def test_up_with_a_given_base_uses_the_find_links_when_the_index_does_not_answer(
    engine: DockerEngine,
    base_image: str,
    wheelhouse: Path,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 23 D17: `up --base-image B --find-links DIR` exited 20 after a DNS failure for
    download.pytorch.org: a given base skipped the fallback to local wheels. As D17 ran it: on
    this machine (no DNS) the index does not answer; where it does, the build goes online."""
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    offline = index_unreachable("https://download.pytorch.org/whl/cpu") is not None
    name = f"up-base-{run_id}"
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(f'schema_version: 1\nname: {name}\ndescription: D17\nframework: "torch"\n')
    out = tmp_path / "out"
    res = envbuilder_cli(
        "up", str(spec), "--gpu-access", "none", "--quick", "--base-image", base_image,
        "--find-links", str(wheelhouse), "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-4000:]
    image, verdict, _report, _secs = res.stdout.strip().splitlines()[-1].split(None, 3)
    cleanup_refs.append(image)
    assert verdict == "certified-cpu-only"
    assert f"built FROM {base_image} (--base-image: debian12, Python 3.11)" in res.stdout
    if offline:
        assert "the torch index is unreachable" in res.stdout and str(wheelhouse) in res.stdout
