"""Signing keys the user controls, offline: generated, stored and loaded with securesystemslib and
cryptography (ECDSA P-256 or Ed25519).

DATA/keys/NAME.key is the private key (PEM PKCS#8, mode 0600 from its first byte, optionally
encrypted with a passphrase); NAME.pub the public key (PEM SubjectPublicKeyInfo, what others
trust). A key's id is securesystemslib's default keyid: sha256 over its canonical public form.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from securesystemslib.signer import CryptoSigner, SSlibKey

from envbuilder.atomic import write_bytes_atomic
from envbuilder.bounded import Refused, read_bounded
from envbuilder.errors import SigningKeyError
from envbuilder.resources import user_data_dir

KEY_TYPES = ("ecdsa", "ed25519")  # ecdsa: NIST P-256 with SHA-256
DEFAULT_NAME = "default"
PASSPHRASE_ENV = "ENVBUILDER_KEY_PASSPHRASE"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # fullmatch: `$` alone takes a final line break

Passphrase = Callable[[str], bytes | None]  # asked with the key's name; None: no passphrase


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyInfo:
    """One key pair in the keys folder (or a public key given as a file: no private part)."""

    name: str
    keytype: str  # ecdsa | ed25519
    scheme: str  # ecdsa-sha2-nistp256 | ed25519
    keyid: str
    public_path: Path
    private_path: Path | None
    encrypted: bool
    created: str

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "keytype": self.keytype,
            "scheme": self.scheme,
            "keyid": self.keyid,
            "public_key": str(self.public_path),
            "private_key": str(self.private_path) if self.private_path else None,
            "encrypted": self.encrypted,
            "created": self.created,
        }


def keys_dir(base: Path | None = None) -> Path:
    """DATA/keys (ENVBUILDER_DATA_DIR, else the XDG data folder)."""
    return (base or user_data_dir()) / "keys"


def check_name(name: str) -> str:
    """Raises SigningKeyError for a name that is not a plain file name."""
    if not _NAME.fullmatch(name):
        raise SigningKeyError(
            f"{name!r} is not a key name",
            hint="use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)",
        )
    return name


def generate_key(
    name: str = DEFAULT_NAME,
    *,
    keytype: str = "ecdsa",
    passphrase: bytes | None = None,
    directory: Path | None = None,
) -> KeyInfo:
    """Make a key pair NAME.key (0600) + NAME.pub in `directory` (default DATA/keys, made 0700).
    Never replaces an existing key. Raises SigningKeyError (bad name or type, the key exists,
    the folder cannot be written)."""
    check_name(name)
    if keytype not in KEY_TYPES:
        raise SigningKeyError(f"unknown key type {keytype!r}", hint=f"use one of {', '.join(KEY_TYPES)}")
    folder = directory or keys_dir()
    private_path, public_path = folder / f"{name}.key", folder / f"{name}.pub"
    if private_path.exists() or public_path.exists():
        raise SigningKeyError(
            f"a key named {name!r} already exists in {folder}",
            hint="choose another --name; a key is never overwritten (see docs/trust.md, rotating keys)",
        )
    private: ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey = (
        ec.generate_private_key(ec.SECP256R1())
        if keytype == "ecdsa"
        else ed25519.Ed25519PrivateKey.generate()
    )
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(passphrase) if passphrase else serialization.NoEncryption()
    )
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    pub = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_bytes_atomic(private_path, pem, mode=0o600, exclusive=True)
        write_bytes_atomic(public_path, pub, mode=0o644, exclusive=True)
    except FileExistsError as exc:
        raise SigningKeyError(f"a key named {name!r} appeared in {folder} meanwhile") from exc
    except OSError as exc:
        raise SigningKeyError(f"cannot write the key to {folder}: {exc}") from exc
    return key_info(public_path)


PUBLIC_KEY_MAX_BYTES = 64 * 1024  # a PEM public key is a few hundred bytes


def public_key_from_pem(pem: bytes, where: str) -> SSlibKey:
    """The securesystemslib key of a PEM public key. Raises SigningKeyError (not a public key
    of a supported type)."""
    try:
        crypto_key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            f"{where} is not a PEM public key: {exc}",
            hint="give the .pub file that `envbuilder keys export-public` writes",
        ) from exc
    if isinstance(crypto_key, ec.EllipticCurvePublicKey) and not isinstance(crypto_key.curve, ec.SECP256R1):
        raise SigningKeyError(f"{where}: ECDSA keys must be on P-256, not {crypto_key.curve.name}")
    if not isinstance(crypto_key, ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey):
        raise SigningKeyError(f"{where}: only ECDSA P-256 and Ed25519 keys are supported")
    return SSlibKey.from_crypto(crypto_key)


def load_public_key(path: Path) -> SSlibKey:
    """Read a PEM public key file (a regular file of at most 64 KiB: a FIFO or /dev/zero named as
    a key is refused unread). Raises SigningKeyError."""
    try:
        pem = read_bounded(path, PUBLIC_KEY_MAX_BYTES)
    except OSError as exc:
        raise SigningKeyError(f"cannot read the public key {path}: {exc.strerror or exc}") from exc
    except Refused as exc:
        raise SigningKeyError(
            f"cannot read the public key {path}: it is {exc}",
            hint="give the .pub file that `envbuilder keys export-public` writes",
        ) from None
    return public_key_from_pem(pem, str(path))


def key_info(public_path: Path) -> KeyInfo:
    """Describe the key whose public half is `public_path` (its private half beside it, if any).
    Raises SigningKeyError."""
    key = load_public_key(public_path)
    private_path = public_path.with_suffix(".key")
    has_private = private_path.is_file()
    encrypted = False
    if has_private:
        try:
            encrypted = b"ENCRYPTED" in private_path.read_bytes()[:64]
        except OSError as exc:
            raise SigningKeyError(f"cannot read {private_path}: {exc}") from exc
    created = datetime.fromtimestamp(public_path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return KeyInfo(
        name=public_path.stem,
        keytype=key.keytype,
        scheme=key.scheme,
        keyid=key.keyid,
        public_path=public_path,
        private_path=private_path if has_private else None,
        encrypted=encrypted,
        created=created,
    )


def list_keys(directory: Path | None = None) -> list[KeyInfo]:
    """Every key pair in the keys folder, by name. Raises SigningKeyError for an unreadable one."""
    folder = directory or keys_dir()
    if not folder.is_dir():
        return []
    return [key_info(p) for p in sorted(folder.glob("*.pub")) if p.with_suffix(".key").is_file()]


def find_key(name: str | None = None, directory: Path | None = None) -> KeyInfo:
    """The key NAME, or the only key there is, or the one named `default`. Raises SigningKeyError."""
    folder = directory or keys_dir()
    keys = list_keys(folder)
    if name is not None:
        check_name(name)
        for k in keys:
            if k.name == name:
                return k
        raise SigningKeyError(
            f"no signing key named {name!r} in {folder}",
            hint="`envbuilder keys list` shows them; `envbuilder keys generate --name NAME` makes one",
        )
    if not keys:
        raise SigningKeyError(
            f"no signing key in {folder}", hint="make one: envbuilder keys generate (see docs/trust.md)"
        )
    if len(keys) == 1:
        return keys[0]
    for k in keys:
        if k.name == DEFAULT_NAME:
            return k
    raise SigningKeyError(
        f"{len(keys)} signing keys in {folder} and none is named {DEFAULT_NAME!r}",
        hint="say which with --sign-key NAME",
    )


def load_signer(info: KeyInfo, passphrase: Passphrase | None = None) -> CryptoSigner:
    """A signer for the private half of `info`. An encrypted key asks `passphrase` (default: the
    ENVBUILDER_KEY_PASSPHRASE variable). Raises SigningKeyError (no private key, no or wrong
    passphrase, the private key does not match its public half)."""
    if info.private_path is None:
        raise SigningKeyError(f"key {info.name!r} has no private half here ({info.public_path})")
    try:
        pem = info.private_path.read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"cannot read the private key {info.private_path}: {exc}") from exc
    secret: bytes | None = None
    if info.encrypted:
        secret = (passphrase or env_passphrase)(info.name)
        if not secret:
            raise SigningKeyError(
                f"key {info.name!r} is passphrase-protected and no passphrase was given",
                hint=f"set {PASSPHRASE_ENV}, or run on a terminal to be asked",
            )
    try:
        private = serialization.load_pem_private_key(pem, secret)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            f"cannot unlock key {info.name!r}: {_unlock_failure(info.encrypted, exc)}",
            hint=f"check {PASSPHRASE_ENV} or the passphrase typed" if info.encrypted else None,
        ) from exc
    try:
        return CryptoSigner(private, load_public_key(info.public_path))
    except ValueError as exc:  # securesystemslib's KeyMismatchError is one
        raise SigningKeyError(f"{info.private_path} does not match {info.public_path}: {exc}") from exc


def _unlock_failure(encrypted: bool, exc: Exception) -> str:
    """Why a private key did not load. An encrypted key's wrong passphrase mostly fails the
    decryption's padding check ("Incorrect password"), but about one in 300 decrypts to bytes
    with valid padding that then fail to parse as a key (7 of 2,000 wrong passphrases, this
    checkout's cryptography, 2026-12-07): the same cause, which the library cannot tell from a
    damaged file."""
    detail = str(exc)
    if not encrypted:
        return detail
    if any(w in detail.lower() for w in ("password", "decrypt")):
        return "wrong passphrase"
    return f"wrong passphrase, or a damaged key file ({detail})"


def env_passphrase(_name: str) -> bytes | None:
    value = os.environ.get(PASSPHRASE_ENV)
    return value.encode("utf-8") if value else None
