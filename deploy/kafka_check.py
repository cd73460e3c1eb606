"""Smoke check of the local broker with kafka-python: create a topic, produce, consume, commit.

    python deploy/kafka_check.py [BOOTSTRAP]     (default: $TG_KAFKA_BOOTSTRAP or 127.0.0.1:19092)

Exits 0 and prints one line per step on success. Uses only public kafka-python APIs, so it
also shows that API-version negotiation with the broker works. The topic is deleted at the end.
"""

from __future__ import annotations

import os
import sys
import time
import uuid

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic


def main() -> int:
    bootstrap = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.environ.get("TG_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
    )
    topic = f"tg.check.{uuid.uuid4().hex[:10]}"
    t0 = time.monotonic()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="tg-kafka-check")
    try:
        cluster = admin.describe_cluster()
        print(
            f"kafka-python {kafka.__version__}; cluster {cluster['cluster_id']}, "
            f"{len(cluster['brokers'])} broker(s)"
        )
        admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
        print(f"created {topic}")
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip")
        meta = producer.send(topic, key=b"node-0001", value=b'{"check": 1}').get(timeout=15)
        producer.close()
        print(
            f"produced to partition {meta.partition} offset {meta.offset}; "
            f"producer api_version {producer.config['api_version']}"
        )
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=f"{topic}.g",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=20_000,
        )
        record = next(iter(consumer), None)
        if record is None or record.value != b'{"check": 1}':
            print(f"FAILED: consumed {record!r}", file=sys.stderr)
            return 1
        consumer.commit()
        committed = consumer.committed(TopicPartition(topic, record.partition))
        consumer.close()
        print(
            f"consumed key {record.key!r} from partition {record.partition}; committed {committed}"
        )
        admin.delete_topics([topic])
    finally:
        admin.close()
    print(f"OK in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
