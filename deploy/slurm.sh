#!/usr/bin/env bash
# Local Slurm (Debian 22.05 packages) on loopback, for the action engine's integration tests.
#
#   bash deploy/slurm.sh start|stop|restart|status
#
# Runs its own munged (own key and socket) and a one-machine cluster: slurmctld, one slurmd
# for this host, and TG_SLURM_FAKE_NODES nodes with no daemon (node-0001...), which show as
# `down*` (their port has no daemon) and can still be drained and resumed by name (see /work/shared/SERVICES.md).
# Writes `export TG_SLURM_CONF=... SLURM_CONF=...` into $TG_SERVICES_DIR/env.
# Environment (all optional):
#   TG_SERVICES_DIR        data dir (default <repo>/deploy/.local); Slurm lives in $TG_SERVICES_DIR/slurm
#   TG_SLURMCTLD_PORT      controller port (default 16817)
#   TG_SLURMD_PORT         node daemon port (default 16818)
#   TG_SLURM_FAKE_NODES    daemon-less nodes to define (default 200)
set -euo pipefail

TAG=slurm
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

CTLD_PORT="${TG_SLURMCTLD_PORT:-16817}"
SLURMD_PORT="${TG_SLURMD_PORT:-16818}"
FAKE="${TG_SLURM_FAKE_NODES:-200}"
require_port TG_SLURMCTLD_PORT "$CTLD_PORT"
require_port TG_SLURMD_PORT "$SLURMD_PORT"
require_uint TG_SLURM_FAKE_NODES "$FAKE"
((FAKE >= 1 && FAKE <= 9999)) || die "TG_SLURM_FAKE_NODES must be 1..9999"

SDIR="$SERVICES_DIR/slurm"
CONF="$SDIR/slurm.conf"
# munged runs as the munge user, which must reach its key, socket and log: the checkout may sit
# under a directory it cannot enter (mktemp -d makes 700 ones), so its files live under /run,
# in a directory named after this checkout's services dir.
MDIR="${TG_MUNGE_DIR:-/run/trainguard-munge/$(printf %s "$SDIR" | md5sum | cut -c1-12)}"
MSOCK="$MDIR/munge.socket"
ENV_FILE="$SERVICES_DIR/env"
HOST="$(hostname -s)"
[[ "$HOST" =~ ^[A-Za-z0-9][A-Za-z0-9-]*$ ]] || die "unusable hostname '$HOST'"

munge_pid() { pid_alive "$MDIR/munged.pid" "munged"; }
ctld_pid() { pid_alive "$SDIR/slurmctld.pid" "slurmctld"; }
slurmd_pid() { pid_alive "$SDIR/slurmd.pid" "slurmd"; }

ensure_installed() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
    command -v scontrol >/dev/null && command -v munged >/dev/null; then
    return 0
  fi
  apt_install slurmctld slurmd slurm-client munge
}

write_config() {
  mkdir -p "$SDIR/state" "$SDIR/spool" "$SDIR/log"
  install -d -m 755 "$(dirname "$MDIR")"
  mkdir -p "$MDIR"
  if [[ ! -s "$MDIR/munge.key" ]]; then
    head -c 1024 /dev/urandom >"$MDIR/munge.key"
  fi
  # munged refuses keys, sockets and logs that others can write: its own dir, mode 711 (clients need x on the socket dir).
  chown -R munge:munge "$MDIR"
  chmod 711 "$MDIR"
  chmod 400 "$MDIR/munge.key"
  cat >"$CONF.tmp" <<EOF
# Written by deploy/slurm.sh; edits are overwritten on every start.
ClusterName=trainguard
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$MSOCK
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SDIR/state
SlurmdSpoolDir=$SDIR/spool/%n
SlurmctldPidFile=$SDIR/slurmctld.pid
SlurmdPidFile=$SDIR/slurmd.pid
SlurmctldLogFile=$SDIR/log/slurmctld.log
SlurmdLogFile=$SDIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SchedulerType=sched/backfill
ReturnToService=2
SlurmdTimeout=300
MpiDefault=none
RebootProgram=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
NodeName=node-[0001-$(printf '%04d' "$FAKE")] NodeAddr=127.0.0.1 Port=$((SLURMD_PORT + 1)) CPUs=2 State=DOWN Reason="no node daemon (test node)"
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
}

