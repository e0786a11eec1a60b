#!/usr/bin/env bash
# Issue 27 on the H200 test machine, one device call (<= 9 min): certification times of this
# checkout's harness ("new") against the harness of main at OLD_REF ("old"; default 5a10b03, main
# before the second certification-speed attempt), side by side, natively (the machine's own Python,
# torch and jax), then the container part: the machine's environment as a base image, built and
# certified in a container with the new harness, and benchmarks/gpu/check_faults.sh against that
# certified image when the file exists.
#
# Before the device call, on the CPU machine, in the checkout (the GPU machine has no git history):
#   rm -rf .device/old && mkdir -p .device/old && git archive 5a10b03 envbuilder/harness matrices/thresholds.yaml | tar -x -C .device/old && echo 5a10b03 >.device/old/REF
# and carry .device (docker26.tar.xz, whl/docker-*.whl, old/). The summary names the REF it found.
#
#   LIMIT=570 bash benchmarks/gpu/issue27_proof.sh
#   CONTAINER=0 ...      the native runs only (no Docker, build, container certify, check_faults)
#   PLAN=jax ...         the JAX pair first (new cold, old warm, new warm), then torch new and old
#                        warm as time allows; no container part
#   PLAN=short ...       one of each in ~6 min (a machine that was hard to get): JAX new (cold),
#                        torch new, torch old, JAX old (warm); no container part
#   PLAN=torch ...       torch new (cold), JAX new (warm), torch old and new (warm): ~6 min; no
#                        container part
#   PLAN=torchab ...     torch only, new (cold), old, new, old (warm): two like-position pairs, ~6 min
#   PLAN=coldab ...      torch only, new, old, new, old, each after the page cache is dropped
#                        (/proc/sys/vm/drop_caches, as root): cold runs side by side, ~8 min; the
#                        note says when the cache could not be dropped (then the later runs are warm)
#   BYTECODE=0 ...       do not compile the machine's site-packages to bytecode before the runs (the
#                        default does, as images carry it; see below; timed in proof.log)
#   PLAN=jaxcold ...     JAX only, new then old, each after the page cache is dropped, ~5 min
#   PLAN=jaxcoldab ...   JAX only, new, old, new, old, each after the page cache is dropped, ~8 min
#   PLAN=jaxcoldba ...   JAX only, old then new (the other order), each after the page cache is dropped
#   KEEP_COMPILE_CACHES=0 ...  each new run compiles into a new Inductor (JAX) cache, as the old
#                        harness does; the default (1) keeps one set for the new runs, as certify's
#                        JIT cache volume does for the certifications of one image on one host: the
#                        first new run of a framework fills it, the later ones load from it
#   bash benchmarks/gpu/issue27_proof.sh check-only   a second call on the still-warm machine: only
#                                       check_faults.sh against the image the first call certified
#                                       (its Docker, image and certificate store are still there)
#
# Order of the default PLAN (the most important figures first; each later part runs only while
# enough of the 9 minutes is left, and the summary says what was not run):
#   1. torch default, new, COLD: the first certification after the machine started (nothing before
#      it imports torch or jax, so the page cache is as a fresh machine leaves it)
#   2. torch --quick, new
#   3. torch default, old (warm)          4. torch default, new (warm): like positions, one pair
#   5. JAX default, new (the Docker engine starts and the base image is imported meanwhile: this
#      JAX figure is an upper bound; SERIAL=1 runs the import after it instead)
#   6. build + `certify --gpu-access devices` of the imported environment with the new harness
#      (the host-side verdict), then check_faults.sh TAG (issue 27 items 1-2: `envbuilder check`
#      and its planted faults; another branch writes it), given the time left
#   7. torch --quick, old; JAX default, old: when time is left
# GPU busy = the mean NVML utilization the certificate's telemetry recorded over the run.
#
# $OUT gets at most 8 files: proof.log (what ran, when), summary.md (the table and every step's
# seconds), summary.json (the same, for tools), raw.tar.gz (each run's result JSON and log, the
# container certificate); check_faults.sh may add up to 4 files of its own.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
export PYTHONUNBUFFERED=1
LIMIT=${LIMIT:-535}          # seconds of wall this script may take (the call's limit is 600)
OLD_REF=${OLD_REF:-5a10b03}  # the old harness, when .device/old is missing and git has history
PLAN=${PLAN:-default}        # default | jax | short | torch | torchab | coldab | jaxcold | jaxcoldab | jaxcoldba
CONTAINER=${CONTAINER:-1}    # 0: no container part
KEEP_COMPILE_CACHES=${KEEP_COMPILE_CACHES:-1}  # 0: each new run compiles into a cache of its own
T_START=$(date +%s)
TAG=envbuilder/issue27-proof:latest
if [ "${1:-}" = check-only ]; then
  eb_setup || exit 1
  bash benchmarks/gpu/docker26.sh start .device >/dev/null 2>&1 || exit 1
  export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
  docker image inspect "$TAG" >/dev/null 2>&1 || { echo "$TAG is not on this machine: run the full proof first" >&2; exit 1; }
  CHECK_BUDGET_S=$((LIMIT - 10)) timeout $((LIMIT - 10)) bash benchmarks/gpu/check_faults.sh "$TAG"
  exit $?
