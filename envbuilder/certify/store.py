"""The embedded certificate store: one SQLite file in the user's data folder.

WAL journal, a busy timeout and one `BEGIN IMMEDIATE` transaction per write make it safe against
concurrent writers and crashes mid-write: a row holds the whole certificate JSON and its hash, so
a certificate is either stored whole or not at all. Every read re-verifies the content hash.

Records are keyed by image ID (the config digest, as certified) and by registry manifest digest
(`image_digests`: recorded on push, or when an attestation is fetched). Certificates that came
from a registry (`origin` 'attestation') keep their signed envelopes (`attestations`), which are
verified again against the trust policy each time they are used; so do imported ones (`origin`
'imported') that came as a signed envelope. Finding an image's certificates is an index lookup
whatever the store's size (`image_query`; tests pin its plan with EXPLAIN QUERY PLAN).
"""

from __future__ import annotations

import builtins
import contextlib
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from envbuilder.atomic import write_text_atomic
from envbuilder.bounded import read_text_bounded
from envbuilder.certify.certificate import (
    Certificate,
    issued_in_future,
    newest_key,
    parse_timestamp,
    require_valid,
    verify_certificate,
)
from envbuilder.errors import CertificateRefusedError, StoreError, UsageError
from envbuilder.hashing import sha256_digest
from envbuilder.resources import user_data_dir

