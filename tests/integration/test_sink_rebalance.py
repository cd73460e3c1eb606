"""Two sinks in one group on the real broker: a rebalance while a batch is pending loses nothing.

kafka-python keeps the read position of the partitions a member gets back in a rebalance, but
every partition is revoked first and the sink drops what it had pending of them; so the sink
reads its assignment again from the committed offsets.
"""

from __future__ import annotations

import threading

import pytest

from analytics.store import Store
from analytics.writer import ClickHouseWriter
from ingest.kafka_bus import KafkaBus
from ingest.sink import Sink, SinkSettings
from tests.builders import make_log
from tests.integration.conftest import count, wait_for

pytestmark = pytest.mark.integration


def _sink(bus: KafkaBus, store: Store, batch_seconds: float) -> Sink:
    late: list[Sink] = []
    consumer = bus.consumer(
        f"{bus.topics.prefix}sink",
        bus.topics.telemetry(),
        on_assign=lambda tps: late[0].on_assign(tps),
        on_revoke=lambda tps: late[0].on_revoke(tps),
    )
    settings = SinkSettings(batch_seconds=batch_seconds, batch_records=100_000)
    sink = Sink(consumer, ClickHouseWriter(store), settings)
    late.append(sink)
    return sink


def test_records_pending_when_a_second_sink_joins_are_stored_exactly_once(kafka_bus, server_store):
    # the first sink fills a batch for 8 s; the second joins meanwhile: the first loses every
    # partition (its pending records dropped), gets some back, and must read them again
    first = _sink(kafka_bus, server_store, batch_seconds=8.0)
    partitions = len(kafka_bus.topics.telemetry()) * 4
    wait_for(
        lambda: not first.consumer.poll(1, 0.2) and len(first.consumer.assignment()) == partitions,
        60,
        "the first sink owning every partition",
    )
    producer = kafka_bus.producer()
    events = [make_log(f"node-{i % 16:02d}", i * 0.01, seq=i, line=f"line {i}") for i in range(400)]
    for event in events:
        producer.send(event)
    producer.flush()
    producer.close()
    stop = threading.Event()
    threads = [threading.Thread(target=first.run, args=(stop,), daemon=True)]
    threads[0].start()
    wait_for(lambda: first.stats.consumed >= len(events), 30, "the first sink's pending batch")
    second = _sink(kafka_bus, server_store, batch_seconds=0.2)
    threads.append(threading.Thread(target=second.run, args=(stop,), daemon=True))
    threads[1].start()
    try:
        wait_for(
            lambda: count(server_store, "logs")[1] >= len(events),
            90,
            "every record stored by the two sinks",
        )
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        first.consumer.close()
        second.consumer.close()
    assert not any(thread.is_alive() for thread in threads)
    ids = server_store.query_df(
        f"SELECT event_id, count() AS n FROM `{server_store.database}`.logs GROUP BY event_id"
    )
    assert len(ids) == len(events) and set(ids["n"]) == {1}
