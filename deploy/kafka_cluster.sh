#!/usr/bin/env bash
# A 3-node Apache Kafka 4.x cluster on loopback: 3 combined broker+controller nodes (KRaft,
# a 3-voter quorum), each one deploy/kafka.sh node with its own ports, data dir and log.
# Topics are never auto-created; create them with
#   TG_KAFKA_MODE=kafka TG_KAFKA_BOOTSTRAP=$(bash deploy/kafka_cluster.sh bootstrap) \
#   TG_KAFKA_REPLICATION_FACTOR=3 trainguard topics create
#
#   bash deploy/kafka_cluster.sh start|stop|restart|status|wait|bootstrap
#   bash deploy/kafka_cluster.sh start-node|stop-node|kill-node|status-node N
#
# Environment (all optional):
#   TG_SERVICES_DIR                  data dir (default <repo>/deploy/.local); the cluster lives
#                                    in $TG_SERVICES_DIR/kafka-cluster/node<N>
#   TG_KAFKA_CLUSTER_NODES           number of nodes (default 3; all are quorum voters)
#   TG_KAFKA_CLUSTER_PORT            client port of node 1; node N uses PORT+N-1 (default 19192)
#   TG_KAFKA_CLUSTER_CONTROLLER_PORT controller port of node 1, likewise (default 19292)
#   TG_KAFKA_CLUSTER_HEAP_MB         max heap of each node in MiB (default 384)
#   TG_KAFKA_LIBS_ROOT               jar cache shared by the nodes (default $TG_SERVICES_DIR/kafka,
#                                    the single broker's, so the jars are resolved once)
#   TG_KAFKA_START_TIMEOUT, TG_KAFKA_VERSION, TG_MAVEN_REPO_LOCAL, TG_PYTHON: as in deploy/kafka.sh
#
# Memory: each node is one JVM with -Xmx$TG_KAFKA_CLUSTER_HEAP_MB (384 MiB), metaspace <= 256 MiB
# and code cache <= 128 MiB: about 0.6 GiB resident each, under 2 GiB for the three.
set -euo pipefail

TAG=kafka-cluster
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

NODES="${TG_KAFKA_CLUSTER_NODES:-3}"
BASE_PORT="${TG_KAFKA_CLUSTER_PORT:-19192}"
BASE_CPORT="${TG_KAFKA_CLUSTER_CONTROLLER_PORT:-19292}"
HEAP_MB="${TG_KAFKA_CLUSTER_HEAP_MB:-384}"
require_uint TG_KAFKA_CLUSTER_NODES "$NODES"
require_uint TG_KAFKA_CLUSTER_HEAP_MB "$HEAP_MB"
((NODES >= 1 && NODES <= 9)) || die "TG_KAFKA_CLUSTER_NODES must be 1..9"
require_port TG_KAFKA_CLUSTER_PORT "$BASE_PORT"
require_port TG_KAFKA_CLUSTER_CONTROLLER_PORT "$BASE_CPORT"
require_port TG_KAFKA_CLUSTER_PORT "$((BASE_PORT + NODES - 1))"
require_port TG_KAFKA_CLUSTER_CONTROLLER_PORT "$((BASE_CPORT + NODES - 1))"
if ((BASE_CPORT < BASE_PORT + NODES && BASE_PORT < BASE_CPORT + NODES)); then
  die "client ports $BASE_PORT.. and controller ports $BASE_CPORT.. overlap"
fi
CDIR="$SERVICES_DIR/kafka-cluster"
LIBS_ROOT="${TG_KAFKA_LIBS_ROOT:-$SERVICES_DIR/kafka}"
IDFILE="$CDIR/cluster.id"

voters() {
  local i out=""
  for ((i = 1; i <= NODES; i++)); do
    out+="${out:+,}$i@127.0.0.1:$((BASE_CPORT + i - 1))"
  done
  printf '%s' "$out"
}

bootstrap() {
  local i out=""
  for ((i = 1; i <= NODES; i++)); do
    out+="${out:+,}127.0.0.1:$((BASE_PORT + i - 1))"
  done
  printf '%s' "$out"
}

