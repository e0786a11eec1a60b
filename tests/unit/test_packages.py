"""The package lock's pieces without uv or an index: pylock parsing (one wheel per package, the
installer's choice among several), requirement files (includes, refused index options), the
install indexes, drift, and the installed-set digest the harness computes in the image."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from render_cases import locked

from envbuilder.errors import LockError, SpecError
from envbuilder.harness import installed as collector  # the stdlib module the image runs
from envbuilder.image.drift import drift_from_build, drift_from_lock, parse_installed
from envbuilder.image.lock import InstalledDist
from envbuilder.image.packages import changed_inputs, choose_wheel, install_indexes, parse_pylock
from envbuilder.image.secrets import redact
from envbuilder.image.sources import PackageIndex, requirement_files

A, B, C = "a" * 64, "b" * 64, "c" * 64
ABI3 = "protobuf-5.29.0-cp39-abi3-manylinux2014_x86_64.whl"


def wheel(url: str, sha: str) -> str:
    """One pylock wheel entry (a TOML inline table: one line)."""
    return f'{{ url = "{url}", hashes = {{ sha256 = "{sha}" }} }}'


PYLOCK = "\n".join(
    [
        'lock-version = "1.0"',
        "[[packages]]",
        'name = "protobuf"',
        'version = "5.29.0"',
        "wheels = [",
        wheel("https://files.example/protobuf-5.29.0-py3-none-any.whl", A) + ",",
        wheel(f"https://files.example/{ABI3}", B) + ",",
        wheel(f"https://u:tok@mirror.example/{ABI3}", B),
        "]",
        "[[packages]]",
        'name = "Torch"',
        'version = "2.13.0+cpu"',
        "wheels = [" + wheel("file:///w/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl", C) + "]",
    ]
)


def test_pylock_keeps_the_wheel_the_installer_would_pick_and_no_credentials() -> None:
    pkgs = parse_pylock(
        PYLOCK, "framework", where="t", python="3.11", python_platform="x86_64-manylinux_2_28"
    )
    proto, torch = pkgs
    assert proto.wheel == "protobuf-5.29.0-cp39-abi3-manylinux2014_x86_64.whl" and proto.sha256 == "b" * 64
    assert proto.urls[1] == "https://mirror.example/protobuf-5.29.0-cp39-abi3-manylinux2014_x86_64.whl"
    assert (torch.name, torch.wheel) == ("torch", "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")


def test_pylock_refuses_what_is_not_a_wheel() -> None:
    text = '[[packages]]\nname = "x"\nversion = "1"\nsdist = { url = "https://e/x-1.tar.gz" }\n'
    with pytest.raises(LockError, match="not locked to a wheel"):
        parse_pylock(text, "project", where="t", python="3.11", python_platform="x86_64-manylinux_2_28")


def test_choose_wheel_refuses_a_platform_mismatch() -> None:
    with pytest.raises(LockError, match="none of"):
        choose_wheel(["a-1-cp311-cp311-macosx_11_0_arm64.whl", "a-1-cp311-cp311-win_amd64.whl"], "3.11",
                     "x86_64-manylinux_2_28", where="t")  # fmt: skip
    assert choose_wheel(["a-1-cp311-cp311-manylinux_2_34_x86_64.whl", "a-1-py3-none-any.whl"], "3.11",
                        "x86_64-manylinux_2_28", where="t") == "a-1-py3-none-any.whl"  # fmt: skip


def test_changed_inputs_are_the_files_under_the_specs_folder_that_differ_or_are_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from fake_engine import cpu_package_lock, make_spec

    from envbuilder.hashing import sha256_file_hex

    (tmp_path / "spec" / "sub").mkdir(parents=True)
    (tmp_path / "spec" / "requirements.txt").write_text("six==1.16.0\n")
    (tmp_path / "spec" / "sub" / "more.txt").write_text("idna==3.10\n")
    spec = replace(make_spec(), base_dir=str(tmp_path / "spec"))
    inputs = {rel: sha256_file_hex(tmp_path / "spec" / rel) for rel in ("requirements.txt", "sub/more.txt")}
    lock = replace(cpu_package_lock(), inputs=(*sorted(inputs.items()), ("gone.txt", "0" * 64)))
    monkeypatch.chdir(tmp_path)  # the working folder holds other files of the same names: not read
    (tmp_path / "requirements.txt").write_text("something else\n")
    assert changed_inputs(lock, spec) == ["gone.txt"]
    (tmp_path / "spec" / "sub" / "more.txt").write_text("idna==3.11\n")
    assert changed_inputs(lock, spec) == ["sub/more.txt", "gone.txt"]


def test_choose_wheel_ranks_a_wheel_by_its_best_tag() -> None:
    # a wheel tagged for two manylinux levels installs by its newer one (2_28, the target's own):
    # it beats a wheel of 2_17 alone, in either order, although its other tag (2_5) ranks below 2_17
    both = "a-1-cp311-cp311-manylinux_2_28_x86_64.manylinux_2_5_x86_64.whl"
    old = "a-1-cp311-cp311-manylinux_2_17_x86_64.whl"
    for files in ([old, both], [both, old]):
        assert choose_wheel(files, "3.11", "x86_64-manylinux_2_28", where="t") == both


def test_requirement_files_follow_includes_and_refuse_index_options(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "requirements.txt").write_text("six==1.16.0  # pinned\n-r sub/more.txt\n-c sub/c.txt\n")
    (tmp_path / "sub" / "more.txt").write_text("idna>=3 \\\n  ; python_version>'3'\n")
    (tmp_path / "sub" / "c.txt").write_text("idna<4\n")
    files = requirement_files(tmp_path / "requirements.txt", root=tmp_path, where="spec")
    assert [p.name for p in files] == ["requirements.txt", "more.txt", "c.txt"]
    for line in (
        "--index-url https://x/simple",
        "-ihttps://x",
        "--extra-index-url=https://x",
        "-f ./w",
        "--no-index",
        "--trusted-host x",  # set S's S03: TLS checks off for a host, from a requirements file
        "--trusted-host=x",
        '"--index-url" https://x/simple',  # set T's T15: quoted, as pip (shlex) reads it still an option
        "'-i' https://x/simple",
    ):
        (tmp_path / "bad.txt").write_text(f"six\n{line}\n")
        with pytest.raises(SpecError, match=r"bad\.txt:2: .* is refused") as err:
            requirement_files(tmp_path / "bad.txt", root=tmp_path, where="spec")
        assert "indexes:" in (err.value.hint or "")
    (tmp_path / "up.txt").write_text("-r ../outside.txt\n")
    (tmp_path.parent / "outside.txt").write_text("six\n")
    with pytest.raises(SpecError, match="outside"):
        requirement_files(tmp_path / "up.txt", root=tmp_path, where="spec")


def test_an_include_in_a_sibling_folder_whose_name_starts_like_the_specs_is_outside(
    tmp_path: Path,
) -> None:
    """Inside the spec's folder means under it, not a path whose text starts with its path: set R's
    R09 (`str(included).startswith(str(root))`) took /x/specs-other/more.txt for /x/specs."""
    root, sibling = tmp_path / "specs", tmp_path / "specs-other"
    root.mkdir()
    sibling.mkdir()
    (sibling / "more.txt").write_text("six\n")
    (root / "requirements.txt").write_text("-r ../specs-other/more.txt\n")
    with pytest.raises(SpecError, match="outside"):
        requirement_files(root / "requirements.txt", root=root, where="spec")
    (root / "sub").mkdir()
    (root / "sub" / "more.txt").write_text("six\n")
    (root / "requirements.txt").write_text("-r sub/more.txt\n")
    assert [p.name for p in requirement_files(root / "requirements.txt", root=root, where="spec")] == [
        "requirements.txt",
        "more.txt",
    ]


def test_install_indexes_order_and_names() -> None:
    corp = PackageIndex(name="corp", url="https://pkgs.example/simple")
    kw = {
        "framework_index": "https://download.pytorch.org/whl/cpu",
        "default_index": "https://pypi.org/simple",
    }
    assert install_indexes("framework", indexes=(corp,), **kw) == (("framework", kw["framework_index"]),)
    assert install_indexes("project", indexes=(corp,), **kw) == (
        ("corp", corp.url), ("framework", kw["framework_index"]), ("pypi", kw["default_index"]),
    )  # fmt: skip
    assert install_indexes(
        "framework", indexes=(), framework_index=None, default_index="https://m/simple"
    ) == (("pypi", "https://m/simple"),)
    assert redact("failed https://user:tok@h/simple/x and http://a:b@127.0.0.1/") == (
        "failed https://h/simple/x and http://127.0.0.1/"
    )


def test_drift_names_missing_other_versions_and_other_wheels() -> None:
    lock = [locked("torch", "2.8.0+cu128"), locked("numpy", "2.1.0"), locked("six", "1.16.0")]
    have = [InstalledDist(name="torch", version="2.4.1+cu124", record_sha256="a" * 64),
            InstalledDist(name="numpy", version="2.1", record_sha256="b" * 64)]  # fmt: skip
    assert [str(d) for d in drift_from_lock(have, lock)] == [
        "six: locked 1.16.0, image has missing",
        "torch: locked 2.8.0+cu128, image has 2.4.1+cu124",
    ]  # numpy 2.1 == 2.1.0 (PEP 440)
    other_wheel = [InstalledDist(name="numpy", version="2.1", record_sha256="c" * 64)]
    (drift,) = drift_from_build(other_wheel, [have[1]])
    assert drift.name == "numpy" and "bbbbbbbbbbbb" in drift.expected and "cccccccccccc" in drift.found
    extra = drift_from_build([*other_wheel, have[0]], other_wheel)
    assert [(d.name, d.expected) for d in extra] == [("torch", "not installed")]


def test_the_collector_digest_ignores_what_installers_write() -> None:
    wheel_rows = "pkg/__init__.py,sha256=AAA,10\npkg-1.dist-info/METADATA,sha256=BBB,20\n"
    pip = wheel_rows + (
        "pkg/__pycache__/__init__.cpython-311.pyc,sha256=PYC,5\n../../../bin/pkg,sha256=SCRIPT,3\n"
        "pkg-1.dist-info/INSTALLER,sha256=PIP,4\npkg-1.dist-info/RECORD,,\n"
    )
    uv = wheel_rows + "pkg-1.dist-info/INSTALLER,sha256=UV,3\npkg-1.dist-info/REQUESTED,,\n"
    assert collector.record_digest(pip) == collector.record_digest(uv) == collector.record_digest(wheel_rows)
    assert collector.record_digest(wheel_rows.replace("AAA", "AAB")) != collector.record_digest(wheel_rows)
    assert collector.canonical_name("Typing_Extensions") == "typing-extensions"
    doc = collector.installed_set()  # this environment: pytest is in it, with a RECORD
    assert any(d["name"] == "pytest" and d["record_sha256"] for d in doc)
    assert parse_installed(json.dumps({"distributions": doc}))


@pytest.mark.parametrize("through", ["real", "link", "relative"])
def test_a_locks_inputs_are_every_file_it_read_each_relative_to_the_specs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    """The lock records each file its project packages were read from (the requirements file,
    the files it includes with -r/-c, the pyproject) by its path under the spec's folder, however
    that folder was named: through a symlink, or relative to the working folder (a spec loaded as
    `link/spec.yaml`), the paths stay the spec's own, never a climb out of it that the lock's
    reader refuses."""
    from dataclasses import replace

    from fake_engine import cpu_package_lock, make_spec

    from envbuilder.hashing import sha256_file_hex
    from envbuilder.image.packages import LockSettings, _project_inputs, package_lock_from_dict
    from envbuilder.image.sources import ProjectFile

    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "requirements.txt").write_text("-r sub/more.txt\nsix==1.16.0\n")
    (real / "sub" / "more.txt").write_text("-c ../pins.txt\nidna\n")
    (real / "pins.txt").write_text("idna==3.10\n")
    (real / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path)
    base = {"real": str(real), "link": str(tmp_path / "link"), "relative": "link"}[through]
    spec = replace(
        make_spec(),
        base_dir=base,
        requirements_file="requirements.txt",
        pyproject=ProjectFile(path="pyproject.toml"),
    )
    work = tmp_path / "work"
    work.mkdir()
    _sources, _extras, inputs = _project_inputs("uv", spec, work, LockSettings())
    names = ("requirements.txt", "sub/more.txt", "pins.txt", "pyproject.toml")
    assert sorted(inputs) == sorted((n, sha256_file_hex(real / n)) for n in names)
    raw = json.loads(json.dumps(cpu_package_lock().to_dict()))
    raw["inputs"] = dict(inputs)
    assert package_lock_from_dict(raw, "w").inputs == tuple(sorted(inputs))  # its reader takes them
