"""Lock files: round trip, refusal of malformed ones (file + field named), atomic writes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fake_engine import cpu_package_lock, cpu_stack, make_resolution, make_spec

from envbuilder.errors import SpecError
from envbuilder.image.lock import (
    BuildRecord,
    InstalledDist,
    LockFile,
    lock_from_resolution,
    lock_hash,
    read_lock,
    write_lock,
    write_resolution_lock,
)
from envbuilder.image.render import RenderOptions, render_dockerfile
from envbuilder.image.spec import parse_spec


def built_lock() -> LockFile:
    spec = make_spec()
    lock = lock_from_resolution(make_resolution(spec), spec.to_dict())
    lock = replace(lock, packages=(cpu_package_lock(),))
    return lock.with_build(
        BuildRecord(
            image_id="sha256:" + "1" * 64,
            base_image="envbuilder-test/debian:bookworm",
            base_image_digest="sha256:" + "2" * 64,
            dockerfile_sha256="3" * 64,
            packages=("filelock==4.3.1", "torch==2.13.0+cpu"),
            tags=("envbuilder/smoke:torch2.13.0-cpu-py3.11-bundled",),
            installed=(InstalledDist(name="torch", version="2.13.0+cpu", record_sha256="e" * 64),),
            platform="x86_64",
        )
    )


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "smoke.lock.json"
    lock = built_lock()
    write_lock(path, lock)
    again = read_lock(path)
    assert again == lock
    doc = json.loads(path.read_text())
    assert doc["schema_version"] == 2 and doc["lock_hash"] == lock.hash
    assert doc["packages"][0]["packages"][1]["wheel"] == "torch-2.13.0+cpu-py3-none-any.whl"
    assert doc["build"]["installed"][0]["record_sha256"] == "e" * 64
    assert doc["build"]["packages"] == ["filelock==4.3.1", "torch==2.13.0+cpu"]


def test_hash_covers_stack_spec_and_packages_and_matches_the_image_label() -> None:
    spec = make_spec()
    stack = cpu_stack()
    packages = (cpu_package_lock(),)
    label = render_dockerfile(spec, stack, RenderOptions(package_locks=packages)).split(
        "io.envbuilder.lock-hash="
    )[1]
    assert label.split('"')[1] == lock_hash(stack, spec.to_dict(), packages)
    other = lock_hash(cpu_stack(version="2.12.0"), spec.to_dict(), packages)
    assert other != lock_hash(stack, spec.to_dict(), packages)
    assert lock_hash(stack, spec.to_dict(), (cpu_package_lock("aarch64"),)) != lock_hash(
        stack, spec.to_dict(), packages
    )
    a = built_lock()
    assert a.hash == replace(a, build=None).hash  # the build record does not change the hash


def test_a_lock_files_hash_is_the_one_its_image_is_labelled_with_package_locks_and_all() -> None:
    a = built_lock()
    assert a.packages and a.spec is not None
    assert a.hash == lock_hash(a.stack, a.spec, a.packages)  # what render writes as the label
    assert a.hash != replace(a, packages=()).hash


def test_resolution_lock_embeds_a_buildable_spec(tmp_path: Path) -> None:
    path = tmp_path / "stack.lock.json"
    write_resolution_lock(path, make_resolution(make_spec()))
    lock = read_lock(path)
    assert lock.build is None and lock.packages == () and lock.stack == cpu_stack()
    assert lock.spec is not None
    spec = parse_spec(lock.spec)
    assert (spec.framework, spec.specifier, spec.python, spec.strategy) == (
        "torch",
        "==2.13.0",
        "3.11",
        "bundled",
    )


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(schema_version=1), "schema_version"),
        (lambda d: d.update(packages={}), "packages"),
        (lambda d: d["packages"][0]["packages"][0].update(sha256="abc"), "sha256"),
        (lambda d: d["packages"][0]["packages"][0].update(name="Bad Name"), "name"),
        (lambda d: d["packages"][0].update(platform="riscv"), "platform"),
        (lambda d: d.update(packages=[d["packages"][0], d["packages"][0]]), "packages"),
        (lambda d: d["build"].update(installed=[{"name": 1}]), "build.installed"),
        (lambda d: d.update(spec_dir="/abs"), "spec_dir"),
        (lambda d: d.update(resolution=[]), "resolution"),
        (lambda d: d["stack"].pop("python"), "stack"),
        (lambda d: d.update(spec="torch"), "spec"),
        (lambda d: d["build"].update(image_id=""), "build.image_id"),
        (lambda d: d["build"].update(packages="torch"), "build.packages"),
        (lambda d: d["stack"]["framework"].update(version="2.99.0"), "lock_hash"),
    ],
)
def test_malformed_lock_names_file_and_field(tmp_path: Path, mutate: object, field: str) -> None:
    path = tmp_path / "bad.lock.json"
    doc = built_lock().to_dict()
    mutate(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert str(path) in err.value.message and (repr(field) in err.value.message or field in err.value.message)
    assert err.value.exit_code == 10


def test_not_json_and_missing(tmp_path: Path) -> None:
    bad = tmp_path / "x.lock.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="not valid JSON"):
        read_lock(bad)
    with pytest.raises(SpecError, match="cannot read"):
        read_lock(tmp_path / "missing.json")


def test_crash_mid_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "smoke.lock.json"
    write_resolution_lock(path, make_resolution(make_spec()))
    before = path.read_bytes()

    def crash(fd: int) -> None:  # the data is half on disk when the "power fails"
        raise KeyboardInterrupt

    monkeypatch.setattr("envbuilder.atomic.os.fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        write_lock(path, built_lock())
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smoke.lock.json"]  # no temp file left behind


def test_failed_rename_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "smoke.lock.json"
    path.write_text("old contents\n")

    def fail(self: Path, target: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "replace", fail)
    with pytest.raises(OSError):
        write_lock(path, built_lock())
    assert path.read_text() == "old contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["smoke.lock.json"]


def test_the_hash_covers_the_spec_and_an_empty_recorded_hash_is_refused(tmp_path: Path) -> None:
    """Set G's survivors (h13): the spec left out of the hash, an empty lock_hash let through."""
    stack, packages = cpu_stack(), (cpu_package_lock(),)
    spec = make_spec().to_dict()
    assert lock_hash(stack, {**spec, "description": "edited"}, packages) != lock_hash(stack, spec, packages)
    assert lock_hash(stack, None, packages) != lock_hash(stack, spec, packages)
    doc = built_lock().to_dict()
    path = tmp_path / "x.lock.json"
    path.write_text(json.dumps({**doc, "lock_hash": ""}))
    with pytest.raises(SpecError, match="lock_hash"):
        read_lock(path)
    path.write_text(json.dumps(doc))
    assert read_lock(path).hash == doc["lock_hash"]
    path.write_text(json.dumps({**doc, "lock_hash": None}))  # optional: recomputed when absent
    assert read_lock(path).hash == doc["lock_hash"]


