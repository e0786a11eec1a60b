"""Registry authentication: the `WWW-Authenticate` challenge, HTTP Basic with the Docker config's
credentials, and the bearer-token flow of the distribution token spec (anonymous, with a
username/password, or with an identity token as an OAuth2 refresh token).
Spec: https://distribution.github.io/distribution/spec/auth/token/
"""

from __future__ import annotations

import base64
import re
import time
from dataclasses import dataclass
from typing import Any

import requests

from envbuilder.bounded import load_json
from envbuilder.engine.credentials import Credentials
from envbuilder.errors import RegistryAuthError, RegistryError

_PARAM = re.compile(r'([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')
CLIENT_ID = "envbuilder"
TOKEN_MAX_BYTES = 1024 * 1024  # a token answer is a few KiB


@dataclass(frozen=True, slots=True, kw_only=True)
class Challenge:
    scheme: str  # basic | bearer
    params: dict[str, str]


def parse_challenge(header: str) -> Challenge | None:
    """`Bearer realm="https://auth/token",service="reg",scope="repository:a:pull"` -> Challenge."""
    scheme, _, rest = header.strip().partition(" ")
    if not scheme:
        return None
    params = {
        m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _PARAM.finditer(rest)
    }
    return Challenge(scheme=scheme.lower(), params=params)


def basic_header(creds: Credentials) -> str:
    raw = f"{creds.username or ''}:{creds.password or ''}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


@dataclass(slots=True)
class _Token:
    value: str
    expires: float


class TokenCache:
    """Bearer tokens per (realm, service, scope), kept until shortly before they expire."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[str, str, str], _Token] = {}

    def get(self, key: tuple[str, str, str]) -> str | None:
        tok = self._tokens.get(key)
        return tok.value if tok and tok.expires > time.monotonic() else None

    def put(self, key: tuple[str, str, str], value: str, expires_in: float) -> None:
        self._tokens[key] = _Token(value, time.monotonic() + max(expires_in - 10.0, 1.0))


def read_head(resp: requests.Response, limit: int) -> bytes:
    """At most `limit` bytes of an answer's body: a streamed one is read only that far, then
    closed (a registry's answer is never read whole before its size is known)."""
    if getattr(resp, "_content_consumed", True) or resp.raw is None:  # not streamed, or read
        return bytes(resp.content[:limit])
    chunks, size = [], 0
    try:
        for chunk in resp.iter_content(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
    finally:
        resp.close()
    return b"".join(chunks)[:limit]


def fetch_token(
    session: requests.Session,
    challenge: Challenge,
    scope: str,
    creds: Credentials | None,
    *,
    registry: str,
    timeout: float,
) -> tuple[str, float]:
    """Ask the challenge's realm for a bearer token for `scope`; return (token, expires_in).
    Raises RegistryAuthError (refused), RegistryError (the token server is unreachable or
    answers nonsense)."""
    realm = challenge.params.get("realm")
    if not realm or not realm.startswith(("https://", "http://")):
        raise RegistryError(f"{registry} asked for a bearer token without a usable realm ({realm!r})")
    service = challenge.params.get("service", "")
    scope = scope or challenge.params.get("scope", "")
    try:
        if creds is not None and creds.identity_token:
            resp = session.post(
                realm,
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": creds.identity_token,
                    "service": service,
                    "scope": scope,
                    "client_id": CLIENT_ID,
                },
                timeout=timeout,
                stream=True,
            )
        else:
            headers = {"Authorization": basic_header(creds)} if creds and creds.username else {}
            params = {"service": service, "scope": scope, "client_id": CLIENT_ID}
            resp = session.get(
                realm,
                params={k: v for k, v in params.items() if v},
                headers=headers,
                timeout=timeout,
                stream=True,
            )
    except requests.RequestException as exc:
        raise RegistryError(f"cannot reach the token server {realm} of {registry}: {exc}") from exc
    if resp.status_code in (401, 403):
        raise RegistryAuthError(
            f"the token server of {registry} refused "
            + ("the Docker config's credentials" if creds else "an anonymous request")
            + f" for {scope or 'access'} (HTTP {resp.status_code})",
            hint=f"`docker login {registry}` (envbuilder reads the same Docker config)",
        )
    if resp.status_code != 200:
        raise RegistryError(f"the token server {realm} of {registry} answered HTTP {resp.status_code}")
    try:
        body = read_head(resp, TOKEN_MAX_BYTES + 1)
    except requests.RequestException:
        body = b""
    return parse_token_answer(body, f"the token server {realm} of {registry}")


def parse_token_answer(body: bytes, where: str) -> tuple[str, float]:
    """(token, expires_in) of a token server's answer, read within bounded.load_json's limits (a
    token answer is small; one nested 200,000 deep is refused, not a crash). Raises
    RegistryError (not JSON, too large, no token)."""
    try:
        doc: Any = load_json(body, max_bytes=TOKEN_MAX_BYTES)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, bounded.TooLarge
        raise RegistryError(f"{where} did not answer JSON") from None
    token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
    if not isinstance(token, str) or not token:
        raise RegistryError(f"{where} gave no token")
    expires = doc.get("expires_in", 60)
    ok = isinstance(expires, int | float) and not isinstance(expires, bool) and 0 < expires < 366 * 86400
    return token, float(expires) if ok else 60.0
