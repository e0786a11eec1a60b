"""The output policy (envbuilder/atomic.py; issue 23 item 4, reproducer D9): a named output is a
regular file or a new one. A symlink, a FIFO, a device node or a folder at the path is refused
(OutputError, exit 18) and left as it was; a missing parent folder is refused, never created; a
new file's mode comes from the umask, a replaced file keeps its own, never a link's. Everything
is made in tmp_path: no test opens or names a real device or system path."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cert_factory import cert
from click.testing import CliRunner

from envbuilder.atomic import (
    append_jsonl,
    check_output_path,
    path_kind,
    write_bytes_atomic,
    write_text_atomic,
)
from envbuilder.certify.store import CertStore
from envbuilder.cli import cli
from envbuilder.errors import OutputError
from envbuilder.report.html import write_html


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def hostile(tmp_path: Path, kind: str) -> Path:
    """A path in tmp_path holding what D9 wrote over: a symlink (to a file, and to stdout's fd
    as `ln -s /proc/self/fd/1` did: here a dangling link in tmp_path), a FIFO, a folder."""
    path = tmp_path / f"{kind}.json"
    if kind == "symlink":
        target = tmp_path / "target.json"
        target.write_text("the target\n")
        target.chmod(0o600)
        path.symlink_to(target)
        path_mode = 0o777
        assert mode(path) == path_mode
    elif kind == "dangling":
        path.symlink_to(tmp_path / "fd" / "1")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
        (path / "inside").write_text("x")
    return path


KINDS = {"symlink": "a symbolic link", "dangling": "a symbolic link", "fifo": "a FIFO", "folder": "a folder"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_writers_refuse_what_is_not_a_regular_file_and_leave_it(kind: str, tmp_path: Path) -> None:
    path = hostile(tmp_path, kind)
    before = path.lstat()
    with pytest.raises(OutputError) as caught:
        write_text_atomic(path, "new\n")
    assert caught.value.exit_code == 18
    assert caught.value.message == (
        f"refusing to write {path}: it is {KINDS[kind]}, not a file envbuilder may replace"
    )
    assert caught.value.hint and "\n" not in caught.value.message
    after = path.lstat()
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)  # not replaced
    if kind == "symlink":
        assert (tmp_path / "target.json").read_text() == "the target\n"  # not written through
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []  # no temp left


def test_a_device_node_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/full, /dev/stdout: a regular file in tmp_path that lstat calls a character device
    stands in for one (no test touches a real device)."""
    fake = tmp_path / "full"
    fake.write_text("")
    real_lstat = os.lstat

    def as_device(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        st = real_lstat(path, *args, **kwargs)
        if str(path) != str(fake):
            return st
        fields = list(st)
        fields[0] = stat.S_IFCHR | 0o666
        return os.stat_result(fields)

    monkeypatch.setattr(os, "lstat", as_device)
    with pytest.raises(OutputError, match="it is a character device, not a file envbuilder may replace"):
        write_bytes_atomic(fake, b"x")
    assert fake.read_text() == ""
    assert path_kind(stat.S_IFCHR) == "a character device" and path_kind(stat.S_IFBLK) == "a block device"
    assert path_kind(stat.S_IFSOCK) == "a socket" and path_kind(stat.S_IFREG) == "a regular file"


def test_a_missing_parent_folder_is_refused_never_created(tmp_path: Path) -> None:
    path = tmp_path / "nonexistent" / "x.json"
    with pytest.raises(OutputError) as caught:
        write_text_atomic(path, "x")
    assert (
        caught.value.message == f"cannot write {path}: the folder {tmp_path / 'nonexistent'} does not exist"
    )
    assert not (tmp_path / "nonexistent").exists()  # D9: `/nonexistent/x.json` was created
    blocker = tmp_path / "file"
    blocker.write_text("old")
    with pytest.raises(OutputError, match="does not exist"):
        write_text_atomic(blocker / "x.json", "x")
    assert blocker.read_text() == "old"


def test_modes_come_from_the_umask_or_the_replaced_file(tmp_path: Path, umask_022: None) -> None:
    new = tmp_path / "new.json"
    write_text_atomic(new, "x")
    assert mode(new) == 0o644
    os.umask(0o077)
    private = tmp_path / "private.json"
    write_text_atomic(private, "x")
    assert mode(private) == 0o600
    os.umask(0o022)
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    assert write_text_atomic(kept, "new") is True
    assert mode(kept) == 0o640
    assert check_output_path(tmp_path / "absent.json") is None


def test_cli_outputs_refuse_each_with_exit_18(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    cid = CertStore().add(cert())
    for kind in ("symlink", "fifo"):  # a folder: click's own check refuses it first (exit 2)
        path = hostile(tmp_path, kind)
        res = CliRunner().invoke(cli, ["certs", "export", cid[:12], str(path)])
        assert res.exit_code == 18, res.output
        lines = res.stderr.splitlines()
        assert lines[0] == f"envbuilder: error: refusing to write {path}: it is {KINDS[kind]}, " + (
            "not a file envbuilder may replace"
        )
        assert lines[1].startswith("hint: ") and len(lines) == 2
    res = CliRunner().invoke(cli, ["certs", "export", cid[:12], str(tmp_path / "missing" / "c.json")])
    assert res.exit_code == 18 and "the folder" in res.stderr and not (tmp_path / "missing").exists()
    assert (tmp_path / "target.json").read_text() == "the target\n"


def test_report_html_and_keys_export_follow_the_policy(tmp_path: Path) -> None:
    link = hostile(tmp_path, "symlink")
    with pytest.raises(OutputError, match="a symbolic link"):
        write_html(link, "<html></html>")
    assert (tmp_path / "target.json").read_text() == "the target\n"


def test_render_out_never_creates_the_folder_around_it(tmp_path: Path) -> None:
    from test_golden import ROOT

    out = tmp_path / "missing" / "ctx"
    res = CliRunner().invoke(
        cli,
        [
            "render",
            str(ROOT / "images" / "jax-train.yaml"),
            "--driver",
            "580.159.04",
            "--gpu",
            "NVIDIA H200",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 18, res.output
    assert f"envbuilder: error: cannot write {out}: the folder {out.parent} does not exist" in res.stderr
    assert not out.parent.exists()


def test_build_refuses_a_lock_out_that_is_a_fifo_before_building(tmp_path: Path) -> None:
    from test_golden import ROOT

    fifo = hostile(tmp_path, "fifo")
    res = CliRunner().invoke(
        cli, ["build", str(ROOT / "images" / "pytorch-train.yaml"), "--cpu", "--lock-out", str(fifo)]
    )
    assert res.exit_code == 18, res.output
    assert f"refusing to write {fifo}: it is a FIFO" in res.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_an_output_folder_is_made_but_never_its_parents(tmp_path: Path) -> None:
    """`fleet build --out` / `fleet certify --out`: the folder itself is made (or reused), its
    parents never; a link (even to a folder) or a file at the path is refused and left."""
    from envbuilder.atomic import make_output_dir

    made = make_output_dir(tmp_path / "out")
    assert made.is_dir() and make_output_dir(made) == made  # an existing folder is reused
    with pytest.raises(OutputError, match="does not exist"):
        make_output_dir(tmp_path / "missing" / "out")
    assert not (tmp_path / "missing").exists()
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "file").write_text("mine")
    for name, kind in (("link", "a symbolic link"), ("file", "a regular file")):
        with pytest.raises(OutputError, match=kind):
            make_output_dir(tmp_path / name)
    assert (tmp_path / "link").is_symlink() and (tmp_path / "file").read_text() == "mine"


def test_fleet_build_out_never_creates_the_folders_around_it(tmp_path: Path) -> None:
    from envbuilder.image.build import BuildOptions
    from envbuilder.matrix import load_matrix
    from envbuilder.pipeline.fleet import plan_fleet_build

    spec = Path(__file__).resolve().parents[2] / "images" / "pytorch-train.yaml"
    with pytest.raises(OutputError, match="does not exist"):
        plan_fleet_build([spec], (), load_matrix(), BuildOptions(), tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()


# --------------------------------------------------------------------------- --auto io (2026-12-06)


def test_a_failed_write_raises_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envbuilder import atomic

    target = tmp_path / "lock.json"
    target.write_text("old")

    def full(_fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("envbuilder.atomic.os.fsync", full)
    with pytest.raises(OSError, match="No space left"):
        atomic.write_bytes_atomic(target, b"new")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["lock.json"]


def test_a_folder_that_cannot_be_made_is_an_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envbuilder import atomic
    from envbuilder.errors import OutputError

    def denied(self: Path, *a: object, **kw: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(OutputError, match=r"cannot make the folder .*: Permission denied"):
        atomic.make_output_dir(tmp_path / "out")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_json_lines_record_that_is_no_json_is_refused_and_nothing_is_written(
    tmp_path: Path, bad: float
) -> None:
    # Set O's survivor O39: json.dumps writes NaN and Infinity unless told not to, and no JSON reader
    # takes that line (the janitor's orphan record comes from a label json.loads read, NaN allowed).
    log = tmp_path / "runs.jsonl"
    append_jsonl(log, {"run_id": "a", "seconds": 1.5})
    with pytest.raises(ValueError):
        append_jsonl(log, {"run_id": "b", "seconds": bad})
    assert log.read_text(encoding="utf-8") == '{"run_id": "a", "seconds": 1.5}\n'
