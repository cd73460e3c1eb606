"""The writer's watermarks on the real ClickHouse server: replays after lost acks store nothing
twice, and a new owner waits for the previous owner's INSERT still running on the server."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from clickhouse_driver import Client

from analytics.store import ServerStore, StoreUnavailable
from analytics.writer import ClickHouseWriter
from ingest.bus import Record
from ingest.schema import Event
from ingest.sink import WriterUnavailable
from tests.builders import make_log
from tests.integration.conftest import count

pytestmark = pytest.mark.integration


def _batch(start: int, n: int) -> list[tuple[Record, Event]]:
    return [
        (Record("it.logs", 0, i, None, b"", 0), make_log(seq=i, seconds=i / 10))
        for i in range(start, start + n)
    ]


class AckLost:
    """The real server store, except that the reply of the INSERT after arming never arrives."""

    def __init__(self, store: ServerStore) -> None:
        self.inner = store
        self.database = store.database
        self.armed = False

    def insert(
        self, table: str, columns: Mapping[str, Sequence[Any]], types: Mapping[str, str]
    ) -> None:
        self.inner.insert(table, columns, types)
        if self.armed:
            self.armed = False
            raise StoreUnavailable("connection reset before the server's reply")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_write_applied_but_reported_failed_is_not_stored_twice(server_store):
    store = AckLost(server_store)
    writer = ClickHouseWriter(store)  # type: ignore[arg-type]
    writer.write(_batch(0, 100), [])
    batch = _batch(100, 100)
    store.armed = True
    with pytest.raises(WriterUnavailable, match="connection reset"):
        writer.write(batch, [])
    assert writer.write(batch, []) == 0  # the retry re-reads the watermark: all stored already
    assert writer.write(_batch(200, 50), []) == 50
    assert count(server_store, "logs") == (250, 250)


def test_a_new_owner_waits_for_the_running_insert_of_the_previous_one(services, server_store):
    """A slow INSERT stands for a killed sink's last block, still being applied by the server."""
    writer = ClickHouseWriter(server_store)
    writer.write(_batch(0, 10), [])
    other = Client(services.clickhouse_host, port=services.clickhouse_port)
    db = server_store.database
    # sleepEachRow keeps the INSERT running on the server for ~2 s; its rows carry offsets 10..19
    slow = threading.Thread(
        target=other.execute,
        args=(
            f"INSERT INTO `{db}`.logs (event_id, ts, node, source, seq, line, "
            f"src_topic, src_partition, src_offset) "
            f"SELECT concat('slow', toString(number)), toDateTime('2026-11-30 00:00:00'), "
            f"'n0', 'kern', number, 'x', 'it.logs', 0, 10 + number + sleepEachRow(0.2) "
            f"FROM system.numbers LIMIT 10",
        ),
    )
    slow.start()
    deadline = time.monotonic() + 10
    seen = server_store.running_inserts()  # kept: asked again, the INSERT may have ended
    while not seen and time.monotonic() < deadline:
        time.sleep(0.02)
        seen = server_store.running_inserts()
    assert seen, "the slow INSERT never showed up as running"
    fresh = ClickHouseWriter(server_store)  # a new owner of partition 0 after a restart
    written = fresh.write(_batch(10, 15), [])  # replays 10..19 (stored by the slow INSERT)
    slow.join()
    other.disconnect()
    assert written == 5
    assert count(server_store, "logs")[0] == 25
