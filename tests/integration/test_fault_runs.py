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


# Known bugs outside this suite, seen by these runs (see each reason); a run showing one is
# an expected failure, any other difference fails. Remove an entry once its bug is fixed.
LOST_ROWS_AFTER_SINK_KILL = (
    "analytics/writer.py: after a sink killed between the per-table INSERTs of a batch, the "
    "re-delivered events whose id is stored in one table (host_metrics) are skipped for every "
    "table, so their rows of the tables not yet written (disk_metrics) are lost for good"
)
WRONG_INCIDENTS_AFTER_BROKER_RESTART = (
    "diagnosis/worker.py: after a broker restart the worker feeds thousands of events out of "
    "event-time order (stats.late ~5000 of ~9000, ~50 without the kill): partitions silent for "
    "idle_partition_s during the outage no longer hold the watermark; false job-level hangs, "
    "the straggler is missed"
)
INCIDENT_LOST_OVER_DIAGNOSE_RESTART = (
    "trainguard diagnose SIGKILLed at 60 % of the stream and restarted: the straggler incident "
    "an uninterrupted replay detects at 84 s is missing (the first worker had opened none by "
    "144 s; not root-caused)"
)


def _check(run: FaultRun, lost_bug: str | None = None, incidents_bug: str | None = None) -> None:
    assert run.faults_injected > 0, run
    assert run.events_published > 0, run
    assert run.events_duplicated == 0, run.notes
    if run.events_lost and lost_bug:
        pytest.xfail(f"{lost_bug}: {run.events_lost} events lost; {run.notes}")
    assert run.events_lost == 0, run.notes
    if run.incidents_wrong and incidents_bug:
        pytest.xfail(f"{incidents_bug}: {run.incidents_wrong} incidents wrong; {run.notes}")
    assert run.incidents_wrong == 0, run.notes


def test_a_kafka_broker_killed_mid_stream_loses_nothing(services: Services) -> None:
    run = broker_kill(SIZE, clickhouse=(services.clickhouse_host, services.clickhouse_port))
    assert run.incidents_expected == 4
    _check(run, incidents_bug=WRONG_INCIDENTS_AFTER_BROKER_RESTART)


def test_a_diagnosis_worker_killed_mid_stream_gives_the_replays_incidents(
    services: Services,
) -> None:
    run = diagnose_kill(
        SIZE,
        kill_at=0.6,
        services=(services.kafka, services.clickhouse_host, services.clickhouse_port),
    )
    assert run.incidents_expected == 4
    _check(run, incidents_bug=INCIDENT_LOST_OVER_DIAGNOSE_RESTART)


def test_a_sink_killed_mid_batch_stores_the_twins_events_exactly_once(
    services: Services,
) -> None:
    run = sink_kill(
        SIZE, services=(services.kafka, services.clickhouse_host, services.clickhouse_port)
    )
    assert run.faults_injected >= 3
    _check(run, lost_bug=LOST_ROWS_AFTER_SINK_KILL)


def test_a_clickhouse_server_killed_and_frozen_mid_stream_loses_nothing(
    services: Services,
) -> None:
    run = clickhouse_outage(SIZE, kafka=services.kafka)
    assert run.incidents_expected == 4
    _check(run)