def test_the_hash_covers_every_platforms_package_lock() -> None:
    """Set H's survivor H20 (h13): a second platform's lock edited changes the hash too."""
    from envbuilder.image.packages import LockedPackage

    stack, spec = cpu_stack(), make_spec().to_dict()
    x86, arm = cpu_package_lock(), cpu_package_lock("aarch64")
    extra = LockedPackage(
        name="numpy", version="2.0.0", wheel="", sha256="", size=None, urls=(), group="base"
    )
    edited = replace(arm, packages=(*arm.packages, extra))
    assert lock_hash(stack, spec, (x86, edited)) != lock_hash(stack, spec, (x86, arm))
    assert lock_hash(stack, spec, (x86, arm)) == lock_hash(stack, spec, (x86, arm))


def test_a_resolution_spec_asks_for_devel_only_on_an_nvidia_cuda_base() -> None:
    """Set I's survivor I16 (h13): a bundled stack's base is a slim image, which has no devel."""
    from envbuilder.image.lock import spec_from_request
    from envbuilder.resolve.model import Request

    devel = Request(framework="torch", specifier="==2.13.0", flavor="devel")
    assert spec_from_request(devel, replace(cpu_stack(), strategy="bundled"))["flavor"] == "runtime"
    assert spec_from_request(devel, replace(cpu_stack(), strategy="system-cuda"))["flavor"] == "devel"
    runtime = replace(devel, flavor="runtime")
    assert spec_from_request(runtime, replace(cpu_stack(), strategy="system-cuda"))["flavor"] == "runtime"
