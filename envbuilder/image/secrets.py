"""Secrets out of lock files and messages: what a tool prints of a secret's value (an index URL
with its token in the credentials, the path or the query; a password) becomes `<secret:NAME>`,
and any URL loses its credentials and query values. Where a lock records an index given as a
secret, it writes `<secret:NAME>`."""

from __future__ import annotations

import contextlib
import re
import urllib.parse

SECRET_REF_RE = re.compile(r"^<secret:[A-Za-z0-9_.-]{1,64}>$")


Secrets = tuple[tuple[str, str], ...]  # (name, value) of what was given as a secret


def redact(text: str, secrets: Secrets = ()) -> str:
    """`text` with every secret out of it, so a lock file or a message never holds one: each
    given secret's value (a URL in any of the forms a tool prints it: with its credentials, without
    them, with a masked password) becomes `<secret:NAME>`; and in every URL, the credentials
    (user:password@, a password that holds a raw `@` included) are removed and each query
    value (`?token=`, `&access_token=`, a presigned URL's signature) becomes `***`."""
    for name, value in secrets:
        for pattern in _secret_patterns(value):
            text = pattern.sub(f"<secret:{name}>", text)
    text = _USERINFO_RE.sub(r"\1", text)
    return _QUERY_RE.sub(lambda m: m.group(1) + _QUERY_VALUE_RE.sub(r"\1***", m.group(2)), text)


# userinfo runs to the last `@` before the host: a raw `@` in a password (user:pa@ss@host) is
# part of it. No `/`, `?`, `#` or whitespace inside it (RFC 3986).
_USERINFO_RE = re.compile(r"((?:https?|file)://)[^/?#\s]*@")
_QUERY_RE = re.compile(r"((?:https?|file)://[^?#\s]*\?)([^#\s]*)")
_QUERY_VALUE_RE = re.compile(r"((?:^|[&;])[^=&;]*=)[^&;]*")
_MIN_SECRET = 4  # shorter values would redact ordinary words; no real token is that short


def _secret_patterns(value: str) -> list[re.Pattern[str]]:
    """How a secret's value may appear in a tool's output. A URL: scheme and credentials optional
    (`http://u:****@h/p`, `h/p`), anything after its path kept (`.../simple/filelock/`), its
    password and its query on their own too; any other value: itself."""
    value = value.strip()
    if len(value) < _MIN_SECRET:
        return []
    parts = None
    if "://" in value:
        try:
            parts = urllib.parse.urlsplit(value)
        except ValueError:  # a `[` or `]` out of place (a token pasted raw): read with them encoded
            with contextlib.suppress(ValueError):
                parts = urllib.parse.urlsplit(value.replace("[", "%5B").replace("]", "%5D"))
    if parts is None or not parts.hostname:
        return [re.compile(re.escape(value))]
    host = parts.netloc.rpartition("@")[2]
    where = host + parts.path.rstrip("/") + (f"?{parts.query}" if parts.query else "")
    out = [re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:[^/?#\s]*@)?" + re.escape(where))]
    # The value as given too, where urlsplit read it otherwise (brackets encoded above, a tab or a
    # line break inside it dropped): after `where`, before its pieces take out part of it.
    out.append(re.compile(re.escape(value)))
    for piece in (parts.password, urllib.parse.unquote(parts.password or ""), parts.query):
        if piece and len(piece) >= _MIN_SECRET:
            out.append(re.compile(re.escape(piece)))
    return out


def recorded_url(url: str | None, secrets: Secrets) -> str | None:
    """How a lock records an index URL: `<secret:NAME>` when it was given as a secret (its token
    may sit anywhere in it: the path, the query, the credentials), else without credentials."""
    if url is None:
        return None
    for name, value in secrets:
        if url.strip() == value.strip():
            return f"<secret:{name}>"
    return redact(url, secrets)


def is_secret_ref(value: object) -> bool:
    """`<secret:NAME>`: where a lock records an index URL that was given as a secret."""
    return isinstance(value, str) and SECRET_REF_RE.fullmatch(value) is not None
