"""ClickHouse tables of the action engine: action state, audit, breaker, webhooks.

All portable to ClickHouse 18.16 (no DateTime64, JSON or TTL): times are DateTime plus a
microsecond column, payloads are JSON text. State tables are append-only with a `seq`
version; readers take the row with the highest `seq` (argMax), so no merge is awaited.
"""

from __future__ import annotations

from analytics.tables import Column, Table

ACTION_CLUSTER_MIGRATION = 11
"""The migration that added `action_state.cluster` (analytics/migrations.py)."""


def _at() -> tuple[Column, ...]:
    return (Column("at", "DateTime"), Column("at_us", "UInt32"))


ACTION_STATE = Table(
    "action_state",
    (
        Column("action_id", "String"),
        Column("seq", "UInt64"),
        *_at(),
        Column("incident_id", "String"),
        Column("step", "UInt16"),
        Column("kind", "String", low_cardinality=True),
        Column("node", "String"),
        Column("job_id", "String"),
        Column("component_key", "String"),
        Column("state", "String", low_cardinality=True),
        Column("plan", "String", codec="ZSTD(3)"),
        Column("result", "String", codec="ZSTD(3)"),
        # the incident's cluster, stored as '' for the default one (rows from before it read
        # '' too): isolations are per (cluster, node); not in the key, so no key change
        Column("cluster", "String", low_cardinality=True, since=ACTION_CLUSTER_MIGRATION),
    ),
    order_by=("action_id", "seq"),
    partition_by="",
    time_column="at",
    replacing=False,
)

ACTION_AUDIT = Table(
    "action_audit",
    (
        *_at(),
        Column("seq", "UInt64"),
        Column("event", "String", low_cardinality=True),
        Column("actor", "String"),
        Column("action_id", "String"),
        Column("incident_id", "String"),
        Column("kind", "String", low_cardinality=True),
        Column("target", "String"),
        Column("component_key", "String"),
        Column("mode", "String", low_cardinality=True),
        Column("detail", "String", codec="ZSTD(3)"),
    ),
    order_by=("at", "at_us", "seq"),
    partition_by="toYYYYMM(at)",
    time_column="at",
    replacing=False,
)

BREAKER_STATE = Table(
    "breaker_state",
    (
        Column("name", "String"),
        Column("seq", "UInt64"),
        *_at(),
        Column("tripped", "UInt8"),
        Column("reason", "String"),
        Column("actor", "String"),
    ),
    order_by=("name", "seq"),
    partition_by="",
    time_column="at",
    replacing=False,
)

WEBHOOK_SUBSCRIPTIONS = Table(
    "webhook_subscriptions",
    (
        Column("id", "String"),
        Column("seq", "UInt64"),
        Column("url", "String"),
        Column("secret", "String"),
        Column("events", "Array(String)"),
        Column("format", "String"),
        Column("active", "UInt8"),
        *_at(),
    ),
    order_by=("id", "seq"),
    partition_by="",
    time_column="at",
    replacing=False,
)

WEBHOOK_DELIVERIES = Table(
    "webhook_deliveries",
    (
        Column("delivery_id", "String"),
        Column("seq", "UInt64"),
        *_at(),
        Column("subscription_id", "String"),
        Column("event", "String", low_cardinality=True),
        Column("attempt", "UInt16"),
        Column("status", "String", low_cardinality=True),
        Column("http_status", "Int16"),
        Column("error", "String"),
        Column("body", "String", codec="ZSTD(3)"),
    ),
    order_by=("delivery_id", "seq"),
    partition_by="toYYYYMM(at)",
    time_column="at",
    replacing=False,
)

ACTION_TABLES: tuple[Table, ...] = (
    ACTION_STATE,
    ACTION_AUDIT,
    BREAKER_STATE,
    WEBHOOK_SUBSCRIPTIONS,
    WEBHOOK_DELIVERIES,
)
