"""Each value check at its door, at both bounds of every quantifier and with a value that is not
a string, and what its refusal says (issue 23: the survivors of `--auto values` after the hostile
corpus, benchmarks/results/values-survivors-2026-12-06.md).

The hostile corpus (test_hostile_corpus.py) asks whether a hostile string is refused with the
door's exit code on one line. Here: the value just inside each bound passes and the one just
outside is refused; an int, a list, None or a bool where a string goes is refused with the
door's own error (never a TypeError or AttributeError); and the message names the field and the
value it refuses, and the rule that refused it, so that a refusal a user reads is the right one.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from render_cases import TORCH_BUNDLED_CU130, TORCH_SYSTEM_CU126
from render_cases import spec as render_spec
from test_hostile_corpus import SPEC

from envbuilder.attest.policy import parse_duration
from envbuilder.errors import SigningKeyError, SpecError, UsageError
from envbuilder.image.render import RenderOptions, render_dockerfile, venv_path
from envbuilder.image.sources import spec_file
from envbuilder.image.spec import MAX_ITEMS, load_spec, parse_spec
from envbuilder.image.validate import validate_stack
from envbuilder.resolve.model import Stack
from envbuilder.run.launch import parse_env, parse_publish, parse_size, parse_user
from envbuilder.versions import parse_cc, parse_driver, parse_host_driver, parse_python_xy


def _spec(**fields: Any) -> Any:
    return parse_spec({**copy.deepcopy(SPEC), **fields}, "images/smoke.yaml")


def _refused(error: type[Exception], call: Any, *args: Any, **kwargs: Any) -> Any:
    """The error `call` raises: `error` itself, its message one line."""
    with pytest.raises(error) as info:
        call(*args, **kwargs)
    text = str(info.value)
    assert text and "\n" not in text and "\r" not in text, repr(text)
    return info.value


# --------------------------------------------------------------------------- indexes


def _index(i: int) -> dict[str, str]:
    return {"name": f"i{i}", "url": f"https://p{i}.example/simple"}


def test_indexes_at_the_item_limit() -> None:
    """MAX_ITEMS indexes are all kept; one more is refused, as every other list of a spec (it was
    cut to the first MAX_ITEMS without a word: an index the spec names silently dropped)."""
    assert len(_spec(indexes=[_index(i) for i in range(MAX_ITEMS)]).indexes) == MAX_ITEMS
    exc = _refused(SpecError, _spec, indexes=[_index(i) for i in range(MAX_ITEMS + 1)])
    assert str(exc).endswith(
        f"field 'indexes': value '{MAX_ITEMS + 1} items' refused: more than {MAX_ITEMS} items"
    )


def test_an_index_url_with_credentials_is_refused_without_echoing_them() -> None:
    """The `@` rule comes before the URL pattern, which refuses it too but would show the URL."""
    exc = _refused(
        SpecError, _spec, indexes=[{"name": "corp", "url": "https://bot:s3cr3t@pkgs.example/simple"}]
    )
    assert "s3cr3t" not in str(exc) and "s3cr3t" not in repr(exc.value) and "s3cr3t" not in (exc.hint or "")
    assert "field 'indexes[0].url'" in str(exc) and "credentials in an index URL are refused" in str(exc)


@pytest.mark.parametrize(
    ("names", "named"),
    [
        (["first", "corp", "corp"], "corp"),  # the duplicate is not the first index
        (["bb", "aa", "bb", "aa"], "aa"),  # two: the first by name (one message for one spec)
        (["first", "framework"], "framework"),  # reserved: the stack's own index
        (["first", "pypi"], "pypi"),
    ],
)
def test_a_duplicate_or_reserved_index_name_is_named(names: list[str], named: str) -> None:
    indexes = [{"name": n, "url": f"https://p{i}.example/simple"} for i, n in enumerate(names)]
    exc = _refused(SpecError, _spec, indexes=indexes)
    assert f"field 'indexes': value {named!r} refused: duplicate or reserved index name" in str(exc)


def test_an_unknown_index_field_is_named() -> None:
    """Two unknown fields: the first by name is the one the message names, as field and value."""
    index = {"name": "corp", "url": "https://p.example/simple", "zeta": 1, "alpha": 1}
    exc = _refused(SpecError, _spec, indexes=[index])
    assert "field 'indexes[0].alpha': value 'alpha' refused: unknown field" in str(exc)


@pytest.mark.parametrize("value", ["", "https://p.example/simple", 0, False, {}, 5, {"name": "x"}])
def test_indexes_not_a_list_are_refused(value: object) -> None:
    """Only a list (or no indexes at all) is taken: an empty string or a mapping is no list."""
    exc = _refused(SpecError, _spec, indexes=value)
    assert "field 'indexes'" in str(exc) and "expected a list" in str(exc)


def test_no_indexes_and_an_empty_list_are_no_indexes() -> None:
    assert _spec(indexes=None).indexes == () and _spec(indexes=[]).indexes == ()


# ------------------------------------------------------------ a spec's values that are no strings

NOT_STRINGS = (5, 1.5, True, ["x"], None)


def _put(field: str, value: object) -> dict[str, Any]:
    """The spec's fields with `value` at `field` (a list's item goes second, after an honest one)."""
    index = {"name": "corp", "url": "https://p.example/simple"}
    places: dict[str, dict[str, Any]] = {
        "name": {"name": value},
        "python": {"python": value},
        "framework": {"framework": value},
        "description": {"description": value},
        "workdir": {"workdir": value},
        "context": {"context": value},
        "source": {"source": value},
        "requirements[1]": {"requirements": ["attrs>=23", value]},
        "apt[1]": {"apt": ["curl", value]},
        "companions[1]": {"companions": ["torchaudio", value]},
        "env.A": {"env": {"A": value}},
        "user.name": {"user": {"name": value}},
        "indexes[0].url": {"indexes": [{**index, "url": value}]},
        "indexes[0].name": {"indexes": [{**index, "name": value}]},
        "indexes[0].username": {"indexes": [{**index, "username": value}]},
        "indexes[0].secret": {"indexes": [{**index, "secret": value}]},
        "pyproject.path": {"pyproject": {"path": value}},
    }
    return places[field]


# None is an absent optional field (its default), not a value: taken where the field may be left out.
ABSENT_OK = {"python", "context", "source", "indexes[0].username", "indexes[0].secret"}
# env values: an int is written as its digits (YAML reads `1` as an int), documented in _env.
INT_OK = {"env.A"}


@pytest.mark.parametrize("value", NOT_STRINGS, ids=repr)
@pytest.mark.parametrize(
    "field",
    [
        "name",
        "python",
        "framework",
        "description",
        "workdir",
        "context",
        "source",
        "requirements[1]",
        "apt[1]",
        "companions[1]",
        "env.A",
        "user.name",
        "indexes[0].url",
        "indexes[0].name",
        "indexes[0].username",
        "indexes[0].secret",
        "pyproject.path",
    ],
)
def test_a_value_that_is_no_string_is_refused_naming_its_field(field: str, value: object) -> None:
    if (value is None and field in ABSENT_OK) or (type(value) is int and field in INT_OK):
        _spec(**_put(field, value))
        return
    exc = _refused(SpecError, _spec, **_put(field, value))
    assert f"field {field!r}: value {value!r} refused: expected a string, got {type(value).__name__}" in str(
        exc
    )
    assert exc.field == field and exc.hint == "quote the value in YAML"


def test_a_pattern_refusal_names_field_value_rule_and_hint() -> None:
    exc = _refused(SpecError, _spec, name="Smoke")
    assert str(exc).startswith("images/smoke.yaml: field 'name': value 'Smoke' refused: does not match ")
    assert exc.field == "name" and exc.value == "Smoke"
    assert exc.hint and "does not match" not in exc.hint and exc.hint != "name"


# ------------------------------------------------------------ validate_requirement, rule by rule

REQ_HINT = "write a PEP 508 requirement such as 'pillow>=10' or 'numpy==2.1.*' (no URLs or paths)"
ASCII_RULE = "empty, too long, or not printable ASCII"
HEAD_RULE = "not NAME[extras]SPECIFIERS"
MARKER_RULE = "malformed environment marker"

# Each value is refused by the first rule validate_requirement applies to it, and its message
# says which: a rule dropped or loosened lets a later one refuse it in other words (or none).
REQUIREMENT_RULES: list[tuple[str, str]] = [
    ("", ASCII_RULE),
    ("a" * 201, ASCII_RULE),  # MAX_REQUIREMENT + 1
    ("pillow>=10\u00e9", ASCII_RULE),  # printable, not ASCII
    ("pillow>=10\x0b", ASCII_RULE),  # ASCII, not printable (and whitespace: strip() would drop it)
    ("pillow>=10\x7f", ASCII_RULE),
    *((f"pillow>=10{c}1", f"contains {c!r}") for c in ("\\", "$", "`", "&", "|", "#", "@", "/", ":")),
    ("pillow >=10", HEAD_RULE),  # a space inside the head (packaging would drop it)
    (" pillow>=10", HEAD_RULE),  # a leading space
    ("pillow[]>=10", HEAD_RULE),  # empty extras
    ("pillow>=10;", MARKER_RULE),  # an empty marker
    ("pillow>=10; ", MARKER_RULE),  # a marker of spaces only
    ("pillow>=10; platform_machine == 'x*y'", MARKER_RULE),  # `*` is no marker character
    ("pillow>=10; platform_machine == 'x{y}'", MARKER_RULE),
    ("pillow>=10; os_name == 'posix'; os_name == 'nt'", MARKER_RULE),
    ("pillow>=10; python_version  >= '3.8'", "repeated spaces"),
    ("pillow>=10 ;  python_version >= '3.8'", "repeated spaces"),
    ("pillow>=10; )", "not a PEP 508 requirement (Expected a marker variable or quoted string)"),
    ("pillow>=10; python_version", "not a PEP 508 requirement (Expected marker operator, one of"),
    ("pillow>=1.0,>=1.0", "does not round-trip through packaging ('pillow>=1.0')"),
]


@pytest.mark.parametrize("field", ["requirements[1]", "framework"])
@pytest.mark.parametrize(
    ("value", "rule"), REQUIREMENT_RULES, ids=[repr(v)[:40] for v, _ in REQUIREMENT_RULES]
)
def test_a_requirement_is_refused_by_its_rule(field: str, value: str, rule: str) -> None:
    put = {"framework": value} if field == "framework" else {"requirements": ["attrs>=23", value]}
    exc = _refused(SpecError, _spec, **put)
    text = str(exc)
    assert text.startswith(f"images/smoke.yaml: field {field!r}: value {repr(value)[:40]}"), text
    assert text.split(" refused: ", 1)[1].startswith(rule), text
    assert exc.field == field and exc.value == value and exc.hint == REQ_HINT


@pytest.mark.parametrize(
    "value",
    [
        "a" * 200,  # MAX_REQUIREMENT
        "pillow",
        "pillow[a]>=10",
        "pillow[a,b-c]>=10,<11",
        "pillow>=10; python_version >= '3.8'",
        "pillow>=10 ; python_version >= '3.8' and os_name == 'posix'",
        "pywin32>=306; sys_platform == 'win32'",
    ],
)
def test_a_requirement_just_inside_every_rule_is_taken(value: str) -> None:
    assert len(_spec(requirements=["attrs>=23", value]).requirements) == 2


# --------------------------------------------------------------------------- relative paths

REL_HINT = "a path relative to the spec's folder, e.g. requirements.txt or . (no '..', not absolute)"
LONG_RULE = "longer than 1024 characters or 255 a name"


def _path(total: int) -> str:
    """A relative path of `total` characters, each name at most 200."""
    parts, left = [], total
    while left > 0:
        part = min(200, left if left <= 200 else left - 2)  # keep room for the next "/" and a name
        parts.append("a" * part)
        left -= part + 1
    out = "/".join(parts)
    assert len(out) == total, (len(out), total)
    return out


@pytest.mark.parametrize("field", ["requirements", "context", "pyproject.path", "uv_lock.path"])
@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (_path(1024), None),
        (_path(1025), LONG_RULE),
        ("a" * 255, None),
        ("a" * 256, LONG_RULE),
        ("x/" + "a" * 255, None),
        ("x/" + "a" * 256, LONG_RULE),  # the long name second
        ("a" * 256 + "/x", LONG_RULE),
        ("../x", "not a plain relative path"),
        ("/nonexistent/x", "not a plain relative path"),
    ],
    ids=[
        "1024",
        "1025",
        "name-255",
        "name-256",
        "second-255",
        "second-256",
        "first-256",
        "dotdot",
        "absolute",
    ],
)
def test_a_relative_path_at_its_bounds(field: str, value: str, rule: str | None) -> None:
    key, _, sub = field.partition(".")
    put = {key: {"path": value} if sub else value}
    if rule is None:
        _spec(**put)
        return
    exc = _refused(SpecError, _spec, **put)
    assert str(exc).startswith(f"images/smoke.yaml: field {field!r}: value {repr(value)[:40]}")
    assert str(exc).endswith(f"refused: {rule}") and exc.value == value and exc.hint == REL_HINT


def test_a_folder_given_with_a_trailing_slash_is_kept_without_it() -> None:
    assert _spec(context="src/").context == "src"
    assert _spec(context="a/b/").context == "a/b"
    assert _spec(context=".").context == "."
    assert _spec(requirements="deps/base.txt").requirements_file == "deps/base.txt"


def test_a_rel_path_refusal_names_its_field_value_and_hint() -> None:
    exc = _refused(SpecError, _spec, context="../other")
    assert (
        str(exc) == "images/smoke.yaml: field 'context': value '../other' refused: not a plain relative path"
    )
    assert exc.field == "context" and exc.value == "../other" and exc.hint == REL_HINT


# --------------------------------------------------------------------------- the files a spec names


def _on_disk(tmp: Path, **fields: Any) -> Any:
    (tmp / "requirements.txt").write_text("pillow>=10\n", encoding="utf-8")
    spec = tmp / "smoke.yaml"
    spec.write_text(json.dumps({**SPEC, **fields}), encoding="utf-8")  # JSON is YAML
    return load_spec(spec)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"pyproject": "pyproject.toml"}, "pyproject"),
        ({"requirements": "requirements.txt", "pyproject": "pyproject.toml"}, "pyproject"),
        ({"uv_lock": "uv.lock"}, "uv_lock"),
        ({"requirements": "requirements.txt", "uv_lock": {"path": "uv.lock"}}, "uv_lock"),
        ({"requirements": "nope.txt"}, "requirements"),
    ],
)
def test_every_file_a_spec_names_must_be_there(tmp_path: Path, fields: dict[str, Any], named: str) -> None:
    """Each of requirements, pyproject and uv_lock is looked for, not only the first given."""
    exc = _refused(SpecError, _on_disk, tmp_path, **fields)
    assert f"field {named!r}" in str(exc) and "is not a file" in str(exc)


def test_the_files_a_spec_names_pass_when_there(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (tmp_path / "src").mkdir()
    spec = _on_disk(tmp_path, requirements="requirements.txt", pyproject="pyproject.toml", context="src/")
    assert spec.pyproject.path == "pyproject.toml" and spec.context == "src"


def test_a_name_the_file_system_refuses_is_no_file_of_the_spec(tmp_path: Path) -> None:
    """stat() of a 300-character name is an OSError (ENAMETOOLONG): a SpecError naming the field."""
    exc = _refused(SpecError, spec_file, tmp_path, "a" * 300, "requirements", "images/smoke.yaml")
    assert "field 'requirements'" in str(exc) and "is not a file" in str(exc)


# --------------------------------------------------------------------------- env


def test_env_keys_reserved_by_prefix_only() -> None:
    """ENVBUILDER_* and NVIDIA_* are envbuilder's as prefixes: a key that only contains them is the user's."""
    env = _spec(env={"MY_ENVBUILDER_FLAG": "1", "CUDNN_NVIDIA_X": "2"}).env
    assert env == (("CUDNN_NVIDIA_X", "2"), ("MY_ENVBUILDER_FLAG", "1"))
    for key, why in (
        ("ENVBUILDER_X", "set by envbuilder from the stack"),
        ("PATH", "set by envbuilder from the stack"),
        ("NVIDIA_DISABLE_REQUIRE", "NVIDIA_* variables steer the NVIDIA Container Toolkit"),
    ):
        exc = _refused(SpecError, _spec, env={key: "1"})
        assert str(exc).startswith(f"images/smoke.yaml: field 'env.{key}': value {key!r} refused: {why}")
        assert exc.field == f"env.{key}" and exc.value == key


def test_env_is_kept_sorted_by_key() -> None:
    """The order a spec writes its env in changes nothing (the Dockerfile and the lock are the same)."""
    assert _spec(env={"B_KEY": "1", "A_KEY": "2", "C_KEY": 3}).env == (
        ("A_KEY", "2"),
        ("B_KEY", "1"),
        ("C_KEY", "3"),
    )


# --------------------------------------------------------------------------- the stack (validate_stack)

LOCK_HINT = "the lock file or stack looks corrupt; re-run `envbuilder resolve --lock`"


def _with(field: str, value: object) -> Stack:
    """The honest stack with `value` at `field` (of any type: the lock is user-editable JSON)."""
    changes: dict[str, Any] = {field: value}
    return replace(TORCH_BUNDLED_CU130, **changes)


def _stack(field: str, value: object) -> None:
    if field in ("sass", "ptx", "packages"):
        value = (getattr(TORCH_BUNDLED_CU130, field)[0], value)  # the value second
    validate_stack(_with(field, value))


# (field, just inside, just outside) for every quantifier of the field's pattern
STACK_BOUNDS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("id", ("a", "a" * 128), ("a" * 129, "-a", "")),
    ("python", ("3.1", "3.12"), ("3.", "3.123", "3")),
    ("cuda", ("12", "12.6", "12.6.1.1"), ("12.", ".6", "12.6.1.1.1", "12..6")),
    (
        "min_driver",
        ("470", "9999", "580.1", "580.123", "580.65.06"),
        ("47", "58065", "580.", "580.1234", "580.1.2.3"),
    ),
    ("sass", ("8.6", "10.0"), (".0", "100.0", "8.", "8.10")),
    ("ptx", ("9.0", "12.0"), (".0", "120.0")),
    (
        "require_cuda",
        (
            "12.6",
            "cuda>=12.6",
            "cuda>=1.0 brand=tesla,driver>=470,driver<9999",
            "cuda>=12.6 brand=a,driver>=999,driver<1000",
        ),
        (
            "cuda>=.6",
            "cuda>=12.",
            "cuda>=12.6 brand=,driver>=470,driver<471",
            "cuda>=12.6 brand=tesla,driver>=47,driver<471",
            "cuda>=12.6 brand=tesla,driver>=47000,driver<471",
            "cuda>=12.6 brand=tesla,driver>=470,driver<47",
            "cuda>=12.6 brand=tesla,driver>=470,driver<47100",
        ),
    ),
    ("packages", ("torch==2.11.0", "torch[cuda]==2.11.0", "t==1"), ("torch[]==2.11.0", "torch==", "torch")),
]


@pytest.mark.parametrize(("field", "inside", "outside"), STACK_BOUNDS, ids=[b[0] for b in STACK_BOUNDS])
def test_a_stack_value_at_its_bounds(field: str, inside: tuple[str, ...], outside: tuple[str, ...]) -> None:
    for value in inside:
        _stack(field, value)
    for value in outside:
        exc = _refused(SpecError, _stack, field, value)
        assert str(exc).startswith(f"stack field {field!r}: value {repr(value)[:40]}"), value
        assert str(exc).endswith(" refused"), value
        assert exc.field == f"stack.{field}" and exc.value == value
        assert exc.hint == ("exact pins NAME[extras]==VERSION only" if field == "packages" else LOCK_HINT)


@pytest.mark.parametrize("value", [5, 1.5, True, ["3.12"]], ids=repr)
@pytest.mark.parametrize(
    "field",
    [
        "id",
        "framework",
        "version",
        "variant",
        "os",
        "base_image",
        "index_url",
        "python",
        "cuda",
        "min_driver",
        "sass",
    ],
)
def test_a_stack_value_that_is_no_string_is_refused(field: str, value: object) -> None:
    exc = _refused(SpecError, _stack, field, value)
    assert str(exc) == f"stack field {field!r}: value {value!r} refused" and exc.value == value


@pytest.mark.parametrize(
    ("field", "value"),
    [("strategy", "Bundled"), ("python_install", "Apt"), ("packages", ()), ("require_cuda", "cuda>=.6")],
)
def test_a_stack_refusal_shows_the_value_and_the_lock_hint(field: str, value: object) -> None:
    exc = _refused(SpecError, validate_stack, _with(field, value))
    assert str(exc) == f"stack field {field!r}: value {value!r} refused" and exc.hint == LOCK_HINT


def test_a_label_value_at_its_length_limit() -> None:
    built = render_spec()
    for value, taken in (("a" * 65536, True), ("a" * 65537, False)):
        options = RenderOptions(labels=(("org.example.team", value),))
        if taken:
            render_dockerfile(built, TORCH_BUNDLED_CU130, options)
        else:
            _refused(SpecError, render_dockerfile, built, TORCH_BUNDLED_CU130, options)


# --------------------------------------------------------------------------- render's options


def test_a_refused_base_venv_names_its_option_and_value() -> None:
    exc = _refused(SpecError, venv_path, RenderOptions(base_venv="opt/venv"))
    assert exc.field == "--base-venv" and exc.value == "opt/venv" and "'opt/venv'" in str(exc)


@pytest.mark.parametrize(
    ("package", "driver", "taken"),
    [
        ("cuda-compat-1-2", "560.35.05", True),
        ("cuda-compat-12-10", "5600", True),
        ("cuda-compat--6", "560.35.05", False),
        ("cuda-compat-12-", "560.35.05", False),
        ("cuda-compat-12-123", "560.35.05", False),
        ("cuda-compat-123-0", "560.35.05", False),
        ("cuda-compat-12-6", "56000", False),
        ("cuda-compat-12-6", "560.1234", False),
    ],
)
def test_forward_compat_at_its_bounds(package: str, driver: str, taken: bool) -> None:
    stack = replace(TORCH_SYSTEM_CU126, forward_compat=(package, driver), min_driver="470")
    built = render_spec()
    if taken:
        assert package in render_dockerfile(built, stack)
    else:
        exc = _refused(SpecError, render_dockerfile, built, stack)
        assert repr(package) in str(exc) and repr(driver) in str(exc)


# --------------------------------------------------------------------------- run's options


def test_shm_size_at_its_bounds() -> None:
    assert parse_size("1") == 1
    assert parse_size("16G") == 16 << 30 and parse_size("512M") == 512 << 20 and parse_size("2Kb") == 2048
    assert parse_size(str((1 << 63) - 1)) == (1 << 63) - 1
    for value in ("0", str(1 << 63), "8589934592g"):
        assert "out of range" in str(_refused(UsageError, parse_size, value))


def test_env_items_each_checked_and_split_at_the_first_equals() -> None:
    assert parse_env(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    for items in (["A=1", "1X=2"], ["FOO"], ["A=1", "B"]):
        exc = _refused(UsageError, parse_env, items)
        assert repr(items[-1]) in str(exc)


@pytest.mark.parametrize(
    ("port", "hint"),
    [
        ("0", "a port is 1-65535"),
        ("65536", "a port is 1-65535"),
        ("000080", "a port is 1-65535"),  # six digits: _PORT's bound
        ("80-90", "one port per -p (docker's ranges are not taken)"),
    ],
)
def test_a_refused_port_says_why(port: str, hint: str) -> None:
    exc = _refused(UsageError, parse_publish, f"{port}:80")
    assert repr(port) in str(exc) and exc.hint == hint


def test_ports_just_inside_their_bounds() -> None:
    assert parse_publish("00080:1").host_port == 80 and parse_publish("65535:80").host_port == 65535


def test_user_ids_at_their_bound() -> None:
    assert parse_user("4294967294:4294967294") == "4294967294:4294967294"  # (uid_t)-2
    _refused(UsageError, parse_user, "4294967295")


# --------------------------------------------------------------------------- a trust policy's max_age

CENTURY = 100 * 365 * 86400


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (45, 45.0),
        (1.5, 1.5),
        (1e-05, 1e-05),
        ("1.5h", 5400.0),
        ("36500d", float(CENTURY)),
        (CENTURY, float(CENTURY)),
    ],
    ids=repr,
)
def test_a_duration_taken(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (True, "is not a duration"),  # a bool is no number of seconds
        (False, "is not a duration"),
        ("1.d", "is not a duration"),
        ("1.", "is not a duration"),
        ("36501d", "is longer than 100 years"),
        (CENTURY + 1, "is longer than 100 years"),
        (float("nan"), "is longer than 100 years"),
        (float("inf"), "is longer than 100 years"),
        (10**400, "is longer than 100 years"),  # float() of it is an OverflowError
        (-(10**400), "is longer than 100 years"),
        (-3, "must be positive"),
        (-1.0, "must be positive"),
        (0.5 - 0.5, "must be positive"),
    ],
    ids=repr,
)
def test_a_duration_refused(value: object, rule: str) -> None:
    exc = _refused(SigningKeyError, parse_duration, value)
    assert str(exc).startswith("max_age ") and rule in str(exc)
    exc = _refused(SigningKeyError, parse_duration, value, "policy max_age")
    assert str(exc).startswith("policy max_age ")


# --------------------------------------------------------------------------- versions on a command line


def test_python_xy_at_its_bounds_and_stripped() -> None:
    assert parse_python_xy("3.1") == "3.1" and parse_python_xy("3.12") == "3.12"
    for value in (" 3.12", "3.12 ", "3.12\n", "\t3.12"):
        assert parse_python_xy(value) == "3.12"
    for value in ("3.", "3.123", ".12"):
        assert "malformed Python version" in str(_refused(UsageError, parse_python_xy, value))


def test_host_driver_stripped() -> None:
    assert parse_host_driver("535.104.05\n") == "535.104.05" and parse_host_driver("\t580 ") == "580"


def test_cc_at_its_bounds() -> None:
    assert parse_cc("8.6") == (8, 6) and parse_cc("10.0") == (10, 0)
    for value in (".5", "100.0", "8."):
        _refused(UsageError, parse_cc, value)


@pytest.mark.parametrize("value", [312, 3.12, True, None], ids=repr)
@pytest.mark.parametrize(
    ("parse", "what"),
    [
        (parse_python_xy, "Python version"),
        (parse_driver, "driver version"),
        (parse_host_driver, "driver version"),
        (parse_cc, "compute capability"),
    ],
)
def test_a_version_that_is_no_string_is_refused(parse: Any, what: str, value: object) -> None:
    exc = _refused(UsageError, parse, value)
    assert f"malformed {what} {value!r}" in str(exc)


def test_a_python_version_as_a_list_is_refused() -> None:
    assert "malformed Python version ['3.12']" in str(_refused(UsageError, parse_python_xy, ["3.12"]))
