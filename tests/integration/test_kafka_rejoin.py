"""A member that works between short polls still joins its group (real broker).

kafka-python 3.0 drops a join that completed while nobody was polling and starts another, so
a caller whose work between polls outlasts a join (a sink writing a batch under load) could
rejoin for ever. The join here is made slower than the poll timeout, as on a loaded host;
the bus consumer must apply the join that completed between polls (`ingest.kafka_join`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kafka.coordinator import base

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
        assert len(attempts) <= 3, f"{len(attempts)} join attempts for one join"
    finally:
        consumer.close()
        producer.close()
