"""The pipeline under the command line (envbuilder/pipeline/): its steps are plain functions that
the commands call; the commands reach the stages' pipeline rules only through it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from cert_factory import IMAGE_ID, cert

from envbuilder.certify.store import CertStore
from envbuilder.engine import ImageInfo
from envbuilder.errors import UsageError
from envbuilder.image.build import BuildOptions
from envbuilder.pipeline.build import plan_build
from envbuilder.pipeline.certificates import find_certificates, find_exported_certificates
from envbuilder.pipeline.certify import keep_certificate

CLI = Path(__file__).resolve().parents[2] / "envbuilder" / "cli"


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_the_certificate_lookup_finds_a_local_certificate_without_reading_the_trust_policy(
    data_dir: Path, tmp_path: Path
) -> None:
    """What `run` and `check` ask before an image starts: a certificate made here is found in this
    machine's store; the trust policy (here a key file that does not exist) is read only for an
    attestation, so a local certificate never needs it."""
    CertStore().add(cert())
    said: list[str] = []
    find = find_certificates("team/train:1", (tmp_path / "no-such.pem",), None, None, False, said.append)
    found = find(ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=()))
    assert [c.image.id for c in found] == [IMAGE_ID]
    other = ImageInfo(id="sha256:" + "ef" * 32, tags=(), repo_digests=())
    assert list(find(other)) == [] and said == []


def test_the_certificate_lookup_of_an_exported_file_asks_under_the_image_it_is_handed(
    data_dir: Path, tmp_path: Path
) -> None:
    """run --runtime apptainer|enroot: the file's sidecar is read once, where it runs; the lookup
    takes the image it is handed (found here by its ID, the same certificate as for the image)."""
    CertStore().add(cert())
    find = find_exported_certificates((tmp_path / "no-such.pem",))
    found = find(ImageInfo(id=IMAGE_ID, tags=("team/train:1",), repo_digests=()))
    assert [c.image.id for c in found] == [IMAGE_ID]
    assert list(find(ImageInfo(id="sha256:" + "ef" * 32, tags=(), repo_digests=()))) == []


def test_a_build_plan_needs_a_spec_or_a_lock() -> None:
    with pytest.raises(UsageError, match="give an image spec or --lock FILE"):
        plan_build(None, None, BuildOptions())


def test_a_certificate_is_written_where_named_and_stored(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "cert.json"
    said: list[str] = []
    kept = keep_certificate(cert(), out_path=out, store=True, say=said.append)
    assert kept.error is None and kept.path == out and said == [f"wrote {out}"]
    assert json.loads(out.read_text())["image"]["id"] == IMAGE_ID
    assert kept.stored_id is not None and CertStore().get(kept.stored_id).image.id == IMAGE_ID
    # not stored: only the file; a file that cannot be written is the error, not an exception
    again = keep_certificate(cert(), out_path=tmp_path / "missing" / "cert.json", store=False)
    assert again.stored_id is None and again.path is None and again.error is not None


# The rules that were the CLI's: resolving a spec (the default Python), planning a build, finding
# the certificates before a run, keeping a certificate. The commands call pipeline/ for them.
PIPELINE_RULES = {
    "envbuilder.resolve.resolver": "resolve a spec through pipeline.resolution",
    "envbuilder.image.python_pick": "the default Python is pipeline.resolution's",
    "envbuilder.run.certificates": "find certificates through pipeline.certificates",
}
PIPELINE_NAMES = {
    "plan_from_spec",
    "plan_from_lock",
    "for_stack_platform",
    "build_epoch",
    "certificate_finder",
    "choose_policy",  # the trust policy of a run is read in pipeline.certificates
    "CertStore",  # certificates are kept (and found for a run) through the pipeline
}
COMMANDS = ("up_cmd", "build_cmd", "certify_cmd", "run_cmd", "fleet_build_cmd", "render_cmd", "lock_cmd")


def test_the_commands_reach_the_pipeline_rules_only_through_the_pipeline() -> None:
    bad = []
    for name in COMMANDS:
        path = CLI / f"{name}.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module in PIPELINE_RULES:
                    bad.append(f"{name}:{node.lineno} imports {node.module}: {PIPELINE_RULES[node.module]}")
                bad += [
                    f"{name}:{node.lineno} imports {a.name} from {node.module}: the pipeline's"
                    for a in node.names
                    if a.name in PIPELINE_NAMES
                ]
    assert not bad, "\n".join(bad)


def test_a_local_certificate_is_found_without_the_signing_libraries(tmp_path: Path) -> None:
    """`run` and `check` on a node: an image certified there needs no signature check, so neither
    attest nor the crypto it loads (securesystemslib, cryptography) is imported (the H200 test
    machine has neither: `check` died on the import there, 2026-12-05). Imports blocked in a child."""
    import os
    import subprocess
    import sys

    from envbuilder.certify.store import DB_NAME

    CertStore(tmp_path / DB_NAME).add(cert())
    code = f"""
import sys
sys.modules["securesystemslib"] = None
sys.modules["cryptography"] = None
from envbuilder.engine import ImageInfo
from envbuilder.pipeline.certificates import find_certificates
found = find_certificates("team/train:1")(ImageInfo(id={IMAGE_ID!r}, tags=(), repo_digests=()))
print(len(found), any(m.startswith("envbuilder.attest") for m in sys.modules))
"""
    env = {**os.environ, "ENVBUILDER_DATA_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout.split() == ["1", "False"]