DB_NAME = "certs.sqlite"
BUSY_TIMEOUT_MS = 30_000
MIN_PREFIX = 4
_STORE_HINT = "check that the folder is writable and has space, or point ENVBUILDER_DATA_DIR elsewhere"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS certificates (
    id TEXT PRIMARY KEY,            -- hex of the content hash
    content_hash TEXT NOT NULL,     -- sha256:<hex>, as in the document
    image_id TEXT NOT NULL,
    image_ref TEXT,
    verdict TEXT NOT NULL,
    host_fingerprint TEXT,
    issued_at TEXT NOT NULL,
    stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    body TEXT NOT NULL              -- the certificate JSON, exactly as exported
);
CREATE INDEX IF NOT EXISTS certificates_image ON certificates (image_id);
CREATE TABLE IF NOT EXISTS image_digests (
    cert_id TEXT NOT NULL,          -- certificates.id
    repository TEXT NOT NULL,       -- registry/name
    manifest_digest TEXT NOT NULL,  -- sha256:<hex> of the registry manifest
    recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    PRIMARY KEY (cert_id, repository, manifest_digest)
);
CREATE INDEX IF NOT EXISTS image_digests_digest ON image_digests (manifest_digest);
CREATE TABLE IF NOT EXISTS attestations (
    envelope_digest TEXT PRIMARY KEY,  -- sha256:<hex> of the DSSE envelope bytes
    cert_id TEXT NOT NULL,
    repository TEXT NOT NULL,
    manifest_digest TEXT NOT NULL,
    keyid TEXT NOT NULL,
    verified_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    envelope TEXT NOT NULL             -- the envelope JSON, exactly as fetched
);
CREATE INDEX IF NOT EXISTS attestations_cert ON attestations (cert_id);
CREATE INDEX IF NOT EXISTS attestations_digest ON attestations (manifest_digest);
CREATE INDEX IF NOT EXISTS certificates_ref ON certificates (image_ref);
"""
# user_version 2: origin 'imported', the image_ref and attestation digest indexes. Older stores are
# migrated when opened (the origin column added, the indexes made); certificates imported before
# version 2 were stored as 'local' and stay so, since nothing recorded where they came from.
SCHEMA_VERSION = 2
_ADD_ATTESTATION = (
    "INSERT OR REPLACE INTO attestations (envelope_digest, cert_id, repository, manifest_digest, keyid, "
    "envelope) VALUES (?, ?, ?, ?, ?, ?)"
)
_ADD_DIGEST = "INSERT OR IGNORE INTO image_digests (cert_id, repository, manifest_digest) VALUES (?, ?, ?)"
# certified here | fetched from a registry, signed | `certs import`ed (signed or not: see attestations)
ORIGINS = ("local", "attestation", "imported")
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredCert:
    """One row as listed: enough for a table, without parsing the body."""

    id: str
    image_id: str
    image_ref: str | None
    verdict: str
    host_fingerprint: str | None
    issued_at: str
    stored_at: str
    origin: str = "local"  # one of ORIGINS


def newest_first(rows: builtins.list[tuple[Any, ...]]) -> builtins.list[StoredCert]:
    """Rows of (id, image_id, image_ref, verdict, host_fingerprint, issued_at, stored_at, origin)
    as StoredCerts, newest first by the time itself; an issued_at that is no timestamp (a store
    written before import checked it) sorts last. The sort is stable: ties keep SQL's order."""
    rows = sorted(rows, key=lambda r: newest_key(r[5]))
    return [
        StoredCert(
            id=r[0],
            image_id=r[1],
            image_ref=r[2],
            verdict=r[3],
            host_fingerprint=r[4],
            issued_at=r[5],
            stored_at=r[6],
            origin=r[7],
        )
        for r in rows
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class CachedAttestation:
    """A verified attestation kept in the store: verify its envelope again before trusting it."""

    cert_id: str
    repository: str
    manifest_digest: str
    keyid: str
    verified_at: str
    envelope: bytes


class CertStore:
    """The store at `path` (default: resources.user_data_dir()/certs.sqlite). Methods raise
    StoreError when the file cannot be used; reads raise CertificateRefusedError for a tampered row."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else user_data_dir() / DB_NAME
        self._after_insert: Callable[[], None] | None = None  # tests: crash between statements
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db, _write(db):
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    db.execute(stmt)
                columns = {row[1] for row in db.execute("PRAGMA table_info(certificates)")}
                if "origin" not in columns:  # a store made before attestations
                    db.execute("ALTER TABLE certificates ADD COLUMN origin TEXT NOT NULL DEFAULT 'local'")
                if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"cannot open the certificate store {self.path}: {exc}", _STORE_HINT, file=str(self.path)
            ) from exc

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _use_wal(db)
            db.execute("PRAGMA synchronous = FULL")
            yield db
        finally:
            db.close()

    # ------------------------------------------------------------------ write

    def add(self, cert: Certificate) -> str:
        """Store a certificate after verifying it; return its id. Adding the same certificate
        again is a no-op. Raises CertificateRefusedError (tampered), StoreError."""
        require_valid(cert)
        try:
            with self._connect() as db, _write(db):
                _insert(db, cert, "local")
                if self._after_insert is not None:
                    self._after_insert()
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot write to the certificate store {self.path}: {exc}", _STORE_HINT, file=str(self.path)
            ) from exc
        return cert.id

    def add_imported(
        self,
        cert: Certificate,
        *,
        envelope: bytes | None = None,
        envelope_digest: str = "",
        repository: str = "",
        manifest_digest: str = "",
        keyid: str = "",
    ) -> str:
        """Store a certificate that `certs import` verified, with origin 'imported', and the
        signed envelope it came in (None: it came unsigned), in one transaction; return its id.
        A certificate already stored keeps its origin. Raises CertificateRefusedError, StoreError."""
        require_valid(cert)
        text = None if envelope is None else _envelope_text(envelope)
        try:
            with self._connect() as db, _write(db):
                _insert(db, cert, "imported")
                if text is not None:
                    db.execute(
                        _ADD_ATTESTATION, (envelope_digest, cert.id, repository, manifest_digest, keyid, text)
                    )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the certificate store {self.path}: {exc}") from exc
        return cert.id

    def record_digest(self, cert_ids: Sequence[str], repository: str, manifest_digest: str) -> None:
        """Key these certificates by the registry manifest digest their image was pushed as
        (in `repository`) too. Raises StoreError."""
        try:
            with self._connect() as db, _write(db):
                for cid in cert_ids:
                    db.execute(_ADD_DIGEST, (cid, repository, manifest_digest))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the certificate store {self.path}: {exc}") from exc

    def add_attested(
        self,
        cert: Certificate,
        *,
        envelope: bytes,
        envelope_digest: str,
        repository: str,
        manifest_digest: str,
        keyid: str,
    ) -> str:
        """Cache a certificate verified from a registry attestation, with its envelope and the
        manifest digest, in one transaction; return its id. A certificate already stored keeps
        its origin. Raises CertificateRefusedError (tampered), StoreError."""
        require_valid(cert)
        text = _envelope_text(envelope)
        try:
            with self._connect() as db, _write(db):
                _insert(db, cert, "attestation")
                db.execute(_ADD_DIGEST, (cert.id, repository, manifest_digest))
                db.execute(
                    _ADD_ATTESTATION, (envelope_digest, cert.id, repository, manifest_digest, keyid, text)
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the certificate store {self.path}: {exc}") from exc
        return cert.id

    def attestations(self, manifest_digest: str) -> builtins.list[CachedAttestation]:
        """The cached attestations of the image with this manifest digest. Raises StoreError."""
        rows = self._query(
            "SELECT cert_id, repository, manifest_digest, keyid, verified_at, envelope FROM attestations "
            "WHERE manifest_digest = ? ORDER BY verified_at DESC, envelope_digest",
            (manifest_digest,),
        )
        return [_cached(r) for r in rows]

    def envelopes(self, cert_id: str) -> builtins.list[CachedAttestation]:
        """The signed envelopes kept for this certificate (fetched, or imported with it), newest
        first: verify each again before trusting it. Raises StoreError."""
        rows = self._query(
            "SELECT cert_id, repository, manifest_digest, keyid, verified_at, envelope FROM attestations "
            "WHERE cert_id = ? ORDER BY verified_at DESC, envelope_digest",
            (cert_id,),
        )
        return [_cached(r) for r in rows]

    def digests(self, cert_id: str) -> builtins.list[tuple[str, str]]:
        """(repository, manifest digest) pairs the certificate's image is known under. Raises StoreError."""
        rows = self._query(
            "SELECT repository, manifest_digest FROM image_digests WHERE cert_id = ? "
            "ORDER BY recorded_at, repository",
            (cert_id,),
        )
        return [(r[0], r[1]) for r in rows]

    def remove(self, ident: str) -> str:
        """Delete one certificate (id or unique prefix); return its id. Raises UsageError, StoreError."""
        cid = self._resolve(ident)
        try:
            with self._connect() as db, _write(db):
                db.execute("DELETE FROM certificates WHERE id = ?", (cid,))
                db.execute("DELETE FROM image_digests WHERE cert_id = ?", (cid,))
                db.execute("DELETE FROM attestations WHERE cert_id = ?", (cid,))
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot write to the certificate store {self.path}: {exc}", _STORE_HINT, file=str(self.path)
            ) from exc
        return cid

    # ------------------------------------------------------------------ read

    def list(self, image: str | None = None, *, origin: str | None = None) -> builtins.list[StoredCert]:
        """Every stored certificate, newest first; `image` filters by image ID (or its prefix),
        by a registry manifest digest it was pushed or fetched as, or by the reference it was
        certified under; `origin` by where it came from. Raises StoreError."""
        sql, args = image_query(image, origin)
        return newest_first(self._query(sql, args))

    def origin_of(self, ident: str) -> str:
        """Where the certificate with this id (or unique prefix) came from: one of ORIGINS.
        Raises UsageError (none or several match), StoreError."""
        cid = self._resolve(ident)
        return str(self._query("SELECT origin FROM certificates WHERE id = ?", (cid,))[0][0])

    def get(self, ident: str) -> Certificate:
        """The certificate with this id or unique id prefix (at least 4 hex digits), verified.
        Raises UsageError (none or several match), CertificateRefusedError (the row was
        tampered with), StoreError."""
        cid = self._resolve(ident)
        rows = self._query("SELECT content_hash, body FROM certificates WHERE id = ?", (cid,))
        content_hash, body = rows[0]
        cert = Certificate.from_json(body, where=f"stored certificate {cid[:12]}")
        problems = verify_certificate(cert)
        if content_hash != cert.content_hash or cid != cert.id:
            problems.append("stored row hash differs from the certificate's content_hash (row edited)")
        if problems:
            raise CertificateRefusedError(
                f"stored certificate {cid[:12]} failed verification: " + "; ".join(problems),
                hint="remove it (`envbuilder certs` never repairs a certificate) and re-certify the image",
            )
        return cert

    def verify(self, ident: str, *, image_id: str | None = None) -> builtins.list[str]:
        """Problems with a stored certificate (empty: intact and, given `image_id`, for that
        image). Raises UsageError (unknown id), StoreError."""
        try:
            cert = self.get(ident)
        except CertificateRefusedError as exc:
            return [exc.message]
        return verify_certificate(cert, image_id=image_id)

    def export(self, ident: str, dest: Path) -> Path:
        """Write a verified certificate to `dest` atomically (never half a file). Raises
        UsageError, CertificateRefusedError, StoreError (cannot write)."""
        cert = self.get(ident)
        write_atomic(Path(dest), cert.to_json(indent=2) + "\n")
        return Path(dest)

    def integrity_check(self) -> str:
        """SQLite's own check of the file ("ok" when sound). Raises StoreError."""
        return str(self._query("PRAGMA integrity_check", ())[0][0])

    def _resolve(self, ident: str) -> str:
        bare = ident.strip().lower().removeprefix("sha256:")
        if len(bare) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in bare):
            raise UsageError(
                f"{ident!r} is not a certificate id", hint=f"give at least {MIN_PREFIX} hex digits of an id"
            )
        rows = self._query(
            "SELECT id FROM certificates WHERE id >= ? AND id < ? LIMIT 3", (bare, _prefix_end(bare))
        )
        if not rows:
            raise UsageError(
                f"no certificate {bare} in {self.path}", hint="`envbuilder certs list` shows them"
            )
        if len(rows) > 1:
            raise UsageError(f"{bare} matches several certificates", hint="give more digits of the id")
        return str(rows[0][0])

    def _query(self, sql: str, args: tuple[str, ...]) -> builtins.list[tuple[str, ...]]:
        try:
            with self._connect() as db:
                return builtins.list(db.execute(sql, args).fetchall())
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot read the certificate store {self.path}: {exc}",
                "the file may be corrupt: move it aside to start a new store",
                file=str(self.path),
            ) from exc


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the store in WAL mode. SQLite answers a journal-mode change with 'database is locked'
    at once, without waiting busy_timeout, while another connection holds the write lock of a
    store still in rollback mode (processes racing to create it; CI saw it): so try again until
    the busy timeout has passed."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "database is locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


