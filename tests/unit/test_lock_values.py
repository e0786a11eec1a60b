"""Every string of a lock file that reaches a template or a command line is checked when the lock
is read, as the spec's values are (issue 23 item 1, hostile-inputs D1): the fuzzer's payloads in
each field are refused with one line naming the field and the value, exit 10."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_engine import lock_doc, make_resolution, make_spec

from envbuilder.errors import LockError, SpecError
from envbuilder.image.lock import parse_lock, read_lock, write_lock
from envbuilder.image.packages import BASE_RESOLVER, package_lock_from_dict
from envbuilder.image.render import RenderOptions, render_dockerfile

# What the fuzzer injected with (D1): a new instruction, a closed JSON array then one, a bare
# newline (a bogus instruction), a shell command inside the RUN.
PAYLOADS = ["x\nRUN INJ", 'a"]\nRUN INJ', "\n", "x; INJ"]

Doc = dict[str, Any]


def _doc() -> Doc:
    return lock_doc()


def _pl(doc: Doc) -> Doc:
    return doc["packages"][0]  # type: ignore[no-any-return]


def _set(key: str) -> Callable[[Doc, object], None]:
    return lambda d, v: _pl(d).update({key: v})


def _index(key: str) -> Callable[[Doc, object], None]:
    return lambda d, v: _pl(d)["indexes"][0].update({key: v})


def _package(key: str) -> Callable[[Doc, object], None]:
    return lambda d, v: _pl(d)["packages"][0].update({key: v})


def _build(key: str) -> Callable[[Doc, object], None]:
    return lambda d, v: d["build"].update({key: v})


FIELDS: dict[str, Callable[[Doc, object], None]] = {
    "indexes[0].name": _index("name"),
    "indexes[0].url": _index("url"),
    "indexes[0].username": _index("username"),
    "indexes[0].secret": _index("secret"),
    "default_index": _set("default_index"),
    "framework_index": _set("framework_index"),
    "python": _set("python"),
    "python_platform": _set("python_platform"),
    "resolver": _set("resolver"),
    "platform": _set("platform"),
    "find_links": lambda d, v: _pl(d).update(find_links=[v]),
    "inputs": lambda d, v: _pl(d).update(inputs={v: "4" * 64}),
    "inputs['requirements.txt']": lambda d, v: _pl(d).update(inputs={"requirements.txt": v}),
    "packages.name": _package("name"),
    "packages.version": _package("version"),
    "packages.wheel": _package("wheel"),
    "packages.sha256": _package("sha256"),
    "packages.group": _package("group"),
    "packages.urls": lambda d, v: _pl(d)["packages"][0].update(urls=[v]),
    "build.base_image": _build("base_image"),
    "build.base_image_digest": _build("base_image_digest"),
    "build.image_id": _build("image_id"),
    "build.dockerfile_sha256": _build("dockerfile_sha256"),
}


def test_the_unmodified_lock_reads(tmp_path: Path) -> None:
    path = tmp_path / "ok.lock.json"
    path.write_text(json.dumps(_doc()))
    lock = read_lock(path)
    assert lock.packages[0].indexes[0].name == "corp" and lock.build is not None


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("field", sorted(FIELDS))
def test_a_hostile_value_in_any_lock_field_is_refused(tmp_path: Path, field: str, payload: str) -> None:
    doc = _doc()
    FIELDS[field](doc, payload)
    path = tmp_path / "evil.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    message = err.value.message
    assert err.value.exit_code == 10
    assert str(path) in message and f"field {field!r}" in message
    assert "refused" in message and repr(payload)[:20] in message
    assert "\n" not in message  # one line: the payload is quoted (repr), never printed raw
    assert err.value.hint


def test_the_d1_index_name_never_reaches_a_dockerfile(tmp_path: Path) -> None:
    """The reproducer's lock: a spec index renamed into `x; true\\nUSER root\\nRUN touch ...`.
    It was rendered as its own instructions; now the lock is not read at all."""
    doc = _doc()
    evil = "x; true\nUSER root\nRUN touch /pwned-by-lock && echo PWNED-MARKER-7731\nRUN echo "
    _pl(doc)["indexes"] = [{"name": evil, "url": "https://mirror.example.org/simple"}]
    _pl(doc)["packages"][0]["group"] = "project"
    path = tmp_path / "evil.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError, match=r"field 'indexes\[0\]\.name'"):
        read_lock(path)
    # The same lock without the bad name renders, and the index name is a word of the RUN.
    _pl(doc)["indexes"][0]["name"] = "mirror"
    path.write_text(json.dumps(doc))
    lock = read_lock(path)
    options = RenderOptions(package_locks=lock.packages)
    text = render_dockerfile(make_spec(installer="uv"), lock.stack, options)
    assert "--index mirror=https://mirror.example.org/simple" in text and "PWNED" not in text


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: _pl(d)["indexes"].append(dict(_pl(d)["indexes"][0])), "indexes"),
        (lambda d: _pl(d)["indexes"][0].update(name="pypi"), "indexes[0].name"),
        (lambda d: _pl(d)["indexes"][0].update(url="https://u:tok@pkgs.example/simple"), "indexes[0].url"),
        (lambda d: _pl(d)["indexes"][0].update(url="https://pkgs.example/simple?token=x"), "indexes[0].url"),
        (lambda d: _pl(d)["indexes"][0].update(extra=1), "indexes[0]"),
        (lambda d: _pl(d).update(default_index="http://mirror.example/simple"), "default_index"),
        (lambda d: _pl(d).update(framework_index="<secret:a b>"), "framework_index"),
        (lambda d: _pl(d).update(find_links=["relative/dir"]), "find_links"),
        (lambda d: _pl(d).update(inputs={"../outside.txt": "4" * 64}), "inputs"),
        (lambda d: _pl(d).update(inputs={"/etc/passwd": "4" * 64}), "inputs"),
        (lambda d: _pl(d).update(python="3"), "python"),
        (lambda d: _pl(d).update(python_platform="aarch64-manylinux_2_28"), "python_platform"),
        (lambda d: _pl(d)["packages"][0].update(wheel="filelock.whl"), "packages.wheel"),
        (lambda d: _pl(d)["packages"][0].update(wheel="../x-1-py3-none-any.whl"), "packages.wheel"),
        (lambda d: _pl(d)["packages"][0].update(sha256="A" * 64), "packages.sha256"),
        (lambda d: _pl(d)["packages"][0].update(urls=["ftp://h/x.whl"]), "packages.urls"),
        (lambda d: _pl(d)["packages"][0].update(size=True), "packages.size"),
        # falsy, but not absent: a lock's "size": false or "" is no number of bytes (issue 23)
        (lambda d: _pl(d)["packages"][0].update(size=False), "packages.size"),
        (lambda d: _pl(d)["packages"][0].update(size=""), "packages.size"),
        (lambda d: d["build"].update(base_image="Bad Image"), "build.base_image"),
        # the framework index `envbuilder lock LOCK` resolves from again (it wrote "" into the
        # package lock, which reading refused; null is "none")
        (lambda d: d["stack"].update(index_url=""), "stack.index_url"),
        (lambda d: d["stack"].update(index_url="https://u:pw@download.example/whl"), "stack.index_url"),
    ],
)
def test_values_the_spec_would_refuse_are_refused_in_a_lock(
    tmp_path: Path, mutate: Callable[[Doc], None], field: str
) -> None:
    message = _refusal(tmp_path, mutate).message
    assert f"field {field!r}" in message and "refused" in message


def _refusal(tmp_path: Path, mutate: Callable[[Doc], None]) -> SpecError:
    """The SpecError that reading the lock `mutate` made of a good one gives."""
    doc = _doc()
    mutate(doc)
    path = tmp_path / "bad.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    return err.value


def test_two_package_locks_for_one_platform_are_refused_whatever_their_targets(tmp_path: Path) -> None:
    # the same platform locked twice (manylinux_2_28 and manylinux_2_17): the build could install
    # either, so the lock is refused by its platform, not by the resolver's target
    def twice(doc: Doc) -> None:
        doc["packages"].append({**_pl(doc), "python_platform": "x86_64-manylinux_2_17"})

    assert "two package locks for one platform" in _refusal(tmp_path, twice).message


def test_a_locks_package_lock_is_the_one_of_the_platform_asked_for(tmp_path: Path) -> None:
    doc = _doc()
    doc["packages"].append({**_pl(doc), "platform": "aarch64", "python_platform": "aarch64-manylinux_2_28"})
    path = tmp_path / "two.lock.json"
    path.write_text(json.dumps(doc))
    lock = read_lock(path)
    for platform, target in (("x86_64", "x86_64-manylinux_2_28"), ("aarch64", "aarch64-manylinux_2_28")):
        got = lock.package_lock(platform)
        assert got is not None and (got.platform, got.python_platform) == (platform, target)
    assert lock.package_lock("riscv64") is None


def test_package_lock_from_dict_raises_lock_error_with_the_field() -> None:
    raw = _pl(_doc())
    raw["indexes"][0]["name"] = "x\nRUN INJ"
    with pytest.raises(LockError, match=r"field 'indexes\[0\]\.name': 'x\\nRUN INJ' refused"):
        package_lock_from_dict(raw, "my.lock.json: packages[0]")


def test_a_long_value_is_cut_short_in_the_message() -> None:
    raw = _pl(_doc())
    raw["indexes"][0]["name"] = "x" * 5000
    with pytest.raises(LockError) as err:
        package_lock_from_dict(raw, "w")
    assert len(err.value.message) < 200 and "..." in err.value.message


def test_a_secret_reference_is_a_valid_mirror_and_round_trips(tmp_path: Path) -> None:
    doc = _doc()
    _pl(doc).update(default_index="<secret:pip_index_url>", framework_index="<secret:pip_index_url>")
    _pl(doc)["packages"][0]["urls"] = ["<secret:pip_index_url>/filelock/filelock-4.3.1-py3-none-any.whl"]
    path = tmp_path / "s.lock.json"
    path.write_text(json.dumps(doc))
    lock = read_lock(path)
    assert lock.packages[0].default_index == "<secret:pip_index_url>"
    write_lock(tmp_path / "again.lock.json", lock)
    assert read_lock(tmp_path / "again.lock.json") == lock


# --------------------------------------------------------------------------- set G's survivors (h13)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: _pl(d)["packages"][0].update(wheel="", group="framework"), "packages.wheel"),
        (lambda d: _pl(d)["packages"][0].update(wheel="", group="project"), "packages.wheel"),
        (lambda d: _pl(d)["packages"][0].update(sha256="", group="framework"), "packages.sha256"),
        (lambda d: _pl(d)["packages"][0].update(sha256="", group="project"), "packages.sha256"),
        (
            lambda d: _pl(d)["packages"][0].update(urls=["https://h/x-1-py3-none-any.whl", "ftp://h/x.whl"]),
            "packages.urls",
        ),
        (lambda d: _pl(d)["packages"][0].update(urls=["https://h/x-1-py3-none-any.whl", 5]), "packages.urls"),
        (lambda d: _pl(d).update(inputs={"sub/../../outside.txt": "4" * 64}), "inputs"),
        (lambda d: _pl(d).update(inputs={"sub/..": "4" * 64}), "inputs"),
    ],
)
def test_a_value_refused_past_the_first_item_or_outside_the_base_group(
    tmp_path: Path, mutate: Callable[[Doc], None], field: str
) -> None:
    doc = _doc()
    mutate(doc)
    path = tmp_path / "bad.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert f"field {field!r}" in err.value.message and "refused" in err.value.message


def test_the_honest_edges_of_those_values_read(tmp_path: Path) -> None:
    doc = _doc()
    pkg = _pl(doc)["packages"][0]
    base = {**pkg, "name": "numpy", "wheel": "", "sha256": "", "urls": [], "group": "base"}
    pkg["urls"] = ["https://h/a/x-1-py3-none-any.whl", "file:///srv/wheels/x-1-py3-none-any.whl"]
    _pl(doc)["packages"].append(base)
    _pl(doc)["inputs"] = {"sub/dir/requirements.txt": "4" * 64, "a..b.txt": "5" * 64}
    path = tmp_path / "ok.lock.json"
    path.write_text(json.dumps(doc))
    lock = read_lock(path)
    got = lock.packages[0]
    assert [p.group for p in got.packages][-1] == "base" and len(got.packages[0].urls) == 2
    assert dict(got.inputs) == {"a..b.txt": "5" * 64, "sub/dir/requirements.txt": "4" * 64}


# --------------------------------------------------------------------------- set H's survivors (h13)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: _pl(d).update(inputs={"requirements.txt": "Z" * 64}), "inputs['requirements.txt']"),
        (lambda d: _pl(d).update(inputs={"requirements.txt": "A" * 64}), "inputs['requirements.txt']"),
        (lambda d: _pl(d)["indexes"][0].update(url="<secret:corp_url>"), "indexes[0].url"),
        (lambda d: d["build"].update(dockerfile_sha256="3" * 64 + "0"), "build.dockerfile_sha256"),
        (lambda d: d["build"].update(dockerfile_sha256="3" * 64 + " "), "build.dockerfile_sha256"),
    ],
)
def test_values_refused_by_their_whole_shape_not_their_length_or_start(
    tmp_path: Path, mutate: Callable[[Doc], None], field: str
) -> None:
    doc = _doc()
    mutate(doc)
    path = tmp_path / "bad.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert f"field {field!r}" in err.value.message and "refused" in err.value.message


# --------------------------------------------------------------------------- set I's survivors (h13)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: _pl(d)["indexes"][0].update(username="u\n"), "indexes[0].username"),
        (lambda d: _pl(d).update(resolver="none: RUN x"), "resolver"),
        (lambda d: _pl(d).update(resolver=BASE_RESOLVER + "\nRUN x"), "resolver"),
        (lambda d: _pl(d)["packages"][0].update(name="FileLock"), "packages.name"),
        (lambda d: _pl(d).update(find_links=["/srv/wheels\nRUN x"]), "find_links"),
        (lambda d: _pl(d).update(find_links=["/srv/\twheels"]), "find_links"),
        (lambda d: _pl(d).update(find_links=["/srv/wheels", "/srv/2nd\nRUN x"]), "find_links"),  # each one
        (
            lambda d: d["build"].update(base_image_digest="sha256:" + "2" * 64 + "\nRUN x"),
            "build.base_image_digest",
        ),
        # a reference that pins nothing is no digest (seen in the blind sets: 4 mutants there)
        (lambda d: d["build"].update(base_image_digest="evil/base:latest"), "build.base_image_digest"),
        (
            lambda d: d["build"].update(base_image_digest="python:3.11-slim-bookworm"),
            "build.base_image_digest",
        ),
        (lambda d: d["build"].update(base_image_digest="2" * 64), "build.base_image_digest"),  # no sha256:
        (
            lambda d: d["build"].update(base_image_digest="base@sha256:" + "2" * 64 + " ; RUN x"),
            "build.base_image_digest",
        ),
        (lambda d: _pl(d).update(framework_index="<secret:pip_index_url>\n"), "framework_index"),
    ],
)
def test_values_refused_to_their_end_and_in_their_canonical_form(
    tmp_path: Path, mutate: Callable[[Doc], None], field: str
) -> None:
    doc = _doc()
    mutate(doc)
    path = tmp_path / "bad.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert f"field {field!r}" in err.value.message and "refused" in err.value.message


def test_the_honest_forms_of_those_values_read(tmp_path: Path) -> None:
    doc = _doc()
    _pl(doc)["indexes"][0]["username"] = "__token__"
    _pl(doc)["resolver"] = BASE_RESOLVER
    _pl(doc)["find_links"] = ["/srv/wheels dir"]
    doc["build"]["base_image_digest"] = "sha256:" + "2" * 64
    _pl(doc)["framework_index"] = "<secret:pip_index_url>"
    path = tmp_path / "ok.lock.json"
    path.write_text(json.dumps(doc))
    lock = read_lock(path)
    assert lock.packages[0].resolver == BASE_RESOLVER and lock.packages[0].find_links == ("/srv/wheels dir",)
    doc["build"]["base_image_digest"] = "127.0.0.1:5000/base:1@sha256:" + "2" * 64  # what _pin_base writes
    path.write_text(json.dumps(doc))
    assert read_lock(path).build is not None


# --------------------------------------------------------------------------- third operator set (--ops third)


def test_an_index_read_from_a_lock_keeps_its_user_and_its_secret() -> None:
    """What authenticates the build's install (username, the BuildKit secret's id) survives the
    lock's reading, as written."""
    doc = _doc()
    (index,) = package_lock_from_dict(_pl(doc), "x.lock.json").indexes
    assert (index.name, index.username, index.secret) == ("corp", "u", "tok")


