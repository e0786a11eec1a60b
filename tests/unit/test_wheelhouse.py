"""`envbuilder wheelhouse`: the locked wheels copied or downloaded into a folder, each checked
against its sha256 (file:// copies and a real local HTTP index with Basic credentials), nothing
half-written left on a mismatch; the CLI's exit codes and messages."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_engine import cpu_package_lock, make_resolution, make_spec
from wheel_factory import serve

from envbuilder.cli import cli
from envbuilder.errors import LockError
from envbuilder.image.lock import lock_from_resolution, write_lock
from envbuilder.image.packages import LockedPackage, PackageLock
from envbuilder.image.sources import PackageIndex
from envbuilder.image.wheelhouse import fill_wheelhouse


def wheel_file(folder: Path, name: str, body: bytes) -> tuple[Path, str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-1.0-py3-none-any.whl"
    path.write_bytes(body)
    return path, hashlib.sha256(body).hexdigest()


def package(path: Path, sha256: str, *urls: str) -> LockedPackage:
    name = path.name.split("-")[0]
    return LockedPackage(
        name=name, version="1.0", wheel=path.name, sha256=sha256, size=path.stat().st_size,
        urls=urls or (path.as_uri(),), group="project",
    )  # fmt: skip


def package_lock(*packages: LockedPackage, indexes: tuple[PackageIndex, ...] = ()) -> PackageLock:
    return replace(cpu_package_lock(), packages=packages, indexes=indexes)


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_locked_wheels_are_copied_checked_and_kept_on_a_second_run(tmp_path: Path) -> None:
    a, sa = wheel_file(tmp_path / "src", "alpha", b"alpha wheel")
    b, sb = wheel_file(tmp_path / "src", "beta", b"beta wheel, longer")
    lock = package_lock(package(a, sa), package(b, sb))
    out = tmp_path / "wheels"
    lines: list[str] = []
    fetched = fill_wheelhouse(lock, out, on_progress=lines.append)
    assert listing(out) == [a.name, b.name]
    assert (out / b.name).read_bytes() == b"beta wheel, longer"
    assert [f.source for f in fetched] == [a.as_uri(), b.as_uri()]
    assert lines[0].startswith(f"[1/2] {a.name}: ") and lines[0].endswith("sha256 ok")
    lines.clear()
    again = fill_wheelhouse(lock, out, on_progress=lines.append)
    assert [f.source for f in again] == ["kept", "kept"]
    assert lines == [f"[1/2] {a.name}: already there, sha256 ok", f"[2/2] {b.name}: already there, sha256 ok"]


def test_a_wheel_whose_sha256_differs_is_refused_and_nothing_half_written_stays(tmp_path: Path) -> None:
    a, _ = wheel_file(tmp_path / "src", "alpha", b"another build of alpha")
    lock = package_lock(package(a, "0" * 64))
    out = tmp_path / "wheels"
    with pytest.raises(LockError) as err:
        fill_wheelhouse(lock, out)
    assert f"{a.name} from {a.as_uri()} has sha256 " in err.value.message
    assert "the lock says " + "0" * 64 in err.value.message
    assert listing(out) == []  # neither the wheel nor its .part


def test_a_wheel_already_there_with_another_hash_is_replaced(tmp_path: Path) -> None:
    a, sa = wheel_file(tmp_path / "src", "alpha", b"the locked alpha")
    out = tmp_path / "wheels"
    wheel_file(out, "alpha", b"a stale alpha")
    (fetched,) = fill_wheelhouse(package_lock(package(a, sa)), out)
    assert fetched.source == a.as_uri() and (out / a.name).read_bytes() == b"the locked alpha"


def test_the_next_locked_url_is_tried_and_none_answering_names_them_all(tmp_path: Path) -> None:
    a, sa = wheel_file(tmp_path / "src", "alpha", b"alpha")
    gone = (tmp_path / "gone" / a.name).as_uri()
    (fetched,) = fill_wheelhouse(package_lock(package(a, sa, gone, a.as_uri())), tmp_path / "w1")
    assert fetched.source == a.as_uri()
    with pytest.raises(LockError) as err:
        fill_wheelhouse(package_lock(package(a, sa, gone, "ftp://example.org/x.whl")), tmp_path / "w2")
    assert err.value.message.startswith(f"no locked URL of {a.name} could be read: {gone}: ")
    assert "unsupported URL scheme 'ftp'" in err.value.message
    assert "UV_INDEX_<NAME>_PASSWORD" in (err.value.hint or "")
    assert listing(tmp_path / "w2") == []


@pytest.fixture
def private_index(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 serving tmp_path/'served', recording Authorization headers."""
    (tmp_path / "served").mkdir()
    with serve(tmp_path / "served", record="Authorization") as server:
        yield server


