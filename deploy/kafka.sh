#!/usr/bin/env bash
# One Apache Kafka 4.x node (KRaft, broker+controller in one JVM) on loopback, for dev and CI.
# By default a single-node cluster; deploy/kafka_cluster.sh runs three of these as one cluster
# through the TG_KAFKA_NODE_ID / QUORUM_VOTERS / CLUSTER_ID / DIR variables.
# Topics are never auto-created (auto.create.topics.enable=false): `trainguard topics create`.
#
#   bash deploy/kafka.sh start|stop|restart|status|wait
#
# Environment (all optional):
#   TG_SERVICES_DIR           data dir (default <repo>/deploy/.local); Kafka lives in $TG_SERVICES_DIR/kafka
#   TG_KAFKA_PORT             client listener port (default 19092)
#   TG_KAFKA_CONTROLLER_PORT  KRaft controller port (default 19093)
#   TG_KAFKA_VERSION          org.apache.kafka:kafka_2.13 version (default: the one in deploy/kafka/pom.xml)
#   TG_KAFKA_HEAP_MB          max heap in MiB (default 512)
#   TG_KAFKA_START_TIMEOUT    seconds to wait for readiness (default 120)
#   TG_MAVEN_REPO_LOCAL       Maven local repository to use (default: Maven's, ~/.m2/repository)
#   TG_PYTHON                 a python with kafka-python; if set, readiness also means a real metadata request
# Cluster members (set by deploy/kafka_cluster.sh; the defaults make a single-node cluster):
#   TG_KAFKA_DIR              this node's directory (default $TG_SERVICES_DIR/kafka)
#   TG_KAFKA_LIBS_ROOT        where the resolved jars are cached (default: TG_KAFKA_DIR)
#   TG_KAFKA_NODE_ID          node.id (default 1)
#   TG_KAFKA_QUORUM_VOTERS    controller.quorum.voters (default 1@127.0.0.1:$TG_KAFKA_CONTROLLER_PORT)
#   TG_KAFKA_CLUSTER_ID       cluster id to format new storage with (default: a new one)
#   TG_KAFKA_INTERNAL_RF      replication of the offsets/transaction topics (default 1)
#   TG_KAFKA_NO_WAIT          1: `start` launches and returns (a quorum member waits for the others)
#   TG_KAFKA_STOP_GRACE       seconds `stop` waits after TERM before KILL (default 60)
set -euo pipefail

TAG=kafka
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PORT="${TG_KAFKA_PORT:-19092}"
CPORT="${TG_KAFKA_CONTROLLER_PORT:-19093}"
HEAP_MB="${TG_KAFKA_HEAP_MB:-512}"
TIMEOUT="${TG_KAFKA_START_TIMEOUT:-120}"
VERSION="${TG_KAFKA_VERSION:-}"
require_port TG_KAFKA_PORT "$PORT"
require_port TG_KAFKA_CONTROLLER_PORT "$CPORT"
require_uint TG_KAFKA_HEAP_MB "$HEAP_MB"
require_uint TG_KAFKA_START_TIMEOUT "$TIMEOUT"
[[ "$PORT" != "$CPORT" ]] || die "TG_KAFKA_PORT and TG_KAFKA_CONTROLLER_PORT must differ"
NODE_ID="${TG_KAFKA_NODE_ID:-1}"
VOTERS="${TG_KAFKA_QUORUM_VOTERS:-$NODE_ID@127.0.0.1:$CPORT}"
CLUSTER_ID="${TG_KAFKA_CLUSTER_ID:-}"
INTERNAL_RF="${TG_KAFKA_INTERNAL_RF:-1}"
NO_WAIT="${TG_KAFKA_NO_WAIT:-0}"
STOP_GRACE="${TG_KAFKA_STOP_GRACE:-60}"
require_uint TG_KAFKA_STOP_GRACE "$STOP_GRACE"
require_uint TG_KAFKA_NODE_ID "$NODE_ID"
require_uint TG_KAFKA_INTERNAL_RF "$INTERNAL_RF"
((INTERNAL_RF >= 1)) || die "TG_KAFKA_INTERNAL_RF must be >= 1"
[[ "$VOTERS" =~ ^[0-9]+@[0-9.]+:[0-9]+(,[0-9]+@[0-9.]+:[0-9]+)*$ ]] ||
  die "TG_KAFKA_QUORUM_VOTERS must be id@host:port[,...], got '$VOTERS'"
