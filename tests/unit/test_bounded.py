"""Bounded parsing (envbuilder/bounded.py, issue 18 defects 3 and 4): a YAML bomb, deep nesting and
a huge file are one SpecError line, at once; the message never echoes the document."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fd_count import count_descriptors

from envbuilder.attest.policy import load_policy
from envbuilder.bounded import NotRegularFile, TooLarge, load_json, load_yaml, read_bounded
from envbuilder.errors import SigningKeyError, SpecError
from envbuilder.image.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]


def bomb(levels: int) -> str:
    """Issue 18's 700-byte spec: nine anchors, each a list of ten aliases of the one before."""
    lines = ['a0: &a0 ["lol-secret-value"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "schema_version: 1\nname: x\nframework: torch\n" + "\n".join(lines) + f"\nenv: *a{levels}\n"


def test_small_documents_with_aliases_are_measured_before_any_bomb() -> None:
    """The count on documents whose nodes print small: shared values load, bomb(6) (10**6
    values) and a cycle are refused. First in this file: a count that breaks fails here at once,
    where pytest's traceback (which prints each function's arguments, the composed node among
    them) would print bomb(9)'s nodes expanded and fill the memory."""
    assert load_yaml("a: &a [1, 2]\nb: [*a, *a]\n") == {"a": [1, 2], "b": [[1, 2], [1, 2]]}
    with pytest.raises(TooLarge, match="more than 200000 values"):
        load_yaml(bomb(6))
    with pytest.raises(TooLarge, match="a cycle"):
        load_yaml("&a [1, *a]\n")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (bomb(9), "more than 200000 values once its aliases are expanded"),
        (bomb(10), "more than 200000 values once its aliases are expanded"),
        ("x: " + "[" * 1000 + "]" * 1000 + "\n", "nested deeper than 64 levels"),
        ("x: " + "{a: " * 950 + "1" + "}" * 950 + "\n", "nested deeper than 64 levels"),
        ("name: x\ndescription: " + "lol" * 100_000 + "\n", "larger than 256 KiB"),
    ],
)
def test_hostile_specs_are_one_line_at_once(text: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:  # bomb(9) took 112 s and 3.0 GB before, bomb(10) OOM
        load_spec(path)
    message = caught.value.message
    assert message == f"{path}: refused: the spec is {why}"
    assert "lol" not in message


def test_ordinary_documents_pass_and_json_is_bounded_too() -> None:
    spec = load_spec(ROOT / "images" / "pytorch-train.yaml")
    assert spec.name == "pytorch-train"
    assert load_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    assert load_json('{"a": ["[[[[", {"b": 1}]}') == {"a": ["[[[[", {"b": 1}]}
    with pytest.raises(TooLarge, match="nested deeper than 64 levels"):
        load_json("[" * 100_000 + "]" * 100_000)
    # Objects count as arrays do, alone or mixed with them, whatever a key holds.
    for deep in ('{"a": ' * 65 + "1" + "}" * 65, '[{"[": ' * 33 + "1" + "}]" * 33):
        with pytest.raises(TooLarge, match="nested deeper than 64 levels"):
            load_json(deep)
    assert load_json('{"a": ' * 64 + "1" + "}" * 64) is not None
    # A string's escaped quote does not end it: its brackets count for nothing (set P: P41).
    hidden = '["\\"' + "]" * 100 + '", ' + "[" * 150 + "]" * 150 + "]"
    with pytest.raises(TooLarge, match="nested deeper than 64 levels"):
        load_json(hidden)
    assert load_json('["\\"' + "]" * 100 + '"]') == ['"' + "]" * 100]
    with pytest.raises(TooLarge, match="larger than"):
        load_json(" " * 10, max_bytes=5)
    # the limit is in bytes, as the text is written: 4 characters of 4 bytes each are 16 bytes
    # (it counted characters: a text of max_bytes 4-byte characters passed at 4x the limit)
    assert load_json('"\U0001f600"', max_bytes=6) == "\U0001f600"  # 1 + 4 + 1 bytes
    for loader in (load_json, load_yaml):
        with pytest.raises(TooLarge, match="larger than"):
            loader('"' + "\U0001f600" * 4 + '"', max_bytes=10)


# ---- issue 23 item 9 (reproducers D11, D12): cyclic aliases, big integers, non-regular files


def _policy_bomb() -> str:
    """D12's 406-byte trust policy: nine anchors, each nine aliases of the one before."""
    levels = ["&a [" + ", ".join(["xxx"] * 9) + "]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"&{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "schema_version: 1\nmax_age: [" + ", ".join(levels) + "]\nkeys: []\n"


CYCLES = ["&a [*a]\n", "name: &a {x: *a}\n", "a: &a [1, [2, {b: *a}]]\n", "x: &a {? *a : 1}\n"]
BIG = "9" * 5000


@pytest.mark.parametrize(
    ("text", "why"),
    [
        *[(t, "an alias inside the value it names (a cycle, infinite once expanded)") for t in CYCLES],
        (f"name: fz\nframework: torch\nuser: {{uid: {BIG}}}\n", "holding a number of more than 4300 digits"),
        (f"schema_version: {BIG}\n", "holding a number of more than 4300 digits"),
        (f"x: -0x{BIG}\n", "holding a number of more than 4300 digits"),
        # 70 anchors, each a list holding the one before: 2 levels as written, 70 once expanded
        (
            "".join(f"a{i}: &a{i} [{'*a' + str(i - 1) if i else 1}]\n" for i in range(70)),
            "nested deeper than 64 levels once its aliases are expanded",
        ),
    ],
)
def test_cycles_big_integers_and_expanded_depth_are_one_line(text: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as caught:  # a RecursionError or ValueError traceback before
        load_spec(path)
    assert caught.value.message == f"{path}: refused: the spec is {why}"


def test_a_value_yaml_cannot_build_is_invalid_yaml_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: x\nwhen: 2020-13-45\n")
    with pytest.raises(
        SpecError, match=r"not valid YAML: a value that cannot be read \(month must be in 1..12\)"
    ):
        load_spec(path)


def test_a_fifo_a_folder_and_a_device_are_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)  # no writer: a blocking open or read would hang the test
    with pytest.raises(SpecError) as caught:
        load_spec(fifo)
    assert caught.value.message == f"{fifo}: refused: the spec is a FIFO, not a regular file"
    with pytest.raises(SpecError, match="the spec is a folder, not a regular file"):
        load_spec(tmp_path)
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        link = tmp_path / "link.yaml"
        link.symlink_to(ROOT / "images" / "pytorch-train.yaml")
        read_bounded(link, follow_symlinks=False)
    # /dev/zero: a character device. A regular file in tmp_path that stat calls one, so that no
    # test ever opens a real device; the loader must refuse it before reading a byte.
    zero = tmp_path / "zero.yaml"
    zero.write_text("name: x\n")
    real_stat = os.stat

    def as_chardev(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        st = real_stat(path, *args, **kwargs)
        if str(path) != str(zero):
            return st
        fields = list(st)
        fields[0] = stat.S_IFCHR | 0o666
        return os.stat_result(fields)

    monkeypatch.setattr(os, "stat", as_chardev)  # bounded reads it through Path.stat
    with pytest.raises(SpecError, match="the spec is a character device, not a regular file"):
        load_spec(zero)


def test_reads_at_most_max_plus_one_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 10_000)
    asked: list[int] = []
    real_read = os.read

    def counted(fd: int, n: int) -> bytes:
        asked.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result([stat.S_IFREG | 0o644, *[0] * 9]))
    monkeypatch.setattr(os, "read", counted)
    with pytest.raises(TooLarge, match="larger than 1 KiB"):  # a file that lies about its size
        read_bounded(big, 1024)
    assert sum(asked) == 1025


def test_a_policy_bomb_big_numbers_cycles_and_key_fifos_are_signing_key_errors(tmp_path: Path) -> None:
    path = tmp_path / "trust.yaml"
    cases = {
        _policy_bomb(): "refused: it is more than 200000 values once its aliases are expanded",
        f"schema_version: 1\nmax_age: {BIG}\nkeys: []\n": "refused: it is holding a number of more than 4300",
        "schema_version: 1\nmax_age: &a [*a]\nkeys: []\n": "refused: it is an alias inside the value",
        "schema_version: 1\nmax_age: '" + BIG + "d'\nkeys: []\n": "max_age is longer than 100 years",
    }
    assert len(_policy_bomb()) < 420
    for text, why in cases.items():
        path.write_text(text)
        started = time.monotonic()
        with pytest.raises(SigningKeyError, match=re.escape(why)):  # 19.9 s and 2.2 GB before (D12)
            load_policy(path)
        assert time.monotonic() - started < 5
    os.mkfifo(tmp_path / "k.pub")  # D12's `public_key: /dev/zero` hung: a FIFO stands in for it
    path.write_text("schema_version: 1\nkeys: [{name: x, public_key: k.pub}]\n")
    with pytest.raises(
        SigningKeyError, match=r"cannot read the public key .*k.pub: it is a FIFO, not a regular file"
    ):
        load_policy(path)
    os.mkfifo(tmp_path / "fifo.yaml")
    with pytest.raises(SigningKeyError, match="refused: it is a FIFO, not a regular file"):
        load_policy(tmp_path / "fifo.yaml")


def test_the_cli_says_one_line_for_each(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from envbuilder.cli import cli

    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    cyclic = tmp_path / "c.yaml"
    cyclic.write_text("&a [*a]\n")
    for spec in (fifo, cyclic):
        res = CliRunner().invoke(cli, ["render", str(spec), "--cpu", "--print"])
        assert res.exit_code == 10, res.output
        assert res.stderr.count("envbuilder: error:") == 1 and "Traceback" not in res.stderr


def test_certs_import_and_report_of_a_fifo_do_not_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from envbuilder.cli import cli

    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "data"))
    fifo = tmp_path / "cert.json"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    res = CliRunner().invoke(cli, ["certs", "import", str(fifo)])
    assert res.exit_code == 17, res.output
    assert f"cannot read {fifo}: it is a FIFO, not a regular file" in res.stderr


def test_a_lock_file_that_is_a_fifo_is_one_line(tmp_path: Path) -> None:
    from envbuilder.image.lock import read_lock

    fifo = tmp_path / "x.lock.json"
    os.mkfifo(fifo)
    with pytest.raises(SpecError) as caught:  # hung before
        read_lock(fifo)
    assert caught.value.message == f"{fifo}: not a lock file: a FIFO, not a regular file"


# --------------------------------------------------------------------------- --auto io (2026-12-06)


def test_a_missing_a_looping_or_a_nul_path_is_an_oserror_never_a_refusal(tmp_path: Path) -> None:
    import errno

    missing = tmp_path / "missing.yaml"
    for follow in (True, False):
        with pytest.raises(FileNotFoundError):
            read_bounded(missing, follow_symlinks=follow)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OSError) as err:
        read_bounded(loop)  # followed: the loop is the kernel's ELOOP, not "a symbolic link"
    assert err.value.errno == errno.ELOOP
    with pytest.raises(OSError) as err:
        read_bounded(tmp_path / "a\0b")
    assert err.value.errno == errno.EINVAL