@contextlib.contextmanager
def _write(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: BEGIN IMMEDIATE takes the write lock up front (waiting busy_timeout),
    COMMIT on success, ROLLBACK on any exception. A crash before COMMIT leaves nothing behind."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _insert(db: sqlite3.Connection, cert: Certificate, origin: str) -> None:
    image = cert.image
    db.execute(
        "INSERT OR IGNORE INTO certificates (id, content_hash, image_id, image_ref, verdict, "
        "host_fingerprint, issued_at, body, origin) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            cert.id,
            cert.content_hash,
            image.id,
            image.ref,
            cert.verdict,
            cert.host.fingerprint,
            cert.issued_at or "",
            cert.to_json(),
            origin,
        ),
    )


def _cached(r: Sequence[str]) -> CachedAttestation:
    return CachedAttestation(
        cert_id=r[0],
        repository=r[1],
        manifest_digest=r[2],
        keyid=r[3],
        verified_at=r[4],
        envelope=r[5].encode("utf-8"),
    )


def _prefix_end(prefix: str) -> str:
    """The least string above every string that starts with `prefix` (non-empty ASCII): the
    range [prefix, _prefix_end(prefix)) is a prefix match that an index serves, where SQLite's
    LIKE (case-insensitive) cannot use one and scans the table."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


_COLUMNS = "id, image_id, image_ref, verdict, host_fingerprint, issued_at, stored_at, origin"


def image_query(image: str | None, origin: str | None = None) -> tuple[str, tuple[str, ...]]:
    """The SQL of CertStore.list and its arguments. Each way an image can be named is its own
    index lookup, their ids united: the image ID exactly, the reference it was certified under
    (image_ref), a manifest digest it was pushed or fetched as (image_digests); an ID prefix
    (hex digits, `sha256:` optional) only when the user typed one, as an index range. One OR
    with a LIKE made SQLite scan the table: 103 ms at 30,000 certificates
    (benchmarks/results/certstore-2026-12-04.md)."""
    sql = f"SELECT {_COLUMNS} FROM certificates"
    where: builtins.list[str] = []
    args: tuple[str, ...] = ()
    if image:
        lookups = [
            "SELECT id FROM certificates WHERE image_id = ?",
            "SELECT id FROM certificates WHERE image_ref = ?",
            "SELECT cert_id FROM image_digests WHERE manifest_digest = ?",
        ]
        args = (image, image, image)
        bare = image.strip().lower().removeprefix("sha256:")
        if bare and _HEX.issuperset(bare):
            full = f"sha256:{bare}"
            if len(bare) >= 64:
                if full != image:  # `abc...` or `SHA256:ABC...` for `sha256:abc...`
                    lookups.append("SELECT id FROM certificates WHERE image_id = ?")
                    args = (*args, full)
            else:  # a short ID, as `docker images` prints it
                lookups.append("SELECT id FROM certificates WHERE image_id >= ? AND image_id < ?")
                args = (*args, full, _prefix_end(full))
        where.append("id IN (" + " UNION ".join(lookups) + ")")
    if origin:
        where.append("origin = ?")
        args = (*args, origin)
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY issued_at DESC, stored_at DESC, id", args


def _envelope_text(envelope: bytes) -> str:
    """An envelope as the store keeps it: its exact text, encoded back to the same bytes when it
    is verified again. Bytes that are not UTF-8 would come back otherwise (never stored lossily).
    Raises CertificateRefusedError."""
    try:
        return envelope.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CertificateRefusedError(
            f"the signed attestation {sha256_digest(envelope)[:19]} is not UTF-8 text (byte {exc.start}): "
            "not stored",
            hint="an envelope is the JSON `push --attest` attached; fetch or import it again",
        ) from None


def require_importable(cert: Certificate, where: str, now: datetime | None = None) -> None:
    """What `certs import` checks of a certificate before storing it, signed or not: intact, an
    issued_at that is an RFC 3339 timestamp (anything else would sort as newest forever) and not
    in the future beyond the clock skew. Raises CertificateRefusedError."""
    require_valid(cert, where=where)
    if parse_timestamp(cert.issued_at) is None:
        raise CertificateRefusedError(
            f"{where}: issued_at is not an RFC 3339 timestamp (YYYY-MM-DDTHH:MM:SSZ)",
            hint="import the certificate file `envbuilder certs export` wrote",
        )
    future = issued_in_future(cert.issued_at, now)
    if future is not None:
        raise CertificateRefusedError(
            f"{where}: refused [future-issued]: the certificate's {future}",
            hint="check this host's clock (and the certifying host's): a certificate cannot be "
            "issued later than it is checked",
        )


def write_atomic(path: Path, text: str) -> bool:
    """Write `text` to `path` atomically (envbuilder.atomic, whose output policy refuses a path
    that is not a regular file and a missing folder: OutputError); whether it replaced a file.
    Raises StoreError, OutputError."""
    try:
        return write_text_atomic(path, text)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc}", "choose a writable folder", file=str(path)) from exc


def load_certificate(arg: str, store: CertStore | None = None) -> Certificate:
    """A certificate from a JSON file (`arg` is a path that exists; not verified, so a report can
    show what is wrong with it) or from the store (an id or a unique prefix; verified). Raises
    UsageError (unknown id, unreadable file), CertificateRefusedError (not a certificate; a
    tampered stored row), StoreError."""
    path = Path(arg)
    if path.is_file():
        try:
            text = read_text_bounded(path)
        except (OSError, ValueError) as exc:  # UnicodeDecodeError, bounded.Refused
            raise UsageError(f"cannot read {path}: {_reason(exc)}") from None
        return Certificate.from_json(text, where=str(path))
    return (store or CertStore()).get(arg)


def _reason(exc: Exception) -> str:
    """Why a file could not be read, in one line without its content (UnicodeDecodeError quotes
    the bytes)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start})"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"it is {exc}"


def certificate_summary(cert: Certificate) -> dict[str, object]:
    """The fields `certs list --json` and `certify --json` share."""
    image = cert.image
    return {
        "id": cert.id,
        "image_id": image.id or None,
        "image_ref": image.ref,
        "verdict": cert.verdict,
        "issued_at": cert.issued_at,
        "gpu_access": cert.host.gpu_access,
        "problems": verify_certificate(cert),
    }