[[ -z "$CLUSTER_ID" || "$CLUSTER_ID" =~ ^[A-Za-z0-9_-]{22}$ ]] ||
  die "TG_KAFKA_CLUSTER_ID must be 22 base64url characters"
[[ "$NO_WAIT" == 0 || "$NO_WAIT" == 1 ]] || die "TG_KAFKA_NO_WAIT must be 0 or 1"
INTERNAL_ISR=$((INTERNAL_RF > 1 ? 2 : 1))
POM="$DEPLOY_DIR/kafka/pom.xml"
if [[ -z "$VERSION" ]]; then
  VERSION="$(sed -n 's:.*<kafka.version>\([^<]*\)</kafka.version>.*:\1:p' "$POM" | head -n 1)"
fi
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "bad Kafka version '$VERSION'"

KDIR="${TG_KAFKA_DIR:-$SERVICES_DIR/kafka}"
[[ "$KDIR" =~ ^/[A-Za-z0-9._/+@-]*$ ]] || die "TG_KAFKA_DIR must be an absolute plain path"
LIBS_ROOT="${TG_KAFKA_LIBS_ROOT:-$KDIR}"
[[ "$LIBS_ROOT" =~ ^/[A-Za-z0-9._/+@-]*$ ]] || die "TG_KAFKA_LIBS_ROOT must be an absolute plain path"
# jars are cached per Kafka version and per pom content: editing the pom re-resolves
POM_HASH="$(sha256sum "$POM" | cut -c1-10)"
LIBS="$LIBS_ROOT/libs-$VERSION-$POM_HASH"
CONF="$KDIR/config"
PROPS="$CONF/server.properties"
LOG4J="$CONF/log4j2.xml"
DATA="$KDIR/data"
LOGS="$KDIR/logs"
PIDFILE="$KDIR/kafka.pid"
READYFILE="$KDIR/kafka.ready" # holds the pid once that broker was seen ready
OFFSETFILE="$KDIR/server.log.offset"
SERVER_LOG="$LOGS/server.log"
STDOUT_LOG="$LOGS/stdout.log"
MARKER="$PROPS" # every broker of ours has its own server.properties path on its command line

running_pid() { pid_alive "$PIDFILE" "$MARKER"; }