def test_a_link_or_a_fifo_swapped_in_after_the_first_look_is_refused_and_other_errors_pass_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from envbuilder import bounded

    class Unseen:  # the first look (a stat) finds nothing: what is opened is judged on its own
        def __init__(self, path: Any) -> None:
            pass

        def stat(self, **_kw: Any) -> Any:
            raise FileNotFoundError(errno.ENOENT, "not yet")

    monkeypatch.setattr(bounded, "Path", Unseen)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="a FIFO"):
        read_bounded(fifo)
    real_open = os.open

    def opening(err: int) -> Any:
        def fake(path: Any, flags: int, *a: Any) -> int:
            raise OSError(err, os.strerror(err), str(path))

        return fake

    monkeypatch.setattr("envbuilder.bounded.os.open", opening(errno.ELOOP))
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        read_bounded(tmp_path / "link", follow_symlinks=False)
    monkeypatch.setattr("envbuilder.bounded.os.open", opening(errno.EACCES))
    with pytest.raises(PermissionError):
        read_bounded(tmp_path / "private", follow_symlinks=False)
    monkeypatch.setattr("envbuilder.bounded.os.open", real_open)


def test_a_file_of_exactly_the_limit_is_read_and_one_over_it_is_refused_before_a_byte_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 100)
    assert read_bounded(exact, 100) == b"x" * 100
    over = tmp_path / "over"
    over.write_bytes(b"x" * 101)

    def no_read(*_a: Any) -> bytes:
        raise AssertionError("read before the size was judged")

    monkeypatch.setattr("envbuilder.bounded.os.read", no_read)
    with pytest.raises(TooLarge, match="larger than 100 bytes"):
        read_bounded(over, 100)