fi
FINAL_OUT=$OUT
W=$(mktemp -d /tmp/issue27.XXXXXX)   # runs write here; $OUT gets the summary and one tarball
proof_log
date -u +"%Y-%m-%dT%H:%M:%SZ on $(hostname), $(nproc) CPUs" >"$LOG"
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv,noheader >>"$LOG" 2>&1
left() { echo $((LIMIT - ($(date +%s) - T_START))); }
RUNS="$W/runs.tsv"
KEPT="$W/compile-caches"  # the new harness's kept compile caches (KEEP_COMPILE_CACHES=1)
: >"$RUNS"
# BYTECODE=1 (the default since 2026-12-07; 0: as before): compile the machine's site-packages to
# bytecode first, as envbuilder's images carry them (`uv pip install --compile-bytecode`,
# image/render.py). The GPU machine's torch venv has none for torch, sympy or triton
# (benchmarks/results/issue27-h100-2026-12-07-d/import-costs.md), and the harness runs with
# PYTHONDONTWRITEBYTECODE=1 as in images: without it every process compiles torch, Dynamo,
# Inductor, sympy and triton from source on each run, which no envbuilder image does.
if [ "${BYTECODE:-1}" = 1 ]; then
  t_bc=$(date +%s)
  site=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$PYTHON" -m compileall -q -j 0 "$site" >/dev/null 2>&1
  rc_bc=$?
  echo "bytecode: compileall over $site in $(( $(date +%s) - t_bc )) s (exit $rc_bc)" >>"$LOG"
fi

# The two harness trees, staged as images carry them (lib.sh stage_harness).
stage_harness issue27-new
NEW_STAGE=$STAGE NEW_THRESH=("${THRESH_ARGS[@]}")
OLD_SRC=""
if [ -d .device/old/envbuilder/harness ]; then
  OLD_SRC=.device/old
  OLD_REF=$(cat .device/old/REF 2>/dev/null || echo "unknown (.device/old has no REF)")
elif git rev-parse -q --verify "$OLD_REF^{commit}" >/dev/null 2>&1; then
  mkdir -p "$W/old" && git archive "$OLD_REF" envbuilder/harness matrices/thresholds.yaml | tar -x -C "$W/old" && OLD_SRC="$W/old"
fi
if [ -n "$OLD_SRC" ]; then
  stage_harness issue27-old "$OLD_SRC"
  OLD_STAGE=$STAGE OLD_THRESH=("${THRESH_ARGS[@]}")
  stamp "old harness: $OLD_REF; plan $PLAN, container part $CONTAINER"
else
  stamp "old harness missing (.device/old, see this script's header): the old runs are not run"
fi

#   one NAME WHICH NEED ARGS...   a native harness run of WHICH (new|old) when NEED seconds are left
one() {
  local name=$1 which=$2 need=$3; shift 3
  if [ "$which" = old ] && [ -z "$OLD_SRC" ]; then
    printf '%s\t%s\tnot run\t\t%s\n' "$name" "$which" "no old harness" >>"$RUNS"; return
  fi
  if [ "$(left)" -lt "$need" ]; then
    stamp "$name: not run ($(left) s left, needs about $need s)"
    printf '%s\t%s\tnot run\t\t%s\n' "$name" "$which" "time: $(left) s left of $LIMIT" >>"$RUNS"; return
  fi
  if [ "$which" = new ]; then STAGE=$NEW_STAGE THRESH_ARGS=("${NEW_THRESH[@]}"); else STAGE=$OLD_STAGE THRESH_ARGS=("${OLD_THRESH[@]}"); fi
  local at=$(( $(date +%s) - T_START ))
  # The CUDA driver's JIT cache as the run finds it: empty, cuDNN's first autotuning compiles its
  # kernels (10-12 s more on an H100, benchmarks/results/issue27-h100-2026-12-07-f/)
  local jit kept=""
  jit=$(find "${CUDA_CACHE_PATH:-$HOME/.nv/ComputeCache}" -type f 2>/dev/null | wc -l)
  if [ "$which" = new ] && [ "$KEEP_COMPILE_CACHES" = 1 ]; then
    # As certify gives each certification of one image on one host (certify/jit_cache.py): the
    # frameworks' compile caches kept between the new harness's runs (the old one made its own).
    kept="; compile caches kept: $(find "$KEPT" -type f 2>/dev/null | wc -l) files"
    TORCHINDUCTOR_CACHE_DIR=$KEPT/torchinductor TRITON_CACHE_DIR=$KEPT/triton \
      JAX_COMPILATION_CACHE_DIR=$KEPT/jax OUT=$W run_harness "$name" "$@" 2>/dev/null
  else
    OUT=$W run_harness "$name" "$@" 2>/dev/null
  fi
  set +e
  stamp "$name ($which $*): exit $rc, script wall $wall s"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$which" "$rc" "$wall" "started at ${at} s; JIT cache ${jit} files$kept${NOTE:+; $NOTE}" >>"$RUNS"
}

