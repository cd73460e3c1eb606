"""Crashes and outages lose nothing and store nothing twice (real Kafka, real ClickHouse)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest

from analytics.writer import ClickHouseWriter
from ingest.sink import Sink, SinkSettings
from tests.builders import make_gpu_metrics, make_log
from tests.integration.conftest import REPO, count, process_env, wait_for

pytestmark = pytest.mark.integration


def _sink_process(services, topics, store, log_path) -> subprocess.Popen[bytes]:
    env = process_env(
        services,
        topics,
        store,
        TG_SINK_GROUP=f"crashy-{topics.prefix}",
        TG_SINK_INSTANCE_ID="sink-0",
        TG_SINK_BATCH_RECORDS="1500",
        TG_SINK_BATCH_SECONDS="0.3",
    )
    log = open(log_path, "ab")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        [sys.executable, "-m", "trainguard", "sink"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def test_sink_killed_mid_batch_stores_every_event_exactly_once(
    services, topics, kafka_bus, server_store, tmp_path
):
    logs, scrapes = 12_000, 1_500
    producer = kafka_bus.producer()
    for i in range(logs):
        producer.send(make_log(node=f"n{i % 16}", seq=i, seconds=i / 100))
    for i in range(scrapes):
        producer.send(make_gpu_metrics(node=f"n{i % 16}", seconds=i))
    producer.flush()
    log_path = tmp_path / "sink.log"
    total_rows = logs + scrapes * 8

    def stored() -> int:
        return count(server_store, "logs")[0] + count(server_store, "gpu_metrics")[0]

    kills = 0
    for fraction in (0.15, 0.45, 0.75):
        proc = _sink_process(services, topics, server_store, log_path)
        wait_for(
            lambda f=fraction, p=proc: stored() >= f * total_rows or p.poll() is not None,
            120,
            f"{fraction:.0%} of rows stored",
            step_s=0.05,
        )
        assert proc.poll() is None, log_path.read_text()[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
    proc = _sink_process(services, topics, server_store, log_path)
    try:
        wait_for(lambda: stored() >= total_rows, 120, "all rows stored")
        time.sleep(2)  # anything stored twice would show up now
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert kills == 3
    assert count(server_store, "logs") == (logs, logs), _twice(server_store, log_path)
    assert count(server_store, "gpu_metrics") == (scrapes * 8, scrapes)


def _twice(store, log_path) -> str:
    """Say which Kafka positions were stored twice, and what the sinks logged."""
    frame = store.query_df(
        f"SELECT src_partition, min(src_offset) AS first, max(src_offset) AS last, count() AS n "
        f"FROM (SELECT src_partition, src_offset FROM `{store.database}`.logs "
        f"GROUP BY src_partition, src_offset HAVING count() > 1) GROUP BY src_partition"
    )
    sink_log = log_path.read_text()[-4000:]
    return f"positions stored twice:\n{frame.to_string()}\nsink log:\n{sink_log}"


def test_clickhouse_outage_during_ingest_loses_nothing(kafka_bus, server_store):
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}outage", kafka_bus.topics.telemetry())
    sink = Sink(
        consumer,
        ClickHouseWriter(server_store),
        SinkSettings(batch_seconds=0.2, retry_initial_s=0.2, retry_max_s=1.0),
    )
    stop = threading.Event()
    thread = threading.Thread(target=sink.run, args=(stop,), daemon=True)
    thread.start()
    producer = kafka_bus.producer()
    sent = 0

    def send(n: int) -> None:
        nonlocal sent
        for _ in range(n):
            producer.send(make_log(seq=sent, seconds=sent / 10))
            sent += 1
        producer.flush()

    clickhouse = ["bash", str(REPO / "deploy" / "clickhouse.sh")]
    try:
        send(500)
        wait_for(lambda: sink.stats.events_written >= 500, 60, "first 500 events stored")
        subprocess.run([*clickhouse, "stop"], check=True, capture_output=True, timeout=120)
        send(500)
        wait_for(lambda: not sink.stats.store_up, 60, "the sink to notice ClickHouse is down")
        send(500)
        assert sink.stats.events_written < 1500
        retries_during_outage = sink.stats.write_retries
    finally:
        subprocess.run([*clickhouse, "start"], check=True, capture_output=True, timeout=180)
    wait_for(lambda: sink.stats.events_written >= 1500, 120, "the backlog after ClickHouse restart")
    stop.set()
    thread.join(timeout=30)
    consumer.close()
    assert thread.is_alive() is False
    assert retries_during_outage >= 1
    assert sink.stats.store_up
    assert count(server_store, "logs") == (1500, 1500)