ensure_tools() {
  local missing=()
  command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  ((${#missing[@]} == 0)) || apt_install "${missing[@]}"
  local jv
  jv="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)"
  [[ -n "$jv" && "$jv" -ge 17 ]] || die "Kafka 4 needs Java 17+, found '${jv:-none}'"
}

resolve_jars() {
  if [[ -f "$LIBS/.complete" ]]; then
    return 0
  fi
  log "resolving jars for kafka_2.13 $VERSION (Maven Central)..."
  local t0 tmp
  t0="$(now_s)"
  mkdir -p "$LIBS_ROOT"
  tmp="$LIBS_ROOT/resolving.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  local mvn_args=(-B -q -f "$POM" "-Dkafka.version=$VERSION")
  [[ -n "${TG_MAVEN_REPO_LOCAL:-}" ]] && mvn_args+=("-Dmaven.repo.local=$TG_MAVEN_REPO_LOCAL")
  if ! mvn "${mvn_args[@]}" dependency:copy-dependencies \
    -DincludeScope=runtime "-DoutputDirectory=$tmp" >"$KDIR/mvn.log" 2>&1; then
    show_tail 40 "$KDIR/mvn.log"
    die "mvn could not resolve kafka_2.13 $VERSION"
  fi
  [[ -f "$tmp/kafka_2.13-$VERSION.jar" ]] || die "kafka_2.13-$VERSION.jar missing after mvn"
  touch "$tmp/.complete"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
  # a shared jar cache may serve other brokers: only a node's own cache is pruned
  [[ "$LIBS_ROOT" == "$KDIR" ]] || return 0
  # drop jar sets of other versions/poms (no broker of ours runs now: start checked)
  local old
  for old in "$KDIR"/libs-*; do
    [[ "$old" == "$LIBS" || ! -d "$old" ]] || rm -rf "$old"
  done
  log "resolved $(find "$LIBS" -name '*.jar' | wc -l) jars in $(($(now_s) - t0)) s"
}

write_config() {
  mkdir -p "$CONF" "$DATA" "$LOGS"
  cat >"$PROPS.tmp" <<EOF
# Written by deploy/kafka.sh; edits are overwritten on every start.
process.roles=broker,controller
node.id=$NODE_ID
controller.quorum.voters=$VOTERS
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$DATA
metadata.log.dir=$DATA

num.partitions=4
default.replication.factor=$INTERNAL_RF
# topics come only from the admin step (trainguard topics create), never from a client
auto.create.topics.enable=false
delete.topic.enable=true
min.insync.replicas=1

offsets.topic.replication.factor=$INTERNAL_RF
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$INTERNAL_RF
transaction.state.log.min.isr=$INTERNAL_ISR
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=$INTERNAL_RF
share.coordinator.state.topic.min.isr=$INTERNAL_ISR
group.initial.rebalance.delay.ms=0

# small machine: few threads, modest retention
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=24
log.segment.bytes=134217728
log.retention.check.interval.ms=300000
EOF
  mv "$PROPS.tmp" "$PROPS"
  cat >"$LOG4J.tmp" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by deploy/kafka.sh -->
<Configuration status="WARN">
  <Appenders>
    <RollingFile name="server" fileName="$LOGS/server.log" filePattern="$LOGS/server.log.%i">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
      <Policies><SizeBasedTriggeringPolicy size="50 MB"/></Policies>
      <DefaultRolloverStrategy max="3"/>
    </RollingFile>
  </Appenders>
  <Loggers>
    <Logger name="kafka.request.logger" level="warn"/>
    <Logger name="state.change.logger" level="warn"/>
    <Logger name="org.apache.kafka.clients.NetworkClient" level="warn"/>
    <Root level="info"><AppenderRef ref="server"/></Root>
  </Loggers>
</Configuration>
EOF
  mv "$LOG4J.tmp" "$LOG4J"
}

java_opts() {
  JAVA_OPTS=(
    "-Xms$((HEAP_MB < 256 ? HEAP_MB : 256))m" "-Xmx${HEAP_MB}m"
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
    -XX:+ExplicitGCInvokesConcurrent -XX:MaxMetaspaceSize=256m -XX:ReservedCodeCacheSize=128m
    -XX:ActiveProcessorCount=2
    -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true
    "-Dlog4j2.configurationFile=$LOG4J" "-Dkafka.logs.dir=$LOGS"
    -cp "$LIBS/*"
  )
}

format_storage() {
  if [[ -f "$DATA/meta.properties" ]]; then
    return 0
  fi
  java_opts
  local cid="$CLUSTER_ID"
  [[ -n "$cid" ]] ||
    cid="$(java "${JAVA_OPTS[@]}" kafka.tools.StorageTool random-uuid 2>>"$KDIR/format.log" | tail -n 1)"
  [[ "$cid" =~ ^[A-Za-z0-9_-]{22}$ ]] || {
    show_tail 30 "$KDIR/format.log"
    die "could not generate a cluster id (got '$cid')"
  }
  log "formatting storage (cluster id $cid)..."
  if ! java "${JAVA_OPTS[@]}" kafka.tools.StorageTool format -t "$cid" -c "$PROPS" --ignore-formatted \
    >>"$KDIR/format.log" 2>&1; then
    show_tail 30 "$KDIR/format.log"
    die "kafka-storage format failed"
  fi
}

# Python readiness probe: a real metadata round trip with kafka-python (version negotiation included).
python_probe() {
  "$TG_PYTHON" - "127.0.0.1:$PORT" <<'PY'
import sys
from kafka import KafkaConsumer
c = KafkaConsumer(bootstrap_servers=sys.argv[1], request_timeout_ms=5000,
                  client_id="tg-deploy-probe")
try:
    c.topics()  # a metadata round trip, after the client negotiated API versions
finally:
    c.close()
PY
}

# started_logged OFFSET: "Kafka Server started" was logged after byte OFFSET of server.log
# (the size it had when this broker was launched). If the log rolled over since, the new file
# and the rolled one are both searched.
started_logged() {
  local offset="$1" size=0
  [[ -f "$SERVER_LOG" ]] && size="$(stat -c %s "$SERVER_LOG")"
  # no grep -q: under pipefail its early exit would SIGPIPE tail on a big log
  if ((size >= offset)); then
    tail -c +"$((offset + 1))" "$SERVER_LOG" 2>/dev/null | grep -F 'Kafka Server started' >/dev/null
  else
    cat "$SERVER_LOG.1" "$SERVER_LOG" 2>/dev/null | grep -F 'Kafka Server started' >/dev/null
  fi
}

wait_ready() {
  local t0="$1" offset=0 pid
  [[ -f "$OFFSETFILE" ]] && offset="$(tr -dc '0-9' <"$OFFSETFILE")"
  offset="${offset:-0}"
  local deadline=$((t0 + TIMEOUT)) stage=port ready_pid=""
  [[ -f "$READYFILE" ]] && ready_pid="$(tr -dc '0-9' <"$READYFILE")"
  while :; do
    if ! pid="$(running_pid)"; then
      if pid_gone "$PIDFILE"; then
        show_tail 60 "$SERVER_LOG" "$STDOUT_LOG"
        die "broker process exited during startup"
      fi
      (($(now_s) < deadline)) || die "broker never started within ${TIMEOUT} s"
      sleep 0.1 # not exec'd yet
      continue
    fi
    case "$stage" in
    port) port_open "$PORT" && stage=log ;;
    log)
      if [[ "$ready_pid" == "$pid" ]]; then
        stage=probe
      elif started_logged "$offset"; then
        stage=probe
      fi
      ;;
    probe)
      if [[ -z "${TG_PYTHON:-}" ]] || python_probe >/dev/null 2>"$KDIR/probe.err"; then
        printf '%s\n' "$pid" >"$READYFILE"
        log "up on 127.0.0.1:$PORT (pid $pid, kafka $VERSION) in $(($(now_s) - t0)) s"
        return 0
      fi
      ;;
    esac
    if (($(now_s) >= deadline)); then
      show_tail 60 "$SERVER_LOG" "$STDOUT_LOG" "$KDIR/probe.err"
      die "not ready after ${TIMEOUT} s (stuck at stage: $stage)"
    fi
    sleep 0.5
  done
}

