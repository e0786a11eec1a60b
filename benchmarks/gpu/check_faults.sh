#!/usr/bin/env bash
# `envbuilder check` on the H200 (issue 27's "done when"): a certified image passes, timed (wall),
# twice (the first call after the image is certified, then again); then each planted fault gives its
# verdict and exit code:
#   gpu-held        a torch process in the background holds most of GPU 0's memory  -> FAIL, 2 (node.processes)
#   driver-floor    an image whose stack records a driver floor above this host's driver,
#                   certified here (certify does not judge the floor: `run` and `check` do)
#                                                                                   -> FAIL, 2 (certificate.driver-too-old)
#   uncertified     the image with one label more: another image ID, certified nowhere -> FAIL, 2 (certificate.no-certificate)
#
#   bash benchmarks/gpu/check_faults.sh TAG      (carry .device: docker26.tar.xz, whl/)
#
# TAG: an image certified on this machine in this store (ENVBUILDER_DATA_DIR); issue27_proof.sh
# calls it so after its container certification. With PREPARE=1 (the default when TAG is not there)
# the script makes it first, in the same call, as container_proof.sh does: Docker 26 (docker26.sh),
# the machine's environment as a base image, `build` of benchmarks/gpu/h200-proof.yaml, `certify
# --quick` (CERTIFY_ARGS) with the GPU (GPU_ACCESS, default devices). CHECK_BUDGET_S (seconds): a
# case that would not fit in what is left is skipped, said so in the summary.
# Writes 4 files to $OUT (beside a caller's own): check-faults.md and check-faults.json (each case:
# expected and got verdict and exit code, wall seconds, the failed checks), check-faults.log (what
# ran, when) and check-faults-raw.tar.gz (each check's --json report and stderr, the build and
# certify logs).
#
# On a machine without a GPU (GPU_ACCESS=none, LOCAL=1: this checkout on PYTHONPATH, the system's
# Docker; tests/integration/test_check_faults_docker.py), the GPU cases are recorded as skipped
# with the reason, and the pass and uncertified cases run on the CPU path; PLANT_ON_CPU=1 plants
# the driver floor there too (its image and certificate are made the same way; with no GPU given
# the floor does not apply, so PASS is what it must give).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
# shellcheck source=lib.sh
source "$ROOT/benchmarks/gpu/lib.sh"
TAG="${1:-envbuilder/check-proof:latest}"
GPU_ACCESS="${GPU_ACCESS:-devices}"
LOCAL="${LOCAL:-0}"
CERTIFY_ARGS="${CERTIFY_ARGS:---quick}"
if [ "$LOCAL" = 1 ]; then
  export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" ENVBUILDER_DATA_DIR="${ENVBUILDER_DATA_DIR:-/tmp/envbuilder-store}"
else
  eb_setup || exit 1
fi
W="$(mktemp -d /tmp/check-faults.XXXXXX)"   # the cases write here; $OUT gets 4 files at the end
LOG="$W/check-faults.log"
t0=$(date +%s)
date -u +"%Y-%m-%dT%H:%M:%SZ on $(hostname)" >"$LOG"
SUFFIX="$(date +%s)"
CASES=()
BUDGET="${CHECK_BUDGET_S:-100000}"
left() { echo $(( BUDGET - ($(date +%s) - t0) )); }
fits() { # NAME EXPECTED_VERDICT EXPECTED_EXIT SECONDS: true when the case fits the budget, else skipped
  if [ "$(left)" -lt "$4" ]; then skip_case "$1" "$2" "$3" "time budget: $(left) s left of ${BUDGET} s, the case needs about $4 s"; return 1; fi
}

if ! docker info >/dev/null 2>&1; then
  bash benchmarks/gpu/docker26.sh start .device >>"$LOG" 2>&1 || { tail -45 "$LOG"; exit 1; }
  export PATH=/opt/dkr26/usr/sbin:/opt/dkr26/usr/bin:$PATH
  STARTED_DOCKER=1
fi
stamp "docker: $(docker version --format 'server {{.Server.Version}}' 2>&1)"

legacy_build() { # TAG DOCKERFILE-TEXT: a build of config only (labels), no network, no BuildKit
  printf '%s\n' "$2" | DOCKER_BUILDKIT=0 docker build -q -t "$1" - >>"$LOG" 2>&1
}