# The cluster id every node's storage is formatted with: 16 random bytes, base64url (Kafka's
# Uuid text form), made once and kept with the cluster.
cluster_id() {
  mkdir -p "$CDIR"
  if [[ ! -s "$IDFILE" ]]; then
    local cid=""
    while [[ ! "$cid" =~ ^[A-Za-z0-9_][A-Za-z0-9_-]{21}$ ]]; do
      cid="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)"
    done
    printf '%s\n' "$cid" >"$IDFILE.tmp"
    mv "$IDFILE.tmp" "$IDFILE"
  fi
  tr -dc 'A-Za-z0-9_-' <"$IDFILE"
}

check_node() {
  [[ "$1" =~ ^[0-9]+$ ]] && (($1 >= 1 && $1 <= NODES)) || die "node must be 1..$NODES, got '$1'"
}

# node N ARGS...: run deploy/kafka.sh for node N.
node() {
  local n="$1"
  shift
  TG_KAFKA_DIR="$CDIR/node$n" \
    TG_KAFKA_LIBS_ROOT="$LIBS_ROOT" \
    TG_KAFKA_NODE_ID="$n" \
    TG_KAFKA_PORT="$((BASE_PORT + n - 1))" \
    TG_KAFKA_CONTROLLER_PORT="$((BASE_CPORT + n - 1))" \
    TG_KAFKA_QUORUM_VOTERS="$(voters)" \
    TG_KAFKA_CLUSTER_ID="$(cluster_id)" \
    TG_KAFKA_INTERNAL_RF="$((NODES < 3 ? NODES : 3))" \
    TG_KAFKA_HEAP_MB="$HEAP_MB" \
    bash "$DEPLOY_DIR/kafka.sh" "$@"
}

cmd_start() {
  local i t0
  t0="$(now_s)"
  log "starting $NODES nodes (heap ${HEAP_MB} MiB each), quorum $(voters)"
  # A node finishes starting only once the quorum has a leader: launch all, then wait.
  for ((i = 1; i <= NODES; i++)); do
    TG_KAFKA_NO_WAIT=1 node "$i" start
  done
  for ((i = 1; i <= NODES; i++)); do
    node "$i" wait
  done
  log "up: bootstrap $(bootstrap) in $(($(now_s) - t0)) s"
}

# All nodes get TERM at once. The last node to go has no quorum left for its controlled
# shutdown and would wait for it: after 20 s it is killed (its logs are recovered on start).
cmd_stop() {
  local i rc=0 pids=()
  for ((i = 1; i <= NODES; i++)); do
    TG_KAFKA_STOP_GRACE=20 node "$i" stop &
    pids+=("$!")
  done
  for i in "${pids[@]}"; do
    wait "$i" || rc=1
  done
  return "$rc"
}

cmd_status() {
  local i rc=0
  for ((i = 1; i <= NODES; i++)); do
    node "$i" status || rc=1
  done
  return "$rc"
}

# kill-node N: SIGKILL node N's broker (a crash, for failure tests); `start-node N` restarts it.
cmd_kill_node() {
  local n="$1" pidfile pid
  pidfile="$CDIR/node$n/kafka.pid"
  if ! pid="$(pid_alive "$pidfile" "$CDIR/node$n/config/server.properties")"; then
    log "node $n not running"
    return 1
  fi
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  log "node $n (pid $pid) killed"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
restart) cmd_stop && cmd_start ;;
status) cmd_status ;;
wait)
  for ((i = 1; i <= NODES; i++)); do node "$i" wait; done
  ;;
bootstrap) bootstrap && echo ;;
start-node | stop-node | status-node | kill-node)
  check_node "${2:-}"
  case "$1" in
  start-node) node "$2" start ;;
  stop-node) node "$2" stop ;;
  status-node) node "$2" status ;;
  kill-node) cmd_kill_node "$2" ;;
  esac
  ;;
*)
  echo "usage: $0 start|stop|restart|status|wait|bootstrap, or start-node|stop-node|kill-node|status-node N" >&2
  exit 2
  ;;
esac
