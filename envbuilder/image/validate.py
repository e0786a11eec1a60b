"""Strict checks of the values a stack (or a lock file) brings to a Dockerfile.

A lock file is user-editable input too: every value that reaches a template passes a pattern
here first; anything else raises SpecError. Nothing is escaped.
"""

from __future__ import annotations

import re

from envbuilder.errors import SpecError
from envbuilder.image.sources import INDEX_URL_RE
from envbuilder.resolve.model import Stack

# Patterns for values that come from a stack / lock file (render refuses, never escapes).
# Digits are [0-9], not \d (which also matches full-width and other Unicode digits).
# The registry host starts with a letter or digit, as Docker's grammar (imageref.DOMAIN_RE) has
# it: `-nvidia/cuda:12` is no reference, and a tool given it as a word would read options.
IMAGE_REF_RE = re.compile(
    r"(?:[a-z0-9][a-z0-9.-]*(?::[0-9]{1,5})?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)
PIN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+")
VERSION_RE = re.compile(r"[0-9]+(?:\.[0-9]+){0,3}")
DRIVER_RE = re.compile(r"[0-9]{3,4}(?:\.[0-9]{1,3}){0,2}")
CC_RE = re.compile(r"[0-9]{1,2}\.[0-9]")
REQUIRE_CUDA_RE = re.compile(r"cuda>=[0-9]+\.[0-9]+(?: brand=[a-z]+,driver>=[0-9]{3,4},driver<[0-9]{3,4})*")
TOKEN_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
LABEL_KEY_RE = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,126}[a-z0-9])?")
MAX_LABEL_VALUE = 65536
REGENERATE_RE = re.compile(r"[A-Za-z0-9 ._/=:,@+'-]{1,400}")


def refuse(field: str, value: object, hint: str) -> SpecError:
    text = repr(value)
    text = text if len(text) <= 100 else text[:97] + "..."
    return SpecError(
        f"stack field {field!r}: value {text} refused", hint, field=f"stack.{field}", value=value
    )


def dockerfile_string(text: str, field: str) -> str:
    """`text` as one double-quoted Dockerfile word: `\\`, `"` and `$` escaped (the three that
    BuildKit's word lexer treats specially inside double quotes), everything else as is, so the
    value Docker reads back is exactly `text`. Any printable Unicode; a newline, tab or other
    control character is refused (SpecError), which also keeps it on one line."""
    if len(text) > MAX_LABEL_VALUE or not text.isprintable():
        raise refuse(field, text, "labels are one line of printable text (no newlines or control characters)")
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


def check(field: str, value: str | None, regex: re.Pattern[str], hint: str) -> None:
    if value is not None and (not isinstance(value, str) or not regex.fullmatch(value)):
        raise refuse(field, value, hint)


def validate_stack(stack: Stack) -> None:
    """Check every stack value that reaches the Dockerfile. Raises SpecError (a corrupt lock)."""
    lock_hint = "the lock file or stack looks corrupt; re-run `envbuilder resolve --lock`"
    check("id", stack.id, TOKEN_RE, lock_hint)
    check("framework", stack.framework, TOKEN_RE, lock_hint)
    check("version", stack.version, TOKEN_RE, lock_hint)
    check("variant", stack.variant, TOKEN_RE, lock_hint)
    check("os", stack.os, TOKEN_RE, lock_hint)
    check(
        "base_image",
        stack.base_image,
        IMAGE_REF_RE,
        "a Docker image reference such as nvidia/cuda:12.8.1-runtime-ubuntu24.04",
    )
    check(
        "index_url",
        stack.index_url,
        INDEX_URL_RE,
        "an https:// index URL (http:// only for a loopback mirror) without credentials or query; "
        "pass tokens as a build secret",
    )
    check("python", stack.python, re.compile(r"3\.[0-9]{1,2}"), lock_hint)
    for name in ("cuda", "cudnn", "nccl"):
        check(name, getattr(stack, name), VERSION_RE, lock_hint)
    check("min_driver", stack.min_driver, DRIVER_RE, lock_hint)
    if stack.require_cuda is not None and not (
        VERSION_RE.fullmatch(stack.require_cuda) or REQUIRE_CUDA_RE.fullmatch(stack.require_cuda)
    ):
        raise refuse("require_cuda", stack.require_cuda, lock_hint)
    for field in ("sass", "ptx"):
        for cc in getattr(stack, field):
            check(field, cc, CC_RE, lock_hint)
    if stack.strategy not in ("bundled", "system-cuda"):
        raise refuse("strategy", stack.strategy, lock_hint)
    if stack.python_install not in ("apt", "present"):
        raise refuse("python_install", stack.python_install, lock_hint)
    if not stack.packages:
        raise refuse("packages", stack.packages, lock_hint)
    for pin in (*stack.packages, *(req for _, req in stack.companions)):
        check("packages", pin, PIN_RE, "exact pins NAME[extras]==VERSION only")
    for name, _ in stack.companions:
        check("companions", name, TOKEN_RE, lock_hint)