if [ "${PREPARE:-auto}" = 1 ] || { [ "${PREPARE:-auto}" = auto ] && ! docker image inspect "$TAG" >/dev/null 2>&1; }; then
  BASE=envbuilder-gpu/base:host
  import_host_base "$BASE"
  stamp "base imported"
  ENVBUILDER_DOCKER_CLI=/opt/dkr26/usr/bin/docker-20.10 eb build benchmarks/gpu/h200-proof.yaml \
    --base-image "$BASE" --base-venv /opt/torch/.venv --network host --tag "$TAG" >"$W/build.txt" 2>&1
  rc=$?; stamp "build exit $rc"
  [ $rc = 0 ] || { tail -20 "$W/build.txt"; exit $rc; }
  # shellcheck disable=SC2086 # CERTIFY_ARGS is a word list
  eb certify "$TAG" --gpu-access "$GPU_ACCESS" $CERTIFY_ARGS >"$W/certify.txt" 2>&1
  rc=$?; stamp "certify $TAG $CERTIFY_ARGS exit $rc: $(grep -m1 -iE 'verdict' "$W/certify.txt" | cut -c1-160)"
fi

# run_case NAME EXPECTED_VERDICT EXPECTED_EXIT IMAGE: one timed check, its report kept
run_case() {
  local name=$1 want=$2 want_rc=$3 image=$4 start end
  start=$(date +%s.%N)
  eb check "$image" --gpu-access "$GPU_ACCESS" --json >"$W/check-$name.json" 2>"$W/check-$name.txt"
  local rc=$?
  end=$(date +%s.%N)
  local wall
  wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  CASES+=("$name|$want|$want_rc|$rc|$wall|$image|")
  stamp "case $name: exit $rc (want $want_rc) in $wall s"
}
skip_case() { # NAME EXPECTED_VERDICT EXPECTED_EXIT WHY
  CASES+=("$1|$2|$3|||-|$4")
  stamp "case $1: skipped: $4"
}

# 1. a certified image passes (twice: the second call is the warm one)
fits pass PASS 0 30 && run_case pass PASS 0 "$TAG"
fits pass-again PASS 0 30 && run_case pass-again PASS 0 "$TAG"

# 2. a GPU process already holding most of the memory
if [ "$GPU_ACCESS" = none ]; then
  skip_case gpu-held FAIL 2 "CPU path: no GPU to hold"
elif fits gpu-held FAIL 2 45; then
  HOLD_READY="$W/holder.ready"
  "$PYTHON" - "$HOLD_READY" >"$W/holder.log" 2>&1 <<'PY' &
import sys, time, torch
free, total = torch.cuda.mem_get_info(0)
held = torch.empty(int(free * 0.85), dtype=torch.uint8, device="cuda:0")
open(sys.argv[1], "w").write(f"{held.numel() >> 20} MiB of {total >> 20} MiB\n")
time.sleep(600)
PY
  HOLDER=$!
  for _ in $(seq 1 120); do [ -s "$HOLD_READY" ] && break; sleep 0.5; done
  stamp "holder pid $HOLDER holds $(cat "$HOLD_READY" 2>/dev/null || echo '? (not ready)')"
  run_case gpu-held FAIL 2 "$TAG"
  kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null
fi

# 3. an uncertified image
if fits uncertified FAIL 2 25; then
UNCERT_TAG="envbuilder/check-uncertified:$SUFFIX"
legacy_build "$UNCERT_TAG" "FROM $TAG
LABEL io.envbuilder.test=uncertified"
stamp "uncertified image $UNCERT_TAG (build exit $?)"
run_case uncertified FAIL 2 "$UNCERT_TAG"
docker image rm -f "$UNCERT_TAG" >/dev/null 2>&1
fi

# 4. a driver older than the certificate's floor: the same image with its stack label's min_driver
#    raised above this host's driver, certified here (certify records the floor; run and check judge it)
if [ "$GPU_ACCESS" = none ] && [ "${PLANT_ON_CPU:-0}" != 1 ]; then
  skip_case driver-floor FAIL 2 "CPU path: the driver floor applies only to a run given GPUs"
