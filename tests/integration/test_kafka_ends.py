"""Whether a partition is read to its end, as of the last fetch or as of now (real broker).

The router marks a source idle when it has routed all of it. Judged by the last fetch alone,
a source whose broker appended a record after that fetch still looks idle, and members that
trust the claim feed past the record it has not routed yet. `caught_up(fresh=True)` asks the
broker for the ends again.
"""

from __future__ import annotations

import time

import pytest

from ingest.bus import TopicPartition
from ingest.kafka_bus import KafkaBus
from tests.builders import make_log

pytestmark = pytest.mark.integration


def _read_all(consumer, expected: int) -> int:
    got, deadline = 0, time.monotonic() + 60
    while got < expected and time.monotonic() < deadline:
        got += len(consumer.poll(100, 0.2))
    return got


def test_a_record_appended_after_the_last_fetch_is_not_read_to_its_end(kafka_bus: KafkaBus):
    topic = kafka_bus.topics.for_event(make_log())
    producer = kafka_bus.producer()
    sent = [make_log(node=f"n{i}", seq=i) for i in range(8)]
    for event in sent:
        producer.send(event)
    producer.flush()
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}ends", [topic])
    try:
        assert _read_all(consumer, len(sent)) == len(sent)
        owned = consumer.assignment()
        deadline = time.monotonic() + 30
        while consumer.caught_up(fresh=True) != owned and time.monotonic() < deadline:
            consumer.poll(100, 0.1)
        assert consumer.caught_up(fresh=True) == owned

        late = make_log(node="n3", seq=99)
        producer.send(late)
        producer.flush()  # appended; this member has not fetched since
        behind = {tp for tp in owned if tp not in consumer.caught_up(fresh=True)}
        assert len(behind) == 1, behind
        (tp,) = behind
        assert isinstance(tp, TopicPartition) and tp.topic == topic

        assert _read_all(consumer, 1) == 1
        assert consumer.caught_up(fresh=True) == owned
    finally:
        consumer.close()
        producer.close()