# The page cache dropped (as root), so the next run reads torch, cuDNN, ... from disk as a fresh
# machine's first run does; prints what happened, for the run's note.
dropped() { sync; if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then echo "page cache dropped"; else echo "page cache NOT dropped"; fi; }

if [ "$PLAN" = short ]; then
  CONTAINER=0
  one jax-new-cold new 110 --framework jax
  one torch-new-warm new 75
  one torch-old-warm old 80
  one jax-old-warm old 130 --framework jax
elif [ "$PLAN" = torch ]; then
  CONTAINER=0
  one torch-new-cold new 90
  one jax-new-warm new 110 --framework jax
  one torch-old-warm old 80
  one torch-new-warm new 80
elif [ "$PLAN" = torchab ]; then
  CONTAINER=0
  one torch-new-cold new 90
  one torch-old-warm old 90
  one torch-new-warm new 90
  one torch-old-warm2 old 90
elif [ "$PLAN" = coldab ]; then
  CONTAINER=0
  NOTE=$(dropped) one torch-new-cold new 100
  NOTE=$(dropped) one torch-old-cold old 100
  NOTE=$(dropped) one torch-new-cold2 new 100
  NOTE=$(dropped) one torch-old-cold2 old 100
elif [ "$PLAN" = jaxcold ]; then
  CONTAINER=0
  NOTE=$(dropped) one jax-new-cold new 120 --framework jax
  NOTE=$(dropped) one jax-old-cold old 150 --framework jax
elif [ "$PLAN" = jaxcoldba ]; then
  CONTAINER=0
  NOTE=$(dropped) one jax-old-cold old 150 --framework jax
  NOTE=$(dropped) one jax-new-cold new 120 --framework jax
elif [ "$PLAN" = jaxcoldab ]; then
  CONTAINER=0
  NOTE=$(dropped) one jax-new-cold new 120 --framework jax
  NOTE=$(dropped) one jax-old-cold old 150 --framework jax
  NOTE=$(dropped) one jax-new-cold2 new 120 --framework jax
  NOTE=$(dropped) one jax-old-cold2 old 150 --framework jax
elif [ "$PLAN" = jax ]; then
  CONTAINER=0
  one jax-new-cold new 150 --framework jax
  one jax-old-warm old 190 --framework jax
  one jax-new-warm new 130 --framework jax
  one torch-new-warm new 100
  one torch-old-warm old 110
else
one torch-new-cold new 100
one torch-new-quick new 40 --quick
one torch-old-warm old 110
one torch-new-warm new 100

# The container part's slow start (Docker, the ~9 GB base image) beside the JAX run unless SERIAL=1.
BASE=envbuilder-gpu/base:host
docker_part() {
  bash benchmarks/gpu/docker26.sh start .device >>"$W/docker.log" 2>&1 || { echo "docker start failed" >>"$W/docker.log"; return 1; }
  export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
  local t=$(date +%s)
  import_host_base "$BASE" || { echo "import failed" >>"$W/docker.log"; return 1; }
  echo "base imported in $(( $(date +%s) - t )) s" >>"$W/docker.log"
}
DOCKER_OK=0
if [ "$CONTAINER" = 0 ]; then
  one jax-new new 150 --framework jax
  one jax-old old 190 --framework jax
elif eb_setup >>"$W/docker.log" 2>&1; then
  if [ "${SERIAL:-0}" = 1 ]; then
    one jax-new new 150 --framework jax
    [ "$(left)" -gt 150 ] && docker_part && DOCKER_OK=1
  else
    docker_part & DPID=$!
    NOTE="the base image was imported meanwhile (an upper bound)" one jax-new new 150 --framework jax
    wait "$DPID" && DOCKER_OK=1
  fi
