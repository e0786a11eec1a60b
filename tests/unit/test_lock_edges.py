"""The lock's decisions that the automatic mutants of `benchmarks/mutants.py --auto lock` found
unguarded (issue 23 items 1, 5 and 14, blind run of 2026-12-05): where a lock's index names and
URLs go, how a secret is recorded and redacted, what the lock hash and the lock's checks hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_engine import cpu_stack, make_spec

from envbuilder.errors import LockError, SpecError
from envbuilder.image.packages import (
    LockSettings,
    _base_lock,
    install_indexes,
    lock_secrets,
    package_lock_from_dict,
)
from envbuilder.image.secrets import recorded_url, redact
from envbuilder.image.sources import PackageIndex

CORP = PackageIndex(name="corp", url="https://pkgs.example/simple")
TEAM = PackageIndex(name="team", url="https://team.example/simple")
TORCH = "https://download.pytorch.org/whl/cpu"
PYPI = "https://pypi.org/simple"


# --------------------------------------------------------------------------- install_indexes


def test_every_spec_index_goes_to_the_project_group_in_order() -> None:
    got = install_indexes("project", indexes=(CORP, TEAM), framework_index=TORCH, default_index=PYPI)
    assert got == (("corp", CORP.url), ("team", TEAM.url), ("framework", TORCH), ("pypi", PYPI))


def test_no_default_index_means_no_pypi_entry_in_either_group() -> None:
    """--no-index: the lock records default_index null; nothing may put ("pypi", None) on the line."""
    for group in ("framework", "project"):
        got = install_indexes(group, indexes=(CORP,), framework_index=None, default_index=None)
        assert got == ((("corp", CORP.url),) if group == "project" else ()), group
    assert install_indexes("project", indexes=(), framework_index=TORCH, default_index=None) == (
        ("framework", TORCH),
    )


def test_a_url_listed_twice_keeps_its_first_name_and_place() -> None:
    """A spec index that is the framework index (or PyPI) under its own name: one entry, the
    spec's name, at the spec's place."""
    mirror = PackageIndex(name="mirror", url=TORCH)
    got = install_indexes("project", indexes=(mirror, CORP), framework_index=TORCH, default_index=PYPI)
    assert got == (("mirror", TORCH), ("corp", CORP.url), ("pypi", PYPI))


# --------------------------------------------------------------------------- secrets of a lock run


def test_every_spec_index_password_is_a_secret_named_by_its_secret_id_or_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    indexes = [
        {"name": "corp", "url": "https://pkgs.example/simple", "secret": "corp_tok"},
        {"name": "team", "url": "https://team.example/simple"},
        {"name": "open", "url": "https://open.example/simple"},  # no password in the environment
    ]
    monkeypatch.setenv("UV_INDEX_CORP_PASSWORD", "pw-of-corp")
    monkeypatch.setenv("UV_INDEX_TEAM_PASSWORD", "pw-of-team")
    monkeypatch.delenv("UV_INDEX_OPEN_PASSWORD", raising=False)
    spec = make_spec(requirements=["six"], indexes=indexes)
    mirror = ("pip_index_url", "https://mirror.example/TOKEN/simple")
    got = lock_secrets(spec, LockSettings(secrets=(mirror,)))
    assert got == (mirror, ("corp_tok", "pw-of-corp"), ("team", "pw-of-team"))


# --------------------------------------------------------------------------- the lock's own record


def test_a_mirror_given_as_a_secret_is_recorded_by_name_in_both_index_fields() -> None:
    """Issue 23 item 5: a URL given as a secret (its token in the path or the query) is recorded
    as <secret:NAME>, the framework mirror and the default index alike."""
    f_url = "https://dl.example.io/T0KEN-IN-PATH/whl/cpu"
    d_url = "https://mirror.example/simple?token=T0KEN-IN-QUERY"
    settings = LockSettings(
        framework_index=f_url, default_index=d_url, secrets=(("fw_mirror", f_url), ("pip_index_url", d_url))
    )
    base = _base_lock(make_spec(), cpu_stack(), "x86_64", "uv 0.13.9", settings)
    assert base.framework_index == "<secret:fw_mirror>"
    assert base.default_index == "<secret:pip_index_url>"
    assert (base.platform, base.python_platform) == ("x86_64", "x86_64-manylinux_2_28")


def test_a_mirror_not_given_as_a_secret_loses_its_credentials_and_query_values() -> None:
    settings = LockSettings(default_index="https://u:pa@ss@mirror.example/simple?token=abc")
    base = _base_lock(make_spec(), cpu_stack(), "aarch64", "uv 0.13.9", settings)
    assert base.default_index == "https://mirror.example/simple?token=***"
    assert base.framework_index == cpu_stack().index_url
    assert base.python_platform == "aarch64-manylinux_2_28"


def test_find_links_are_recorded_resolved_and_every_one_must_be_a_folder(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    link = tmp_path / "link"
    link.symlink_to(b)
    settings = LockSettings(find_links=(a, link))
    base = _base_lock(make_spec(), cpu_stack(), "x86_64", "uv 0.13.9", settings)
    assert base.find_links == (str(a), str(b))
    wheel = tmp_path / "torch-2.11.0-cp312-none-linux_x86_64.whl"
    wheel.write_bytes(b"PK")  # a wheel given as --find-links (its folder was meant): no folder
    for wrong in (tmp_path / "missing", wheel):
        with pytest.raises(LockError) as err:
            _base_lock(make_spec(), cpu_stack(), "x86_64", "uv", LockSettings(find_links=(a, wrong)))
        assert err.value.message == f"--find-links {wrong}: not a folder"


def test_no_index_needs_find_links_and_an_unknown_platform_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="--no-index needs --find-links"):
        _base_lock(make_spec(), cpu_stack(), "x86_64", "uv", LockSettings(no_index=True))
    ok = _base_lock(
        make_spec(), cpu_stack(), "x86_64", "uv", LockSettings(no_index=True, find_links=(tmp_path,))
    )
    assert ok.default_index is None and ok.framework_index is None
    with pytest.raises(LockError, match="unknown platform 'riscv64'"):
        _base_lock(make_spec(), cpu_stack(), "riscv64", "uv", LockSettings())  # type: ignore[arg-type]


# --------------------------------------------------------------------------- index URLs of a lock


def _raw_lock() -> dict[str, Any]:
    from dataclasses import replace

    from fake_engine import cpu_package_lock

    return replace(cpu_package_lock(), indexes=(CORP,)).to_dict()


@pytest.mark.parametrize(
    "set_url",
    [
        lambda d, v: d.update(default_index=v),
        lambda d, v: d.update(framework_index=v),
        lambda d, v: d["indexes"][0].update(url=v),
    ],
    ids=["default_index", "framework_index", "indexes[0].url"],
)
@pytest.mark.parametrize("value", [123, ["https://pypi.org/simple"], {"url": "https://pypi.org/simple"}])
def test_an_index_url_that_is_not_text_is_refused_with_its_field(set_url: Any, value: object) -> None:
    raw = _raw_lock()
    set_url(raw, value)
    with pytest.raises(
        LockError,
        match=r"^w: field '(default_index|framework_index|indexes\[0\]\.url)': .* refused \(an https://",
    ):
        package_lock_from_dict(raw, "w")


def _at(path: str) -> Any:
    """A setter of one field of a package lock's dict, by a dotted path ("indexes.0.name")."""

    def put(d: dict[str, Any], v: object) -> None:
        *parents, last = path.split(".")
        for p in parents:
            d = d[int(p)] if p.isdigit() else d[p]  # type: ignore[index]
        if last.isdigit():
            d[int(last)] = v  # type: ignore[index]
        else:
            d[last] = v

    return put


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("indexes", 5, "indexes"),
        ("indexes", "corp", "indexes"),
        ("indexes", {"name": "corp", "url": CORP.url}, "indexes"),
        ("indexes.0", "corp", "indexes[0]"),
        ("indexes.0", ["name", "url"], "indexes[0]"),  # a list of the keys: not an object
        ("indexes.0", "", "indexes[0]"),
        ("indexes.0.name", 7, "indexes[0].name"),
        ("indexes.0.name", "framework", "indexes[0].name"),
        ("indexes.0.username", 7, "indexes[0].username"),
        # empty or false is no user name, secret or index URL (null is "none")
        ("indexes.0.username", "", "indexes[0].username"),
        ("indexes.0.username", False, "indexes[0].username"),
        ("indexes.0.username", 0, "indexes[0].username"),
        ("indexes.0.secret", "", "indexes[0].secret"),
        ("indexes.0.secret", [], "indexes[0].secret"),
        ("framework_index", "", "framework_index"),
        ("framework_index", False, "framework_index"),
        ("default_index", "", "default_index"),
        ("default_index", 0, "default_index"),
        ("indexes.0.secret", 7, "indexes[0].secret"),
        ("indexes.0.secret", "a b", "indexes[0].secret"),
        ("platform", None, "platform"),
        ("python", 3.11, "python"),
        ("python_platform", None, "python_platform"),
        ("resolver", None, "resolver"),
        ("resolver", 1, "resolver"),
        ("find_links", "/srv/wheels", "find_links"),
        ("find_links", "//", "find_links"),  # text, not a list, though each character is "/"
        ("find_links", {"/srv/a": "x"}, "find_links"),
        ("find_links", ["/srv/a", 5], "find_links"),
        ("find_links", ["/srv/a", "rel/b"], "find_links"),
        ("inputs", ["requirements.txt"], "inputs"),
        ("inputs", {"a.txt": "4" * 64, "../b.txt": "4" * 64}, "inputs"),  # the second input too
        ("inputs", {"a.txt": "4" * 64, "b.txt": "Z" * 64}, "inputs['b.txt']"),
        ("inputs", {"a.txt": 5}, "inputs['a.txt']"),
        ("packages", 5, "packages"),
        ("packages", {"name": "x"}, "packages"),
    ],
)
def test_a_package_lock_value_of_the_wrong_shape_is_refused_with_its_field(
    path: str, value: object, field: str
) -> None:
    raw = _raw_lock()
    raw["indexes"][0].update(username="__token__", secret="corp_tok")
    package_lock_from_dict(dict(raw), "w")  # reads as it is
    _at(path)(raw, value)
    with pytest.raises(LockError) as err:
        package_lock_from_dict(raw, "w")
    assert f"field {field!r}" in err.value.message and "refused" in err.value.message, err.value.message
    assert err.value.message.startswith(f"w: field {field!r}: "), err.value.message  # where, then field