def test_a_file_that_grew_past_the_limit_after_its_size_was_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    grown = tmp_path / "grown"
    grown.write_bytes(b"x" * 101)
    real_fstat = os.fstat

    def older(fd: int) -> Any:  # the size as it was a moment before the file grew
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 100, *st[7:]))

    monkeypatch.setattr("envbuilder.bounded.os.fstat", older)
    with pytest.raises(TooLarge, match="larger than 100 bytes"):
        read_bounded(grown, 100)
    real_read = os.read
    monkeypatch.setattr(
        "envbuilder.bounded.os.read", lambda fd, n: real_read(fd, min(n, 50))
    )  # short reads (FUSE, NFS)
    with pytest.raises(TooLarge, match="larger than 100 bytes"):
        read_bounded(grown, 100)  # the 101st byte is read, however the reads are cut


def test_a_document_of_exactly_the_limit_loads_and_one_byte_more_of_bytes_or_text_is_refused() -> None:
    assert load_json("7" * 100, max_bytes=100) == int("7" * 100)
    assert load_json(b"7" * 100, max_bytes=100) == int("7" * 100)
    for over in ("7" * 101, b"7" * 101, "\u00e9" * 51):  # 51 characters, 102 bytes as UTF-8
        with pytest.raises(TooLarge, match="larger than 100 bytes"):
            load_json(over, max_bytes=100)