@pytest.mark.parametrize(("length", "ok"), [(4096, True), (4097, False)])
def test_a_find_links_path_is_taken_up_to_4096_characters(length: int, ok: bool) -> None:
    """PATH_MAX (4096) is the longest folder a find-links entry names; one more is refused."""
    doc = _doc()
    _pl(doc)["find_links"] = ["/" + "w" * (length - 1)]
    if ok:
        assert package_lock_from_dict(_pl(doc), "x.lock.json").find_links == ("/" + "w" * (length - 1),)
    else:
        with pytest.raises(LockError, match="find_links"):
            package_lock_from_dict(_pl(doc), "x.lock.json")


def test_the_lock_hash_of_a_stack_without_package_locks_has_no_packages_entry() -> None:
    """The hash of a lock with no package lock is the one images built before package locks
    carry in their label: the spec and the stack only."""
    from envbuilder.hashing import sha256_hex
    from envbuilder.image.lock import lock_hash

    spec = make_spec()
    stack = make_resolution(spec).stack
    assert stack is not None
    assert lock_hash(stack, spec.to_dict()) == sha256_hex({"spec": spec.to_dict(), "stack": stack.to_dict()})


def test_a_refused_lock_names_its_file_and_field_as_fields(tmp_path: Path) -> None:
    """`--json` errors carry the place apart from the message: the lock's path as `file`, the
    refused field as `field` (what an editor or CI annotation jumps to)."""
    doc = _doc()
    doc["schema_version"] = 999
    path = tmp_path / "old.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as caught:
        read_lock(path)
    assert caught.value.fields() == {"file": str(path), "field": "schema_version"}


