#!/usr/bin/env bash
# Local ClickHouse server (Debian package, 18.16 on Debian 12) on loopback, for dev and CI.
#
#   bash deploy/clickhouse.sh start|stop|restart|status|wait
#
# Data survives stop/start (tests stop and start it mid-ingest). Environment (all optional):
#   TG_SERVICES_DIR               data dir (default <repo>/deploy/.local); ClickHouse lives in $TG_SERVICES_DIR/clickhouse
#   TG_CLICKHOUSE_PORT            native TCP port (default 19000)
#   TG_CLICKHOUSE_HTTP_PORT       HTTP port (default 18123)
#   TG_CLICKHOUSE_START_TIMEOUT   seconds to wait for `select version()` (default 60)
set -euo pipefail

TAG=clickhouse
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

PORT="${TG_CLICKHOUSE_PORT:-19000}"
HTTP_PORT="${TG_CLICKHOUSE_HTTP_PORT:-18123}"
TIMEOUT="${TG_CLICKHOUSE_START_TIMEOUT:-60}"
require_port TG_CLICKHOUSE_PORT "$PORT"
require_port TG_CLICKHOUSE_HTTP_PORT "$HTTP_PORT"
require_uint TG_CLICKHOUSE_START_TIMEOUT "$TIMEOUT"
[[ "$PORT" != "$HTTP_PORT" ]] || die "TG_CLICKHOUSE_PORT and TG_CLICKHOUSE_HTTP_PORT must differ"

CDIR="$SERVICES_DIR/clickhouse"
CONF="$CDIR/config.xml"
USERS="$CDIR/users.xml"
DATA="$CDIR/data"
LOGS="$CDIR/logs"
PIDFILE="$CDIR/clickhouse.pid"
SERVER_LOG="$LOGS/clickhouse-server.log"
ERR_LOG="$LOGS/clickhouse-server.err.log"
STDOUT_LOG="$LOGS/stdout.log"
MARKER="--config-file=$CONF"

running_pid() { pid_alive "$PIDFILE" "$MARKER"; }

ensure_installed() {
  if command -v clickhouse-server >/dev/null 2>&1 && command -v clickhouse-client >/dev/null 2>&1 &&
    [[ -f /etc/clickhouse-server/users.xml ]]; then
    return 0
  fi
  log "clickhouse-server/clickhouse-client missing, installing the Debian packages..."
  apt_install clickhouse-server clickhouse-client
  command -v clickhouse-server >/dev/null 2>&1 || die "clickhouse-server still missing after apt-get install"
  [[ -f /etc/clickhouse-server/users.xml ]] || die "/etc/clickhouse-server/users.xml missing after install"
}

write_config() {
  mkdir -p "$DATA/tmp" "$DATA/user_files" "$DATA/format_schemas" "$LOGS"
  # users.xml: the package's, copied so this server never depends on edits under /etc.
  # (Its default user allows ::/0 but we listen on 127.0.0.1 only. The server prints
  # "Include not found: networks" for it: harmless, the package's own config does the same.)
  cp /etc/clickhouse-server/users.xml "$USERS.tmp"
  mv "$USERS.tmp" "$USERS"
  # ClickHouse 18.16 needs the trailing slash on the path settings.
  cat >"$CONF.tmp" <<EOF
<?xml version="1.0"?>
<!-- Written by deploy/clickhouse.sh; edits are overwritten on every start. -->
<yandex>
    <logger>
        <level>information</level>
        <log>$SERVER_LOG</log>
        <errorlog>$ERR_LOG</errorlog>
        <size>100M</size>
        <count>3</count>
        <console>0</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$PORT</tcp_port>
    <http_port>$HTTP_PORT</http_port>
    <!-- no interserver_http_port: it is only opened when configured, and a single node needs none -->
    <max_connections>1024</max_connections>
    <keep_alive_timeout>3</keep_alive_timeout>
    <max_concurrent_queries>64</max_concurrent_queries>
    <uncompressed_cache_size>268435456</uncompressed_cache_size>
    <mark_cache_size>268435456</mark_cache_size>
    <path>$DATA/</path>
    <tmp_path>$DATA/tmp/</tmp_path>
    <user_files_path>$DATA/user_files/</user_files_path>
    <format_schema_path>$DATA/format_schemas/</format_schema_path>
    <users_config>$USERS</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
    <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
    <max_session_timeout>3600</max_session_timeout>
    <default_session_timeout>60</default_session_timeout>
    <max_table_size_to_drop>0</max_table_size_to_drop>
    <max_partition_size_to_drop>0</max_partition_size_to_drop>
</yandex>
EOF
  mv "$CONF.tmp" "$CONF"
}

query_version() {
  clickhouse-client --host 127.0.0.1 --port "$PORT" --connect_timeout 2 -q 'select version()' 2>/dev/null
}

wait_ready() {
  local t0="$1" pid v
  local deadline=$((t0 + TIMEOUT))
  while :; do
    if ! pid="$(running_pid)"; then
      if pid_gone "$PIDFILE"; then
        show_tail 40 "$ERR_LOG" "$STDOUT_LOG"
        die "clickhouse-server exited during startup"
      fi
      (($(now_s) < deadline)) || die "clickhouse-server never started within ${TIMEOUT} s"
      sleep 0.1 # not exec'd yet
      continue
    fi
    if v="$(query_version)"; then
      log "up on 127.0.0.1:$PORT (http $HTTP_PORT, pid $pid, version $v) in $(($(now_s) - t0)) s"
      return 0
    fi
    if (($(now_s) >= deadline)); then
      show_tail 40 "$SERVER_LOG" "$ERR_LOG" "$STDOUT_LOG"
      die "no answer to 'select version()' on 127.0.0.1:$PORT after ${TIMEOUT} s"
    fi
    sleep 0.3
  done
}

cmd_start() {
  local t0 pid
  t0="$(now_s)"
  if pid="$(running_pid)"; then
    log "already running (pid $pid)"
    wait_ready "$t0"
    return 0
  fi
  rm -f "$PIDFILE"
  ensure_installed
  local p
  for p in "$PORT" "$HTTP_PORT"; do
    if port_open "$p"; then
      die "127.0.0.1:$p is already taken by another process (not ours: no live pid file in $CDIR)"
    fi
  done
  mkdir -p "$CDIR"
  write_config
  log "starting clickhouse-server..."
  # Foreground mode (no --daemon) under setsid: the pid we record is the server itself.
  # 9>&-: the server must not inherit the start/stop lock.
  # Runs as root: ClickHouse 18.16 accepts that; the data dir is ours and owned by root.
  setsid clickhouse-server "$MARKER" </dev/null >"$STDOUT_LOG" 2>&1 9>&- &
  printf '%s\n' "$!" >"$PIDFILE"
  wait_ready "$t0"
}

cmd_stop() {
  if stop_pid "$PIDFILE" "$MARKER" 60; then
    log "stopped"
  else
    log "not running"
  fi
}

cmd_status() {
  local pid v
  if pid="$(running_pid)" && v="$(query_version)"; then
    log "running (pid $pid) on 127.0.0.1:$PORT, version $v"
    return 0
  fi
  if [[ -n "${pid:-}" ]]; then
    log "process $pid alive but not answering on 127.0.0.1:$PORT"
  else
    log "not running"
  fi
  return 1
}

cmd_wait() {
  running_pid >/dev/null || die "not running"
  wait_ready "$(now_s)"
}

case "${1:-}" in
start | stop | restart) take_lock "$CDIR/.lock" ;;
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
