"""The fault runs of bench/reliability_faults.py at a small size: nothing lost, nothing stored
twice, the incidents of an uninterrupted replay.

Each run kills or cuts off one part of the pipeline mid-stream (a private Kafka broker, the
diagnosis worker, the sink, a private ClickHouse server); the shared services of
deploy/services.sh are never stopped, so these run alongside the other integration tests.
"""

from __future__ import annotations

import pytest

from bench.reliability_faults import (
    FaultRun,
    broker_kill,
    clickhouse_outage,
    diagnose_kill,
    sink_kill,
)
from tests.integration.conftest import Services

pytestmark = pytest.mark.integration

SIZE = 1  # 8 nodes x 8 GPUs, two jobs, 240 simulated seconds, four faults of different kinds


def _check(run: FaultRun) -> None:
    assert run.faults_injected > 0, run
    assert run.events_published > 0, run
    assert run.events_duplicated == 0, run.notes
    assert run.events_lost == 0, run.notes
    assert run.incidents_wrong == 0, run.notes


def test_a_kafka_broker_killed_mid_stream_loses_nothing(services: Services) -> None:
    run = broker_kill(SIZE, clickhouse=(services.clickhouse_host, services.clickhouse_port))
    assert run.incidents_expected == 4
    _check(run)


def test_a_diagnosis_worker_killed_mid_stream_gives_the_replays_incidents(
    services: Services,
) -> None:
    run = diagnose_kill(
        SIZE,
        kill_at=0.6,
        services=(services.kafka, services.clickhouse_host, services.clickhouse_port),
    )
    assert run.incidents_expected == 4
    _check(run)


def test_a_sink_killed_mid_batch_stores_the_twins_events_exactly_once(
    services: Services,
) -> None:
    run = sink_kill(
        SIZE, services=(services.kafka, services.clickhouse_host, services.clickhouse_port)
    )
    assert run.faults_injected >= 3
    _check(run)


def test_a_clickhouse_server_killed_and_frozen_mid_stream_loses_nothing(
    services: Services,
) -> None:
    run = clickhouse_outage(SIZE, kafka=services.kafka)
    assert run.incidents_expected == 4
    _check(run)
