"""Build orchestration on a FakeEngine: tags only after success, atomic lock, reproducible --lock."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_engine import FakeEngine, cpu_package_lock, cpu_stack, make_resolution, make_spec

from envbuilder.atomic import write_text_atomic
from envbuilder.cli import cli
from envbuilder.cli.build_cmd import parse_secret
from envbuilder.cli.progress_view import BuildProgress, ProgressView
from envbuilder.engine import BuildSecret, ImageInfo
from envbuilder.engine.progress import BuildEvent
from envbuilder.errors import (
    BuildFailedError,
    BuildKitMissingError,
    DockerUnavailableError,
    RegistryError,
    UsageError,
)
from envbuilder.image import commit as commit_mod
from envbuilder.image.build import (
    BuildOptions,
    build_epoch,
    default_tag,
    plan_from_lock,
    plan_from_spec,
    run_build,
    stack_tag,
)
from envbuilder.image.lock import BuildRecord, read_lock
from envbuilder.image.packages import LockSettings
from envbuilder.matrix import load_matrix
from envbuilder.resources import user_data_dir

BASE = "envbuilder-test/debian:bookworm"
BASE_ID = "sha256:" + "b" * 64
TAG = "envbuilder/smoke:torch2.13.0-cpu-py3.11-bundled"


@pytest.fixture(autouse=True)
def locked(monkeypatch: pytest.MonkeyPatch) -> list[LockSettings | None]:
    """lock_packages without uv: the CPU torch lock; the settings of each call are recorded."""
    calls: list[LockSettings | None] = []

    def fake_lock(
        spec: object,
        stack: object,
        *,
        platform: str = "x86_64",
        settings: LockSettings | None = None,
        **kw: object,
    ) -> object:
        calls.append(settings)
        return cpu_package_lock(platform)

    monkeypatch.setattr("envbuilder.image.build.lock_packages", fake_lock)
    return calls


def engine(**kw: object) -> FakeEngine:
    fake = FakeEngine(**kw)  # type: ignore[arg-type]
    fake.images[BASE] = ImageInfo(id=BASE_ID, tags=(BASE,), repo_digests=())
    return fake


def build(tmp_path: Path, fake: FakeEngine, **kw: object) -> tuple[object, Path]:
    lock_out = tmp_path / "smoke.lock.json"
    options = BuildOptions(base_image=BASE, lock_out=lock_out, **kw)  # type: ignore[arg-type]
    spec = make_spec()
    plan = plan_from_spec(spec, make_resolution(spec), options, Path("images/smoke.yaml"), load_matrix())
    return run_build(plan, options, fake, work_dir=tmp_path), lock_out


def resolved_lock(tmp_path: Path) -> Path:
    """A lock as `resolve --lock` writes it for the smoke spec: a stack and a spec, no packages."""
    from envbuilder.image.lock import lock_from_resolution, write_lock

    spec = make_spec()
    lock = tmp_path / "smoke.lock.json"
    write_lock(lock, lock_from_resolution(make_resolution(spec), spec.to_dict()))
    return lock


def test_success_tags_after_the_build_and_writes_the_lock(tmp_path: Path) -> None:
    fake = engine()
    events: list[BuildEvent] = []
    lock_out = tmp_path / "smoke.lock.json"
    options = BuildOptions(base_image=BASE, lock_out=lock_out, tags=("me/train:v1",))
    spec = make_spec()
    plan = plan_from_spec(spec, make_resolution(spec), options, Path("images/smoke.yaml"), load_matrix())
    outcome = run_build(plan, options, fake, on_event=events.append, work_dir=tmp_path)
    kinds = [c[0] for c in fake.calls]
    assert kinds.index("build") < kinds.index("tag")  # untagged build, tags afterwards
    assert fake.tags() == {BASE, TAG, "me/train:v1"}
    lock = read_lock(lock_out)
    assert lock.build is not None and lock.build.image_id == outcome.image.id
    assert lock.build.packages == fake.packages
    assert lock.build.base_image == BASE and lock.build.base_image_digest == BASE_ID
    assert lock.build.tags == (TAG, "me/train:v1")
    assert lock.spec == spec.to_dict()
    assert lock.stack.base_image == BASE and "base image overridden" in lock.stack.notes[-1]
    assert outcome.warnings == ()  # the lock hash equals the image's label
    assert any(e.kind == "cached" for e in events)
    assert list(tmp_path.glob("envbuilder-render-*")) == []  # render dir cleaned up


def test_failed_build_leaves_no_tag_and_the_lock_untouched(tmp_path: Path) -> None:
    _, lock_out = build(tmp_path, engine())
    before = lock_out.read_bytes()
    fake = engine(fail_build=True)
    with pytest.raises(BuildFailedError, match=r"docker build failed \(exit 1\)") as err:
        build(tmp_path, fake)
    assert any("No matching distribution" in line for line in err.value.log)
    assert fake.tags() == {BASE}
    assert lock_out.read_bytes() == before


def test_interrupt_leaves_no_tag_and_no_lock(tmp_path: Path) -> None:
    fake = engine(interrupt_build=True)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, fake)
    assert fake.tags() == {BASE}
    assert not (tmp_path / "smoke.lock.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_lock_write_failure_rolls_the_tags_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = engine()
    old = ImageInfo(id="sha256:" + "0" * 64, tags=(TAG,), repo_digests=())
    fake.images[old.id] = old
    fake.images[TAG] = old

    real = write_text_atomic

    def fail(path: Path, text: str) -> None:
        if path.name == "smoke.lock.json":
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(commit_mod, "write_text_atomic", fail)
    with pytest.raises(KeyboardInterrupt):
        build(tmp_path, fake, tags=("me/new:v1",))
    assert fake.images[TAG].id == old.id  # the previous image got its tag back
    assert "me/new:v1" not in fake.tags()
    assert not (tmp_path / "smoke.lock.json").exists()
    assert list((user_data_dir() / "commits").iterdir()) == []  # no journal left to repair


def test_daemon_down_and_no_buildkit_fail_before_rendering(tmp_path: Path) -> None:
    with pytest.raises(DockerUnavailableError):
        build(tmp_path, engine(daemon_up=False))
    with pytest.raises(BuildKitMissingError):
        build(tmp_path, engine(buildkit=False))
    assert [p.name for p in tmp_path.iterdir()] == []


def test_secrets_reach_the_build_and_the_dockerfile_mounts_them(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    fake = engine()
    build(tmp_path, fake, secrets=(BuildSecret(id="ca", src=ca),))
    assert ("build", ["ca"]) in fake.calls
    assert "type=secret,id=ca" in fake.built_dockerfiles[0]
    assert "BEGIN CERTIFICATE" not in fake.built_dockerfiles[0]


def test_push_records_the_digest(tmp_path: Path) -> None:
    fake = engine()
    outcome, lock_out = build(tmp_path, fake, push="127.0.0.1:5000")
    ref = "127.0.0.1:5000/envbuilder/smoke@sha256:" + "ab" * 32
    assert outcome.pushed == (ref,)  # type: ignore[attr-defined]
    lock = read_lock(lock_out)
    assert lock.build is not None and lock.build.pushed == (ref,)


def test_push_failure_is_a_registry_error_after_the_lock(tmp_path: Path) -> None:
    fake = engine(push_error="unauthorized: authentication required")
    with pytest.raises(RegistryError, match="unauthorized"):
        build(tmp_path, fake, push="127.0.0.1:5001")
    lock = read_lock(tmp_path / "smoke.lock.json")
    assert lock.build is not None and lock.build.pushed == ()


def test_bad_inputs_are_refused_before_docker(tmp_path: Path) -> None:
    fake = engine()
    with pytest.raises(UsageError, match="--tag"):
        build(tmp_path, fake, tags=("Bad Tag!",))
    with pytest.raises(UsageError, match="--push"):
        build(tmp_path, fake, push="http://x")
    with pytest.raises(UsageError, match="secret"):
        build(tmp_path, fake, secrets=(BuildSecret(id="ca", src=tmp_path / "nope"),))
    assert fake.calls == []


def test_rebuild_from_lock_renders_the_same_dockerfile(tmp_path: Path) -> None:
    fake = engine()
    _, lock_out = build(tmp_path, fake)
    copy = tmp_path / "copy.lock.json"
    copy.write_bytes(lock_out.read_bytes())
    plan = plan_from_lock(copy, BuildOptions(), matrix=load_matrix())
    assert plan.base_ref == BASE and plan.lock_out == copy
    again = run_build(plan, BuildOptions(), fake, work_dir=tmp_path)
    assert fake.built_dockerfiles[0] == fake.built_dockerfiles[1]
    assert again.warnings == ()
    a, b = read_lock(lock_out), read_lock(copy)
    assert a.build is not None and b.build is not None
    assert a.build.dockerfile_sha256 == b.build.dockerfile_sha256 and a.hash == b.hash


def test_rebuild_warns_when_the_local_base_changed(tmp_path: Path) -> None:
    fake = engine()
    _, lock_out = build(tmp_path, fake)
    fake.images[BASE] = ImageInfo(id="sha256:" + "c" * 64, tags=(BASE,), repo_digests=())
    outcome = run_build(
        plan_from_lock(lock_out, BuildOptions(), matrix=load_matrix()),
        BuildOptions(),
        fake,
        work_dir=tmp_path,
    )
    assert any("the rebuild will differ" in w for w in outcome.warnings)


def test_base_with_a_registry_digest_is_pinned(tmp_path: Path) -> None:
    fake = engine()
    digest = "sha256:" + "d" * 64
    fake.images["127.0.0.1:5000/base:1"] = ImageInfo(
        id=BASE_ID, tags=(), repo_digests=(f"127.0.0.1:5000/base@{digest}",)
    )
    spec = make_spec()
    options = BuildOptions(base_image="127.0.0.1:5000/base:1", lock_out=tmp_path / "p.lock.json")
    plan = plan_from_spec(spec, make_resolution(spec), options, Path("images/smoke.yaml"), load_matrix())
    run_build(plan, options, fake, work_dir=tmp_path)
    assert f"FROM 127.0.0.1:5000/base:1@{digest}" in fake.built_dockerfiles[0]
    lock = read_lock(tmp_path / "p.lock.json")
    assert lock.build is not None and lock.build.base_image_digest == f"127.0.0.1:5000/base:1@{digest}"


def test_a_resolve_lock_is_buildable_and_gets_its_packages_locked(
    tmp_path: Path, locked: list[LockSettings | None]
) -> None:
    from envbuilder.image.lock import write_resolution_lock

    path = tmp_path / "stack.lock.json"
    write_resolution_lock(path, make_resolution(make_spec()))
    plan = plan_from_lock(path, BuildOptions(), matrix=load_matrix())
    assert plan.stack == cpu_stack() and plan.spec.framework == "torch" and plan.packages == ()
    run_build(plan, BuildOptions(base_image=BASE), engine(), work_dir=tmp_path)
    assert len(locked) == 1
    lock = read_lock(path)
    assert [p.platform for p in lock.packages] == ["x86_64"] and lock.build is not None
    # Built again from that lock: its pins are used, nothing is locked again.
    run_build(
        plan_from_lock(path, BuildOptions(), matrix=load_matrix()),
        BuildOptions(base_image=BASE),
        engine(),
        work_dir=tmp_path,
    )
    assert len(locked) == 1


def test_wheelhouse_build_locks_from_the_wheelhouse_alone(
    tmp_path: Path, locked: list[LockSettings | None]
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for pkg in cpu_package_lock("x86_64").packages:  # the locked wheels: the context links them
        (wheels / pkg.wheel).write_bytes(b"w")
    build(tmp_path, engine(), wheelhouse=wheels)
    settings = locked[0]
    assert settings is not None and settings.find_links == (wheels,) and settings.no_index


def test_drift_fails_the_build_names_the_package_and_leaves_no_image(tmp_path: Path) -> None:
    fake = engine(packages=("filelock==4.3.1", "torch==2.4.1+cu124"))
    with pytest.raises(BuildFailedError, match=r"torch: locked 2\.13\.0\+cpu, image has 2\.4\.1\+cu124"):
        build(tmp_path, fake)
    assert fake.tags() == {BASE}
    assert not (tmp_path / "smoke.lock.json").exists()
    built = [c for c in fake.calls if c[0] == "remove"]
    assert built and str(built[0][1]).startswith("sha256:")  # the untagged image is removed
    with pytest.raises(BuildFailedError, match=r"filelock: locked 4\.3\.1, image has missing"):
        build(tmp_path, engine(packages=("torch==2.13.0+cpu",)))


def test_index_secrets_must_be_given(tmp_path: Path) -> None:
    spec = make_spec(indexes=[{"name": "corp", "url": "https://pkgs.example/simple", "secret": "corp-token"}])
    options = BuildOptions(base_image=BASE, lock_out=tmp_path / "x.lock.json")
    plan = plan_from_spec(spec, make_resolution(spec), options, Path("images/smoke.yaml"), load_matrix())
    with pytest.raises(UsageError, match="corp-token"):
        run_build(plan, options, engine(), work_dir=tmp_path)


def test_stack_tag_is_a_valid_docker_tag() -> None:
    assert stack_tag(cpu_stack(id="torch2.11.0+cu130-py3.12")) == "torch2.11.0-cu130-py3.12"
    assert default_tag(make_spec("pytorch-train"), cpu_stack()).startswith("envbuilder/pytorch-train:")


def test_progress_display_plain_and_tty() -> None:
    plain = io.StringIO()
    display = BuildProgress(ProgressView(plain, tty=False, ticker=False))
    ev = BuildEvent(
        kind="cached", vertex=5, name="[stage-0 2/4] RUN python3 -m venv /opt/venv", index=2, total=4
    )
    display(ev)
    display(BuildEvent(kind="start", vertex=1, name="[internal] load .dockerignore", index=None, total=None))
    assert plain.getvalue().startswith("[2/4] CACHED") and plain.getvalue().count("\n") == 1
    tty = io.StringIO()
    view = ProgressView(tty, tty=True, width=80, ticker=False)
    display = BuildProgress(view)
    display(ev)
    display.finish()
    assert "[2/4] CACHED (t=0s) RUN python3 -m venv /opt/venv" in tty.getvalue()


def test_parse_secret(tmp_path: Path) -> None:
    f = tmp_path / "tok"
    f.write_text("x")
    assert parse_secret(f"id=ca,src={f}") == BuildSecret(id="ca", src=f)
    for bad in ("ca", f"src={f}", "id=ca,src=/nonexistent"):
        with pytest.raises(UsageError):
            parse_secret(bad)


@pytest.mark.parametrize(
    ("fake", "code", "message"),
    [
        (FakeEngine(daemon_up=False), 7, "cannot reach the Docker daemon"),
        (FakeEngine(buildkit=False), 8, "BuildKit"),
        (FakeEngine(fail_build=True), 9, "docker build failed"),
        (FakeEngine(interrupt_build=True), 130, "interrupted"),
    ],
)
def test_cli_exit_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeEngine, code: int, message: str
) -> None:
    fake.images[BASE] = ImageInfo(id=BASE_ID, tags=(BASE,), repo_digests=())
    lock = resolved_lock(tmp_path)
    before = lock.read_bytes()
    monkeypatch.setattr("envbuilder.engine.DockerEngine", lambda: fake)
    result = CliRunner().invoke(cli, ["build", "--lock", str(lock), "--base-image", BASE])
    assert result.exit_code == code, result.output
    assert message in result.output
    assert lock.read_bytes() == before


def test_cli_json_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = engine()
    lock = resolved_lock(tmp_path)
    monkeypatch.setattr("envbuilder.engine.DockerEngine", lambda: fake)
    result = CliRunner().invoke(cli, ["build", "--lock", str(lock), "--base-image", BASE, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["tags"] == [TAG] and doc["cached_steps"] == 1 and doc["steps"] == 4
    assert doc["lock_file"] == str(lock) and doc["base_image_digest"] == BASE_ID


# --------------------------------------------------------------------------- --base-venv


def test_base_venv_takes_the_framework_from_the_base_without_resolving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base whose environment holds the framework (NGC, the GPU machine's own): nothing is
    resolved (no uv, no index), the lock records what the base has (group base, with the digest
    of the installed RECORD), the Dockerfile installs nothing for it, and the built image is
    checked to still hold it."""
    from envbuilder.image import packages

    monkeypatch.setattr("envbuilder.image.build.lock_packages", packages.lock_packages)

    def no_uv(override: str | None = None) -> str:
        raise AssertionError("uv must not be needed when the base provides the framework")

    monkeypatch.setattr(packages, "uv_binary", no_uv)
    monkeypatch.setattr("envbuilder.image.render.uv_binary", no_uv)
    fake = engine()
    outcome, lock_out = build(tmp_path, fake, base_venv="/opt/torch/.venv")
    runs = [cmd for kind, cmd in fake.calls if kind == "run" and isinstance(cmd, tuple)]
    base_runs = [cmd for cmd in runs if cmd[1:2] == ("-c",)]
    assert base_runs and base_runs[0][0] == "/opt/torch/.venv/bin/python"
    lock = read_lock(lock_out)
    (locked,) = lock.packages
    assert [(p.name, p.version, p.group, p.wheel) for p in locked.packages] == [
        ("torch", "2.13.0+cpu", "base", "")
    ]
    assert locked.packages[0].sha256 == "f" * 64 and locked.resolver == packages.BASE_RESOLVER
    assert locked.framework_index is None
    dockerfile = fake.built_dockerfiles[-1]
    assert "install --require-hashes" not in dockerfile
    assert "The base image's environment (/opt/torch/.venv) provides the framework:" in dockerfile
    assert outcome.lock.build is not None  # type: ignore[attr-defined]


