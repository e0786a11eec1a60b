"""Docker's image reference grammar (distribution/reference, reference.go), one copy: what
`build --tag/--push` accept at parse time and what registry/ parses references with.
https://github.com/distribution/reference/blob/main/regexp.go
"""

from __future__ import annotations

import re

from envbuilder.errors import UsageError

# Each pattern is matched whole (fullmatch, ASCII only): `$` also matches before a trailing
# newline, and `\d` takes any Unicode digit; Go's regexp (which docker uses) does neither.
COMPONENT_RE = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*", re.ASCII)
TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", re.ASCII)
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)
HOST_RE = re.compile(r"(?:\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)(?::[0-9]{1,5})?", re.ASCII)
# distribution/reference's domain: dot-separated labels (no leading/trailing '-'), a port.
DOMAIN_RE = re.compile(
    r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*"
    r"(?::[0-9]{1,5})?",
    re.ASCII,
)
NAME_MAX = 255  # distribution/reference's NameTotalLengthMax (the name, without its tag)


def check_tag(text: str, option: str = "--tag") -> str:
    """A reference to tag an image with, as `docker tag` takes it: [DOMAIN/]PATH[:TAG], matched
    whole against distribution/reference's grammar, its name at most 255 characters. Returns it
    unchanged. Raises UsageError naming `option` (a trailing newline or space is refused, not
    stripped: docker would refuse it only after the build)."""
    name, tag = text, None
    head, sep, tail = text.rpartition(":")
    if sep and "/" not in tail:
        name, tag = head, tail
    first, slash, rest = name.partition("/")
    has_domain = bool(slash) and ("." in first or ":" in first or first == "localhost")  # as docker reads it
    path = rest if has_domain else name
    good = (
        bool(text)
        and (not has_domain or DOMAIN_RE.fullmatch(first) is not None)
        and len(name) <= NAME_MAX
        and (tag is None or TAG_RE.fullmatch(tag) is not None)
        and all(COMPONENT_RE.fullmatch(c) for c in path.split("/"))
    )
    if not good:
        shown = ascii(text[:80]) + ("..." if len(text) > 80 else "")
        raise UsageError(
            f"{option} {shown} is not a valid image reference",
            hint=f"write it as [REGISTRY/]NAME[:TAG], e.g. myorg/train:v1 (lowercase name, "
            f"{NAME_MAX} characters at most, ASCII, no spaces or newlines)",
        )
    return text


def check_registry(text: str, option: str = "--push") -> str:
    """A registry to push to: HOST[:PORT] and an optional repository prefix (127.0.0.1:5000/team),
    matched whole. Returns it unchanged. Raises UsageError naming `option`."""
    host, _, prefix = text.partition("/")
    good = (
        len(text) <= NAME_MAX
        and DOMAIN_RE.fullmatch(host) is not None
        and (not prefix or all(COMPONENT_RE.fullmatch(c) for c in prefix.split("/")))
    )
    if not good:
        shown = ascii(text[:80]) + ("..." if len(text) > 80 else "")
        raise UsageError(f"{option} {shown} is not a registry address", hint="e.g. 127.0.0.1:5000")
    return text
