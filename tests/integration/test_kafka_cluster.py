"""A real 3-broker KRaft cluster (deploy/kafka_cluster.sh): RF 3, min ISR 2, a broker killed.

The cluster runs in this test's directory on free ports and is stopped afterwards (every
node's JVM, the killed one's restart included). The topics come from `trainguard topics
create`, the only way TrainGuard creates topics.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from ingest.bus import BusError, TopicFamily, TopicPartition, Topics
from ingest.kafka_bus import KafkaBus
from ingest.schema import decode_event
from ingest.topics import TopicAdmin
from tests.builders import make_step
from tests.integration.cluster_helpers import ephemeral_low
from tests.integration.conftest import wait_for

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "kafka_cluster.sh"
NODES = 3

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Cluster:
    """A started cluster: its bootstrap list and how to run the script on it."""

    bootstrap: str
    env: dict[str, str]
    directory: Path

    def script(self, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
        """Run deploy/kafka_cluster.sh on this cluster; fail the test if it fails."""
        done = subprocess.run(
            ["bash", str(SCRIPT), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        assert done.returncode == 0, f"kafka_cluster.sh {' '.join(args)}:\n{done.stderr}"
        return done

    def pids(self) -> list[int]:
        """Return the live node pids recorded by the script (killed nodes excluded)."""
        alive = []
        for n in range(1, NODES + 1):
            pidfile = self.directory / "kafka-cluster" / f"node{n}" / "kafka.pid"
            if not pidfile.exists():
                continue
            text = pidfile.read_text().strip()
            cmdline = Path(f"/proc/{text}/cmdline")
            if text.isdigit() and cmdline.exists() and str(self.directory) in cmdline.read_text():
                alive.append(int(text))
        return alive


def _free_block(size: int) -> int:
    """Return the first of `size` consecutive ports that are free on loopback now."""
    for _ in range(200):
        base = random.randint(21_000, ephemeral_low() - size)  # below outgoing connections
        socks = []
        try:
            for port in range(base, base + size):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.fail("no block of free ports found")


def _libs_root() -> str:
    """Where the single broker's jars are cached, so the cluster does not resolve them again."""
    if os.environ.get("TG_KAFKA_LIBS_ROOT"):
        return os.environ["TG_KAFKA_LIBS_ROOT"]
    services = os.environ.get("TG_SERVICES_DIR") or str(REPO / "deploy" / ".local")
    return str(Path(services).resolve() / "kafka")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Start a 3-node cluster in this test's directory; stop every node afterwards."""
    base = _free_block(2 * NODES)
    env = {
        **os.environ,
        "TG_SERVICES_DIR": str(tmp_path),
        "TG_KAFKA_LIBS_ROOT": _libs_root(),
        "TG_KAFKA_CLUSTER_PORT": str(base),
        "TG_KAFKA_CLUSTER_CONTROLLER_PORT": str(base + NODES),
        "TG_KAFKA_START_TIMEOUT": "240",
        "TG_PYTHON": sys.executable,
    }
    started = Cluster(",".join(f"127.0.0.1:{base + i}" for i in range(NODES)), env, tmp_path)
    try:
        started.script("start", timeout_s=600)
        yield started
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, timeout=300, check=False)
        for pid in started.pids():  # only if stop failed: never leave a JVM behind
            os.kill(pid, 9)
        assert started.pids() == [], "a broker survived the cluster stop"


class Collector(threading.Thread):
    """A consumer-group member reading event ids until stopped (commits after each poll)."""

    def __init__(self, bus: KafkaBus, topic: str, group: str) -> None:
        super().__init__(daemon=True)
        self.consumer = bus.consumer(group, [topic], session_timeout_s=10)
        self.ids: list[str] = []
        self.errors: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                try:
                    records = self.consumer.poll(500, 0.5)
                except BusError as exc:  # a failed poll during failover: noted, then retried
                    self.errors.append(repr(exc))
                    continue
                self.ids.extend(decode_event(r.value).id for r in records)
                if records:
                    last: dict[TopicPartition, int] = {}
                    for r in records:
                        last[r.tp] = r.offset + 1
                    try:
                        self.consumer.commit(last)
                    except BusError as exc:
                        self.errors.append(repr(exc))
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=60)


def _topics_cli(cluster: Cluster, topics: Topics, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "TG_KAFKA_MODE": "kafka",
        "TG_KAFKA_BOOTSTRAP": cluster.bootstrap,
        "TG_KAFKA_TOPIC_PREFIX": topics.prefix,
        "TG_KAFKA_REPLICATION_FACTOR": "3",
        "TG_KAFKA_PARTITIONS": "3",
    }
    return subprocess.run(
        [sys.executable, "-m", "trainguard", "topics", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_cluster_keeps_every_event_once_when_a_broker_dies(cluster: Cluster) -> None:
    topics = Topics("cl.")
    train_topic = topics.topic(TopicFamily.TRAIN)
    created = _topics_cli(cluster, topics, "create")
    assert created.returncode == 0, created.stderr
    assert "created cl.metrics" in created.stdout

    with TopicAdmin(cluster.bootstrap) as admin:
        assert admin.brokers() == NODES
        (train,) = admin.describe([train_topic])
    assert (train.partitions, train.replication, train.min_isr_seen) == (3, 3, 3)
    assert train.configs["min.insync.replicas"] == "2"
    admin_client = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        brokers = admin_client.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", ["auto.create.topics.enable"])],
            config_filter="all",
        )["broker"]["1"]
    finally:
        admin_client.close()
    assert brokers["auto.create.topics.enable"]["value"] == "false"

    bus = KafkaBus(cluster.bootstrap, topics, linger_ms=5)
    collector = Collector(bus, train_topic, "cluster-test")
    collector.start()
    producer = bus.producer()
    sent: list[str] = []

    def produce(first: int, n: int) -> None:
        for step in range(first, first + n):
            event = make_step(job=f"job-{step % 7}", step=step)
            producer.send(event)
            sent.append(event.id)
        producer.flush(timeout_s=180)

    try:
        produce(1, 1500)
        cluster.script("kill-node", "1")  # the first bootstrap server, a partition leader
        produce(1501, 1500)  # acks=all: the two live replicas of each partition take it
        wait_for(lambda: len(set(collector.ids)) >= 3000, 180, "consumption with broker 1 down")
        cluster.script("start-node", "1")
        produce(3001, 1000)
        wait_for(lambda: len(set(collector.ids)) >= len(sent), 240, "every event consumed")
    finally:
        producer.close()
        collector.stop()

    assert set(collector.ids) == set(sent)
    assert len(set(sent)) == len(sent) == 4000

    # The log itself holds each event exactly once: as many records as events sent (no
    # producer retry doubled one), and a fresh group reads every id once.
    ends = KafkaConsumer(bootstrap_servers=cluster.bootstrap)
    try:
        partitions = [KafkaTopicPartition(train_topic, p) for p in range(3)]
        assert sum(ends.end_offsets(partitions).values()) == len(sent)
    finally:
        ends.close()
    fresh = Collector(bus, train_topic, "cluster-audit")
    fresh.start()
    try:
        wait_for(lambda: len(fresh.ids) >= len(sent), 120, "the audit read")
    finally:
        fresh.stop()
    counts = Counter(fresh.ids)
    assert [i for i, c in counts.items() if c > 1] == []
    assert set(counts) == set(sent)

    with TopicAdmin(cluster.bootstrap) as admin:
        wait_for(
            lambda: admin.describe([train_topic])[0].min_isr_seen == 3,
            120,
            "the restarted broker back in sync",
            step_s=1,
        )
