"""Cluster mode of the store on a real ClickHouse cluster: ZooKeeper and 2 shards x 2 replicas of
ClickHouse 18.16 on loopback, started by deploy/clickhouse_cluster.sh for this module only.

Migrations create Replicated + Distributed tables on every server, once; the writer stores every
event exactly once through the Distributed tables across shards, re-sends and writer restarts;
with a replica down, writes wait (quorum) while reads go on, and once it is back every replica
holds every row.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clickhouse_driver import Client

from analytics.migrations import MIGRATIONS, drop_old_partitions, migrate
from analytics.store import ServerStore
from analytics.tables import ALL_TABLES
from analytics.writer import ClickHouseWriter
from ingest.bus import Record
from ingest.schema import Event
from ingest.sink import WriterUnavailable
from tests.builders import make_log
from tests.integration.conftest import REPO as ROOT
from tests.integration.conftest import count, process_env, wait_for
from tests.integration.test_sink_restart import _lag

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPT = ROOT / "deploy" / "clickhouse_cluster.sh"
SERVERS = ("s1r1", "s1r2", "s2r1", "s2r2")
TOPIC = "it.cluster.logs"


@dataclass(frozen=True)
class Cluster:
    """A running local cluster: its name, native ports by server, and the script's env."""

    name: str
    ports: dict[str, int]
    env: dict[str, str]

    def script(self, *args: str) -> None:
        """Run deploy/clickhouse_cluster.sh with this cluster's environment."""
        done = subprocess.run(
            ["bash", str(SCRIPT), *args], env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"clickhouse_cluster.sh {' '.join(args)}:\n{done.stderr}"

    def server(self, name: str, database: str) -> ServerStore:
        """Return a single-server view of one server (its local tables)."""
        return ServerStore("127.0.0.1", self.ports[name], database)


def _free(base: int) -> bool:
    for port in range(base, base + 34):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return False
    return True


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Start ZooKeeper + 4 ClickHouse servers in a directory of this module; stop them after."""
    base = next(b for b in random.sample(range(21000, 29000, 40), 50) if _free(b))
    env = {
        **os.environ,
        "TG_SERVICES_DIR": str(tmp_path_factory.mktemp("chcluster")),
        "TG_CH_CLUSTER_BASE_PORT": str(base),
    }
    found = Cluster("tg", {}, env)
    try:
        found.script("start")
        text = (Path(env["TG_SERVICES_DIR"]) / "chcluster" / "env").read_text()
        written = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        assert written["TG_CLICKHOUSE_CLUSTER"] == found.name
        ports = map(int, written["TG_CH_CLUSTER_PORTS"].split(","))
        yield Cluster(found.name, dict(zip(SERVERS, ports, strict=True)), env)
    finally:
        found.script("stop")
        pids = list(Path(env["TG_SERVICES_DIR"]).rglob("*.pid"))
        assert not pids, f"processes left behind: {pids}"


@pytest.fixture
def store(cluster: Cluster) -> Iterator[ServerStore]:
    """Return a migrated database of this test, entered through s2r1; dropped after."""
    db = f"it_{uuid.uuid4().hex[:10]}"
    entry = ServerStore(
        "127.0.0.1", cluster.ports["s2r1"], db, cluster=cluster.name, insert_quorum=2
    )
    migrate(entry)
    yield entry
    entry.command(f"DROP DATABASE IF EXISTS `{db}` ON CLUSTER `{cluster.name}`")
    entry.close()


def _batch(start: int, n: int, partitions: int = 8) -> list[tuple[Record, Event]]:
    """Return n log events spread over `partitions` partitions, offsets counting per partition."""
    return [
        (
            Record(TOPIC, i % partitions, i // partitions, None, b"", 0),
            make_log(node=f"n{i % partitions}", seq=i, seconds=i / 10),
        )
        for i in range(start, start + n)
    ]


def _local(cluster: Cluster, store: ServerStore, server: str) -> tuple[int, int]:
    return count(cluster.server(server, store.database), "logs_local")


def test_migrate_creates_every_table_on_every_server_once(cluster, store):
    assert migrate(store) == []  # the fixture applied everything: the second run does nothing
    applied = store.query_df(f"SELECT version FROM `{store.database}`.schema_migrations")
    assert sorted(applied["version"]) == [m.version for m in MIGRATIONS]
    names = {t.name for t in ALL_TABLES} | {"incidents", "action_state", "schema_migrations"}
    for server in SERVERS:
        one = cluster.server(server, store.database)
        tables = one.query_df(
            "SELECT name, engine, engine_full FROM system.tables WHERE database = %(db)s",
            {"db": store.database},
        )
        engines = dict(zip(tables["name"], tables["engine"], strict=True))
        for name in names:
            assert engines[name] == "Distributed", (server, name)
            assert engines[f"{name}_local"].startswith("Replicated"), (server, name)
        full = dict(zip(tables["name"], tables["engine_full"], strict=True))
        # a ReplacingMergeTree stays replacing, on the same version column
        assert full["incidents_local"].startswith("ReplicatedReplacingMergeTree(")
        assert "revision" in full["incidents_local"]
        assert full["action_state_local"].startswith("ReplicatedMergeTree(")
        # the migrations table is replicated too: every server sees the applied versions
        assert len(
            one.query_df(f"SELECT version FROM `{store.database}`.schema_migrations")
        ) == len(MIGRATIONS)


def test_each_event_is_stored_once_across_shards_resends_and_restarts(cluster, store):
    writer = ClickHouseWriter(store)
    batch = _batch(0, 400)
    assert writer.write(batch, []) == 400
    assert count(store, "logs") == (400, 400)
    shards = [_local(cluster, store, s) for s in SERVERS]
    assert shards[0] == shards[1] and shards[2] == shards[3]  # quorum: both replicas hold it
    assert shards[0][0] > 0 and shards[2][0] > 0  # both shards got rows
    assert shards[0][0] + shards[2][0] == 400

    restarted = ClickHouseWriter(store)  # a new owner: watermarks read through the cluster
    assert restarted.write(batch, []) == 0
    # the same events re-sent by their producers, at new offsets of the same partitions
    resent = [(Record(TOPIC, r.partition, r.offset + 1000, None, b"", 0), e) for r, e in batch[:80]]
    assert ClickHouseWriter(store).write(resent, []) == 0
    assert count(store, "logs") == (400, 400)


def test_a_stopped_replica_holds_writes_back_and_catches_up(cluster, store):
    writer = ClickHouseWriter(store)
    assert writer.write(_batch(0, 200), []) == 200
    cluster.script("stop", "s1r2")
    try:
        more = _batch(200, 200)
        # shard 1 has one replica left: fewer than the quorum, so the write is refused and
        # retried later; shard 2 may have stored its part of the batch meanwhile
        with pytest.raises(WriterUnavailable, match="quorum"):
            writer.write(more, [])
        assert count(store, "logs")[0] >= 200  # reads go on, from the live replica
        assert migrate(store) == []  # a sink starting now needs no DDL (ON CLUSTER would wait)
    finally:
        cluster.script("start", "s1r2")
    written = _retry(writer, more)
    assert 0 < written <= 200  # rows shard 2 stored before are not written again
    assert count(store, "logs") == (400, 400)
    first, second = _local(cluster, store, "s1r1"), _local(cluster, store, "s1r2")
    assert first == second and first[0] > 0
    assert _local(cluster, store, "s2r1") == _local(cluster, store, "s2r2")


def test_a_new_owner_waits_for_an_insert_running_on_another_server(cluster, store):
    """A slow INSERT sent to s1r1 stands for a killed sink's last block; the new owner enters
    through s2r1, so only a cluster-wide look at running INSERTs sees it."""
    writer = ClickHouseWriter(store)
    assert writer.write(_batch(0, 10, partitions=1), []) == 10
    other = Client(
        "127.0.0.1",
        port=cluster.ports["s1r1"],
        settings={"insert_distributed_sync": 1, "insert_quorum": 2},
    )
    # sleepEachRow keeps the INSERT running for ~2 s; its rows carry offsets 10..19
    slow = threading.Thread(
        target=other.execute,
        args=(
            f"INSERT INTO `{store.database}`.logs (event_id, ts, node, source, seq, line, "
            f"src_topic, src_partition, src_offset) "
            f"SELECT concat('slow', toString(number)), toDateTime('2026-11-30 00:00:00'), "
            f"'n0', 'kern', number, 'x', '{TOPIC}', 0, 10 + number + sleepEachRow(0.2) "
            f"FROM system.numbers LIMIT 10",
        ),
    )
    slow.start()
    try:
        deadline = time.monotonic() + 10
        seen = store.running_inserts()  # kept: asked again, the INSERT may have ended
        while not seen and time.monotonic() < deadline:
            time.sleep(0.02)
            seen = store.running_inserts()
        assert seen, "the slow INSERT on s1r1 never showed up as running"
        fresh = ClickHouseWriter(store)  # a new owner of partition 0 after a restart
        written = fresh.write(_batch(10, 15, partitions=1), [])  # replays offsets 10..19
    finally:
        slow.join()
        other.disconnect()
    assert written == 5
    assert count(store, "logs")[0] == 25


def test_retention_drops_old_partitions_on_every_shard_and_replica(cluster, store):
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    events = [
        (
            Record(TOPIC, p, age, None, b"", 0),
            make_log(node=f"n{p}", seq=p).model_copy(
                update={"ts": now - timedelta(days=40 if age == 0 else 1), "id": f"{p}{age}" * 16}
            ),
        )
        for p in range(8)
        for age in (0, 1)
    ]
    assert ClickHouseWriter(store).write(events, []) == 16
    assert all(_local(cluster, store, s)[0] > 0 for s in SERVERS)
    dropped = drop_old_partitions(store, older_than_days=30, now=now)
    # one ALTER ... ON CLUSTER per old day, run by every server on its own shard's part
    assert dropped == [f"logs:{(now - timedelta(days=40)):%Y%m%d}"]
    assert count(store, "logs") == (8, 8)
    kept = store.query_df(f"SELECT min(ts) AS t FROM `{store.database}`.logs").iloc[0, 0]
    assert kept >= (now - timedelta(days=2)).replace(tzinfo=None)
    assert _local(cluster, store, "s1r1") == _local(cluster, store, "s1r2")
    assert _local(cluster, store, "s2r1") == _local(cluster, store, "s2r2")


def _retry(writer: ClickHouseWriter, batch: list[tuple[Record, Event]]) -> int:
    """Write as the sink does: retry while the restarted replica rejoins (a few seconds)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return writer.write(batch, [])
        except WriterUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _sink(services, topics, store, cluster: Cluster, log_path: Path) -> subprocess.Popen[bytes]:
    """Start `trainguard sink` on this test's topics, into the cluster through s2r1."""
    env = process_env(
        services,
        topics,
        store,
        TG_CLICKHOUSE_PORT=str(cluster.ports["s2r1"]),
        TG_CLICKHOUSE_CLUSTER=cluster.name,
        TG_CLICKHOUSE_INSERT_QUORUM="2",
        TG_SINK_GROUP=f"cluster-{topics.prefix}",
        TG_SINK_BATCH_RECORDS="500",
        TG_SINK_BATCH_SECONDS="0.3",
        TG_SINK_RETRY_MAX_S="2",
    )
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "trainguard", "sink"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def test_the_sink_process_stores_once_through_a_killed_sink_and_a_stopped_replica(
    services, topics, kafka_bus, cluster, store, tmp_path
):
    logs = [make_log(node=f"n{i % 8}", seq=i, seconds=i / 10) for i in range(2000)]
    producer = kafka_bus.producer()
    for event in logs:
        producer.send(event)
    producer.flush()
    log_path = tmp_path / "sink.log"
    proc = _sink(services, topics, store, cluster, log_path)
    try:
        wait_for(lambda: count(store, "logs")[0] >= len(logs), 120, "the first sink's rows")
    finally:
        proc.send_signal(signal.SIGKILL)  # no goodbye: whatever was not committed is replayed
        proc.wait()
    # merges would hide duplicates (ReplacingMergeTree): keep every inserted part apart
    for server in SERVERS:
        cluster.server(server, store.database).command(
            f"SYSTEM STOP MERGES `{store.database}`.`logs_local`"
        )
    cluster.script("stop", "s1r2")
    # the producers re-send what they are unsure of (same ids, new offsets), then go on
    fresh = [make_log(node=f"n{i % 8}", seq=10_000 + i, seconds=400 + i) for i in range(100)]
    for event in [*logs[-1000:], *fresh]:
        producer.send(event)
    producer.close()
    proc = _sink(services, topics, store, cluster, log_path)
    try:
        # the restarted sink meets a shard short of its quorum, and waits
        wait_for(lambda: "quorum" in log_path.read_text(), 90, "a write held back by the quorum")
        cluster.script("start", "s1r2")
        wait_for(
            lambda: _lag(services.kafka, f"cluster-{topics.prefix}", topics.telemetry()) == 0,
            120,
            "the restarted sink to commit everything",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    text = log_path.read_text()
    assert proc.returncode == 0, text[-3000:]
    total = len(logs) + len(fresh)
    assert count(store, "logs") == (total, total), text[-3000:]
    assert _local(cluster, store, "s1r1") == _local(cluster, store, "s1r2")
    assert _local(cluster, store, "s2r1") == _local(cluster, store, "s2r2")