def test_two_indexes_of_one_name_are_refused_and_two_names_read() -> None:
    raw = _raw_lock()
    raw["indexes"] = [CORP.to_dict(), TEAM.to_dict()]
    got = package_lock_from_dict(raw, "w")
    assert [i.name for i in got.indexes] == ["corp", "team"]
    assert [i.url for i in got.indexes] == [CORP.url, TEAM.url]
    raw["indexes"][1]["name"] = "corp"
    with pytest.raises(
        LockError, match=r"field 'indexes': \['corp', 'corp'\] refused \(each index name once\)"
    ):
        package_lock_from_dict(raw, "w")


# --------------------------------------------------------------------------- redaction


def test_every_secret_given_is_redacted_and_recorded_by_its_own_name() -> None:
    from envbuilder.image.secrets import recorded_url, redact

    one = ("corp", "https://pkgs.example/T0KEN-ONE/simple")
    two = ("team", "https://team.example/simple?token=T0KEN-TWO")
    text = f"401 from {one[1]}/six/ and {two[1]}"
    assert redact(text, (one, two)) == "401 from <secret:corp>/six/ and <secret:team>"
    assert recorded_url(two[1], (one, two)) == "<secret:team>"
    assert recorded_url(f" {two[1]} ", (one, two)) == "<secret:team>"
    assert recorded_url("https://other.example/simple", (one, two)) == "https://other.example/simple"


