"""`trainguard act` rides out a store that refuses writes for a while (a replica restarting)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import cast

import pytest

from actions.consumer import handle_retrying, recover_retrying
from actions.engine import ActionEngine
from analytics.store import StoreError, StoreUnavailable
from diagnosis.incidents import Incident
from tests.actions_builders import make_incident


class FlakyEngine:
    """Refuses `failures` times with `error`, then handles."""

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
