#!/usr/bin/env bash
# The whole TrainGuard topology on loopback, every part a separate process:
#   3 Kafka brokers (KRaft, deploy/kafka_cluster.sh), ZooKeeper + ClickHouse 2 shards x 2
#   replicas (deploy/clickhouse_cluster.sh), `trainguard migrate` and `topics create`
#   (replication 3, min.insync.replicas 2), then 2 `sink`, 3 `diagnose` (one group),
#   2 `act` (on the real Slurm of deploy/slurm.sh) and 2 `api` processes.
#
#   bash deploy/cluster.sh start|stop|status|env
#   bash deploy/cluster.sh start|stop|kill|status MEMBER   # one member (failure tests)
#
# MEMBER: kafka1..3, s1r1 s1r2 s2r1 s2r2 (ClickHouse), sink1 sink2, diagnose1..3, act1 act2,
# api1 api2. `kill` is SIGKILL of the member's process group (a crash); `start` is idempotent
# and starts only what is not running. The dev services of deploy/services.sh (Kafka 19092,
# ClickHouse 19000) are never touched; Slurm is shared with them (started if down, never stopped).
#
# Environment (all optional):
#   TG_LOCAL_CLUSTER_DIR        state dir (default $TG_SERVICES_DIR/cluster, i.e. deploy/.local/cluster)
#   TG_LOCAL_CLUSTER_BASE_PORT  ports from it (default 19100): Kafka clients +0..2, controllers
#                               +10..12, /metrics of sinks +41..42, diagnose +51..53, act +61..62,
#                               API +71..72 (their /metrics +81..82), ClickHouse from +100
#                               (ZooKeeper +100, native +110..113, http +120..123)
#   TG_KAFKA_CLUSTER_HEAP_MB    heap of each broker (default 256 here)
#   TG_KAFKA_TOPIC_PLAN, TG_KAFKA_PARTITIONS  topic plan (default flat, 6 partitions each)
#   TG_CLICKHOUSE_DATABASE      database (default trainguard)
#   TG_ACT_MODE                 mode of the act replicas (default auto: the local Slurm's nodes
#                               are test nodes); other TG_* settings set here reach every process
#   TG_LOCAL_CLUSTER_DIAGNOSE_MEMBERS  diagnose members (default 3)
#   TG_SLURM_CONF               Slurm to act on (default the one deploy/slurm.sh runs)
#   TG_PYTHON                   Python with TrainGuard installed (default <repo>/.venv/bin/python)
# Memory: see docs/cluster.md; `status` prints each process's resident memory.
set -euo pipefail

TAG=cluster
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
REPO="$(cd "$DEPLOY_DIR/.." && pwd)"

