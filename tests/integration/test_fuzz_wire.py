"""A property-based fuzzer over the wire schema, on the real broker and ClickHouse server.

Batches of valid events of every kind (random names, extreme counters, NaN and infinite
values, any text) mixed with hostile records (garbage, truncated or wrongly typed JSON,
impossible or far-off times, invalid UTF-8, deep nesting) go to every telemetry topic while the
sink and the diagnosis worker run. After each batch: no loop crashed or stalled, every valid
event is stored exactly once, every hostile record is dead-lettered exactly once, and diagnosis
digested every valid event. `python -m bench.reliability` runs the same rig at scale.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings

from bench.fuzz_wire import Input, batches
from bench.reliability_fuzz import FuzzRig

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


@pytest.fixture
def rig(kafka_bus, server_store) -> Iterator[FuzzRig]:
    """The sink and the worker running on this test's topics and database."""
    with FuzzRig(kafka_bus, server_store) as running:
        yield running


@settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(batch=batches(NOW, 40))
def test_every_valid_event_is_stored_once_and_every_hostile_one_dead_lettered(
    rig: FuzzRig, batch: list[Input]
) -> None:
    rig.publish(batch)
    rig.settle()
    audit = rig.audit()
    assert audit.clean, audit
    assert audit.published >= len(batch)
