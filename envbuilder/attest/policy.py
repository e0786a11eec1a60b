"""The trust policy: which public keys may sign certificates, for which repositories, and how old
a certificate may be.

A policy file (YAML or JSON, docs/trust.md):

    schema_version: 1
    max_age: 30d                    # optional: older certificates are refused (s, m, h, d, w)
    keys:
      - name: ci
        public_key: ci.pub          # a path relative to this file, or `pem: |` inline
        repositories: ["registry.example.com/team/*"]   # optional (fnmatch); default: all

Without --trust or --key, DATA/trust.yaml is the policy; without that file, the user's own keys
(DATA/keys/*.pub) are trusted for every repository.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from securesystemslib.signer import SSlibKey

from envbuilder.atomic import write_text_atomic
from envbuilder.attest.keys import check_name, keys_dir, list_keys, load_public_key, public_key_from_pem
from envbuilder.bounded import Refused, load_yaml, read_text_bounded, yaml_error_message
from envbuilder.errors import SigningKeyError
from envbuilder.resources import user_data_dir

SCHEMA_VERSION = 1
POLICY_NAME = "trust.yaml"
POLICY_MAX_BYTES = 256 * 1024  # a policy lists keys: anything bigger is a mistake or an attack
# [0-9], not \d: \d takes any script's digits (float() reads an Arabic-Indic 3 as 3); ASCII \s.
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)\s*", re.ASCII)
_MAX_AGE_S = 100 * 365 * 86400
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustedKey:
    name: str
    key: SSlibKey
    repositories: tuple[str, ...] = ()  # fnmatch patterns; empty: every repository

    @property
    def keyid(self) -> str:
        return str(self.key.keyid)

    def covers(self, repository: str) -> bool:
        return not self.repositories or any(fnmatch.fnmatchcase(repository, p) for p in self.repositories)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustPolicy:
    keys: tuple[TrustedKey, ...]
    max_age_s: float | None = None
    source: str = "(given)"  # what the policy was read from, for messages

    def keys_for(self, repository: str) -> list[TrustedKey]:
        """The keys trusted to sign for `repository` (registry/name, no tag)."""
        return [k for k in self.keys if k.covers(repository)]

    def with_max_age(self, max_age_s: float | None) -> TrustPolicy:
        if max_age_s is None:
            return self
        return TrustPolicy(keys=self.keys, max_age_s=max_age_s, source=self.source)

    def describe(self) -> str:
        names = ", ".join(f"{k.name} ({k.keyid[:12]})" for k in self.keys) or "no keys"
        return f"{self.source}: {names}"


def parse_duration(text: str | int | float, where: str = "max_age") -> float:
    """'30d', '12h', '90m', '45s', '2w' or a number of seconds -> seconds. Raises SigningKeyError."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        seconds = float(text) if abs(text) < 1e300 else math.inf  # float(10**400): OverflowError
    else:
        m = _DURATION.fullmatch(str(text))
        if not m:
            raise SigningKeyError(
                f"{where} {_shown(text)} is not a duration", hint="write it like 30d, 12h, 90m, 45s or 2w"
            )
        seconds = float(m.group(1)) * _UNIT_S[m.group(2)]  # a 300-digit number is inf: refused below
    if not math.isfinite(seconds) or seconds > _MAX_AGE_S:
        raise SigningKeyError(f"{where} is longer than 100 years", hint="write it like 30d, 12h or 2w")
    if seconds <= 0:
        raise SigningKeyError(f"{where} {_shown(text)} must be positive")
    return seconds


def _shown(value: object, *, plain: bool = False) -> str:
    """A value of the policy as a message shows it, on one line and at most 60 characters:
    repr'd (a newline or an escape stays visible), or with `plain` as it is where it is short
    printable text (a key's name)."""
    if plain and isinstance(value, str) and value.isprintable() and len(value) <= 60:
        return value
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def policy_path(base: Path | None = None) -> Path:
    return (base or user_data_dir()) / POLICY_NAME


def own_keys_policy(base: Path | None = None) -> TrustPolicy:
    """Trust the user's own keys (DATA/keys/*.pub) for every repository."""
    folder = keys_dir(base)
    keys = tuple(TrustedKey(name=k.name, key=load_public_key(k.public_path)) for k in list_keys(folder))
    return TrustPolicy(keys=keys, source=f"your own keys in {folder}")


def key_policy(paths: Sequence[Path]) -> TrustPolicy:
    """Trust exactly these public key files (--key), for every repository. Raises SigningKeyError."""
    keys = tuple(TrustedKey(name=Path(p).stem, key=load_public_key(Path(p))) for p in paths)
    return TrustPolicy(keys=keys, source="--key " + " ".join(str(p) for p in paths))


def load_policy(path: Path) -> TrustPolicy:
    """Read a policy file within envbuilder.bounded's limits (a regular file of at most
    POLICY_MAX_BYTES; a YAML bomb, a cyclic alias, a 5,000-digit number are refused at once).
    Raises SigningKeyError naming the file and the field at fault."""
    hint = "a trust policy is a short YAML file (docs/trust.md)"
    try:
        doc = load_yaml(read_text_bounded(path, POLICY_MAX_BYTES), max_bytes=POLICY_MAX_BYTES)
    except OSError as exc:
        raise SigningKeyError(f"cannot read the trust policy {path}: {exc.strerror or exc}", hint) from None
    except Refused as exc:
        raise SigningKeyError(f"trust policy {path} refused: it is {exc}", hint=hint) from None
    except UnicodeDecodeError as exc:
        raise SigningKeyError(f"trust policy {path} is not UTF-8 text (byte {exc.start})", hint) from None
    except yaml.YAMLError as exc:
        raise SigningKeyError(
            f"trust policy {path} is not valid YAML: {yaml_error_message(exc)}", hint=hint
        ) from None
    return parse_policy(doc, where=str(path), base=Path(path).parent)