def test_a_password_with_a_raw_at_sign_is_redacted_where_printed_alone() -> None:
    from envbuilder.image.secrets import redact

    secret = (("idx", "https://user:p@ss@h.example/simple"),)
    out = redact(
        "login failed for user with password p@ss, see https://user:p@ss@h.example/simple/x/", secret
    )
    assert (
        "p@ss" not in out and out == "login failed for user with password <secret:idx>, see <secret:idx>/x/"
    )


def test_a_password_or_query_of_exactly_four_characters_is_redacted_on_its_own() -> None:
    from envbuilder.image.secrets import redact

    assert redact("bad password wxyz", (("idx", "https://u:wxyz@h.example/simple"),)) == (
        "bad password <secret:idx>"
    )
    assert redact("query k=vv refused", (("idx", "https://h.example/simple?k=vv"),)) == (
        "query <secret:idx> refused"
    )
    # three characters would redact ordinary words: left alone
    assert redact("bad password xyz", (("idx", "https://u:xyz@h.example/simple"),)) == "bad password xyz"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("<secret:pip_index_url>", True),
        ("<secret:a.b-c_9>", True),
        ("<secret:pip_index_url>\n", False),
        (" <secret:x>", False),
        ("<secret:a b>", False),
        ("<secret:>", False),
        (None, False),
        (5, False),
        (["<secret:x>"], False),
    ],
)
def test_a_secret_reference_is_exactly_secret_name_in_angle_brackets(value: object, expected: bool) -> None:
    from envbuilder.image.secrets import is_secret_ref

    assert is_secret_ref(value) is expected


