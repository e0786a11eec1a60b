"""Issue 18, defect 8: `render --out DIR` touches nothing beside DIR that it did not create, and
files or folders an output replaces keep their permissions; a replaced file is said to be."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_golden import ROOT

from envbuilder.atomic import write_bytes_atomic, write_text_atomic
from envbuilder.certify.store import CertStore
from envbuilder.cli import cli

HOST = ("--driver", "580.159.04", "--gpu", "NVIDIA H200")
SPEC = str(ROOT / "images" / "jax-train.yaml")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def render(out: Path) -> None:
    res = CliRunner().invoke(cli, ["render", SPEC, *HOST, "--out", str(out)])
    assert res.exit_code == 0, res.output


def test_render_never_deletes_a_dot_old_sibling_it_did_not_create(tmp_path: Path) -> None:
    out = tmp_path / "ctx"
    mine = tmp_path / ".ctx.old"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's own folder\n")
    render(out)
    render(out)  # the second replaces the first render
    assert (mine / "notes.txt").read_text() == "the user's own folder\n"  # before: rmtree'd
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ctx.old", "ctx"]  # no temp folder left
    assert (out / "Dockerfile").is_file()


def test_a_rerender_keeps_the_folders_mode_and_a_new_one_gets_mkdirs(tmp_path: Path, umask_022: None) -> None:
    out = tmp_path / "ctx"
    render(out)
    assert mode(out) == 0o755  # before: mkdtemp's 0700
    out.chmod(0o750)
    render(out)
    assert mode(out) == 0o750


def test_a_failed_swap_puts_the_previous_render_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "ctx"
    render(out)
    before = (out / "Dockerfile").read_text()
    real = Path.rename

    def refuse_second(self: Path, target: str | os.PathLike[str]) -> Path:
        if Path(target) == out and self.name.startswith("envbuilder-render-"):
            raise OSError(28, "No space left on device")
        return real(self, target)

    monkeypatch.setattr(Path, "rename", refuse_second)
    res = CliRunner().invoke(cli, ["render", SPEC, *HOST, "--out", str(out)])
    assert res.exit_code == 18, res.output
    assert f"envbuilder: error: cannot write the build context {out}: No space left on device" in res.output
    assert (out / "Dockerfile").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ctx"]


@pytest.mark.parametrize("before", [0o644, 0o600, 0o640])
def test_a_replaced_file_keeps_its_mode(before: int, tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "train.lock.json"
    path.write_text("{}\n")
    path.chmod(before)
    assert write_text_atomic(path, '{"new": 1}\n') is True  # it says it replaced a file
    assert mode(path) == before  # before: every replaced file became 0600
    assert path.read_text() == '{"new": 1}\n'


def test_a_new_file_gets_opens_mode_and_an_explicit_mode_wins(tmp_path: Path, umask_022: None) -> None:
    new = tmp_path / "new.json"
    assert write_text_atomic(new, "x\n") is False
    assert mode(new) == 0o644
    key = tmp_path / "key.pem"
    key.write_text("old\n")
    key.chmod(0o644)
    write_bytes_atomic(key, b"secret\n", mode=0o600)
    assert mode(key) == 0o600


def test_certs_export_says_it_replaced_a_file_and_keeps_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    from cert_factory import cert

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    cid = CertStore().add(cert())
    dest = tmp_path / "cert.json"
    first = CliRunner().invoke(cli, ["certs", "export", cid[:12], str(dest)])
    assert first.exit_code == 0 and f"wrote {dest}" in first.output
    assert mode(dest) == 0o644
    dest.chmod(0o600)
    again = CliRunner().invoke(cli, ["certs", "export", cid[:12], str(dest)])
    assert again.exit_code == 0 and f"replaced {dest}" in again.output
    assert mode(dest) == 0o600


def test_render_keeps_user_folders_named_like_its_temp_folders(tmp_path: Path) -> None:
    """Issue 23 D18: `render --out rout/out` removed the user's folders beside it whose names
    looked like envbuilder's temp folders; a folder without temp_dir's owner file stays."""
    import time

    out = tmp_path / "out"
    users = [tmp_path / "envbuilder-render-1-1-abc", tmp_path / "envbuilder-previousrender-999999-1-zz"]
    users.append(tmp_path / "envbuilder-previousrender-999999-1-abcd1234")  # the exact pattern too
    for folder in users:
        folder.mkdir()
        (folder / "notes.txt").write_text("the user's own folder\n")
        old = time.time() - 7200
        os.utime(folder, (old, old))
    render(out)
    render(out)  # the second render moves the first aside and sweeps beside it
    assert all((folder / "notes.txt").read_text() == "the user's own folder\n" for folder in users)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out", *(f.name for f in users)])
    assert not (out / ".envbuilder-owner").exists()  # the render carries no temp folder's mark
