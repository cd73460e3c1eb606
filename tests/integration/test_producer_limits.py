"""The producer against the real broker's size limits: refused alone, failures told at once."""

from __future__ import annotations

import base64
import os
import threading
import uuid

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from ingest.bus import DeliveryFailed, DeliveryFailure, RecordTooLarge, Topics
from ingest.kafka_bus import DEFAULT_MAX_MESSAGE_BYTES, KafkaBus
from ingest.schema import decode_event
from ingest.topics import TopicAdmin, TopicSpec
from tests.builders import make_log

pytestmark = pytest.mark.integration


def _read_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 30) -> list[bytes]:
    """Return the values of every record of a topic, waiting for `expected` of them."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [KafkaTopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        values: list[bytes] = []
        for _ in range(int(timeout_s * 4)):
            for records in consumer.poll(timeout_ms=250).values():
                values.extend(r.value for r in records)
            if len(values) >= expected:
                break
        return values
    finally:
        consumer.close()


def _create(bootstrap: str, name: str, max_message_bytes: int) -> None:
    config = {"max.message.bytes": str(max_message_bytes)}
    with TopicAdmin(bootstrap) as admin:  # returns once the topic has its leader
        assert admin.create([TopicSpec(name, 1, 1, config)]) == [name]


def test_an_oversized_event_is_refused_alone_and_its_batch_neighbours_arrive(kafka_bus):
    good = [make_log(node="n7", seq=1), make_log(node="n7", seq=3)]
    # Random text compresses little: lz4 cannot bring it under the broker's 1 MB.
    noise = base64.b64encode(os.urandom(1_800_000)).decode()
    oversized = make_log(node="n7", seq=2, line=noise)  # same key: same partition, same batch
    producer = kafka_bus.producer()
    producer.send(good[0])
    with pytest.raises(RecordTooLarge, match=r"over the broker's limit of 1048588 bytes"):
        producer.send(oversized)
    producer.send(good[1])
    producer.flush()  # nothing else failed
    producer.close()
    topic = kafka_bus.topics.for_event(good[0])
    got = [decode_event(v) for v in _read_all(kafka_bus.bootstrap, topic, 2)]
    assert [e.id for e in got] == [e.id for e in good]
    assert (producer.sent, producer.too_large, producer.failed) == (2, 1, 0)


def test_the_topics_own_limit_is_read_from_the_broker(services, unique):
    topics = Topics(f"it-{unique}.")
    _create(services.kafka, topics.incidents, 100_000)  # before the bus creates it
    bus = KafkaBus(services.kafka, topics, linger_ms=5)
    bus.ensure_topics([*topics.telemetry(), topics.incidents], partitions=1)
    limits = bus.message_limits()
    assert limits.for_topic(topics.incidents) == 100_000
    assert limits.for_topic(topics.telemetry()[0]) == DEFAULT_MAX_MESSAGE_BYTES
    producer = bus.producer()
    producer.send_raw(topics.incidents, b"i1", os.urandom(60_000))
    with pytest.raises(RecordTooLarge, match="100000 bytes"):
        producer.send_raw(topics.incidents, b"i1", os.urandom(150_000))
    producer.send_raw(topics.incidents, b"i1", os.urandom(60_000))
    producer.close()
    assert len(_read_all(services.kafka, topics.incidents, 2)) == 2


def test_a_failed_delivery_is_reported_on_the_next_send_with_its_record(kafka_bus, services):
    # A topic the bus does not know, with a limit below the broker's: only the broker can
    # refuse this record, after it was queued.
    strict = f"{kafka_bus.topics.prefix}strict-{uuid.uuid4().hex[:6]}"
    _create(services.kafka, strict, 5_000)
    failed = threading.Event()
    seen: list[DeliveryFailure] = []

    def on_failure(failure: DeliveryFailure) -> None:
        seen.append(failure)
        failed.set()

    producer = kafka_bus.producer(on_failure=on_failure)
    producer.send_raw(strict, b"k", os.urandom(20_000))
    assert failed.wait(30), "the broker's refusal never reached the producer"
    with pytest.raises(DeliveryFailed) as raised:
        producer.send_raw(strict, b"k", b"small")  # refused: the caller may send it again
    (failure,) = raised.value.failures
    assert (failure.topic, failure.key) == (strict, b"k") and failure.size > 20_000
    assert "MessageSizeTooLarge" in failure.error or "RecordTooLarge" in failure.error
    assert seen == [failure]
    producer.send_raw(strict, b"k", b"small")  # reported once: the next send goes on
    producer.flush()
    producer.close()
    assert _read_all(services.kafka, strict, 1) == [b"small"]
    assert (producer.failed, producer.reopened) == (1, 1)
