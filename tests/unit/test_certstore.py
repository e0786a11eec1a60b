"""The SQLite certificate store: add/list/get/verify/export/import, tampering, concurrent writers,
and a writer killed between statements."""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from envbuilder.attest import TrustPolicy
from envbuilder.attest.imported import import_certificate
from envbuilder.certify import store as store_module
from envbuilder.certify.certificate import Certificate, build_certificate, seal
from envbuilder.certify.store import CertStore
from envbuilder.errors import CertificateRefusedError, StoreError, UsageError
from envbuilder.resources import user_data_dir

IMAGE_ID = "sha256:" + "ab" * 32
REPO = Path(__file__).resolve().parents[2]


def _import(store: CertStore, path: Path) -> str:
    """`certs import` of an unsigned certificate file (no trusted keys needed): its id."""
    return import_certificate(path, store=store, policy=lambda: TrustPolicy(keys=())).id


def make(n: int = 0, image_id: str = IMAGE_ID, verdict: str = "certified-cpu-only") -> Certificate:
    return build_certificate(
        image={"id": image_id, "ref": f"img:{n}", "stack": None, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": None, "gpus": [], "gpu_access": "none"},
        run={"n": n},
        harness={"kind": "result", "verdict": verdict, "steps": []},
        thresholds={},
        verdict=verdict,
        verdict_reason="test",
        issued_at=f"2026-11-30T00:00:{n % 60:02d}Z",
    )


def test_user_data_dir_precedence(tmp_path: Path) -> None:
    assert user_data_dir({"ENVBUILDER_DATA_DIR": str(tmp_path), "XDG_DATA_HOME": "/x"}) == tmp_path
    assert user_data_dir({"XDG_DATA_HOME": "/x"}) == Path("/x/envbuilder")
    assert user_data_dir({}) == Path.home() / ".local/share/envbuilder"


def test_default_path_follows_envbuilder_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVBUILDER_DATA_DIR", str(tmp_path / "d"))
    store = CertStore()
    assert store.path == tmp_path / "d" / "certs.sqlite" and store.path.is_file()
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_add_list_get_verify(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    a, b = make(1), make(2, image_id="sha256:" + "cd" * 32, verdict="failed")
    ida, idb = store.add(a), store.add(b)
    assert store.add(a) == ida  # idempotent
    assert [r.id for r in store.list()] == [idb, ida]  # newest first
    assert [r.id for r in store.list(image=IMAGE_ID)] == [ida]
    assert [r.id for r in store.list(image="ab" * 6)] == [ida]
    assert [r.id for r in store.list(image="img:2")] == [idb]
    assert store.get(ida[:6]).data == a.data
    assert store.verify(ida) == []
    assert store.verify(ida, image_id="sha256:" + "cd" * 32) == [
        f"certificate is for image {'ab' * 6}, not {'cd' * 6}"
    ]
    with pytest.raises(UsageError, match="no certificate"):
        store.get("ffff")
    with pytest.raises(UsageError, match="not a certificate id"):
        store.get("xy")


def test_tampered_rows_are_detected_and_named(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    cid = store.add(make(1))
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE certificates SET body = replace(body, 'certified-cpu-only', 'certified')")
    problems = store.verify(cid)
    assert len(problems) == 1 and "content hash mismatch" in problems[0] and "harness, verdict" in problems[0]
    with pytest.raises(CertificateRefusedError) as err:
        store.get(cid)
    assert err.value.exit_code == 12
    # a row copied under another id (the body intact, the row not) is caught too
    with sqlite3.connect(store.path) as db:
        db.execute("DELETE FROM certificates")
    good = make(2)
    store.add(good)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE certificates SET id = ?", (good.id[:6] + "0" * 58,))
    assert "row edited" in store.verify(good.id[:6])[0]


def test_an_id_is_found_whatever_its_case_and_with_its_sha256_prefix(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    cid = store.add(make(1))
    assert cid == cid.lower()
    for typed in (cid[:8].upper(), "SHA256:" + cid.upper(), f"  sha256:{cid[:10]} "):
        assert store.get(typed).id == cid, typed
    assert store.origin_of(cid[:6].upper()) == "local"


def test_newest_first_is_by_when_each_was_issued_never_when_it_was_stored(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    older, newer = make(1), make(2)
    store.add(older)
    store.add(newer)
    with sqlite3.connect(store.path) as db:  # the older one stored last (imported later, say)
        db.execute("UPDATE certificates SET stored_at = '2026-12-05T00:00:00Z' WHERE id = ?", (older.id,))
        db.execute("UPDATE certificates SET stored_at = '2026-12-01T00:00:00Z' WHERE id = ?", (newer.id,))
    assert [r.id for r in store.list()] == [newer.id, older.id]
    assert [r.id for r in store.list(image=IMAGE_ID)] == [newer.id, older.id]


def test_ambiguous_prefix(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    cid = store.add(make(1))
    with sqlite3.connect(store.path) as db:
        db.execute(
            "INSERT INTO certificates (id, content_hash, image_id, verdict, issued_at, body) "
            "SELECT ?, content_hash, image_id, verdict, issued_at, body FROM certificates",
            (cid[:6] + "0" * 58,),
        )
    with pytest.raises(UsageError, match="matches several"):
        store.get(cid[:6])
    assert store.get(cid).id == cid


def test_export_import_and_a_tampered_file(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "a.sqlite")
    cid = store.add(make(1))
    (tmp_path / "sub").mkdir()  # a named output's folder is never created (envbuilder.atomic)
    out = store.export(cid[:8], tmp_path / "sub" / "cert.json")
    assert json.loads(out.read_text())["content_hash"] == f"sha256:{cid}"
    assert not list((tmp_path / "sub").glob(".*tmp"))  # no temp file left behind
    other = CertStore(tmp_path / "b.sqlite")
    assert _import(other, out) == cid and other.verify(cid) == []
    doc = json.loads(out.read_text())
    doc["image"]["id"] = "sha256:" + "99" * 32
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    third = CertStore(tmp_path / "c.sqlite")
    with pytest.raises(CertificateRefusedError, match=r"content hash mismatch.*changed: image"):
        _import(third, bad)
    assert third.list() == []


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    sys.path.insert(0, {tests!r})
    from test_certstore import make
    from envbuilder.certify.store import CertStore
    store = CertStore(__import__("pathlib").Path(sys.argv[1]))
    start = int(sys.argv[2])
    for n in range(start, start + int(sys.argv[3])):
        store.add(make(n))
    """
)


def _python(code: str, *args: str) -> subprocess.Popen[bytes]:
    script = code.format(repo=str(REPO), tests=str(Path(__file__).parent))
    return subprocess.Popen([sys.executable, "-c", script, *args], stderr=subprocess.PIPE)


def _rollback_store_held(path: Path) -> sqlite3.Connection:
    """A store file still in rollback mode whose write lock another connection holds: what a
    process sees while a racing one creates the store."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE t (a)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t VALUES (1)")
    return other


def test_opening_waits_for_a_racing_creator(tmp_path: Path) -> None:
    # SQLite answers the switch to WAL with "database is locked" at once, without busy_timeout,
    # while the lock is held (CI failed test_concurrent_writers_lose_nothing on it): waited out
    other = _rollback_store_held(tmp_path / "c.sqlite")
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    store = CertStore(tmp_path / "c.sqlite")
    release.join()
    assert time.monotonic() - started >= 0.4
    assert store.list() == []
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_lock_held_past_the_busy_timeout_is_a_store_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 300)
    other = _rollback_store_held(tmp_path / "c.sqlite")
    started = time.monotonic()
    with pytest.raises(StoreError, match=r"cannot open the certificate store .*database is locked"):
        CertStore(tmp_path / "c.sqlite")
    assert time.monotonic() - started >= 0.25
    other.execute("COMMIT")


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"  # not created yet: the writers also race to create it
    writers, each = 8, 6
    procs = [_python(WRITER, str(db), str(i * each), str(each)) for i in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    store = CertStore(db)
    rows = store.list()
    assert len(rows) == writers * each
    assert {r.image_ref for r in rows} == {f"img:{n}" for n in range(writers * each)}
    assert all(store.verify(r.id) == [] for r in rows)
    assert store.integrity_check() == "ok"


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {repo!r})
    sys.path.insert(0, {tests!r})
    from test_certstore import make
    from envbuilder.certify.store import CertStore
    store = CertStore(__import__("pathlib").Path(sys.argv[1]))
    # die after the INSERT ran, before COMMIT: the row is written to the WAL but not committed
    store._after_insert = lambda: os.kill(os.getpid(), signal.SIGKILL)
    store.add(make(99))
    """
)


def test_writer_killed_between_statements_leaves_nothing_half_stored(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    store = CertStore(db)
    kept = [store.add(make(n)) for n in range(3)]
    proc = _python(KILLER, str(db))
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    again = CertStore(db)  # the file still opens (WAL recovery)
    assert again.integrity_check() == "ok"
    rows = again.list()
    assert sorted(r.id for r in rows) == sorted(kept)  # nothing lost, nothing half-stored
    assert all(again.verify(cid) == [] for cid in kept)
    assert again.add(make(99)) == make(99).id  # and the store takes writes again


MANIFEST = "sha256:" + "ef" * 32


def test_records_are_keyed_by_manifest_digest_too(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    a, b = make(1), make(2, image_id="sha256:" + "cd" * 32)
    ida, _ = store.add(a), store.add(b)
    assert store.list(image=MANIFEST) == []
    store.record_digest([ida], "reg:5000/team/x", MANIFEST)
    store.record_digest([ida], "reg:5000/team/x", MANIFEST)  # idempotent
    assert [r.id for r in store.list(image=MANIFEST)] == [ida]
    assert store.digests(ida) == [("reg:5000/team/x", MANIFEST)]
    store.remove(ida)
    assert store.digests(ida) == [] and store.list(image=MANIFEST) == []


def test_attested_certificates_keep_their_envelope_and_origin(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    local, remote = make(1), make(2)
    store.add(local)
    for cert in (local, remote):
        store.add_attested(
            cert, envelope=b'{"e": 1}', envelope_digest=f"sha256:{cert.id}", repository="reg/x",
            manifest_digest=MANIFEST, keyid="k1",
        )  # fmt: skip
    origins = {r.id: r.origin for r in store.list(image=MANIFEST)}
    assert origins == {local.id: "local", remote.id: "attestation"}  # a local certificate stays local
    assert [r.id for r in store.list(origin="attestation")] == [remote.id]
    cached = store.attestations(MANIFEST)
    assert {c.cert_id for c in cached} == {local.id, remote.id} and cached[0].envelope == b'{"e": 1}'
    edited = json.loads(remote.to_json())
    edited["verdict"] = "certified"
    with pytest.raises(CertificateRefusedError):
        store.add_attested(
            Certificate(edited), envelope=b"{}", envelope_digest="sha256:00", repository="reg/x",
            manifest_digest=MANIFEST, keyid="k1",
        )  # fmt: skip


def test_a_store_from_before_attestations_gains_the_origin_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE certificates (id TEXT PRIMARY KEY, content_hash TEXT NOT NULL,"
            " image_id TEXT NOT NULL, image_ref TEXT, verdict TEXT NOT NULL, host_fingerprint TEXT,"
            " issued_at TEXT NOT NULL,"
            " stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')), body TEXT NOT NULL);"
        )
        c = make(3)
        db.execute(
            "INSERT INTO certificates (id, content_hash, image_id, verdict, issued_at, body)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (c.id, c.content_hash, IMAGE_ID, c.verdict, "2026-11-30T00:00:03Z", c.to_json()),
        )
    store = CertStore(path)
    assert [(r.id, r.origin) for r in store.list()] == [(c.id, "local")]


def test_import_marks_certificates_imported_and_keeps_a_local_one_local(tmp_path: Path) -> None:
    """hostile-inputs D4: an imported certificate was stored as `local`, trusted like one made here."""
    made_here, other = make(1), make(2, image_id="sha256:" + "cd" * 32)
    store = CertStore(tmp_path / "a.sqlite")
    store.add(made_here)
    for cert in (made_here, other):
        (tmp_path / f"{cert.id}.json").write_text(cert.to_json())
        assert _import(store, tmp_path / f"{cert.id}.json") == cert.id
    assert {r.id: r.origin for r in store.list()} == {made_here.id: "local", other.id: "imported"}
    assert store.origin_of(other.id[:8]) == "imported" and store.envelopes(other.id) == []


def test_import_refuses_a_certificate_issued_in_the_future(tmp_path: Path) -> None:
    """hostile-inputs D10; the allowed clock skew is 5 minutes."""
    from datetime import datetime, timedelta, timezone

    store = CertStore(tmp_path / "a.sqlite")
    for ahead, refused in (
        (timedelta(days=365 * 70), True),
        (timedelta(minutes=6), True),
        (timedelta(minutes=4), False),
    ):
        when = (datetime.now(timezone.utc) + ahead).strftime("%Y-%m-%dT%H:%M:%SZ")
        doc = make(3).to_dict()
        doc["issued_at"] = when
        path = tmp_path / "future.json"
        path.write_text(json.dumps(seal(doc)))
        if refused:
            with pytest.raises(CertificateRefusedError, match=r"future-issued.*lies in the future"):
                _import(store, path)
        else:
            assert _import(store, path)
    assert [r.issued_at for r in store.list()] == [when]  # only the one within the skew


def test_a_version_1_store_is_migrated_and_keeps_working(tmp_path: Path) -> None:
    """A store written before origin 'imported' and the lookup indexes (schema 1): opened, it gains
    the indexes and user_version 2; its rows stay as they were."""
    path = tmp_path / "v1.sqlite"
    c = make(4)
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE certificates (id TEXT PRIMARY KEY, content_hash TEXT NOT NULL,"
            " image_id TEXT NOT NULL, image_ref TEXT, verdict TEXT NOT NULL, host_fingerprint TEXT,"
            " issued_at TEXT NOT NULL,"
            " stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')), body TEXT NOT NULL,"
            " origin TEXT NOT NULL DEFAULT 'local');"
            "CREATE INDEX certificates_image ON certificates (image_id);"
            "CREATE TABLE attestations (envelope_digest TEXT PRIMARY KEY, cert_id TEXT NOT NULL,"
            " repository TEXT NOT NULL, manifest_digest TEXT NOT NULL, keyid TEXT NOT NULL,"
            " verified_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),"
            " envelope TEXT NOT NULL);"
        )
        db.execute(
            "INSERT INTO certificates (id, content_hash, image_id, image_ref, verdict, issued_at, body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (c.id, c.content_hash, IMAGE_ID, "img:4", c.verdict, c.issued_at, c.to_json()),
        )
    store = CertStore(path)
    assert [(r.id, r.origin) for r in store.list(image="img:4")] == [(c.id, "local")]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
        indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"certificates_ref", "attestations_digest", "image_digests_digest"} <= indexes
    other = make(5, image_id="sha256:" + "cd" * 32)
    (tmp_path / "o.json").write_text(other.to_json())
    _import(store, tmp_path / "o.json")
    assert store.origin_of(other.id) == "imported"


def _plan(path: Path, sql: str, args: tuple[str, ...]) -> list[str]:
    with sqlite3.connect(path) as db:
        return [str(r[3]) for r in db.execute("EXPLAIN QUERY PLAN " + sql, args)]


def test_finding_an_image_s_certificates_is_an_index_lookup(tmp_path: Path) -> None:
    """issue 27 item 4: `image_id LIKE ...` in an OR made SQLite scan the whole table (103 ms at
    30,000 certificates). Every way of naming an image must be an index search, never a SCAN."""
    from envbuilder.certify.store import image_query

    store = CertStore(tmp_path / "big.sqlite")
    certs = [make(n, image_id="sha256:" + hashlib.sha256(b"%d" % n).hexdigest()) for n in range(200)]
    for c in certs:
        store.add(c)
    store.record_digest([certs[7].id], "reg/x", MANIFEST)  # no ANALYZE: no store ever runs one
    target = certs[42].image.id
    lookups = {
        target: [certs[42].id],  # the full ID (run, check)
        target.removeprefix("sha256:"): [certs[42].id],  # without sha256:
        target.upper().replace("SHA256:", "sha256:"): [certs[42].id],  # upper-case hex
        target[7:19]: [certs[42].id],  # a short ID as `docker images` prints it
        "img:42": [certs[42].id],  # the reference it was certified under
        MANIFEST: [certs[7].id],  # a manifest digest it was pushed as
        "sha256:" + "f" * 64: [],
    }
    for image, expected in lookups.items():
        for origin in (None, "local"):
            sql, args = image_query(image, origin)
            plan = _plan(store.path, sql, args)
            assert not [p for p in plan if p.startswith("SCAN")], (image, plan)
            assert any("USING INDEX certificates_image" in p for p in plan)
            assert [r.id for r in store.list(image, origin=origin)] == expected, image
    assert {r.id for r in store.list(target[7:10])} == {
        c.id for c in certs if c.image.id.startswith(target[:10])
    }
    assert store.get(certs[5].id[:6]).id == certs[5].id  # ids still resolve by prefix


# --------------------------------------------------------------------------- third operator set (--ops third)


@pytest.mark.parametrize("length", [12, 63])
def test_an_image_prefix_short_of_the_full_id_finds_its_certificates(tmp_path: Path, length: int) -> None:
    """Any prefix under the 64 hex digits of an ID is a prefix, 63 included (only 64 is exact)."""
    store = CertStore(tmp_path / "c.sqlite")
    cid = store.add(make(1))
    bare = IMAGE_ID.removeprefix("sha256:")
    assert [r.id for r in store.list(image=bare[:length])] == [cid]
    assert [r.id for r in store.list(image="sha256:" + bare[:length])] == [cid]


def test_a_store_file_that_became_no_database_is_a_store_error_for_every_write(tmp_path: Path) -> None:
    store = CertStore(tmp_path / "c.sqlite")
    (tmp_path / "c.sqlite").write_bytes(b"not a database at all, " * 200)  # another tool wrote it
    with pytest.raises(StoreError, match=r"certificate store .*not a database"):
        store.add(make(1))
    with pytest.raises(StoreError, match=r"certificate store .*not a database"):
        store.add_imported(make(2))