elif fits driver-floor FAIL 2 75; then
  FLOOR_TAG="envbuilder/check-floor:$SUFFIX"
  HOST_DRIVER=$(cat /sys/module/nvidia/version 2>/dev/null || echo 0)
  NEW_FLOOR=$(( ${HOST_DRIVER%%.*} + 1 )).0
  STACK=$(docker image inspect "$TAG" --format '{{index .Config.Labels "io.envbuilder.stack"}}')
  RAISED=$(printf '%s' "$STACK" | "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); d["min_driver"]=sys.argv[1]; print(json.dumps(d, sort_keys=True, separators=(",", ":")))' "$NEW_FLOOR")
  legacy_build "$FLOOR_TAG" "FROM $TAG
LABEL io.envbuilder.stack='$RAISED' io.envbuilder.min-driver=$NEW_FLOOR"
  stamp "driver-floor image $FLOOR_TAG: host driver $HOST_DRIVER, recorded floor $NEW_FLOOR (build exit $?)"
  # shellcheck disable=SC2086
  eb certify "$FLOOR_TAG" --gpu-access "$GPU_ACCESS" --quick >"$W/certify-floor.txt" 2>&1
  stamp "certify $FLOOR_TAG exit $?: $(grep -m1 -iE 'verdict' "$W/certify-floor.txt" | cut -c1-160)"
  stamp "driver-floor image labels: $(docker image inspect "$FLOOR_TAG" --format '{{index .Config.Labels "io.envbuilder.min-driver"}}')"
  if [ "$GPU_ACCESS" = none ]; then  # PLANT_ON_CPU=1 (the tests): the plant's mechanics; no GPU, no floor
    run_case driver-floor PASS 0 "$FLOOR_TAG"
  else
    run_case driver-floor FAIL 2 "$FLOOR_TAG"
  fi
  docker image rm -f "$FLOOR_TAG" >/dev/null 2>&1
fi

# The summary: JSON and markdown, each case with what it should give and what it gave.
printf '%s\n' "${CASES[@]}" >"$W/cases.txt"
"$PYTHON" - "$W" "$OUT" "$GPU_ACCESS" <<'PY'
import json, pathlib, socket, subprocess, sys, time
work, out, access = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
rows = []
for line in (work / "cases.txt").read_text().splitlines():
    name, want, want_rc, rc, wall, image, skipped = line.split("|", 6)
    row = {"case": name, "image": image, "expected_verdict": want, "expected_exit": int(want_rc)}
    if skipped:
        row.update(skipped=skipped, ok=None)
    else:
        try:
            doc = json.loads((work / f"check-{name}.json").read_text())
        except (OSError, ValueError):
            doc = {}
        fails = [f["check"] for f in doc.get("findings", []) if f.get("status") == "fail"]
        row.update(
            verdict=doc.get("verdict"), exit_code=int(rc), wall_s=float(wall), reason=doc.get("reason"),
            failed_checks=fails, timings=doc.get("timings"),
            ok=doc.get("verdict") == want and int(rc) == int(want_rc),
        )
    rows.append(row)
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=20).stdout.strip()
except OSError:
    gpu = "none"
summary = {"machine": socket.gethostname(), "gpu": gpu or "none", "gpu_access": access,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": rows,
           "all_ok": all(r["ok"] is not False for r in rows)}
(out / "check-faults.json").write_text(json.dumps(summary, indent=1) + "\n")
md = [f"# envbuilder check: planted faults ({summary['date']}, {summary['machine']}, {summary['gpu']})", "",
      "| case | expected | got | exit (expected) | wall s | failed checks / why skipped |", "|---|---|---|---|---|---|"]
for r in rows:
    if r.get("skipped"):
        md.append(f"| {r['case']} | {r['expected_verdict']} | skipped | - ({r['expected_exit']}) | - | {r['skipped']} |")
    else:
        mark = "" if r["ok"] else " **MISMATCH**"
        md.append(f"| {r['case']} | {r['expected_verdict']} | {r['verdict']}{mark} | {r['exit_code']} "
                  f"({r['expected_exit']}) | {r['wall_s']:.2f} | {', '.join(r['failed_checks']) or '-'} |")
(out / "check-faults.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
PY
rc=$?
[ "${STARTED_DOCKER:-0}" = 1 ] && bash benchmarks/gpu/docker26.sh stop >>"$LOG" 2>&1
stamp "done (summary exit $rc)"
cp "$LOG" "$OUT/check-faults.log"
tar -C "$W" -czf "$OUT/check-faults-raw.tar.gz" --exclude=check-faults.log . 2>/dev/null
rm -rf "$W"
"$PYTHON" -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["all_ok"] else 1)' "$OUT/check-faults.json"