def test_a_lock_read_back_keeps_the_path_of_its_spec(tmp_path: Path) -> None:
    """`build --lock` names the spec by the path it was read from (its errors, the rewritten
    lock), not by the lock's own path."""
    doc = _doc()
    doc["spec_path"] = "images/train.yaml"
    path = tmp_path / "train.lock.json"
    path.write_text(json.dumps(doc))
    lock = read_lock(path)
    assert lock.spec_path == "images/train.yaml"
    write_lock(tmp_path / "again.lock.json", lock)
    assert json.loads((tmp_path / "again.lock.json").read_text())["spec_path"] == "images/train.yaml"


# ------------------------------------------------------------------------- fourth operator set (--ops fourth)

# A valid value followed by a line break (what `$` lets through before the text's last newline)
# or by more text: each reaches a Dockerfile or uv's command line, so the whole value is checked.
GOOD = "4" * 64


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: _pl(d)["indexes"][0].update(url="https://pkgs.example/simple\n"), "indexes[0].url"),
        (lambda d: _pl(d).update(default_index="https://pypi.org/simple\n"), "default_index"),
        (lambda d: _pl(d).update(framework_index="https://pypi.org/simple\nRUN curl x"), "framework_index"),
        (lambda d: _pl(d)["indexes"][0].update(name="corp\n"), "indexes[0].name"),
        (lambda d: _pl(d)["indexes"][0].update(secret="tok\n"), "indexes[0].secret"),
        (lambda d: _pl(d).update(python="3.11\n"), "python"),
        (lambda d: _pl(d).update(python_platform="x86_64-manylinux_2_28\n"), "python_platform"),
        (lambda d: _pl(d).update(resolver="uv 0.13.9\n"), "resolver"),
        (lambda d: _pl(d).update(inputs={"requirements.txt\n": GOOD}), "inputs"),
        (lambda d: _pl(d).update(inputs={"requirements.txt": GOOD + "\n"}), "inputs['requirements.txt']"),
        (lambda d: _pl(d)["packages"][0].update(sha256=GOOD + "\n"), "packages.sha256"),
        (lambda d: d["build"].update(image_id="sha256:" + "1" * 64 + "\nRUN x"), "build.image_id"),
        (lambda d: d["build"].update(image_id="sha256:" + "1" * 64 + "0"), "build.image_id"),
        (lambda d: d["build"].update(image_id="sha256:" + "1" * 64 + "\n"), "build.image_id"),
    ],
)
def test_a_valid_value_followed_by_a_line_break_or_more_text_is_refused(
    tmp_path: Path, mutate: Callable[[Doc], None], field: str
) -> None:
    refused = _refusal(tmp_path, mutate)
    message = refused.message
    assert f"field {field!r}" in message and "refused" in message and "\n" not in message
    assert refused.exit_code == 10