# --------------------------------------------------------------------------- the lock file's own checks


def _lock_doc() -> dict[str, Any]:
    from dataclasses import replace

    from fake_engine import cpu_package_lock, make_resolution

    from envbuilder.image.lock import lock_from_resolution

    spec = make_spec()
    arm = replace(cpu_package_lock("aarch64"), python_platform="aarch64-manylinux_2_28")
    lock = replace(
        lock_from_resolution(make_resolution(spec), spec.to_dict()), packages=(cpu_package_lock(), arm)
    )
    return lock.to_dict()


def _parse(doc: dict[str, Any]) -> Any:
    from envbuilder.image.lock import parse_lock

    return parse_lock(doc, "t.lock.json")


def test_the_recorded_lock_hash_must_be_the_whole_hash() -> None:
    from envbuilder.errors import SpecError

    doc = _lock_doc()
    good = doc["lock_hash"]
    assert _parse(doc).hash == good and len(good) == 64
    for bad in (good[:12] + ("0" if good[12] != "0" else "1") + good[13:], good + "0", good[:63], ""):
        doc["lock_hash"] = bad
        with pytest.raises(SpecError, match="field 'lock_hash'"):
            _parse(doc)
    doc["lock_hash"] = None  # optional: recomputed
    assert _parse(doc).hash == good


def test_every_package_lock_of_a_lock_is_checked_and_one_per_platform() -> None:
    from envbuilder.errors import SpecError

    doc = _lock_doc()
    assert [p.platform for p in _parse(doc).packages] == ["x86_64", "aarch64"]
    doc["packages"][1]["indexes"] = [{"name": "x\nRUN INJ", "url": CORP.url}]
    doc["lock_hash"] = None
    with pytest.raises(SpecError, match=r"packages\[1\]: field 'indexes\[0\]\.name'"):
        _parse(doc)
    doc = _lock_doc()
    doc["packages"][1] = dict(doc["packages"][0])
    doc["lock_hash"] = None
    with pytest.raises(SpecError, match="field 'packages': two package locks for one platform"):
        _parse(doc)


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("schema_version", 1, "schema_version"),
        ("schema_version", 3, "schema_version"),
        ("spec_dir", "/abs/specs", "spec_dir"),
        ("resolution", {"host": {"driver": 5}}, "resolution.host.driver"),
        ("stack", "id=5", "stack"),
    ],
)
def test_a_lock_field_out_of_shape_is_refused_with_its_name(key: str, value: object, field: str) -> None:
    from envbuilder.errors import SpecError

    doc = _lock_doc()
    doc[key] = value
    doc["lock_hash"] = None
    with pytest.raises(SpecError) as err:
        _parse(doc)
    assert err.value.message.startswith(f"t.lock.json: field {field!r}"), err.value.message
    doc = _lock_doc()
    doc["spec_dir"] = "../specs"
    assert _parse(doc).spec_dir == "../specs"


@pytest.mark.parametrize("raw", ["x86_64", ["x86_64"], None, 5])
def test_a_package_lock_that_is_not_an_object_is_refused(raw: object) -> None:
    with pytest.raises(LockError, match="packages\\[0\\]: expected an object"):
        package_lock_from_dict(raw, "w: packages[0]")


def test_a_secret_url_without_a_host_is_redacted_as_given() -> None:
    from envbuilder.image.secrets import redact

    secret = (("wheels", "file:///srv/T0KEN/simple/"),)
    assert (
        redact("no wheel at file:///srv/T0KEN/simple/ today", secret) == "no wheel at <secret:wheels> today"
    )


