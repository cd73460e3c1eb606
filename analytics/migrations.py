"""Versioned, idempotent schema migrations and partition-drop retention."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analytics.action_tables import ACTION_TABLES
from analytics.api_tables import API_TABLES
from analytics.incident_tables import INCIDENT_STATE, INCIDENT_TABLES
from analytics.prediction_tables import PREDICTION_TABLES
from analytics.scheduler_tables import SCHEDULER_TABLES
from analytics.silence_tables import SILENCE_TABLES
from analytics.store import Store
from analytics.tables import ALL_TABLES, Features, Table

log = logging.getLogger(__name__)

MIGRATIONS_TABLE = "schema_migrations"
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


@dataclass(frozen=True)
class Migration:
    """One schema step; `statements` renders its DDL for a database and feature set."""

    version: int
    name: str
    statements: Callable[[str, Features, int | None], list[str]]


def _create(tables: tuple[Table, ...]) -> Callable[[str, Features, int | None], list[str]]:
    return lambda db, features, days: [t.ddl(db, features, days) for t in tables]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "telemetry tables and dead letters", _create(ALL_TABLES)),
    # incidents outlive telemetry retention: they are the fleet's history
    Migration(
        2,
        "incidents and their status changes",
        lambda db, features, _days: [t.ddl(db, features) for t in INCIDENT_TABLES],
    ),
    # the action engine's audit and state are history too: no telemetry retention
    Migration(
        3,
        "action engine state, audit, circuit breaker and remediation webhooks",
        lambda db, features, _days: [t.ddl(db, features) for t in ACTION_TABLES],
    ),
    Migration(4, "gpu failure risk", _create(PREDICTION_TABLES)),
    Migration(
        5,
        "api tokens and audit",
        lambda db, features, _days: [t.ddl(db, features) for t in API_TABLES],
    ),
    # the scheduler's live state for the API and console; old snapshots are history
    Migration(
        6,
        "scheduler state snapshots",
        lambda db, features, _days: [t.ddl(db, features) for t in SCHEDULER_TABLES],
    ),
    # restart safety of streaming diagnosis: the correlator's open incidents come back
    Migration(
        7,
        "incident state for restarts",
        lambda db, features, _days: [INCIDENT_STATE.ddl(db, features)],
    ),
    # maintenance windows are operator decisions: kept like the audit, no retention
    Migration(
        8,
        "maintenance windows (silences) of the action engine",
        lambda db, features, _days: [t.ddl(db, features) for t in SILENCE_TABLES],
    ),
    # several act and API replicas: step claims, replica heartbeats, API write counts
    Migration(
        9,
        "replica claims, heartbeats and api write generations",
        lambda db, _features, _days: replica_tables_ddl(db),
    ),
)


def migrate(store: Store, retention_days: int | None = None) -> list[int]:
    """Create the database and apply pending migrations; return the versions applied."""
    db = store.database
    features = Features.for_version(store.version())
    store.command(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    store.command(
        f"CREATE TABLE IF NOT EXISTS `{db}`.`{MIGRATIONS_TABLE}` "
        "(version UInt32, name String, applied DateTime) "
        "ENGINE = ReplacingMergeTree() ORDER BY version"
    )
    versions = store.query_df(f"SELECT version FROM `{db}`.`{MIGRATIONS_TABLE}`")
    done = set(versions["version"].tolist()) if len(versions) else set()
    applied = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for sql in migration.statements(db, features, retention_days):
            store.command(sql)
        store.insert(
            MIGRATIONS_TABLE,
            {
                "version": [migration.version],
                "name": [migration.name],
                "applied": [int(datetime.now(UTC).timestamp())],
            },
            {"version": "UInt32", "name": "String", "applied": "DateTime"},
        )
        log.info("applied migration %d (%s) to %s", migration.version, migration.name, db)
        applied.append(migration.version)
    return applied


def drop_old_partitions(
    store: Store, older_than_days: int, now: datetime | None = None
) -> list[str]:
    """Drop day partitions older than the cutoff from every telemetry table; return them."""
    cutoff = int(((now or datetime.now(UTC)) - timedelta(days=older_than_days)).strftime("%Y%m%d"))
    names = [t.name for t in ALL_TABLES if t.partition_by]
    parts = store.query_df(
        "SELECT DISTINCT table, partition FROM system.parts "
        "WHERE database = %(db)s AND active AND has(%(tables)s, table)",
        {"db": store.database, "tables": names},
    )
    dropped = []
    for table, partition in parts.itertuples(index=False):
        text = str(partition)
        if text.strip("'").isdigit() and int(text.strip("'")) < cutoff:
            store.command(f"ALTER TABLE `{store.database}`.`{table}` DROP PARTITION {text}")
            dropped.append(f"{table}:{text}")
    return dropped