def test_an_index_url_refusal_names_a_secret_reference_only_where_one_is_allowed() -> None:
    """A spec index's URL is an https:// URL, never `<secret:NAME>` (the build could not fill
    it in); a mirror (framework_index, default_index) may be either: the message says which."""
    doc = _doc()
    _pl(doc)["indexes"][0]["url"] = "ftp://pkgs.example/simple"
    with pytest.raises(LockError) as err:
        package_lock_from_dict(_pl(doc), "x.lock.json")
    assert "refused (an https:// index URL without credentials or query)" in err.value.message
    assert "secret" not in err.value.message
    doc = _doc()
    _pl(doc)["default_index"] = "ftp://pypi.example/simple"
    with pytest.raises(LockError) as err:
        package_lock_from_dict(_pl(doc), "x.lock.json")
    assert "(an https:// index URL without credentials or query or <secret:NAME>)" in err.value.message


def test_a_lock_made_without_indexes_reads_with_none() -> None:
    """`--no-index` (find-links only) records no framework or default index: null in the lock."""
    doc = _doc()
    _pl(doc).update(framework_index=None, default_index=None)
    got = package_lock_from_dict(_pl(doc), "x.lock.json")
    assert (got.framework_index, got.default_index) == (None, None)


def test_a_package_lock_without_the_optional_lists_reads_with_them_empty() -> None:
    """indexes, find_links and inputs came after the first package locks: a lock without them
    (or hand-trimmed) reads as one with none, not as a refused or crashed lock."""
    doc = _doc()
    for key in ("indexes", "find_links", "inputs"):
        del _pl(doc)[key]
    got = package_lock_from_dict(_pl(doc), "x.lock.json")
    assert (got.indexes, got.find_links, got.inputs) == ((), (), ())
    assert got.packages[0].name == _pl(doc)["packages"][0]["name"]