def test_a_refused_package_lock_value_keeps_the_package_locks_own_hint() -> None:
    from envbuilder.errors import SpecError

    doc = _lock_doc()
    doc["packages"][0]["python"] = "3"
    doc["lock_hash"] = None
    with pytest.raises(SpecError) as err:
        _parse(doc)
    assert err.value.hint == "re-lock: envbuilder lock SPEC (or build SPEC without --lock)"


def test_a_build_record_without_a_base_digest_reads() -> None:
    from envbuilder.image.lock import BuildRecord

    doc = _lock_doc()
    doc["build"] = BuildRecord(
        image_id="sha256:" + "1" * 64,
        base_image="python:3.11-slim-bookworm",
        base_image_digest=None,
        dockerfile_sha256="3" * 64,
        packages=(),
        tags=(),
    ).to_dict()
    lock = _parse(doc)
    assert lock.build is not None and lock.build.base_image_digest is None


# --------------------------------------------------------------------------- one package row, one pylock
# What `--auto gaps` found unguarded (2026-12-05): check_package's type and range checks, and how
# parse_pylock reads uv's pylock.toml (mirrors of one wheel, sizes, missing hashes, what is no wheel).

GOOD_ROW: dict[str, Any] = {
    "name": "protobuf",
    "version": "5.29.0",
    "wheel": "protobuf-5.29.0-py3-none-any.whl",
    "sha256": "a" * 64,
    "size": 10,
    "urls": ["https://files.example/protobuf-5.29.0-py3-none-any.whl"],
    "group": "project",
}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("name", 5),  # not text: refused, not a TypeError
        ("version", 5),
        ("version", "1.0,>=0"),  # a second specifier that Requirement would parse
        ("version", "not-a-version"),  # the characters of a version, not PEP 440
        ("wheel", 5),
        ("sha256", 5),
        ("size", "12"),
        ("size", -1),
        ("size", True),
        ("urls", "https://files.example/x.whl"),  # not a list
        ("urls", {"https://files.example/x.whl": 1}),  # a JSON object of URLs: iterates as one
        ("urls", [5]),
    ],
)
def test_a_package_row_refuses_each_bad_value(key: str, value: Any) -> None:
    from envbuilder.image.packages import check_package

    with pytest.raises(LockError) as err:
        check_package({**GOOD_ROW, key: value}, "t")
    assert err.value.message.startswith(f"t: field 'packages.{key}': "), err.value.message


def test_a_package_row_takes_a_size_of_zero_and_a_base_rows_empty_wheel_and_sha_only() -> None:
    from envbuilder.image.packages import check_package

    assert check_package({**GOOD_ROW, "size": 0}, "t").size == 0
    base = {**GOOD_ROW, "group": "base", "wheel": "", "sha256": "", "urls": []}
    assert check_package(base, "t").sha256 == ""
    with pytest.raises(LockError):
        check_package({**base, "sha256": "not-hex"}, "t")  # a base row's sha: empty or a digest


def _pylock(*entries: str) -> str:
    return 'lock-version = "1.0"\n' + "\n".join(entries)


def _parse_pylock(text: str) -> Any:
    from envbuilder.image.packages import parse_pylock

    return parse_pylock(text, "project", where="t", python="3.11", python_platform="x86_64-manylinux_2_28")


WHL = "https://files.example/pkgs/sub/x-1.0-py3-none-any.whl"
MIRROR = "https://mirror.example/simple/x/x-1.0-py3-none-any.whl"


def test_a_pylock_that_is_not_toml_is_a_lock_error() -> None:
    with pytest.raises(LockError, match="not valid TOML"):
        _parse_pylock("[[packages]\nname = ")


@pytest.mark.parametrize("kind", ["sdist", "directory", "archive", "vcs"])
def test_a_package_without_a_wheel_is_refused_naming_what_it_is(kind: str) -> None:
    text = _pylock("[[packages]]", 'name = "x"', 'version = "1.0"', f'{kind} = {{ url = "https://e/x" }}')
    with pytest.raises(LockError, match=rf"\({kind}\)"):
        _parse_pylock(text)