else
  stamp "eb_setup failed (the docker SDK wheel in .device/whl?): no container part"
  one jax-new new 150 --framework jax
fi
export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
stamp "docker part: $(tail -1 "$W/docker.log" 2>/dev/null)"

if [ "$DOCKER_OK" = 1 ] && [ "$(left)" -gt 110 ]; then
  ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 eb build benchmarks/gpu/h200-proof.yaml \
    --base-image "$BASE" --base-venv /opt/torch/.venv --network host --tag "$TAG" >"$W/build.txt" 2>&1
  rc=$?; stamp "build exit $rc"
  if [ $rc = 0 ]; then
    t=$(date +%s)
    # --quick by default: the native runs above measure the plans' time; this one proves the
    # container path (runtime layer, devices mode, host-side verdict) and certifies TAG for check
    eb certify "$TAG" --gpu-access devices ${CONTAINER_CERTIFY_ARGS:---quick} --out "$W/cert-container.json" >"$W/certify-container.txt" 2>&1
    rc=$?
    stamp "certify --gpu-access devices ${CONTAINER_CERTIFY_ARGS:---quick} (new harness, in a container) exit $rc in $(( $(date +%s) - t )) s: $(grep -m1 -iE 'certified|failed|refused' "$W/certify-container.txt" | cut -c1-160)"
    printf '%s\t%s\t%s\t%s\t%s\n' certify-container new "$rc" "$(( $(date +%s) - t ))" "envbuilder certify --gpu-access devices ${CONTAINER_CERTIFY_ARGS:---quick} (the certify command's wall)" >>"$RUNS"
    if [ $rc = 0 ] && [ -f benchmarks/gpu/check_faults.sh ]; then
      budget=$(( $(left) - 25 ))
      if [ "$budget" -gt 20 ]; then
        stamp "check_faults.sh $TAG (at most $budget s)"
        OUT=$FINAL_OUT CHECK_BUDGET_S=$budget timeout "$budget" bash benchmarks/gpu/check_faults.sh "$TAG" >>"$W/check_faults.log" 2>&1
        stamp "check_faults exit $?: $(tail -1 "$W/check_faults.log" | cut -c1-160)"
      else
        stamp "check_faults: not run ($(left) s left)"
      fi
    elif [ ! -f benchmarks/gpu/check_faults.sh ]; then
      stamp "check_faults.sh not in this checkout: not run"
    fi
  fi
else
  stamp "container part: not run (docker ok: $DOCKER_OK, $(left) s left)"
fi

if [ "$CONTAINER" != 0 ]; then
  one torch-old-quick old 40 --quick
  one jax-old old 190 --framework jax
fi
fi  # PLAN

# The summary: every run's wall, GPU busy share, verdict and step seconds.
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
"$PYTHON" - "$W" "$FINAL_OUT" "$LIMIT" "$OLD_REF" "${GPU_NAME:-unknown GPU}" <<'PY'
import json, os, sys
w, out, limit, old_ref, gpu = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]


