#!/usr/bin/env bash
# Install and start a real one-host Slurm cluster for the fleet tests, idempotently: Debian
# bookworm's slurmctld, slurmd, slurm-client and munge (22.05), two node classes on 127.0.0.1,
# each its own slurmd (`slurmd -N NAME`, own port, spool and log), with fake GPU GRES (gres.conf
# `File=` on existing device files stand in for /dev/nvidia*):
#   h200-0  Gres=gpu:h200:2  Features=sm_90,nvidia_driver_580.95.05   (the "h200" class)
#   a100-0  Gres=gpu:a100:1  Features=sm_80,nvidia_driver_550.54.14   (the "a100" class)
#   cpu-0   no GRES                                                   (the "cpu" class)
# partitions `gpu` (the two GPU nodes, default) and `cpu`. Jobs run as root and reach the host's Docker socket. No
# slurmdbd (so no sacct): job states come from squeue/scontrol, which keep finished jobs for
# MinJobAge seconds. Root, no stdin (CI). See shared/docs/environment.md ("A real Slurm").
# Cost: the packages about 45 s the first time (apt); starting the daemons about 5 s.
set -euo pipefail

STATE_DIR="${ENVBUILDER_TEST_STATE:-/var/cache/envbuilder-test}/slurm"
CONF_DIR=/etc/slurm
MARK="# written by envbuilder scripts/slurm.sh"
NODES=(h200-0 a100-0 cpu-0)

say() { printf 'slurm: %s\n' "$*" >&2; }
die() { printf 'slurm: error: %s\n' "$*" >&2; exit 1; }

munge_up() { [ -S /run/munge/munge.socket.2 ] && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
ctld_up() { timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; }
node_up() { # name: registered and not down
  local state
  state="$(timeout 5 scontrol show node "$1" --oneliner 2>/dev/null | grep -o 'State=[A-Z+_]*' || true)"
  [ -n "$state" ] && ! grep -qE 'DOWN|NOT_RESPONDING|UNKNOWN|DRAIN|FAIL' <<<"$state"
}
all_up() { munge_up && ctld_up && for n in "${NODES[@]}"; do node_up "$n" || return 1; done; }

summary() {
  say "summary:"
  sinfo -N -o '  %N %P %G %f %T' >&2 2>/dev/null || say "  sinfo: DOWN"
}

if all_up; then
  summary
  exit 0
fi
if [ "$(id -u)" != 0 ] || [ ! -f /etc/debian_version ]; then
  die "needs root on Debian to install slurmctld/slurmd/munge and start them (CI does)"
fi

# 1. Packages.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null \
    || ! command -v munged >/dev/null; then
  say "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

# 2. Configuration (only where none of a real cluster would be overwritten).
if [ -f "$CONF_DIR/slurm.conf" ] && ! grep -qF "$MARK" "$CONF_DIR/slurm.conf"; then
  die "$CONF_DIR/slurm.conf exists and is not ours: refusing to overwrite a real cluster's configuration"
fi
mkdir -p "$CONF_DIR" "$STATE_DIR/state" "$STATE_DIR/log"
for n in "${NODES[@]}"; do mkdir -p "$STATE_DIR/spool/$n"; done
host="$(hostname -s)"
cat >"$CONF_DIR/slurm.conf.new" <<EOF
$MARK
ClusterName=envbuilder
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE_DIR/state
SlurmdSpoolDir=$STATE_DIR/spool/%n
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd-%n.pid
SlurmctldLogFile=$STATE_DIR/log/slurmctld.log
SlurmdLogFile=$STATE_DIR/log/slurmd-%n.log
SlurmctldPort=6817
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
SchedulerParameters=batch_sched_delay=1
SlurmdTimeout=60
NodeName=h200-0 NodeHostname=$host NodeAddr=127.0.0.1 Port=6818 CPUs=2 RealMemory=4000 Gres=gpu:h200:2 Features=sm_90,nvidia_driver_580.95.05
NodeName=a100-0 NodeHostname=$host NodeAddr=127.0.0.1 Port=6819 CPUs=2 RealMemory=4000 Gres=gpu:a100:1 Features=sm_80,nvidia_driver_550.54.14
NodeName=cpu-0 NodeHostname=$host NodeAddr=127.0.0.1 Port=6820 CPUs=2 RealMemory=4000
PartitionName=gpu Nodes=h200-0,a100-0 Default=YES MaxTime=120 State=UP OverSubscribe=NO
PartitionName=cpu Nodes=cpu-0 MaxTime=120 State=UP OverSubscribe=NO
EOF
cat >"$CONF_DIR/gres.conf.new" <<EOF
$MARK
NodeName=h200-0 Name=gpu Type=h200 File=/dev/tty[0-1]
NodeName=a100-0 Name=gpu Type=a100 File=/dev/tty2
EOF
changed=0
for f in slurm.conf gres.conf; do
  if ! cmp -s "$CONF_DIR/$f.new" "$CONF_DIR/$f"; then mv "$CONF_DIR/$f.new" "$CONF_DIR/$f"; changed=1
  else rm -f "$CONF_DIR/$f.new"; fi
done

# 3. munge (the key comes with the package), as the munge user.
if ! munge_up; then
  say "starting munged"
  mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
  [ -f /etc/munge/munge.key ] || { /usr/sbin/mungekey --create 2>/dev/null || die "no munge key"; chown munge:munge /etc/munge/munge.key; }
  runuser -u munge -- /usr/sbin/munged --force >/dev/null 2>&1 || true
  for _ in $(seq 1 20); do munge_up && break; sleep 0.5; done
  munge_up || die "munged did not start"
fi

# 4. slurmctld, then one slurmd per node (a changed configuration restarts them).
stop_pidfile() { [ -f "$1" ] && kill "$(cat "$1")" 2>/dev/null || true; rm -f "$1"; }
if [ "$changed" = 1 ]; then
  say "configuration changed: restarting the daemons"
  for n in "${NODES[@]}"; do stop_pidfile "$STATE_DIR/slurmd-$n.pid"; done
  stop_pidfile "$STATE_DIR/slurmctld.pid"
  sleep 1
fi
if ! ctld_up; then
  say "starting slurmctld (log: $STATE_DIR/log/slurmctld.log)"
  setsid slurmctld -i </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 30); do ctld_up && break; sleep 0.5; done
  ctld_up || { tail -n 20 "$STATE_DIR/log/slurmctld.log" >&2 || true; die "slurmctld did not come up (log tail above)"; }
fi
for n in "${NODES[@]}"; do
  pidfile="$STATE_DIR/slurmd-$n.pid"
  if ! { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }; then
    say "starting slurmd -N $n (log: $STATE_DIR/log/slurmd-$n.log)"
    setsid slurmd -N "$n" </dev/null >/dev/null 2>&1 &
  fi
done
for _ in $(seq 1 40); do all_up && break; sleep 0.5; done
for n in "${NODES[@]}"; do
  if ! node_up "$n"; then
    scontrol update NodeName="$n" State=RESUME 2>/dev/null || true
  fi
done
for _ in $(seq 1 20); do all_up && break; sleep 0.5; done
if ! all_up; then
  for n in "${NODES[@]}"; do tail -n 10 "$STATE_DIR/log/slurmd-$n.log" >&2 || true; done
  die "the Slurm nodes did not come up (log tails above)"
fi
summary
