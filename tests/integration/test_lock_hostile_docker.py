"""Issue 23 items 1 and 5 against the real daemon: a lock file cannot inject instructions into a
build (hostile-inputs D1), and a mirror given as a secret stays out of the lock and the failed
build's message (D15).

One real `envbuilder lock` of the torch 2.13.0 CPU spec from the local wheelhouse (offline)
serves every test here."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from conftest import envbuilder_cli, write_spec

from envbuilder.engine import DockerEngine

pytestmark = pytest.mark.docker

EVIL_NAME = "x; true\nUSER root\nRUN touch /pwned-by-lock && echo PWNED-MARKER-7731\nRUN echo "


@pytest.fixture(scope="module")
def cpu_lock(tmp_path_factory: pytest.TempPathFactory, wheelhouse: Path) -> Path:
    work = tmp_path_factory.mktemp("h1-lock")
    spec = write_spec(work / "images", "h1-rt", requirements=("filelock",))
    out = work / "rt.lock.json"
    res = envbuilder_cli(
        "lock", str(spec.path), "--cpu", "--no-index", "--find-links", str(wheelhouse), "--out", str(out)
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def _evil_lock(cpu_lock: Path, dest: Path) -> Path:
    """The D1 reproducer's edit: one project package, the framework from the base, and a spec
    index whose name is a Dockerfile instruction."""
    doc = json.loads(cpu_lock.read_text())
    pl = doc["packages"][0]
    pl["default_index"] = "https://pypi.org/simple"
    pl["find_links"] = []
    pl["indexes"] = [{"name": EVIL_NAME, "url": "https://mirror.example.org/simple"}]
    for p in pl["packages"]:
        p["urls"] = []
        if p["name"] == "filelock":
            p["group"] = "project"
        else:
            p.update(group="base", wheel="", sha256="")
    doc.pop("lock_hash", None)
    doc.pop("build", None)
    path = dest / "evil.lock.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_a_lock_with_an_injected_index_name_is_refused_by_build_and_render(
    cpu_lock: Path, base_image: str, engine: DockerEngine, run_id: str, cleanup_refs: list[str]
) -> None:
    evil = _evil_lock(cpu_lock, cpu_lock.parent)
    before = evil.read_bytes()
    tag = f"envbuilder-it/h1-injected:{run_id}"
    cleanup_refs.append(tag)  # removed at the end should the refusal ever fail
    res = envbuilder_cli(
        "build", "--lock", str(evil), "--base-image", base_image, "--network", "none", "--tag", tag
    )
    assert res.returncode == 10, res.stderr[-3000:]
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("envbuilder: error:")]
    assert "field 'indexes[0].name'" in line and "refused" in line and "'x; true\\nUSER root" in line
    assert "hint:" in res.stderr and "Traceback" not in res.stderr
    assert engine.inspect_image(tag) is None  # nothing built, nothing tagged
    assert evil.read_bytes() == before  # the lock untouched
    spec = cpu_lock.parent / "images" / "h1-rt.yaml"
    rendered = envbuilder_cli("render", str(spec), "--cpu", "--lock", str(evil), "--print")
    assert rendered.returncode == 10, rendered.stderr[-2000:]
    assert "field 'indexes[0].name'" in rendered.stderr and "PWNED" not in rendered.stdout


def _unserved_port() -> int:
    """A loopback port nothing listens on (bound then closed: the kernel just gave it away)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


TOKEN = "SECRETMARKER_TOKEN_1234"
PATH_TOKEN = "SECRETMARKER_PATH_5678"


def _no_secret(text: str) -> None:
    assert TOKEN not in text and PATH_TOKEN not in text, text[-3000:]


def test_a_failed_build_never_prints_the_mirror_given_as_a_secret(
    cpu_lock: Path,
    base_image: str,
    engine: DockerEngine,
    run_id: str,
    cleanup_refs: list[str],
    tmp_path: Path,
) -> None:
    """D15's second half: the lock's packages fetched from a private mirror (token in the
    userinfo and in the path, as Cloudsmith's entitlement URLs) that does not answer; the build
    fails at the install step, and its message (the RUN's log tail) names the secret, not it."""
    url = tmp_path / "url.txt"
    url.write_text(f"http://rtuser:{TOKEN}@127.0.0.1:{_unserved_port()}/{PATH_TOKEN}/simple\n")
    before = cpu_lock.read_bytes()
    tag = f"envbuilder-it/h1-secret-fail:{run_id}"
    cleanup_refs.append(tag)
    res = envbuilder_cli(
        "build", "--lock", str(cpu_lock), "--base-image", base_image, "--pip-index-url-file", str(url),
        "--network", "none", "--tag", tag,
    )  # fmt: skip
    assert res.returncode == 9, res.stderr[-3000:]
    assert "docker build failed" in res.stderr and "Traceback" not in res.stderr
    _no_secret(res.stdout + res.stderr)
    assert "<secret:pip_index_url>" in res.stderr  # the log tail named the mirror: as the secret
    assert engine.inspect_image(tag) is None and cpu_lock.read_bytes() == before
