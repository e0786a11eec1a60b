"""pip vs uv, side by side in one run: the same locked torch 2.13.0 CPU image (one package lock,
made once from the wheelhouse), built with `installer: pip` and `installer: uv`.

For each installer: cold = no layer reused (`--no-cache`) and empty installer caches (BuildKit's
cache mounts pruned: `docker builder prune --filter type=exec.cachemount`, which leaves other
builds' layers alone), then warm = the same build again with nothing changed. Reported: BuildKit's
own build time, the whole `run_build` (lock already made, so: render, build, installed-set
check, tag), the install step's time, the image size. Results: benchmarks/results/.

Needs `make services` (dockerd, the local Debian base, the wheelhouse); offline otherwise.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envbuilder.engine import DockerEngine
from envbuilder.engine.buildkit import find_buildkit_cli
from envbuilder.host.model import Host
from envbuilder.image.build import BuildOptions, plan_from_lock, plan_from_spec, run_build
from envbuilder.image.lock import read_lock
from envbuilder.image.packages import LockSettings, uv_binary, uv_version
from envbuilder.image.spec import load_spec
from envbuilder.matrix import load_matrix
from envbuilder.resolve.resolver import resolve

ROOT = Path(__file__).resolve().parent
BASE = os.environ.get("ENVBUILDER_TEST_BASE", "envbuilder-test/debian:bookworm")
WHEELHOUSE = Path(os.environ.get("ENVBUILDER_TEST_STATE", "/var/cache/envbuilder-test")) / "wheelhouse"
MB = 1_000_000


def log(msg: str) -> None:
    print(f"[installer_bench] {msg}", file=sys.stderr, flush=True)


def write_spec(folder: Path, installer: str) -> Path:
    path = folder / f"bench-{installer}.yaml"
    path.write_text(
        "\n".join(
            [
                f"name: bench-installer-{installer}",
                "description: installer benchmark (torch 2.13.0 CPU, locked)",
                'framework: "torch==2.13.0"',
                'python: "3.11"',
                "strategy: bundled",
                f"installer: {installer}",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def prune_cache_mounts() -> str:
    cli = find_buildkit_cli()
    proc = subprocess.run(
        [cli.path, "builder", "prune", "-f", "--filter", "type=exec.cachemount"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DOCKER_BUILDKIT": "1"},
    )
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def one_build(engine: DockerEngine, lock: Path, *, cold: bool) -> dict[str, Any]:
    options = BuildOptions(base_image=BASE, wheelhouse=WHEELHOUSE, lock_out=lock, no_cache=cold)
    plan = plan_from_lock(lock, options, matrix=load_matrix())
    started = time.monotonic()
    outcome = run_build(plan, options, engine)
    total = time.monotonic() - started
    install = [s for s in outcome.result.steps if "pip install" in s.name and "lock/framework" in s.name]
    return {
        "buildkit_seconds": round(outcome.result.seconds, 2),
        "run_build_seconds": round(total, 2),
        "install_step_seconds": install[0].seconds if install else None,
        "cached_steps": f"{outcome.result.cached_steps}/{len(outcome.result.steps)}",
        "image_id": outcome.image.id,
        "size_mb": round(outcome.image.size / MB, 1),
        "installed": len(outcome.lock.build.installed) if outcome.lock.build else 0,
    }


def main() -> None:
    engine = DockerEngine()
    work = Path(tempfile.mkdtemp(prefix="envbuilder-installer-bench-"))
    matrix = load_matrix()
    # One package lock for both: made once, from the wheelhouse alone.
    first = write_spec(work, "uv")
    spec = load_spec(first)
    res = resolve(matrix, spec.to_request(cpu_only=True), Host(driver=None, source="none"))
    options = BuildOptions(
        base_image=BASE,
        wheelhouse=WHEELHOUSE,
        lock_out=work / "uv.lock.json",
        lock_settings=LockSettings(find_links=(WHEELHOUSE,), no_index=True),
    )
    plan = plan_from_spec(spec, res, options, first, matrix)
    log("locking once and a first (discarded) uv build ...")
    run_build(plan, options, engine)
    packages = read_lock(work / "uv.lock.json").packages
    results: dict[str, Any] = {}
    for installer in ("pip", "uv"):
        spec_path = write_spec(work, installer)
        lock_path = work / f"{installer}.lock.json"
        doc = json.loads((work / "uv.lock.json").read_text())
        doc["spec"] = load_spec(spec_path).to_dict()
        doc["build"] = None
        doc.pop("lock_hash")
        lock_path.write_text(json.dumps(doc))
        assert read_lock(lock_path).packages == packages
        log(f"{installer}: pruning the cache mounts ({prune_cache_mounts()}); cold build ...")
        cold = one_build(engine, lock_path, cold=True)
        log(f"{installer}: cold {cold['buildkit_seconds']} s; warm build ...")
        warm = one_build(engine, lock_path, cold=False)
        log(f"{installer}: warm {warm['buildkit_seconds']} s")
        results[installer] = {"cold": cold, "warm": warm}
    pip_cold, uv_cold = results["pip"]["cold"], results["uv"]["cold"]
    doc = {
        "what": "the same package lock (torch 2.13.0+cpu and its 9 dependencies, from the local "
        "wheelhouse), built FROM the local Debian base with pip and with uv, in one run",
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "buildkit_cli": find_buildkit_cli().version,
            "uv": uv_version(uv_binary()),
            "note": "shared with other engineers' jobs (2 cores, about 8 users): times are noisy",
        },
        "packages": [p.pin for lock in packages for p in lock.packages],
        "results": results,
        "ratio_cold_uv_over_pip_buildkit": round(
            uv_cold["buildkit_seconds"] / pip_cold["buildkit_seconds"], 3
        ),
        "ratio_cold_uv_over_pip_install_step": (
            round(uv_cold["install_step_seconds"] / pip_cold["install_step_seconds"], 3)
            if uv_cold["install_step_seconds"] and pip_cold["install_step_seconds"]
            else None
        ),
        "goals": {"cold uv <= 0.35x pip": None, "warm rebuild <= 2 s": None},
    }
    doc["goals"]["cold uv <= 0.35x pip"] = doc["ratio_cold_uv_over_pip_buildkit"] <= 0.35
    doc["goals"]["warm rebuild <= 2 s"] = all(r["warm"]["buildkit_seconds"] <= 2 for r in results.values())
    out = ROOT / "results" / f"installer-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(doc, indent=2, sort_keys=True))
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
