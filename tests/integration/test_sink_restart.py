"""The sink across restarts and outages: re-sent events stored once, quick resume.

The outage test runs its own ClickHouse server (deploy/clickhouse.sh on free ports and a
private data directory) so that stopping it disturbs no other test.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from analytics.migrations import migrate
from analytics.store import ServerStore
from analytics.writer import ClickHouseWriter
from ingest.sink import Sink, SinkSettings, retry_delay
from tests.builders import make_gpu_metrics, make_log
from tests.integration.conftest import REPO, count, process_env, wait_for

pytestmark = pytest.mark.integration


def _sink_process(services, topics, store, group: str, log_path: Path) -> subprocess.Popen[bytes]:
    env = process_env(
        services,
        topics,
        store,
        TG_SINK_GROUP=group,
        TG_SINK_INSTANCE_ID="sink-0",
        TG_SINK_BATCH_RECORDS="500",
        TG_SINK_BATCH_SECONDS="0.3",
    )
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "trainguard", "sink"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _lag(bootstrap: str, group: str, topics: list[str]) -> int:
    """Return how many records of the topics the group has not committed yet."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:  # never subscribes: reads the group's commits without joining it
        parts = [
            TopicPartition(t, p) for t in topics for p in consumer.partitions_for_topic(t) or ()
        ]
        ends = consumer.end_offsets(parts)
        return sum(end - (consumer.committed(tp) or 0) for tp, end in ends.items())
    finally:
        consumer.close()


def test_an_event_re_sent_after_a_sink_restart_is_stored_once(
    services, topics, kafka_bus, server_store, tmp_path
):
    group = f"resend-{topics.prefix}"
    logs = [make_log(node=f"n{i % 8}", seq=i, seconds=i / 10) for i in range(3000)]
    scrapes = [make_gpu_metrics(node=f"n{i % 8}", seconds=i) for i in range(200)]
    producer = kafka_bus.producer()
    for event in [*logs, *scrapes]:
        producer.send(event)
    producer.flush()
    log_path = tmp_path / "sink.log"
    proc = _sink_process(services, topics, server_store, group, log_path)
    try:
        wait_for(
            lambda: (
                count(server_store, "logs")[0] >= len(logs)
                and count(server_store, "gpu_metrics")[0] >= 8 * len(scrapes)
            ),
            120,
            "every event stored by the first sink",
        )
    finally:
        proc.send_signal(signal.SIGKILL)  # no goodbye: whatever was not committed is replayed
        proc.wait()
    # Merges would hide duplicates (ReplacingMergeTree): keep every inserted part apart.
    for table in ("logs", "gpu_metrics"):
        server_store.command(f"SYSTEM STOP MERGES `{server_store.database}`.`{table}`")
    # The producers re-send what they are unsure of (same ids, new offsets), then go on.
    fresh = [make_log(node=f"n{i % 8}", seq=10_000 + i, seconds=400 + i) for i in range(100)]
    for event in [*logs[-1500:], *scrapes[-100:], *fresh]:
        producer.send(event)
    producer.close()
    proc = _sink_process(services, topics, server_store, group, log_path)
    try:
        wait_for(
            lambda: _lag(services.kafka, group, topics.telemetry()) == 0,
            120,
            "the restarted sink to commit everything",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert proc.returncode == 0, log_path.read_text()[-3000:]
    total = len(logs) + len(fresh)
    assert count(server_store, "logs") == (total, total), log_path.read_text()[-3000:]
    assert count(server_store, "gpu_metrics") == (8 * len(scrapes), len(scrapes))
    assert "stored before a restart" in log_path.read_text()


# --------------------------------------------------------------------- a quick resume


def test_the_backoff_doubles_up_to_its_cap():
    delays = [retry_delay(a, 0.5, 30.0) for a in range(10)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0]
    assert retry_delay(10_000, 0.5, 30.0) == 30.0  # no overflow after a long outage


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PrivateClickHouse:
    """A ClickHouse server of this test only (deploy/clickhouse.sh, its own ports and data)."""

    port: int
    env: dict[str, str]

    def run(self, action: str) -> None:
        """Start or stop it (start returns once it answers queries)."""
        script = str(REPO / "deploy" / "clickhouse.sh")
        done = subprocess.run(
            ["bash", script, action], env=self.env, capture_output=True, timeout=180
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.fixture
def private_clickhouse(tmp_path: Path) -> Iterator[PrivateClickHouse]:
    port = _free_port()
    http_port = _free_port()
    while http_port == port:
        http_port = _free_port()
    env = {
        **os.environ,
        "TG_SERVICES_DIR": str(tmp_path / "services"),
        "TG_CLICKHOUSE_PORT": str(port),
        "TG_CLICKHOUSE_HTTP_PORT": str(http_port),
    }
    server = PrivateClickHouse(port, env)
    server.run("start")
    try:
        yield server
    finally:
        server.run("stop")


def test_the_sink_resumes_within_a_second_or_two_after_a_long_outage(kafka_bus, private_clickhouse):
    store = ServerStore("127.0.0.1", private_clickhouse.port, "resume", connect_timeout_s=2)
    migrate(store)
    consumer = kafka_bus.consumer(f"{kafka_bus.topics.prefix}resume", kafka_bus.topics.telemetry())
    # Production's backoff (0.5 s doubling to 30 s): without the probe, after 6 failed
    # writes the sink sleeps 16 s whatever the server does meanwhile.
    sink = Sink(consumer, ClickHouseWriter(store), SinkSettings(batch_seconds=0.2))
    stop = threading.Event()
    thread = threading.Thread(target=sink.run, args=(stop,), daemon=True)
    thread.start()
    producer = kafka_bus.producer()

    def send(first: int, n: int) -> None:
        for i in range(first, first + n):
            producer.send(make_log(seq=i, seconds=i / 10))
        producer.flush()

    try:
        send(0, 200)
        wait_for(lambda: sink.stats.events_written >= 200, 60, "the first 200 events stored")
        private_clickhouse.run("stop")
        send(200, 200)
        wait_for(lambda: sink.stats.write_retries >= 6, 60, "six failed writes (16 s backoff)")
        private_clickhouse.run("start")  # returns once `select version()` answers
        back = time.monotonic()
        wait_for(
            lambda: sink.stats.events_written >= 400,
            60,
            "the backlog after the restart",
            step_s=0.02,
        )
        resumed_s = time.monotonic() - back
    finally:
        stop.set()
        thread.join(timeout=30)
        consumer.close()
        producer.close()
    assert not thread.is_alive()
    print(f"\nresumed {resumed_s:.2f} s after ClickHouse answered again")
    assert resumed_s < 10.0  # the store's probe, not the 16 s back-off, brought it back
    assert count(store, "logs") == (400, 400)
    store.close()