write_env() {
  mkdir -p "$SERVICES_DIR"
  local tmp="$ENV_FILE.slurm.tmp"
  { grep -v -e '^export TG_SLURM_CONF=' -e '^export SLURM_CONF=' "$ENV_FILE" 2>/dev/null || true; } >"$tmp"
  printf 'export TG_SLURM_CONF=%s\nexport SLURM_CONF=%s\n' "$CONF" "$CONF" >>"$tmp"
  mv "$tmp" "$ENV_FILE"
}

drop_env() {
  [[ -f "$ENV_FILE" ]] || return 0
  local tmp="$ENV_FILE.slurm.tmp"
  grep -v -e '^export TG_SLURM_CONF=' -e '^export SLURM_CONF=' "$ENV_FILE" >"$tmp" || true
  mv "$tmp" "$ENV_FILE"
}

wait_ready() {
  local t0="$1" deadline=$(($1 + 60))
  while ! SLURM_CONF="$CONF" scontrol ping 2>/dev/null | grep -q UP; do
    ctld_pid >/dev/null || {
      show_tail 30 "$SDIR/log/slurmctld.log"
      die "slurmctld exited during startup"
    }
    (($(now_s) < deadline)) || die "slurmctld not answering after 60 s"
    sleep 0.3
  done
  while ! SLURM_CONF="$CONF" sinfo -h -n "$HOST" -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; do
    (($(now_s) < deadline)) || {
      show_tail 30 "$SDIR/log/slurmd.log"
      die "node $HOST not idle after 60 s"
    }
    sleep 0.3
  done
  log "up in $(($(now_s) - t0)) s: controller on 127.0.0.1:$CTLD_PORT, node $HOST + node-[0001-$(printf '%04d' "$FAKE")]; SLURM_CONF=$CONF"
}

cmd_start() {
  local t0
  t0="$(now_s)"
  ensure_installed
  if munge_pid >/dev/null && ctld_pid >/dev/null && slurmd_pid >/dev/null; then
    log "already running"
    write_env
    wait_ready "$t0"
    return 0
  fi
  write_config
  if ! munge_pid >/dev/null; then
    runuser -u munge -- munged --socket="$MSOCK" --key-file="$MDIR/munge.key" \
      --pid-file="$MDIR/munged.pid" --log-file="$MDIR/munged.log" --seed-file="$MDIR/munged.seed" 9>&- ||
      die "munged failed to start (see $MDIR/munged.log)"
  fi
  if ! ctld_pid >/dev/null; then
    SLURM_CONF="$CONF" setsid slurmctld -D -i </dev/null >"$SDIR/log/slurmctld.out" 2>&1 9>&- &
  fi
  if ! slurmd_pid >/dev/null; then
    SLURM_CONF="$CONF" setsid slurmd -D -N "$HOST" </dev/null >"$SDIR/log/slurmd.out" 2>&1 9>&- &
  fi
  sleep 0.5
  write_env
  wait_ready "$t0"
}

cmd_stop() {
  drop_env
  stop_pid "$SDIR/slurmd.pid" slurmd 20 || true
  stop_pid "$SDIR/slurmctld.pid" slurmctld 20 || true
  stop_pid "$MDIR/munged.pid" munged 10 || true
  log "stopped"
}

cmd_status() {
  if munge_pid >/dev/null && ctld_pid >/dev/null && SLURM_CONF="$CONF" scontrol ping 2>/dev/null | grep -q UP; then
    log "running: SLURM_CONF=$CONF"
    return 0
  fi
  log "not running"
  return 1
}

case "${1:-}" in
start | stop | restart) take_lock "$SDIR/.lock" ;;
esac
case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
restart) cmd_stop && cmd_start ;;
status) cmd_status ;;
*)
  echo "usage: $0 start|stop|restart|status" >&2
  exit 2
  ;;
esac