def test_base_venv_without_the_framework_is_a_lock_error_naming_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from envbuilder.errors import LockError
    from envbuilder.image import packages

    monkeypatch.setattr("envbuilder.image.build.lock_packages", packages.lock_packages)
    fake = engine(packages=("torch==2.5.0a0+nv24.10",))
    with pytest.raises(LockError, match=r"torch is 2\.5\.0a0\+nv24\.10, the stack pins ==2\.13\.0") as exc:
        build(tmp_path, fake, base_venv="/usr")
    assert exc.value.exit_code == LockError.exit_code and "--base-venv" in (exc.value.hint or "")
    assert not (tmp_path / "smoke.lock.json").exists() and fake.tags() == {BASE}


def test_every_build_of_one_output_renders_its_context_into_the_same_folder(tmp_path: Path) -> None:
    # The Docker CLI keys BuildKit's context transfer by the context's path: the same folder each
    # time, so a rebuild sends only what changed. Another output gets its own folder.
    seen: list[Path] = []
    fake = engine()
    real_build = fake.build

    def recording_build(context: Path, dockerfile: Path, **kw: object) -> object:
        seen.append(context)
        return real_build(context, dockerfile, **kw)  # type: ignore[arg-type]

    fake.build = recording_build  # type: ignore[method-assign,assignment]
    spec = make_spec()
    for lock_name in ("a.lock.json", "a.lock.json", "b.lock.json"):
        options = BuildOptions(base_image=BASE, lock_out=tmp_path / lock_name)
        plan = plan_from_spec(spec, make_resolution(spec), options, Path("images/smoke.yaml"), load_matrix())
        run_build(plan, options, fake)
    assert seen[0] == seen[1] != seen[2]
    assert seen[0].is_relative_to(user_data_dir() / "contexts")
    assert (seen[0] / "harness").is_dir()  # kept for the next build's transfer