def test_a_private_index_gets_uvs_credentials(tmp_path: Path, private_index: tuple[str, list[str]]) -> None:
    base, seen = private_index
    a, sa = wheel_file(tmp_path / "served", "alpha", b"private alpha")
    index = PackageIndex(name="team-pkgs", url=f"{base}/simple", username="ci")
    lock = package_lock(package(a, sa, f"{base}/{a.name}"), indexes=(index,))
    env = {"UV_INDEX_TEAM_PKGS_PASSWORD": "s3cret"}
    (fetched,) = fill_wheelhouse(lock, tmp_path / "wheels", environ=env)
    assert fetched.source == f"{base}/{a.name}"
    assert (tmp_path / "wheels" / a.name).read_bytes() == b"private alpha"
    assert seen == ["Basic " + base64.b64encode(b"ci:s3cret").decode()]
    seen.clear()
    fill_wheelhouse(lock, tmp_path / "anonymous", environ={})  # no password set: no header sent
    assert seen == [""]


def write_lock_file(tmp_path: Path, packages: PackageLock) -> Path:
    spec = make_spec()
    lock = replace(lock_from_resolution(make_resolution(spec), spec.to_dict()), packages=(packages,))
    path = tmp_path / "smoke.lock.json"
    write_lock(path, lock)
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_cli_fills_the_folder_and_prints_the_offline_build_command(tmp_path: Path) -> None:
    a, sa = wheel_file(tmp_path / "src", "alpha", b"alpha")
    lock = write_lock_file(tmp_path, package_lock(package(a, sa)))
    code, out, err = run("wheelhouse", str(lock), str(tmp_path / "wheels"))
    assert code == 0, err
    assert f"[1/1] {a.name}: 0.0 MB, sha256 ok" in err
    assert f"1 wheels in {tmp_path / 'wheels'} (0.0 MB), every sha256 as locked" in out
    offline = f"envbuilder build --lock {lock} --wheelhouse {tmp_path / 'wheels'} --network none"
    assert f"offline build: {offline}" in out
    code, out, _ = run("wheelhouse", str(lock), str(tmp_path / "wheels"), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["wheels"] == [{"wheel": a.name, "sha256": sa, "source": "kept"}] and doc["lock"] == str(lock)


def test_cli_hash_mismatch_is_exit_20_named(tmp_path: Path) -> None:
    a, _ = wheel_file(tmp_path / "src", "alpha", b"alpha")
    lock = write_lock_file(tmp_path, package_lock(package(a, "f" * 64)))
    code, out, err = run("wheelhouse", str(lock), str(tmp_path / "wheels"))
    assert code == 20 and out == ""
    assert f"envbuilder: error: {a.name} from {a.as_uri()} has sha256 " in err
    assert "hint: the index serves another file under this name" in err
    assert listing(tmp_path / "wheels") == []


def test_cli_a_platform_the_lock_lacks_is_exit_20_with_the_command_to_lock_it(tmp_path: Path) -> None:
    a, sa = wheel_file(tmp_path / "src", "alpha", b"alpha")
    lock = write_lock_file(tmp_path, package_lock(package(a, sa)))
    code, _, err = run("wheelhouse", str(lock), str(tmp_path / "wheels"), "--platform", "aarch64")
    assert code == 20
    assert f"envbuilder: error: {lock} holds no package lock for aarch64" in err
    assert f"hint: envbuilder lock {lock} --platform aarch64" in err
    assert not (tmp_path / "wheels").exists()