def test_mirrors_of_one_wheel_share_one_digest_and_give_the_size_any_of_them_has() -> None:
    same = _pylock(
        "[[packages]]", 'name = "x"', 'version = "1.0"',
        f'wheels = [{{ {URL}, hashes = {{ sha256 = "{"a" * 64}" }} }},'
        f' {{ url = "{MIRROR}", size = 123, hashes = {{ sha256 = "{"a" * 64}" }} }}]',
    )  # fmt: skip
    (pkg,) = _parse_pylock(same)
    assert pkg.wheel == "x-1.0-py3-none-any.whl" and pkg.size == 123 and pkg.urls == (WHL, MIRROR)
    differ = same.replace(
        f'size = 123, hashes = {{ sha256 = "{"a" * 64}"', f'size = 123, hashes = {{ sha256 = "{"b" * 64}"'
    )
    with pytest.raises(LockError, match="2 different sha256 digests"):
        _parse_pylock(differ)


def test_mirrors_that_disagree_on_a_wheels_size_are_refused_naming_both_sizes() -> None:
    """One sha256 is one file of one size: the lock records facts, so a mirror whose size
    contradicts the other's is an error, whichever is listed first (--ops third, 2026-12-05)."""
    digest = f'hashes = {{ sha256 = "{"a" * 64}" }}'
    for first, second in ((123, 456), (456, 123)):
        text = _pylock(
            "[[packages]]", 'name = "x"', 'version = "1.0"',
            f'wheels = [{{ {URL}, size = {first}, {digest} }},'
            f' {{ url = "{MIRROR}", size = {second}, {digest} }}]',
        )  # fmt: skip
        with pytest.raises(LockError) as err:
            _parse_pylock(text)
        assert err.value.message == (
            "t: x-1.0-py3-none-any.whl is served with 2 different sizes (123, 456 bytes) under one sha256"
        ), err.value.message
        assert err.value.hint
    agree = _pylock(
        "[[packages]]", 'name = "x"', 'version = "1.0"',
        f'wheels = [{{ {URL}, size = 123, {digest} }}, {{ url = "{MIRROR}", size = 123, {digest} }}]',
    )  # fmt: skip
    (pkg,) = _parse_pylock(agree)
    assert pkg.size == 123 and pkg.urls == (WHL, MIRROR)


def test_a_wheel_without_hashes_is_refused_not_a_crash() -> None:
    text = _pylock("[[packages]]", 'name = "x"', 'version = "1.0"', f'wheels = [{{ url = "{WHL}" }}]')
    with pytest.raises(LockError):
        _parse_pylock(text)


# --------------------------------------------------------------------------- the second operator set
# benchmarks/mutants.py --auto lock --ops new on main (2026-12-05): dropped calls, swapped arguments.


@pytest.mark.parametrize("value", ["ab+cd.ef", "p(ss[w]rd", "x" * 3 + "|" + "y" * 3])
def test_a_secret_with_regex_characters_is_redacted_as_it_is(value: str) -> None:
    assert redact(f"uv: {value} refused", (("tok", value),)) == "uv: <secret:tok> refused"


def test_the_password_of_a_secret_url_is_redacted_alone_even_with_regex_characters() -> None:
    secrets = (("idx", "https://u:pa+ss.wd@pkgs.example/simple"),)
    assert redact("auth failed with pa+ss.wd", secrets) == "auth failed with <secret:idx>"
    assert redact("auth failed with passswd", secrets) == "auth failed with passswd"


def test_a_secret_read_with_a_trailing_newline_is_redacted_and_recorded_by_name() -> None:
    assert redact("token s3cr3t-tok sent", (("s", "s3cr3t-tok\n"),)) == "token <secret:s> sent"
    url = "https://pkgs.example/TOKEN123/simple/"  # redact alone would leave the slash: "<secret:mirror>/"
    assert recorded_url(url, (("mirror", url + "\n"),)) == "<secret:mirror>"


def test_a_python_platform_of_another_platform_is_refused_naming_it() -> None:
    raw = _raw_lock()
    raw["python_platform"] = "aarch64-manylinux_2_28"
    with pytest.raises(LockError) as err:
        package_lock_from_dict(raw, "w")
    assert err.value.message == (
        f"w: field 'python_platform': 'aarch64-manylinux_2_28' refused (a target for {raw['platform']})"
    )


