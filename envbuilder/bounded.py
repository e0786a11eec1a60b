"""Bounded reading and parsing of what comes from outside (a user's file, a registry's answer, a
container's output): files read at most max+1 bytes and only when they are regular files, YAML
and JSON within size, depth and alias-expansion limits. A 700-byte YAML bomb, a cyclic alias, a
document nested 100,000 deep, a 5,000-digit number, /dev/zero or a FIFO are each one error
(`Refused`, a ValueError: `TooLarge` or `NotRegularFile`), at once, never minutes of CPU,
gigabytes of memory, a hang or a RecursionError. Messages name the limit, never the content.

What each loader raises, and nothing else: read_bounded OSError, Refused; load_yaml Refused,
yaml.YAMLError; load_json Refused, ValueError (json.JSONDecodeError, UnicodeDecodeError)."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import yaml

from envbuilder.atomic import path_kind

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 200_000  # scalars and collections after alias expansion
# Python refuses to convert longer integers (CVE-2020-10735); the loaders say so in one line.
MAX_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


class Refused(ValueError):
    """Input refused before or while parsing it, without reading or building all of it; the
    message says why (a limit, or the kind of file), never what the document holds."""


class TooLarge(Refused):
    """A document over one of the limits; the message says which."""


class NotRegularFile(Refused):
    """A path that is not a regular file (a FIFO, a device, a folder, a socket): never read."""


def read_bounded(path: Path | str, max_bytes: int = MAX_BYTES, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file, at most `max_bytes` of them. Whatever else is at the path is
    refused before a byte is read and without blocking: a FIFO (opened non-blocking), a device
    such as /dev/zero, a folder. With follow_symlinks=False a symlink at the path is refused too
    (O_NOFOLLOW: for files a container wrote). Reads at most max_bytes+1 bytes. Raises OSError
    (missing, unreadable), NotRegularFile, TooLarge."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    if "\0" in str(path):  # os.stat and os.open raise ValueError for it, not OSError
        raise OSError(errno.EINVAL, "a path with a NUL character", str(path).replace("\0", "\\0"))
    try:  # a stat first: opening a device can itself have effects (a tape rewinds, a tty)
        before = Path(path).stat(follow_symlinks=follow_symlinks)
    except OSError:
        before = None  # open() below reports it with the right errno
    if before is not None and not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(f"{path_kind(before.st_mode)}, not a regular file")
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and exc.errno == errno.ELOOP:  # the last component is a symlink
            raise NotRegularFile("a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise NotRegularFile(f"{path_kind(st.st_mode)}, not a regular file")
        if st.st_size > max_bytes:
            raise TooLarge(f"larger than {_size(max_bytes)}")
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # grew since the fstat
        raise TooLarge(f"larger than {_size(max_bytes)}")
    return data


def read_text_bounded(path: Path | str, max_bytes: int = MAX_BYTES, *, follow_symlinks: bool = True) -> str:
    """read_bounded decoded as UTF-8. Raises OSError, Refused, UnicodeDecodeError (a ValueError)."""
    return read_bounded(path, max_bytes, follow_symlinks=follow_symlinks).decode("utf-8")


def _size(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 else f"{n} bytes"


def _check_size(text: str | bytes, max_bytes: int) -> None:
    """Bytes as UTF-8 writes them: a character may take four (encoded only once the character
    count is within the limit, so an oversized text is never copied)."""
    if len(text) > max_bytes or (
        isinstance(text, str) and len(text.encode("utf-8", "surrogatepass")) > max_bytes
    ):
        raise TooLarge(f"larger than {_size(max_bytes)}")


def load_yaml(text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """yaml.safe_load within the limits: size, nesting (as written and once aliases are
    expanded), values after alias expansion, no alias that contains itself, no integer past
    Python's digit limit. Raises TooLarge, yaml.YAMLError (a value that cannot be built, e.g. a
    date of month 13, is a yaml.constructor.ConstructorError)."""
    _check_size(text, max_bytes)
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):  # iterative: no recursion yet
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                raise TooLarge(f"nested deeper than {max_depth} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and _big_integer(event):
            raise TooLarge(f"holding a number of more than {MAX_DIGITS} digits")
    node = yaml.compose(text, Loader=yaml.SafeLoader)  # recursive, but at most max_depth deep
    if node is None:
        return None
    _count_expanded(node, max_depth)
    try:
        return yaml.safe_load(text)
    except ValueError as exc:  # int("9" * 5000) in a form _digits missed, a date out of range
        if "digits" in str(exc):
            raise TooLarge(f"holding a number of more than {MAX_DIGITS} digits") from None
        raise yaml.constructor.ConstructorError(
            None, None, f"a value that cannot be read ({_first(exc)})"
        ) from None
    except (OverflowError, RecursionError) as exc:
        raise yaml.constructor.ConstructorError(
            None, None, f"a value that cannot be read ({_first(exc)})"
        ) from None


_DIGITS = re.compile(r"[-+]?(?:0x[0-9a-fA-F_]+|0o?[0-7_]+|0b[01_]+|[0-9][0-9_:]*)")


def _big_integer(event: yaml.ScalarEvent) -> bool:
    """Whether a scalar would be read as an integer past Python's digit limit: a plain (unquoted)
    one, longer than the limit, in YAML 1.1's integer forms (sign, base prefix, digits,
    underscores, sexagesimal colons)."""
    value = event.value
    return event.style is None and len(value) > MAX_DIGITS and _DIGITS.fullmatch(value) is not None


def _first(exc: BaseException) -> str:
    return str(exc).split("\n", 1)[0][:120] or type(exc).__name__


# PyYAML quotes what it found: a token name ('<scalar>'), punctuation it expected (',' or ']'),
# a character (repr'd: '\t'), or a word of the document (an alias name). Only the last is elided.
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
# The token names PyYAML's messages quote (yaml/tokens.py ids), not any <words>: a verbatim tag of
# the document (`!<%3Cmy secret%3E>`) is quoted as '<my secret>'.
_TOKENS = (
    "directive", "document start", "document end", "stream start", "stream end", "block sequence start",
    "block mapping start", "block end", "alias", "anchor", "tag", "scalar",
)  # fmt: skip
_HARMLESS = re.compile(
    "<(?:" + "|".join(_TOKENS) + r")>|[^A-Za-z0-9]{1,3}|\\(?:[a-z]|x[0-9a-f]{2}|u[0-9a-f]{4})"
)


def yaml_error_message(exc: Exception) -> str:
    """What is wrong with a YAML document and where, without a word of its content: PyYAML's
    own message quotes the offending line (a spec that is a symlink to a secret file would print
    the secret), so this keeps its problem, with quoted text elided, and its line and column."""
    problem = str(getattr(exc, "problem", None) or "malformed document")
    problem = _QUOTED.sub(
        lambda m: m.group(0) if _HARMLESS.fullmatch(m.group(1) or m.group(2) or "") else "'...'", problem
    )
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _count_expanded(root: yaml.Node, max_depth: int = MAX_DEPTH) -> None:
    """The node count and depth with every alias expanded, measured without expanding (each shared
    node once, memoised) and without recursion (an explicit stack). Raises TooLarge over
    MAX_NODES or max_depth, or for an alias inside the node it names (`&a [*a]`: infinite)."""
    sizes: dict[int, tuple[int, int]] = {}  # id -> (values, depth) once known
    open_: set[int] = set()  # on the current path: meeting one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            open_.discard(key)
            known = [sizes[id(c)] for c in children]
            total = 1 + sum(k[0] for k in known)
            depth = 1 + max((k[1] for k in known), default=0)
            if total > MAX_NODES:
                raise TooLarge(f"more than {MAX_NODES} values once its aliases are expanded")
            if depth > max_depth:
                raise TooLarge(f"nested deeper than {max_depth} levels once its aliases are expanded")
            sizes[key] = (total, depth)
            continue
        if key in sizes:
            continue
        if key in open_:
            raise TooLarge("an alias inside the value it names (a cycle, infinite once expanded)")
        open_.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in open_:
                raise TooLarge("an alias inside the value it names (a cycle, infinite once expanded)")
            if id(child) not in sizes:
                stack.append((child, False))


_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


def check_json_depth(text: str | bytes, max_depth: int = MAX_DEPTH) -> None:
    """Refuse JSON nested deeper than `max_depth` before json.loads recurses into it (brackets
    inside strings do not count). Raises TooLarge."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    depth = 0
    for m in _JSON_TOKENS.finditer(data):  # a string is one match: only brackets cost a step
        token = m.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                raise TooLarge(f"nested deeper than {max_depth} levels")
        elif token in (b"]", b"}"):
            depth -= 1


def load_json(text: str | bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads within the limits (size, depth, Python's integer digit limit); bytes must be
    UTF-8. Raises TooLarge, ValueError (json.JSONDecodeError, UnicodeDecodeError)."""
    _check_size(text, max_bytes)
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_json_depth(text, max_depth)
    try:
        return json.loads(text)
    except RecursionError:  # not reachable within max_depth; kept so no caller ever sees one
        raise TooLarge(f"nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # int() past the digit limit
        if "digits" in str(exc):
            raise TooLarge(f"holding a number of more than {MAX_DIGITS} digits") from None
        raise