# --------------------------------------------------------------------------- --reproducible


@pytest.mark.parametrize(
    ("said", "recorded", "env", "epoch"),
    [
        (None, None, {}, None),  # not said, a spec or a lock built the usual way: build-time file times
        (True, None, {}, 0),
        (True, None, {"SOURCE_DATE_EPOCH": "1700000000"}, 1700000000),
        (None, 1234, {}, 1234),  # a lock built reproducibly rebuilds with its own epoch
        (True, 1234, {"SOURCE_DATE_EPOCH": "99"}, 99),  # the environment's wins (reproducible-builds.org)
        (False, 1234, {"SOURCE_DATE_EPOCH": "99"}, None),
    ],
)
def test_the_build_epoch_follows_the_flag_the_environment_and_the_lock(
    said: bool | None, recorded: int | None, env: dict[str, str], epoch: int | None
) -> None:
    previous = BuildRecord(
        image_id="sha256:" + "1" * 64, base_image=BASE, base_image_digest=None, dockerfile_sha256="0" * 64,
        packages=(), tags=(), source_date_epoch=recorded,
    )  # fmt: skip
    assert build_epoch(said, previous, env) == epoch


@pytest.mark.parametrize("bad", ["-1", "1.5", "now", "١٢", "9" * 30])
def test_a_source_date_epoch_that_is_not_whole_seconds_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH") as err:
        build_epoch(True, None, {"SOURCE_DATE_EPOCH": bad})
    assert err.value.hint and "digits only" in err.value.hint