def test_yaml_nested_exactly_max_depth_loads_and_one_deeper_is_refused() -> None:
    assert load_yaml("[" * 4 + "]" * 4, max_depth=4) == [[[[]]]]
    with pytest.raises(TooLarge, match="nested deeper than 4 levels"):
        load_yaml("[" * 5 + "]" * 5, max_depth=4)


def test_yaml_nesting_is_counted_down_one_level_per_close_however_many_siblings_came_before() -> None:
    deep_after_siblings = "[" + "[]," * 3000 + "[" * 2000 + "]" * 2000 + "]"
    with pytest.raises(TooLarge, match=r"nested deeper than 64 levels$"):
        load_yaml(deep_after_siblings)


def test_a_quoted_number_tagged_int_past_the_digit_limit_is_too_large() -> None:
    from envbuilder.bounded import MAX_DIGITS

    with pytest.raises(TooLarge, match="digits"):
        load_yaml('n: !!int "' + "1" * (MAX_DIGITS + 100) + '"')


def test_a_sexagesimal_integer_past_the_digit_limit_is_too_large() -> None:
    # YAML 1.1 reads 1:1:...:1 as an integer in base 60: 3,001 parts are a number of some 5,300
    # digits, past Python's limit; it is refused unbuilt like a decimal one (set R's R36: the
    # colons left out of bounded._DIGITS built it).
    with pytest.raises(TooLarge, match="digits"):
        load_yaml("n: " + "1:" * 3000 + "1")
    assert load_yaml("t: 1:30:00") == {"t": 5400}  # a short one is an ordinary value


def test_a_value_yaml_cannot_build_is_a_constructor_error_and_a_long_plain_word_is_no_number() -> None:
    import yaml

    with pytest.raises(yaml.constructor.ConstructorError, match="a value that cannot be read"):
        load_yaml("a: !!float 1:" + "59:" * 600 + "1.5")  # sexagesimal: an int too large for a float
    assert load_yaml("a: " + "x" * 5000) == {"a": "x" * 5000}


def test_a_quoted_string_of_digits_is_text_and_a_number_of_exactly_the_digit_limit_loads() -> None:
    from envbuilder.bounded import MAX_DIGITS

    assert load_yaml('a: "' + "1" * 5000 + '"') == {"a": "1" * 5000}
    assert load_yaml("a: " + "1" * MAX_DIGITS) == {"a": int("1" * MAX_DIGITS)}