CDIR="${TG_LOCAL_CLUSTER_DIR:-$SERVICES_DIR/cluster}"
[[ "$CDIR" == /* ]] || CDIR="$PWD/$CDIR"
[[ "$CDIR" =~ ^/[A-Za-z0-9._/+@-]*$ ]] || die "TG_LOCAL_CLUSTER_DIR may contain only A-Z a-z 0-9 . _ / + @ -"
B="${TG_LOCAL_CLUSTER_BASE_PORT:-19100}"
require_port TG_LOCAL_CLUSTER_BASE_PORT "$B"
require_port TG_LOCAL_CLUSTER_BASE_PORT+133 "$((B + 133))"
KAFKA_HEAP="${TG_KAFKA_CLUSTER_HEAP_MB:-256}"
require_uint TG_KAFKA_CLUSTER_HEAP_MB "$KAFKA_HEAP"
PARTITIONS="${TG_KAFKA_PARTITIONS:-6}"
require_uint TG_KAFKA_PARTITIONS "$PARTITIONS"
PLAN="${TG_KAFKA_TOPIC_PLAN:-flat}"
[[ "$PLAN" == flat || "$PLAN" == sized ]] || die "TG_KAFKA_TOPIC_PLAN must be flat or sized"
DATABASE="${TG_CLICKHOUSE_DATABASE:-trainguard}"
[[ "$DATABASE" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "TG_CLICKHOUSE_DATABASE must be a plain identifier"
ACT_MODE="${TG_ACT_MODE:-auto}"
[[ "$ACT_MODE" =~ ^(dry_run|approve|auto)$ ]] || die "TG_ACT_MODE must be dry_run, approve or auto"
SLURM_CONF_PATH="${TG_SLURM_CONF:-$SERVICES_DIR/slurm/slurm.conf}"
PY="${TG_PYTHON:-$REPO/.venv/bin/python}"
CH_NAME=tg
CH_BASE=$((B + 100))
SERVICE_TIMEOUT="${TG_LOCAL_CLUSTER_START_TIMEOUT:-180}"
require_uint TG_LOCAL_CLUSTER_START_TIMEOUT "$SERVICE_TIMEOUT"
DIAGNOSE_MEMBERS="${TG_LOCAL_CLUSTER_DIAGNOSE_MEMBERS:-3}"
[[ "$DIAGNOSE_MEMBERS" =~ ^[1-3]$ ]] || die "TG_LOCAL_CLUSTER_DIAGNOSE_MEMBERS must be 1, 2 or 3"

CH_SERVERS=(s1r1 s1r2 s2r1 s2r2)
# name role index-within-role ClickHouse-server-it-enters-through (index into CH_SERVERS)
# act and api enter through s1r1, the server `migrate` ran on: the replicas' claims,
# heartbeats and write counts are plain tables there (docs/actions.md). s2r2 is the entry of
# no process: only replication and Distributed reads go to it.
SERVICES=(
  "sink1 sink 1 0" "sink2 sink 2 2"
  "diagnose1 diagnose 1 0" "diagnose2 diagnose 2 2" "diagnose3 diagnose 3 1"
  "act1 act 1 0" "act2 act 2 0"
  "api1 api 1 0" "api2 api 2 0"
)
for ((i = ${#SERVICES[@]} - 1; i >= 0; i--)); do
  [[ "${SERVICES[$i]}" =~ ^diagnose([0-9])\  ]] && ((BASH_REMATCH[1] > DIAGNOSE_MEMBERS)) && unset "SERVICES[$i]"
done
SERVICES=("${SERVICES[@]}")

ch_port() { echo $((CH_BASE + 10 + $1)); }
ch_index() {
  local i
  for i in "${!CH_SERVERS[@]}"; do [[ "${CH_SERVERS[$i]}" == "$1" ]] && echo "$i"; done
}
kafka_bootstrap() { echo "127.0.0.1:$B,127.0.0.1:$((B + 1)),127.0.0.1:$((B + 2))"; }
# port of a service: its /metrics for sink, diagnose, act; its REST port for api
service_port() {
  case "$1" in
  sink) echo $((B + 40 + $2)) ;;
  diagnose) echo $((B + 50 + $2)) ;;
  act) echo $((B + 60 + $2)) ;;
  api) echo $((B + 70 + $2)) ;;
  esac
}

# The sub-scripts keep their state under the cluster dir; the Kafka jars are the dev broker's.
sub() {
  local script="$1"
  shift
  TG_SERVICES_DIR="$CDIR" \
    TG_KAFKA_LIBS_ROOT="${TG_KAFKA_LIBS_ROOT:-$SERVICES_DIR/kafka}" \
    TG_KAFKA_CLUSTER_PORT="$B" \
    TG_KAFKA_CLUSTER_CONTROLLER_PORT="$((B + 10))" \
    TG_KAFKA_CLUSTER_NODES=3 \
    TG_KAFKA_CLUSTER_HEAP_MB="$KAFKA_HEAP" \
    TG_CH_CLUSTER_BASE_PORT="$CH_BASE" \
    TG_CH_CLUSTER_NAME="$CH_NAME" \
    TG_PYTHON="$PY" \
    bash "$DEPLOY_DIR/$script" "$@"
}

# Settings every TrainGuard process of the cluster gets (clients too: written to the env file).
common_env() {
  printf '%s\n' \
    TG_KAFKA_MODE=kafka \
    "TG_KAFKA_BOOTSTRAP=$(kafka_bootstrap)" \
    TG_KAFKA_REPLICATION_FACTOR=3 \
    TG_KAFKA_MIN_INSYNC_REPLICAS=2 \
    TG_KAFKA_ACKS=all \
    "TG_KAFKA_TOPIC_PLAN=$PLAN" \
    "TG_KAFKA_PARTITIONS=$PARTITIONS" \
    TG_CLICKHOUSE_MODE=server \
    TG_CLICKHOUSE_HOST=127.0.0.1 \
    "TG_CLICKHOUSE_PORT=$(ch_port 0)" \
    "TG_CLICKHOUSE_CLUSTER=$CH_NAME" \
    TG_CLICKHOUSE_INSERT_QUORUM=2 \
    "TG_CLICKHOUSE_DATABASE=$DATABASE" \
    "TG_SLURM_CONF=$SLURM_CONF_PATH"
}

# Settings of one service: name role index entry-server.
service_env() {
  local role="$2" idx="$3" entry="$4" port
  port="$(service_port "$role" "$idx")"
  printf '%s\n' "TG_CLICKHOUSE_PORT=$(ch_port "$entry")" MALLOC_ARENA_MAX=2
  case "$role" in
  sink) printf '%s\n' "TG_SINK_INSTANCE_ID=sink-$idx" "TG_SINK_METRICS_PORT=$port" ;;
  diagnose) printf '%s\n' TG_DIAGNOSE_SCALE_OUT=true "TG_DIAGNOSE_INSTANCE_ID=diagnose-$idx" "TG_DIAGNOSE_METRICS_PORT=$port" ;;
  act) printf '%s\n' "TG_ACT_MODE=$ACT_MODE" "TG_ACT_EXECUTOR=slurm" "TG_ACT_SLURM_CONF=$SLURM_CONF_PATH" "TG_ACT_METRICS_PORT=$port" ;;
  api) printf '%s\n' TG_API_HOST=127.0.0.1 "TG_API_PORT=$port" "TG_API_METRICS_PORT=$((port + 10))" ;;
  esac
}

# trainguard [VAR=VALUE...] ARGS...: a one-off `trainguard` command with the cluster's settings.
trainguard() {
  local vars
  mapfile -t vars < <(common_env)
  while [[ "${1:-}" == TG_*=* ]]; do
    vars+=("$1")
    shift
  done
  env "${vars[@]}" "$PY" -m trainguard "$@"
}

find_service() {
  local s
  for s in "${SERVICES[@]}"; do
    [[ "${s%% *}" == "$1" ]] && {
      echo "$s"
      return 0
    }
  done
  return 1
}

svc_pidfile() { echo "$CDIR/run/$1.pid"; }
svc_log() { echo "$CDIR/logs/$1.log"; }
svc_pid() { pid_alive "$(svc_pidfile "$1")" "trainguard $2"; }

# rss PID: resident memory in MiB ("-" when unknown).
rss() { awk '/^VmRSS:/ {printf "%d MiB", $2 / 1024; found = 1} END {if (!found) printf "-"}' "/proc/$1/status" 2>/dev/null || printf -- -; }

svc_launch() {
  local name="$1" role="$2" pid vars port
  if pid="$(svc_pid "$name" "$role")"; then
    log "$name already running (pid $pid)"
    return 0
  fi
  port="$(service_port "$role" "$3")"
  port_open "$port" && die "127.0.0.1:$port ($name) is taken by another process"
  mkdir -p "$CDIR/run" "$CDIR/logs"
  mapfile -t vars < <(common_env && service_env "$@")
  printf '[%s] ---- %s started by deploy/cluster.sh ----\n' "$(date -u +%FT%TZ)" "$name" >>"$(svc_log "$name")"
  # setsid: the process leads a group of its own, so stop and kill reach its children too.
  setsid env "${vars[@]}" "$PY" -m trainguard "$role" </dev/null >>"$(svc_log "$name")" 2>&1 9>&- &
  printf '%s\n' "$!" >"$(svc_pidfile "$name")"
  log "launched $name (pid $!, ClickHouse 127.0.0.1:$(ch_port "$4"), port $port)"
}

svc_wait() {
  local name="$1" role="$2" port t0
  port="$(service_port "$role" "$3")"
  t0="$(now_s)"
  while ! port_open "$port"; do
    if ! svc_pid "$name" "$role" >/dev/null && pid_gone "$(svc_pidfile "$name")"; then
      show_tail 30 "$(svc_log "$name")"
      die "$name exited during startup (log: $(svc_log "$name"))"
    fi
    (($(now_s) < t0 + SERVICE_TIMEOUT)) || die "$name not listening on 127.0.0.1:$port after ${SERVICE_TIMEOUT} s"
    sleep 0.3
  done
  log "$name up on 127.0.0.1:$port (pid $(svc_pid "$name" "$role"), $(rss "$(svc_pid "$name" "$role")"))"
}

# svc_signal NAME ROLE SIGNAL GRACE: signal the process group, KILL it after GRACE seconds.
svc_signal() {
  local name="$1" role="$2" sig="$3" grace="$4" pid i
  if ! pid="$(svc_pid "$name" "$role")"; then
    rm -f "$(svc_pidfile "$name")"
    log "$name not running"
    return 0
  fi
  kill "-$sig" -- "-$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 -- "-$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 -- "-$pid" 2>/dev/null; then
    [[ "$sig" == KILL ]] || log "$name (group $pid) still alive after ${grace} s, sending KILL"
    kill -KILL -- "-$pid" 2>/dev/null || true
    while kill -0 -- "-$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$(svc_pidfile "$name")"
  log "$name (pid $pid) $([[ "$sig" == KILL ]] && echo killed || echo stopped)"
}

ensure_slurm() {
  if [[ -f "$SLURM_CONF_PATH" ]] && SLURM_CONF="$SLURM_CONF_PATH" timeout 10 scontrol ping 2>/dev/null | grep -q UP; then
    log "Slurm up ($SLURM_CONF_PATH)"
    return 0
  fi
  [[ -z "${TG_SLURM_CONF:-}" ]] || die "TG_SLURM_CONF=$TG_SLURM_CONF: slurmctld not answering"
  log "Slurm not running: starting it with deploy/slurm.sh (shared with deploy/services.sh)"
  bash "$DEPLOY_DIR/slurm.sh" start
}

write_env() {
  {
    echo "# Written by deploy/cluster.sh start; removed by stop. Source it: set -a; . $CDIR/env; set +a"
    common_env | sed 's/^/export /'
    local s name role idx entry
    for s in "${SERVICES[@]}"; do
      read -r name role idx entry <<<"$s"
      [[ "$role" == api ]] && echo "# $name: http://127.0.0.1:$(service_port api "$idx")/v1"
    done
  } >"$CDIR/env.tmp"
  mv "$CDIR/env.tmp" "$CDIR/env"
}

check_python() {
  [[ -x "$PY" ]] || die "no Python at $PY: run 'bash deploy/dev.sh setup' or set TG_PYTHON"
  "$PY" -c 'import trainguard.cli' 2>/dev/null || die "$PY cannot import trainguard: set TG_PYTHON"
}

cmd_start_all() {
  local t0 s
  t0="$(now_s)"
  check_python
  mkdir -p "$CDIR/run" "$CDIR/logs"
  log "state in $CDIR; ports from $B"
  log "[1/5] Kafka: 3 brokers, KRaft, heap ${KAFKA_HEAP} MiB each"
  sub kafka_cluster.sh start
  log "[2/5] ClickHouse: ZooKeeper + 2 shards x 2 replicas"
  sub clickhouse_cluster.sh start
  log "[3/5] trainguard migrate (ON CLUSTER $CH_NAME, database $DATABASE)"
  trainguard TG_KAFKA_MODE=embedded migrate # the store only: the topics are the next step
  log "[4/5] trainguard topics create (replication 3, min.insync.replicas 2, $PLAN plan)"
  trainguard topics create
  ensure_slurm
  write_env
  log "[5/5] services: 2 sink, $DIAGNOSE_MEMBERS diagnose, 2 act ($ACT_MODE), 2 api"
  for s in "${SERVICES[@]}"; do
    # shellcheck disable=SC2086 # the fields are plain words
    svc_launch $s
  done
  for s in "${SERVICES[@]}"; do
    # shellcheck disable=SC2086
    svc_wait $s
  done
  log "cluster up in $(($(now_s) - t0)) s; clients: set -a; . $CDIR/env; set +a"
  cmd_status_all || true
}

cmd_stop_all() {
  local s rc=0 name role rest
  rm -f "$CDIR/env"
  for s in "${SERVICES[@]}"; do
    read -r name role rest <<<"$s"
    svc_signal "$name" "$role" TERM 30 &
  done
  wait
  sub clickhouse_cluster.sh stop || rc=1
  sub kafka_cluster.sh stop || rc=1
  ((rc == 0)) && log "cluster stopped (Slurm is shared with deploy/services.sh and left running)"
  return "$rc"
}

cmd_status_all() {
  local bad=0 s name role idx entry pid i
  for i in 1 2 3; do member status "kafka$i" || bad=1; done
  if pid="$(pid_alive "$CDIR/chcluster/zookeeper/zookeeper.pid" "$CDIR/chcluster/zookeeper/zoo.cfg")"; then
    log "zookeeper running (pid $pid, $(rss "$pid")) on 127.0.0.1:$CH_BASE"
  else
    log "zookeeper not running"
    bad=1
  fi
  for i in "${CH_SERVERS[@]}"; do member status "$i" || bad=1; done
  for s in "${SERVICES[@]}"; do
    read -r name role idx entry <<<"$s"
    if pid="$(svc_pid "$name" "$role")" && port_open "$(service_port "$role" "$idx")"; then
      log "$name running (pid $pid, $(rss "$pid")) on 127.0.0.1:$(service_port "$role" "$idx"), ClickHouse 127.0.0.1:$(ch_port "$entry")"
    else
      log "$name not running (log: $(svc_log "$name"))"
      bad=1
    fi
  done
  return "$bad"
}

# member start|stop|kill|status NAME
member() {
  local action="$1" name="$2" s pid dir
  case "$name" in
  kafka[1-3])
    case "$action" in
    kill) sub kafka_cluster.sh kill-node "${name#kafka}" ;;
    status)
      dir="$CDIR/kafka-cluster/node${name#kafka}"
      if pid="$(pid_alive "$dir/kafka.pid" "$dir/config/server.properties")"; then
        log "$name running (pid $pid, $(rss "$pid")) on 127.0.0.1:$((B + ${name#kafka} - 1))"
      else
        log "$name not running"
        return 1
      fi
      ;;
    *) sub kafka_cluster.sh "$action-node" "${name#kafka}" ;;
    esac
    ;;
  s[12]r[12])
    case "$action" in
    kill)
      dir="$CDIR/chcluster/$name"
      pid="$(pid_alive "$dir/clickhouse.pid" "--config-file=$dir/config.xml")" || die "$name not running"
      kill -KILL "$pid"
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
      log "$name (pid $pid) killed"
      ;;
    status)
      dir="$CDIR/chcluster/$name"
      if pid="$(pid_alive "$dir/clickhouse.pid" "--config-file=$dir/config.xml")" && sub clickhouse_cluster.sh status "$name" 2>/dev/null; then
        log "$name running (pid $pid, $(rss "$pid")) on 127.0.0.1:$(ch_port "$(ch_index "$name")")"
      else
        log "$name not answering"
        return 1
      fi
      ;;
    *) sub clickhouse_cluster.sh "$action" "$name" ;;
    esac
    ;;
  *)
    s="$(find_service "$name")" || die "unknown member '$name' (kafka1..3, ${CH_SERVERS[*]}, sink1..2, diagnose1..3, act1..2, api1..2)"
    # shellcheck disable=SC2086
    set -- $s
    case "$action" in
    start)
      check_python
      svc_launch "$@"
      svc_wait "$@"
      ;;
    stop) svc_signal "$1" "$2" TERM 30 ;;
    kill) svc_signal "$1" "$2" KILL 0 ;;
    status)
      if pid="$(svc_pid "$1" "$2")"; then log "$1 running (pid $pid, $(rss "$pid"))"; else
        log "$1 not running"
        return 1
      fi
      ;;
    esac
    ;;
  esac
}

case "${1:-}" in
start | stop) take_lock "$CDIR/.lock" ;;
esac
case "${1:-}:${2:-}" in
start:) cmd_start_all ;;
stop:) cmd_stop_all ;;
status:) cmd_status_all ;;
env:) common_env ;;
start:* | stop:* | kill:* | status:*) member "$1" "$2" ;;
*)
  echo "usage: $0 start|stop|status|env, or start|stop|kill|status MEMBER" >&2
  exit 2
  ;;
esac