def test_a_lock_records_its_inputs_sorted_whatever_order_the_file_gives() -> None:
    raw = _raw_lock()
    raw["inputs"] = {"b.txt": "b" * 64, "a.txt": "a" * 64}
    assert package_lock_from_dict(raw, "w").inputs == (("a.txt", "a" * 64), ("b.txt", "b" * 64))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema_version="x"), "field 'schema_version': expected an integer"),
        (lambda d: d["resolution"].update(host=5), "field 'resolution.host': expected an object"),
        (lambda d: d.update(stack=5), "field 'stack': expected a JSON object"),
    ],
)
def test_a_lock_field_of_the_wrong_type_names_the_field_and_the_type(change: Any, message: str) -> None:
    doc = _lock_doc()
    change(doc)
    with pytest.raises(SpecError) as err:
        _parse(doc)
    assert err.value.message == f"t.lock.json: {message}"


def test_a_lock_that_is_no_object_is_refused_as_such() -> None:
    with pytest.raises(SpecError) as err:
        _parse([])  # type: ignore[arg-type]
    assert err.value.message == "t.lock.json: field '<top>': expected a JSON object"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("name", "protobuf\n"),  # `$` matches before a final newline: the whole value must match
        ("name", "protobuf\nrequests"),
        ("version", "5.29.0\n"),
        ("sha256", "a" * 64 + "\n"),
        ("sha256", "a" * 65),
        ("urls", ["https://files.example/protobuf-5.29.0-py3-none-any.whl\n"]),
    ],
)
def test_a_package_value_with_anything_after_it_is_refused(key: str, value: Any) -> None:
    from envbuilder.image.packages import check_package

    with pytest.raises(LockError) as err:
        check_package({**GOOD_ROW, key: value}, "t")
    assert err.value.message.startswith(f"t: field 'packages.{key}': "), err.value.message


def test_a_pylock_without_packages_locks_none() -> None:
    assert _parse_pylock('lock-version = "1.0"\n') == []


@pytest.mark.parametrize("missing", ["name", "version"])
def test_a_pylock_entry_without_its_name_or_version_is_refused(missing: str) -> None:
    lines = {"name": 'name = "x"', "version": 'version = "1.0"'}
    del lines[missing]
    wheel = f'wheels = [{{ {URL}, hashes = {{ sha256 = "{"a" * 64}" }} }}]'
    with pytest.raises(LockError) as err:
        _parse_pylock(_pylock("[[packages]]", *lines.values(), wheel))
    assert f"field 'packages.{missing}': ''" in err.value.message, err.value.message


def test_a_pylock_wheel_without_a_url_or_digest_is_refused_as_empty() -> None:
    no_digest = _pylock("[[packages]]", 'name = "x"', 'version = "1.0"', f'wheels = [{{ url = "{WHL}" }}]')
    with pytest.raises(LockError) as err:
        _parse_pylock(no_digest)
    assert "field 'packages.sha256': ''" in err.value.message, err.value.message


def test_a_package_row_without_urls_has_none() -> None:
    from envbuilder.image.packages import check_package

    row = {k: v for k, v in GOOD_ROW.items() if k != "urls"}
    assert check_package(row, "t").urls == ()


def test_a_pylock_wheel_without_a_url_is_refused_as_an_empty_file_name() -> None:
    text = _pylock(
        "[[packages]]",
        'name = "x"',
        'version = "1.0"',
        f'wheels = [{{ hashes = {{ sha256 = "{"a" * 64}" }} }}]',
    )
    with pytest.raises(LockError) as err:
        _parse_pylock(text)
    assert "field 'packages.wheel': '' refused" in err.value.message, err.value.message


# --------------------------------------------------------------------------- the seventh operator set
# benchmarks/mutants.py --auto gaps --ops seventh (2026-12-05): wrong types, bounds, defaults.


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "1" * 5000,  # past Python's digit limit: a plain ValueError, not TOMLDecodeError
        "x = " + "[" * 5000 + "]" * 5000,  # past the interpreter's stack: RecursionError
    ],
)
def test_a_pylock_tomllib_cannot_read_is_a_lock_error_not_a_traceback(text: str) -> None:
    with pytest.raises(LockError, match=r"^t: not valid TOML"):
        _parse_pylock(_pylock(text))