def details(doc):
    """What the second certification-speed attempt changed, as each run recorded it."""
    d = {}
    for s in doc.get("steps", []):
        m = s.get("metrics") or {}
        if s["name"] == "host" and m:  # what the run found in its JIT and compile caches
            d["caches"] = {k: m.get(k) for k in ("cuda_jit_cache", "compile_caches") if m.get(k)}
        elif s["name"] == "batch_ramp" and m:
            d["ramp"] = {k: m.get(k) for k in ("largest_batch", "smallest_oom_batch", "stopped", "ramp_budget_s")}
            d["ramp"]["tries"] = [
                [t.get("batch"), t.get("fits"), round(t.get("seconds", 0), 1), t.get("compile_s"), t.get("autotune")]
                for t in m.get("tried", [])
            ]
        elif s["name"] == "input_pipeline" and m:  # the loader's rate from its workers' seconds
            d["pipeline"] = {k: m.get(k) for k in ("workers", "loader_rate_from", "loader_only_img_s",
                                                   "loader_fed_img_s", "resident_img_s", "bottleneck",
                                                   "first_batch_s")}
            secs = m.get("worker_batch_s") or []
            d["pipeline"]["worker_batch_s"] = [secs[0], secs[len(secs) // 2], secs[-1]] if secs else None
        elif s["name"] == "telemetry_overhead" and m:
            d["ab"] = {k: m.get(k) for k in ("batch", "window_steps", "pair_ratios", "pairs_disturbed",
                                             "pairs_judged", "overhead", "overhead_lower_95")}
        elif s["name"].startswith("train_rn18_") and "first_step_s" in m:
            d.setdefault("accuracy_runs", {})[s["name"]] = [round(s["seconds"], 1), round(m["first_step_s"], 1), m.get("xla_autotune")]
        pre = (m.get("config") or {}).get("precompile")
        if isinstance(pre, dict):
            d.setdefault("compile_lane", {})[s["name"]] = {
                k: pre.get(k) for k in ("compile_s", "setup_s", "done_after_s", "asked_after_s", "waited_s", "timeline_s", "compile_threads")
            }
            phases = pre.get("compile_phases_s") or {}
            d["compile_lane"][s["name"]]["phases_s"] = dict(list(phases.items())[:6])
    return d


runs = []
for line in open(f"{w}/runs.tsv"):
    name, which, rc, wall, note = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
    r = {"name": name, "harness": which, "exit": rc, "script_wall_s": float(wall) if wall else None, "note": note}
    path = f"{w}/cert-container.json" if name == "certify-container" else f"{w}/{name}.json"
    try:
        doc = json.load(open(path))
        if "harness" in doc and "steps" not in doc:  # a certificate: the harness result inside
            doc = doc["harness"]
        tel = doc.get("telemetry") or {}
        summ = tel.get("summary") or {}
        r.update(
            verdict=doc.get("verdict"), reason=doc.get("verdict_reason"), mode=doc.get("mode"),
            harness_wall_s=round(doc.get("wall_seconds", 0), 1),
            gpu_busy_pct=(summ.get("util_gpu") or {}).get("mean"), samples=summ.get("samples"),
            steps={s["name"]: [s["status"], round(s["seconds"], 1)] for s in doc.get("steps", [])},
            gates={g["name"]: [g["status"], g.get("reason", "")] for g in doc.get("gates", [])},
            facts={k: v for k, v in (doc.get("facts") or {}).items() if k in (
                "cudnn_warmup", "library_readahead", "largest_batch", "pipeline_images_prepared_s")},
            details=details(doc),
        )
    except (OSError, ValueError, KeyError, TypeError) as e:
        if rc != "not run":
            r["error"] = f"no result document ({type(e).__name__}: {e})"
    runs.append(r)
json.dump({"limit_s": int(limit), "old_ref": old_ref, "runs": runs}, open(f"{out}/summary.json", "w"), indent=1)
goals = {"torch-new-cold": 75, "torch-new-warm": 75, "jax-new": 100, "jax-new-cold": 100, "jax-new-warm": 100,
         "torch-new-quick": 20}
md = [f"# Issue 27 item 3: certification time, old ({old_ref}) vs new harness, {gpu}", "",
      "| run | harness | verdict | harness wall | script wall | goal | GPU busy | note |",
      "|---|---|---|---|---|---|---|---|"]
for r in runs:
    busy = r.get("gpu_busy_pct")
    md.append(f"| {r['name']} | {r['harness']} | {r.get('verdict', r['exit'])} | {r.get('harness_wall_s', '-')} s | "
              f"{r['script_wall_s'] or '-'} s | {('<= %d s' % goals[r['name']]) if r['name'] in goals else ''} | "
              f"{'%.1f%%' % busy if isinstance(busy, (int, float)) else '-'} | {r['note']} {r.get('error', '')} |")
md.append("")
for r in runs:
    if not r.get("steps"):
        continue
    md.append(f"## {r['name']} ({r['harness']}): {r.get('verdict')} ({r.get('reason')})")
    md.append("")
    md.append(" ".join(f"{k} {v[1]}" + ("" if v[0] == "pass" else f" [{v[0]}]") for k, v in r["steps"].items()))
    md.append("")
    for g, (st, why) in r["gates"].items():
        md.append(f"- gate {g}: {st} {why}")
    if r.get("facts"):
        md.append(f"- facts: {json.dumps(r['facts'])}")
    for key, value in (r.get("details") or {}).items():
        md.append(f"- {key}: {json.dumps(value)}")
    md.append("")
open(f"{out}/summary.md", "w").write("\n".join(md) + "\n")
print("\n".join(md[:4 + len(runs)]))
PY
# Not the kept compile caches (~90 MB after one torch and one JAX run: over what a call brings back).
tar -czf "$FINAL_OUT/raw.tar.gz" -C "$W" --exclude old --exclude compile-caches --exclude '*.steps.jsonl' . 2>>"$LOG"
bash benchmarks/gpu/docker26.sh stop >/dev/null 2>&1
stamp "done"
