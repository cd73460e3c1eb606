"""`trainguard act` rides out a store that refuses writes for a while (a replica restarting)
and a bus that fails polls and commits for a while (a broker restarting, a rebalance)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import cast

import pytest

from actions import consumer as consumer_module
from actions.consumer import consume, handle_retrying, recover_retrying
from actions.engine import ActionEngine
from analytics.store import StoreError, StoreUnavailable
from diagnosis.incidents import Incident
from ingest.bus import BusError, Consumer, Record, TopicPartition
from tests.actions_builders import make_incident


class FlakyEngine:
    """Refuses `failures` times with `error`, then handles."""

    claims = None  # one replica: no step claims

    def __init__(self, failures: int, error: StoreError) -> None:
        self.failures = failures
        self.error = error
        self.handled: list[str] = []
        self.calls = 0

    def recover(self) -> list[str]:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return ["inc-resumed"]

    def handle(self, incident: Incident) -> list[object]:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        self.handled.append(incident.id)
        return []


def _incident() -> Incident:
    return make_incident(1, node="node-0001", job="j", at=datetime.now(UTC))


def test_an_unavailable_store_is_retried_until_the_incident_is_handled() -> None:
    engine = FlakyEngine(2, StoreUnavailable("ClickHouse busy (code 286): quorum unfinished"))
    incident = _incident()
    done = handle_retrying(cast(ActionEngine, engine), incident, threading.Event(), 0.01)
    assert done is True
    assert engine.calls == 3
    assert engine.handled == [incident.id]


def test_a_stop_while_the_store_is_away_gives_up_without_handling() -> None:
    engine = FlakyEngine(10**6, StoreUnavailable("ClickHouse unreachable"))
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert handle_retrying(cast(ActionEngine, engine), _incident(), stop, 0.05) is False
    assert engine.handled == []
    assert engine.calls >= 1


def test_a_store_error_that_retrying_cannot_fix_is_raised() -> None:
    engine = FlakyEngine(1, StoreError("Unknown table"))
    with pytest.raises(StoreError, match="Unknown table"):
        handle_retrying(cast(ActionEngine, engine), _incident(), threading.Event(), 0.01)
    assert engine.calls == 1


def test_the_start_up_recovery_waits_for_a_store_refusing_quorum_writes() -> None:
    engine = FlakyEngine(2, StoreUnavailable("ClickHouse busy (code 286): another quorum insert"))
    resumed = recover_retrying(cast(ActionEngine, engine), threading.Event(), 0.01)
    assert resumed == ["inc-resumed"] and engine.calls == 3


def test_a_stop_during_the_start_up_recovery_gives_up_quietly() -> None:
    engine = FlakyEngine(10**6, StoreUnavailable("ClickHouse unreachable"))
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert recover_retrying(cast(ActionEngine, engine), stop, 0.05) is None


class FlakyBus:
    """A consumer whose first polls and first commit fail, as while a broker restarts."""

    def __init__(self, records: list[Record], poll_failures: int, stop: threading.Event) -> None:
        self.records = records
        self.poll_failures = poll_failures
        self.commit_failures = 1
        self.committed: list[dict[TopicPartition, int]] = []
        self.stop = stop

    def poll(self, max_records: int, timeout_s: float) -> list[Record]:
        if self.poll_failures:
            self.poll_failures -= 1
            raise BusError("poll failed: KafkaConnectionError: 111 ECONNREFUSED")
        if not self.records:
            self.stop.set()
        records, self.records = self.records, []
        return records

    def commit(self, offsets: dict[TopicPartition, int]) -> None:
        if self.commit_failures:
            self.commit_failures -= 1
            raise BusError("commit failed: [Error 27] RebalanceInProgressError")
        self.committed.append(dict(offsets))


def test_the_consumer_loop_rides_out_bus_errors(monkeypatch) -> None:
    monkeypatch.setattr(consumer_module, "_BUS_RETRY_S", 0.01)
    first, second = _incident(), make_incident(2, node="node-0002", job="k", at=datetime.now(UTC))
    stop = threading.Event()
    bus = FlakyBus(
        [Record("tg.incidents", 0, 7, None, first.model_dump_json().encode(), 0)],
        poll_failures=2,
        stop=stop,
    )
    engine = FlakyEngine(0, StoreError("unused"))
    assert consume(cast(ActionEngine, engine), cast(Consumer, bus), stop, 0.01, 3600) == 1
    assert engine.handled == [first.id]
    assert bus.committed == []  # the one commit failed: the incident comes again
    bus.records = [Record("tg.incidents", 0, 8, None, second.model_dump_json().encode(), 0)]
    stop.clear()
    assert consume(cast(ActionEngine, engine), cast(Consumer, bus), stop, 0.01, 3600) == 1
    assert engine.handled == [first.id, second.id]
    assert bus.committed == [{TopicPartition("tg.incidents", 0): 9}]
