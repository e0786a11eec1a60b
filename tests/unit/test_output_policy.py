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
from fake_engine import FakeEngine
from fd_count import count_descriptors

from envbuilder.atomic import (
    append_jsonl,
    check_output_path,
    path_kind,
    write_bytes_atomic,
    write_text_atomic,
)
from envbuilder.certify.store import CertStore
from envbuilder.cli import cli
from envbuilder.engine import ImageInfo
from envbuilder.engine.hpc import Format, export_image, find_tool, sidecar_path
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


def _export(tmp_path: Path, out: Path, fmt: Format, converted: list[Path]) -> Any:
    """engine.hpc.export_image of a fake image, its runtime's step writing a small file."""
    info = ImageInfo(id="sha256:" + "ab" * 32, tags=("team/train:1",), repo_digests=())
    binary = tmp_path / "tool"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)

    def convert(_info: ImageInfo, built: Path, _work: Path) -> None:
        converted.append(built)
        built.write_bytes(b"hsqs" + b"\0" * 60)

    tool = find_tool("apptainer", path=str(binary))
    return export_image(FakeEngine(images={"team/train:1": info}), "team/train:1", out, fmt, tool, convert)


def test_an_export_never_writes_through_a_link_at_its_output_path(tmp_path: Path) -> None:
    # The output policy looks at the path given, not where its link leads (blind V38 checked the
    # resolved path: `export --sif link` replaced the link's target). Refused before any step runs.
    victim = tmp_path / "victim.sif"
    victim.write_bytes(b"mine")
    link = tmp_path / "train.sif"
    link.symlink_to(victim)
    converted: list[Path] = []
    with pytest.raises(OutputError, match="refusing to write"):
        _export(tmp_path, link, "sif", converted)
    assert converted == [] and victim.read_bytes() == b"mine" and link.is_symlink()
    assert not sidecar_path(link).exists() and not sidecar_path(victim).exists()


def test_an_export_never_writes_its_sidecar_through_a_link(tmp_path: Path) -> None:
    # The sidecar is an output too: written under the output policy, atomically (blind V40 wrote
    # it in place, through a link at FILE.envbuilder.json: the link's target was replaced).
    out = tmp_path / "train.sqsh"
    side = sidecar_path(out)
    victim = tmp_path / "victim.json"
    victim.write_text("mine")
    side.symlink_to(victim)
    with pytest.raises(OutputError, match="refusing to write"):
        _export(tmp_path, out, "sqsh", [])
    assert victim.read_text() == "mine" and side.is_symlink()


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


# ---------------------------------------------------------------------- --auto io, eighth set (2026-12-06)


def test_each_refused_output_names_its_file(tmp_path: Path) -> None:
    """OutputError names the file (its `file` field, EnvbuilderError.fields()) for each refusal:
    a link at the path, a missing folder, a folder that cannot be made, a file where a folder
    is asked for."""
    from envbuilder.atomic import make_output_dir, require_parent

    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    cases: list[tuple[Any, Path]] = [
        (check_output_path, link),
        (require_parent, tmp_path / "no-such" / "out.json"),
        (make_output_dir, link),
    ]
    for call, path in cases:
        with pytest.raises(OutputError) as err:
            call(path)
        assert err.value.file == str(path)

    def refused(self: Path, *_a: Any, **_kw: Any) -> None:
        raise PermissionError(13, "Permission denied")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "mkdir", refused)  # a folder it may not write into (root may write anywhere)
        with pytest.raises(OutputError, match="cannot make the folder") as err:
            make_output_dir(tmp_path / "out")
    assert err.value.file == str(tmp_path / "out")


def test_the_temp_file_is_made_beside_the_target_not_in_the_systems_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename is atomic only within one file system: the temp file is made in the target's
    own folder, whatever TMPDIR says."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-temp"))
    target = tmp_path / "out.json"
    write_bytes_atomic(target, b"{}")
    assert target.read_bytes() == b"{}"


