#!/usr/bin/env bash
# Create (or check) the TrainGuard topics on a Kafka cluster. Idempotent (--if-not-exists);
# it never shrinks or reconfigures an existing topic.
#
#   BOOTSTRAP=kafka-1:9092 REPLICATION=3 bash deploy/production/create-topics.sh
#
# Environment:
#   BOOTSTRAP          bootstrap servers (default kafka-1:9092)
#   REPLICATION        replication factor (default 3; 1 for a single local broker)
#   MIN_ISR            min.insync.replicas (default 2; forced to 1 when REPLICATION=1)
#   PARTITION_SCALE    divide every partition count by this (default 1; e.g. 6 for a laptop)
#   KAFKA_TOPICS       the kafka-topics command (default /opt/kafka/bin/kafka-topics.sh,
#                      as in the apache/kafka image)
#   PREFIX             topic prefix (default "tg."; must match TG_KAFKA_TOPIC_PREFIX)
set -euo pipefail

BOOTSTRAP="${BOOTSTRAP:-kafka-1:9092}"
REPLICATION="${REPLICATION:-3}"
MIN_ISR="${MIN_ISR:-2}"
SCALE="${PARTITION_SCALE:-1}"
KAFKA_TOPICS="${KAFKA_TOPICS:-/opt/kafka/bin/kafka-topics.sh}"
PREFIX="${PREFIX:-tg.}"
for v in REPLICATION MIN_ISR SCALE; do
  [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "[topics] $v must be a positive integer" >&2; exit 1; }
done
[[ "$PREFIX" =~ ^[A-Za-z0-9._-]*$ ]] || { echo "[topics] bad PREFIX" >&2; exit 1; }
[[ "$BOOTSTRAP" =~ ^[A-Za-z0-9.,:_-]+$ ]] || { echo "[topics] bad BOOTSTRAP" >&2; exit 1; }
((REPLICATION > 1)) || MIN_ISR=1
read -r -a TOPICS_CMD <<<"$KAFKA_TOPICS"

DAY=86400000
# name       partitions  retention.ms   cleanup.policy  max.message.bytes  keyed by
TABLE="
metrics      24          $((1 * DAY))   delete          2097152            node
logs         12          $((3 * DAY))   delete          2097152            node
train        24          $((3 * DAY))   delete          2097152            job
nccl         24          $((1 * DAY))   delete          8388608            job
jobs         24          $((30 * DAY))  compact,delete  16777216           job
incidents    6           $((30 * DAY))  delete          2097152            job
actions      6           $((90 * DAY))  delete          2097152            job
deadletter   6           $((14 * DAY))  delete          16777216           source
"

while read -r name parts retention cleanup maxbytes _key; do
  [[ -n "${name:-}" ]] || continue
  p=$((parts / SCALE))
  ((p >= 1)) || p=1
  topic="$PREFIX$name"
  echo "[topics] $topic: $p partitions, rf $REPLICATION, retention $((retention / DAY)) d, $cleanup" >&2
  "${TOPICS_CMD[@]}" --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
    --topic "$topic" --partitions "$p" --replication-factor "$REPLICATION" \
    --config "retention.ms=$retention" --config "cleanup.policy=$cleanup" \
    --config "max.message.bytes=$maxbytes" --config "min.insync.replicas=$MIN_ISR" \
    --config compression.type=producer
done <<<"$TABLE"
"${TOPICS_CMD[@]}" --bootstrap-server "$BOOTSTRAP" --describe --topic "${PREFIX//./\\.}.*" |
  grep -E '^Topic:' >&2 || true