def test_a_yaml_errors_problem_keeps_harmless_punctuation_in_either_quotes_and_elides_the_rest() -> None:
    from envbuilder.bounded import yaml_error_message

    class Err(Exception):
        def __init__(self, problem: str | None) -> None:
            super().__init__("x")
            self.problem = problem

    assert yaml_error_message(Err(None)) == "malformed document"
    where = Err("bad")
    where.context_mark = type("Mark", (), {"line": 2, "column": 4})()  # type: ignore[attr-defined]
    assert yaml_error_message(where) == "line 3, column 5: bad"  # the context's place, without a problem's
    assert yaml_error_message(Err('expected "," or "]"')) == 'expected "," or "]"'
    assert (
        yaml_error_message(Err("found '' and \"token\" and 'hunter2'")) == "found '...' and '...' and '...'"
    )


def test_a_document_of_exactly_max_nodes_values_loads_and_one_more_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from envbuilder import bounded

    monkeypatch.setattr(bounded, "MAX_NODES", 10)
    assert load_yaml("[" + ", ".join("1" * 9) + "]") == [1] * 9  # the list and its 9 items: 10 values
    with pytest.raises(TooLarge, match="more than 10 values"):
        load_yaml("a: &a [1, 2, 3, 4]\nb: *a\n")  # 1 + 2 keys + 2 x (1 + 4) expanded = 13


def test_a_value_nested_deep_only_once_its_alias_is_expanded_is_refused_wherever_it_sits() -> None:
    with pytest.raises(TooLarge, match="nested deeper than 4 levels once its aliases are expanded"):
        load_yaml("a: &x [[[1]]]\nb: [1, *x]\n", max_depth=4)


def test_json_depth_counts_down_at_each_close_so_many_shallow_siblings_pass() -> None:
    from envbuilder.bounded import check_json_depth

    check_json_depth("[" + "[]," * 100 + "[]]", max_depth=2)
    assert load_json("[" + "{}," * 100 + "{}]", max_depth=2) == [{}] * 101


def test_json_that_is_malformed_too_deep_after_siblings_or_of_too_many_digits_is_refused() -> None:
    import json

    from envbuilder.bounded import MAX_DIGITS, check_json_depth

    with pytest.raises(json.JSONDecodeError):
        load_json("{")
    with pytest.raises(TooLarge, match="nested deeper than 3 levels"):
        check_json_depth("[" + "[]," * 10 + "[[[]]]]", max_depth=3)
    with pytest.raises(TooLarge, match="digits"):
        load_json("1" * (MAX_DIGITS + 10), max_bytes=MAX_DIGITS + 10)


# ---------------------------------------------------------------------- --auto io, eighth set (2026-12-06)


def test_each_child_of_a_value_is_measured_by_itself() -> None:
    """A value measured already (the alias after it was met first) does not stand for its
    siblings: the 2 beside it is counted too, never a KeyError."""
    assert load_yaml("x: [[&a [1], 2], *a]\n") == {"x": [[[1], 2], [1]]}


def test_a_cycle_is_named_as_one_wherever_it_sits_among_its_siblings() -> None:
    """An alias to its own enclosing value, second of three: the cycle is named, before the
    sibling after it (too many values once expanded) is measured."""
    laughs = "".join(
        f"b{i + 1}: &b{i + 1} [*b{i}, *b{i}, *b{i}, *b{i}, *b{i}, *b{i}, *b{i}, *b{i}, *b{i}, *b{i}]\n"
        for i in range(6)
    )
    text = "b0: &b0 [1]\n" + laughs + "x: &x [0, *x, *b6]\n"
    with pytest.raises(TooLarge, match="a cycle"):
        load_yaml(text)


