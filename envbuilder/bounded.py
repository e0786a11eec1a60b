"""Bounded parsing of files a user (or an attacker) hands in: YAML and JSON with size, depth and
alias-expansion limits, so a 700-byte YAML bomb or a document nested 100,000 deep is one error
line (`TooLarge`, a ValueError), never minutes of CPU, gigabytes of memory or a RecursionError.
Messages name the limit, never the document's content."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

MAX_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 200_000  # scalars and collections after alias expansion


class TooLarge(ValueError):
    """A document over one of the limits; the message says which."""


def _check_size(text: str, max_bytes: int) -> None:
    if len(text) > max_bytes:
        raise TooLarge(f"larger than {max_bytes // 1024} KiB")


def load_yaml(text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """yaml.safe_load within the limits. Raises TooLarge, yaml.YAMLError."""
    _check_size(text, max_bytes)
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):  # iterative: no recursion yet
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                raise TooLarge(f"nested deeper than {max_depth} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is None:
        return None
    _count_expanded(node)
    return yaml.safe_load(text)


# PyYAML quotes what it found: a token name ('<scalar>'), punctuation it expected (',' or ']'),
# a character (repr'd: '\t'), or a word of the document (an alias name). Only the last is elided.
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_HARMLESS = re.compile(r"<[a-z ]+>|[^A-Za-z0-9]{1,3}|\\(?:[a-z]|x[0-9a-f]{2}|u[0-9a-f]{4})")


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


def _count_expanded(root: yaml.Node) -> None:
    """The node count with every alias expanded (memoised over the shared nodes, so a bomb is
    measured without being expanded). Raises TooLarge over MAX_NODES."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        if total > MAX_NODES:
            raise TooLarge(f"more than {MAX_NODES} values once its aliases are expanded")
        sizes[id(node)] = total
        return total

    size(root)


def check_json_depth(text: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse JSON nested deeper than `max_depth` before json.loads recurses into it (brackets
    inside strings do not count). Raises TooLarge."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                raise TooLarge(f"nested deeper than {max_depth} levels")
        elif ch in "]}":
            depth -= 1


def load_json(text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads within the limits. Raises TooLarge, json.JSONDecodeError."""
    _check_size(text, max_bytes)
    check_json_depth(text, max_depth)
    return json.loads(text)
