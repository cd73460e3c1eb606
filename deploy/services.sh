#!/usr/bin/env bash
# Local Kafka + ClickHouse (+ Slurm, deploy/slurm.sh) for dev and CI, on loopback.
#
#   bash deploy/services.sh start|stop|restart|status
#
# After start, $TG_SERVICES_DIR/env (default deploy/.local/env) holds the exports tests source:
#   TG_KAFKA_BOOTSTRAP, TG_CLICKHOUSE_HOST, TG_CLICKHOUSE_PORT, TG_CLICKHOUSE_HTTP_PORT, TG_SLURM_CONF, SLURM_CONF.
# Ports and other knobs: see deploy/kafka.sh and deploy/clickhouse.sh.
set -euo pipefail

TAG=services
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

KAFKA_PORT="${TG_KAFKA_PORT:-19092}"
CH_PORT="${TG_CLICKHOUSE_PORT:-19000}"
CH_HTTP_PORT="${TG_CLICKHOUSE_HTTP_PORT:-18123}"
require_port TG_KAFKA_PORT "$KAFKA_PORT"
require_port TG_CLICKHOUSE_PORT "$CH_PORT"
require_port TG_CLICKHOUSE_HTTP_PORT "$CH_HTTP_PORT"
ENV_FILE="$SERVICES_DIR/env"
export TG_SERVICES_DIR="$SERVICES_DIR"

write_env() {
  mkdir -p "$SERVICES_DIR"
  cat >"$ENV_FILE.tmp" <<EOF
# Written by deploy/services.sh start; removed by stop. Source it: . $ENV_FILE
export TG_KAFKA_BOOTSTRAP=127.0.0.1:$KAFKA_PORT
export TG_CLICKHOUSE_HOST=127.0.0.1
export TG_CLICKHOUSE_PORT=$CH_PORT
export TG_CLICKHOUSE_HTTP_PORT=$CH_HTTP_PORT
EOF
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}

cmd_start() {
  local t0
  t0="$(now_s)"
  bash "$DEPLOY_DIR/clickhouse.sh" start
  bash "$DEPLOY_DIR/kafka.sh" start
  write_env
  bash "$DEPLOY_DIR/slurm.sh" start # appends TG_SLURM_CONF/SLURM_CONF to the env file
  log "all up in $(($(now_s) - t0)) s; env in $ENV_FILE"
}

cmd_stop() {
  local rc=0
  rm -f "$ENV_FILE"
  bash "$DEPLOY_DIR/slurm.sh" stop || rc=1
  bash "$DEPLOY_DIR/kafka.sh" stop || rc=1
  bash "$DEPLOY_DIR/clickhouse.sh" stop || rc=1
  return "$rc"
}

cmd_status() {
  local rc=0
  bash "$DEPLOY_DIR/clickhouse.sh" status || rc=1
  bash "$DEPLOY_DIR/kafka.sh" status || rc=1
  bash "$DEPLOY_DIR/slurm.sh" status || rc=1
  return "$rc"
}

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
