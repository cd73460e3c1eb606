"""A member that works between short polls still joins its group (real broker).

kafka-python 3.0 drops a join that completed while nobody was polling and starts another, so
a caller whose work between polls outlasts a join (a sink writing a batch under load) could
rejoin for ever; and it forgets a rejoin started by a metadata change once that join has
assigned the new metadata, so such a join completed between polls was never applied (the
member stalled until the broker dropped it). The join here is made slower than the poll
timeout, as on a loaded host; the bus consumer must apply the join that completed between
polls (`ingest.kafka_join`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewPartitions
from kafka.coordinator import base

from ingest.bus import TopicPartition
from ingest.kafka_bus import KafkaBus
from tests.builders import make_log


def _slow_joins(monkeypatch: pytest.MonkeyPatch, delay_s: float) -> list[float]:
    """Delay every JoinGroup round by delay_s (a loaded broker or host); return the attempts."""
    original: Callable[[Any], Awaitable[Any]] = base.BaseCoordinator._do_join_and_sync_async
    attempts: list[float] = []

    async def slow(self: Any) -> Any:
        attempts.append(time.monotonic())
        await self._net.sleep(delay_s)
        return await original(self)

    monkeypatch.setattr(base.BaseCoordinator, "_do_join_and_sync_async", slow)
    return attempts


def test_a_member_busy_between_short_polls_gets_its_partitions(kafka_bus: KafkaBus, monkeypatch):
    attempts = _slow_joins(monkeypatch, delay_s=0.5)
    producer = kafka_bus.producer()
    for seq in range(20):
        producer.send(make_log(seq=seq, seconds=seq / 10))
    producer.flush()
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}busy", kafka_bus.topics.telemetry())
    got = 0
    try:
        deadline = time.monotonic() + 30
        while got < 20 and time.monotonic() < deadline:
            got += len(consumer.poll(100, 0.05))
            time.sleep(0.6)  # work between polls that outlasts a join
        assert consumer.assignment(), f"never joined: {len(attempts)} join attempts in 30 s"
        assert got == 20
        assert len(attempts) <= 6, f"{len(attempts)} join attempts for one join"  # not ~50
    finally:
        consumer.close()
        producer.close()


def test_a_member_whose_topic_grows_between_short_polls_reads_the_new_partition(
    kafka_bus: KafkaBus, monkeypatch
):
    """A rejoin started by a metadata change (a partition added: as when a group is made
    right after its topics and their partitions reach the client late) completes between
    two polls and must still be applied."""
    _slow_joins(monkeypatch, delay_s=0.5)
    topic = kafka_bus.topics.telemetry()[0]
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}grow", [topic])
    admin = KafkaAdminClient(bootstrap_servers=kafka_bus.bootstrap)
    producer = KafkaProducer(bootstrap_servers=kafka_bus.bootstrap)
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 4 and time.monotonic() < deadline:
            consumer.poll(100, 0.2)
        assert len(consumer.assignment()) == 4
        admin.create_partitions({topic: NewPartitions(total_count=5)})
        producer.send(topic, key=b"k", value=b"on the new partition", partition=4).get(10)
        consumer._inner._client.cluster.request_update()  # the client learns of it now
        got = []
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            got = consumer.poll(100, 0.05)
            time.sleep(0.6)  # work between polls that outlasts a join
        assert TopicPartition(topic, 4) in consumer.assignment(), "the rejoin was never applied"
        assert [(r.partition, r.value) for r in got] == [(4, b"on the new partition")]
    finally:
        consumer.close()
        producer.close()
        admin.close()
