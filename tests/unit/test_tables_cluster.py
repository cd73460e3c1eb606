"""Cluster DDL (Replicated + Distributed, ON CLUSTER) and its settings; one-server DDL unchanged."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from analytics.action_tables import ACTION_CLUSTER_MIGRATION, ACTION_STATE
from analytics.incident_tables import INCIDENT_STATE, INCIDENTS
from analytics.migrations import MIGRATIONS, REPLICA_TABLES_MIGRATION
from analytics.store import cluster_settings
from analytics.tables import ALL_TABLES, CLUSTER_MODE_SINCE, LOGS, Column, Features, Table
from trainguard.settings import StoreSettings

OLD = Features.for_version((18, 16, 1))
CLUSTER = OLD.on_cluster("tg")


def test_one_server_ddl_is_unchanged():
    assert INCIDENT_STATE.create("db", OLD) == [
        "CREATE TABLE IF NOT EXISTS `db`.`incident_state` (\n"
        "  `id` String,\n  `revision` UInt32,\n  `last_seen` DateTime,\n  `state` String\n)\n"
        "ENGINE = ReplacingMergeTree(`revision`)\nPARTITION BY toYYYYMM(last_seen)\nORDER BY (id)"
    ]


@pytest.mark.parametrize("migration", MIGRATIONS, ids=lambda m: m.name)
def test_one_server_migrations_know_nothing_of_clusters(migration):
    for sql in migration.statements("db", OLD, 30):
        for word in ("ON CLUSTER", "Replicated", "Distributed", "_local`"):
            assert word not in sql


@pytest.mark.parametrize("migration", MIGRATIONS, ids=lambda m: m.name)
def test_cluster_migrations_run_every_statement_on_the_cluster(migration):
    statements = migration.statements("db", CLUSTER, 30)
    if migration.version == REPLICA_TABLES_MIGRATION:  # one ordered log on one server
        assert all("ON CLUSTER" not in sql for sql in statements)
        return
    if migration.version <= CLUSTER_MODE_SINCE and not statements:
        return  # columns cluster mode creates its tables with (see Table.add_columns)
    if statements and statements[0].startswith("ALTER TABLE"):  # a later column
        assert len(statements) % 3 == 0  # ALTER the local table, renew the Distributed one
        for alter, drop, distributed in zip(*(statements[i::3] for i in range(3)), strict=True):
            assert "_local` ON CLUSTER `tg` ADD COLUMN" in alter
            assert drop.startswith("DROP TABLE IF EXISTS") and " ON CLUSTER `tg`" in drop
            assert " ON CLUSTER `tg` " in distributed and "ENGINE = Distributed(`tg`" in distributed
        return
    assert statements and len(statements) % 2 == 0  # a local and a Distributed table each
    for local, distributed in zip(statements[::2], statements[1::2], strict=True):
        assert " ON CLUSTER `tg` " in local and "ENGINE = Replicated" in local
        assert " ON CLUSTER `tg` " in distributed and "ENGINE = Distributed(`tg`" in distributed


def test_a_replacing_table_stays_replacing_on_its_version_column():
    local, distributed = INCIDENTS.create("db", CLUSTER)
    assert local.startswith("CREATE TABLE IF NOT EXISTS `db`.`incidents_local` ON CLUSTER `tg` (")
    assert (
        "ENGINE = ReplicatedReplacingMergeTree("
        "'/clickhouse/tg/tables/{shard}/db/incidents', '{replica}', `revision`)" in local
    )
    # every revision of an incident lands on the shard of its id, where it is replaced
    assert distributed == (
        "CREATE TABLE IF NOT EXISTS `db`.`incidents` ON CLUSTER `tg` AS `db`.`incidents_local` "
        "ENGINE = Distributed(`tg`, `db`, `incidents_local`, cityHash64(`id`))"
    )


@pytest.mark.parametrize("table", ALL_TABLES, ids=lambda t: t.name)
def test_rows_from_kafka_are_sharded_by_their_partition(table):
    # one partition's rows on one shard: the writer's watermark of it is read from one shard
    assert table.shard_by == ("src_topic", "src_partition")


def test_tables_without_a_version_column_replicate_without_one():
    logs = LOGS.create("db", CLUSTER)[0]  # replacing on the whole row, no version column
    assert (
        "ENGINE = ReplicatedReplacingMergeTree("
        "'/clickhouse/tg/tables/{shard}/db/logs', '{replica}')\n" in logs
    )
    state = ACTION_STATE.create("db", CLUSTER)[0]  # append-only, read with argMax
    assert (
        "ENGINE = ReplicatedMergeTree("
        "'/clickhouse/tg/tables/{shard}/db/action_state', '{replica}')\n" in state
    )


def test_cluster_settings_make_inserts_synchronous_and_quorum_acknowledged():
    assert cluster_settings(0) == {"insert_distributed_sync": 1}
    assert cluster_settings(2) == {"insert_distributed_sync": 1, "insert_quorum": 2}


def test_cluster_setting_is_a_plain_name(monkeypatch):
    monkeypatch.setenv("TG_CLICKHOUSE_CLUSTER", "tg_prod")
    assert StoreSettings().cluster == "tg_prod"
    monkeypatch.setenv("TG_CLICKHOUSE_CLUSTER", "tg`; DROP")
    with pytest.raises(ValidationError):
        StoreSettings()
    monkeypatch.delenv("TG_CLICKHOUSE_CLUSTER")
    assert StoreSettings().cluster == ""


def test_a_later_column_in_a_cluster_goes_to_the_local_table_and_renews_the_distributed_one():
    later = CLUSTER_MODE_SINCE + 1
    table = Table(
        "t",
        (Column("id", "String"), Column("ts", "DateTime"), Column("extra", "String", since=later)),
        order_by=("id",),
    )
    add, drop, create = table.add_columns("db", CLUSTER, later)
    assert add == "ALTER TABLE `db`.`t_local` ON CLUSTER `tg` ADD COLUMN `extra` String"
    assert drop == "DROP TABLE IF EXISTS `db`.`t` ON CLUSTER `tg`"
    assert create.startswith(
        "CREATE TABLE IF NOT EXISTS `db`.`t` ON CLUSTER `tg` AS `db`.`t_local`"
    )
    # the columns cluster mode starts with need no ALTER at all
    assert table.add_columns("db", CLUSTER, CLUSTER_MODE_SINCE) == []


def test_a_later_key_column_in_a_cluster_is_refused_with_the_reason():
    later = CLUSTER_MODE_SINCE + 1
    table = Table(
        "t",
        (Column("id", "String"), Column("ts", "DateTime"), Column("k", "String", since=later)),
        order_by=("id", "k"),
    )
    with pytest.raises(ValueError, match="cannot do ON CLUSTER"):
        table.add_columns("db", CLUSTER, later)


@pytest.mark.parametrize("features", [OLD, CLUSTER], ids=["one_server", "cluster"])
def test_a_fresh_database_is_created_whole_without_one_alter(features):
    newest = MIGRATIONS[-1].version
    statements = [
        sql for m in MIGRATIONS for sql in m.statements("db", features, 30, baseline=newest)
    ]
    assert statements and not [sql for sql in statements if sql.startswith("ALTER")]
    # every column of every table is in its CREATE, the later ones included
    for table in (*ALL_TABLES, ACTION_STATE, INCIDENTS):
        head = f"CREATE TABLE IF NOT EXISTS `db`.`{table.local_name(features)}`"
        (create,) = [sql for sql in statements if sql.startswith(head + " ")]
        for column in table.columns:
            assert f"`{column.name}` " in create, (table.name, column.name)


def test_an_existing_database_moves_on_by_the_steps_it_lacks():
    (step,) = [m for m in MIGRATIONS if m.version == ACTION_CLUSTER_MIGRATION]
    assert step.statements("db", CLUSTER, 30)[0].startswith(
        "ALTER TABLE `db`.`action_state_local` ON CLUSTER `tg` ADD COLUMN `cluster`"
    )
    assert step.statements("db", CLUSTER, 30, baseline=step.version) == []