check_python() {
  [[ -n "${TG_PYTHON:-}" ]] || return 0
  "$TG_PYTHON" -c 'import kafka' 2>/dev/null ||
    die "TG_PYTHON=$TG_PYTHON cannot import kafka (kafka-python); unset TG_PYTHON or install it"
}

cmd_start() {
  local t0 pid
  t0="$(now_s)"
  check_python
  if pid="$(running_pid)"; then
    log "already running (pid $pid)"
    ((NO_WAIT)) && return 0
    wait_ready "$t0"
    return 0
  fi
  rm -f "$PIDFILE" "$READYFILE"
  if port_open "$PORT"; then
    die "127.0.0.1:$PORT is already taken by another process (not ours: no live pid file in $KDIR)"
  fi
  if port_open "$CPORT"; then
    die "127.0.0.1:$CPORT (controller) is already taken by another process"
  fi
  mkdir -p "$KDIR"
  ensure_tools
  resolve_jars
  write_config
  format_storage
  java_opts
  local size=0
  [[ -f "$SERVER_LOG" ]] && size="$(stat -c %s "$SERVER_LOG")"
  printf '%s\n' "$size" >"$OFFSETFILE"
  log "starting node $NODE_ID (heap ${HEAP_MB} MiB)..."
  # setsid: its own session, so it outlives this shell and its process group.
  # 9>&-: the server must not inherit the start/stop lock.
  setsid java "${JAVA_OPTS[@]}" kafka.Kafka "$PROPS" </dev/null >"$STDOUT_LOG" 2>&1 9>&- &
  printf '%s\n' "$!" >"$PIDFILE"
  if ((NO_WAIT)); then
    log "launched node $NODE_ID (pid $!); not waiting (TG_KAFKA_NO_WAIT=1)"
    return 0
  fi
  wait_ready "$t0"
}

cmd_stop() {
  rm -f "$READYFILE"
  if stop_pid "$PIDFILE" "$MARKER" "$STOP_GRACE"; then
    log "stopped"
  else
    log "not running"
  fi
}

cmd_status() {
  local pid
  if pid="$(running_pid)" && port_open "$PORT"; then
    log "running (pid $pid) on 127.0.0.1:$PORT, kafka $VERSION"
    return 0
  fi
  if [[ -n "${pid:-}" ]]; then
    log "process $pid alive but 127.0.0.1:$PORT not answering"
  else
    log "not running"
  fi
  return 1
}

cmd_wait() {
  check_python
  running_pid >/dev/null || die "not running"
  wait_ready "$(now_s)"
}

case "${1:-}" in
start | stop | restart) take_lock "$KDIR/.lock" ;;
esac
case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
restart) cmd_stop && cmd_start ;;
status) cmd_status ;;
wait) cmd_wait ;;
*)
  echo "usage: $0 start|stop|restart|status|wait" >&2
  exit 2
  ;;
esac