@pytest.mark.parametrize("entry", ["filelock", 7, ["filelock"], None])
def test_a_package_entry_that_is_no_object_is_refused_in_one_line(tmp_path: Path, entry: object) -> None:
    doc = _doc()
    _pl(doc)["packages"].append(entry)
    path = tmp_path / "bad.lock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SpecError) as err:
        read_lock(path)
    assert "field 'packages.group'" in err.value.message and "\n" not in err.value.message


def test_a_lock_without_package_locks_reads(tmp_path: Path) -> None:
    """`resolve --lock` locks a stack only: no `packages` key at all, as before package locks."""
    doc = _doc()
    del doc["packages"]
    path = tmp_path / "stack.lock.json"
    path.write_text(json.dumps(doc))
    assert read_lock(path).packages == ()


def test_a_lock_with_its_stack_inside_the_resolution_reads(tmp_path: Path) -> None:
    """A lock whose stack sits only in its `resolution` (where `resolve --json` puts it, as the
    first locks did) reads the stack from there."""
    doc = _doc()
    stack = doc.pop("stack")
    doc["resolution"]["stack"] = stack
    path = tmp_path / "old.lock.json"
    path.write_text(json.dumps(doc))
    assert read_lock(path).stack.to_dict() == stack


def test_a_lock_document_read_from_no_file_is_named_lock_in_its_errors() -> None:
    """parse_lock of a document with no file behind it (a lock carried in another document) names
    it `<lock>`, so the message never starts with a bare `: field`."""
    doc = _doc()
    doc["schema_version"] = 999
    with pytest.raises(SpecError) as err:
        parse_lock(doc)
    assert err.value.message.startswith("<lock>: field 'schema_version'")


