"""Migrations and retention on the real ClickHouse server (18.16) and on chdb."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analytics.migrations import MIGRATIONS, drop_old_partitions, migrate, record_applied
from analytics.store import EmbeddedStore, ServerStore
from analytics.tables import ALL_TABLES, Features
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


def _at_version(store, version: int) -> None:
    """Build the database as a release whose newest migration was `version` left it."""
    features = Features.for_version(store.version())
    store.command(f"CREATE DATABASE IF NOT EXISTS `{store.database}`")
    store.command(
        f"CREATE TABLE IF NOT EXISTS `{store.database}`.schema_migrations "
        "(version UInt32, name String, applied DateTime) "
        "ENGINE = ReplacingMergeTree() ORDER BY version"
    )
    steps = tuple(m for m in MIGRATIONS if m.version <= version)
    for migration in steps:
        for sql in migration.statements(store.database, features, None):
            store.command(sql)
    record_applied(store, steps)


def _columns(store, table: str) -> list[str]:
    names = store.query_df(
        "SELECT name FROM system.columns WHERE database = %(db)s AND table = %(t)s",
        {"db": store.database, "t": table},
    )["name"]
    return sorted(v.decode() if isinstance(v, bytes) else v for v in names)


@pytest.mark.parametrize("kind", ["server", "embedded"])
def test_an_old_database_is_upgraded_by_the_steps_it_lacks_to_the_fresh_schema(
    kind, services, tmp_path, unique
):
    def open_store(name):
        if kind == "server":
            return ServerStore(services.clickhouse_host, services.clickhouse_port, name)
        return EmbeddedStore(str(tmp_path / "chdb"), name)

    old, fresh = open_store(f"it_old_{unique}"), open_store(f"it_new_{unique}")
    try:
        first_column_step = min(
            m.version
            for m in MIGRATIONS
            if m.statements("db", Features(), None)[:1]
            and m.statements("db", Features(), None)[0].startswith("ALTER")
        )
        _at_version(old, first_column_step - 1)
        assert migrate(old) == [m.version for m in MIGRATIONS if m.version >= first_column_step]
        assert migrate(fresh) == [m.version for m in MIGRATIONS]  # created whole
        for table in ("gpu_metrics", "incidents", "action_state"):
            assert _columns(old, table) == _columns(fresh, table), table
    finally:
        for store in (old, fresh):
            store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
            store.close()


def test_a_fresh_migration_stopped_before_its_record_is_fresh_again(services, unique):
    store = ServerStore(services.clickhouse_host, services.clickhouse_port, f"it_{unique}")
    try:
        newest = MIGRATIONS[-1].version
        features = Features.for_version(store.version())
        store.command(f"CREATE DATABASE IF NOT EXISTS `{store.database}`")
        for migration in MIGRATIONS:  # every table, at the newest schema, and no record
            for sql in migration.statements(store.database, features, None, baseline=newest):
                store.command(sql)
        assert migrate(store) == [m.version for m in MIGRATIONS]
        assert "cluster" in _columns(store, "action_state")
        assert migrate(store) == []
    finally:
        store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
        store.close()