def test_a_file_is_read_in_chunks_of_at_most_one_mib_and_its_descriptor_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A high limit is no buffer of that size: each read asks for 1 MiB at most. And each read,
    refused or not, closes the file it opened."""
    from envbuilder.bounded import read_bounded as read

    small = tmp_path / "small.yaml"
    small.write_bytes(b"a: 1\n")
    asked: list[int] = []
    real_read = os.read

    def counted(fd: int, n: int) -> bytes:
        asked.append(n)
        return real_read(fd, n)

    with monkeypatch.context() as mp:
        mp.setattr(os, "read", counted)
        assert read(small, 1 << 30) == b"a: 1\n"
    assert asked and max(asked) == 1 << 20
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2048)
    descriptors = count_descriptors(monkeypatch)
    read(small, 1024)
    with pytest.raises(TooLarge):
        read(big, 1024)
    assert len(descriptors.opened) == 2 and descriptors.opened == descriptors.closed


def test_a_recursion_error_while_building_a_document_is_a_constructor_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No caller ever sees a RecursionError or an OverflowError from load_yaml: each is a value
    that cannot be read (yaml.YAMLError, which every caller turns into its own refusal)."""
    import yaml

    for exc in (RecursionError("maximum recursion depth exceeded"), OverflowError("too big")):

        def raising(_text: str, exc: BaseException = exc) -> Any:
            raise exc

        with monkeypatch.context() as mp:
            mp.setattr(yaml, "safe_load", raising)
            with pytest.raises(yaml.constructor.ConstructorError, match="a value that cannot be read"):
                load_yaml("a: 1\n")