URL = f'url = "{WHL}"'
GOOD_WHEEL = f'{{ {URL}, size = 3, hashes = {{ sha256 = "{"a" * 64}" }} }}'


@pytest.mark.parametrize(
    ("lines", "what"),
    [
        (['packages = "x"'], "packages is not an array of tables"),
        (["packages = [1]"], "packages[0] is not a table"),
        (["[[packages]]", "name = 12", f"wheels = [{GOOD_WHEEL}]"], "packages[0].name is not a string"),
        (["[[packages]]", 'name = "x"', "version = 1.0", f"wheels = [{GOOD_WHEEL}]"], "version is not"),
        (["[[packages]]", 'name = "x"', 'wheels = "x.whl"'], "packages[0].wheels is not an array"),
        (["[[packages]]", 'name = "x"', "wheels = [1]"], "packages[0].wheels[0] is not a table"),
        (["[[packages]]", 'name = "x"', "wheels = [{ url = 5 }]"], "wheels[0].url is not a string"),
        (["[[packages]]", 'name = "x"', f'wheels = [{{ {URL}, hashes = "a" }}]'], "hashes is not"),
        (
            ["[[packages]]", 'name = "x"', f"wheels = [{{ {URL}, hashes = {{ sha256 = 5 }} }}]"],
            "hashes",
        ),
        (
            ["[[packages]]", 'name = "x"', f"wheels = [{{ {URL}, size = 1.5 }}]"],
            "size is not a number",
        ),
        (
            ["[[packages]]", 'name = "x"', f"wheels = [{{ {URL}, size = -1 }}]"],
            "size is not a number",
        ),
        (
            ["[[packages]]", 'name = "x"', f"wheels = [{{ {URL}, size = true }}]"],
            "size is not a number",
        ),
    ],
)
def test_a_pylock_of_the_wrong_types_is_refused_by_name_not_a_traceback(lines: list[str], what: str) -> None:
    """A pylock.toml uv did not write (damaged, edited): a string where an array of tables is
    read, a number where a string is, a fraction of a byte. Each was an AttributeError or
    TypeError traceback, or a package named "12" (2026-12-05, --ops seventh)."""
    with pytest.raises(LockError, match=r"^t: not a pylock\.toml as uv writes it: ") as err:
        _parse_pylock(_pylock(*lines))
    assert what in err.value.message


def test_a_package_with_neither_a_wheel_nor_a_source_is_said_to_have_no_wheel() -> None:
    with pytest.raises(LockError, match=r"is not locked to a wheel \(no wheel\)"):
        _parse_pylock(_pylock("[[packages]]", 'name = "x"', 'version = "1.0"'))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("sha256", "a" * 63),
        ("sha256", "a" * 65),
        ("name", "x-"),  # a dash with nothing after it
        ("version", "1" + ".0" * 32),  # 65 characters: a valid PEP 440 version, past the cap
        ("size", 1.5),
        ("urls", None),  # a null is no list (it was read as none)
        ("urls", ""),  # nor is an empty string (it iterates as no URL)
        ("urls", ["https://"]),  # a scheme with nothing after it
        ("urls", ["https://" + "x" * 2001]),  # past the 2000 characters after the scheme
        ("urls", ["<secret:>/simple/x.whl"]),  # a secret of no name
        ("urls", ["<secret:" + "s" * 65 + ">/x.whl"]),  # a secret name past 64 characters
    ],
)
def test_a_package_row_refuses_each_value_past_a_bound(key: str, value: Any) -> None:
    from envbuilder.image.packages import check_package

    with pytest.raises(LockError) as err:
        check_package({**GOOD_ROW, key: value}, "t")
    assert err.value.message.startswith(f"t: field 'packages.{key}': "), err.value.message


def test_a_package_row_takes_each_value_at_its_bound() -> None:
    from envbuilder.image.packages import check_package

    for key, value in (
        ("version", "1" + ".0" * 31 + "1"),  # 64 characters
        ("urls", ["https://" + "x" * 2000]),
        ("urls", ["<secret:" + "s" * 64 + ">/x.whl"]),
        ("urls", ["<secret:s>/x.whl"]),
    ):
        assert getattr(check_package({**GOOD_ROW, key: value}, "t"), key) == (
            tuple(value) if isinstance(value, list) else value
        )
