"""How long finding an image's certificates takes as the store grows, before vs after, side by side.

One store is filled through CertStore.add (as envbuilder issue 27 measured) with synthetic sealed
certificates, one image each, up to 1,000 / 10,000 / 30,000 / 100,000; at each size the lookups
`run` and `certs list --image` make are timed with the query of main 9f28a08 (inlined below: an
OR of the exact ID, `image_id LIKE 'sha256:...%'`, `image_ref = ?` and the manifest digest
subquery, which makes SQLite scan the table) and with this checkout's CertStore.list (one index
lookup per way of naming the image, image_query), interleaved call by call so that the load of a
shared machine falls on both alike. Each call opens the store as the CLI does (a new connection).

    .venv/bin/python benchmarks/certstore_bench.py [--sizes 1000,10000,30000,100000] [--calls 50]
                                                   [--dir /dev/shm]

The store lives in --dir (default /dev/shm, a tmpfs): every add is a synchronous=FULL commit, and
on this machine's disk that fsync makes 100,000 adds take ~15 minutes instead of ~2; the lookups
read from the page cache either way. Writes benchmarks/results/certstore-DATE.json and .md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envbuilder.certify.certificate import Certificate, build_certificate  # noqa: E402
from envbuilder.certify.store import CertStore, StoredCert, image_query, newest_first  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BASELINE = "9f28a08"


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def synthetic(n: int) -> Certificate:
    """Certificate number n: its own image ID and reference, a fixed host, sealed for real."""
    image_id = "sha256:" + f"{n:08x}".rjust(64, "e")[::-1]  # distinct, spread over the ID space
    return build_certificate(
        image={"id": image_id, "ref": f"bench/train:{n}", "stack": {"id": "torch-cpu"}, "lock_hash": None},
        host={"fingerprint": "sha256:00", "driver": None, "gpus": [], "gpu_access": "none"},
        run={},
        harness={"steps": [], "verdict": "certified-cpu-only"},
        thresholds={},
        verdict="certified-cpu-only",
        verdict_reason="synthetic",
        issued_at=f"2026-12-01T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z",
    )


def old_query(image: str, origin: str | None = None) -> tuple[str, tuple[str, ...]]:
    """The SQL of CertStore.list(image) as main 9f28a08 had it (envbuilder/certify/store.py)."""
    sql = "SELECT id, image_id, image_ref, verdict, host_fingerprint, issued_at, stored_at, origin"
    sql += " FROM certificates"
    where: list[str] = []
    args: tuple[str, ...] = ()
    bare = image.removeprefix("sha256:")
    where.append(
        "(image_id = ? OR image_id LIKE ? OR image_ref = ? OR id IN "
        "(SELECT cert_id FROM image_digests WHERE manifest_digest = ?))"
    )
    like = bare.replace("\\", "").replace("%", "").replace("_", "")
    args = (image, f"sha256:{like}%", image, image)
    if origin:
        where.append("origin = ?")
        args = (*args, origin)
    sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY issued_at DESC, stored_at DESC, id", args


def old_list(store: CertStore, image: str, origin: str | None = None) -> list[StoredCert]:
    """CertStore.list(image) as main 9f28a08 had it, verbatim but for the SQL built above."""
    return newest_first(store._query(*old_query(image, origin)))


def plan(path: Path, sql: str, args: tuple[str, ...]) -> list[str]:
    with sqlite3.connect(path) as db:
        return [str(r[3]) for r in db.execute("EXPLAIN QUERY PLAN " + sql, args)]


def timed(calls: int, variants: dict[str, Callable[[], list[StoredCert]]]) -> dict[str, dict[str, float]]:
    """Each variant `calls` times, interleaved; median and p90 in ms, and the rows found."""
    seconds: dict[str, list[float]] = {k: [] for k in variants}
    found: dict[str, int] = {}
    for _ in range(calls):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            rows = fn()
            seconds[name].append(time.perf_counter() - t0)
            found[name] = len(rows)
    out = {}
    for name, xs in seconds.items():
        xs.sort()
        out[name] = {
            "median_ms": round(statistics.median(xs) * 1000, 3),
            "p90_ms": round(xs[int(len(xs) * 0.9) - 1] * 1000, 3),
            "rows": found[name],
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,30000,100000")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    ap.add_argument("--out", help="result stem (default benchmarks/results/certstore-DATE)")
    ap.add_argument("--markdown", metavar="JSON", help="only rewrite the .md of an earlier run's JSON")
    opts = ap.parse_args()
    if opts.markdown:
        src = Path(opts.markdown)
        src.with_suffix(".md").write_text(markdown(json.loads(src.read_text())))
        return 0
    sizes = sorted(int(s) for s in opts.sizes.split(","))
    load_before = os.getloadavg()[0]
    folder = Path(tempfile.mkdtemp(prefix="certstore-bench-", dir=opts.dir))
    results: list[dict[str, Any]] = []
    try:
        store = CertStore(folder / "certs.sqlite")
        have = 0
        for size in sizes:
            t0 = time.perf_counter()
            for n in range(have, size):
                store.add(synthetic(n))
            fill_s = time.perf_counter() - t0
            log(f"{size} certificates stored ({size - have} added in {fill_s:.0f} s)")
            probe = synthetic(size // 2)  # a certificate in the middle of the store
            full_id, short_id, ref = probe.image.id, probe.image.id[7:19], str(probe.image.ref)
            lookups = {
                "run: full image ID, origin local": (full_id, "local"),
                "certs list --image SHORT_ID": (short_id, None),
                "certs list --image REF": (ref, None),
            }
            row: dict[str, Any] = {"size": size, "fill_s": round(fill_s, 1), "lookups": {}}
            for label, (image, origin) in lookups.items():
                timing = timed(
                    opts.calls,
                    {
                        "before": lambda i=image, o=origin: old_list(store, i, o),
                        "after": lambda i=image, o=origin: store.list(i, origin=o),
                    },
                )
                sql, args = image_query(image, origin)
                timing["after"]["plan"] = plan(store.path, sql, args)  # type: ignore[assignment]
                timing["before"]["plan"] = plan(store.path, *old_query(image, origin))  # type: ignore[assignment]
                row["lookups"][label] = timing
                log(
                    f"  {label}: before {timing['before']['median_ms']} ms, "
                    f"after {timing['after']['median_ms']} ms"
                )
            results.append(row)
            have = size
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    today = dt.date.today().isoformat()
    stem = Path(opts.out) if opts.out else RESULTS / f"certstore-{today}"
    machine = {
        "machine": os.environ.get("BENCH_MACHINE", "CPU dev machine"),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "store_dir": opts.dir or tempfile.gettempdir(),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # 1-min, at start and end
    }
    doc = {"date": today, "baseline": BASELINE, "calls": opts.calls, **machine, "results": results}
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    stem.with_suffix(".md").write_text(markdown(doc))
    log(f"wrote {stem}.json and .md")
    return 0


def markdown(doc: dict[str, Any]) -> str:
    lines = [
        f"# Certificate store lookups, {doc['date']}: main {doc['baseline']} vs the indexed query",
        "",
        f"Machine: {doc['machine']} ({doc['cpus']} cores, {doc['platform']}), Python {doc['python']}, "
        f"SQLite {doc['sqlite']}; the store in {doc['store_dir']}; 1-minute load average "
        f"{' -> '.join(str(x) for x in doc.get('load_average', ['?']))} (the machine is shared: "
        "the `before` figures swing with it, the `after` ones hardly). `benchmarks/certstore_bench.py`: one "
        "store filled through `CertStore.add` with synthetic sealed certificates (one image each); at "
        f"each size every lookup is called {doc['calls']} times per variant, before and after "
        "interleaved call by call, each call opening the store as the CLI does. Median (p90) in ms. "
        "`before` is main's query run on this store (the new indexes present: it scans all the same, "
        "since the case-insensitive LIKE inside its OR defeats every index).",
        "",
        "| certificates | lookup | before (main) | after | rows |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in doc["results"]:
        for label, t in row["lookups"].items():
            b, a = t["before"], t["after"]
            lines.append(
                f"| {row['size']:,} | {label} | {b['median_ms']} ({b['p90_ms']}) | "
                f"{a['median_ms']} ({a['p90_ms']}) | {a['rows']} |"
            )
    fills = ", ".join(f"{r['size']:,} after {r['fill_s']} s" for r in doc["results"])
    lines += ["", f"Filling through `CertStore.add` (cumulative sizes, each step's adds): {fills}."]
    last = doc["results"][-1]
    lines += ["", f"Query plans at {last['size']:,} certificates (EXPLAIN QUERY PLAN):", ""]
    for label, t in last["lookups"].items():
        lines.append(f"- {label}, before: " + "; ".join(t["before"]["plan"]))
        lines.append(f"- {label}, after: " + "; ".join(t["after"]["plan"]))
    lines += [
        "",
        "Before, SQLite scans the table for every lookup: the OR holds a case-insensitive LIKE, "
        "which no index serves. After, each way of naming an image (the exact ID, the reference, "
        "a manifest digest, and an ID prefix only when one was typed, as an index range) is its "
        "own index search; `tests/unit/test_certstore.py` pins the plan.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
