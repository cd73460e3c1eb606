"""Migrations and retention on the real ClickHouse server (18.16) and on chdb."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analytics.migrations import MIGRATIONS, drop_old_partitions, migrate
from analytics.tables import ALL_TABLES
from tests.builders import make_log
from tests.integration.conftest import count

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_migrate_is_idempotent_and_versioned(store_kind, request):
    store = request.getfixturevalue(store_kind)
    assert migrate(store) == []  # the fixture already migrated
    versions = store.query_df(f"SELECT version FROM `{store.database}`.schema_migrations")
    assert sorted(versions["version"].tolist()) == [m.version for m in MIGRATIONS]
    tables = set(
        store.query_df(
            "SELECT name FROM system.tables WHERE database = %(db)s", {"db": store.database}
        )["name"].map(lambda v: v.decode() if isinstance(v, bytes) else v)
    )
    assert {t.name for t in ALL_TABLES} <= tables


def test_server_ddl_is_the_18_16_dialect(server_store):
    ddl = server_store.query_df(f"SHOW CREATE TABLE `{server_store.database}`.gpu_metrics").iloc[
        0, 0
    ]
    assert "LowCardinality" not in ddl
    assert "PARTITION BY toYYYYMMDD(ts)" in ddl


def test_embedded_ddl_uses_the_modern_engine(embedded_store):
    ddl = embedded_store.query_df(
        f"SHOW CREATE TABLE `{embedded_store.database}`.gpu_metrics"
    ).iloc[0, 0]
    assert "LowCardinality(String)" in ddl


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_retention_drops_only_old_day_partitions(store_kind, request):
    from analytics.writer import ClickHouseWriter
    from ingest.bus import Record

    store = request.getfixturevalue(store_kind)
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    old = make_log().model_copy(update={"ts": now - timedelta(days=40), "id": "a" * 32})
    new = make_log().model_copy(update={"ts": now - timedelta(days=1), "id": "b" * 32})
    writer = ClickHouseWriter(store)
    writer.write([(Record("t", 0, i, None, b"", 0), e) for i, e in enumerate((old, new))], [])
    dropped = drop_old_partitions(store, older_than_days=30, now=now)
    assert [d.split(":")[0] for d in dropped] == ["logs"]
    assert count(store, "logs") == (1, 1)
    remaining = store.query_df(f"SELECT event_id FROM `{store.database}`.logs").iloc[0, 0]
    assert (remaining.decode() if isinstance(remaining, bytes) else remaining) == "b" * 32


@pytest.mark.parametrize("store_kind", ["server_store", "embedded_store"])
def test_unencodable_data_is_rejected_not_retried(store_kind, request):
    from analytics.columns import ColumnBatch
    from analytics.store import StoreRejected, StoreUnavailable
    from analytics.tables import LOGS

    store = request.getfixturevalue(store_kind)
    batch = ColumnBatch()
    batch.add_event(make_log(), ("t", 0, 0))
    cols = batch.columns(LOGS)
    cols["seq"] = [2**70]  # beyond UInt64: what a buggy producer could never get past the schema
    with pytest.raises(StoreRejected) as caught:
        store.insert("logs", cols, {c.name: c.type for c in LOGS.columns})
    assert not isinstance(caught.value, StoreUnavailable)
    assert count(store, "logs") == (0, 0)