def test_a_reproducible_build_records_its_epoch_and_its_lock_rebuilds_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = engine()
    monkeypatch.setattr("envbuilder.engine.DockerEngine", lambda: fake)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    lock = resolved_lock(tmp_path)
    args = ["build", "--lock", str(lock), "--base-image", BASE]
    result = CliRunner().invoke(cli, [*args, "--reproducible", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["source_date_epoch"] == 1700000000
    built = read_lock(lock).build
    assert built is not None and built.source_date_epoch == 1700000000
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert CliRunner().invoke(cli, args).exit_code == 0  # the lock's own epoch, unasked
    assert CliRunner().invoke(cli, [*args, "--no-reproducible"]).exit_code == 0
    assert fake.epochs == [1700000000, 1700000000, None]
    rebuilt = read_lock(lock).build
    assert rebuilt is not None and rebuilt.source_date_epoch is None


def test_a_bad_source_date_epoch_fails_before_anything_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = engine()
    monkeypatch.setattr("envbuilder.engine.DockerEngine", lambda: fake)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    lock = resolved_lock(tmp_path)
    before = lock.read_bytes()
    result = CliRunner().invoke(cli, ["build", "--lock", str(lock), "--base-image", BASE, "--reproducible"])
    assert result.exit_code == 2 and "SOURCE_DATE_EPOCH='yesterday'" in result.output
    assert fake.calls == [] and lock.read_bytes() == before