# --------------------------------------------------------------------------- the seventh operator set
# benchmarks/mutants.py --auto lock --ops seventh (2026-12-05): values one past their patterns'
# bounds, a null where a list or an object is read, an empty object where a section is.


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("python", "3."),
        ("python", "3.123"),
        ("python_platform", "x86_64-manylinux_2_"),
        ("python_platform", "x86_64-manylinux_2_1234"),
        ("resolver", "uv 1" + "a" * 41),
        ("default_index", "<secret:" + "s" * 65 + ">"),
        ("inputs['requirements.txt']", "4" * 63),
        ("build.image_id", "sha256:" + "1" * 63),
        ("build.dockerfile_sha256", "3" * 63),
    ],
)
def test_a_value_one_past_its_bound_is_refused(tmp_path: Path, field: str, value: str) -> None:
    err = _refusal(tmp_path, lambda d: FIELDS[field](d, value))
    assert f"field {field!r}" in err.message, err.message


def test_each_value_at_its_bound_reads(tmp_path: Path) -> None:
    for field, value in (
        ("python", "3.12"),
        ("python_platform", "x86_64-manylinux_2_123"),
        ("resolver", "uv 1" + "a" * 40),
        ("default_index", "<secret:" + "s" * 64 + ">"),
    ):
        doc = _doc()
        FIELDS[field](doc, value)
        path = tmp_path / "ok.lock.json"
        path.write_text(json.dumps(doc))
        read_lock(path)


