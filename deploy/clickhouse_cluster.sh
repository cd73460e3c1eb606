#!/usr/bin/env bash
# A ClickHouse cluster on loopback: ZooKeeper (Debian) + 4 ClickHouse 18.16 servers,
# 2 shards x 2 replicas, for dev, CI and the cluster-mode tests.
#
#   bash deploy/clickhouse_cluster.sh start|stop|status [SERVER]
#
# SERVER (s1r1, s1r2, s2r1, s2r2) starts or stops one ClickHouse server only (the tests stop a
# replica mid-run); without it the whole cluster, ZooKeeper first on start and last on stop.
# Data survives stop/start. The single server of deploy/clickhouse.sh is not touched.
# Environment (all optional):
#   TG_SERVICES_DIR               data dir (default <repo>/deploy/.local); the cluster lives in $TG_SERVICES_DIR/chcluster
#   TG_CH_CLUSTER_BASE_PORT       first port (default 19200): ZooKeeper on BASE, server i (0..3) native
#                                 on BASE+10+i, http on BASE+20+i, interserver on BASE+30+i
#   TG_CH_CLUSTER_NAME            cluster name in <remote_servers> (default tg)
#   TG_CH_CLUSTER_START_TIMEOUT   seconds to wait for each process (default 90)
#
# Memory (the dev machine has 24 GiB and 2 cores): ZooKeeper -Xmx256m; each server caches
# 64 MiB of marks and 64 MiB of uncompressed blocks, and a query may use 1 GiB.
# `start` writes $TG_SERVICES_DIR/chcluster/env: TG_CLICKHOUSE_* for a TrainGuard process and
# TG_CH_CLUSTER_PORTS (the four native ports, shard by shard, comma-separated); `source`-able.
set -euo pipefail

TAG=chcluster
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

