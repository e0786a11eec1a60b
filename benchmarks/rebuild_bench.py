"""A rebuild with nothing changed, side by side in one run: the build context rendered into a fresh
folder each time (envbuilder until 2026-12-01) vs into the output's own folder
(image/commit.context_home, now). The image: the locked torch 2.13.0 CPU image of
installer_bench.py, built offline from the local wheelhouse (the context holds its ~190 MB of
wheels as hard links). Alternated, three of each, after one first build. Results: benchmarks/results/.

Needs `make services` (dockerd, the local Debian base, the wheelhouse); offline otherwise.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from installer_bench import BASE, ROOT, WHEELHOUSE, log, write_spec

from envbuilder.engine import DockerEngine
from envbuilder.engine.buildkit import find_buildkit_cli
from envbuilder.host.model import Host
from envbuilder.image.build import BuildOptions, plan_from_lock, plan_from_spec, run_build
from envbuilder.image.packages import LockSettings
from envbuilder.image.spec import load_spec
from envbuilder.matrix import load_matrix
from envbuilder.resolve.resolver import resolve

ROUNDS = 3


def rebuild(engine: DockerEngine, lock: Path, work_dir: Path | None) -> dict[str, Any]:
    options = BuildOptions(base_image=BASE, wheelhouse=WHEELHOUSE, lock_out=lock)
    plan = plan_from_lock(lock, options, matrix=load_matrix())
    started = time.monotonic()
    outcome = run_build(plan, options, engine, work_dir=work_dir)
    return {
        "buildkit_seconds": round(outcome.result.seconds, 2),
        "run_build_seconds": round(time.monotonic() - started, 2),
        "cached_steps": f"{outcome.result.cached_steps}/{len(outcome.result.steps)}",
        "image_id": outcome.image.id,
    }


def main() -> None:
    engine = DockerEngine()
    work = Path(tempfile.mkdtemp(prefix="envbuilder-rebuild-bench-"))
    matrix = load_matrix()
    spec_path = write_spec(work, "uv")
    spec = load_spec(spec_path)
    res = resolve(matrix, spec.to_request(cpu_only=True), Host(driver=None, source="none"))
    lock = work / "uv.lock.json"
    options = BuildOptions(
        base_image=BASE,
        wheelhouse=WHEELHOUSE,
        lock_out=lock,
        lock_settings=LockSettings(find_links=(WHEELHOUSE,), no_index=True),
    )
    log("locking and a first build ...")
    first = run_build(plan_from_spec(spec, res, options, spec_path, matrix), options, engine)
    runs: dict[str, list[dict[str, Any]]] = {"fresh_folder": [], "own_folder": []}
    for i in range(ROUNDS):
        for name in ("fresh_folder", "own_folder"):
            fresh = Path(tempfile.mkdtemp(prefix="envbuilder-rebuild-ctx-", dir=work))
            r = rebuild(engine, lock, fresh if name == "fresh_folder" else None)
            log(f"round {i + 1} {name}: buildkit {r['buildkit_seconds']} s, whole {r['run_build_seconds']} s")
            runs[name].append(r)
    med = {k: statistics.median(r["buildkit_seconds"] for r in v) for k, v in runs.items()}
    whole = {k: statistics.median(r["run_build_seconds"] for r in v) for k, v in runs.items()}
    ids = {r["image_id"] for v in runs.values() for r in v} | {first.image.id}
    doc = {
        "what": "rebuild with nothing changed of the locked torch 2.13.0 CPU image (offline, local "
        "wheelhouse in the context), context in a fresh folder vs the output's own folder, alternated",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "buildkit_cli": find_buildkit_cli().version,
            "load_average": os.getloadavg(),
            "note": "shared with other engineers' jobs: compare the two columns, not across days",
        },
        "runs": runs,
        "median_buildkit_seconds": med,
        "median_run_build_seconds": whole,
        "ratio_own_over_fresh_buildkit": round(med["own_folder"] / med["fresh_folder"], 3),
        "same_image_every_time": len(ids) == 1,
        "goal warm rebuild <= 2 s (BuildKit)": med["own_folder"] <= 2,
    }
    out = ROOT / "results" / f"rebuild-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(doc, indent=2, sort_keys=True))
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
