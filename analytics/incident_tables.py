"""ClickHouse tables of incidents (revisions written by diagnosis) and their status changes.

Diagnosis owns an incident's content and writes a new revision whenever evidence arrives; the
lifecycle (acknowledged, mitigating, resolved, false alarm) is written by people and the action
engine to a separate append-only table, so neither side overwrites the other.
"""

from __future__ import annotations

from analytics.tables import CLUSTER_MIGRATION, Column, Table

INCIDENTS = Table(
    "incidents",
    (
        Column("id", "String"),
        Column("revision", "UInt32"),
        Column("detected_at", "DateTime"),
        Column("detected_us", "UInt32"),
        Column("updated_at", "DateTime"),
        Column("category", "String", low_cardinality=True),
        Column("blame", "String", low_cardinality=True),
        Column("severity", "String", low_cardinality=True),
        Column("job_id", "String"),
        Column("node", "String", low_cardinality=True),
        Column("gpu", "Int16"),
        Column("action", "String", low_cardinality=True),
        Column("summary", "String"),
        Column("payload", "String", codec="ZSTD(3)"),
        # '' for the default cluster; the id already tells clusters apart (diagnosis/incidents.py)
        Column("cluster", "String", low_cardinality=True, since=CLUSTER_MIGRATION),
    ),
    order_by=("id",),
    partition_by="toYYYYMM(detected_at)",
    time_column="detected_at",
    version_column="revision",
)

INCIDENT_TRANSITIONS = Table(
    "incident_transitions",
    (
        Column("id", "String"),
        Column("at", "DateTime"),
        Column("at_us", "UInt32"),
        Column("status", "String", low_cardinality=True),
        Column("reason", "String"),
        Column("actor", "String"),
    ),
    order_by=("id", "at", "at_us"),
    partition_by="toYYYYMM(at)",
    time_column="at",
    replacing=False,
)

# What the streaming worker needs to go on with an incident after a restart or a rebalance (its
# root-cause key, root finding, evidence): one row per stored revision, the highest kept.
INCIDENT_STATE = Table(
    "incident_state",
    (
        Column("id", "String"),
        Column("revision", "UInt32"),
        Column("last_seen", "DateTime"),
        Column("state", "String", codec="ZSTD(3)"),
    ),
    order_by=("id",),
    partition_by="toYYYYMM(last_seen)",
    time_column="last_seen",
    version_column="revision",
)

INCIDENT_TABLES: tuple[Table, ...] = (INCIDENTS, INCIDENT_TRANSITIONS)
