"""Versioned, idempotent schema migrations and partition-drop retention.

With a cluster (the store's `cluster`), every statement runs ON CLUSTER from the one process
that migrates, the tables are Replicated + Distributed (see analytics/tables.py), and the
migrations table itself is replicated, so a migration applied once is seen by every server.

A fresh database (no migration recorded) gets every table at the newest schema and records
every migration at once: no step alters a table it has just created. Column steps run only
on databases created before them (upgrades). ClickHouse 18.16 can fail an ALTER ON CLUSTER
of a replicated table that it has just created (the second replica's DDL worker runs the
replicated ALTER again, and the task never finishes), so a new cluster never sends one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analytics.action_tables import ACTION_CLUSTER_MIGRATION, ACTION_STATE, ACTION_TABLES
from analytics.api_tables import API_TABLES
from analytics.incident_tables import INCIDENT_STATE, INCIDENT_TABLES
from analytics.prediction_tables import PREDICTION_TABLES
from analytics.scheduler_tables import SCHEDULER_TABLES
from analytics.silence_tables import SILENCE_TABLES
from analytics.store import Store
from analytics.tables import (
    ALL_TABLES,
    CLUSTER_MIGRATION,
    TELEMETRY_TABLES,
    Column,
    Features,
    Table,
)

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = "schema_migrations"
# in a cluster: the same table, replicated (one shard holds each version's row)
_MIGRATIONS = Table(
    MIGRATIONS_TABLE,
    (Column("version", "UInt32"), Column("name", "String"), Column("applied", "DateTime")),
    order_by=("version",),
    partition_by="",
    time_column="applied",
)

# the replicas' coordination tables stay on one server even in a cluster (docs/actions.md)
REPLICA_TABLES_MIGRATION = 10
CLAIMS_TABLE = "action_claims"
HEARTBEATS_TABLE = "replica_heartbeats"
API_WRITES_TABLE = "api_writes"


def replica_tables_ddl(db: str) -> list[str]:
    """Return the DDL of the tables replicas coordinate through (portable to 18.16).

    `action_claims` is a `Log` table on purpose: an append-only log read by one thread
    returns rows in the order the server accepted them, which first-writer-wins claims need
    (actions/claims.py). Heartbeats and API write counts are plain versioned rows.
    """
    return [
        f"CREATE TABLE IF NOT EXISTS `{db}`.`{CLAIMS_TABLE}` "
        "(key String, token String, replica String, at DateTime, at_us UInt32) ENGINE = Log",
        f"CREATE TABLE IF NOT EXISTS `{db}`.`{HEARTBEATS_TABLE}` "
        "(replica String, seq UInt64, at DateTime, at_us UInt32) "
        "ENGINE = MergeTree ORDER BY (replica, seq)",
        f"CREATE TABLE IF NOT EXISTS `{db}`.`{API_WRITES_TABLE}` "
        "(seq UInt64, writer String, at DateTime) ENGINE = MergeTree ORDER BY seq",
    ]


# (database, features, retention days, baseline) -> DDL; see Migration.statements
Render = Callable[[str, Features, int | None, int], list[str]]


@dataclass(frozen=True)
class Migration:
    """One schema step; `statements` renders its DDL for a database and feature set."""

    version: int
    name: str
    render: Render

    def statements(
        self, db: str, features: Features, retention_days: int | None, baseline: int = 0
    ) -> list[str]:
        """Return this step's DDL for a database whose tables start at schema `baseline`.

        `baseline` 0: the step as it first ran (an existing database moves one step on). The
        newest version: a fresh database, whose tables are created whole, so column steps
        render nothing.
        """
        return self.render(db, features, retention_days, baseline)


def _create(tables: tuple[Table, ...], version: int) -> Render:
    """Create tables, as migration `version` did, with telemetry retention (TTL if any)."""
    return lambda db, features, days, baseline: [
        sql for t in tables for sql in t.create(db, features, days, as_of=max(version, baseline))
    ]


def _history(tables: tuple[Table, ...], version: int) -> Render:
    """Create tables, as migration `version` did, that outlive telemetry retention."""
    return lambda db, features, _days, baseline: [
        sql for t in tables for sql in t.create(db, features, as_of=max(version, baseline))
    ]


def _add_columns(tables: tuple[Table, ...], version: int) -> Render:
    """Add the columns migration `version` introduced (local and Distributed in a cluster);
    nothing for a database created at or after it."""
    return lambda db, features, _days, baseline: (
        []
        if baseline >= version
        else [sql for t in tables for sql in t.add_columns(db, features, version)]
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "telemetry tables and dead letters", _create(ALL_TABLES, 1)),
    # incidents outlive telemetry retention: they are the fleet's history
    Migration(2, "incidents and their status changes", _history(INCIDENT_TABLES, 2)),
    # the action engine's audit and state are history too: no telemetry retention
    Migration(
        3,
        "action engine state, audit, circuit breaker and remediation webhooks",
        _history(ACTION_TABLES, 3),
    ),
    Migration(4, "gpu failure risk", _create(PREDICTION_TABLES, 4)),
    Migration(5, "api tokens and audit", _history(API_TABLES, 5)),
    # the scheduler's live state for the API and console; old snapshots are history
    Migration(6, "scheduler state snapshots", _history(SCHEDULER_TABLES, 6)),
    # restart safety of streaming diagnosis: the correlator's open incidents come back
    Migration(7, "incident state for restarts", _history((INCIDENT_STATE,), 7)),
    # maintenance windows are operator decisions: kept like the audit, no retention
    Migration(
        8, "maintenance windows (silences) of the action engine", _history(SILENCE_TABLES, 8)
    ),
    # one installation, several clusters: node and job names are unique only within one
    Migration(
        CLUSTER_MIGRATION,
        "cluster column on telemetry and incidents",
        _add_columns((*TELEMETRY_TABLES, *INCIDENT_TABLES), CLUSTER_MIGRATION),
    ),
    # several act and API replicas: step claims, replica heartbeats, API write counts
    Migration(
        REPLICA_TABLES_MIGRATION,
        "replica claims, heartbeats and api write generations",
        lambda db, _features, _days, _baseline: replica_tables_ddl(db),
    ),
    # isolations name the cluster of their node: an `n1` isolated in one cluster only
    Migration(
        ACTION_CLUSTER_MIGRATION,
        "cluster column on action state",
        _add_columns((ACTION_STATE,), ACTION_CLUSTER_MIGRATION),
    ),
)


def migrate(store: Store, retention_days: int | None = None) -> list[int]:
    """Create the database and apply pending migrations; return the versions applied.

    Every statement is idempotent (IF NOT EXISTS), so a run that stopped half-way, or two
    runs at once, converge. A fresh database (nothing recorded) is created at the newest
    schema and every migration recorded in one insert after its DDL, so a fresh run that
    stopped half-way is fresh again the next time. In a cluster the statements run ON
    CLUSTER: every server must be up, and each statement returns once all of them have run
    it. When every migration is recorded already, nothing but reads is sent (a sink starts
    with a server down).
    """
    db = store.database
    features = Features.for_version(store.version()).on_cluster(store.cluster)
    if not _pending(store):
        return []  # no DDL at all: in a cluster, DDL would need every server up
    store.command(f"CREATE DATABASE IF NOT EXISTS `{db}`{features.on}")
    if features.cluster:
        for sql in _MIGRATIONS.create(db, features):
            store.command(sql)
    else:
        store.command(
            f"CREATE TABLE IF NOT EXISTS `{db}`.`{MIGRATIONS_TABLE}` "
            "(version UInt32, name String, applied DateTime) "
            "ENGINE = ReplacingMergeTree() ORDER BY version"
        )
    versions = store.query_df(f"SELECT version FROM `{db}`.`{MIGRATIONS_TABLE}`")
    done = set(versions["version"].tolist()) if len(versions) else set()
    if not done:
        newest = MIGRATIONS[-1].version
        for migration in MIGRATIONS:
            for sql in migration.statements(db, features, retention_days, baseline=newest):
                store.command(sql)
        record_applied(store, MIGRATIONS)
        log.info("created %s at schema version %d", db, newest)
        return [m.version for m in MIGRATIONS]
    applied = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for sql in migration.statements(db, features, retention_days):
            store.command(sql)
        record_applied(store, (migration,))
        log.info("applied migration %d (%s) to %s", migration.version, migration.name, db)
        applied.append(migration.version)
    return applied


def record_applied(store: Store, migrations: tuple[Migration, ...]) -> None:
    """Record migrations as applied, in one insert."""
    now = int(datetime.now(UTC).timestamp())
    store.insert(
        MIGRATIONS_TABLE,
        {
            "version": [m.version for m in migrations],
            "name": [m.name for m in migrations],
            "applied": [now] * len(migrations),
        },
        {"version": "UInt32", "name": "String", "applied": "DateTime"},
    )


def _pending(store: Store) -> bool:
    """Return whether any migration is not recorded yet (reads only; true if no table yet)."""
    exists = store.query_df(
        "SELECT name FROM system.tables WHERE database = %(db)s AND name = %(t)s",
        {"db": store.database, "t": MIGRATIONS_TABLE},
    )
    if exists.empty:
        return True
    done = store.query_df(f"SELECT DISTINCT version FROM `{store.database}`.`{MIGRATIONS_TABLE}`")
    recorded = set(done["version"].tolist()) if len(done) else set()
    return bool({m.version for m in MIGRATIONS} - recorded)


def drop_old_partitions(
    store: Store, older_than_days: int, now: datetime | None = None
) -> list[str]:
    """Drop day partitions older than the cutoff from every telemetry table; return them.

    In a cluster the parts of every shard are listed (one replica each) and the partitions
    dropped from the local tables ON CLUSTER; replication drops them from the other replicas.
    """
    cutoff = int(((now or datetime.now(UTC)) - timedelta(days=older_than_days)).strftime("%Y%m%d"))
    features = Features().on_cluster(store.cluster)
    local = {t.local_name(features): t.name for t in ALL_TABLES if t.partition_by}
    source = f"cluster('{features.cluster}', system, parts)" if features.cluster else "system.parts"
    parts = store.query_df(
        f"SELECT DISTINCT table, partition FROM {source} "
        "WHERE database = %(db)s AND active AND has(%(tables)s, table)",
        {"db": store.database, "tables": sorted(local)},
    )
    dropped = []
    for table, partition in parts.itertuples(index=False):
        text = str(partition)
        if text.strip("'").isdigit() and int(text.strip("'")) < cutoff:
            store.command(
                f"ALTER TABLE `{store.database}`.`{table}`{features.on} DROP PARTITION {text}"
            )
            dropped.append(f"{local[str(table)]}:{text}")
    return dropped