BASE="${TG_CH_CLUSTER_BASE_PORT:-19200}"
NAME="${TG_CH_CLUSTER_NAME:-tg}"
TIMEOUT="${TG_CH_CLUSTER_START_TIMEOUT:-90}"
require_port TG_CH_CLUSTER_BASE_PORT "$BASE"
require_port TG_CH_CLUSTER_BASE_PORT+33 "$((BASE + 33))"
require_uint TG_CH_CLUSTER_START_TIMEOUT "$TIMEOUT"
[[ "$NAME" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "TG_CH_CLUSTER_NAME must be a plain identifier, got '$NAME'"

ROOT="$SERVICES_DIR/chcluster"
SERVERS=(s1r1 s1r2 s2r1 s2r2)
ZK_DIR="$ROOT/zookeeper"
ZK_PORT="$BASE"
ZK_PIDFILE="$ZK_DIR/zookeeper.pid"
ZK_MARKER="$ZK_DIR/zoo.cfg"

index_of() {
  local i
  for i in "${!SERVERS[@]}"; do
    [[ "${SERVERS[$i]}" == "$1" ]] && {
      echo "$i"
      return 0
    }
  done
  die "unknown server '$1' (one of: ${SERVERS[*]})"
}
tcp_port() { echo $((BASE + 10 + $1)); }
http_port() { echo $((BASE + 20 + $1)); }
inter_port() { echo $((BASE + 30 + $1)); }
server_dir() { echo "$ROOT/${SERVERS[$1]}"; }
server_marker() { echo "--config-file=$(server_dir "$1")/config.xml"; }

ensure_installed() {
  if ! command -v clickhouse-server >/dev/null 2>&1 || ! command -v clickhouse-client >/dev/null 2>&1; then
    log "clickhouse-server/clickhouse-client missing, installing the Debian packages..."
    apt_install clickhouse-server clickhouse-client
  fi
  if ! compgen -G "/usr/share/java/zookeeper*.jar" >/dev/null || ! command -v java >/dev/null 2>&1; then
    log "zookeeper missing, installing the Debian package..."
    apt_install zookeeper
  fi
  command -v clickhouse-server >/dev/null 2>&1 || die "clickhouse-server still missing after apt-get install"
  compgen -G "/usr/share/java/zookeeper*.jar" >/dev/null || die "zookeeper jar still missing after apt-get install"
}

# ---------------------------------------------------------------- ZooKeeper

zk_pid() { pid_alive "$ZK_PIDFILE" "$ZK_MARKER"; }

# Serving requests, not only alive: `ruok` says imok while a restarted server still loads its
# snapshot and refuses sessions, and a ClickHouse server that starts then exits on its tables.
zk_ok() { [[ "$(printf 'stat' | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT; cat >&3; cat <&3" 2>/dev/null)" == *"Mode: standalone"* ]]; }

zk_start() {
  local t0 pid
  t0="$(now_s)"
  if pid="$(zk_pid)"; then
    log "zookeeper already running (pid $pid)"
  else
    rm -f "$ZK_PIDFILE"
    port_open "$ZK_PORT" && die "127.0.0.1:$ZK_PORT is taken by another process (not our zookeeper)"
    mkdir -p "$ZK_DIR/data" "$ZK_DIR/logs"
    cat >"$ZK_DIR/zoo.cfg" <<EOF
# Written by deploy/clickhouse_cluster.sh; overwritten on every start.
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$ZK_DIR/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,stat
autopurge.purgeInterval=1
EOF
    cat >"$ZK_DIR/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.RollingFileAppender
log4j.appender.FILE.File=$ZK_DIR/logs/zookeeper.log
log4j.appender.FILE.MaxFileSize=20MB
log4j.appender.FILE.MaxBackupIndex=2
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
EOF
    log "starting zookeeper on 127.0.0.1:$ZK_PORT..."
    setsid java -Xms64m -Xmx256m -Dzookeeper.log.dir="$ZK_DIR/logs" \
      -Dlog4j.configuration="file:$ZK_DIR/log4j.properties" \
      -cp "/usr/share/java/*:/usr/share/zookeeper/*" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZK_MARKER" \
      </dev/null >"$ZK_DIR/logs/stdout.log" 2>&1 9>&- &
    printf '%s\n' "$!" >"$ZK_PIDFILE"
  fi
  while ! zk_ok; do
    if ! zk_pid >/dev/null; then
      show_tail 40 "$ZK_DIR/logs/stdout.log" "$ZK_DIR/logs/zookeeper.log"
      die "zookeeper exited during startup"
    fi
    (($(now_s) < t0 + TIMEOUT)) || die "zookeeper not answering on 127.0.0.1:$ZK_PORT after ${TIMEOUT} s"
    sleep 0.3
  done
  log "zookeeper up on 127.0.0.1:$ZK_PORT (pid $(zk_pid))"
}

# ---------------------------------------------------------------- ClickHouse

remote_servers() {
  local shard i
  for shard in 1 2; do
    printf '            <shard>\n                <internal_replication>true</internal_replication>\n'
    for i in $(((shard - 1) * 2)) $(((shard - 1) * 2 + 1)); do
      printf '                <replica><host>127.0.0.1</host><port>%s</port></replica>\n' "$(tcp_port "$i")"
    done
    printf '            </shard>\n'
  done
}

write_server_config() {
  local i="$1" dir shard replica
  dir="$(server_dir "$i")"
  shard=$((i / 2 + 1))
  replica="${SERVERS[$i]}"
  mkdir -p "$dir/data/tmp" "$dir/data/user_files" "$dir/data/format_schemas" "$dir/logs"
  cat >"$dir/users.xml.tmp" <<EOF
<?xml version="1.0"?>
<!-- Written by deploy/clickhouse_cluster.sh. Loopback only, no password (dev and tests). -->
<yandex>
    <profiles>
        <default>
            <max_memory_usage>1073741824</max_memory_usage>
            <load_balancing>random</load_balancing>
        </default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default></quotas>
</yandex>
EOF
  mv "$dir/users.xml.tmp" "$dir/users.xml"
  # ClickHouse 18.16 needs the trailing slash on the path settings.
  cat >"$dir/config.xml.tmp" <<EOF
<?xml version="1.0"?>
<!-- Written by deploy/clickhouse_cluster.sh; edits are overwritten on every start. -->
<yandex>
    <logger>
        <level>information</level>
        <log>$dir/logs/clickhouse-server.log</log>
        <errorlog>$dir/logs/clickhouse-server.err.log</errorlog>
        <size>50M</size>
        <count>2</count>
        <console>0</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$(tcp_port "$i")</tcp_port>
    <http_port>$(http_port "$i")</http_port>
    <interserver_http_port>$(inter_port "$i")</interserver_http_port>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <max_connections>256</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>64</max_concurrent_queries>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <background_pool_size>4</background_pool_size>
    <path>$dir/data/</path>
    <tmp_path>$dir/data/tmp/</tmp_path>
    <user_files_path>$dir/data/user_files/</user_files_path>
    <format_schema_path>$dir/data/format_schemas/</format_schema_path>
    <users_config>$dir/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <max_table_size_to_drop>0</max_table_size_to_drop>
    <max_partition_size_to_drop>0</max_partition_size_to_drop>
    <zookeeper>
        <node><host>127.0.0.1</host><port>$ZK_PORT</port></node>
        <session_timeout_ms>10000</session_timeout_ms>
    </zookeeper>
    <macros>
        <cluster>$NAME</cluster>
        <shard>$shard</shard>
        <replica>$replica</replica>
    </macros>
    <remote_servers>
        <$NAME>
$(remote_servers)
        </$NAME>
    </remote_servers>
    <distributed_ddl>
        <path>/clickhouse/$NAME/task_queue/ddl</path>
    </distributed_ddl>
</yandex>
EOF
  mv "$dir/config.xml.tmp" "$dir/config.xml"
}

server_pid() { pid_alive "$(server_dir "$1")/clickhouse.pid" "$(server_marker "$1")"; }

server_version() {
  clickhouse-client --host 127.0.0.1 --port "$(tcp_port "$1")" --connect_timeout 2 -q 'select version()' 2>/dev/null
}

server_start() {
  local i="$1" dir pid p
  dir="$(server_dir "$i")"
  if pid="$(server_pid "$i")"; then
    log "${SERVERS[$i]} already running (pid $pid)"
    return 0
  fi
  rm -f "$dir/clickhouse.pid"
  for p in "$(tcp_port "$i")" "$(http_port "$i")" "$(inter_port "$i")"; do
    port_open "$p" && die "127.0.0.1:$p is taken by another process (not ${SERVERS[$i]})"
  done
  write_server_config "$i"
  log "starting ${SERVERS[$i]} (shard $((i / 2 + 1))) on 127.0.0.1:$(tcp_port "$i")..."
  # Foreground under setsid: the recorded pid is the server. 9>&-: no inherited lock.
  setsid clickhouse-server "$(server_marker "$i")" </dev/null >"$dir/logs/stdout.log" 2>&1 9>&- &
  printf '%s\n' "$!" >"$dir/clickhouse.pid"
}

server_wait() {
  local i="$1" t0="$2" dir v
  dir="$(server_dir "$i")"
  while ! v="$(server_version "$i")"; do
    if ! server_pid "$i" >/dev/null && pid_gone "$dir/clickhouse.pid"; then
      show_tail 40 "$dir/logs/clickhouse-server.err.log" "$dir/logs/stdout.log"
      die "${SERVERS[$i]} exited during startup"
    fi
    if (($(now_s) >= t0 + TIMEOUT)); then
      show_tail 40 "$dir/logs/clickhouse-server.err.log" "$dir/logs/stdout.log"
      die "${SERVERS[$i]} not answering on 127.0.0.1:$(tcp_port "$i") after ${TIMEOUT} s"
    fi
    sleep 0.3
  done
  log "${SERVERS[$i]} up on 127.0.0.1:$(tcp_port "$i") (pid $(server_pid "$i"), version $v)"
}

server_stop() {
  if stop_pid "$(server_dir "$1")/clickhouse.pid" "$(server_marker "$1")" 60; then
    log "${SERVERS[$1]} stopped"
  else
    log "${SERVERS[$1]} not running"
  fi
}

write_env() {
  local ports=() i
  for i in "${!SERVERS[@]}"; do ports+=("$(tcp_port "$i")"); done
  cat >"$ROOT/env.tmp" <<EOF
TG_CLICKHOUSE_MODE=server
TG_CLICKHOUSE_HOST=127.0.0.1
TG_CLICKHOUSE_PORT=$(tcp_port 0)
TG_CLICKHOUSE_CLUSTER=$NAME
TG_CH_CLUSTER_PORTS=$(IFS=,; echo "${ports[*]}")
TG_CH_CLUSTER_ZK_PORT=$ZK_PORT
EOF
  mv "$ROOT/env.tmp" "$ROOT/env"
}

# ---------------------------------------------------------------- commands

cmd_start() {
  local t0 i
  t0="$(now_s)"
  ensure_installed
  mkdir -p "$ROOT"
  if [[ -n "${1:-}" ]]; then
    i="$(index_of "$1")"
    zk_ok || die "zookeeper not answering on 127.0.0.1:$ZK_PORT: start the whole cluster first"
    server_start "$i"
    server_wait "$i" "$t0"
    return 0
  fi
  zk_start
  for i in "${!SERVERS[@]}"; do server_start "$i"; done
  for i in "${!SERVERS[@]}"; do server_wait "$i" "$t0"; done
  write_env
  log "cluster '$NAME' up: 2 shards x 2 replicas in $(($(now_s) - t0)) s; env in $ROOT/env"
}

cmd_stop() {
  local i
  if [[ -n "${1:-}" ]]; then
    server_stop "$(index_of "$1")"
    return 0
  fi
  for i in "${!SERVERS[@]}"; do server_stop "$i"; done
  if stop_pid "$ZK_PIDFILE" "$ZK_MARKER" 30; then log "zookeeper stopped"; else log "zookeeper not running"; fi
}

cmd_status() {
  local i pid bad=0 names=("${SERVERS[@]}")
  [[ -n "${1:-}" ]] && names=("$1")
  if [[ -z "${1:-}" ]]; then
    if zk_ok; then log "zookeeper running (pid $(zk_pid)) on 127.0.0.1:$ZK_PORT"; else
      log "zookeeper not answering on 127.0.0.1:$ZK_PORT"
      bad=1
    fi
  fi
  for name in "${names[@]}"; do
    i="$(index_of "$name")"
    if pid="$(server_pid "$i")" && server_version "$i" >/dev/null; then
      log "$name running (pid $pid) on 127.0.0.1:$(tcp_port "$i")"
    else
      log "$name not answering on 127.0.0.1:$(tcp_port "$i")"
      bad=1
    fi
  done
  return "$bad"
}

case "${1:-}" in
start | stop) take_lock "$ROOT/.lock" ;;
esac
case "${1:-}" in
start) cmd_start "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
status) cmd_status "${2:-}" ;;
*)
  echo "usage: $0 start|stop|status [${SERVERS[*]}]" >&2
  exit 2
  ;;
esac