@pytest.mark.parametrize(
    ("field", "mutate"),
    [
        ("find_links", lambda d: _pl(d).update(find_links=None)),
        ("inputs", lambda d: _pl(d).update(inputs=None)),
        ("indexes", lambda d: _pl(d).update(indexes=None)),
        ("packages", lambda d: _pl(d).update(packages="")),  # a string iterates as no package
        ("stack", lambda d: d.update(stack=None)),  # not the resolution's stack instead
        ("stack.archs", lambda d: d.update(stack={})),
        ("stack.framework.variant", lambda d: d["stack"]["framework"].update(variant=5)),
    ],
)
def test_a_null_or_an_empty_value_where_a_list_or_an_object_is_read_is_refused(
    tmp_path: Path, field: str, mutate: Callable[[Doc], None]
) -> None:
    """A null is no empty list: a lock that says `find_links: null` was edited or damaged, and is
    refused as one of the wrong type is, naming its field (whole: `variant`, not `varian`)."""
    err = _refusal(tmp_path, mutate)
    assert f"field {field!r}" in err.message, err.message


# --------------------------------------------------------------------------- set Q's survivors


def test_a_build_image_id_without_its_sha256_prefix_is_refused(tmp_path: Path) -> None:
    """A build's image_id is what docker prints, sha256:HEX: 64 hex digits alone are no image ID
    (a certificate's image, compared whole, would never match it)."""
    refused = _refusal(tmp_path, lambda d: d["build"].update(image_id="1" * 64))
    assert "field 'build.image_id'" in refused.message and "refused" in refused.message