def test_a_link_is_refused_as_a_link_whatever_it_points_to(tmp_path: Path) -> None:
    """With follow_symlinks=False the path itself is looked at: a link to a FIFO is named a
    link (what is there), not a FIFO (what it points to)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "result.json"
    link.symlink_to(fifo)
    with pytest.raises(NotRegularFile, match=r"^a symbolic link, not a regular file$"):
        read_bounded(link, 1024, follow_symlinks=False)


def test_json_bytes_are_read_as_utf_8_only() -> None:
    """load_json's bytes must be UTF-8 (as its docstring says): UTF-16 with its BOM, which
    json.loads would detect and take, is a UnicodeDecodeError."""
    assert load_json(b'{"a": 1}') == {"a": 1}
    with pytest.raises(UnicodeDecodeError):
        load_json('{"a": 1}'.encode("utf-16"))


def test_a_link_swapped_in_after_the_first_look_is_not_followed_by_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """follow_symlinks=False holds at the open itself (O_NOFOLLOW), not only at the first look:
    a link that appears in between (the first look found nothing) is refused, its target unread."""
    import errno

    from envbuilder import bounded

    class Unseen:
        def __init__(self, path: Any) -> None:
            pass

        def stat(self, **_kw: Any) -> Any:
            raise FileNotFoundError(errno.ENOENT, "not yet")

    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    link = tmp_path / "result.json"
    link.symlink_to(secret)
    monkeypatch.setattr(bounded, "Path", Unseen)
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        read_bounded(link, follow_symlinks=False)


def test_yaml_nesting_is_counted_down_to_the_level_closed_not_to_the_top() -> None:
    """60 levels, one more opened and closed, then 10 more: 70 levels as written, refused by the
    first (event) count, so the message does not speak of aliases the document lacks."""
    text = "[" * 60 + "[]," + "[" * 10 + "]" * 10 + "]" * 60
    with pytest.raises(TooLarge) as err:
        load_yaml(text)
    assert str(err.value) == "nested deeper than 64 levels"


def test_a_long_plain_word_that_starts_with_digits_is_text() -> None:
    """Only a whole scalar in an integer form is a number: 5,000 digits and then a letter is a
    string, loaded as one."""
    word = "1" * 5000 + "x"
    assert load_yaml(f"x: {word}\n") == {"x": word}


def test_json_nesting_is_counted_down_to_the_level_closed_not_to_the_top() -> None:
    text = "[" * 60 + "[]," + "[" * 10 + "]" * 10 + "]" * 60
    with pytest.raises(TooLarge, match=r"^nested deeper than 64 levels$"):
        load_json(text)


def test_a_recursion_error_in_json_loads_is_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """No caller of load_json ever sees a RecursionError: it is the nesting refusal."""
    import json

    def deep(_text: str) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(json, "loads", deep)
    with pytest.raises(TooLarge, match=r"^nested deeper than 64 levels$"):
        load_json("[1]")


def test_a_tag_safe_load_refuses_keeps_pyyamls_error_with_its_place() -> None:
    """Only a ValueError of construction becomes "a value that cannot be read": PyYAML's own
    ConstructorError (a tag the safe loader refuses) reaches the caller as PyYAML raised it,
    with its line and column."""
    import yaml

    with pytest.raises(yaml.constructor.ConstructorError) as err:
        load_yaml("a: 1\nb: !!python/name:os.system\n")
    assert err.value.problem_mark is not None and err.value.problem_mark.line == 1


class _YamlProblem(Exception):
    """A YAML error as yaml_error_message reads it: its problem text, no marks."""

    problem_mark = None
    context_mark = None

    def __init__(self, problem: str) -> None:
        super().__init__("x")
        self.problem = problem


def test_a_yaml_errors_problem_keeps_only_up_to_three_punctuation_characters_and_whole_escapes() -> None:
    from envbuilder.bounded import yaml_error_message

    assert yaml_error_message(_YamlProblem("found '!@#' and '!@#$'")) == "found '!@#' and '...'"
    assert yaml_error_message(_YamlProblem("found '\\u00e9' and '\\u12e' and '\\u12345'")) == (
        "found '\\u00e9' and '...' and '...'"
    )


def test_a_yaml_error_elides_a_short_quoted_word_of_the_document() -> None:
    """Set U's survivor U36: only punctuation of up to three characters is kept; a quoted word of
    one to three letters or digits (a short secret: a tag `!pw`, a PIN) is elided like a long one."""
    import yaml

    from envbuilder.bounded import yaml_error_message

    for word in ("a", "42", "pw1", "!pw", "x:"):
        assert (
            yaml_error_message(_YamlProblem(f"found '{word}' and \"{word}\"")) == "found '...' and '...'"
        ), word
    with pytest.raises(yaml.YAMLError) as err:
        load_yaml("a: !pw x\n")
    assert (
        yaml_error_message(err.value)
        == "line 1, column 4: could not determine a constructor for the tag '...'"
    )


def test_a_yaml_error_elides_a_verbatim_tag_that_looks_like_a_token_name() -> None:
    # PyYAML quotes its own token names ('<stream end>') and, for a tag it cannot construct, the
    # document's tag: `!<%3Cmy secret%3E>` is quoted as '<my secret>', which looked like one.
    import yaml

    from envbuilder.bounded import yaml_error_message

    with pytest.raises(yaml.YAMLError) as err:
        load_yaml("a: !<%3Cmy%20secret%3E> x\n")
    assert yaml_error_message(err.value) == (
        "line 1, column 4: could not determine a constructor for the tag '...'"
    )
    with pytest.raises(yaml.YAMLError) as err:
        load_yaml("a: [1, 2\n")
    assert yaml_error_message(err.value) == "line 2, column 1: expected ',' or ']', but got '<stream end>'"


def test_a_yaml_error_without_a_problem_or_a_place_is_a_malformed_document() -> None:
    """PyYAML's ReaderError (a control character in the document) carries no `problem` and no
    marks: it is said as a malformed document, never an AttributeError."""
    import yaml

    from envbuilder.bounded import yaml_error_message

    with pytest.raises(yaml.YAMLError) as err:
        load_yaml("a: \x07\n")
    assert not hasattr(err.value, "problem")
    assert yaml_error_message(err.value) == "malformed document"


# --------------------------------------------------------------------------- set Q's survivors


def test_a_yaml_error_quoting_the_documents_own_text_in_angle_brackets_elides_it() -> None:
    """PyYAML's token names look like '<stream end>'; a tag the document wrote as %3C...%3E is
    quoted as '<...>' too, and is the document's text: elided, never echoed."""
    from envbuilder.bounded import yaml_error_message

    with pytest.raises(yaml.YAMLError) as err:
        load_yaml("a: !<%3Chunter2-Tok3n%3E> x")
    message = yaml_error_message(err.value)
    assert "hunter2" not in message and "Tok3n" not in message and "'...'" in message
    with pytest.raises(yaml.YAMLError) as err:
        load_yaml("a: [1\n")
    assert "'<stream end>'" in yaml_error_message(err.value)  # a token name stays