def test_an_exclusive_write_makes_a_new_file_whole_and_never_replaces_one(tmp_path: Path) -> None:
    """`exclusive` (a new signing key, `init`'s files): the file is made with its bytes and mode,
    no temp file is left beside it; a second write finds it there, raises FileExistsError and
    leaves it as it was."""
    key = tmp_path / "ci.key"
    assert write_bytes_atomic(key, b"private", mode=0o600, exclusive=True) is False
    assert key.read_bytes() == b"private" and stat.S_IMODE(key.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        write_bytes_atomic(key, b"another", mode=0o600, exclusive=True)
    assert key.read_bytes() == b"private"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ci.key"]


def test_the_bytes_are_in_the_file_before_it_is_synced_and_the_folder_is_synced_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fsync makes durable what the file holds: Python's buffer is flushed into it first, so the
    sync covers every byte; then the folder is synced (the rename itself durable) and the
    descriptor opened for it closed."""
    synced: list[Any] = []
    real_fsync = os.fsync

    def fsync(fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        st = os.fstat(number)
        synced.append(st.st_size if stat.S_ISREG(st.st_mode) else "folder")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    descriptors = count_descriptors(monkeypatch)
    write_bytes_atomic(tmp_path / "lock.json", b"x" * 100)
    assert synced == [100, "folder"]
    assert descriptors.opened and set(descriptors.opened) <= set(descriptors.closed)


def test_a_folder_made_meanwhile_by_another_process_is_judged_as_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make_output_dir's race: the folder appears between its look and its mkdir. A folder is
    taken; a file made there meanwhile is refused as one found there would be."""
    from envbuilder.atomic import make_output_dir

    real_mkdir = Path.mkdir

    def raced(kind: str) -> Any:
        def mkdir(self: Path, *a: Any, **kw: Any) -> None:
            if kind == "folder":
                real_mkdir(self)
            else:
                self.write_text("")
            raise FileExistsError(17, "File exists")

        return mkdir

    monkeypatch.setattr(Path, "mkdir", raced("folder"))
    assert make_output_dir(tmp_path / "out") == tmp_path / "out"
    monkeypatch.setattr(Path, "mkdir", raced("file"))
    with pytest.raises(OutputError, match="not a folder"):
        make_output_dir(tmp_path / "other")


def test_the_temp_file_is_hidden_and_named_after_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the bytes are written the temp file is a dot file (a reader that lists the folder,
    glob('*'), never sees the half-written file) named `.TARGET.XXXX.tmp` (a leftover after a
    SIGKILL says whose it is)."""
    import re

    seen: list[list[str]] = []
    real_fsync = os.fsync

    def fsync(fd: Any) -> None:
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_bytes_atomic(tmp_path / "lock.json", b"{}")
    (during, *_rest) = seen
    assert len(during) == 1 and re.fullmatch(r"\.lock\.json\.[^.]+\.tmp", during[0]), during
    assert [p.name for p in tmp_path.glob("*")] == ["lock.json"]


def test_a_failed_write_raises_its_own_error_even_where_the_cleanup_fails_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills during the write and the temp file cannot be removed either: the caller
    learns of the full disk (its OSError), not of the cleanup's."""
    import errno

    def full(_fd: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def stuck(self: Path, *_a: Any, **_kw: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "fsync", full)
    monkeypatch.setattr(Path, "unlink", stuck)
    with pytest.raises(OSError) as err:
        write_bytes_atomic(tmp_path / "lock.json", b"{}")
    assert err.value.errno == errno.ENOSPC


def test_a_folder_that_cannot_be_synced_does_not_fail_a_write_already_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems refuse fsync on a folder (EINVAL): the file is in place by then, so the
    write succeeds."""
    import errno

    real_fsync = os.fsync

    def fsync(fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        if stat.S_ISDIR(os.fstat(number).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    write_bytes_atomic(tmp_path / "lock.json", b"{}")
    assert (tmp_path / "lock.json").read_bytes() == b"{}"


def test_a_replaced_file_keeps_even_mode_0_and_a_write_of_mode_0_is_mode_0(tmp_path: Path) -> None:
    """The mode kept or given is used as it is, 0 included (a number, never a truth value); the
    return says a file was replaced."""
    locked = tmp_path / "locked.json"
    locked.write_bytes(b"old")
    locked.chmod(0)
    assert write_bytes_atomic(locked, b"new") is True
    assert stat.S_IMODE(locked.stat().st_mode) == 0
    fresh = tmp_path / "fresh.json"
    assert write_bytes_atomic(fresh, b"x", mode=0) is False
    assert stat.S_IMODE(fresh.stat().st_mode) == 0


def test_a_write_replaces_the_file_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    """A reader that opened the old file keeps reading the old bytes (the new file is another
    inode, renamed over it), and only the target is left in the folder, dot files included."""
    target = tmp_path / "lock.json"
    target.write_bytes(b"old")
    with target.open("rb") as reader:
        write_bytes_atomic(target, b"new")
        assert reader.read() == b"old"
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["lock.json"]


def test_a_parent_that_is_a_file_is_no_folder(tmp_path: Path) -> None:
    from envbuilder.atomic import require_parent

    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError, match="does not exist"):
        require_parent(tmp_path / "file" / "out.json")


def test_an_output_folder_is_made_and_a_link_to_a_folder_is_refused(tmp_path: Path) -> None:
    """make_output_dir makes a new folder; a link at the path is refused even where it points to
    a folder (envbuilder never writes through a link)."""
    from envbuilder.atomic import make_output_dir

    assert make_output_dir(tmp_path / "new") == tmp_path / "new" and (tmp_path / "new").is_dir()
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    with pytest.raises(OutputError, match="symbolic link"):
        make_output_dir(link)


def test_a_link_to_a_folder_made_meanwhile_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envbuilder.atomic import make_output_dir

    (tmp_path / "real").mkdir()

    def linked(self: Path, *_a: Any, **_kw: Any) -> None:
        self.symlink_to(tmp_path / "real")
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(Path, "mkdir", linked)
    with pytest.raises(OutputError, match="symbolic link"):
        make_output_dir(tmp_path / "out")


def test_a_path_that_cannot_be_examined_is_an_oserror_not_a_new_file(tmp_path: Path) -> None:
    """Only a missing path is "nothing there yet": one whose name is too long to look at raises
    (check_output_path's docstring: OSError, the path cannot be examined)."""
    import errno

    with pytest.raises(OSError) as err:
        check_output_path(tmp_path / ("x" * 300))
    assert err.value.errno == errno.ENAMETOOLONG


def test_an_output_folder_that_cannot_be_examined_is_an_output_error(tmp_path: Path) -> None:
    """`fleet build --out` with a name too long, or a file where a parent folder should be: the
    folder cannot even be looked at; that is OutputError (exit 18, the file named), not a raw
    OSError (IOE021 of the io area's seventh set); nothing is made."""
    from envbuilder.atomic import make_output_dir

    (tmp_path / "file").write_text("mine")
    for path, why in ((tmp_path / ("x" * 300), "too long"), (tmp_path / "file" / "out", "Not a directory")):
        with pytest.raises(OutputError, match=f"cannot use the folder .*{why}") as err:
            make_output_dir(path)
        assert err.value.fields()["file"] == str(path)
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == ["file"] and (tmp_path / "file").read_text() == "mine"
    )


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


def test_a_json_lines_record_is_written_in_a_folder_whose_parents_are_missing_too(tmp_path: Path) -> None:
    # Set U's survivor U39: a run log under a state folder not made yet (a fresh
    # $XDG_STATE_HOME/envbuilder/runs/) is made with its parents, never lost to FileNotFoundError.
    log = tmp_path / "state" / "envbuilder" / "runs" / "runs.jsonl"
    append_jsonl(log, {"run_id": "a"})
    append_jsonl(log, {"run_id": "b"})
    assert log.read_text(encoding="utf-8") == '{"run_id": "a"}\n{"run_id": "b"}\n'