def parse_policy(doc: Any, *, where: str, base: Path) -> TrustPolicy:
    """A parsed policy document -> TrustPolicy. Raises SigningKeyError."""
    if not isinstance(doc, Mapping):
        raise SigningKeyError(f"{where}: a trust policy is a mapping with `keys`")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise SigningKeyError(f"{where}: schema_version must be {SCHEMA_VERSION}")
    unknown = sorted(_shown(k, plain=True) for k in set(doc) - {"schema_version", "max_age", "keys"})
    if unknown:
        raise SigningKeyError(f"{where}: unknown field(s) {', '.join(unknown)}")
    entries = doc.get("keys")
    if not isinstance(entries, list):
        raise SigningKeyError(f"{where}: `keys` must be a list")
    keys = tuple(_trusted_key(e, f"{where}: keys[{i}]", base) for i, e in enumerate(entries))
    max_age = doc.get("max_age")
    return TrustPolicy(
        keys=keys,
        max_age_s=None if max_age is None else parse_duration(max_age, f"{where}: max_age"),
        source=where,
    )


def _trusted_key(entry: Any, where: str, base: Path) -> TrustedKey:
    if not isinstance(entry, Mapping):
        raise SigningKeyError(f"{where} must be a mapping with name and public_key (or pem)")
    unknown = sorted(
        _shown(k, plain=True) for k in set(entry) - {"name", "public_key", "pem", "repositories"}
    )
    if unknown:
        raise SigningKeyError(f"{where}: unknown field(s) {', '.join(unknown)}")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise SigningKeyError(f"{where}: `name` is missing")
    where = f"{where} ({_shown(name, plain=True)})"  # the user's text, quoted and cut: never a second line
    if ("public_key" in entry) == ("pem" in entry):
        raise SigningKeyError(f"{where}: give exactly one of public_key (a file) or pem")
    if "pem" in entry:
        if not isinstance(entry["pem"], str):
            raise SigningKeyError(f"{where}: pem must be text")
        key = public_key_from_pem(entry["pem"].encode("ascii", "replace"), where)
    else:
        try:
            key = load_public_key(base / str(entry["public_key"]))
        except SigningKeyError as exc:
            raise SigningKeyError(f"{where}: {exc.message}", hint=exc.hint) from exc
    repos = entry.get("repositories", [])
    if not isinstance(repos, list) or not all(isinstance(r, str) and r for r in repos):
        raise SigningKeyError(f"{where}: repositories must be a list of patterns")
    return TrustedKey(name=name, key=key, repositories=tuple(repos))


def default_policy(base: Path | None = None) -> TrustPolicy:
    """DATA/trust.yaml when it exists, else the user's own keys. Raises SigningKeyError."""
    path = policy_path(base)
    return load_policy(path) if path.is_file() else own_keys_policy(base)


def choose_policy(
    *, keys: Sequence[Path] = (), trust: Path | None = None, max_age: str | None = None
) -> TrustPolicy:
    """The policy the command line asks for: --key files, else a --trust file, else the default;
    --max-age overrides the policy's. Raises SigningKeyError (both given, or unreadable)."""
    if keys and trust is not None:
        raise SigningKeyError("give --key or --trust, not both", hint="list extra keys in the policy file")
    policy = key_policy(keys) if keys else load_policy(trust) if trust is not None else default_policy()
    return policy.with_max_age(parse_duration(max_age, "--max-age") if max_age is not None else None)


def import_trusted_key(
    public_key: Path, *, name: str | None = None, repositories: Sequence[str] = (), base: Path | None = None
) -> Path:
    """Copy a public key into DATA/keys/trusted/ and add it to DATA/trust.yaml (made on first use,
    listing the user's own keys so that they stay trusted). Returns the policy path. Raises
    SigningKeyError (unreadable key, a name taken by another key, an unwritable folder)."""
    key = load_public_key(public_key)
    name = check_name(name or Path(public_key).stem)
    path = policy_path(base)
    folder = keys_dir(base) / "trusted"
    doc: dict[str, Any]
    if path.is_file():
        load_policy(path)  # refuse to extend a broken policy
        doc = load_yaml(read_text_bounded(path, POLICY_MAX_BYTES), max_bytes=POLICY_MAX_BYTES)
    else:
        own = list_keys(keys_dir(base))
        doc = {
            "schema_version": SCHEMA_VERSION,
            "keys": [
                {"name": k.name, "public_key": str(k.public_path.relative_to(path.parent))} for k in own
            ],
        }
    for entry in doc["keys"]:
        if entry.get("name") == name:
            raise SigningKeyError(
                f"{path} already trusts a key named {name!r}", hint="choose another --name, or edit the file"
            )
    dest = folder / f"{name}.pub"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(dest, Path(public_key).read_text(encoding="ascii"))
        dest.chmod(0o644)
        added: dict[str, Any] = {"name": name, "public_key": str(dest.relative_to(path.parent))}
        if repositories:
            added["repositories"] = list(repositories)
        doc["keys"].append(added)
        write_text_atomic(path, yaml.safe_dump(doc, sort_keys=False))
    except (OSError, UnicodeDecodeError) as exc:
        raise SigningKeyError(f"cannot add {public_key} to {path}: {exc}") from exc
    if load_policy(path).keys[-1].keyid != key.keyid:  # what was written is what was meant
        raise SigningKeyError(f"{path}: the key just added does not read back as {public_key}")
    return path
