#!/usr/bin/env bash
# envbuilder check as a Slurm Prolog or HealthCheckProgram (docs/check.md).
#
#   slurm.conf:  Prolog=/etc/slurm/envbuilder-check-prolog.sh          (before each job, on its node)
#                HealthCheckProgram=/etc/slurm/envbuilder-check-prolog.sh  HealthCheckInterval=300
#
# Which image: ENVBUILDER_CHECK_IMAGE if set (a health check of the fleet's image), else the
# job's: pyxis's --container-image (Slurm hands SPANK options to the Prolog as
# SPANK__SLURM_SPANK_OPTION_pyxis_container_image; enroot's REGISTRY#IMAGE is read as
# REGISTRY/IMAGE), else `envbuilder-image=REF` in the job's --comment (scontrol show job
# $SLURM_JOB_ID). No image named: nothing to check, the job goes on.
#
# Verdicts (envbuilder check's exit codes): PASS (0) and WARN (1) let the job start (WARN is
# logged); FAIL (2) drains this node with the check's reason (scontrol update ... state=drain
# reason="envbuilder check: ...") and exits 1, so Slurm requeues the job elsewhere. Any other
# exit: the check itself could not run (Docker down, the image not pullable: docs/errors.md);
# ENVBUILDER_CHECK_ON_ERROR=allow (default) logs it and lets the job go, =drain drains as a FAIL.
#
# Settings (environment; for a Prolog put them in slurmd's environment, e.g. its systemd unit):
#   ENVBUILDER_CHECK_CMD     the envbuilder command (default: envbuilder)
#   ENVBUILDER_CHECK_ARGS    extra options for `envbuilder check` (e.g. "--xid-window 86400")
#   ENVBUILDER_CHECK_LOG     a folder for each check's JSON report (default: none kept)
#   ENVBUILDER_CHECK_ON_ERROR  allow | drain (see above)
#   ENVBUILDER_CHECK_DRAIN   the drain command (default: scontrol); its arguments follow scontrol's
set -u

say() { printf 'envbuilder-check-prolog: %s\n' "$*" >&2; logger -t envbuilder-check "$*" 2>/dev/null || true; }

job_image() {
  if [ -n "${ENVBUILDER_CHECK_IMAGE:-}" ]; then
    printf '%s' "$ENVBUILDER_CHECK_IMAGE"
    return
  fi
  local pyxis="${SPANK__SLURM_SPANK_OPTION_pyxis_container_image:-${_SLURM_SPANK_OPTION_pyxis_container_image:-}}"
  if [ -n "$pyxis" ]; then
    pyxis="${pyxis#docker://}"
    printf '%s' "${pyxis/\#//}" # enroot's REGISTRY#IMAGE is Docker's REGISTRY/IMAGE
    return
  fi
  if [ -n "${SLURM_JOB_ID:-}" ]; then
    scontrol show job "$SLURM_JOB_ID" --oneliner 2>/dev/null |
      grep -o 'Comment=[^ ]*' | sed -n 's/^Comment=.*envbuilder-image=\([^ ,;]*\).*$/\1/p' | head -n 1
  fi
}

drain() { # reason
  local node="${SLURMD_NODENAME:-$(hostname -s)}"
  local reason="envbuilder check: $1"
  reason="${reason//\"/\'}"
  ${ENVBUILDER_CHECK_DRAIN:-scontrol} update nodename="$node" state=drain reason="${reason:0:200}" ||
    say "could not drain $node: $reason"
  say "drained $node: $reason"
}

image="$(job_image)"
if [ -z "$image" ]; then
  say "job ${SLURM_JOB_ID:-(none)}: no image named (ENVBUILDER_CHECK_IMAGE, --container-image, --comment envbuilder-image=REF): nothing to check"
  exit 0
fi

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
# shellcheck disable=SC2086 # ENVBUILDER_CHECK_CMD and _ARGS are word lists on purpose
${ENVBUILDER_CHECK_CMD:-envbuilder} check ${ENVBUILDER_CHECK_ARGS:-} "$image" --json >"$report" 2>>"${ENVBUILDER_CHECK_STDERR:-/dev/null}"
rc=$?
if [ -n "${ENVBUILDER_CHECK_LOG:-}" ]; then
  mkdir -p "$ENVBUILDER_CHECK_LOG" && cp "$report" "$ENVBUILDER_CHECK_LOG/check-${SLURM_JOB_ID:-health}-$(date +%s).json"
fi
reason="$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"]+": "+d["reason"])' "$report" 2>/dev/null)"

case "$rc" in
  0) say "job ${SLURM_JOB_ID:-(none)}: $image: ${reason:-PASS}"; exit 0 ;;
  1) say "job ${SLURM_JOB_ID:-(none)}: $image: ${reason:-WARN} (the job goes on)"; exit 0 ;;
  2)
    if [ "${reason%%:*}" = "FAIL" ]; then
      drain "$image: ${reason#FAIL: }"
      exit 1
    fi
    ;; # exit 2 without a FAIL report: a usage error, i.e. the check could not run
esac
say "job ${SLURM_JOB_ID:-(none)}: $image: the check could not run (exit $rc)"
if [ "${ENVBUILDER_CHECK_ON_ERROR:-allow}" = "drain" ]; then
  drain "$image: the check could not run (exit $rc)"
  exit 1
fi
exit 0
